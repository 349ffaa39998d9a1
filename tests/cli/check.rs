//! `check` on the examples: verdicts, the JSON shape, updates, defaults, lists, exit codes and input errors.

use super::*;

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
    // The state has a Node and an Ingress; the config, the inventory and the tutorial's
    // chart values are not Kubernetes objects.
    assert_eq!(doc["summary"]["skipped"], 2);
    assert_eq!(doc["summary"]["ignored"], 3);
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
        serde_json::json!({"checked": 1, "skipped": 0, "ignored": 0, "foreign": 0, "denied": 1, "warned": 0, "exempted": 0})
    );
    // What could not be checked, and what was skipped and why (with the rules that did not
    // run for lack of an inventory).
    assert_eq!(doc["errors"], serde_json::json!([]));
    assert!(
        doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("no inventory was given"),
        "{doc}"
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

/// A Service that reuses a load balancer, checked without an inventory, is allowed by the
/// inventory rules only because they did not run: the text output says which (those of the
/// Services' providers; `lb-exists` only with the cloud), and stops once the inventory is given.
#[test]
fn check_says_when_the_inventory_rules_did_not_run() {
    let file = "examples/inventory/deny-address-type-match.yaml";
    let out = lbguard(&["check", file], None);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().last().unwrap_or_default(),
        "1 Service(s) reuse a load balancer, but no inventory was given: address-type-match, reuse-user-created-only, reuse-same-vpc, cross-cluster-name-clash did not run (--inventory FILE or --inventory-cloud); lb-exists did not run (--inventory-cloud: only the cloud can say a load balancer does not exist)",
        "{text}"
    );
    // Only the rules of the Services' provider: Volcengine has neither address-type-match
    // nor the VPC rule.
    let out = lbguard(
        &["check", "examples/volcengine/good-reuse-id-only.yaml"],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().last().unwrap_or_default().ends_with(
            "no inventory was given: reuse-user-created-only did not run (--inventory FILE or --inventory-cloud); lb-exists did not run (--inventory-cloud: only the cloud can say a load balancer does not exist)"
        ),
        "{text}"
    );
    let out = lbguard(
        &[
            "check",
            "--inventory",
            "examples/inventory/inventory.yaml",
            file,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("no inventory was given"));
    // A Service that names no load balancer has nothing for them to check.
    let out = lbguard(&["check", "examples/ctyun/bad-ip-mode-value.yaml"], None);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("no inventory was given"));
}

