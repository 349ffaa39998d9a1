//! Cloud credentials: an access key in files (a Secret volume, re-read when they change) or
//! the environment, or short-lived ones from the cloud's identity services (`identity`),
//! renewed before they expire. Never printed: `Debug` shows the key id's first characters only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;

use super::http::Http;
use super::identity::{self, Issued, Issuer, Selected};
use super::outcome::CloudError;
use crate::vocab::config::CredentialsConfig;
use crate::vocab::provider::Provider;

#[derive(Clone, PartialEq, Eq)]
pub struct Creds {
    pub access_key_id: String,
    pub access_key_secret: String,
    pub security_token: Option<String>,
    /// Huawei's project id (the ELB API's path names it).
    pub project_id: Option<String>,
}

impl std::fmt::Debug for Creds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = self.access_key_id.chars().take(4).collect();
        write!(
            f,
            "Creds({shown}…, token: {})",
            self.security_token.is_some()
        )
    }
}

/// The file names in `inventory.cloud.credentialsDir`.
pub const FILES: [&str; 4] = [
    "accessKeyId",
    "accessKeySecret",
    "securityToken",
    "projectId",
];

#[derive(Debug, thiserror::Error)]
pub enum CredsError {
    #[error("cloud credentials: cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cloud credentials: {0}")]
    Missing(String),
}

fn read_opt(dir: &Path, name: &str) -> Result<Option<String>, CredsError> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(s) if s.trim().is_empty() => Ok(None),
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CredsError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

impl Creds {
    pub fn from_dir(dir: &Path, provider: Provider) -> Result<Self, CredsError> {
        Self::from_dir_observed(dir, provider, &|_| {})
    }

    /// Reads every file from one version of a Secret volume: the kubelet swaps `..data` to
    /// a new directory at once, so the files are read under the directory it points to,
    /// and read again if it moved meanwhile (an old key id never pairs with a new secret).
    /// `after` is called after each file (tests swap the volume there).
    fn from_dir_observed(
        dir: &Path,
        provider: Provider,
        after: &dyn Fn(&str),
    ) -> Result<Self, CredsError> {
        let data = dir.join("..data");
        let mut last = None;
        for _ in 0..5 {
            let before = std::fs::read_link(&data).ok();
            let base = match &before {
                Some(target) => dir.join(target),
                None => dir.to_path_buf(),
            };
            let read = Self::read_files(&base, dir, provider, after);
            if std::fs::read_link(&data).ok() == before {
                return read;
            }
            last = Some(read);
        }
        last.unwrap_or_else(|| {
            Err(CredsError::Missing(format!(
                "{} keeps changing",
                dir.display()
            )))
        })
    }

    fn read_files(
        base: &Path,
        dir: &Path,
        provider: Provider,
        after: &dyn Fn(&str),
    ) -> Result<Self, CredsError> {
        let [id, secret, token, project] = FILES;
        let need = |name: &str, v: Option<String>| {
            v.ok_or_else(|| CredsError::Missing(format!("{} has no file {name}", dir.display())))
        };
        let read = |name: &str| {
            let v = read_opt(base, name);
            after(name);
            v
        };
        let c = Self {
            access_key_id: need(id, read(id)?)?,
            access_key_secret: need(secret, read(secret)?)?,
            security_token: read(token)?,
            project_id: read(project)?,
        };
        c.check(provider, &format!("{}/{project}", dir.display()))
    }

