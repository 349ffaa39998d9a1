//! `lbguard export-vap | kubectl apply -f -`, as client-side `kubectl apply` sends it: every
//! object with its last-applied annotation holding the whole object (there is no kubectl
//! binary here; `lbguard::vap::apply` writes the annotation as kubectl does). For every
//! provider and old and new versions, the API server takes every object; padded to its
//! 256 KiB for annotations it is still taken, one byte more is refused, so the size counted is
//! the API server's.
//!
//! And what the API server does about CEL cost: it estimates none when a policy is created
//! (an expression of cubic cost is taken), and it stops one at run time past its limit.

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, call, collection, eventually};
use lbguard::vap::apply::{ANNOTATIONS_LIMIT, LAST_APPLIED, annotations_size, as_applied};

/// The configs that export the most: each provider, with old and new cluster and
/// controller versions (version rules export only when they have something to check).
const VERSIONS: [(&str, &str); 3] = [
    ("v1.14.0", "v0.9.0"),
    ("v1.29.15", "v2.10.0"),
    ("v1.36.2", "v2.12.0"),
];

fn export(env: &Env, provider: &str, cluster: &str, ccm: &str) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .arg("export-vap")
        .arg(format!("--config={}", env.lbguard.config.display()))
        .args([
            "--provider",
            provider,
            "--cluster-version",
            cluster,
            "--ccm-version",
            ccm,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{provider} {cluster}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lbguard::yaml::documents(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .map(|d| d.unwrap())
        .collect()
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    let mut largest: (usize, Value) = (0, Value::Null);
    let mut applied = 0;
    for provider in ["ctyun", "alibaba", "huawei", "volcengine", "auto"] {
        for (cluster, ccm) in VERSIONS {
            for obj in export(env, provider, cluster, ccm) {
                let size = annotations_size(&obj);
                let what = format!(
                    "{provider} {cluster}: {} {}",
                    obj["kind"], obj["metadata"]["name"]
                );
                assert!(size <= ANNOTATIONS_LIMIT, "{what}: {size} bytes");
                // The beta MutatingAdmissionPolicy of 1.34-1.35 is not served here.
                if obj["apiVersion"] == "admissionregistration.k8s.io/v1beta1" {
                    continue;
                }
                let path = format!(
                    "{}?dryRun=All&fieldManager=kubectl-client-side-apply",
                    collection(&obj)
                );
                let r = call(&admin, "POST", &path, Some(&as_applied(&obj))).await;
                assert!(r.ok(), "{what}: {} {}", r.status, r.message());
                assert!(r.warnings.is_empty(), "{what}: {:?}", r.warnings);
                applied += 1;
                if size > largest.0 {
                    largest = (size, obj);
                }
            }
        }
    }
    assert!(applied > 300, "{applied}");
    println!(
        "  largest: {} {}, {} of {ANNOTATIONS_LIMIT} bytes of annotations with its copy",
        largest.1["kind"], largest.1["metadata"]["name"], largest.0
    );
    // The same object with its copy padded: exactly at the limit it is taken, one byte more
    // is refused (so the size counted here is the API server's, to the byte).
    for (extra, taken) in [(0, true), (1, false)] {
        let mut padded = as_applied(&largest.1);
        let pad = ANNOTATIONS_LIMIT + extra - largest.0;
        let copy = padded["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap()
            .to_string();
        padded["metadata"]["annotations"][LAST_APPLIED] =
            json!(format!("{copy}{}", " ".repeat(pad)));
        let r = call(
            &admin,
            "POST",
            &format!("{}?dryRun=All", collection(&padded)),
            Some(&padded),
        )
        .await;
        if taken {
            assert!(r.ok(), "at the limit: {}", r.message());
        } else {
            assert_eq!(r.status, 422, "{}", r.body);
            assert!(
                r.message().contains("Too long") && r.message().contains("262144 bytes"),
                "{}",
                r.message()
            );
        }
    }

    cost(env).await;
}

/// The API server takes a policy whatever its CEL would cost (it estimates nothing when a
/// policy is created), and fails the expression at run time once it has spent 1,000,000:
/// a request checked by it is denied for that, not for what the expression says.
async fn cost(env: &mut Env) {
    let admin = env.admin[0].clone();
    const NS: &str = "cel-cost";
    plane::namespace(&admin, NS).await;
    // True for any Service, once evaluated: only its cost can deny.
    let costly = "object.metadata.annotations.all(a, object.metadata.annotations.all(b, object.metadata.annotations.all(c, (object.metadata.annotations[a] + object.metadata.annotations[b]).matches(object.metadata.annotations[c]) || true)))";
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "e2e-cubic-cost"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["services"], "operations": ["CREATE"]}]},
            "matchConditions": [{"name": "annotated", "expression": "has(object.metadata.annotations)"}],
            "validations": [{"expression": costly, "message": "never"}]},
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "e2e-cubic-cost"},
        "spec": {"policyName": "e2e-cubic-cost", "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}}}},
    });
    for o in [&policy, &binding] {
        let r = call(&admin, "POST", &collection(o), Some(o)).await;
        assert!(r.ok(), "taken whatever it costs: {}", r.body);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
    let service = |n: usize| {
        let annotations: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("example.com/a{i}"), json!("x".repeat(64))))
            .collect();
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("cost-{n}"), "namespace": NS, "annotations": annotations},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}})
    };
    // Two annotations cost little: admitted.
    let small = service(2);
    eventually(
        std::time::Duration::from_secs(30),
        "the policy is in effect",
        || async {
            let big = service(40);
            let r = call(
                &admin,
                "POST",
                &format!("{}?dryRun=All", collection(&big)),
                Some(&big),
            )
            .await;
            (!r.ok()).then_some(())
        },
    )
    .await;
    let r = call(
        &admin,
        "POST",
        &format!("{}?dryRun=All", collection(&small)),
        Some(&small),
    )
    .await;
    assert!(r.ok(), "{}", r.body);
    // Forty make 64,000 regular expression matches: stopped at the limit, and the request is
    // denied for the cost.
    let big = service(40);
    let r = call(
        &admin,
        "POST",
        &format!("{}?dryRun=All", collection(&big)),
        Some(&big),
    )
    .await;
    assert!(!r.ok(), "{}", r.body);
    assert!(
        r.message().contains("cost limit exceeded") || r.message().contains("cost budget"),
        "{}",
        r.message()
    );
    println!("  past the limit: {}", r.message());
    for o in [&binding, &policy] {
        plane::delete(&admin, o).await;
    }
}
