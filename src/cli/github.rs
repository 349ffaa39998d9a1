//! `check` where a pull request shows it without code scanning: GitHub's workflow commands
//! (`--output github`: one annotation per finding on its file, line and column) and a
//! Markdown report (`--output markdown`: the counts, a table of findings, what was not
//! checked; a job's step summary).

use std::fmt::Write as _;

use super::run::{Level, Run};
use crate::rules::Action;

/// A command's message: `%`, CR and LF escaped.
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: also `:` and `,`.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// A file as the repository names it: GitHub matches annotations against the path from the
/// repository's root (the workspace, where a job's steps start).
fn repo_path(file: &str) -> &str {
    repo_path_in(file, std::env::var("GITHUB_WORKSPACE").ok().as_deref())
}

fn repo_path_in<'a>(file: &'a str, workspace: Option<&str>) -> &'a str {
    let mut f = file;
    if let Some(ws) = workspace.filter(|w| !w.is_empty())
        && let Some(rest) = f.strip_prefix(ws.trim_end_matches('/'))
        && rest.starts_with('/')
    {
        f = &rest[1..];
    }
    while let Some(rest) = f.strip_prefix("./") {
        f = rest;
    }
    f
}

/// One `::error` (deny), `::warning` (warn) or `::notice` (let through by an exception)
/// per finding, then one per error and for rules that did not run. Notes (what was skipped)
/// are left to the log and the summary: a repository's other YAML is not news.
pub(super) fn commands(run: &Run) -> String {
    let mut out = String::new();
    for c in run.results {
        for v in &c.verdict.violations {
            let command = match v.action {
                _ if v.exception.is_some() => "notice",
                Action::Deny => "error",
                Action::Warn => "warning",
                Action::Off => continue,
            };
            let (line, col) = c.locate(v);
            let file = if c.file == "<stdin>" {
                String::new()
            } else {
                format!(
                    "file={},line={line},col={col},",
                    property(repo_path(&c.file))
                )
            };
            let title = format!(
                "lbguard [{}] {}/{}",
                v.rule, c.input.namespace, c.input.name
            );
            let _ = writeln!(
                out,
                "::{command} {file}title={}::{}",
                property(&title),
                data(&v.warning())
            );
        }
    }
    for n in run.notices() {
        let command = match n.level {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => continue,
        };
        let _ = writeln!(out, "::{command} title=lbguard::{}", data(&n.text));
    }
    out
}

/// Text for a Markdown line: one line, no HTML.
fn prose(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\r', '\n'], " ")
}

/// Text for a table cell: also no column breaks.
fn cell(s: &str) -> String {
    prose(s).replace('|', "\\|")
}

/// GitHub renders at most 1 MiB of a step's summary: the table stops well before.
const MAX_ROWS: usize = 500;

/// The counts, one row per finding, then what was not checked and the notes.
pub(super) fn markdown(run: &Run) -> String {
    let mut out = String::from("### lbguard check\n\n");
    let _ = writeln!(out, "{}\n", prose(&run.summary.sentence()));
    let mut rows = Vec::new();
    for c in run.results {
        for v in &c.verdict.violations {
            let verdict = match v.action {
                _ if v.exception.is_some() => "exempt",
                Action::Deny => "**deny**",
                Action::Warn => "warn",
                Action::Off => continue,
            };
            let (line, col) = c.locate(v);
            rows.push(format!(
                "| {verdict} | `{}:{line}:{col}` | {}/{} | `{}` | {} |",
                cell(repo_path(&c.file)).replace('`', "'"),
                cell(&c.input.namespace),
                cell(&c.input.name),
                v.rule,
                cell(&v.warning())
            ));
        }
    }
    if !rows.is_empty() {
        out.push_str("| Verdict | Where | Service | Rule | Finding |\n|---|---|---|---|---|\n");
        for row in rows.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "{row}");
        }
        if rows.len() > MAX_ROWS {
            let _ = writeln!(
                out,
                "\n{} more finding(s): see the report or the log.",
                rows.len() - MAX_ROWS
            );
        }
        out.push('\n');
    }
    let notices = run.notices();
    for (level, head) in [
        (Level::Error, "Not checked (the run fails)"),
        (Level::Warning, "Did not run"),
        (Level::Note, "Notes"),
    ] {
        let lines: Vec<&str> = notices
            .iter()
            .filter(|n| n.level == level)
            .map(|n| n.text.as_str())
            .collect();
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "**{head}**\n");
        for l in lines.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {}", prose(l));
        }
        if lines.len() > MAX_ROWS {
            let _ = writeln!(out, "- and {} more", lines.len() - MAX_ROWS);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_cells_are_escaped() {
        assert_eq!(data("50% a\nb\r"), "50%25 a%0Ab%0D");
        assert_eq!(property("a: b, c"), "a%3A b%2C c");
        assert_eq!(repo_path_in("././deploy/a.yaml", None), "deploy/a.yaml");
        let ws = Some("/home/runner/work/r/r/");
        assert_eq!(
            repo_path_in("/home/runner/work/r/r/deploy/a.yaml", ws),
            "deploy/a.yaml"
        );
        assert_eq!(
            repo_path_in("/home/runner/work/r/rx/a.yaml", ws),
            "/home/runner/work/r/rx/a.yaml"
        );
        assert_eq!(cell("a|b <c>\nd & e"), "a\\|b &lt;c&gt; d &amp; e");
    }
}
