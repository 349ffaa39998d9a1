//! The credential store: the access key or short-lived credentials in use, renewed from
//! the issuer the chain (`identity`) picked before they expire, re-read from their files when
//! they change. Never printed: `Debug` shows the key id's first characters only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;

use super::creds::{Creds, CredsError};
use super::identity::{self, Issued, Issuer, Selected};
use crate::cloud::base::http::Http;
use crate::cloud::base::outcome::CloudError;
use crate::vocab::config::CredentialsConfig;
use crate::vocab::provider::Provider;

/// Where the credentials come from.
enum Source {
    /// Fixed (tests, or the environment read once).
    Fixed,
    /// Files in a Secret volume, re-read by [`CredStore::reload`].
    Files(PathBuf),
    /// Short-lived ones from a provider of the cloud's chain, renewed before they expire.
    Issuer(Box<dyn Issuer>),
}

/// Credentials in use, and when they stop working.
struct Held {
    creds: Arc<Creds>,
    expires: Option<SystemTime>,
    renew_at: Option<SystemTime>,
}

/// How long one exchange may take when no admission waits for it.
const BACKGROUND_EXCHANGE: Duration = Duration::from_secs(10);
/// After a failed renewal, the next try waits this long (the last good credentials serve).
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// Where the credentials come from, and the last good ones.
pub struct CredStore {
    provider: Provider,
    source: Source,
    current: ArcSwapOption<Held>,
    /// One exchange at a time; the others wait for it or use what is held.
    renewing: tokio::sync::Mutex<()>,
    /// After a failure: no new exchange before this, and callers without good credentials
    /// get that failure at once (a down STS is not asked once per admission).
    quiet_until: Mutex<Option<(SystemTime, CloudError)>>,
    seen: Mutex<Vec<String>>,
}

impl std::fmt::Debug for CredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CredStore({})", self.describe())
    }
}

impl CredStore {
    fn new(provider: Provider, source: Source, creds: Option<Creds>) -> Arc<Self> {
        let seen = creds.as_ref().map(fingerprint).unwrap_or_default();
        Arc::new(Self {
            provider,
            source,
            current: ArcSwapOption::from(creds.map(|c| {
                Arc::new(Held {
                    creds: Arc::new(c),
                    expires: None,
                    renew_at: None,
                })
            })),
            renewing: tokio::sync::Mutex::new(()),
            quiet_until: Mutex::new(None),
            seen: Mutex::new(seen),
        })
    }

    /// From the directory, or the process environment when there is none.
    pub fn load(provider: Provider, dir: Option<&Path>) -> Result<Arc<Self>, CredsError> {
        Self::configured(provider, dir, &CredentialsConfig::default(), &|n| {
            std::env::var(n).ok()
        })
    }

    /// From the directory (an access key), or the provider `cfg.source` names in the cloud
    /// SDK's chain, reading `env`. Nothing is fetched yet: the first call does.
    pub fn configured(
        provider: Provider,
        dir: Option<&Path>,
        cfg: &CredentialsConfig,
        env: identity::Env<'_>,
    ) -> Result<Arc<Self>, CredsError> {
        if let Some(d) = dir {
            let creds = Creds::from_dir(d, provider)?;
            return Ok(Self::new(
                provider,
                Source::Files(d.to_path_buf()),
                Some(creds),
            ));
        }
        Ok(match identity::select(provider, cfg, env)? {
            Selected::Static(creds) => Self::new(provider, Source::Fixed, Some(creds)),
            Selected::Issuer(issuer) => Self::new(provider, Source::Issuer(issuer), None),
        })
    }

    /// Fixed credentials (tests, `check`).
    pub fn fixed(provider: Provider, creds: Creds) -> Arc<Self> {
        Self::new(provider, Source::Fixed, Some(creds))
    }

    /// Short-lived credentials from `issuer`, renewed (tests).
    pub fn issued(provider: Provider, issuer: Box<dyn Issuer>) -> Arc<Self> {
        Self::new(provider, Source::Issuer(issuer), None)
    }

