//! The cloud inventory against a local stand-in of each cloud's API (tests/cloud/mock.py):
//! it checks every request's signature with that cloud's official SDK signer and parses
//! every answer it serves with the SDK's response models.

#[path = "../common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::mock_cloud::{AK, Mock, REGION, SK};
use common::{Start, TestServer, fixture};
use lbguard::inventory::{LoadBalancer, Snapshot};
use lbguard::vocab::ctx::Inventory;
use lbguard::vocab::provider::Provider;
use serde_json::{Value, json};

/// The rule tests' inventory (src/rules/inventory_tests.rs), one file for both sources.
const INV: &str = r#"
loadBalancers:
  - {id: lb-user-internet, provider: ctyun, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 53, protocol: UDP, owner: shop/dns}]}
  - {id: lb-user-intranet, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-other-vpc, provider: ctyun, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: lb-ccm, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: ccm}
  - {id: lb-user-internet, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 80, protocol: TCP, owner: shop/web}],
     attachedFrom: [{cluster: prod-b, namespace: shop, name: web}],
     resourceGroupId: rg-acfm2, masterZoneId: cn-hangzhou-h, slaveZoneId: cn-hangzhou-i, ipVersion: ipv4,
     networkType: vpc, address: 47.96.1.10, chargeType: PayBySpec, spec: slb.s3.xlarge}
  - {id: lb-intranet, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user,
     chargeType: PayByCLCU}
  - {id: lb-other-vpc, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: nlb-other-vpc, provider: alibaba, kind: nlb, addressType: intranet, vpcId: vpc-9, createdBy: user,
     listeners: [{port: 8443, protocol: TCP, owner: shop/api}, {port: 9443, protocol: TCP, owner: external}],
     resourceGroupId: rg-acfm2, ipVersion: ipv4, address: nlb-other-vpc.cn-hangzhou.nlb.aliyuncs.com,
     serverGroups: [{id: sgp-web, type: Instance}, {id: sgp-ips, type: Ip}]}
  - {id: lb-apiserver, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: apiserver}
  - {id: lb-ccm, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: ccm}
  - {id: elb-1, provider: huawei, kind: elb-dedicated, addressType: internet, vpcId: vpc-1, createdBy: user, flavors: [l4, l7],
     listeners: [{port: 8443, protocol: TCP, owner: external}]}
  - {id: elb-l4, provider: huawei, kind: elb-dedicated, addressType: intranet, vpcId: vpc-1, createdBy: user, flavors: [l4]}
  - {id: elb-other-vpc, provider: huawei, kind: elb-shared, addressType: intranet, vpcId: vpc-9, createdBy: user}
  - {id: elb-ccm, provider: huawei, kind: elb-dedicated, addressType: intranet, vpcId: vpc-1, createdBy: ccm, flavors: [l4, l7]}
  - {id: clb-user, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1,
     listeners: [{port: 80, protocol: TCP, owner: external}]}
  - {id: nlb-user, provider: volcengine, kind: nlb, addressType: internet, vpcId: vpc-1}
"#;

fn creds_dir(provider: Provider, ak: &str, sk: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("accessKeyId"), ak).unwrap();
    std::fs::write(dir.path().join("accessKeySecret"), sk).unwrap();
    if provider == Provider::Huawei {
        std::fs::write(dir.path().join("projectId"), "p-1").unwrap();
    }
    dir
}

fn cloud_config(provider: Provider, mock: &Mock, creds: &std::path::Path, extra: &str) -> String {
    format!(
        "provider: {provider}\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: {}\n    credentialsDir: {}\n{extra}",
        mock.url,
        creds.display()
    )
}

async fn server(config: String, mock: &Mock) -> TestServer {
    TestServer::start_with(Start {
        config: Box::leak(config.into_boxed_str()),
        cloud_roots: mock.ca_pem.clone().into_bytes(),
        reload: Duration::from_millis(100),
        ..Default::default()
    })
    .await
}

/// `serve` with `provider`'s cloud source on the mock, an access key in a directory of its
/// own (kept while the server runs) and `extra` config lines under `inventory.cloud`.
async fn serving(provider: Provider, mock: &Mock, extra: &str) -> (TestServer, tempfile::TempDir) {
    let creds = creds_dir(provider, AK, SK);
    let s = server(cloud_config(provider, mock, creds.path(), extra), mock).await;
    (s, creds)
}

