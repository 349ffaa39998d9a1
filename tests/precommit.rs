//! The pre-commit hooks (.pre-commit-hooks.yaml) run by pre-commit itself in scratch git
//! repositories holding what repositories hold: manifests, a README beside them, list-shaped
//! YAML, a Helm chart. `pre-commit try-repo` runs `lbguard-system` (the lbguard under test on
//! the PATH); the documented `.pre-commit-config.yaml` (docs/src/check.md) is installed and
//! used by real `git commit`s with the source-built `lbguard` hook, whose cargo is a stand-in
//! that records how it is called and installs the lbguard under test (a real build takes
//! minutes). `lbguard-docker` runs in the node suite, where the image is.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LBGUARD: &str = env!("CARGO_BIN_EXE_lbguard");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
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
        .unwrap()
}

fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args);
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn hooks() -> Vec<Value> {
    let yaml = std::fs::read_to_string(format!("{ROOT}/.pre-commit-hooks.yaml")).unwrap();
    serde_saphyr::from_str(&yaml).unwrap()
}

fn example(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/examples/{rel}")).unwrap()
}

/// `version` and the repository's owner, as Cargo.toml says them.
fn package() -> (String, String) {
    let manifest = std::fs::read_to_string(format!("{ROOT}/Cargo.toml")).unwrap();
    let field = |key: &str| {
        manifest
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or_else(|| panic!("Cargo.toml has no {key}"))
            .to_string()
    };
    let repository = field("repository");
    let owner = repository
        .trim_end_matches('/')
        .rsplit('/')
        .nth(1)
        .unwrap()
        .to_lowercase();
    (field("version"), owner)
}

#[test]
fn hooks_pick_yaml_and_json_by_type_and_run_lbguard_check() {
    let hooks = hooks();
    let ids: Vec<&str> = hooks.iter().filter_map(|h| h["id"].as_str()).collect();
    assert_eq!(ids, ["lbguard", "lbguard-system", "lbguard-docker"]);
    for hook in &hooks {
        // By type, with no `files` of their own: a config's `files:` then narrows.
        assert_eq!(
            hook["types_or"],
            serde_json::json!(["yaml", "json"]),
            "{hook}"
        );
        assert!(hook.get("files").is_none(), "{hook}");
        assert_eq!(hook["require_serial"], true, "{hook}");
    }
    // The source hook is a script that installs with the lock file and only lbguard.
    assert_eq!(hooks[0]["language"], "script");
    assert_eq!(hooks[0]["entry"], "scripts/pre-commit-hook check");
    let script = std::fs::read_to_string(format!("{ROOT}/scripts/pre-commit-hook")).unwrap();
    assert!(
        script.contains("cargo install --locked --quiet --path \"$repo\" --bin lbguard --root"),
        "{script}"
    );
    assert_eq!(hooks[1]["language"], "system");
    assert_eq!(hooks[1]["entry"], "lbguard check");
    // The image the release publishes for this version (release.yml:
    // REGISTRY/owner/lbguard:VERSION).
    let (version, owner) = package();
    assert_eq!(hooks[2]["language"], "docker_image");
    assert_eq!(
        hooks[2]["entry"],
        format!("ghcr.io/{owner}/lbguard:{version} check")
    );
}

/// Whether pre-commit is here (under CI=true it must be).
fn have_pre_commit() -> bool {
    if Command::new("pre-commit").arg("--version").output().is_ok() {
        return true;
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true needs pre-commit"
    );
    eprintln!(
        "pre-commit: not run: not installed (scripts/venv installs it into target/venv; put target/venv/bin on PATH)"
    );
    false
}

