//! `lbguard check` as users run it: exit codes, JSON shape, examples, bad input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn lbguard(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn examples_bad_are_denied_by_their_rule_and_good_are_allowed() {
    let out = lbguard(&["check", "--output", "json", "examples/"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    let results = doc["results"].as_array().unwrap();
    let mut bad = 0;
    for r in results {
        let file = r["file"].as_str().unwrap();
        let base = file.rsplit('/').next().unwrap().split(' ').next().unwrap();
        if base.starts_with("bad-annotation-ccm-version-") {
            // Silent without a version: see ccm_version_examples_warn_below_their_version.
            assert_eq!(r["allowed"], true, "{file}: {r}");
        } else if let Some(rule) = base
            .strip_prefix("bad-")
            .and_then(|b| b.strip_suffix(".yaml"))
        {
            bad += 1;
            assert_eq!(r["allowed"], false, "{file}");
            let denied_by: Vec<&str> = r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v["action"] == "deny")
                .map(|v| v["rule"].as_str().unwrap())
                .collect();
            // bad-<rule>.yaml or bad-<rule>-<what>.yaml
            let named = |r: &&str| rule == *r || rule.starts_with(&format!("{r}-"));
            assert!(denied_by.iter().any(named), "{file}: {denied_by:?}");
        } else if let Some(rule) = base
            .strip_prefix("deny-")
            .and_then(|b| b.strip_suffix(".yaml"))
        {
            // Needs --inventory or --cluster-state to be denied; if denied, only by its rule.
            for v in r["violations"].as_array().unwrap() {
                if v["action"] == "deny" {
                    assert_eq!(v["rule"], rule, "{file}: {r}");
                }
            }
        } else {
            assert_eq!(r["allowed"], true, "{file}: {r}");
        }
    }
    assert!(bad >= 15, "only {bad} bad examples");
    assert_eq!(
        doc["summary"]["checked"].as_u64().unwrap() as usize,
        results.len()
    );
    // The config, the inventory and the tutorial's chart values are not Kubernetes objects;
    // the state has a Node and an Ingress.
    assert_eq!(doc["summary"]["skipped"], 5);
}

/// Each `bad-annotation-ccm-version-*` example, checked at a version below what its
/// annotation needs, with the rule set to deny: denied by that rule alone.
#[test]
fn ccm_version_examples_warn_below_their_version() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "rules:\n  annotation-ccm-version: deny\n").unwrap();
    let cases = [
        ("ctyun", "spec", "--ccm-version", "v0.9.0"),
        ("alibaba", "delete-protection", "--ccm-version", "v1.9.3"),
        ("huawei", "enterprise-id", "--cluster-version", "v1.13.10"),
    ];
    for (provider, what, flag, version) in cases {
        let file = format!("examples/{provider}/bad-annotation-ccm-version-{what}.yaml");
        let args = [
            "check",
            "--output",
            "json",
            "--config",
            config.to_str().unwrap(),
        ];
        let out = lbguard(&[&args[..], &[flag, version, &file]].concat(), None);
        let doc = json(&out);
        let r = &doc["results"][0];
        assert_eq!(r["allowed"], false, "{file}: {r}");
        for v in r["violations"].as_array().unwrap() {
            assert_eq!(v["rule"], "annotation-ccm-version", "{file}: {r}");
        }
        // At the default action it is a warning, and not at all at a new enough version.
        let out = lbguard(&["check", "--output", "json", flag, version, &file], None);
        let r = &json(&out)["results"][0];
        assert_eq!(r["allowed"], true, "{file}: {r}");
        assert_eq!(r["violations"][0]["action"], "warn", "{file}: {r}");
        let out = lbguard(&["check", "--output", "json", flag, "v3.0.0", &file], None);
        assert_eq!(
            json(&out)["results"][0]["violations"],
            serde_json::json!([]),
            "{file}"
        );
    }
}

