//! The secure metrics port: HTTPS, and callers authenticated (TokenReview) and authorized
//! (SubjectAccessReview on the non-resource URL) by a mocked API server.

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Client, Start, TestServer};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{Value, json};

/// An API server that knows two tokens: "prom" (allowed to get /metrics and /report) and
/// "nosy" (authenticated, allowed nothing).
#[derive(Clone, Default)]
struct Api {
    calls: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

impl Api {
    fn client(&self) -> kube::Client {
        let api = self.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let api = api.clone();
            async move { Ok::<_, Infallible>(api.answer(req).await) }
        });
        kube::Client::new(svc, "default")
    }

    async fn answer(&self, req: Request<Body>) -> Response<Body> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let path = req.uri().path().to_string();
        let body: Value =
            serde_json::from_slice(&req.into_body().collect().await.unwrap().to_bytes()).unwrap();
        if self.down.load(Ordering::SeqCst) {
            return reply(
                503,
                json!({"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "down"}),
            );
        }
        match path.as_str() {
            "/apis/authentication.k8s.io/v1/tokenreviews" => {
                let token = body["spec"]["token"].as_str().unwrap_or_default();
                let user = match token {
                    "prom" => Some(
                        json!({"username": "system:serviceaccount:monitoring:prometheus", "uid": "u1", "groups": ["system:serviceaccounts"]}),
                    ),
                    "nosy" => Some(
                        json!({"username": "system:serviceaccount:shop:nosy", "groups": ["system:serviceaccounts"]}),
                    ),
                    _ => None,
                };
                let mut out = body.clone();
                out["status"] = match user {
                    Some(u) => json!({"authenticated": true, "user": u}),
                    None => json!({"authenticated": false, "error": "invalid bearer token"}),
                };
                reply(201, out)
            }
            "/apis/authorization.k8s.io/v1/subjectaccessreviews" => {
                let spec = &body["spec"];
                assert_eq!(spec["nonResourceAttributes"]["verb"], "get");
                let allowed = spec["user"] == "system:serviceaccount:monitoring:prometheus"
                    && spec["uid"] == "u1"
                    && ["/metrics", "/report"]
                        .contains(&spec["nonResourceAttributes"]["path"].as_str().unwrap());
                let mut out = body.clone();
                out["status"] = json!({"allowed": allowed, "reason": if allowed { "" } else { "no RBAC policy matched" }});
                reply(201, out)
            }
            other => reply(
                404,
                json!({"kind": "Status", "code": 404, "reason": "NotFound", "message": other}),
            ),
        }
    }
}

fn reply(code: u16, body: Value) -> Response<Body> {
    let mut r = Response::new(Body::from(serde_json::to_vec(&body).unwrap()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap();
    r
}

async fn secure_server(api: &Api) -> (TestServer, Client) {
    let s = TestServer::start_with(Start {
        metrics_secure: true,
        metrics_auth_client: Some(api.client()),
        ..Default::default()
    })
    .await;
    let c = Client::new(&s.ca_pem, s.running.metrics_addr.unwrap());
    (s, c)
}

async fn get(c: &Client, path: &str, token: Option<&str>) -> common::Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
    c.request_with("GET", path, &headers, vec![]).await.unwrap()
}

#[tokio::test]
async fn an_authorized_scraper_reads_metrics_and_the_report() {
    let api = Api::default();
    let (_s, c) = secure_server(&api).await;
    let r = get(&c, "/metrics", Some("prom")).await;
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("lbguard_tls_reloads_total"));
    assert_eq!(
        api.calls.load(Ordering::SeqCst),
        2,
        "one TokenReview, one SubjectAccessReview"
    );
    let r = get(&c, "/report", Some("prom")).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["summary"].is_object());
    // The same token and path again: answered from the cache.
    let before = api.calls.load(Ordering::SeqCst);
    assert_eq!(get(&c, "/metrics", Some("prom")).await.status, 200);
    assert_eq!(api.calls.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn no_token_bad_token_and_no_permission_are_refused() {
    let api = Api::default();
    let (_s, c) = secure_server(&api).await;
    let r = get(&c, "/report", None).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        api.calls.load(Ordering::SeqCst),
        0,
        "refused without asking the API server"
    );
    let r = get(&c, "/metrics", Some("forged")).await;
    assert_eq!(r.status, 401);
    assert!(String::from_utf8_lossy(&r.body).contains("invalid bearer token"));
    let r = get(&c, "/report", Some("nosy")).await;
    assert_eq!(r.status, 403);
    let text = String::from_utf8_lossy(&r.body).to_string();
    assert!(
        text.contains("system:serviceaccount:shop:nosy may not get /report"),
        "{text}"
    );
}

#[tokio::test]
async fn an_unreachable_api_server_is_a_503_not_an_open_door() {
    let api = Api::default();
    api.down.store(true, Ordering::SeqCst);
    let (_s, c) = secure_server(&api).await;
    assert_eq!(get(&c, "/metrics", Some("prom")).await.status, 503);
}

#[tokio::test]
async fn the_secure_port_speaks_only_tls() {
    let api = Api::default();
    let (s, _c) = secure_server(&api).await;
    let addr = s.running.metrics_addr.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /report HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ =
        tokio::time::timeout(std::time::Duration::from_secs(2), tcp.read_to_end(&mut out)).await;
    assert!(!String::from_utf8_lossy(&out).contains("200 OK"));
}

#[tokio::test]
async fn secure_metrics_need_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let certs = lbguard::server::devcert::generate(&["localhost"]).unwrap();
    let (cert, key) = common::write_pair(dir.path(), &certs);
    let opts = lbguard::server::ServerOptions {
        metrics_addr: Some("127.0.0.1:0".parse().unwrap()),
        metrics_secure: true,
        ..lbguard::server::ServerOptions::local(Default::default(), cert, key)
    };
    let err = lbguard::server::start(opts, std::future::pending())
        .await
        .err()
        .expect("start must fail");
    assert!(
        format!("{err:#}").contains("--metrics-secure needs a cluster"),
        "{err:#}"
    );
}
