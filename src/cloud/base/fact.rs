//! What the cloud said of one load balancer id, and the small helpers every cloud's mapping
//! shares to read its answers.

use serde_json::Value;

use crate::vocab::lb::LoadBalancer;

/// What the cloud said of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
// Facts live behind an `Arc` in the cache, so the size of a found one costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Fact {
    Found(LoadBalancer),
    NotFound,
    /// The id cannot name a load balancer: not asked about.
    Invalid,
}

/// Whether `id` can name a load balancer at all: every cloud's ids are short runs of
/// letters, digits, `-`, `_` and `.`. Anything else is answered without a call.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// A listener from an answer's port (a number, or a number in a string) and protocol;
/// `None` for a port that is not one.
pub(crate) fn listener(
    port: &Value,
    protocol: &Value,
    owner: String,
) -> Option<crate::vocab::lb::Listener> {
    let port = port
        .as_u64()
        .or_else(|| port.as_str().and_then(|p| p.parse().ok()))
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)?;
    Some(crate::vocab::lb::Listener {
        port,
        protocol: protocol.as_str().unwrap_or("TCP").to_ascii_uppercase(),
        owner,
    })
}

/// A string field, when it is set and not empty.
pub(crate) fn non_empty(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(String::from)
}

/// The first of `keys` that holds a string in `v` ("" when none does): the clouds name their
/// error fields differently from one API to the next.
pub(crate) fn text<'a>(v: &'a Value, keys: &[&str]) -> &'a str {
    keys.iter().find_map(|k| v[*k].as_str()).unwrap_or_default()
}
