//! The controller-decided cases of tests/fixtures/ack/cases.yaml, each run through
//! `lbguard check` as a user runs it: what ACK's controller accepts lbguard denies nothing
//! of, what it fails on lbguard denies under the named rule, and what no controller of ACK
//! takes lbguard leaves alone.

use std::process::Command;

use serde_json::{Map, Value, json};

const PREFIX: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";

/// A Service manifest from a case's short form.
fn service(case: &Value, part: &Value) -> Value {
    let mut annotations = Map::new();
    for (k, v) in part["annotations"].as_object().into_iter().flatten() {
        annotations.insert(format!("{PREFIX}{k}"), v.clone());
    }
    for (k, v) in case["raw"].as_object().into_iter().flatten() {
        annotations.insert(k.clone(), v.clone());
    }
    let ports: Vec<Value> = part["ports"]
        .as_array()
        .or(case["ports"].as_array())
        .cloned()
        .unwrap_or_else(|| vec![json!("80/TCP")])
        .iter()
        .map(|p| {
            let (port, proto) = p.as_str().unwrap().split_once('/').unwrap();
            json!({"port": port.parse::<i64>().unwrap(), "protocol": proto, "targetPort": 8080})
        })
        .collect();
    let mut spec = json!({"type": "LoadBalancer", "selector": {"app": "web"}, "ports": ports});
    if let Some(c) = case["class"].as_str() {
        spec["loadBalancerClass"] = json!(c);
    }
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
        "spec": spec,
    })
}

#[test]
fn lbguard_agrees_with_acks_controller() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/tests/fixtures/ack/cases.yaml")).unwrap();
    let doc: Value = lbguard::yaml::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 30, "{}", cases.len());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "provider: alibaba\ncluster:\n  vpcId: vpc-1\n").unwrap();
    let mut disagree = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let new = service(case, case);
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, serde_json::to_string(&new).unwrap()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbguard"));
        cmd.args(["check", "--output", "json", "--config"])
            .arg(&config);
        if case["old"].is_object() {
            let old = dir.path().join(format!("{name}-old.yaml"));
            std::fs::write(
                &old,
                serde_json::to_string(&service(case, &case["old"])).unwrap(),
            )
            .unwrap();
            cmd.arg("--old").arg(old);
        }
        if let Some(facts) = case["lb"].as_object() {
            let id = case["annotations"]["id"].as_str().unwrap();
            let nlb = case["class"] == "alibabacloud.com/nlb";
            let mut lb = json!({"id": id, "provider": "alibaba", "kind": if nlb { "nlb" } else { "clb" },
                "addressType": "internet", "vpcId": "vpc-1", "createdBy": "user"});
            for (k, v) in facts {
                lb[k] = v.clone();
            }
            let inv = dir.path().join(format!("{name}-inventory.yaml"));
            std::fs::write(
                &inv,
                serde_json::to_string(&json!({"loadBalancers": [lb]})).unwrap(),
            )
            .unwrap();
            cmd.arg("--inventory").arg(inv);
        }
        let out = cmd.arg(&file).output().unwrap();
        let result: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let denied: Vec<&str> = result["results"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| r["violations"].as_array().into_iter().flatten())
            .filter(|v| v["action"] == "deny")
            .map(|v| v["rule"].as_str().unwrap())
            .collect();
        let ok = match case["controller"].as_str().unwrap() {
            "accepts" => denied.is_empty() && result["summary"]["checked"] == 1,
            "fails" => denied.contains(&case["rule"].as_str().unwrap()),
            "skips" => result["summary"]["foreign"] == 1 && result["summary"]["checked"] == 0,
            other => panic!("{name}: unknown verdict {other}"),
        };
        if !ok {
            disagree.push(format!(
                "{name} (the controller {}, {}): lbguard {}",
                case["controller"].as_str().unwrap(),
                case["decides"].as_str().unwrap(),
                result
            ));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
}
