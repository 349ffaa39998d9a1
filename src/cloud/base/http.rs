//! The HTTPS client for the clouds' APIs, and what can go wrong with a call. Calls go
//! through an HTTPS proxy's CONNECT tunnel when [`Proxy`] says so (hyper-util's `Tunnel`);
//! TLS to the cloud runs inside it, so the proxy sees only the host name.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Uri;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::outcome::CloudError;
use super::proxy::Proxy;
use super::request::Req;

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
    client: Client<HttpsConnector<Connector>, Full<Bytes>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Http")
    }
}

/// The PEM CA certificates of `inventory.cloud.caFile`, appended to `roots`; an unreadable
/// file, or one without a certificate, is refused with its path.
pub fn with_ca_file(roots: &[u8], ca_file: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let mut all = roots.to_vec();
    let Some(path) = ca_file else {
        return Ok(all);
    };
    let pem = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("inventory.cloud.caFile: cannot read {path}: {e}"))?;
    let mut n = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        cert.map_err(|e| anyhow::anyhow!("inventory.cloud.caFile: {path}: {e}"))?;
        n += 1;
    }
    if n == 0 {
        anyhow::bail!(
            "inventory.cloud.caFile: {path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        );
    }
    all.push(b'\n');
    all.extend(pem);
    Ok(all)
}

impl Http {
    /// Trusts the system's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` override them, as for
    /// other tools) and any PEM certificates in `extra`.
    pub fn new(extra: &[u8]) -> anyhow::Result<Self> {
        Self::with_proxy(extra, None)
    }

    /// As [`Http::new`], with the https calls `proxy` takes going through its tunnel.
    pub fn with_proxy(extra: &[u8], proxy: Option<Proxy>) -> anyhow::Result<Self> {
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
        let connector = Connector {
            proxy: proxy.map(|p| {
                let mut tunnel = Tunnel::new(p.uri().clone(), http.clone());
                if let Some(auth) = p.auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                (Arc::new(p), tunnel)
            }),
            direct: http,
        };
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            // Plain http only for the instance metadata services (link-local, never proxied);
            // the load balancer, STS and IAM endpoints are checked to be https where configured.
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
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
                .map_err(|e| {
                    // An answer past the bound was not read whole: not a connection failure.
                    if e.downcast_ref::<http_body_util::LengthLimitError>()
                        .is_some()
                    {
                        CloudError::TooLarge(MAX_BODY >> 20)
                    } else {
                        CloudError::Connect(format!("reading the answer: {e}"))
                    }
                })?
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

/// How long reaching the proxy and its answer to CONNECT may take (the call's budget, often
/// shorter, still ends it first).
const TUNNEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the destination, or through the proxy's tunnel for the https calls it takes.
/// Plain http (the metadata services) always goes direct.
#[derive(Clone)]
struct Connector {
    direct: HttpConnector,
    proxy: Option<(Arc<Proxy>, Tunnel<HttpConnector>)>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<Uri> for Connector {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Both connectors are always ready; each call readies its own clone.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        use tower::ServiceExt;
        if let Some((proxy, tunnel)) = &self.proxy
            && dst.scheme_str() == Some("https")
            && let Some(host) = dst.host()
        {
            let port = dst.port_u16().unwrap_or(443);
            if proxy.proxies(host, port) {
                let failed = TunnelFailed {
                    proxy: proxy.host(),
                    target: format!("{host}:{port}"),
                    cause: String::new(),
                };
                let tunnel = tunnel.clone();
                return Box::pin(async move {
                    match tokio::time::timeout(TUNNEL_TIMEOUT, tunnel.oneshot(dst)).await {
                        Ok(Ok(io)) => Ok(io),
                        Ok(Err(e)) => Err(failed.because(&e).into()),
                        Err(_) => Err(failed
                            .with(format!(
                                "no answer to CONNECT within {} s",
                                TUNNEL_TIMEOUT.as_secs()
                            ))
                            .into()),
                    }
                });
            }
        }
        let direct = self.direct.clone();
        Box::pin(async move { direct.oneshot(dst).await.map_err(Into::into) })
    }
}

/// A tunnel the proxy did not open: names the proxy (host and port only, never its
/// credentials) and the destination. It has no source, so it is the cause a call reports.
#[derive(Debug)]
struct TunnelFailed {
    proxy: String,
    target: String,
    cause: String,
}

impl TunnelFailed {
    fn with(mut self, cause: String) -> Self {
        self.cause = cause;
        self
    }

    /// hyper-util's tunnel error says what went wrong only in its text.
    fn because(self, e: &(dyn std::error::Error + 'static)) -> Self {
        let text = e.to_string();
        let cause = if text.ends_with("proxy authorization required") {
            "it answered 407 Proxy Authentication Required: check the user and password in HTTPS_PROXY".to_string()
        } else if text.ends_with("unsuccessful") {
            "it refused CONNECT (an error status such as 403: check the proxy's allow list)"
                .to_string()
        } else if text.ends_with("failed to create underlying connection") {
            format!("cannot reach the proxy: {}", connect_cause(e))
        } else if text.ends_with("unexpected end of file") {
            "it closed the connection without answering CONNECT".to_string()
        } else {
            match e.source() {
                Some(_) => format!("{text}: {}", connect_cause(e)),
                None => text,
            }
        };
        self.with(cause)
    }
}

impl std::fmt::Display for TunnelFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "through the proxy {} to {}: {}",
            self.proxy, self.target, self.cause
        )
    }
}

impl std::error::Error for TunnelFailed {}
