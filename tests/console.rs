//! Every ```console block of the READMEs and the book runs here, with the built binary as
//! `lbguard` on the PATH and the repository as the working directory, and its output must be
//! the block's, line for line (only uids, times and the checkout's path normalised).
//!
//! A block that cannot run here (it needs a cluster or a cloud account) carries the line
//! `<!-- console: not run: REASON -->` right before its fence; every other block is run,
//! so the count of unmarked blocks that are not run is zero by construction. A block marked
//! `<!-- console: with lbguard serve --dev -->` runs while `lbguard serve --dev` (started
//! here, as the page tells the reader to) answers on its default port.
//! `LBGUARD_BLESS=1 cargo test --test console` writes the real outputs into the pages.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MARK: &str = "<!-- console: not run: ";
const SERVED: &str = "<!-- console: with lbguard serve --dev -->";

/// `lbguard serve --dev` in the checkout, stopped when dropped.
struct DevServer(std::process::Child);

impl DevServer {
    fn start() -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
            // The page's command; metrics on a free port so nothing else must be free.
            .args(["serve", "--dev", "--metrics-addr", "127.0.0.1:0"])
            .current_dir(ROOT)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("lbguard serve --dev starts");
        let server = DevServer(child);
        for _ in 0..100 {
            if run("curl -s --cacert certs/dev/ca.crt https://localhost:8443/readyz") == "ready" {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!("lbguard serve --dev is not ready on localhost:8443 after 20s");
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The READMEs and the book's pages.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = Path::new(ROOT);
    let mut out = vec![
        root.join("README.md"),
        root.join("charts/lbguard/README.md"),
    ];
    walk(&root.join("docs/src"), &mut out);
    for extra in ["CONTRIBUTING.md", "SECURITY.md"] {
        if root.join(extra).exists() {
            out.push(root.join(extra));
        }
    }
    out.sort();
    out
}

/// One console block: where its body starts and ends (line indices), and whether it is marked.
struct Block {
    start: usize,
    end: usize,
    skip: Option<String>,
    /// Runs with `lbguard serve --dev` answering.
    served: bool,
}

fn blocks(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() == "```console" {
            let before = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
            let skip = before
                .and_then(|l| l.trim().strip_prefix(MARK))
                .map(|r| r.trim_end_matches("-->").trim().to_string());
            let served = before.is_some_and(|l| l.trim() == SERVED);
            let end = (i + 1..lines.len())
                .find(|j| lines[*j].trim_end() == "```")
                .unwrap_or(lines.len());
            out.push(Block {
                start: i + 1,
                end,
                skip,
                served,
            });
            i = end;
        }
        i += 1;
    }
    out
}

/// A block's commands (`$ ` lines, `\` continuing them) and the output shown after each.
fn steps(body: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in body {
        if continued && let Some(last) = out.last_mut() {
            last.0.push('\n');
            last.0.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.to_string(), Vec::new()));
            continued = cmd.ends_with('\\');
        } else if let Some(last) = out.last_mut() {
            last.1.push(line.to_string());
        }
    }
    out
}

/// The parts of an output that change from run to run: uids, times, the checkout's path.
fn normalise(text: &str) -> String {
    let mut s = text.replace(ROOT, ".");
    for (pattern, with) in [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "<time>",
        ),
    ] {
        s = replace_all(&s, pattern, with);
    }
    s.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// A small regex stand-in: only the two patterns above are needed, matched by hand so the