    /// `LBGUARD_CLOUD_ACCESS_KEY_ID`, `…_ACCESS_KEY_SECRET`, `…_SECURITY_TOKEN`,
    /// `…_PROJECT_ID`, or the names each cloud's own tools read.
    pub fn from_env(
        provider: Provider,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, CredsError> {
        let native: [&[&str]; 4] = match provider {
            Provider::Alibaba => [
                &["ALIBABA_CLOUD_ACCESS_KEY_ID"],
                &["ALIBABA_CLOUD_ACCESS_KEY_SECRET"],
                &["ALIBABA_CLOUD_SECURITY_TOKEN"],
                &[],
            ],
            Provider::Huawei => [
                &["HUAWEICLOUD_SDK_AK"],
                &["HUAWEICLOUD_SDK_SK"],
                &["HUAWEICLOUD_SDK_SECURITY_TOKEN"],
                &["HUAWEICLOUD_SDK_PROJECT_ID"],
            ],
            Provider::Volcengine => [
                &["VOLCENGINE_ACCESS_KEY"],
                &["VOLCENGINE_SECRET_KEY"],
                &["VOLCENGINE_SESSION_TOKEN"],
                &[],
            ],
            Provider::Ctyun => [&["CTYUN_AK"], &["CTYUN_SK"], &[], &[]],
        };
        let ours = [
            "LBGUARD_CLOUD_ACCESS_KEY_ID",
            "LBGUARD_CLOUD_ACCESS_KEY_SECRET",
            "LBGUARD_CLOUD_SECURITY_TOKEN",
            "LBGUARD_CLOUD_PROJECT_ID",
        ];
        let get = |i: usize| {
            std::iter::once(ours[i])
                .chain(native[i].iter().copied())
                .find_map(|n| env(n).filter(|v| !v.trim().is_empty()))
                .map(|v| v.trim().to_string())
        };
        let missing = |i: usize| {
            CredsError::Missing(format!(
                "set {} (or {}) or inventory.cloud.credentialsDir",
                ours[i],
                native[i].first().unwrap_or(&"-")
            ))
        };
        let c = Self {
            access_key_id: get(0).ok_or_else(|| missing(0))?,
            access_key_secret: get(1).ok_or_else(|| missing(1))?,
            security_token: get(2),
            project_id: get(3),
        };
        c.check(provider, ours[3])
    }

    fn check(self, provider: Provider, project_source: &str) -> Result<Self, CredsError> {
        if provider == Provider::Huawei && self.project_id.is_none() {
            return Err(CredsError::Missing(format!(
                "Huawei's ELB API needs the project id: {project_source} is missing"
            )));
        }
        Ok(self)
    }
}

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
mod tests {
    use super::*;