#[test]
fn json_shape_matches_the_contract() {
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "--old",
            "examples/updates/alibaba-live.yaml",
            "examples/updates/alibaba-other-lb.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let r = &doc["results"][0];
    assert_eq!(r["namespace"], "shop");
    assert_eq!(r["name"], "web");
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(r["allowed"], false);
    assert_eq!(r["violations"][0]["rule"], "lb-id-immutable");
    assert_eq!(r["violations"][0]["action"], "deny");
    assert!(
        r["violations"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("[lb-id-immutable] ")
    );
    assert!(r["defaults"].is_array());
    assert_eq!(
        doc["summary"],
        serde_json::json!({"checked": 1, "skipped": 0, "foreign": 0, "denied": 1, "warned": 0})
    );
}

#[test]
fn transition_examples_are_denied_as_updates() {
    for (old, new, rule) in [
        (
            "volcengine-live",
            "volcengine-other-group",
            "server-group-immutable",
        ),
        (
            "huawei-live-unmanaged",
            "huawei-managed-again",
            "skip-listener-irreversible",
        ),
    ] {
        let out = lbguard(
            &[
                "check",
                "--output",
                "json",
                "--old",
                &format!("examples/updates/{old}.yaml"),
                &format!("examples/updates/{new}.yaml"),
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("\"rule\": \"{rule}\"")), "{text}");
    }
}

#[test]
fn defaults_are_reported_as_json_patch_and_then_validated() {
    let manifest = "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n    service.beta.kubernetes.io/volcengine-loadbalancer-id: clb-1\n    service.beta.kubernetes.io/volcengine-loadbalancer-server-group-id: rsp-1:80\nspec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n";
    let out = lbguard(
        &[
            "check",
            "--config",
            "examples/config.yaml",
            "--output",
            "json",
            "-",
        ],
        Some(manifest),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc = json(&out);
    let d = &doc["results"][0]["defaults"][0];
    assert_eq!(d["op"], "add");
    assert_eq!(
        d["path"],
        "/metadata/annotations/service.beta.kubernetes.io~1volcengine-loadbalancer-weight"
    );
    assert_eq!(d["value"], "100");
    // Without defaults the missing weight is denied.
    let out = lbguard(
        &[
            "check",
            "--no-defaults",
            "--config",
            "examples/config.yaml",
            "-",
        ],
        Some(manifest),
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn lists_are_expanded_and_other_kinds_skipped() {
    let list = r#"{"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}},
      {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"ClusterIP"}}]}"#;
    let out = lbguard(&["check", "--output", "json", "-"], Some(list));
    assert_eq!(out.status.code(), Some(0));
    let doc = json(&out);
    assert_eq!(doc["summary"]["checked"], 1);
    assert_eq!(doc["summary"]["skipped"], 1);
    assert_eq!(doc["results"][0]["namespace"], "default");
}

#[test]
fn clean_input_exits_zero_with_a_summary() {
    let out = lbguard(&["check", "examples/volcengine/good-reuse-clb.yaml"], None);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ALLOWED shop/nginx"), "{text}");
    assert!(text.contains("1 Service(s) checked: 0 denied"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");
}

#[test]
fn version_flag_overrides_config() {
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "--config",
            "examples/config.yaml",
            "--cluster-version",
            "v1.29.15-r80",
            "examples/updates/huawei-live-unmanaged.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"rule\": \"skip-listener-version\""));
}

#[test]
fn bad_input_exits_two_with_a_clear_message() {
    let cases: &[(&str, &str)] = &[
        (
            "kind: Service\nmetadata: [unclosed\n",
            "document 1: not valid YAML",
        ),
        (
            "apiVersion: v1\nkind: Service\nspec: {type: LoadBalancer}\n",
            "metadata",
        ),
        (
            "apiVersion: v1\nkind: Service\nmetadata: {}\n",
            "Service has no metadata.name",
        ),
        (
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n    kubernetes.io/elb.class: 5\n",
            "metadata.annotations.kubernetes.io/elb.class: invalid type: integer `5`",
        ),
        ("- just\n- a list\n", "not a Kubernetes object"),
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: eighty}]}\n",
            "spec.ports[0].port",
        ),
    ];
    for (input, want) in cases {
        let out = lbguard(&["check", "-"], Some(input));
        assert_eq!(out.status.code(), Some(2), "{input}");
        let err = stderr(&out);
        assert!(err.contains("<stdin> document 1"), "{err}");
        assert!(err.contains(want), "want {want:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn good_documents_are_still_reported_next_to_a_bad_one() {
    let input = "apiVersion: v1\nkind: Service\nmetadata: {name: ok}\nspec: {type: LoadBalancer}\n---\napiVersion: v1\nkind: Service\nmetadata: {}\n";
    let out = lbguard(&["check", "--output", "json", "-"], Some(input));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["summary"]["checked"], 1);
    assert!(stderr(&out).contains("document 2"));
}

