//! What a call to a cloud API came to: the closed set every cloud's answers are mapped to.
//! Only a cloud's documented not-found answer means "does not exist"; everything else that is
//! not a success is one of these errors, which the admission answers under `onError` and the
//! metrics count by [`CloudError::label`].

/// Why a look-up gave no facts. Messages carry the cloud's error code and status, never a
/// credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloudError {
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("the API throttled lbguard ({0})")]
    Throttled(String),
    #[error("the API failed ({0})")]
    Server(String),
    #[error(
        "the API refused lbguard's credentials ({0}); check the access key or the role, and its permissions"
    )]
    Auth(String),
    #[error(
        "rate limit: lbguard's own request budget (inventory.cloud.qps) is used up; retry in a moment"
    )]
    Budget,
    /// A list that could not be read to its end (a bound, a repeated page token).
    #[error("{0}")]
    Incomplete(String),
    /// An answer larger than lbguard reads (MiB): not read whole. Counted `incomplete` by the
    /// call that got it.
    #[error("could not read the whole answer: it is larger than {0} MiB")]
    TooLarge(usize),
    /// The endpoint answered, but not as the cloud's API does (an HTML page, a bare 404).
    #[error("the endpoint did not answer as the cloud's API ({0}); check inventory.cloud.endpoint")]
    BadEndpoint(String),
    #[error("cannot reach the API: {0}")]
    Connect(String),
    /// An error answer of the cloud's own shape that no mapping knows.
    #[error("{0}")]
    Other(String),
    /// No credentials to sign with: the STS, IAM, metadata or pod-identity endpoint failed
    /// (its cause in the text), and the last good credentials have expired.
    #[error("no cloud credentials: {0}")]
    Credentials(String),
}

impl CloudError {
    /// The `result` label of `lbguard_cloud_api_requests_total`.
    pub fn label(&self) -> &'static str {
        match self {
            CloudError::Timeout(_) => "timeout",
            CloudError::Throttled(_) => "throttled",
            CloudError::Server(_) => "server_error",
            CloudError::Auth(_) => "auth_error",
            CloudError::Budget => "budget",
            CloudError::Incomplete(_) | CloudError::TooLarge(_) => "incomplete",
            CloudError::BadEndpoint(_) => "bad_endpoint",
            CloudError::Connect(_) => "connect_error",
            CloudError::Other(_) => "error",
            CloudError::Credentials(_) => "credentials_error",
        }
    }

    /// Worth a retry by the background refresh.
    pub fn transient(&self) -> bool {
        matches!(
            self,
            CloudError::Timeout(_)
                | CloudError::Throttled(_)
                | CloudError::Server(_)
                | CloudError::Budget
                | CloudError::Connect(_)
                | CloudError::Credentials(_)
        )
    }

    /// The same error with its text passed through `f` (the scrubber).
    pub(crate) fn map_text(self, f: impl Fn(&str) -> String) -> Self {
        match self {
            CloudError::Throttled(s) => CloudError::Throttled(f(&s)),
            CloudError::Server(s) => CloudError::Server(f(&s)),
            CloudError::Auth(s) => CloudError::Auth(f(&s)),
            CloudError::Incomplete(s) => CloudError::Incomplete(f(&s)),
            CloudError::BadEndpoint(s) => CloudError::BadEndpoint(f(&s)),
            CloudError::Connect(s) => CloudError::Connect(f(&s)),
            CloudError::Other(s) => CloudError::Other(f(&s)),
            CloudError::Credentials(s) => CloudError::Credentials(f(&s)),
            e @ (CloudError::Timeout(_) | CloudError::Budget | CloudError::TooLarge(_)) => e,
        }
    }
}

/// One answer, classified by the cloud's mapping.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Ok(serde_json::Value),
    /// The cloud's documented "no such load balancer".
    NotFound,
    Fail(CloudError),
}

/// An error answer in the cloud's own shape whose code the mapping does not know: the HTTP
/// status says what it can.
pub(crate) fn by_status(status: u16, code: &str, message: &str) -> CloudError {
    let what = describe(status, code, message);
    match status {
        429 => CloudError::Throttled(what),
        401 | 403 => CloudError::Auth(what),
        s if s >= 500 => CloudError::Server(what),
        _ => CloudError::Other(what),
    }
}

/// `HTTP 400 Code: message`
pub(crate) fn describe(status: u16, code: &str, message: &str) -> String {
    match (code.is_empty(), message.is_empty()) {
        (true, true) => format!("HTTP {status}"),
        (false, true) => format!("HTTP {status} {code}"),
        (true, false) => format!("HTTP {status}: {message}"),
        (false, false) => format!("HTTP {status} {code}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_labels() {
        assert!(matches!(by_status(429, "x", ""), CloudError::Throttled(_)));
        assert!(matches!(by_status(403, "x", ""), CloudError::Auth(_)));
        assert!(matches!(by_status(502, "x", ""), CloudError::Server(_)));
        assert!(matches!(by_status(400, "x", "m"), CloudError::Other(m) if m == "HTTP 400 x: m"));
        assert_eq!(CloudError::Budget.label(), "budget");
        assert!(CloudError::Budget.to_string().starts_with("rate limit"));
        assert!(CloudError::Throttled("x".into()).transient());
        assert!(CloudError::Timeout(1).transient());
        assert!(!CloudError::Auth("x".into()).transient());
        assert!(!CloudError::Incomplete("x".into()).transient());
    }
}
