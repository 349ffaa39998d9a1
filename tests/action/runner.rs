//! The Action as a workflow runs it: every step of action.yml in order, its `env:` and `if:`
//! evaluated from the inputs (`with:` over the defaults), the github context and the earlier
//! steps' outputs, each `run:` with bash in the workspace, GITHUB_* files between them; a
//! failed step skips the rest but for `!cancelled()` ones. A `uses:` step is not run: the
//! emulation says whether it would be and with what.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{ROOT, Release, TARGETS, text};

const SHA: &str = "89abcdef0123456789abcdef0123456789abcdef";

struct Runner {
    /// The checkout the workflow runs in (GITHUB_WORKSPACE).
    workspace: PathBuf,
    /// RUNNER_TEMP, the GITHUB_* files.
    dir: tempfile::TempDir,
    /// The action as the runner keeps it: _actions/o/lbguard/SHA.
    action: PathBuf,
    github: BTreeMap<&'static str, String>,
    env: Vec<(&'static str, String)>,
}

/// What one step did.
struct Step {
    id: String,
    ran: bool,
    ok: bool,
    log: String,
    /// A `uses:` step's `with:`, evaluated.
    with: BTreeMap<String, String>,
}

impl Runner {
    /// A workspace, and this checkout's action pinned at SHA, whose release the REST API
    /// says it is.
    fn new(release: &Release, workspace: &Path) -> Runner {
        let dir = tempfile::tempdir().unwrap();
        let action = dir.path().join(format!("_actions/o/lbguard/{SHA}"));
        std::fs::create_dir_all(action.join("scripts/action")).unwrap();
        std::fs::copy(format!("{ROOT}/action.yml"), action.join("action.yml")).unwrap();
        for f in ["check.sh", "install.sh"] {
            std::fs::copy(
                format!("{ROOT}/scripts/action/{f}"),
                action.join("scripts/action").join(f),
            )
            .unwrap();
        }
        let manifest = std::fs::read_to_string(format!("{ROOT}/Cargo.toml")).unwrap();
        let ours = format!("version = \"{}\"", env!("CARGO_PKG_VERSION"));
        std::fs::write(
            action.join("Cargo.toml"),
            manifest.replacen(&ours, "version = \"1.2.3\"", 1),
        )
        .unwrap();
        let api = release.path("api/repos/o/lbguard/commits/v1.2.3");
        std::fs::create_dir_all(api.parent().unwrap()).unwrap();
        std::fs::write(api, format!("{SHA}\n")).unwrap();
        std::fs::create_dir(dir.path().join("temp")).unwrap();
        let github = BTreeMap::from([
            ("action_repository", "o/lbguard".to_string()),
            ("action_ref", SHA.to_string()),
            ("token", "ghs_t0ken".to_string()),
        ]);
        let server = release.url("");
        let env = vec![
            ("RUNNER_OS", "Linux".to_string()),
            ("RUNNER_ARCH", "X64".to_string()),
            ("RUNNER_TEMP", dir.path().join("temp").display().to_string()),
            (
                "GITHUB_SERVER_URL",
                server.trim_end_matches('/').to_string(),
            ),
            ("GITHUB_API_URL", release.url("api")),
            ("GITHUB_WORKSPACE", workspace.display().to_string()),
            ("GITHUB_ACTION_PATH", action.display().to_string()),
            ("GITHUB_PATH", dir.path().join("path").display().to_string()),
            (
                "GITHUB_STEP_SUMMARY",
                dir.path().join("summary").display().to_string(),
            ),
        ];
        Runner {
            workspace: workspace.to_path_buf(),
            dir,
            action,
            github,
            env,
        }
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("summary")).unwrap_or_default()
    }

