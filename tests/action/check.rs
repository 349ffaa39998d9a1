//! scripts/action/check.sh: one run of `lbguard check`, its report, annotations and summary,
//! and the step's result by the failure level.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{LBGUARD, ROOT, Run, text};

/// scripts/action/check.sh in `dir` with the step's variables.
fn check(dir: &Path, env: &[(&str, &str)]) -> Run {
    let runner = tempfile::tempdir().unwrap();
    let output = runner.path().join("github-output");
    let summary = runner.path().join("step-summary");
    let mut cmd = Command::new(format!("{ROOT}/scripts/action/check.sh"));
    cmd.current_dir(dir)
        .env("LBGUARD", LBGUARD)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary);
    for var in [
        "LBGUARD_PATHS",
        "LBGUARD_EXCLUDE",
        "LBGUARD_CONFIG",
        "LBGUARD_PROVIDER",
        "LBGUARD_CLUSTER_VERSION",
        "LBGUARD_CCM_VERSION",
        "LBGUARD_INVENTORY",
        "LBGUARD_ARGS",
        "LBGUARD_OUTPUT",
        "LBGUARD_OUTPUT_FILE",
        "LBGUARD_FAILURE_LEVEL",
        "LBGUARD_UPLOAD_SARIF",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Run {
        github_output: std::fs::read_to_string(&output).unwrap_or_default(),
        step_summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        github_path: String::new(),
        out,
        _runner: None,
    }
}

fn manifests() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("manifests");
    std::fs::create_dir(&m).unwrap();
    for (from, to) in [
        ("alibaba/bad-address-type-value.yaml", "bad.yaml"),
        ("alibaba/good-nlb.yaml", "good.yaml"),
        (
            "alibaba/bad-annotation-ccm-version-delete-protection.yaml",
            "old-ccm.yaml",
        ),
    ] {
        std::fs::copy(format!("{ROOT}/examples/{from}"), m.join(to)).unwrap();
    }
    dir
}

#[test]
fn check_reports_sarif_and_fails_on_a_denial() {
    let dir = manifests();
    let run = check(
        dir.path(),
        &[("LBGUARD_PATHS", "manifests/bad.yaml\nmanifests/good.yaml")],
    );
    assert_eq!(run.out.status.code(), Some(1), "{}", text(&run.out.stderr));
    // The log has the compiler-style line; the report is SARIF with the finding.
    assert!(
        text(&run.out.stdout).contains("manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{}",
        text(&run.out.stdout)
    );
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("lbguard.sarif")).unwrap())
            .unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["ruleId"], "address-type-value");
    for line in [
        "report=lbguard.sarif",
        "exit-code=1",
        "checked=2",
        "denied=1",
        "warned=0",
    ] {
        assert!(
            run.github_output.lines().any(|l| l == line),
            "{line}: {}",
            run.github_output
        );
    }

    // failure-level none reports the same and passes.
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/bad.yaml"),
            ("LBGUARD_FAILURE_LEVEL", "none"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(0));
    assert!(run.github_output.contains("denied=1\n"));
    // A glob, and nothing denied.
    let run = check(dir.path(), &[("LBGUARD_PATHS", "manifests/g*.yaml")]);
    assert_eq!(run.out.status.code(), Some(0), "{}", text(&run.out.stdout));
    assert!(run.github_output.contains("checked=1\n"));
}

#[test]
fn check_fails_on_warnings_only_when_asked() {
    let dir = manifests();
    let base = [
        ("LBGUARD_PATHS", "manifests/old-ccm.yaml"),
        ("LBGUARD_CCM_VERSION", "v1.0.0"),
        ("LBGUARD_OUTPUT", "junit"),
    ];
    let run = check(dir.path(), &base);
    assert_eq!(run.out.status.code(), Some(0), "{}", text(&run.out.stdout));
    assert!(
        run.github_output.contains("warned=1\n"),
        "{}",
        run.github_output
    );
    let junit = std::fs::read_to_string(dir.path().join("lbguard.xml")).unwrap();
    assert!(junit.starts_with("<?xml"), "{junit}");
    let warn = [base.as_slice(), &[("LBGUARD_FAILURE_LEVEL", "warn")]].concat();
    assert_eq!(check(dir.path(), &warn).out.status.code(), Some(1));
    // A newer controller reads the annotation: no warning, so no failure.
    let newer = [
        ("LBGUARD_PATHS", "manifests/old-ccm.yaml"),
        ("LBGUARD_CCM_VERSION", "v2.10.0"),
        ("LBGUARD_FAILURE_LEVEL", "warn"),
    ];
    assert_eq!(check(dir.path(), &newer).out.status.code(), Some(0));
}

