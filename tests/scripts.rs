//! The test command's own scripts: shellcheck-clean, and no Python package goes into the
//! system's Python (a stock Debian/Ubuntu python3 refuses that, PEP 668): `scripts/venv`
//! alone installs, into target/venv, with that environment's own interpreter.

use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const SCRIPTS: &[&str] = &[
    ".ci/run",
    "scripts/test",
    "scripts/venv",
    "scripts/bench-e2e",
    "scripts/bench-http",
    "scripts/rules-table",
];

#[test]
fn the_test_scripts_pass_shellcheck() {
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
        eprintln!("shellcheck: not run: not installed (scripts/venv installs it)");
        return;
    }
    let out = Command::new("shellcheck")
        .args(["--shell=bash", "--severity=style"])
        .args(SCRIPTS)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every `pip install` of the scripts and CI is scripts/venv's, through target/venv's python.
#[test]
fn only_the_venv_installs_python_packages() {
    let mut files: Vec<String> = SCRIPTS.iter().map(|s| s.to_string()).collect();
    for dir in ["scripts", "scripts/action", ".ci", "fuzz"] {
        for e in std::fs::read_dir(format!("{ROOT}/{dir}"))
            .unwrap()
            .flatten()
        {
            if e.path().is_file() {
                files.push(format!("{dir}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    files.sort();
    files.dedup();
    let mut installs = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(format!("{ROOT}/{f}")) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            if line.contains("pip install") || line.contains("pip3 install") {
                installs.push(format!("{f}: {}", line.trim()));
            }
        }
    }
    assert_eq!(
        installs,
        [
            r#"scripts/venv: pip() { "$py" -m pip install --quiet --disable-pip-version-check "$@"; }"#
        ],
        "a pip install outside scripts/venv's environment"
    );
    let venv = std::fs::read_to_string(format!("{ROOT}/scripts/venv")).unwrap();
    assert!(venv.contains("venv=$PWD/target/venv") && venv.contains("py=$venv/bin/python3"));
    let test = std::fs::read_to_string(format!("{ROOT}/scripts/test")).unwrap();
    assert!(
        test.contains("scripts/venv\nexport PATH=\"$PWD/target/venv/bin:$PATH\""),
        "scripts/test makes the environment and puts it first on PATH"
    );
    let ci = std::fs::read_to_string(format!("{ROOT}/.ci/run")).unwrap();
    assert!(
        ci.contains("EXTERNALLY-MANAGED") && ci.contains("export LBGUARD_PYTHON=$debian_python"),
        "CI makes the environment from a Python that enforces PEP 668"
    );
}