    /// Every step of the action with `with`, in order; then the action's outputs.
    fn uses(&self, with: &[(&str, &str)]) -> (Vec<Step>, BTreeMap<String, String>) {
        let yaml = std::fs::read_to_string(self.action.join("action.yml")).unwrap();
        let action: Value = serde_saphyr::from_str(&yaml).unwrap();
        let mut ctx: BTreeMap<String, String> = BTreeMap::new();
        for (name, input) in action["inputs"].as_object().unwrap() {
            let default = input["default"].as_str().unwrap_or_default();
            ctx.insert(format!("inputs.{name}"), default.to_string());
        }
        for (k, v) in with {
            assert!(ctx.contains_key(&format!("inputs.{k}")), "no input {k}");
            ctx.insert(format!("inputs.{k}"), v.to_string());
        }
        for (k, v) in &self.github {
            ctx.insert(format!("github.{k}"), v.clone());
        }
        let mut steps = Vec::new();
        let mut failed = false;
        for (i, step) in action["runs"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let id = step["id"]
                .as_str()
                .map_or(format!("step{i}"), str::to_string);
            let condition = step["if"].as_str().unwrap_or("success()");
            let wanted = condition_holds(condition, &ctx, failed);
            let evaluate = |m: &Value| -> BTreeMap<String, String> {
                m.as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), expand(v.as_str().unwrap(), &ctx)))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut done = Step {
                id: id.clone(),
                ran: wanted,
                ok: true,
                log: String::new(),
                with: evaluate(&step["with"]),
            };
            if wanted && let Some(run) = step["run"].as_str() {
                let output = self.dir.path().join(format!("output-{i}"));
                let out = Command::new("bash")
                    .args(["-e", "-c", run])
                    .current_dir(&self.workspace)
                    .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
                    .envs(evaluate(&step["env"]))
                    .env("GITHUB_OUTPUT", &output)
                    .output()
                    .unwrap();
                done.ok = out.status.success();
                done.log = format!("{}{}", text(&out.stdout), text(&out.stderr));
                for line in std::fs::read_to_string(&output).unwrap_or_default().lines() {
                    if let Some((k, v)) = line.split_once('=') {
                        ctx.insert(format!("steps.{id}.outputs.{k}"), v.to_string());
                    }
                }
                failed |= !done.ok;
            }
            steps.push(done);
        }
        let outputs = action["outputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, o)| (k.clone(), expand(o["value"].as_str().unwrap(), &ctx)))
            .collect();
        (steps, outputs)
    }
}

