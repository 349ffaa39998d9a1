//! An in-memory Lease API with the API server's write semantics: create-if-absent
//! (AlreadyExists), resourceVersion preconditions on update, uid/resourceVersion
//! preconditions on delete. It plugs into `kube::Client` as its transport, so the claim
//! protocol runs unchanged against it: the concurrency tests run several lbguard instances
//! on one store, and `lbguard-bench claims` measures a claim's own cost with it.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{self, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::client::Body;
use serde_json::{Value, json};

/// The shared store; clone it into as many clients as there are "replicas".
#[derive(Clone, Default)]
pub struct MemoryLeases {
    inner: Arc<Store>,
}

#[derive(Default)]
struct Store {
    leases: Mutex<BTreeMap<String, Lease>>,
    version: AtomicU64,
    requests: AtomicU64,
    /// Answer every request with 503 (the API server is down).
    down: AtomicBool,
    /// Added to every request (microseconds).
    delay_us: AtomicU64,
}

fn status(code: StatusCode, reason: &str, message: String) -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, &body)
}

fn respond(code: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut r = Response::new(Body::from(bytes));
    *r.status_mut() = code;
    r.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    r
}

impl MemoryLeases {
    pub fn new() -> Self {
        Self::default()
    }

    /// A client whose every request goes to this store.
    pub fn client(&self) -> kube::Client {
        let store = self.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let store = store.clone();
            async move { Ok::<_, Infallible>(store.handle(req).await) }
        });
        kube::Client::new(svc, "lbguard-system")
    }

    pub fn set_down(&self, down: bool) {
        self.inner.down.store(down, Ordering::SeqCst);
    }

    pub fn set_delay(&self, delay: Duration) {
        self.inner
            .delay_us
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// Requests served so far.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::SeqCst)
    }

    /// Every stored Lease, by name.
    pub fn leases(&self) -> BTreeMap<String, Lease> {
        self.inner
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces a stored Lease as is (tests age claims with it).
    pub fn put(&self, lease: Lease) {
        let name = lease.metadata.name.clone().unwrap_or_default();
        self.inner
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, lease);
    }

    async fn handle(&self, req: Request<Body>) -> Response<Body> {
        self.inner.requests.fetch_add(1, Ordering::SeqCst);
        let delay = self.inner.delay_us.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_micros(delay)).await;
        }
        if self.inner.down.load(Ordering::SeqCst) {
            return status(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                "the server is currently unable to handle the request".into(),
            );
        }
        let (parts, body) = req.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                return status(StatusCode::BAD_REQUEST, "BadRequest", e.to_string());
            }
        };
        let path = parts.uri.path();
        let Some(rest) = path
            .strip_prefix("/apis/coordination.k8s.io/v1/namespaces/")
            .and_then(|r| r.split_once("/leases"))
            .map(|(_, r)| r.trim_start_matches('/'))
        else {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no route {path}"),
            );
        };
        let name = rest.to_string();
        let mut leases = self.inner.leases.lock().unwrap_or_else(|p| p.into_inner());
        let not_found = || {
            status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("leases.coordination.k8s.io \"{name}\" not found"),
            )
        };
        let conflict = |what: &str| {
            status(
                StatusCode::CONFLICT,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": {what}"
                ),
            )
        };
        match (parts.method, name.is_empty()) {
            (Method::GET, true) => {
                let items: Vec<&Lease> = leases.values().collect();
                let rv = self.inner.version.load(Ordering::SeqCst).to_string();
                respond(
                    StatusCode::OK,
                    &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
                            "metadata": {"resourceVersion": rv}, "items": items}),
                )
            }
            (Method::GET, false) => match leases.get(&name) {
                Some(l) => respond(StatusCode::OK, l),
                None => not_found(),
            },
            (Method::POST, true) => {
                let Ok(mut lease) = serde_json::from_slice::<Lease>(&body) else {
                    return status(StatusCode::BAD_REQUEST, "BadRequest", "not a Lease".into());
                };
                let name = lease.metadata.name.clone().unwrap_or_default();
                if leases.contains_key(&name) {
                    return status(
                        StatusCode::CONFLICT,
                        "AlreadyExists",
                        format!("leases.coordination.k8s.io \"{name}\" already exists"),
                    );
                }
                let v = self.inner.version.fetch_add(1, Ordering::SeqCst) + 1;
                lease.metadata.uid = Some(format!("uid-{v}"));
                lease.metadata.resource_version = Some(v.to_string());
                lease.metadata.creation_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
                leases.insert(name, lease.clone());
                respond(StatusCode::CREATED, &lease)
            }
            (Method::PUT, false) => {
                let Ok(mut lease) = serde_json::from_slice::<Lease>(&body) else {
                    return status(StatusCode::BAD_REQUEST, "BadRequest", "not a Lease".into());
                };
                let Some(old) = leases.get(&name) else {
                    return not_found();
                };
                if lease.metadata.resource_version != old.metadata.resource_version {
                    return conflict(
                        "the object has been modified; please apply your changes to the latest version and try again",
                    );
                }
                let v = self.inner.version.fetch_add(1, Ordering::SeqCst) + 1;
                lease.metadata.uid = old.metadata.uid.clone();
                lease.metadata.creation_timestamp = old.metadata.creation_timestamp.clone();
                lease.metadata.resource_version = Some(v.to_string());
                leases.insert(name, lease.clone());
                respond(StatusCode::OK, &lease)
            }
            (Method::DELETE, false) => {
                let Some(old) = leases.get(&name) else {
                    return not_found();
                };
                let pre = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("preconditions").cloned())
                    .unwrap_or(Value::Null);
                let text = |k: &str| pre.get(k).and_then(Value::as_str).map(str::to_string);
                if let Some(uid) = text("uid")
                    && Some(&uid) != old.metadata.uid.as_ref()
                {
                    return conflict("Precondition failed: UID in precondition does not match");
                }
                if let Some(rv) = text("resourceVersion")
                    && Some(&rv) != old.metadata.resource_version.as_ref()
                {
                    return conflict(
                        "Precondition failed: ResourceVersion in precondition does not match",
                    );
                }
                let gone = leases.remove(&name);
                respond(StatusCode::OK, &gone)
            }
            (m, _) => status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!("{m} is not supported here"),
            ),
        }
    }
}
