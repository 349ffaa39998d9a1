//! One HTTP request to a cloud API as it is built, signed and sent: what the signers read
//! and add headers to, and the client sends.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// One HTTP request before it is sent: what every signer reads and adds headers to.
#[derive(Clone, Default)]
pub struct Req {
    pub method: &'static str,
    /// The `Host` header: the endpoint's authority.
    pub host: String,
    /// The path as sent (only unreserved characters and `/` in it).
    pub path: String,
    /// Query parameters, not encoded.
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The query string exactly as signed, when the signer encodes it its own way: sent as is.
    pub signed_query: Option<String>,
}

/// Headers that carry a signature or a token: never shown.
const SECRET_HEADERS: [&str; 5] = [
    "authorization",
    "eop-authorization",
    "x-acs-security-token",
    "x-security-token",
    "x-acs-accesskey-id",
];

impl std::fmt::Debug for Req {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let secret = SECRET_HEADERS.contains(&k.to_ascii_lowercase().as_str());
                (k.as_str(), if secret { "***" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("Req")
            .field("method", &self.method)
            .field("host", &self.host)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("headers", &headers)
            .finish_non_exhaustive()
    }
}

impl Req {
    pub(crate) fn set(&mut self, name: &str, value: String) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_string(), value));
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The query string as sent: as signed when the signer fixed it, else [`Self::query_string`].
    pub fn sent_query(&self) -> String {
        self.signed_query
            .clone()
            .unwrap_or_else(|| self.query_string())
    }

    /// The query string: sorted, every key and value encoded.
    pub fn query_string(&self) -> String {
        let mut q: Vec<_> = self
            .query
            .iter()
            .map(|(k, v)| (encode(k), encode(v)))
            .collect();
        q.sort();
        q.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// Lower-cased names and trimmed values of the headers to sign, sorted.
    pub(crate) fn canonical_headers(&self, names: impl Fn(&str) -> bool) -> (String, String) {
        let mut h: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(k, _)| names(k))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        h.sort();
        let canonical: String = h.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let signed = h
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(";");
        (canonical, signed)
    }
}

/// RFC 3986 unreserved characters stay; everything else is percent-encoded.
pub(crate) const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}
