//! Raw bytes to both admission endpoints, as the API server would POST them: never a panic,
//! never a 5xx, and a 200 answer carries the request's uid whenever it can be read.
#![no_main]
use std::sync::{Arc, LazyLock};

use axum::body::Body;
use libfuzzer_sys::fuzz_target;
use lbguard::config::Config;
use lbguard::server::metrics::Metrics;
use lbguard::server::{App, router};
use serde_json::Value;
use tower::ServiceExt;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

static ROUTER: LazyLock<axum::Router> = LazyLock::new(|| {
    let config = Config::parse(
        "cluster:\n  version: v1.31.0\nccm:\n  version: v1.45.0\ndefaults:\n  volcengineWeight: 50\n  huaweiElbClass: performance\naudit:\n  interval: 0\n",
        "fuzz",
    )
    .unwrap();
    router(App::new(config, Arc::new(Metrics::new())))
});

fuzz_target!(|data: &[u8]| {
    let uid = serde_json::from_slice::<Value>(data)
        .ok()
        .and_then(|v| v["request"]["uid"].as_str().map(str::to_string))
        .filter(|u| !u.is_empty());
    for path in ["/validate", "/mutate"] {
        let req = axum::http::Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(data.to_vec()))
            .unwrap();
        let (status, body) = RT.block_on(async {
            let resp = ROUTER.clone().oneshot(req).await.unwrap();
            let status = resp.status();
            (status, axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap())
        });
        assert!(status.as_u16() < 500, "{path}: {status}");
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        if status == 200 {
            assert_eq!(answer["kind"], "AdmissionReview");
            if let Some(uid) = &uid {
                assert_eq!(answer["response"]["uid"].as_str(), Some(uid.as_str()));
            }
        }
    }
});