/// A hook repository: this one's hooks file, the source hook's script and Cargo.toml,
/// committed (pre-commit clones it). Returns its commit.
fn hook_repo(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    for f in [
        ".pre-commit-hooks.yaml",
        "scripts/pre-commit-hook",
        "Cargo.toml",
    ] {
        std::fs::copy(format!("{ROOT}/{f}"), dir.join(f)).unwrap();
    }
    git_ok(dir, &["init", "-q"]);
    git_ok(dir, &["add", "."]);
    git_ok(dir, &["commit", "-q", "-m", "hooks"]);
    git_ok(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// A project repository with `files` written (and staged when `stage`).
fn project(dir: &Path, files: &[(&str, &str)], stage: bool) {
    if !dir.join(".git").exists() {
        std::fs::create_dir_all(dir).unwrap();
        git_ok(dir, &["init", "-q"]);
    }
    for (name, body) in files {
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, body).unwrap();
        if stage {
            git_ok(dir, &["add", name]);
        }
    }
}

/// `pre-commit try-repo HOOKS lbguard-system` in a repository with `staged` staged.
fn try_repo(staged: &[(&str, &str)]) -> Option<Output> {
    if !have_pre_commit() {
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    hook_repo(&hooks);
    let work = tmp.path().join("project");
    project(&work, staged, true);
    let bin_dir = Path::new(LBGUARD).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("pre-commit")
        .args(["try-repo", hooks.to_str().unwrap(), "lbguard-system"])
        .current_dir(&work)
        .env("PATH", path)
        .env("PRE_COMMIT_HOME", tmp.path().join("cache"))
        .env_remove("PRE_COMMIT_ALLOW_NO_CONFIG")
        .output()
        .unwrap();
    Some(out)
}

const TEMPLATE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ include \"web.fullname\" . }}\n{{- if .Values.lb }}\nspec:\n  type: LoadBalancer\n{{- end }}\n";

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
fn staged_good_services_and_the_repositorys_other_files_pass() {
    let good = example("alibaba/good-nlb.yaml");
    let Some(out) = try_repo(&[
        ("deploy/good.yaml", &good),
        (
            "deploy/README.md",
            "# not a manifest: {{ }}\n\nApply with: kubectl\n",
        ),
        ("values.yaml", "replicaCount: 2\n"),
        ("site.yml", "- hosts: all\n  roles: [web]\n"),
        (
            ".pre-commit-hooks.yaml",
            "- id: x\n  name: x\n  entry: x\n  language: system\n",
        ),
        ("list.json", "[1, 2]\n"),
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

#[test]
fn a_staged_helm_template_is_an_error_that_says_what_to_do() {
    let Some(out) = try_repo(&[("charts/web/templates/svc.yaml", TEMPLATE)]) else {
        return;
    };
    let log = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{log}\n{}", text(&out.stderr));
    assert!(
        log.contains("charts/web/templates/svc.yaml document 1: not valid YAML")
            && log.contains("helm template")
            && log.contains("--exclude"),
        "{log}"
    );
}

/// The `.pre-commit-config.yaml` docs/src/check.md shows, with its repository and rev
/// pointed at `hooks` at `rev`.
fn documented_config(hooks: &Path, rev: &str) -> String {
    let page = std::fs::read_to_string(format!("{ROOT}/docs/src/check.md")).unwrap();
    let section = page
        .split_once("\n## pre-commit\n")
        .expect("check.md has a pre-commit section")
        .1;
    let block = section
        .split_once("```yaml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the pre-commit section shows a config")
        .0;
    let config: Value = serde_saphyr::from_str(block).unwrap();
    let repo = &config["repos"][0];
    assert_eq!(repo["hooks"][0]["id"], "lbguard", "{block}");
    assert!(
        repo["repo"].as_str().unwrap().ends_with("/lbguard"),
        "{block}"
    );
    block
        .replace(repo["repo"].as_str().unwrap(), hooks.to_str().unwrap())
        .replace(
            &format!("rev: {}", repo["rev"].as_str().unwrap()),
            &format!("rev: {rev}"),
        )
}

/// The documented config on real commits: the README under manifests/, list-shaped YAML
/// and a chart outside it commit; a denied Service does not. The source hook's build runs
/// once, with --locked and only lbguard.
#[test]
fn the_documented_config_commits_a_real_repository_and_stops_a_denial() {
    if !have_pre_commit() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let hooks = tmp.path().join("hooks");
    let rev = hook_repo(&hooks);
    // cargo as the hook calls it: records the call, and "installs" the lbguard under test.
    let tools = tmp.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let calls = tmp.path().join("cargo-calls");
    std::fs::write(
        tools.join("cargo"),
        format!(
            "#!/bin/sh\necho \"$*\" >> {calls}\nwhile [ \"$1\" != --root ]; do shift; done\n\
             mkdir -p \"$2/bin\" && printf '#!/bin/sh\\nexec {LBGUARD} \"$@\"\\n' > \"$2/bin/lbguard\" \
             && chmod +x \"$2/bin/lbguard\"\n",
            calls = calls.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(tools.join("cargo"))
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = tmp.path().join("project");
    project(
        &work,
        &[(".pre-commit-config.yaml", &documented_config(&hooks, &rev))],
        true,
    );
    let pre_commit = |args: &[&str]| {
        Command::new("pre-commit")
            .args(args)
            .current_dir(&work)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", tmp.path().join("cache"))
            .output()
            .unwrap()
    };
    let out = pre_commit(&["install"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let commit = |message: &str| {
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(["-c", "commit.gpgsign=false", "commit", "-m", message])
            .current_dir(&work)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", tmp.path().join("cache"))
            .output()
            .unwrap()
    };

    let good = example("alibaba/good-nlb.yaml");
    project(
        &work,
        &[
            (
                // Not YAML: what a hook that did not pick files by type would trip on.
                "manifests/README.md",
                "# Manifests\n\nApply them: kubectl apply -f manifests/\n\n- one Service per file\n",
            ),
            ("manifests/good.yaml", &good),
            ("manifests/site.yml", "- hosts: all\n  roles: [web]\n"),
            ("manifests/list.json", "[]\n"),
            ("charts/web/templates/svc.yaml", TEMPLATE),
        ],
        true,
    );
    let out = commit("manifests, a README, lists and a chart");
    let log = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("lbguard check") && log.contains("Passed"),
        "{log}"
    );

    let bad = example("alibaba/bad-address-type-value.yaml");
    project(&work, &[("manifests/bad.yaml", &bad)], true);
    let out = commit("a bad Service");
    let log = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{log}");
    assert!(
        log.contains("manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{log}"
    );
    assert_eq!(git_ok(&work, &["rev-list", "--count", "HEAD"]).trim(), "1");

    // One build, for this rev, locked, of lbguard alone.
    let calls = std::fs::read_to_string(&calls).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0].starts_with("install --locked --quiet --path ")
            && calls[0].contains(" --bin lbguard --root "),
        "{calls:?}"
    );
}