/// `check --inventory` with a CLB's live charge type (`chargeType`): a pay-by-LCU CLB asked to
/// be PayBySpec, and a pay-by-spec one given a spec the API refuses without
/// instance-charge-type, are denied by annotation-format; a CLB whose charge type the file
/// does not give keeps today's verdict (issue #39).
#[test]
fn check_holds_a_reused_clb_to_its_live_charge_type() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.yaml");
    std::fs::write(
        &inventory,
        "loadBalancers:\n  - {id: lb-lcu, provider: alibaba, kind: clb, addressType: internet, createdBy: user, chargeType: PayByCLCU}\n  - {id: lb-spec, provider: alibaba, kind: clb, addressType: internet, createdBy: user, chargeType: PayBySpec}\n  - {id: lb-old, provider: alibaba, kind: clb, addressType: internet, createdBy: user}\n",
    )
    .unwrap();
    let cases: &[(&str, &str, &str, bool)] = &[
        (
            "lcu-to-spec",
            "lb-lcu",
            "instance-charge-type: PayBySpec",
            false,
        ),
        (
            "lcu-kept",
            "lb-lcu",
            "instance-charge-type: PayByCLCU",
            true,
        ),
        ("spec-bad-spec", "lb-spec", "spec: slb.s9.small", false),
        ("spec-good-spec", "lb-spec", "spec: slb.s2.small", true),
        ("old-bad-spec", "lb-old", "spec: slb.s9.small", true),
        (
            "old-to-spec",
            "lb-old",
            "instance-charge-type: PayBySpec",
            true,
        ),
    ];
    let prefix = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
    // Each on a port of its own: the Services share load balancers (listener-port-unique).
    for (port, (name, id, ann, _)) in (8001..).zip(cases) {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations:\n    {prefix}id: {id}\n    {prefix}{ann}\nspec:\n  type: LoadBalancer\n  ports:\n    - {{port: {port}, targetPort: 8080, protocol: TCP}}\n"),
        )
        .unwrap();
    }
    let files: Vec<String> = cases
        .iter()
        .map(|(name, ..)| {
            dir.path()
                .join(format!("{name}.yaml"))
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec![
        "check",
        "--output",
        "json",
        "--inventory",
        inventory.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let out = lbguard(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    for (name, _, _, allowed) in cases {
        let r = doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["file"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{name}.yaml"))
            })
            .unwrap_or_else(|| panic!("{name}: {doc}"));
        assert_eq!(r["allowed"], *allowed, "{name}: {r}");
        for v in r["violations"].as_array().unwrap() {
            if v["action"] == "deny" {
                assert_eq!(v["rule"], "annotation-format", "{name}: {r}");
                let m = v["message"].as_str().unwrap();
                assert!(
                    m.contains("ModifyLoadBalancerInstanceChargeType")
                        || m.contains("ModifyLoadBalancerInstanceSpec"),
                    "{name}: {m}"
                );
            }
        }
    }
}

/// `check --inventory` with a CLB's live spec (`spec`) beside its charge type: a Service
/// restating the live spec, even one beyond the CLB API's list (an allow-listed larger spec),
/// is allowed, as the controller sends a spec only when it differs, exactly, from the live
/// one (clbv1/loadbalancer.go:455-488); a changed spec, another spelling of the charge type,
/// or a CLB whose spec or charge type the file does not give keeps today's verdict (#39).
#[test]
fn check_lets_a_clb_restate_its_live_spec() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.yaml");
    let entry = |id: &str, facts: &str| {
        format!(
            "  - {{id: {id}, provider: alibaba, kind: clb, addressType: internet, createdBy: user{facts}}}\n"
        )
    };
    std::fs::write(
        &inventory,
        format!(
            "loadBalancers:\n{}{}{}",
            entry("lb-super", ", chargeType: PayBySpec, spec: slb.s3.xlarge"),
            entry("lb-nospec", ", chargeType: PayBySpec"),
            entry("lb-speconly", ", spec: slb.s3.xlarge"),
        ),
    )
    .unwrap();
    let live = ("spec", "slb.s3.xlarge");
    // (file name, CLB id, annotations, allowed)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], bool);
    let cases: &[Case] = &[
        ("restated", "lb-super", &[live], true),
        (
            "restated-row",
            "lb-super",
            &[("instance-charge-type", "PayBySpec"), live],
            true,
        ),
        ("changed", "lb-super", &[("spec", "slb.s9.small")], false),
        (
            "row-other-case",
            "lb-super",
            &[("instance-charge-type", "paybyspec"), live],
            false,
        ),
        ("no-live-spec", "lb-nospec", &[live], false),
        (
            "no-live-charge-type",
            "lb-speconly",
            &[("instance-charge-type", "PayBySpec"), live],
            false,
        ),
    ];
    let prefix = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
    let mut files = Vec::new();
    // Each on a port of its own: the Services share load balancers (listener-port-unique).
    for (port, (name, id, anns, _)) in (8001..).zip(cases) {
        let anns: String = anns
            .iter()
            .map(|(k, v)| format!("    {prefix}{k}: {v}\n"))
            .collect();
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations:\n    {prefix}id: {id}\n{anns}spec:\n  type: LoadBalancer\n  ports:\n    - {{port: {port}, targetPort: 8080, protocol: TCP}}\n"),
        )
        .unwrap();
        files.push(path.display().to_string());
    }
    let mut args = vec![
        "check",
        "--output",
        "json",
        "--inventory",
        inventory.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let out = lbguard(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    for (name, _, _, allowed) in cases {
        let r = doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["file"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{name}.yaml"))
            })
            .unwrap_or_else(|| panic!("{name}: {doc}"));
        assert_eq!(r["allowed"], *allowed, "{name}: {r}");
        let denials: Vec<&Value> = r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["action"] == "deny")
            .collect();
        assert_eq!(denials.is_empty(), *allowed, "{name}: {r}");
        for v in denials {
            assert_eq!(v["rule"], "annotation-format", "{name}: {r}");
            let m = v["message"].as_str().unwrap();
            assert!(m.contains("ModifyLoadBalancerInstanceSpec"), "{name}: {m}");
        }
    }
}