#[test]
fn usage_and_io_errors_exit_two() {
    assert_eq!(lbguard(&["check"], None).status.code(), Some(2));
    assert_eq!(
        lbguard(&["check", "--provider", "aws", "x.yaml"], None)
            .status
            .code(),
        Some(2)
    );
    let out = lbguard(&["check", "no/such/file.yaml"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/file.yaml"));
    let out = lbguard(&["check", "--config", "Cargo.toml", "examples/"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("config file Cargo.toml"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rules_lists_every_rule() {
    let out = lbguard(&["rules"], None);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() >= 33);
    assert!(text.contains("lb-id-immutable"));
}

#[test]
fn inventory_examples_are_denied_by_their_rule() {
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "--config",
            "examples/config.yaml",
            "--inventory",
            "examples/inventory/inventory.yaml",
            "examples/inventory/",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 9);
    for r in results {
        let file = r["file"].as_str().unwrap();
        let base = file.rsplit('/').next().unwrap().split(' ').next().unwrap();
        match base
            .strip_prefix("deny-")
            .and_then(|b| b.strip_suffix(".yaml"))
        {
            Some(rule) => assert!(
                r["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v["rule"] == rule && v["action"] == "deny"),
                "{file}: {r}"
            ),
            None => assert_eq!(r["allowed"], true, "{file}: {r}"),
        }
    }
}

#[test]
fn broken_inventory_exits_two_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inv.yaml");
    std::fs::write(
        &path,
        "loadBalancers:\n  - {id: a, provider: alibaba, addressType: public}\n",
    )
    .unwrap();
    let out = lbguard(
        &[
            "check",
            "--inventory",
            path.to_str().unwrap(),
            "examples/alibaba/",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("inv.yaml") && err.contains("loadBalancers[0].addressType"),
        "{err}"
    );
}

#[test]
fn cluster_state_and_files_are_checked_against_each_other() {
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "--cluster-state",
            "examples/cluster/state.yaml",
            "examples/cluster/1-web.yaml",
            "examples/cluster/deny-listener-port-unique.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["results"][0]["allowed"], true);
    let denied = &doc["results"][1];
    assert_eq!(denied["name"], "api");
    let messages: Vec<&str> = denied["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("port 443/TCP") && m.contains("shop/checkout")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("port 8443/TCP") && m.contains("shop/web")),
        "{messages:?}"
    );
    // Without the state, only the file-to-file conflict remains.
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "examples/cluster/1-web.yaml",
            "examples/cluster/deny-listener-port-unique.yaml",
        ],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("port 8443/TCP") && !text.contains("port 443/TCP"),
        "{text}"
    );
}

#[test]
fn cluster_state_nodes_and_ingresses_feed_the_huawei_rules() {
    let svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  namespace: shop\n  annotations:\n    kubernetes.io/elb.id: 35cb350b-23e6-4551-ac77-10d5298f5204\n    kubernetes.io/elb.protocol-port: http:80\nspec:\n  type: LoadBalancer\n  externalIPs: [192.0.2.10]\n  ports: [{port: 80}]\n";
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.yaml");
    std::fs::write(&cfg, "cluster:\n  version: v1.31.0\n  proxyMode: ipvs\n").unwrap();
    let out = lbguard(
        &[
            "check",
            "--output",
            "json",
            "--config",
            cfg.to_str().unwrap(),
            "--cluster-state",
            "examples/cluster/state.yaml",
            "-",
        ],
        Some(svc),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\"rule\": \"ipvs-node-external-ip\""),
        "{text}"
    );
    assert!(text.contains("\"rule\": \"ingress-shares-elb\""), "{text}");
    assert!(text.contains("Ingress shop/storefront"), "{text}");
}

#[test]
fn benchmarks_run_and_report_json() {
    let bench = env!("CARGO_BIN_EXE_lbguard-bench");
    let out = Command::new(bench)
        .args([
            "http",
            "--duration",
            "400ms",
            "--connections",
            "4",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    for r in v["runs"].as_array().unwrap() {
        assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
    }
    assert!(v["validate_throughput_ratio"].as_f64().unwrap() > 0.0);
    let out = Command::new(bench)
        .args(["cache", "--sizes", "10,1000", "--requests", "50", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json(&out);
    assert_eq!(rows[1]["services"], 1000);
    assert!(rows[1]["p99_us"].as_f64().unwrap() > 0.0);
}

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

/// `check --output sarif` over every example: valid SARIF 2.1.0 (the OASIS schema, kept as a
/// fixture), one rule per lbguard rule, one result per finding, each at the line and column
/// of the field it names.
#[test]
fn sarif_output_is_valid_and_points_at_the_field() {
    let out = lbguard(&["check", "--output", "sarif", "examples/"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sarif = json(&out);
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sarif-schema-2.1.0.json"),
    )
    .unwrap();
    // The published 2.1.0 schema's `language` patterns have a bare `]`, which ECMAScript's
    // legacy syntax reads as a literal and strict engines reject: escape it, same meaning.
    let text = text.replace("{2}]?$", "{2}\\\\]?$");
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The validator does reject what the schema forbids.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.len() >= 45);
    // Help names the documents users can find, not lbguard's numbers for them.
    for r in rules {
        let help = r["help"]["text"].as_str().unwrap();
        assert!(!help.contains("Source: 00"), "{help}");
    }
    let results = run["results"].as_array().unwrap();
    // The same findings as the JSON output, with the same positions.
    let plain = json(&lbguard(&["check", "--output", "json", "examples/"], None));
    let mut expected = Vec::new();
    for r in plain["results"].as_array().unwrap() {
        let file = r["file"]
            .as_str()
            .unwrap()
            .split(" document")
            .next()
            .unwrap()
            .to_string();
        for v in r["violations"].as_array().unwrap() {
            expected.push((file.clone(), v.clone()));
        }
    }
    assert_eq!(results.len(), expected.len());
    let (mut annotation_checked, mut other_checked) = (0, 0);
    for (res, (file, v)) in results.iter().zip(&expected) {
        assert_eq!(res["ruleId"], v["rule"]);
        assert_eq!(
            rules[res["ruleIndex"].as_u64().unwrap() as usize]["id"],
            v["rule"]
        );
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], file.as_str());
        let (line, col) = (
            loc["region"]["startLine"].as_u64().unwrap() as usize,
            loc["region"]["startColumn"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            (line, col),
            (
                v["line"].as_u64().unwrap() as usize,
                v["column"].as_u64().unwrap() as usize
            )
        );
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
                .unwrap();
        let at_line = text
            .lines()
            .nth(line - 1)
            .unwrap_or_else(|| panic!("{file}:{line}"));
        // An annotation finding points at that annotation's key.
        if let Some(key) = v["field"]
            .as_str()
            .unwrap()
            .strip_prefix("metadata.annotations[")
            .and_then(|k| k.strip_suffix(']'))
            && text.contains(key)
        {
            let from_col: String = at_line.chars().skip(col - 1).collect();
            assert!(
                from_col.trim_start_matches(['"', '\'']).starts_with(key),
                "{file}:{line}:{col} is {at_line:?}, not {key}"
            );
            annotation_checked += 1;
        } else if let Some(last) = v["field"].as_str().unwrap().rsplit('.').next()
            && !last.is_empty()
            && !last.contains('[')
            && text.contains(&format!("{last}:"))
        {
            // Another field that is in the file: the position is its key.
            let from_col: String = at_line.chars().skip(col - 1).collect();
            assert!(
                from_col.starts_with(last),
                "{file}:{line}:{col} is {at_line:?}, not {last}"
            );
            other_checked += 1;
        }
    }
    assert!(annotation_checked >= 20, "{annotation_checked}");
    assert!(other_checked >= 1, "{other_checked}");
}

#[test]
fn text_output_is_compiler_style_and_junit_counts_failures() {
    let out = lbguard(&["check", "examples/ctyun/bad-ip-mode-value.yaml"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("examples/ctyun/bad-ip-mode-value.yaml:7:5: deny [ip-mode-value] "),
        "{text}"
    );
    let out = lbguard(&["check", "--output", "junit", "examples/ctyun/"], None);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lbguard check\""
        ),
        "{xml}"
    );
    let cases = xml.matches("<testcase ").count();
    let failures = xml.matches("<failure ").count();
    assert!(
        xml.contains(&format!("tests=\"{cases}\" failures=\"{failures}\"")),
        "{xml}"
    );
    assert!(failures >= 3 && cases > failures, "{xml}");
    assert!(xml.contains("type=\"ip-mode-value\""), "{xml}");
    assert!(
        xml.contains("bad-ip-mode-value.yaml:7:5: [ip-mode-value]"),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<testsuite ").count(),
        xml.matches("</testsuite>").count()
    );
}

/// `lbguard check ... | head`: the reader goes away; lbguard stops without a panic.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["check", "examples/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn every_flag_and_output_format_has_help() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() {
                missing.push(format!("{path} --{id}"));
            }
            for v in arg.get_possible_values() {
                if arg.get_action().takes_values()
                    && !matches!(v.get_name(), "true" | "false")
                    && v.get_help().is_none()
                {
                    missing.push(format!("{path} --{id} {}", v.get_name()));
                }
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&lbguard::cli::Cli::command(), "lbguard", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:?}");
}

#[test]
fn inventory_dump_offers_only_what_applies() {
    let out = lbguard(&["inventory", "dump", "--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for absent in ["--cluster-version", "--ccm-version", "auto"] {
        assert!(!help.contains(absent), "{absent} in:\n{help}");
    }
    let out = lbguard(
        &["inventory", "dump", "--provider", "auto", "--id", "x"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected ctyun, alibaba, huawei or volcengine)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_provider_in_the_config_reads_like_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "provider: alibbaa\n").unwrap();
    let want = "unknown provider \"alibbaa\" (expected ctyun, alibaba, huawei, volcengine or auto)";
    let flag = lbguard(&["check", "--provider", "alibbaa", "-"], Some(""));
    assert!(stderr(&flag).contains(want), "{}", stderr(&flag));
    let file = lbguard(
        &["check", "--config", config.to_str().unwrap(), "-"],
        Some(""),
    );
    assert_eq!(file.status.code(), Some(2));
    let text = stderr(&file);
    assert!(text.contains(want) && text.contains("provider"), "{text}");
    assert!(!text.contains("untagged enum"), "{text}");
}

#[test]
fn rules_prints_a_header() {
    let out = lbguard(&["rules"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["RULE", "DEFAULT", "CLASS", "PROVIDERS", "TITLE"],
        "{text}"
    );
    // The columns line up under it.
    let second = text.lines().nth(1).unwrap();
    assert_eq!(
        second.find(" deny ").or(second.find(" warn ")),
        text.lines().next().unwrap().find(" DEFAULT")
    );
}

/// `lbguard serve` with a kubeconfig naming a loopback stand-in of the API server.
mod serve {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::process::{Child, Command, Stdio};
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::Duration;

    /// Answers `/version`, and 404 to anything else; records every path asked for.
    pub struct FakeApi {
        pub kubeconfig: std::path::PathBuf,
        pub paths: Arc<Mutex<Vec<String>>>,
        _dir: tempfile::TempDir,
    }

    fn answer(stream: TcpStream, paths: &Mutex<Vec<String>>) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        paths.lock().unwrap().push(path.clone());
        let (status, body) = if path == "/version" {
            (
                "200 OK",
                r#"{"major":"1","minor":"36","gitVersion":"v1.36.2","platform":"linux/amd64"}"#
                    .to_string(),
            )
        } else {
            (
                "404 Not Found",
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#
                    .to_string(),
            )
        };
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }

    pub fn fake_api() -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || answer(stream, &seen));
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\nusers:\n- name: dev\n  user: {{token: dev-token}}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: dev, namespace: default}}\ncurrent-context: fake\n"
            ),
        )
        .unwrap();
        FakeApi {
            kubeconfig,
            paths,
            _dir: dir,
        }
    }

    /// A running `lbguard serve --dev` and its stderr so far.
    pub struct Serve {
        child: Child,
        lines: mpsc::Receiver<String>,
        pub log: Vec<String>,
        _dir: tempfile::TempDir,
    }

    impl Serve {
        pub fn start(kubeconfig: &std::path::Path, extra: &[&str]) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
                .args(["serve", "--dev", "--dev-dir"])
                .arg(dir.path())
                .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
                .args(extra)
                .env("KUBECONFIG", kubeconfig)
                .env("RUST_LOG", "info")
                .env_remove("KUBERNETES_SERVICE_HOST")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stderr = child.stderr.take().unwrap();
            let (tx, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            Self {
                child,
                lines,
                log: Vec::new(),
                _dir: dir,
            }
        }

        /// Reads stderr until a line contains `what`.
        pub fn wait_for(&mut self, what: &str) {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while !self.log.iter().any(|l| l.contains(what)) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match self.lines.recv_timeout(left) {
                    Ok(l) => self.log.push(l),
                    Err(_) => panic!("no \"{what}\" in:\n{}", self.log.join("\n")),
                }
            }
        }

        /// SIGTERM, then everything it logged until it exited.
        pub fn stop(mut self) -> Vec<String> {
            let status = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            let exit = self.child.wait().unwrap();
            while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
                self.log.push(l);
            }
            assert!(exit.success(), "{exit}: {}", self.log.join("\n"));
            std::mem::take(&mut self.log)
        }
    }

    impl Drop for Serve {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn serve_dev_ignores_the_kubeconfig_unless_asked() {
    let api = serve::fake_api();
    let mut server = serve::Serve::start(&api.kubeconfig, &[]);
    server.wait_for("lbguard serving");
    let log = server.stop().join("\n");
    assert!(log.contains("running standalone (--dev"), "{log}");
    assert!(
        api.paths.lock().unwrap().is_empty(),
        "asked the kubeconfig's cluster: {:?}",
        api.paths.lock().unwrap()
    );
}

#[test]
fn serve_dev_with_the_kubeconfig_only_reads_and_shuts_down_once() {
    let api = serve::fake_api();
    let mut server =
        serve::Serve::start(&api.kubeconfig, &["--use-kubeconfig", "--metrics-secure"]);
    server.wait_for("lbguard serving");
    let log = server.stop();
    let text = log.join("\n");
    assert!(
        api.paths.lock().unwrap().iter().any(|p| p == "/version"),
        "{:?}",
        api.paths.lock().unwrap()
    );
    assert!(!text.contains("listener claims enabled"), "{text}");
    assert!(
        text.contains(
            "--dev only reads the cluster: listener claims, audit Events and policy reports off"
        ),
        "{text}"
    );
    let closed = log
        .iter()
        .filter(|l| l.contains("all connections closed"))
        .count();
    assert_eq!(closed, 1, "{text}");
}

#[test]
fn serve_errors_say_each_cause_once_and_paths_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-kubeconfig");
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", &missing)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains(&format!(
            "cannot read the kubeconfig {}: No such file or directory",
            missing.display()
        )),
        "{text}"
    );
    assert!(!text.contains("'\""), "{text}");

    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "inventory:\n  path: /no/such/inventory.yaml\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--dev", "--standalone", "--dev-dir"])
        .arg(dir.path().join("certs"))
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains("cannot read inventory /no/such/inventory.yaml"),
        "{text}"
    );
    assert_eq!(
        text.matches("No such file or directory").count(),
        1,
        "{text}"
    );
}

/// A Service another load balancer implementation serves is skipped, said once on stderr and
/// counted as foreign; it does not fail the run whatever its annotations hold.
#[test]
fn services_of_another_load_balancer_class_are_skipped_and_counted() {
    let manifest = r#"
apiVersion: v1
kind: Service
metadata:
  name: metal
  namespace: web
  annotations:
    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type: Internet
spec:
  type: LoadBalancer
  loadBalancerClass: metallb.io/metallb
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: ack
  namespace: web
  annotations:
    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type: Internet
spec:
  type: LoadBalancer
  ports: [{port: 80}]
"#;
    let out = lbguard(
        &["check", "--provider", "alibaba", "--output", "json", "-"],
        Some(manifest),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["summary"]["checked"], 1, "{doc}");
    assert_eq!(doc["summary"]["foreign"], 1, "{doc}");
    assert_eq!(doc["results"][0]["name"], "ack");
    let err = stderr(&out);
    assert!(
        err.contains("web/metal") && err.contains("metallb.io/metallb"),
        "{err}"
    );
    let text = lbguard(&["check", "--provider", "alibaba", "-"], Some(manifest));
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("1 Service(s) of another load balancer implementation skipped"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}
