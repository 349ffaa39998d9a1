//! `check` on a repository as people have them: manifests next to Markdown, list-shaped YAML
//! (an Ansible playbook, a pre-commit hooks file, a JSON array), a Helm chart and config
//! files. Kubernetes objects are checked; what is not one is skipped with a note (an error
//! with `--strict`); a template stays an error; `--exclude` leaves paths out; `--report`
//! writes every format from the same run.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TEMPLATE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ include \"web.fullname\" . }}\n{{- if .Values.lb }}\nspec:\n  type: LoadBalancer\n{{- end }}\n";

/// A repository: two Services, Markdown, a playbook, a hooks file, a JSON array, a scalar
/// document, a config, and a Helm chart.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &str)] = &[
        (
            "manifests/README.md",
            "# Manifests\n\nApply with: kubectl apply -f .\n",
        ),
        ("manifests/notes.yaml", "just a sentence\n"),
        ("playbook.yml", "- hosts: all\n  tasks: []\n"),
        (
            ".pre-commit-hooks.yaml",
            "- id: x\n  name: x\n  entry: x\n  language: system\n",
        ),
        ("list.json", "[1, 2]\n"),
        ("mkdocs.yml", "site_name: docs\n"),
        (
            "charts/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        ),
        ("charts/web/values.yaml", "lb: true\n"),
        ("charts/web/templates/svc.yaml", TEMPLATE),
    ];
    for (name, text) in files {
        let file = dir.path().join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    for (from, to) in [
        ("alibaba/bad-address-type-value.yaml", "manifests/bad.yaml"),
        ("alibaba/good-nlb.yaml", "manifests/good.yaml"),
    ] {
        std::fs::copy(format!("{ROOT}/examples/{from}"), dir.path().join(to)).unwrap();
    }
    dir
}

