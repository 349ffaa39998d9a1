//! The decided cases of tests/fixtures/{ack,cce,volcengine}/cases.yaml, each run through
//! `lbguard check` as a user runs it: what the controller accepts (and the cloud's API takes)
//! lbguard denies nothing of, what the controller fails on or the API refuses lbguard denies
//! under the named rule (on the named annotation, where the case names one), and what no
//! controller of the cloud takes lbguard leaves alone. ACK's cases are decided by the
//! controller's code, CCE's and Volcengine's by the API's published limits (their controllers
//! are not public), each with its source.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{Map, Value, json};

/// A Service manifest from a case's short form.
fn service(prefix: &str, case: &Value, part: &Value) -> Value {
    let mut annotations = Map::new();
    for (k, v) in part["annotations"].as_object().into_iter().flatten() {
        annotations.insert(format!("{prefix}{k}"), v.clone());
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

/// The `sources` of the provider's data files (src/providers/data/), by name, and the ones
/// its API rows (`{provider}-api.yaml`'s calls) name.
fn sources(root: &str, provider: &str) -> (Map<String, Value>, BTreeSet<String>) {
    fn named(v: &Value, into: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                into.extend(m.get("source").and_then(Value::as_str).map(String::from));
                m.values().for_each(|v| named(v, into));
            }
            Value::Array(a) => a.iter().for_each(|v| named(v, into)),
            _ => {}
        }
    }
    let (mut all, mut rows) = (Map::new(), BTreeSet::new());
    for file in [format!("{provider}.yaml"), format!("{provider}-api.yaml")] {
        let text = std::fs::read_to_string(format!("{root}/src/providers/data/{file}")).unwrap();
        let doc: Value = lbguard::yaml::from_str(&text).unwrap();
        all.extend(doc["sources"].as_object().cloned().unwrap_or_default());
        if file.ends_with("-api.yaml") {
            named(&doc["calls"], &mut rows);
        }
    }
    (all, rows)
}

/// Runs every case of tests/fixtures/`dir`/cases.yaml (at least `min`) with the file's
/// provider, cluster and annotation prefix; panics with each case lbguard disagrees on.
fn check(dir: &str, min: usize) {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/tests/fixtures/{dir}/cases.yaml");
    let doc: Value = lbguard::yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= min, "{path}: {}", cases.len());
    let names: BTreeSet<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), cases.len(), "{path}: case names repeat");
    let (provider, prefix) = (
        doc["provider"].as_str().unwrap(),
        doc["prefix"].as_str().unwrap(),
    );
    let (sources, rows) = sources(root, provider);
    // A file whose cases name sources covers every source the API rows name.
    let named: BTreeSet<String> = cases
        .iter()
        .filter_map(|c| c["source"].as_str())
        .map(String::from)
        .collect();
    let missing: Vec<_> = rows.difference(&named).collect();
    assert!(
        named.is_empty() || missing.is_empty(),
        "{path}: no case for the rows of {missing:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.yaml");
    let mut settings = json!({"provider": provider});
    if doc["cluster"].is_object() {
        settings["cluster"] = doc["cluster"].clone();
    }
    std::fs::write(&config, serde_json::to_string(&settings).unwrap()).unwrap();
    let mut disagree = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let source = case["source"].as_str().map(|key| {
            let text = sources.get(key);
            let text = text.unwrap_or_else(|| panic!("{name}: no source {key} for {provider}"));
            // A source is its text, or `{title, text}`.
            let text = text.as_str().or_else(|| text["text"].as_str()).unwrap();
            format!("; source {key}: {text}")
        });
        let new = service(prefix, case, case);
        let file = tmp.path().join(format!("{name}.yaml"));
        std::fs::write(&file, serde_json::to_string(&new).unwrap()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbguard"));
        cmd.args(["check", "--output", "json", "--config"])
            .arg(&config);
        if case["old"].is_object() {
            let old = tmp.path().join(format!("{name}-old.yaml"));
            let live = service(prefix, case, &case["old"]);
            std::fs::write(&old, serde_json::to_string(&live).unwrap()).unwrap();
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
            let inv = tmp.path().join(format!("{name}-inventory.yaml"));
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
        let denied: Vec<(&str, &str)> = result["results"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| r["violations"].as_array().into_iter().flatten())
            .filter(|v| v["action"] == "deny")
            .map(|v| {
                (
                    v["rule"].as_str().unwrap(),
                    v["field"].as_str().unwrap_or(""),
                )
            })
            .collect();
        let field = case["field"]
            .as_str()
            .map(|f| format!("metadata.annotations[{}{f}]", prefix));
        let ok = match case["controller"].as_str().unwrap() {
            "accepts" => denied.is_empty() && result["summary"]["checked"] == 1,
            "fails" => denied.iter().any(|&(rule, f)| {
                rule == case["rule"].as_str().unwrap() && field.as_ref().is_none_or(|w| f == w)
            }),
            "skips" => result["summary"]["foreign"] == 1 && result["summary"]["checked"] == 0,
            other => panic!("{name}: unknown verdict {other}"),
        };
        if !ok {
            disagree.push(format!(
                "{name} (the controller {}, {}{}): lbguard {}",
                case["controller"].as_str().unwrap(),
                case["decides"].as_str().unwrap(),
                source.unwrap_or_default(),
                result
            ));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
}

#[test]
fn lbguard_agrees_with_acks_controller() {
    check("ack", 30);
}

#[test]
fn lbguard_agrees_with_the_api_cce_calls() {
    check("cce", 100);
}

#[test]
fn lbguard_agrees_with_the_api_volcengines_controller_calls() {
    check("volcengine", 50);
}