/// test needs no regex crate.
fn replace_all(s: &str, pattern: &str, with: &str) -> String {
    let uid = pattern.starts_with("[0-9a-f]");
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let n = if uid {
            uid_len(&b[i..])
        } else {
            time_len(&b[i..])
        };
        if n > 0 {
            out.push_str(with);
            i += n;
        } else {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

fn uid_len(b: &[u8]) -> usize {
    let groups = [8, 4, 4, 4, 12];
    let mut i = 0;
    for (g, n) in groups.iter().enumerate() {
        for _ in 0..*n {
            match b.get(i) {
                Some(c) if c.is_ascii_digit() || (b'a'..=b'f').contains(c) => i += 1,
                _ => return 0,
            }
        }
        if g < 4 {
            if b.get(i) != Some(&b'-') {
                return 0;
            }
            i += 1;
        }
    }
    i
}

fn time_len(b: &[u8]) -> usize {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    for (i, want) in shape.iter().enumerate() {
        let ok = match (want, b.get(i)) {
            (b'd', Some(c)) => c.is_ascii_digit(),
            (w, Some(c)) => w == c,
            _ => false,
        };
        if !ok {
            return 0;
        }
    }
    let mut i = shape.len();
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    if b.get(i) == Some(&b'Z') {
        i += 1;
    }
    i
}

/// Runs one command as the page shows it, with `lbguard` the built binary.
fn run(cmd: &str) -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_lbguard"));
    let dir = bin.parent().unwrap_or(Path::new("."));
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-c", &format!("{cmd} 2>&1")])
        .current_dir(ROOT)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash for `{cmd}`: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_console_block_runs_as_shown() {
    let bless = std::env::var_os("LBGUARD_BLESS").is_some();
    let (mut ran, mut marked, mut wrong) = (0, 0, Vec::new());
    let (mut server, mut served) = (None, 0);
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page
            .strip_prefix(ROOT)
            .unwrap_or(&page)
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        let mut blessed: Vec<String> = Vec::new();
        let mut copied = 0;
        for b in blocks(&lines) {
            if let Some(reason) = &b.skip {
                assert!(
                    reason.len() > 5,
                    "{name}:{}: a not-run mark says why",
                    b.start
                );
                marked += 1;
                continue;
            }
            if b.served && server.is_none() {
                server = Some(DevServer::start());
            }
            served += usize::from(b.served);
            let body = &lines[b.start..b.end];
            let steps = steps(body);
            assert!(
                !steps.is_empty(),
                "{name}:{}: a console block with no `$ ` command",
                b.start
            );
            blessed.extend(lines[copied..b.start].iter().map(|s| s.to_string()));
            for (cmd, shown) in steps {
                ran += 1;
                let got = run(&cmd);
                blessed.push(format!("$ {cmd}"));
                blessed.extend(got.trim_end().lines().map(|l| l.to_string()));
                let want = normalise(&shown.join("\n"));
                if normalise(&got) != want {
                    wrong.push(format!(
                        "{name}:{}: `{cmd}`\n--- the page shows\n{want}\n--- it prints\n{}",
                        b.start,
                        normalise(&got)
                    ));
                }
            }
            copied = b.end;
        }
        if bless && copied > 0 {
            blessed.extend(lines[copied..].iter().map(|s| s.to_string()));
            std::fs::write(&page, blessed.join("\n") + "\n").unwrap();
        }
    }
    assert!(
        wrong.is_empty() || bless,
        "{} console commands print something else than their page shows (LBGUARD_BLESS=1 writes the real output):\n\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
    // The pages run at least these many commands; a parser that finds none must fail.
    assert!(ran >= 10, "only {ran} console commands ran");
    assert!(marked >= 1, "no marked block found: is the mark parsed?");
    assert!(
        served >= 2,
        "the pages' requests to `serve --dev` did not run"
    );
    drop(server);
}

#[test]
fn the_parser_finds_marks_commands_and_outputs() {
    let page = "text\n<!-- console: not run: needs a cluster -->\n```console\n$ kubectl get svc\n```\n\n```console\n$ lbguard rules \\\n  --provider ctyun\nRULE\n$ true\n```\n";
    let lines: Vec<&str> = page.lines().collect();
    let found = blocks(&lines);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].skip.as_deref(), Some("needs a cluster"));
    assert!(found[1].skip.is_none());
    let s = steps(&lines[found[1].start..found[1].end]);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].0, "lbguard rules \\\n  --provider ctyun");
    assert_eq!(s[0].1, vec!["RULE".to_string()]);
    assert!(s[1].1.is_empty());
    assert_eq!(
        normalise("uid 71ddba55-1c2d-4e5f-8a9b-0c1d2e3f4a5b at 2026-12-02T13:43:27Z"),
        "uid <uid> at <time>"
    );
}