#[test]
fn check_errors_fail_whatever_the_level() {
    let dir = manifests();
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/missing.yaml"),
            ("LBGUARD_FAILURE_LEVEL", "none"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(2));
    assert!(
        text(&run.out.stderr).contains("manifests/missing.yaml"),
        "{}",
        text(&run.out.stderr)
    );
    assert!(run.github_output.contains("exit-code=2\n"));
    for (var, value) in [
        ("LBGUARD_FAILURE_LEVEL", "error"),
        ("LBGUARD_OUTPUT", "html"),
        ("LBGUARD_PROVIDER", "nowhere"),
    ] {
        let run = check(dir.path(), &[("LBGUARD_PATHS", "manifests"), (var, value)]);
        assert_eq!(run.out.status.code(), Some(2), "{var}={value}");
    }
    // The provider, the config and extra flags reach lbguard.
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/bad.yaml"),
            ("LBGUARD_CONFIG", &format!("{ROOT}/examples/config.yaml")),
            ("LBGUARD_ARGS", "--no-defaults"),
            ("LBGUARD_OUTPUT", "json"),
        ],
    );
    assert!(
        matches!(run.out.status.code(), Some(0 | 1)),
        "{}",
        text(&run.out.stderr)
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("lbguard.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["results"][0]["defaults"],
        serde_json::json!([]),
        "--no-defaults"
    );
}

/// A repository as people have them: the manifests, their README, a playbook (a YAML list),
/// and a Helm chart whose template is not YAML until rendered.
fn repository() -> tempfile::TempDir {
    let dir = manifests();
    for (name, body) in [
        (
            "manifests/README.md",
            "# Manifests\n\nApply with: kubectl apply -f .\n",
        ),
        ("playbook.yml", "- hosts: all\n  tasks: []\n"),
        (
            "charts/web/templates/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.lb }}\nspec:\n  type: LoadBalancer\n{{- end }}\n",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    dir
}

#[test]
fn each_finding_is_an_annotation_and_a_row_of_the_step_summary() {
    let dir = repository();
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "."),
            ("LBGUARD_EXCLUDE", "charts/** manifests/old-ccm.yaml"),
            ("LBGUARD_OUTPUT_FILE", "reports/lbguard.sarif"),
        ],
    );
    let stdout = text(&run.out.stdout);
    assert_eq!(
        run.out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&run.out.stderr)
    );
    // The workflow command a pull request shows on the line, without code scanning.
    let annotation = "::error file=manifests/bad.yaml,line=7,col=5,title=lbguard [address-type-value] shop/web::[address-type-value] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type is \"Intranet\"";
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("::")).count(),
        1,
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with(annotation)),
        "{stdout}"
    );
    // The playbook is skipped with a note in the log, and no annotation.
    assert!(
        text(&run.out.stderr)
            .contains("./playbook.yml document 1 skipped: not a Kubernetes object (a list)"),
        "{}",
        text(&run.out.stderr)
    );
    // The step summary: the counts, a row per finding, the failure level.
    let summary = &run.step_summary;
    assert!(
        summary.starts_with("### lbguard check\n\n2 Service(s) checked: 1 denied"),
        "{summary}"
    );
    assert!(
        summary
            .contains("| **deny** | `manifests/bad.yaml:7:5` | shop/web | `address-type-value` |"),
        "{summary}"
    );
    assert!(
        summary.contains("**Notes**\n\n- ./playbook.yml document 1 skipped"),
        "{summary}"
    );
    assert!(
        summary.contains("Failure level `deny`: the step fails when a Service is denied. Exit code 1. Report: `reports/lbguard.sarif`."),
        "{summary}"
    );
    // The report's directory was made; the report is there and says so.
    assert!(
        run.github_output.contains("report=reports/lbguard.sarif\n"),
        "{}",
        run.github_output
    );
    let sarif: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/lbguard.sarif")).unwrap(),
    )
    .unwrap();
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