    #[test]
    fn files_are_read_trimmed_and_rotation_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("accessKeyId"), "AKID1\n").unwrap();
        std::fs::write(d.join("accessKeySecret"), "secret-1\n").unwrap();
        let store = CredStore::load(Provider::Alibaba, Some(d)).unwrap();
        assert_eq!(store.get().unwrap().access_key_id, "AKID1");
        assert_eq!(store.get().unwrap().security_token, None);
        assert!(!store.reload().unwrap());
        std::fs::write(d.join("accessKeySecret"), "secret-2").unwrap();
        assert!(store.reload().unwrap());
        assert_eq!(store.get().unwrap().access_key_secret, "secret-2");
        std::fs::remove_file(d.join("accessKeySecret")).unwrap();
        let e = store.reload().unwrap_err().to_string();
        assert!(e.contains("accessKeySecret"), "{e}");
        assert_eq!(store.get().unwrap().access_key_secret, "secret-2");
    }

    #[cfg(unix)]
    #[test]
    fn a_secret_volume_swapped_mid_read_never_mixes_versions() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (v, id, secret) in [
            ("..v1", "AKID-OLD", "old-secret"),
            ("..v2", "AKID-NEW", "new-secret"),
        ] {
            std::fs::create_dir(d.join(v)).unwrap();
            std::fs::write(d.join(v).join("accessKeyId"), id).unwrap();
            std::fs::write(d.join(v).join("accessKeySecret"), secret).unwrap();
        }
        symlink("..v1", d.join("..data")).unwrap();
        for f in ["accessKeyId", "accessKeySecret"] {
            symlink(format!("..data/{f}"), d.join(f)).unwrap();
        }
        // The kubelet swaps ..data right after the key id was read.
        let swap = |name: &str| {
            if name == "accessKeyId"
                && std::fs::read_link(d.join("..data")).unwrap() == Path::new("..v1")
            {
                symlink("..v2", d.join("..data.tmp")).unwrap();
                std::fs::rename(d.join("..data.tmp"), d.join("..data")).unwrap();
            }
        };
        let c = Creds::from_dir_observed(d, Provider::Alibaba, &swap).unwrap();
        let pair = (c.access_key_id.as_str(), c.access_key_secret.as_str());
        assert!(
            pair == ("AKID-OLD", "old-secret") || pair == ("AKID-NEW", "new-secret"),
            "{pair:?}"
        );
    }

    #[test]
    fn huawei_needs_a_project_and_nothing_secret_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("accessKeyId"), "HWAKID").unwrap();
        std::fs::write(d.join("accessKeySecret"), "hush-hush").unwrap();
        let e = CredStore::load(Provider::Huawei, Some(d))
            .unwrap_err()
            .to_string();
        assert!(e.contains("project id"), "{e}");
        std::fs::write(d.join("projectId"), "p-1").unwrap();
        let c = Creds::from_dir(d, Provider::Huawei).unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hush") && !shown.contains("HWAKID"),
            "{shown}"
        );
    }

    #[test]
    fn environment_names() {
        let env = |n: &str| match n {
            "VOLCENGINE_ACCESS_KEY" => Some("AK".to_string()),
            "LBGUARD_CLOUD_ACCESS_KEY_SECRET" => Some("SK".to_string()),
            _ => None,
        };
        let c = Creds::from_env(Provider::Volcengine, env).unwrap();
        assert_eq!(
            (c.access_key_id.as_str(), c.access_key_secret.as_str()),
            ("AK", "SK")
        );
        let e = Creds::from_env(Provider::Ctyun, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("LBGUARD_CLOUD_ACCESS_KEY_ID"), "{e}");
    }

    /// Hands out numbered credentials living `life`, or fails while `fail` is set.
    struct Counter {
        n: std::sync::atomic::AtomicU32,
        fail: std::sync::atomic::AtomicBool,
        life: Duration,
    }

    impl Issuer for Arc<Counter> {
        fn describe(&self) -> String {
            "a test issuer".into()
        }
        fn issue<'a>(
            &'a self,
            _: &'a identity::Ctx<'a>,
        ) -> futures::future::BoxFuture<'a, Result<Issued, CloudError>> {
            Box::pin(async move {
                use std::sync::atomic::Ordering;
                if self.fail.load(Ordering::SeqCst) {
                    return Err(CloudError::Throttled("HTTP 400 Throttling".into()));
                }
                let n = self.n.fetch_add(1, Ordering::SeqCst) + 1;
                let creds = Creds {
                    access_key_id: format!("STS.{n}"),
                    access_key_secret: "s".into(),
                    security_token: Some("t".into()),
                    project_id: None,
                };
                Ok(Issued::expiring(
                    creds,
                    SystemTime::now() + self.life,
                    self.life / 2,
                ))
            })
        }
    }

    #[tokio::test]
    async fn issued_credentials_are_renewed_and_the_last_good_serve_until_they_expire() {
        use std::sync::atomic::Ordering;
        let http = Http::new(&[]).unwrap();
        let counter = Arc::new(Counter {
            n: 0.into(),
            fail: false.into(),
            life: Duration::from_millis(400),
        });
        let store = CredStore::issued(Provider::Alibaba, Box::new(Arc::clone(&counter)));
        assert!(
            store.get().is_none(),
            "nothing is fetched before the first call"
        );
        let wait = Duration::from_secs(2);
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.1"
        );
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.1"
        );
        // Past the renewal time, the call still gets the held ones; the renewal runs behind it.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.1"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.2"
        );
        // The issuer fails: the held credentials serve until they expire, then the cause shows.
        counter.fail.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.2"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        let e = store.current(&http, wait).await.unwrap_err();
        assert_eq!(e.label(), "credentials_error");
        let m = e.to_string();
        assert!(
            m.contains("a test issuer") && m.contains("throttled"),
            "{m}"
        );
        // Until the retry time, callers get that failure without asking again.
        counter.fail.store(false, Ordering::SeqCst);
        let again = store.current(&http, wait).await.unwrap_err();
        assert_eq!(again, e);
        assert_eq!(counter.n.load(Ordering::SeqCst), 2);
        // Past it, the next call waits for an exchange.
        store.forget_failure();
        assert_eq!(
            store.current(&http, wait).await.unwrap().access_key_id,
            "STS.3"
        );
    }

    #[test]
    fn a_source_the_provider_lacks_is_refused() {
        let cfg = CredentialsConfig {
            source: crate::vocab::config::CredentialSource::Oidc,
            ..Default::default()
        };
        let e = CredStore::configured(Provider::Ctyun, None, &cfg, &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("only an access key"), "{e}");
    }
}
