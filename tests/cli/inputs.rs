//! `rules`, the inventory, the cluster state, and the benchmark binary.

use super::*;

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

/// The benchmark binary is built with `--features bench` (scripts/test does).
#[cfg(feature = "bench")]
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
