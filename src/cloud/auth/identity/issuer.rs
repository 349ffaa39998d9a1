//! What every credential provider of a chain is and hands out: the [`Issuer`] trait, the
//! credentials it issued and when to renew them, and the environment it reads.

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use crate::cloud::auth::creds::Creds;
use crate::cloud::base::http::Http;
use crate::cloud::base::outcome::CloudError;

/// Credentials an issuer handed out, and when to get new ones.
#[derive(Debug, Clone)]
pub struct Issued {
    pub creds: Creds,
    /// When the cloud stops accepting them (`None`: never).
    pub expires: Option<SystemTime>,
    /// When to ask for new ones (the SDK's own margin before `expires`).
    pub renew_at: Option<SystemTime>,
}

impl Issued {
    /// Renewed `before` their expiry, as the SDK does (at once when they live shorter).
    pub fn expiring(creds: Creds, expires: SystemTime, before: Duration) -> Self {
        Self {
            creds,
            expires: Some(expires),
            renew_at: Some(
                expires
                    .checked_sub(before)
                    .unwrap_or(SystemTime::UNIX_EPOCH),
            ),
        }
    }
}

/// What an issuer may use for one call.
pub struct Ctx<'a> {
    pub http: &'a Http,
    /// The whole exchange (every request of it) ends within this.
    pub budget: Duration,
}

/// One credential provider of a cloud's chain.
pub trait Issuer: Send + Sync {
    /// For logs and error messages: what it is and where it asks (never a secret), e.g.
    /// "RRSA (AssumeRoleWithOIDC at https://sts.example)".
    fn describe(&self) -> String;

    /// New credentials. An answer of the endpoint's own error shape maps to the matching
    /// [`CloudError`] (throttled, auth, server…); a transport failure stays what it is.
    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>>;
}

/// What the chain chose: an access key that does not change, or an issuer to renew from.
pub enum Selected {
    Static(Creds),
    Issuer(Box<dyn Issuer>),
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selected::Static(c) => write!(f, "Static({c:?})"),
            Selected::Issuer(i) => write!(f, "Issuer({})", i.describe()),
        }
    }
}

/// The environment, passed in so tests need not change the process's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A set, non-blank variable, trimmed.
pub fn var(env: Env<'_>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Reads a token file (a projected ServiceAccount token) again on every exchange: the kubelet
/// rotates it in place.
pub fn read_token(path: &str) -> Result<String, CloudError> {
    match std::fs::read_to_string(path) {
        Ok(t) if t.trim().is_empty() => Err(CloudError::Credentials(format!(
            "the token file {path} is empty"
        ))),
        Ok(t) => Ok(t.trim().to_string()),
        Err(e) => Err(CloudError::Credentials(format!(
            "cannot read the token file {path}: {e}"
        ))),
    }
}
