//! The HTTPS client for the clouds' APIs, and what can go wrong with a call.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::sign::Req;

/// A cloud answer larger than this is refused (a load balancer with its listeners is a few KiB).
const MAX_BODY: usize = 4 << 20;

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
    #[error("the API refused lbguard's credentials ({0}); check the Secret and its permissions")]
    Auth(String),
    #[error(
        "lbguard's own request budget (inventory.cloud.qps) is used up for this admission's time budget"
    )]
    Budget,
    #[error("cannot reach the API: {0}")]
    Connect(String),
    #[error("{0}")]
    Other(String),
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
            CloudError::Connect(_) => "connect_error",
            CloudError::Other(_) => "error",
        }
    }

    /// Worth a retry by the background refresh.
    pub fn transient(&self) -> bool {
        !matches!(self, CloudError::Auth(_) | CloudError::Other(_))
    }
}

/// One answer: the HTTP status and the body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    /// The body of a success, which must be JSON; of an error, whatever JSON it has (a
    /// gateway's HTML page reads as null, and the status classifies it).
    pub fn body(&self) -> Result<serde_json::Value, CloudError> {
        match self.json() {
            Err(e) if self.status < 300 => Err(e),
            r => Ok(r.unwrap_or_default()),
        }
    }

    pub fn json(&self) -> Result<serde_json::Value, CloudError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            CloudError::Other(format!(
                "HTTP {}: the answer is not JSON ({e})",
                self.status
            ))
        })
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Http")
    }
}

impl Http {
    /// Trusts the system's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` override them, as for
    /// other tools) and any PEM certificates in `extra`.
    pub fn new(extra: &[u8]) -> anyhow::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for cert in native.certs {
            let _ = roots.add(cert);
        }
        for cert in CertificateDer::pem_slice_iter(extra) {
            roots.add(cert?)?;
        }
        if roots.is_empty() {
            anyhow::bail!(
                "no trusted CA certificates for the cloud API: install the system's CA bundle or set SSL_CERT_FILE"
            );
        }
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(5)));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(4)
            .build(https);
        Ok(Self { client })
    }

    /// Sends a signed request to `base` (`https://host[:port]`) within `budget`.
    pub async fn send(
        &self,
        base: &str,
        req: &Req,
        budget: Duration,
    ) -> Result<Answer, CloudError> {
        let query = req.query_string();
        let uri = if query.is_empty() {
            format!("{base}{}", req.path)
        } else {
            format!("{base}{}?{query}", req.path)
        };
        let mut builder = hyper::Request::builder().method(req.method).uri(&uri);
        for (k, v) in &req.headers {
            // hyper sets Host from the URI; a second one would be a malformed request.
            if k.eq_ignore_ascii_case("host") {
                continue;
            }
            builder = builder.header(k, v);
        }
        let request = builder
            .body(Full::new(Bytes::from(req.body.clone())))
            .map_err(|e| CloudError::Other(format!("cannot build the request: {e}")))?;
        let call = async {
            let resp = self
                .client
                .request(request)
                .await
                .map_err(|e| CloudError::Connect(connect_cause(&e)))?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| CloudError::Connect(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok(Answer { status, body })
        };
        tokio::time::timeout(budget, call)
            .await
            .unwrap_or(Err(CloudError::Timeout(budget.as_millis())))
    }
}

/// The innermost cause of a connection error (hyper's outer one says only "client error").
fn connect_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Parses `https://host[:port]` into the base and the Host header's value.
pub fn base_and_host(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("\"{url}\" is not an https URL"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(format!("\"{url}\" names no host"));
    }
    Ok((format!("https://{authority}"), authority.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_and_host_keep_the_port() {
        assert_eq!(
            base_and_host("https://127.0.0.1:8443/x").unwrap(),
            ("https://127.0.0.1:8443".into(), "127.0.0.1:8443".into())
        );
        assert!(base_and_host("http://a").is_err());
        assert!(base_and_host("https://").is_err());
    }

    #[test]
    fn only_credential_problems_are_not_retried() {
        assert!(CloudError::Throttled("x".into()).transient());
        assert!(CloudError::Timeout(1).transient());
        assert!(!CloudError::Auth("x".into()).transient());
    }
}
