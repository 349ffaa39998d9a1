//! Every example under `examples/`, applied through the real API server: the verdict, the
//! rule ids and the `Warning:` lines are those `lbguard check` gives with the same config,
//! and the mutated defaults are on the stored object.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::install::{EXAMPLES, NS};
use crate::plane::{self, Reply, call, collection, eventually, object_path};

/// What `lbguard check --output json` says of one Service.
#[derive(Debug)]
pub struct Expected {
    pub name: String,
    pub allowed: bool,
    pub denials: BTreeSet<String>,
    pub warnings: BTreeSet<String>,
    pub defaults: Vec<Value>,
}

/// `lbguard check` with the installed config and the API server's version.
pub fn check(env: &Env, args: &[&str]) -> Vec<Expected> {
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .arg("check")
        .arg(format!("--config={}", env.lbguard.config.display()))
        .arg(format!("--inventory={}", env.lbguard.inventory.display()))
        .args(["--cluster-version=v1.36.2", "--output=json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "check {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let of = |action: &str| -> BTreeSet<String> {
                r["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|v| v["action"] == action)
                    .map(|v| v["message"].as_str().unwrap().to_string())
                    .collect()
            };
            let mut warnings = of("warn");
            warnings.extend(
                r["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_str().unwrap().to_string()),
            );
            Expected {
                name: r["name"].as_str().unwrap().to_string(),
                allowed: r["allowed"].as_bool().unwrap(),
                denials: of("deny"),
                warnings,
                defaults: r["defaults"].as_array().unwrap().clone(),
            }
        })
        .collect()
}

/// The rule ids a text names (`[rule-id] ...`).
pub fn rule_ids<'a>(texts: impl IntoIterator<Item = &'a String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in texts {
        let mut rest = t.as_str();
        while let Some(i) = rest.find('[') {
            rest = &rest[i + 1..];
            if let Some(j) = rest.find(']') {
                let id = &rest[..j];
                // Only registered ids: a message may quote a value in brackets ("got [5s]").
                if lbguard::rules::registry().iter().any(|r| r.id == id) {
                    out.insert(id.to_string());
                }
            }
        }
    }
    out
}

/// Compares one answer of the API server with `check`'s verdict.
pub fn compare(what: &str, got: &Reply, want: &Expected) {
    assert_eq!(
        got.ok(),
        want.allowed,
        "{what}: the API server answered {} {}; check says allowed={} denials={:?}",
        got.status,
        got.message(),
        want.allowed,
        want.denials
    );
    if !want.allowed {
        assert_eq!(got.status, 403, "{what}: {}", got.body);
        let message = got.message();
        assert!(
            message.starts_with("admission webhook \"validate.lbguard.io\" denied the request: "),
            "{what}: {message}"
        );
        for d in &want.denials {
            assert!(
                message.contains(d.as_str()),
                "{what}: {message:?} lacks {d:?}"
            );
        }
        assert_eq!(
            rule_ids([&message]),
            rule_ids(&want.denials),
            "{what}: rule ids in {message:?}"
        );
    }
    let warnings: BTreeSet<String> = got.warnings.iter().cloned().collect();
    // A denied request's warnings are the validating webhook's; check reports the same.
    assert_eq!(warnings, want.warnings, "{what}: Warning lines");
}

/// The Services of a YAML file.
pub fn services(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for doc in lbguard::yaml::documents(&text) {
        let doc = doc.unwrap();
        let items = if doc["kind"] == "List" {
            doc["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![doc]
        };
        out.extend(items.into_iter().filter(|o| !o.is_null()));
    }
    out
}

/// The claims (Leases) a Service holds.
async fn claims_of(admin: &kube::Client, ns: &str, name: &str) -> usize {
    let r = call(
        admin,
        "GET",
        &format!(
            "/apis/coordination.k8s.io/v1/namespaces/{NS}/leases?labelSelector=lbguard.io/claim"
        ),
        None,
    )
    .await;
    let holder = format!("{ns}/{name}");
    r.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|l| l["spec"]["holderIdentity"] == holder.as_str())
                .count()
        })
        .unwrap_or(0)
}