#[test]
fn documents_that_are_not_objects_are_skipped_with_a_note_and_templates_stay_errors() {
    let repo = repository();
    let out = run_in(repo.path(), &["check", "--output", "json", "."]);
    let err = super::stderr(&out);
    // The template cannot be read as YAML: an error that says what it is and what to do.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("./charts/web/templates/svc.yaml document 1: not valid YAML")
            && err.contains("helm template")
            && err.contains("--exclude"),
        "{err}"
    );
    let doc = super::json(&out);
    assert_eq!(doc["summary"]["checked"], 2, "{doc}");
    assert_eq!(doc["summary"]["denied"], 1, "{doc}");
    // playbook.yml, .pre-commit-hooks.yaml, list.json, notes.yaml, mkdocs.yml, Chart.yaml,
    // values.yaml.
    assert_eq!(doc["summary"]["ignored"], 7, "{doc}");
    assert_eq!(doc["errors"].as_array().unwrap().len(), 1, "{doc}");
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for (file, what) in [
        ("./playbook.yml", "a list"),
        ("./.pre-commit-hooks.yaml", "a list"),
        ("./list.json", "a list"),
        ("./manifests/notes.yaml", "a string"),
        ("./charts/web/values.yaml", "a mapping without kind"),
    ] {
        let note = format!("{file} document 1 skipped: not a Kubernetes object ({what})");
        assert!(notes.contains(&note.as_str()), "{note}: {notes:?}");
        assert!(err.contains(&note), "{note}: {err}");
    }

    // Without the chart: only the denial decides.
    let out = run_in(repo.path(), &["check", "--exclude", "charts/**", "."]);
    assert_eq!(out.status.code(), Some(1), "{}", super::stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("./manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{text}"
    );
    assert!(
        text.contains(
            "2 Service(s) checked: 1 denied, 0 allowed with warnings; 0 other object(s) skipped; 5 document(s) that are not Kubernetes objects skipped"
        ),
        "{text}"
    );

    // A README named directly (what a pre-commit `files:` pattern hands over) is skipped.
    let out = run_in(
        repo.path(),
        &["check", "manifests/README.md", "manifests/good.yaml"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", super::stderr(&out));
}

#[test]
fn strict_makes_a_document_that_is_not_an_object_an_error() {
    let repo = repository();
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--strict",
            "--exclude",
            "charts",
            "manifests/good.yaml",
            "playbook.yml",
            "list.json",
            "mkdocs.yml",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = super::stderr(&out);
    for (file, what) in [
        ("playbook.yml", "a list"),
        ("list.json", "a list"),
        ("mkdocs.yml", "a mapping without kind"),
    ] {
        assert!(
            err.contains(&format!(
                "{file} document 1: not a Kubernetes object ({what}; expected a mapping with apiVersion and kind)"
            )),
            "{file}: {err}"
        );
    }
    // Objects of other kinds are still only counted.
    let list = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#;
    let out = super::lbguard(&["check", "--strict", "--output", "json", "-"], Some(list));
    assert_eq!(out.status.code(), Some(0), "{}", super::stderr(&out));
    assert_eq!(super::json(&out)["summary"]["skipped"], 1);
}

#[test]
fn exclude_leaves_out_what_it_matches_as_named_or_under_the_argument() {
    let repo = repository();
    let abs = repo.path().to_str().unwrap();
    for args in [
        vec!["check", "--exclude", "charts/**", "--exclude", "*.yml", "."],
        vec!["check", "--exclude", "charts", "--exclude", "*.yml", abs],
        vec![
            "check",
            "--exclude",
            "**/templates/**",
            "--exclude",
            "**/*.yml",
            abs,
        ],
    ] {
        let out = run_in(repo.path(), &[&args[..], &["--output", "json"]].concat());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            super::stderr(&out)
        );
        let doc = super::json(&out);
        assert_eq!(doc["summary"]["checked"], 2, "{args:?}");
        let err = super::stderr(&out);
        assert!(!err.contains("playbook.yml"), "{args:?}: {err}");
        assert!(!err.contains("templates/svc.yaml"), "{args:?}: {err}");
    }
    // A file named directly is left out too; a bad pattern is a usage error.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--exclude",
            "manifests/bad.yaml",
            "manifests/bad.yaml",
            "manifests/good.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", super::stderr(&out));
    let out = run_in(repo.path(), &["check", "--exclude", "a/[b", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        super::stderr(&out).contains("--exclude"),
        "{}",
        super::stderr(&out)
    );
}

/// The published SARIF 2.1.0 schema's errors for `sarif`.
fn schema_errors(sarif: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{ROOT}/tests/fixtures/sarif-schema-2.1.0.json"))
        .unwrap()
        .replace("{2}]?$", "{2}\\\\]?$");
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(sarif)
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn reports_from_one_run_carry_the_errors_and_notes() {
    let repo = repository();
    let out_dir = repo.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let report = |f: &str| format!("{}={}", f, out_dir.join(f).display());
    let args = [
        "check".to_string(),
        "--output".into(),
        "github".into(),
        "--report".into(),
        report("sarif"),
        "--report".into(),
        report("junit"),
        "--report".into(),
        report("markdown"),
        "--report".into(),
        report("json"),
        "--report".into(),
        report("text"),
        ".".into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_in(repo.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", super::stderr(&out));
    let read = |f: &str| std::fs::read_to_string(out_dir.join(f)).unwrap();

    // GitHub: one annotation per finding on its file, line and column, then the error and
    // the notes.
    let commands = stdout(&out);
    assert!(
        commands.lines().any(|l| l
            == "::error file=manifests/bad.yaml,line=7,col=5,title=lbguard [address-type-value] shop/web::[address-type-value] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type is \"Intranet\"; allowed: \"internet\" or \"intranet\" (exact, lower case)"),
        "{commands}"
    );
    assert!(
        commands.contains(
            "::error title=lbguard::./charts/web/templates/svc.yaml document 1: not valid YAML"
        ),
        "{commands}"
    );
    // What was skipped is in the log and the summary, not an annotation per file.
    assert!(!commands.contains("playbook.yml"), "{commands}");

    // SARIF: valid, the finding a result, the error and notes tool notifications.
    let sarif: Value = serde_json::from_str(&read("sarif")).unwrap();
    assert_eq!(schema_errors(&sarif), Vec::<String>::new());
    let run = &sarif["runs"][0];
    assert_eq!(run["results"].as_array().unwrap().len(), 1);
    let invocation = &run["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let notifications = invocation["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notifications[0]["level"], "error");
    assert!(
        notifications[0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("templates/svc.yaml document 1: not valid YAML")
    );
    assert_eq!(notifications.len(), 8, "{notifications:#?}");
    assert!(notifications[1..].iter().all(|n| n["level"] == "note"));

    // JUnit: the error is a test case in error; the notes are the suite's output.
    let junit = read("junit");
    assert!(
        junit.contains(
            "<testsuites name=\"lbguard check\" tests=\"3\" failures=\"1\" errors=\"1\">"
        ),
        "{junit}"
    );
    assert!(
        junit.contains("<testcase classname=\"lbguard check\" name=\"./charts/web/templates/svc.yaml document 1\">\n      <error type=\"input\" message=\"./charts/web/templates/svc.yaml document 1: not valid YAML"),
        "{junit}"
    );
    assert!(junit.contains("./list.json document 1 skipped"), "{junit}");

    // Markdown: the counts, a row per finding, the error and the notes.
    let md = read("markdown");
    assert!(
        md.starts_with("### lbguard check\n\n2 Service(s) checked: 1 denied"),
        "{md}"
    );
    assert!(
        md.contains("| **deny** | `manifests/bad.yaml:7:5` | shop/web | `address-type-value` | [address-type-value] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"),
        "{md}"
    );
    assert!(
        md.contains(
            "**Not checked (the run fails)**\n\n- ./charts/web/templates/svc.yaml document 1"
        ),
        "{md}"
    );
    assert!(
        md.contains("**Notes**\n\n- ")
            && md.contains("\n- ./charts/web/values.yaml document 1 skipped"),
        "{md}"
    );

    // JSON and text: the same run.
    let json: Value = serde_json::from_str(&read("json")).unwrap();
    assert_eq!(json["summary"]["denied"], 1);
    assert!(read("text").contains("./manifests/bad.yaml:7:5: deny"));

    // A report that cannot be written fails the run and says which.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--report",
            "sarif=missing/dir/x.sarif",
            "manifests/good.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        super::stderr(&out).contains("cannot write the report missing/dir/x.sarif"),
        "{}",
        super::stderr(&out)
    );
    for bad in ["sarif", "html=x", "sarif=", "json=-"] {
        let out = run_in(
            repo.path(),
            &["check", "--report", bad, "manifests/good.yaml"],
        );
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

/// The inventory rules that did not run reach every report, not only the text's last line.
#[test]
fn the_inventory_note_reaches_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = |f: &str| format!("{}={}", f, dir.path().join(f).display());
    let out = super::lbguard(
        &[
            "check",
            "--output",
            "github",
            "--report",
            &report("sarif"),
            "--report",
            &report("junit"),
            "--report",
            &report("markdown"),
            "--report",
            &report("json"),
            "examples/inventory/deny-address-type-match.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", super::stderr(&out));
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let note = "1 Service(s) reuse a load balancer, but no inventory was given";
    assert!(stdout(&out).contains(&format!("::warning title=lbguard::{note}")));
    let sarif: Value = serde_json::from_str(&read("sarif")).unwrap();
    let n = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(n["level"], "warning");
    assert!(n["message"]["text"].as_str().unwrap().starts_with(note));
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
    let junit = read("junit");
    assert!(
        junit.contains("<system-out>the inventory rules did not run: it reuses a load balancer"),
        "{junit}"
    );
    assert!(read("markdown").contains(&format!("**Did not run**\n\n- {note}")));
    let json: Value = serde_json::from_str(&read("json")).unwrap();
    assert!(json["notes"][0].as_str().unwrap().starts_with(note));
}
