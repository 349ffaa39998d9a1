//! The getting-started tutorial (`docs/src/tutorial.md`), run as written on the node: the
//! `$ ` commands of every `console` block marked as needing a cluster (the unmarked ones run
//! offline in tests/console.rs), the install included, with exactly
//! `examples/tutorial-values.yaml` and the image the chart names by default (the one built
//! from the Dockerfile and loaded into the node). Each command's output must be the lines the
//! page shows, normalising only ages, uids and timestamps.

use std::time::{Duration, Instant};

use super::{Node, ROOT};

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/tutorial.md");

/// One command and the output lines the page shows for it.
#[derive(Debug)]
pub struct Step {
    pub command: String,
    pub expected: Vec<String>,
}

/// What marks a block tests/console.rs does not run (it needs a cluster).
const MARK: &str = "<!-- console: not run: ";

/// The steps of every ```console block marked as needing a cluster, in order.
pub fn steps(page: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let (mut inside, mut fenced, mut marked) = (false, false, false);
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            inside = !fenced && marked && line.trim() == "```console";
            fenced = !fenced;
            continue;
        }
        if !fenced && !line.trim().is_empty() {
            marked = line.trim().starts_with(MARK);
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

/// A token that is an age as kubectl prints it (`7s`, `2m5s`, `3h`, `4d`, `<unknown>`).
fn is_age(t: &str) -> bool {
    if t == "<unknown>" {
        return true;
    }
    let mut digits = false;
    let mut units = 0;
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits = true;
        } else if "smhdy".contains(c) && digits {
            digits = false;
            units += 1;
        } else {
            return false;
        }
    }
    !digits && units > 0
}

/// A UUID (8-4-4-4-12 hex digits).
fn is_uid(t: &str) -> bool {
    let parts: Vec<&str> = t.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// An RFC 3339 timestamp (`2026-12-01T15:40:03Z`).
fn is_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && t.trim_end_matches(['"', ',']).ends_with('Z')
}

/// `line` with ages, uids and timestamps replaced by placeholders, trailing space dropped.
pub fn normalise(line: &str) -> String {
    if let Some(rest) = line.strip_prefix("LAST DEPLOYED: ") {
        let _ = rest;
        return "LAST DEPLOYED: <time>".into();
    }
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let core = token.trim_matches(|c: char| "\"',()[]{}".contains(c));
        if !core.is_empty() && (is_age(core) || is_uid(core) || is_timestamp(core)) {
            let placeholder = if is_uid(core) {
                "<uid>"
            } else if is_timestamp(core) {
                "<time>"
            } else {
                "<age>"
            };
            out.push_str(&token.replace(core, placeholder));
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    for c in line.chars() {
        if c.is_whitespace() {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out.trim_end().to_string()
}

/// Whether `output` is exactly the expected lines, up to ages, uids and timestamps.
pub fn same(expected: &[String], output: &str) -> bool {
    let got: Vec<String> = output.lines().map(normalise).collect();
    let want: Vec<String> = expected.iter().map(|l| normalise(l)).collect();
    got == want
}

pub async fn run(node: &mut Node) {
    // Step 5 needs a policy report API, as the page says (Kyverno or Policy Reporter install
    // it in a real cluster).
    let crds = std::env::var("LBGUARD_E2E_CRDS")
        .expect("LBGUARD_E2E_CRDS: the policy report CRDs' directory (../shared/envtest/crds)");
    node.ok(&format!(
        "kubectl apply -f {crds}/wgpolicyk8s.io_policyreports.yaml && \
         kubectl wait --for condition=established --timeout=30s crd/policyreports.wgpolicyk8s.io"
    ));
    let page = std::fs::read_to_string(PAGE).unwrap();
    let steps = steps(&page);
    assert!(
        steps.iter().any(|s| s.command.starts_with("helm install")),
        "the install is part of the page's console blocks"
    );
    assert!(steps.len() >= 8, "{steps:?}");
    for step in &steps {
        // Reads may wait for the next audit round; writes run once, or again when the API
        // server could not reach the webhook yet (nothing was written then).
        let read_only = step.command.starts_with("kubectl") && step.command.contains(" get ");
        let start = Instant::now();
        loop {
            let output = node.sh(&step.command).text;
            if same(&step.expected, &output) {
                break;
            }
            let unreached = output.contains("failed calling webhook");
            let wait = if read_only {
                45
            } else if unreached {
                10
            } else {
                0
            };
            assert!(
                start.elapsed() < Duration::from_secs(wait),
                "the tutorial ({ROOT}/docs/src/tutorial.md) says\n$ {}\n{}\nbut it printed\n{output}",
                step.command,
                step.expected.join("\n")
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    node.ok("kubectl delete -f $LBGUARD_E2E_CRDS/wgpolicyk8s.io_policyreports.yaml");
}

/// The normalisation itself: only ages, uids and timestamps change, and extra lines count.
pub fn check_normalise() {
    {
        assert_eq!(
            normalise("lbguard   1   0   2   0   0   12s  "),
            "lbguard   1   0   2   0   0   <age>"
        );
        assert_eq!(
            normalise("uid: 71ddba55-1b2c-4d5e-8f90-0123456789ab"),
            "uid: <uid>"
        );
        assert_eq!(normalise("at \"2026-12-01T15:40:03Z\","), "at \"<time>\",");
        assert_eq!(
            normalise("LAST DEPLOYED: Tue Dec  1 15:40:00 2026"),
            "LAST DEPLOYED: <time>"
        );
        assert_eq!(normalise("port 80s3x stays"), "port 80s3x stays");
        assert_eq!(normalise("service/web created"), "service/web created");
        assert!(!same(&["a".into()], "a\nb"));
        assert!(same(&["x 5m".into()], "x 2m10s\n"));
    }
    // Only the marked blocks are the node's; the unmarked one runs in tests/console.rs.
    let page = "```console\n$ lbguard plan x.yaml\nplan\n```\n\n<!-- console: not run: needs a cluster -->\n```console\n$ kubectl get svc\nNAME\n```\n\n```yaml\n$ no\n```\n";
    let s = steps(page);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].command, "kubectl get svc");
    assert_eq!(s[0].expected, vec!["NAME".to_string()]);
}
