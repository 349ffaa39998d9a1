//! `export-vap`: pinned output, types, list, ids and bad input.

use super::*;

const PINNED: [&str; 8] = [
    "export-vap",
    "--provider",
    "ctyun",
    "--cluster-version",
    "v1.29.15",
    "--ccm-version",
    "v0.9.0",
    "--output=yaml",
];

/// One provider's policies are pinned: a change to any exported rule's CEL shows in review
/// (scripts/rules-table regenerates the file).
#[test]
fn export_vap_output_is_pinned_for_ctyun() {
    let out = lbguard(&PINNED, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vap-ctyun.yaml"),
    )
    .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout) == want,
        "export-vap output changed: run scripts/rules-table and review tests/fixtures/vap-ctyun.yaml"
    );
}

#[test]
fn export_vap_yaml_parses_into_the_admissionregistration_types() {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    let out = lbguard(&PINNED, None);
    let docs = lbguard::yaml::documents(&String::from_utf8_lossy(&out.stdout));
    let (mut policies, mut bindings) = (Vec::new(), Vec::new());
    for d in docs {
        let d = d.unwrap();
        match d["kind"].as_str() {
            Some("ValidatingAdmissionPolicy") => {
                policies.push(serde_json::from_value::<ValidatingAdmissionPolicy>(d).unwrap())
            }
            Some("ValidatingAdmissionPolicyBinding") => bindings
                .push(serde_json::from_value::<ValidatingAdmissionPolicyBinding>(d).unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(policies.len(), bindings.len());
    let names: Vec<String> = policies
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    // The cluster is older than 1.30 and the CCM older than 1.0: the version rules are in.
    for rule in [
        "ip-mode-version",
        "annotation-ccm-version",
        "ip-mode-value",
        "lb-id-immutable",
    ] {
        assert!(names.contains(&format!("lbguard-{rule}")), "{names:?}");
    }
    for p in &policies {
        let spec = p.spec.as_ref().unwrap();
        for v in spec.validations.as_ref().unwrap() {
            let id = p
                .metadata
                .name
                .as_ref()
                .unwrap()
                .trim_start_matches("lbguard-");
            let m = v.message_expression.as_ref().unwrap();
            assert!(m.starts_with(&format!("'[{id}] ")), "{m}");
        }
    }
    // Warn rules bind with Warn.
    let b = bindings
        .iter()
        .find(|b| b.metadata.name.as_deref() == Some("lbguard-annotation-ccm-version"))
        .unwrap();
    assert_eq!(
        b.spec.as_ref().unwrap().validation_actions,
        Some(vec!["Warn".to_string()])
    );
}

#[test]
fn export_vap_list_ids_json_and_bad_input() {
    let out = lbguard(&["export-vap", "--list"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("lb-id-immutable"), "{text}");
    assert!(
        text.contains("listener-port-unique               not exported: reads the cluster view"),
        "{text}"
    );
    assert!(
        text.contains(
            "ip-mode-version                    not exported: the cluster version is unknown"
        ),
        "{text}"
    );
    let out = lbguard(&["export-vap", "--provider", "volcengine", "--ids"], None);
    let ids = String::from_utf8_lossy(&out.stdout);
    assert!(
        ids.trim().split(',').any(|i| i == "server-group-immutable"),
        "{ids}"
    );
    let out = lbguard(
        &["export-vap", "--output", "json", "--rules", "weight-range"],
        None,
    );
    let doc = json(&out);
    assert_eq!(doc["kind"], "List");
    // The rule's policy and binding, and its advice pair (weight 0 warns).
    let names: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "lbguard-weight-range",
            "lbguard-weight-range",
            "lbguard-weight-range-advice",
            "lbguard-weight-range-advice"
        ]
    );
    let out = lbguard(&["export-vap", "--rules", "no-such-rule"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-such-rule"));
}

/// `--list` gives each exported rule's size as client-side `kubectl apply` stores it, and
/// says what the API server does about CEL cost; a policy too big for that gets a warning.
#[test]
fn export_vap_list_gives_sizes_and_warns_when_apply_cannot_store_one() {
    let out = lbguard(&["export-vap", "--list"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("annotation-format "))
        .unwrap();
    let kib: f64 = row
        .split("kubectl apply: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{row}"));
    // Alibaba's value limits, split into three policies (the largest is named): each well
    // under apply's 256 KiB.
    assert!((50.0..200.0).contains(&kib), "{row}");
    assert!(
        row.contains("exported (deny as lbguard-annotation-format-alibaba, lbguard-annotation-format-alibaba-values, lbguard-annotation-format-alibaba-api)")
            && row.ends_with("256 KiB (lbguard-annotation-format-alibaba-values)"),
        "{row}"
    );
    assert!(text.contains("the API server estimates none"), "{text}");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // Thousands of load balancer classes make every policy's "served by" variable huge.
    let dir = tempfile::tempdir().unwrap();
    let classes: Vec<String> = (0..8000)
        .map(|i| format!("  example.com/class-{i:05}: default"))
        .collect();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "provider: alibaba\nloadBalancerClasses:\n{}\n",
            classes.join("\n")
        ),
    )
    .unwrap();
    let flag = format!("--config={}", config.display());
    let out = lbguard(
        &["export-vap", &flag, "--rules", "address-type-value"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warned = stderr(&out);
    assert!(
        warned.contains("address-type-value") && warned.contains("kubectl apply --server-side"),
        "{warned}"
    );
    let out = lbguard(&["export-vap", &flag, "--list"], None);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("too big for client-side apply"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The bound every exported object keeps to, with its copy as client-side `kubectl apply`
/// stores it: well under the API server's 256 KiB, so rows added to a provider's tables fail
/// here (split the rule further: `CelCheck::part`) long before `kubectl apply` refuses one.
const BOUND: usize = 200 * 1024;

/// Every object of every provider's output, with old and new versions, is under `BOUND`; a
/// rule split into several policies (`annotation-format`) keeps its id in every name, label
/// and message, so reports still map to the rule.
#[test]
fn every_exported_object_stays_under_the_bound_and_names_its_rule() {
    use lbguard::vap::apply::annotations_size;
    let mut split = std::collections::BTreeSet::new();
    for provider in ["auto", "ctyun", "alibaba", "huawei", "volcengine"] {
        for (cluster, ccm) in [
            ("v1.14.0", "v0.9.0"),
            ("v1.29.15", "v2.10.0"),
            ("v1.36.2", "v2.12.0"),
        ] {
            let args = [
                "export-vap",
                "--provider",
                provider,
                "--cluster-version",
                cluster,
                "--ccm-version",
                ccm,
                "--output=json",
            ];
            let out = lbguard(&args, None);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            for o in json(&out)["items"].as_array().unwrap() {
                let name = o["metadata"]["name"].as_str().unwrap();
                let size = annotations_size(o);
                assert!(
                    size < BOUND,
                    "{provider} {cluster}: {} {name} is {size} bytes with kubectl apply's copy, over {BOUND}: split its rule further",
                    o["kind"]
                );
                if o["kind"] == "ValidatingAdmissionPolicy" {
                    let id = o["metadata"]["labels"]["lbguard.io/rule"].as_str().unwrap();
                    assert!(name.starts_with(&format!("lbguard-{id}")), "{name}");
                    if name != format!("lbguard-{id}") && !name.ends_with("-advice") {
                        split.insert(name.to_string());
                    }
                    for v in o["spec"]["validations"].as_array().unwrap() {
                        let m = v["messageExpression"].as_str().unwrap();
                        // A message may pick between literals: each starts with the id.
                        assert!(m.contains(&format!("'[{id}] ")), "{name}: {m}");
                    }
                }
            }
        }
    }
    assert_eq!(
        split.into_iter().collect::<Vec<_>>(),
        [
            "lbguard-annotation-format-alibaba",
            "lbguard-annotation-format-alibaba-api",
            "lbguard-annotation-format-alibaba-values"
        ]
    );
}