/// Deletes a Service and waits until its claims are released, so the next example sees
/// an empty cluster as `check` does.
pub async fn remove(admin: &kube::Client, svc: &Value) {
    let r = plane::delete(admin, svc).await;
    assert!(r.ok() || r.status == 404, "delete: {}", r.body);
    let ns = svc["metadata"]["namespace"].as_str().unwrap().to_string();
    let name = svc["metadata"]["name"].as_str().unwrap().to_string();
    eventually(
        Duration::from_secs(20),
        "the Service's claims are released",
        || async {
            let gone = call(admin, "GET", &object_path(svc), None).await.status == 404;
            (gone && claims_of(admin, &ns, &name).await == 0).then_some(())
        },
    )
    .await;
}

/// The stored object carries every default `check` would add.
fn assert_defaults(what: &str, file_obj: &Value, stored: &Value, defaults: &[Value]) {
    let mut patched = file_obj.clone();
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(defaults.to_vec())).unwrap();
    json_patch::patch(&mut patched, &patch).unwrap();
    for op in defaults {
        let path = op["path"].as_str().unwrap();
        assert_eq!(
            stored.pointer(path),
            patched.pointer(path),
            "{what}: default {op} is not on the stored object"
        );
    }
}

/// The update examples: the live Service, and the one sent in its place.
pub const UPDATES: [(&str, &str); 3] = [
    ("alibaba-live", "alibaba-other-lb"),
    ("volcengine-live", "volcengine-other-group"),
    ("huawei-live-unmanaged", "huawei-managed-again"),
];

/// Files checked one by one as CREATEs in an empty cluster.
pub fn single_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in ["ctyun", "alibaba", "huawei", "volcengine", "inventory"] {
        for e in std::fs::read_dir(format!("{EXAMPLES}/{dir}")).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap() != "inventory.yaml" {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    let mut created = 0;
    let mut denied = 0;
    let mut defaults = 0;
    // Each file alone, as a CREATE, alternating between the API servers.
    for (i, file) in single_files().iter().enumerate() {
        let what = file.strip_prefix(EXAMPLES).unwrap().display().to_string();
        let want = check(env, &[file.to_str().unwrap()]);
        for (svc, want) in services(file).into_iter().zip(&want) {
            // The file's own namespace: some rules read it (cross-cluster-name-clash).
            plane::namespace(&admin, svc["metadata"]["namespace"].as_str().unwrap()).await;
            let client = &env.admin[i % 2];
            let got = call(client, "POST", &collection(&svc), Some(&svc)).await;
            compare(&what, &got, want);
            if got.ok() {
                created += 1;
                assert_defaults(&what, &svc, &got.body, &want.defaults);
                defaults += want.defaults.len();
                remove(&admin, &svc).await;
            } else {
                denied += 1;
            }
        }
    }
    assert!(
        created >= 5 && denied >= 25,
        "created {created}, denied {denied}"
    );
    assert!(
        defaults > 0,
        "no example got a default: the mutating webhook was not seen"
    );

    // The cluster examples: the live state first, then two Services in order.
    let dir = format!("{EXAMPLES}/cluster");
    let state = format!("{dir}/state.yaml");
    let files = [
        format!("{dir}/1-web.yaml"),
        format!("{dir}/deny-listener-port-unique.yaml"),
    ];
    let want = check(env, &["--cluster-state", &state, &files[0], &files[1]]);
    let mut live = Vec::new();
    for o in services(Path::new(&state)) {
        if let Some(ns) = o["metadata"]["namespace"].as_str() {
            plane::namespace(&admin, ns).await;
        }
        let r = call(&admin, "POST", &collection(&o), Some(&o)).await;
        assert!(r.ok(), "state {}: {} {}", o["kind"], r.status, r.body);
        live.push(o);
    }
    for (file, want) in files.iter().zip(&want) {
        let svc = services(Path::new(file)).remove(0);
        assert_eq!(svc["metadata"]["name"], want.name.as_str());
        let got = call(&env.admin[1], "POST", &collection(&svc), Some(&svc)).await;
        compare(file, &got, want);
        if got.ok() {
            live.push(svc);
        }
    }
    for o in live.iter().rev() {
        if o["kind"] == "Service" {
            remove(&admin, o).await;
        } else {
            plane::delete(&admin, o).await;
        }
    }

    // Updates: the live Service, then the new one in its place.
    for (old, new) in UPDATES {
        let old_file = format!("{EXAMPLES}/updates/{old}.yaml");
        let new_file = format!("{EXAMPLES}/updates/{new}.yaml");
        let live = services(Path::new(&old_file)).remove(0);
        let ns = live["metadata"]["namespace"].as_str().unwrap();
        plane::namespace(&admin, ns).await;
        let stored = call(&admin, "POST", &collection(&live), Some(&live))
            .await
            .expect_ok(&old_file);
        let want = check(env, &["--old", &old_file, &new_file]);
        let mut next = services(Path::new(&new_file)).remove(0);
        next["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
        let got = call(&env.admin[1], "PUT", &object_path(&next), Some(&next)).await;
        compare(&new_file, &got, &want[0]);
        remove(&admin, &live).await;
    }
}

/// Services that carry the deletion-protection mark: a LoadBalancer, a ClusterIP Service and
/// one another load balancer implementation serves. The mark is on the Service, so every path
/// (the chart's webhook, the exported policy) protects all three.
pub fn marked_services(namespace: &str) -> Vec<Value> {
    let svc = |name: &str, spec: Value| {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "annotations": {
                "lbguard.io/deletion-protection": "true",
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}},
            "spec": spec,
        })
    };
    vec![
        svc(
            "kept",
            json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
        ),
        svc(
            "kept-cluster-ip",
            json!({"type": "ClusterIP", "ports": [{"port": 80}]}),
        ),
        svc(
            "kept-metallb",
            json!({"type": "LoadBalancer", "loadBalancerClass": "metallb.io/metallb", "ports": [{"port": 80}]}),
        ),
    ]
}