#[test]
fn what_cannot_be_checked_reaches_the_report_the_summary_and_the_log() {
    let dir = repository();
    for (output, file) in [("sarif", "lbguard.sarif"), ("junit", "out/lbguard.xml")] {
        let run = check(
            dir.path(),
            &[
                ("LBGUARD_PATHS", "."),
                ("LBGUARD_OUTPUT", output),
                ("LBGUARD_OUTPUT_FILE", file),
                ("LBGUARD_FAILURE_LEVEL", "none"),
            ],
        );
        // The template is an error at every failure level.
        assert_eq!(run.out.status.code(), Some(2), "{output}");
        let stdout = text(&run.out.stdout);
        assert!(
            stdout.contains(
                "::error title=lbguard::./charts/web/templates/svc.yaml document 1: not valid YAML"
            ),
            "{stdout}"
        );
        assert!(
            text(&run.out.stderr).contains("lbguard check could not check everything (exit 2)"),
            "{}",
            text(&run.out.stderr)
        );
        assert!(
            run.step_summary.contains(
                "**Not checked (the run fails)**\n\n- ./charts/web/templates/svc.yaml document 1: not valid YAML"
            ),
            "{}",
            run.step_summary
        );
        assert!(
            run.github_output.contains(&format!("report={file}\n")),
            "{}",
            run.github_output
        );
        let report = std::fs::read_to_string(dir.path().join(file)).unwrap();
        if output == "sarif" {
            let sarif: Value = serde_json::from_str(&report).unwrap();
            let invocation = &sarif["runs"][0]["invocations"][0];
            assert_eq!(invocation["executionSuccessful"], false);
            assert!(
                invocation["toolExecutionNotifications"][0]["message"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("templates/svc.yaml document 1: not valid YAML")
            );
        } else {
            assert!(report.contains("<error type=\"input\" message=\"./charts/web/templates/svc.yaml document 1: not valid YAML"), "{report}");
        }
    }
    // lbguard stopped before reading anything (a bad flag): no report is named, the summary
    // says so.
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests"),
            ("LBGUARD_ARGS", "--no-such-flag"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(2));
    assert!(
        run.github_output.contains("report=\n"),
        "{}",
        run.github_output
    );
    assert!(
        run.step_summary
            .contains("lbguard could not check (exit 2): see the step's log."),
        "{}",
        run.step_summary
    );
}

#[test]
fn the_report_directory_is_made_or_the_step_says_why_not() {
    let dir = manifests();
    std::fs::write(dir.path().join("taken"), "a file").unwrap();
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/good.yaml"),
            ("LBGUARD_OUTPUT_FILE", "taken/lbguard.sarif"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(2));
    assert!(
        text(&run.out.stderr).contains(
            "::error title=lbguard::cannot write the report taken/lbguard.sarif: its directory taken cannot be created or written"
        ),
        "{}",
        text(&run.out.stderr)
    );
    // Deeper directories are made.
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/good.yaml"),
            ("LBGUARD_OUTPUT", "json"),
            ("LBGUARD_OUTPUT_FILE", "a/b/c/lbguard.json"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(0), "{}", text(&run.out.stderr));
    assert!(dir.path().join("a/b/c/lbguard.json").is_file());
}

#[test]
fn upload_sarif_with_another_output_is_a_warning() {
    let dir = manifests();
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/good.yaml"),
            ("LBGUARD_OUTPUT", "junit"),
            ("LBGUARD_UPLOAD_SARIF", "true"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(0));
    assert!(
        text(&run.out.stdout).contains(
            "::warning title=lbguard::upload-sarif is true, but output is junit: code scanning takes SARIF, so nothing is uploaded"
        ),
        "{}",
        text(&run.out.stdout)
    );
    let run = check(
        dir.path(),
        &[
            ("LBGUARD_PATHS", "manifests/good.yaml"),
            ("LBGUARD_UPLOAD_SARIF", "true"),
        ],
    );
    assert!(!text(&run.out.stdout).contains("::warning"));
}