/// A CREATE of `name` naming load balancer `id`, with more annotations and one port.
fn create(provider: Provider, name: &str, id: &str, extra: &[(&str, &str)], port: i64) -> Value {
    let cat = lbguard::providers::catalog(provider);
    let mut review = fixture("review-create.json");
    let mut anns = serde_json::Map::new();
    anns.insert(cat.key("id"), json!(id));
    if provider == Provider::Volcengine {
        anns.insert(cat.key("server-group-id"), json!(format!("rsp-1:{port}")));
        anns.insert(cat.key("weight"), json!("10"));
    }
    for (k, v) in extra {
        anns.insert(cat.key(k), json!(v));
    }
    let r = &mut review["request"];
    r["uid"] = json!(format!("uid-{name}-{id}"));
    r["name"] = json!(name);
    r["namespace"] = json!("shop");
    r["object"]["metadata"] = json!({"name": name, "namespace": "shop", "annotations": anns});
    r["object"]["spec"]["ports"] = json!([{"port": port, "protocol": "TCP", "targetPort": 8080}]);
    review
}

/// What the cloud can say of an inventory entry, in the mock's conventions: CTyun and
/// Volcengine publish no creator marks, and only Alibaba's listener names carry an owner.
fn expressible(lb: &LoadBalancer) -> LoadBalancer {
    let mut lb = lb.clone();
    match lb.provider {
        Provider::Ctyun | Provider::Volcengine => lb.created_by = None,
        _ => {}
    }
    if lb.provider != Provider::Alibaba {
        for l in &mut lb.listeners {
            l.owner = "external".into();
        }
    } else {
        for (i, a) in lb.attached_from.iter().enumerate() {
            lb.listeners.push(lbguard::inventory::Listener {
                port: 30000 + i as u16,
                protocol: "TCP".into(),
                owner: format!("{}/{} (cluster {})", a.namespace, a.name, a.cluster),
            });
        }
    }
    if lb.provider == Provider::Ctyun {
        lb.kind = Some(lbguard::inventory::LbKind::Elb);
    }
    // The NLB reader lists its VPC's server groups: none is an empty list, not unknown.
    if lb.kind == Some(lbguard::inventory::LbKind::Nlb)
        && lb.provider == Provider::Alibaba
        && lb.vpc_id.is_some()
    {
        lb.server_groups.get_or_insert_with(|| Vec::new().into());
    }
    if lb.kind == Some(lbguard::inventory::LbKind::ElbShared) {
        lb.flavors.clear();
    }
    lb
}

fn sorted(mut lb: LoadBalancer) -> LoadBalancer {
    lb.listeners.sort_by_key(|l| l.port);
    lb
}

/// What an answer says, for comparing two servers.
fn outcome(r: &Value) -> (bool, String, Vec<String>) {
    let mut warnings: Vec<String> = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect();
    warnings.sort();
    (
        r["allowed"].as_bool().unwrap(),
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        warnings,
    )
}

const ALL: [Provider; 4] = [
    Provider::Ctyun,
    Provider::Alibaba,
    Provider::Huawei,
    Provider::Volcengine,
];

async fn warned(s: &TestServer, review: &Value) -> (bool, Vec<String>, String) {
    let r = s.client().post("/validate", review).await.review();
    let w = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    (
        r["allowed"].as_bool().unwrap(),
        w,
        r["status"]["message"].as_str().unwrap_or_default().into(),
    )
}

/// An answer of one Service naming `id` through `s`: (allowed, warnings and message joined).
async fn said(s: &TestServer, provider: Provider, id: &str) -> (bool, String) {
    let (allowed, warnings, message) = warned(s, &create(provider, "web", id, &[], 8080)).await;
    (allowed, format!("{message} | {}", warnings.join(" | ")))
}

/// Every call the mock cloud answered since its last reset.
async fn all_calls(mock: &Mock) -> u64 {
    let calls = mock.control("calls", json!({})).await;
    calls["byOperation"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0)
}

mod answers;
mod bench;
mod library;
mod plan;
mod replicas;
mod serve;
mod server_groups;
