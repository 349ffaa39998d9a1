//! `lbguard check --exceptions`: exceptions applied offline as users run it, the SARIF
//! suppressions code scanning reads, and exception files that cannot be used.

use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::Value;

const BAD: &str = "examples/ctyun/bad-address-type-value.yaml";

fn lbguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn in_days(days: u64) -> String {
    lbguard::engine::exceptions::format_time(SystemTime::now() + Duration::from_secs(days * 86400))
}

/// An exception for `shop/api`'s address type, written to a file.
fn exception_file(dir: &tempfile::TempDir, name: &str, spec: &str) -> String {
    let path = dir.path().join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: lbguard.io/v1alpha1\nkind: LBGuardException\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n{spec}"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn covering(until: &str) -> String {
    format!(
        "  services:\n    names: [api]\n  rules: [address-type-value]\n  reason: the public LB is replaced on Friday\n  expires: \"{until}\"\n"
    )
}

#[test]
fn an_exception_lets_the_finding_through_and_every_output_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let until = in_days(3);
    let file = exception_file(&dir, "friday", &covering(&until));
    let without = lbguard(&["check", BAD]);
    assert_eq!(without.status.code(), Some(1), "{}", stderr(&without));

    let text = lbguard(&["check", "--exceptions", &file, BAD]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = stdout(&text);
    assert!(out.starts_with("ALLOWED shop/api"), "{out}");
    assert!(out.contains(": exempt [address-type-value]"), "{out}");
    assert!(
        out.contains(&format!(
            "(allowed by LBGuardException shop/friday until {until}, reason: the public LB is replaced on Friday)"
        )),
        "{out}"
    );
    assert!(
        out.contains("1 finding(s) let through by LBGuardExceptions"),
        "{out}"
    );

    let json: Value = serde_json::from_slice(
        &lbguard(&["check", "--output", "json", "--exceptions", &file, BAD]).stdout,
    )
    .unwrap();
    let v = &json["results"][0]["violations"][0];
    assert_eq!(v["rule"], "address-type-value");
    assert_eq!(v["exception"]["name"], "friday");
    assert_eq!(json["summary"]["exempted"], 1);
    assert_eq!(json["results"][0]["allowed"], true);

    let sarif = lbguard(&["check", "--output", "sarif", "--exceptions", &file, BAD]);
    assert_eq!(sarif.status.code(), Some(0));
    let sarif: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "address-type-value");
    let s = &result["suppressions"][0];
    assert_eq!(s["kind"], "external");
    assert_eq!(s["status"], "accepted");
    assert_eq!(
        s["justification"],
        format!(
            "the public LB is replaced on Friday (LBGuardException shop/friday, until {until})"
        )
    );
    // Valid SARIF 2.1.0, suppressions included.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sarif-schema-2.1.0.json"),
    )
    .unwrap()
    .replace("{2}]?$", "{2}\\\\]?$");
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["suppressions"][0]["kind"] = "silenced".into();
    assert!(!validator.is_valid(&broken));

    let junit = stdout(&lbguard(&[
        "check",
        "--output",
        "junit",
        "--exceptions",
        &file,
        BAD,
    ]));
    assert!(junit.contains("failures=\"0\""), "{junit}");
    assert!(
        junit.contains("allowed by LBGuardException shop/friday"),
        "{junit}"
    );
}

#[test]
fn an_exception_for_another_rule_service_or_namespace_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let until = in_days(3);
    for (name, spec) in [
        (
            "rule",
            covering(&until).replace("address-type-value", "lb-id-immutable"),
        ),
        (
            "svc",
            covering(&until).replace("names: [api]", "names: [web]"),
        ),
        (
            "labels",
            covering(&until).replace("names: [api]", "selector: {matchLabels: {app: api}}"),
        ),
    ] {
        let file = exception_file(&dir, name, &spec);
        let out = lbguard(&["check", "--exceptions", &file, BAD]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stdout(&out));
        assert!(stdout(&out).contains("deny [address-type-value]"), "{name}");
    }
    let other_ns = dir.path().join("other.yaml");
    std::fs::write(
        &other_ns,
        format!(
            "apiVersion: lbguard.io/v1alpha1\nkind: LBGuardException\nmetadata: {{name: x, namespace: web}}\nspec:\n{}",
            covering(&until)
        ),
    )
    .unwrap();
    let out = lbguard(&["check", "--exceptions", other_ns.to_str().unwrap(), BAD]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[test]
fn expired_exceptions_cover_nothing_and_invalid_ones_fail_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let past =
        lbguard::engine::exceptions::format_time(SystemTime::now() - Duration::from_secs(60));
    let file = exception_file(&dir, "old", &covering(&past));
    let out = lbguard(&["check", "--exceptions", &file, BAD]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!(
            "LBGuardException shop/old expired at {past}; it covers nothing"
        )),
        "{}",
        stderr(&out)
    );

    let too_far = exception_file(&dir, "far", &covering(&in_days(45)));
    let out = lbguard(&["check", "--exceptions", &too_far, BAD]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("spec.expires: ")
            && stderr(&out).contains("is more than 30 days after the exception"),
        "{}",
        stderr(&out)
    );
    let bad_rule = exception_file(
        &dir,
        "typo",
        &covering(&in_days(3)).replace("address-type-value", "adress-type-value"),
    );
    let out = lbguard(&["check", "--exceptions", &bad_rule, BAD]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("spec.rules[0]: unknown rule id \"adress-type-value\""));
    // A config that caps at 60 days takes the 45-day one.
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "exceptions:\n  maxDays: 60\n").unwrap();
    let out = lbguard(&[
        "check",
        "--config",
        config.to_str().unwrap(),
        "--exceptions",
        &too_far,
        BAD,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
