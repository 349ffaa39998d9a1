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

use super::outcome::CloudError;
use super::sign::Req;

/// A cloud answer larger than this is refused (a load balancer with its listeners is a few KiB).
const MAX_BODY: usize = 4 << 20;

/// One answer: the HTTP status, its content type and the body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Bytes,
    /// The answer's headers (Huawei's IAM hands out a token in one).
    pub headers: hyper::HeaderMap,
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
            // Plain http only for the instance metadata services (link-local, never proxied);
            // the load balancer, STS and IAM endpoints are checked to be https where configured.
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(4)
            .build(https);
        Ok(Self { client })
    }

    /// Sends a signed request to `base` (`https://host[:port]`) within `budget`: the path and
    /// query exactly as signed.
    pub async fn send(
        &self,
        base: &str,
        req: &Req,
        budget: Duration,
    ) -> Result<Answer, CloudError> {
        let query = req.sent_query();
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
            let content_type = resp
                .headers()
                .get(hyper::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let headers = resp.headers().clone();
            let body = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| CloudError::Connect(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok(Answer {
                status,
                content_type,
                body,
                headers,
            })
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