    /// Where the credentials come from, for the log (no secret).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Fixed => "an access key".into(),
            Source::Files(d) => format!("an access key in {}", d.display()),
            Source::Issuer(i) => i.describe(),
        }
    }

    /// The credentials held now, if any (whether they still work or not).
    pub fn get(&self) -> Option<Arc<Creds>> {
        self.current.load().as_ref().map(|h| Arc::clone(&h.creds))
    }

    /// Credentials to sign with. Short-lived ones past their renewal time are renewed in the
    /// background while they still work; once they have expired (or before the first), the
    /// caller waits for an exchange of at most `budget`. A failed exchange is
    /// [`CloudError::Credentials`] with its cause; the last good credentials serve until they
    /// expire.
    pub async fn current(
        self: &Arc<Self>,
        http: &Http,
        budget: Duration,
    ) -> Result<Arc<Creds>, CloudError> {
        let now = SystemTime::now();
        if let Some(held) = self.current.load_full() {
            let expired = held.expires.is_some_and(|e| e <= now);
            if !expired {
                if held.renew_at.is_some_and(|r| r <= now) && self.may_renew(now) {
                    let me = Arc::clone(self);
                    let http = http.clone();
                    tokio::spawn(async move {
                        if let Ok(_guard) = me.renewing.try_lock() {
                            let _ = me.exchange(&http, BACKGROUND_EXCHANGE).await;
                        }
                    });
                }
                return Ok(Arc::clone(&held.creds));
            }
        }
        if !matches!(self.source, Source::Issuer(_)) {
            return Err(CloudError::Credentials(
                "no credentials are configured".into(),
            ));
        }
        let waited = tokio::time::timeout(budget, self.renewing.lock()).await;
        let Ok(_guard) = waited else {
            return Err(CloudError::Credentials(format!(
                "{}: still being renewed after {} ms",
                self.describe(),
                budget.as_millis()
            )));
        };
        // Another caller may have renewed them while this one waited.
        if let Some(held) = self.current.load_full()
            && held.expires.is_none_or(|e| e > SystemTime::now())
        {
            return Ok(Arc::clone(&held.creds));
        }
        if let Some(e) = self.recent_failure(SystemTime::now()) {
            return Err(e);
        }
        self.exchange(http, budget).await
    }

    fn may_renew(&self, now: SystemTime) -> bool {
        self.recent_failure(now).is_none()
    }

    fn recent_failure(&self, now: SystemTime) -> Option<CloudError> {
        let quiet = self.quiet_until.lock().unwrap_or_else(|p| p.into_inner());
        quiet
            .as_ref()
            .filter(|(until, _)| *until > now)
            .map(|(_, e)| e.clone())
    }

    /// Forgets the last failed exchange: the next call asks again at once instead of after
    /// the retry time (once its cause is known to be fixed).
    pub fn forget_failure(&self) {
        *self.quiet_until.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Gets the first credentials in the background, so the first admission does not wait.
    pub fn warm(self: &Arc<Self>, http: &Http) {
        if !matches!(self.source, Source::Issuer(_)) {
            return;
        }
        let me = Arc::clone(self);
        let http = http.clone();
        tokio::spawn(async move {
            let _ = me.current(&http, BACKGROUND_EXCHANGE).await;
        });
    }

    /// One exchange at the issuer (the caller holds `renewing`).
    async fn exchange(&self, http: &Http, budget: Duration) -> Result<Arc<Creds>, CloudError> {
        let Source::Issuer(issuer) = &self.source else {
            return Err(CloudError::Credentials(
                "no credentials are configured".into(),
            ));
        };
        let ctx = identity::Ctx { http, budget };
        let issued = match tokio::time::timeout(budget, issuer.issue(&ctx)).await {
            Ok(Ok(issued)) => issued,
            Ok(Err(e)) => return Err(self.failed(issuer.as_ref(), e)),
            Err(_) => {
                return Err(self.failed(issuer.as_ref(), CloudError::Timeout(budget.as_millis())));
            }
        };
        let issued = self.with_project(issued);
        let creds = Arc::new(issued.creds);
        self.current.store(Some(Arc::new(Held {
            creds: Arc::clone(&creds),
            expires: issued.expires,
            renew_at: issued.renew_at,
        })));
        *self.quiet_until.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!(
            source = %issuer.describe(),
            expires = ?issued.expires.map(time::OffsetDateTime::from),
            "cloud credentials renewed"
        );
        Ok(creds)
    }

    fn failed(&self, issuer: &dyn Issuer, e: CloudError) -> CloudError {
        let e = match e {
            CloudError::Credentials(m) => {
                CloudError::Credentials(format!("{}: {m}", issuer.describe()))
            }
            other => CloudError::Credentials(format!("{}: {other}", issuer.describe())),
        };
        tracing::warn!(error = %e, "cannot renew the cloud credentials");
        *self.quiet_until.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((SystemTime::now() + RETRY_AFTER, e.clone()));
        e
    }

    /// Huawei's ELB path needs the project id: one the issuer did not give comes from the
    /// credentials held before.
    fn with_project(&self, mut issued: Issued) -> Issued {
        if self.provider == Provider::Huawei
            && issued.creds.project_id.is_none()
            && let Some(held) = self.current.load_full()
        {
            issued.creds.project_id = held.creds.project_id.clone();
        }
        issued
    }

    /// Re-reads the files; `Ok(true)` when new credentials were swapped in. A broken
    /// set (a key id without its secret mid-rotation) keeps the last good one.
    pub fn reload(&self) -> Result<bool, CredsError> {
        let Source::Files(dir) = &self.source else {
            return Ok(false);
        };
        let creds = Creds::from_dir(dir, self.provider)?;
        let print = fingerprint(&creds);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen == print {
            return Ok(false);
        }
        self.current.store(Some(Arc::new(Held {
            creds: Arc::new(creds),
            expires: None,
            renew_at: None,
        })));
        *seen = print;
        Ok(true)
    }

    /// Whether [`Self::reload`] has anything to re-read.
    pub fn has_files(&self) -> bool {
        matches!(self.source, Source::Files(_))
    }
}

fn fingerprint(c: &Creds) -> Vec<String> {
    vec![
        c.access_key_id.clone(),
        c.access_key_secret.clone(),
        c.security_token.clone().unwrap_or_default(),
        c.project_id.clone().unwrap_or_default(),
    ]
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
