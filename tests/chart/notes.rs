//! NOTES.txt shows, per provider, a bad Service and the denial to expect: the denial is what
//! lbguard gives that Service under the chart's rendered config.

use super::*;

const LBGUARD: &str = env!("CARGO_BIN_EXE_lbguard");
const EXPECTED: &str = "Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"validate.lbguard.io\" denied the request: ";

/// The Service in the notes' `cat <<'YAML'` block, and the message after "Expected:".
fn demo(notes: &str) -> (String, String) {
    let yaml: Vec<&str> = notes
        .lines()
        .skip_while(|l| !l.contains("<<'YAML'"))
        .skip(1)
        .take_while(|l| l.trim() != "YAML")
        .map(|l| l.strip_prefix("   ").unwrap_or(l))
        .collect();
    let expected = notes
        .lines()
        .skip_while(|l| l.trim() != "Expected:")
        .nth(1)
        .expect("an Expected: line")
        .trim();
    let message = expected
        .strip_prefix(EXPECTED)
        .unwrap_or_else(|| panic!("not kubectl's denial: {expected}"));
    (yaml.join("\n"), message.to_string())
}

/// What the webhook answers that Service with: its denial messages, joined as in
/// `status.message`. `lbguard check` runs the same engine, defaults first.
fn denial(config: &str, service: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, config).unwrap();
    let mut child = std::process::Command::new(LBGUARD)
        .args(["check", "--output", "json", "--config"])
        .arg(&config_file)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(service.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "the notes' Service is denied");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let denials: Vec<&str> = report["results"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["action"] == "deny")
        .map(|v| v["message"].as_str().unwrap())
        .collect();
    denials.join("; ")
}

#[test]
fn the_notes_denial_is_what_lbguard_answers() {
    for provider in ["auto", "ctyun", "alibaba", "huawei", "volcengine"] {
        let out = helm("render", &json!({"provider": provider}));
        let notes = out["templates"]["lbguard/templates/NOTES.txt"]
            .as_str()
            .expect("NOTES.txt renders");
        let config =
            render(json!({"provider": provider})).kind("ConfigMap")[0]["data"]["config.yaml"]
                .as_str()
                .unwrap()
                .to_string();
        let (service, message) = demo(notes);
        assert_eq!(
            denial(&config, &service),
            message,
            "provider {provider}: the notes promise another denial\n{service}"
        );
    }
}

#[test]
fn the_notes_parser_finds_the_service_and_the_message() {
    let notes = "2. See it:\n   cat <<'YAML' | kubectl apply -f -\n   kind: Service\n   YAML\n\n   Expected:\n   Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"validate.lbguard.io\" denied the request: [r] m\n";
    assert_eq!(
        demo(notes),
        ("kind: Service".to_string(), "[r] m".to_string())
    );
}
