//! The fuzz targets' bodies, shared with `tests/fuzz_regressions.rs`, which replays every
//! crash input through the same code in `cargo test`.
#![allow(dead_code)]

use axum::body::Body;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lbguard::cluster::ClusterState;
use lbguard::config::Config;
use lbguard::engine::{Input, Operation, UserInfo, Versions, evaluate, mutate};
use lbguard::inventory::Snapshot;
use lbguard::providers::{Provider, catalog};
use lbguard::server::metrics::Metrics;
use lbguard::server::{App, router};
use serde_json::Value;
use std::sync::{Arc, LazyLock};
use tower::ServiceExt;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

static ROUTER: LazyLock<axum::Router> = LazyLock::new(|| {
    let config = lbguard::engine::parse_config(
        "cluster:\n  version: v1.31.0\nccm:\n  version: v1.45.0\ndefaults:\n  volcengineWeight: 50\n  huaweiElbClass: performance\naudit:\n  interval: 0\n",
        "fuzz",
    )
    .unwrap();
    router(App::new(config, Arc::new(Metrics::new())))
});

pub fn admission(data: &[u8]) {
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
            (
                status,
                axum::body::to_bytes(resp.into_body(), usize::MAX)
                    .await
                    .unwrap(),
            )
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
}

static KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut keys = vec![
        "kubernetes.io/elb.port".to_string(),
        "lbguard.io/deletion-protection".to_string(),
    ];
    for p in Provider::ALL {
        let cat = catalog(p);
        for name in cat.table().names() {
            for prefix in cat.prefixes() {
                keys.push(format!("{prefix}{name}"));
            }
        }
    }
    keys
});

static CONFIG: LazyLock<Config> = LazyLock::new(|| {
    lbguard::engine::parse_config(
        "cluster:\n  version: v1.29.15-r90\n  proxyMode: ipvs\n  flavor: turbo\n  vpcId: vpc-1\nccm:\n  version: v1.45.0\ndefaults:\n  volcengineWeight: 50\n  huaweiElbClass: performance\n  ctyunIpModeProxy: true\n",
        "fuzz",
    )
    .unwrap()
});

static INVENTORY: LazyLock<Snapshot> = LazyLock::new(|| {
    Snapshot::parse(
        "loadBalancers:\n  - {id: lb-1, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-2, createdBy: ccm, listeners: [{port: 80, protocol: TCP, owner: external}]}\n  - {id: lb-1, provider: ctyun, addressType: internet, createdBy: user}\n  - {id: lb-1, provider: huawei, kind: elb-dedicated, flavors: [l4], createdBy: user}\n  - {id: lb-1, provider: volcengine, kind: clb, createdBy: user}\n",
        "fuzz",
    )
    .unwrap()
});

fn service(name: &str, annotations: &[(String, String)], ports: &[i32], local: bool) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("shop".into()),
            annotations: Some(annotations.iter().cloned().collect()),
            finalizers: Some(vec!["service.k8s.alibaba/resources".into()]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            external_traffic_policy: Some(if local { "Local" } else { "Cluster" }.into()),
            external_ips: Some(vec!["10.0.0.1".into()]),
            ports: Some(
                ports
                    .iter()
                    .map(|p| ServicePort {
                        port: *p,
                        protocol: Some(if p % 2 == 0 { "TCP" } else { "UDP" }.into()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        status: None,
    }
}

pub fn annotations(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut annotations = Vec::new();
    for chunk in rest.split(|b| *b == 0xff) {
        let Some((&which, value)) = chunk.split_first() else {
            continue;
        };
        let key = KEYS[which as usize % KEYS.len()].clone();
        annotations.push((key, String::from_utf8_lossy(value).into_owned()));
    }
    let ports = [80, 443, i32::from(flags) * 257 % 70000];
    let new = service("web", &annotations, &ports, flags & 1 == 1);
    let old = service(
        "web",
        &annotations[..annotations.len() / 2],
        &ports[..2],
        flags & 2 == 2,
    );
    let cluster = ClusterState::new(lbguard::vocab::route::Scope::of(&CONFIG));
    cluster.apply_service(&service("other", &annotations, &[80], false));
    cluster.apply_service(&old);
    let versions = Versions::from_config(&CONFIG);
    let user = UserInfo {
        username: "alice".into(),
        groups: vec![],
    };
    for (op, object, old_object) in [
        (Operation::Create, Some(new.clone()), None),
        (Operation::Update, Some(new.clone()), Some(old.clone())),
        (Operation::Delete, None, Some(new.clone())),
    ] {
        let Ok(input) = Input::new(op, object, old_object, user.clone()) else {
            continue;
        };
        let _ = evaluate(&input, &CONFIG, &versions, &cluster, &*INVENTORY);
        if let Some(m) = mutate(&input, &CONFIG, &versions, &*INVENTORY) {
            let _ = m.warnings();
        }
    }
    let _ = cluster.reserve(
        lbguard::engine::Svc::new(&new),
        std::time::Duration::from_secs(1),
        &[],
    );
}

pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = lbguard::engine::parse_config(text, "fuzz.yaml");
    }
}

pub fn inventory(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = lbguard::inventory::Snapshot::parse(text, "fuzz.yaml");
    }
}

pub fn version(data: &[u8]) {
    use lbguard::engine::version::KubeVersion;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (a, b) = text.split_once('\n').unwrap_or((text, "v1.30.0"));
    if let (Ok(x), Ok(y)) = (a.parse::<KubeVersion>(), b.parse::<KubeVersion>()) {
        assert_eq!(x.cmp(&y), y.cmp(&x).reverse());
        assert_eq!(x.cmp(&x), std::cmp::Ordering::Equal);
        let _ = x.to_string();
    }
}
