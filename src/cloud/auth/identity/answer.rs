//! What the Alibaba and Volcengine identity endpoints have in common: where they are, one
//! request within what is left of the exchange's budget, their answers' JSON and expiry
//! times, and when to renew what they issued.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::issuer::{Env, Issued, var};
use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::sign::Req;
use crate::cloud::base::http::{Answer, Http};
use crate::cloud::base::outcome::CloudError;

/// The configured URL wins over the SDK's variable, which names a host (`https://` is
/// added) or a URL.
pub fn endpoint(configured: Option<&str>, env: Env<'_>, name: &str, default: &str) -> String {
    let chosen = configured
        .map(str::to_string)
        .or_else(|| var(env, name))
        .unwrap_or_else(|| default.to_string());
    let chosen = chosen.trim_end_matches('/');
    if chosen.starts_with("https://") || chosen.starts_with("http://") {
        chosen.to_string()
    } else {
        format!("https://{chosen}")
    }
}

/// `true`, as the SDKs read their switches.
pub fn flag(env: Env<'_>, name: &str) -> bool {
    var(env, name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// A default session name, unique per process start, as the SDKs make one.
pub fn session_name() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    format!("lbguard-{secs}")
}

/// One request of an exchange that must end by `deadline`.
pub async fn send(
    http: &Http,
    base: &str,
    req: &Req,
    deadline: Instant,
) -> Result<Answer, CloudError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(CloudError::Timeout(0));
    }
    http.send(base, req, left).await
}

/// The answer as JSON; a page that is not JSON is never the endpoint's answer.
pub fn json(answer: &Answer, what: &str) -> Result<Value, CloudError> {
    serde_json::from_slice(&answer.body).map_err(|_| {
        let shown = if answer.content_type.is_empty() {
            "a body that is not JSON".to_string()
        } else {
            format!("a {} body, not JSON", answer.content_type)
        };
        let cause = format!("{what}: HTTP {} with {shown}", answer.status);
        match answer.status {
            429 => CloudError::Throttled(cause),
            s if s >= 500 => CloudError::Server(cause),
            401 | 403 => CloudError::Auth(cause),
            _ => CloudError::BadEndpoint(cause),
        }
    })
}

/// A string field the answer must hold.
pub fn field<'a>(v: &'a Value, name: &str, what: &str) -> Result<&'a str, CloudError> {
    v[name]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| CloudError::Other(format!("{what}: the answer has no {name}")))
}

/// An RFC 3339 time (`2026-12-01T09:00:00Z`, `2026-12-01T17:00:00+08:00`).
pub fn expiry(text: &str, what: &str) -> Result<SystemTime, CloudError> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| CloudError::Other(format!("{what}: the expiry \"{text}\" is not a time: {e}")))
}

/// Renewed `sdk_margin` before expiry as the SDK does, but never earlier than half their life:
/// credentials shorter-lived than the margin would otherwise be renewed on every call.
pub fn issued(creds: Creds, expires: SystemTime, sdk_margin: Duration) -> Issued {
    let life = expires
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    Issued::expiring(creds, expires, sdk_margin.min(life / 2))
}

/// A message from an endpoint, without the token that was sent and cut short.
pub fn scrub(message: &str, secrets: &[&str]) -> String {
    let mut m = message.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        m = m.replace(s, "***");
    }
    if m.chars().count() > 200 {
        m = m.chars().take(200).collect::<String>() + "…";
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_times_and_margins() {
        let env = |n: &str| (n == "E").then(|| "sts.example:8443/".to_string());
        assert_eq!(endpoint(None, &env, "E", "d"), "https://sts.example:8443");
        assert_eq!(
            endpoint(Some("https://c.example"), &env, "E", "d"),
            "https://c.example"
        );
        assert_eq!(endpoint(None, &env, "X", "http://m"), "http://m");
        let t = expiry("2026-12-01T17:00:00+08:00", "x").unwrap();
        assert_eq!(t, expiry("2026-12-01T09:00:00Z", "x").unwrap());
        assert!(expiry("yesterday", "x").is_err());
        let creds = Creds {
            access_key_id: "a".into(),
            access_key_secret: "s".into(),
            security_token: None,
            project_id: None,
        };
        let exp = SystemTime::now() + Duration::from_secs(3600);
        let i = issued(creds.clone(), exp, Duration::from_secs(900));
        assert_eq!(i.renew_at, Some(exp - Duration::from_secs(900)));
        let exp = SystemTime::now() + Duration::from_secs(60);
        let i = issued(creds, exp, Duration::from_secs(900));
        let early = exp.duration_since(i.renew_at.unwrap()).unwrap();
        assert!(early <= Duration::from_secs(30), "{early:?}");
        assert_eq!(scrub("bad token eyJhbGci", &["eyJhbGci"]), "bad token ***");
    }
}
