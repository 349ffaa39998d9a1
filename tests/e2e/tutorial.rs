//! The getting-started tutorial (`docs/src/tutorial.md`), run as written: every `console`
//! block's `$ ` commands against the real API server with lbguard installed from the
//! tutorial's values, each output compared with the lines the page shows (`...` is any text).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::Env;

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/tutorial.md");

/// One command and the output lines the page shows for it.
#[derive(Debug)]
pub struct Step {
    pub command: String,
    pub expected: Vec<String>,
}

/// The steps of every ```console block, in order.
pub fn steps(page: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut inside = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside && line.trim() == "```console";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Step {
                command: cmd.to_string(),
                expected: Vec::new(),
            });
        } else if let Some(last) = out.last_mut() {
            last.expected.push(line.to_string());
        }
    }
    out
}

/// Whether `line` matches `pattern`, where `...` stands for any text.
fn matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    let line = line.trim_end();
    let mut rest = line;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(k) => rest = &rest[k + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

/// The expected lines appear in the output in order (other lines may come between).
pub fn shows(expected: &[String], output: &str) -> bool {
    let mut lines = output.lines();
    expected
        .iter()
        .all(|want| lines.by_ref().any(|got| matches(want, got)))
}

fn run_step(env: &Env, step: &Step) -> String {
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(assets) = std::env::var_os("KUBEBUILDER_ASSETS") {
        // envtest directories carry kubectl too.
        path = format!("{}:{path}", std::path::Path::new(&assets).display());
    }
    let out = Command::new("bash")
        .args(["-c", &format!("{} 2>&1", step.command)])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("KUBECONFIG", &env.plane.apis[0].kubeconfig)
        .env("PATH", path)
        .output()
        .expect("bash runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub async fn run(env: &mut Env) {
    // Step 5 needs a policy report API, as the page says.
    crate::reports::install_crds(&env.admin[0], "wgpolicyk8s.io").await;
    let kubectl = run_step(
        env,
        &Step {
            command: "command -v kubectl".into(),
            expected: vec![],
        },
    );
    assert!(
        !kubectl.trim().is_empty(),
        "the tutorial needs kubectl on PATH or in KUBEBUILDER_ASSETS"
    );
    let page = std::fs::read_to_string(PAGE).unwrap();
    let steps = steps(&page);
    assert!(steps.len() >= 6, "{steps:?}");
    for step in &steps {
        // Reads may wait for the next audit round; writes run once.
        let read_only = step.command.contains(" get ");
        let until = Instant::now() + Duration::from_secs(if read_only { 40 } else { 0 });
        loop {
            let output = run_step(env, step);
            if shows(&step.expected, &output) {
                break;
            }
            assert!(
                Instant::now() < until,
                "the tutorial says\n$ {}\n{}\nbut it printed\n{output}",
                step.command,
                step.expected.join("\n")
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}
