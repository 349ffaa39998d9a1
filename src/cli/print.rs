//! `check`'s findings as text for people and as one JSON document; SARIF and JUnit are in
//! `report`, GitHub's workflow commands and Markdown in `github`.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::run::Run;
use crate::rules::Action;

#[derive(Debug, Serialize)]
struct Violation<'a> {
    rule: &'a str,
    action: Action,
    message: &'a str,
    field: &'a str,
    line: usize,
    column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<&'a crate::engine::exceptions::Applied>,
}

#[derive(Debug, Serialize)]
struct ResultJson<'a> {
    namespace: String,
    name: String,
    operation: &'static str,
    allowed: bool,
    violations: Vec<Violation<'a>>,
    defaults: Value,
    warnings: Vec<String>,
    file: &'a str,
}

pub(super) struct Paint(pub(super) bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

pub(super) fn json(run: &Run) -> String {
    let items: Vec<ResultJson> = run
        .results
        .iter()
        .map(|c| ResultJson {
            namespace: c.input.namespace.clone(),
            name: c.input.name.clone(),
            operation: c.input.operation.as_str(),
            allowed: c.verdict.allowed(),
            violations: c
                .verdict
                .violations
                .iter()
                .map(|v| {
                    let (line, column) = c.locate(v);
                    Violation {
                        rule: v.rule,
                        action: v.action,
                        message: &v.message,
                        field: &v.field,
                        line,
                        column,
                        exception: v.exception.as_ref(),
                    }
                })
                .collect(),
            defaults: serde_json::to_value(&c.patch).unwrap_or(Value::Array(vec![])),
            // What `kubectl apply` prints: the mutating webhook's lines, then the validating's.
            warnings: c
                .applied
                .iter()
                .map(|d| d.warning())
                .chain(c.verdict.notes.iter().cloned())
                .collect(),
            file: &c.origin,
        })
        .collect();
    let notes: Vec<String> = run
        .notes
        .iter()
        .cloned()
        .chain(run.summary.no_inventory_note())
        .collect();
    let doc = serde_json::json!({
        "results": items,
        "summary": run.summary,
        "errors": run.errors,
        "notes": notes,
    });
    format!("{doc:#}\n")
}

pub(super) fn text(run: &Run, paint: Paint) -> String {
    let mut out = String::new();
    for c in run.results {
        let head = if c.verdict.allowed() {
            paint.wrap("32", "ALLOWED")
        } else {
            paint.wrap("31;1", "DENIED ")
        };
        let _ = writeln!(
            out,
            "{head} {}/{} ({}) {}",
            c.input.namespace,
            c.input.name,
            c.input.operation.as_str(),
            c.origin
        );
        for d in &c.applied {
            let _ = writeln!(
                out,
                "  {} {} = \"{}\" ({})",
                paint.wrap("36", "default"),
                d.field,
                d.value,
                d.reason
            );
        }
        for n in &c.verdict.notes {
            let _ = writeln!(out, "  {} {n}", paint.wrap("33", "note   "));
        }
        for v in &c.verdict.violations {
            let tag = match v.action {
                _ if v.exception.is_some() => paint.wrap("36", "exempt"),
                Action::Deny => paint.wrap("31", "deny"),
                _ => paint.wrap("33", "warn"),
            };
            let (line, col) = c.locate(v);
            let _ = writeln!(out, "{}:{line}:{col}: {tag} {}", c.file, v.warning());
        }
    }
    let _ = writeln!(out, "{}", run.summary.sentence());
    if run.summary.exempted > 0 {
        let _ = writeln!(
            out,
            "{} finding(s) let through by LBGuardExceptions",
            run.summary.exempted
        );
    }
    if let Some(note) = run.summary.no_inventory_note() {
        let _ = writeln!(out, "{note}");
    }
    out
}