/// `${{ NAME }}` replaced by its value (unset: empty, as the runner does).
fn expand(s: &str, ctx: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("a closed expression") + at;
        let name = rest[at + 3..end].trim();
        out.push_str(ctx.get(name).map_or("", String::as_str));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The `if:` forms action.yml uses: `${{ A && B }}` of `!cancelled()`, `success()` and
/// `NAME == 'x'` / `NAME != 'x'`.
fn condition_holds(condition: &str, ctx: &BTreeMap<String, String>, failed: bool) -> bool {
    let inner = condition
        .trim()
        .trim_start_matches("${{")
        .trim_end_matches("}}");
    inner.split("&&").map(str::trim).all(|term| match term {
        "!cancelled()" | "always()" => true,
        "success()" => !failed,
        _ => {
            let (name, want, equal) = if let Some((n, w)) = term.split_once("==") {
                (n, w, true)
            } else if let Some((n, w)) = term.split_once("!=") {
                (n, w, false)
            } else {
                panic!("an if: this emulation does not read: {term}");
            };
            let value = ctx.get(name.trim()).map_or("", String::as_str);
            (value == want.trim().trim_matches('\'')) == equal
        }
    }) && (!failed || inner.contains("!cancelled()") || inner.contains("always()"))
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        (
            "manifests/README.md",
            "# Manifests\n\nApply with: kubectl apply -f .\n",
        ),
        ("ansible/site.yml", "- hosts: all\n  roles: [web]\n"),
        (
            "charts/web/templates/svc.yaml",
            "kind: Service\nmetadata:\n  name: {{ .Release.Name }}\n",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    for (from, to) in [
        ("alibaba/bad-address-type-value.yaml", "manifests/bad.yaml"),
        ("alibaba/good-nlb.yaml", "manifests/good.yaml"),
    ] {
        std::fs::copy(format!("{ROOT}/examples/{from}"), dir.path().join(to)).unwrap();
    }
    dir
}

/// `uses: o/lbguard@SHA` on a repository with manifests, Markdown, a playbook and a chart:
/// the pinned release runs, the chart is left out, the denial fails the step with an
/// annotation and a summary row, and the report is uploaded after the failure.
#[test]
fn a_pinned_action_checks_a_real_repository_from_install_to_upload() {
    let release = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    let ws = workspace();
    let runner = Runner::new(&release, ws.path());
    let (steps, outputs) = runner.uses(&[
        ("exclude", "charts/**"),
        ("output-file", "reports/lbguard.sarif"),
        ("upload-sarif", "true"),
    ]);
    let step = |id: &str| steps.iter().find(|s| s.id == id).unwrap();

    let install = step("install");
    assert!(install.ok, "{}", install.log);
    assert!(
        install
            .log
            .contains(&format!("commit {SHA} is release v1.2.3")),
        "{}",
        install.log
    );
    assert_eq!(outputs["version"], "1.2.3");

    let check = step("check");
    assert!(
        check.ran && !check.ok,
        "a denial fails the step:\n{}",
        check.log
    );
    assert!(
        check.log.lines().any(|l| l.starts_with(
            "::error file=manifests/bad.yaml,line=7,col=5,title=lbguard [address-type-value] shop/web::"
        )),
        "{}",
        check.log
    );
    assert!(
        check.log.contains("./ansible/site.yml document 1 skipped"),
        "{}",
        check.log
    );
    assert!(!check.log.contains("templates/svc.yaml"), "{}", check.log);
    assert_eq!(outputs["exit-code"], "1");
    assert_eq!(outputs["denied"], "1");
    assert_eq!(outputs["report"], "reports/lbguard.sarif");
    assert!(ws.path().join("reports/lbguard.sarif").is_file());
    let summary = runner.summary();
    assert!(
        summary
            .contains("| **deny** | `manifests/bad.yaml:7:5` | shop/web | `address-type-value` |"),
        "{summary}"
    );

    // After the failed check, the upload runs, with the report.
    let upload = steps.last().unwrap();
    assert!(upload.ran, "the upload step is skipped");
    assert_eq!(upload.with["sarif_file"], "reports/lbguard.sarif");

    // Asked for JUnit: no upload, and a warning says why.
    let (steps, _) = runner.uses(&[
        ("exclude", "charts/**"),
        ("output", "junit"),
        ("upload-sarif", "true"),
    ]);
    assert!(!steps.last().unwrap().ran);
    let check = steps.iter().find(|s| s.id == "check").unwrap();
    assert!(
        check
            .log
            .contains("::warning title=lbguard::upload-sarif is true, but output is junit"),
        "{}",
        check.log
    );
}

/// A commit the REST API does not know as a release: the install step fails and says to set
/// `version:`; nothing else runs.
#[test]
fn a_commit_that_is_no_release_stops_at_install() {
    let release = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    let ws = workspace();
    let runner = Runner::new(&release, ws.path());
    std::fs::write(
        release.path("api/repos/o/lbguard/commits/v1.2.3"),
        "0000000000000000000000000000000000000000\n",
    )
    .unwrap();
    let (steps, outputs) = runner.uses(&[]);
    let install = &steps[0];
    assert!(!install.ok);
    assert!(
        install.log.contains("which is not release v1.2.3"),
        "{}",
        install.log
    );
    assert!(steps[1..].iter().all(|s| !s.ran), "later steps ran");
    assert_eq!(outputs["version"], "");
}
