//! Where a Huawei exchange goes (an endpoint from the config or the SDK's variable, parsed
//! once) and how long what it issues lives before it is renewed.

use std::time::{Duration, SystemTime};

use crate::cloud::auth::creds::{Creds, CredsError};
use crate::cloud::auth::identity::issuer::{Env, Issued, var};

/// The SDK asks for new credentials this long before they expire
/// (`Credentials._DEFAULT_EXPIRATION_THRESHOLD_SECONDS`).
pub const RENEW_BEFORE: Duration = Duration::from_secs(40 * 60);

/// Renewed [`RENEW_BEFORE`] their expiry, as the SDK does; credentials living shorter than
/// that are renewed half-way (the SDK would ask again on every call).
pub(super) fn renewable(creds: Creds, expires: SystemTime) -> Issued {
    let life = expires
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    let before = if life > RENEW_BEFORE {
        RENEW_BEFORE
    } else {
        life / 2
    };
    Issued::expiring(creds, expires, before)
}

/// An `https://` endpoint from the config, else the SDK's variable, else its default.
pub(super) fn https_endpoint(
    configured: Option<&str>,
    env: Env<'_>,
    name: &str,
    default: &str,
) -> Result<String, CredsError> {
    let (from, url) = match (configured, var(env, name)) {
        (Some(c), _) => ("the config", c.trim().to_string()),
        (None, Some(v)) => (name, v),
        (None, None) => return Ok(default.to_string()),
    };
    if url.starts_with("https://") && url.len() > "https://".len() {
        Ok(url.trim_end_matches('/').to_string())
    } else {
        Err(CredsError::Missing(format!(
            "{from}: \"{url}\" is not an https URL"
        )))
    }
}

/// `scheme://authority` to send to, the `Host` and the path (with its query) of a URL.
pub(super) struct Target {
    pub(super) base: String,
    pub(super) host: String,
    pub(super) path: String,
}

impl Target {
    pub(super) fn parse(url: &str, what: &str) -> Result<Self, CredsError> {
        let bad = |why: &str| CredsError::Missing(format!("{what}: \"{url}\" {why}"));
        let uri: hyper::Uri = url.trim().parse().map_err(|_| bad("is not a URL"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(bad("is not an absolute URL"));
        };
        if !matches!(scheme, "http" | "https") {
            return Err(bad("is not an http(s) URL"));
        }
        let path = uri
            .path_and_query()
            .map(|p| p.as_str())
            .filter(|p| *p != "/")
            .unwrap_or("")
            .to_string();
        Ok(Self {
            base: format!("{scheme}://{authority}"),
            host: authority.to_string(),
            path,
        })
    }
}
