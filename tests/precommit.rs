//! The pre-commit hooks (.pre-commit-hooks.yaml) run by pre-commit itself (`pre-commit
//! try-repo`) in a scratch git repository, on its staged manifests. `lbguard-system` runs
//! the lbguard under test; the `lbguard` hook (language: rust) builds the hook repository
//! with `cargo install`, minutes of compiling, so only its declaration is checked here.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LBGUARD: &str = env!("CARGO_BIN_EXE_lbguard");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

fn hooks() -> Vec<Value> {
    let yaml = std::fs::read_to_string(format!("{ROOT}/.pre-commit-hooks.yaml")).unwrap();
    serde_saphyr::from_str(&yaml).unwrap()
}

#[test]
fn both_hooks_run_lbguard_check_on_manifests() {
    let hooks = hooks();
    let ids: Vec<&str> = hooks.iter().filter_map(|h| h["id"].as_str()).collect();
    assert_eq!(ids, ["lbguard", "lbguard-system"]);
    for hook in &hooks {
        assert_eq!(hook["entry"], "lbguard check", "{hook}");
        assert_eq!(hook["files"], r"\.(ya?ml|json)$", "{hook}");
    }
    assert_eq!(hooks[0]["language"], "rust");
    assert_eq!(hooks[1]["language"], "system");
    // `language: rust` installs the crate's binaries: the package must build one named lbguard.
    let manifest = std::fs::read_to_string(format!("{ROOT}/Cargo.toml")).unwrap();
    assert!(manifest.contains("[[bin]]\nname = \"lbguard\"\n"));
}

/// `pre-commit try-repo HOOKS lbguard-system` in a repository with `staged` staged.
fn try_repo(staged: &[(&str, &str)]) -> Option<Output> {
    if Command::new("pre-commit")
        .arg("--version")
        .output()
        .is_err()
    {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true needs pre-commit"
        );
        eprintln!("pre-commit: not run: not installed (pip install pre-commit)");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The hook repository: this one's hooks file, committed (try-repo reads a git repo).
    let hook_repo = tmp.path().join("hooks");
    std::fs::create_dir(&hook_repo).unwrap();
    std::fs::copy(
        format!("{ROOT}/.pre-commit-hooks.yaml"),
        hook_repo.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(&hook_repo, &["init", "-q"]);
    git(&hook_repo, &["add", "."]);
    git(&hook_repo, &["commit", "-q", "-m", "hooks"]);

    let project = tmp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    git(&project, &["init", "-q"]);
    for (name, from) in staged {
        let file = project.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, from).unwrap();
    }
    git(&project, &["add", "."]);

    let bin_dir = Path::new(LBGUARD).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("pre-commit")
        .args(["try-repo", hook_repo.to_str().unwrap(), "lbguard-system"])
        .current_dir(&project)
        .env("PATH", path)
        .env("PRE_COMMIT_HOME", tmp.path().join("cache"))
        .env_remove("PRE_COMMIT_ALLOW_NO_CONFIG")
        .output()
        .unwrap();
    Some(out)
}

fn example(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/examples/{rel}")).unwrap()
}

#[test]
fn a_staged_bad_service_fails_the_commit_with_lbguards_message() {
    let bad = example("alibaba/bad-address-type-value.yaml");
    let good = example("alibaba/good-nlb.yaml");
    let Some(out) = try_repo(&[("deploy/bad.yaml", &bad), ("deploy/good.yaml", &good)]) else {
        return;
    };
    let log = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{log}\n{}", text(&out.stderr));
    assert!(
        log.contains("lbguard check....") && log.contains("Failed"),
        "{log}"
    );
    assert!(
        log.contains(
            "deploy/bad.yaml:7:5: deny [address-type-value] \
             service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type is \"Intranet\""
        ),
        "{log}"
    );
}

#[test]
fn staged_good_services_and_other_files_pass() {
    let good = example("alibaba/good-nlb.yaml");
    let other = "replicaCount: 2\n";
    let Some(out) = try_repo(&[
        ("deploy/good.yaml", &good),
        ("values.yaml", other),
        ("README.md", "# not a manifest: {{ }}\n"),
    ]) else {
        return;
    };
    let log = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{log}\n{}", text(&out.stderr));
    assert!(
        log.contains("lbguard check....") && log.contains("Passed"),
        "{log}"
    );
}