/// Creates `svc`, checks that its DELETE is denied by `deletion-protection` (from `who`,
/// the webhook or the policy), removes the mark and deletes it.
pub async fn protected_until_unmarked(env: &Env, mut svc: Value, who: &str) {
    let admin = &env.admin[0];
    let what = svc["metadata"]["name"].as_str().unwrap().to_string();
    let stored = call(admin, "POST", &collection(&svc), Some(&svc))
        .await
        .expect_ok("create");
    let got = call(&env.admin[1], "DELETE", &object_path(&svc), None).await;
    assert_eq!(got.status, 403, "{what}: {}", got.body);
    assert_eq!(
        rule_ids([&got.message()]),
        BTreeSet::from(["deletion-protection".to_string()]),
        "{what}: {}",
        got.message()
    );
    assert!(
        got.message().contains("lbguard.io/deletion-protection") && got.message().contains(who),
        "{what}: {}",
        got.message()
    );
    svc["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("lbguard.io/deletion-protection");
    svc["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
    call(admin, "PUT", &object_path(&svc), Some(&svc))
        .await
        .expect_ok("unmark");
    call(&env.admin[1], "DELETE", &object_path(&svc), None)
        .await
        .expect_ok("delete after unmarking");
}

/// DELETE goes through validation: a Service marked for deletion protection cannot be
/// deleted until the mark is removed, whatever its type or load balancer implementation;
/// the chart sends those DELETEs to a webhook of their own.
pub async fn deletion_protection(env: &mut Env) {
    plane::namespace(&env.admin[0], "protected").await;
    for svc in marked_services("protected") {
        protected_until_unmarked(
            env,
            svc,
            "admission webhook \"deletion-protection.lbguard.io\"",
        )
        .await;
    }
}
