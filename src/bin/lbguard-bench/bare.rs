//! The floor: TLS, HTTP/1.1 keep-alive, one JSON parse and a tiny answer (or, for the denied
//! body, a denial padded to the size of lbguard's: what answering with a message costs).

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub async fn run(
    addr: std::net::SocketAddr,
    cert: &Path,
    key: &Path,
    answer_bytes: Option<usize>,
) -> anyhow::Result<()> {
    let certs: Vec<CertificateDer> =
        CertificateDer::pem_file_iter(cert)?.collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let mut tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind(addr).await?;
    eprintln!("baseline serving on {}", listener.local_addr()?);
    // The padding, from the first review's answer (the benchmark posts one body throughout).
    let pad: Arc<std::sync::OnceLock<usize>> = Arc::default();
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let pad = Arc::clone(&pad);
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| {
                let pad = Arc::clone(&pad);
                async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes());
                    let review: Value = body
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok())
                        .unwrap_or(Value::Null);
                    let uid = &review["request"]["uid"];
                    let answer = match answer_bytes {
                        None => {
                            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": {"uid": uid, "allowed": true}})
                        }
                        Some(n) => {
                            let denial = |message: String| {
                                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                            "response": {"uid": uid, "allowed": false, "status": {"code": 403, "message": message}}})
                            };
                            let pad = *pad.get_or_init(|| {
                                n.saturating_sub(denial(String::new()).to_string().len())
                            });
                            denial("x".repeat(pad))
                        }
                    };
                    let mut resp = hyper::Response::new(Full::new(Bytes::from(answer.to_string())));
                    resp.headers_mut().insert(
                        "content-type",
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    Ok::<_, Infallible>(resp)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
