//! A real lbguard server on 127.0.0.1 and a TLS client that trusts its CA.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use lbguard::server::devcert::{DevCerts, generate};
use lbguard::server::{Running, ServerOptions, start};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

pub mod connect_proxy;
pub mod mock_cloud;
pub mod python;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A loopback port the kernel just handed out (free now; good enough on a test host).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

pub fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Sets the annotations a test needs, keeping the fixture's envelope.
pub fn set_annotations(review: &mut Value, which: &str, anns: &[(&str, &str)]) {
    let map: serde_json::Map<String, Value> = anns
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    review["request"][which]["metadata"]["annotations"] = Value::Object(map);
}

pub struct TestServer {
    pub running: Running,
    pub ca_pem: String,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The plain-HTTP metrics page at `addr` (the whole response, headers included).
pub async fn metrics_at(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    text
}

pub fn write_pair(dir: &Path, certs: &DevCerts) -> (PathBuf, PathBuf) {
    let (c, k) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&c, &certs.cert_pem).unwrap();
    std::fs::write(&k, &certs.key_pem).unwrap();
    (c, k)
}

pub struct Start {
    pub config: &'static str,
    pub reload: Duration,
    pub request_timeout: Duration,
    pub grace: Duration,
    pub client: Option<kube::Client>,
    pub claims_client: Option<kube::Client>,
    pub metrics_secure: bool,
    pub metrics_auth_client: Option<kube::Client>,
    pub max_connections: usize,
    pub max_inflight: usize,
    /// CA certificates the cloud client trusts (the mock cloud's).
    pub cloud_roots: Vec<u8>,
}

impl Default for Start {
    fn default() -> Self {
        Self {
            config: "",
            reload: Duration::from_secs(3600),
            request_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(5),
            client: None,
            claims_client: None,
            metrics_secure: false,
            metrics_auth_client: None,
            max_connections: lbguard::server::MAX_CONNECTIONS,
            max_inflight: lbguard::server::MAX_INFLIGHT,
            cloud_roots: Vec::new(),
        }
    }
}

impl TestServer {
    pub async fn start(config: &'static str) -> Self {
        Self::start_with(Start {
            config,
            ..Default::default()
        })
        .await
    }

    pub async fn start_with(s: Start) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let certs = generate(&["localhost", "127.0.0.1"]).unwrap();
        let (cert, key) = write_pair(dir.path(), &certs);
        Self::start_files(s, dir, certs.ca_pem, cert, key).await
    }

    pub async fn start_files(
        s: Start,
        dir: tempfile::TempDir,
        ca_pem: String,
        cert: PathBuf,
        key: PathBuf,
    ) -> Self {
        let config = lbguard::engine::parse_config(s.config, "test").unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let running = start(
            ServerOptions {
                metrics_addr: Some("127.0.0.1:0".parse().unwrap()),
                reload_interval: s.reload,
                shutdown_grace: s.grace,
                request_timeout: s.request_timeout,
                client: s.client,
                claims_client: s.claims_client,
                metrics_secure: s.metrics_secure,
                metrics_auth_client: s.metrics_auth_client,
                max_connections: s.max_connections,
                max_inflight: s.max_inflight,
                cloud_roots: s.cloud_roots,
                ..ServerOptions::local(config, cert, key)
            },
            async move {
                let _ = rx.await;
            },
        )
        .await
        .unwrap();
        Self {
            running,
            ca_pem,
            dir,
            stop: Some(tx),
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.ca_pem, self.running.addr)
    }

    /// The plain-HTTP metrics page, as a scraper without credentials reads it.
    pub async fn metrics_text(&self) -> String {
        metrics_at(self.running.metrics_addr.expect("a metrics listener")).await
    }

    /// Sends the shutdown signal (SIGTERM's stand-in).
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

pub fn tls_config(
    ca_pem: &str,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

#[derive(Clone)]
pub struct Client {
    pub connector: TlsConnector,
    pub addr: SocketAddr,
}

pub struct Reply {
    pub status: u16,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The `response` of an AdmissionReview answer.
    pub fn review(&self) -> Value {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        let v = self.json();
        assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(v["kind"], "AdmissionReview");
        v["response"].clone()
    }
}

impl Client {
    pub fn new(ca_pem: &str, addr: SocketAddr) -> Self {
        Self::with_versions(
            ca_pem,
            addr,
            &[&rustls::version::TLS13, &rustls::version::TLS12],
        )
    }

    pub fn with_versions(
        ca_pem: &str,
        addr: SocketAddr,
        v: &[&'static rustls::SupportedProtocolVersion],
    ) -> Self {
        Self {
            connector: TlsConnector::from(tls_config(ca_pem, v)),
            addr,
        }
    }

    pub async fn connect(&self) -> std::io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        self.connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
    }

    /// A kept-alive HTTP/1.1 connection to send requests on, one after another.
    pub async fn keep_alive(
        &self,
    ) -> std::io::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
        let stream = self.connect().await?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Ok(send)
    }

    /// The DER of the certificate the server presents to a new connection.
    pub async fn peer_certificate(&self) -> Vec<u8> {
        let s = self.connect().await.unwrap();
        s.get_ref().1.peer_certificates().unwrap()[0].to_vec()
    }

    pub async fn request(&self, method: &str, path: &str, body: Vec<u8>) -> std::io::Result<Reply> {
        self.request_with(method, path, &[], body).await
    }

    pub async fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> std::io::Result<Reply> {
        let stream = self.connect().await?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from(body))).unwrap();
        let resp = send
            .send_request(req)
            .await
            .map_err(std::io::Error::other)?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(std::io::Error::other)?
            .to_bytes();
        Ok(Reply { status, body })
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, serde_json::to_vec(body).unwrap())
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, vec![]).await.unwrap()
    }
}

/// `POST /validate` with a JSON body, as a kept-alive connection sends it.
pub fn validate_request(body: Bytes) -> Request<Full<Bytes>> {
    Request::post("/validate")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .unwrap()
}
