//! The API rows (src/providers/data/*-api.yaml) against the clouds' own SDK request models
//! (tests/api/sdk_params.py, run by the `python3` on PATH, as scripts/venv installs it):
//! every call has a model and every parameter is a field of it.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn alibaba_rows_name_fields_of_the_sdk_request_models() {
    rows_name_fields_of_the_sdk_request_models("alibaba");
}

#[test]
fn volcengine_rows_name_fields_of_the_sdk_request_models() {
    rows_name_fields_of_the_sdk_request_models("volcengine");
}

#[test]
fn huawei_rows_name_fields_of_the_sdk_request_models() {
    rows_name_fields_of_the_sdk_request_models("huawei");
}

fn rows_name_fields_of_the_sdk_request_models(provider: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let text =
        std::fs::read_to_string(format!("{root}/src/providers/data/{provider}-api.yaml")).unwrap();
    let doc: serde_json::Value = lbguard::yaml::from_str(&text).unwrap();
    let mut child = Command::new("python3")
        .arg(format!("{root}/tests/api/sdk_params.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (scripts/venv puts one with the SDKs on PATH)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
