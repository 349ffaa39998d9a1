//! `check`'s findings as text for people and as one JSON document; SARIF and JUnit are in
//! `report`.

use serde::Serialize;
use serde_json::Value;

use super::checked::Checked;
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

#[derive(Debug, Default, Serialize)]
pub(super) struct Summary {
    pub(super) checked: usize,
    pub(super) skipped: usize,
    /// Services another load balancer implementation serves: not lbguard's.
    pub(super) foreign: usize,
    pub(super) denied: usize,
    pub(super) warned: usize,
    /// Findings an `--exceptions` object let through.
    pub(super) exempted: usize,
    /// Services that reuse a load balancer, checked without an inventory: the inventory
    /// rules could not run for them.
    #[serde(skip)]
    pub(super) no_inventory: usize,
    /// Their providers: only those providers' inventory rules are named.
    #[serde(skip)]
    pub(super) no_inventory_providers: std::collections::BTreeSet<crate::vocab::provider::Provider>,
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

pub(super) fn print_json(results: &[Checked], summary: &Summary) {
    let items: Vec<ResultJson> = results
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
    let doc = serde_json::json!({ "results": items, "summary": summary });
    outln!("{doc:#}");
}

pub(super) fn print_text(results: &[Checked], summary: &Summary, paint: Paint) {
    for c in results {
        let head = if c.verdict.allowed() {
            paint.wrap("32", "ALLOWED")
        } else {
            paint.wrap("31;1", "DENIED ")
        };
        outln!(
            "{head} {}/{} ({}) {}",
            c.input.namespace,
            c.input.name,
            c.input.operation.as_str(),
            c.origin
        );
        for d in &c.applied {
            outln!(
                "  {} {} = \"{}\" ({})",
                paint.wrap("36", "default"),
                d.field,
                d.value,
                d.reason
            );
        }
        for n in &c.verdict.notes {
            outln!("  {} {n}", paint.wrap("33", "note   "));
        }
        for v in &c.verdict.violations {
            let tag = match v.action {
                _ if v.exception.is_some() => paint.wrap("36", "exempt"),
                Action::Deny => paint.wrap("31", "deny"),
                _ => paint.wrap("33", "warn"),
            };
            let (line, col) = c.locate(v);
            outln!("{}:{line}:{col}: {tag} {}", c.file, v.warning());
        }
    }
    outln!(
        "{} Service(s) checked: {} denied, {} allowed with warnings; {} other object(s) skipped{}",
        summary.checked,
        summary.denied,
        summary.warned,
        summary.skipped,
        match summary.foreign {
            0 => String::new(),
            n => format!("; {n} Service(s) of another load balancer implementation skipped"),
        }
    );
    if summary.exempted > 0 {
        outln!(
            "{} finding(s) let through by LBGuardExceptions",
            summary.exempted
        );
    }
    if summary.no_inventory > 0 {
        outln!("{}", no_inventory_line(summary));
    }
}

/// Which inventory rules did not run, for the providers of the Services that reuse a load
/// balancer. `lb-exists` is apart: a file cannot say a load balancer is missing, only the
/// cloud's API can.
fn no_inventory_line(summary: &Summary) -> String {
    let (exists, facts): (Vec<&str>, Vec<&str>) = crate::rules::registry()
        .iter()
        .filter(|r| matches!(r.class, crate::rules::Class::Inventory))
        .filter(|r| {
            r.providers
                .iter()
                .any(|p| summary.no_inventory_providers.contains(p))
        })
        .map(|r| r.id)
        .partition(|id| *id == "lb-exists");
    let mut line = format!(
        "{} Service(s) reuse a load balancer, but no inventory was given:",
        summary.no_inventory
    );
    if !facts.is_empty() {
        line.push_str(&format!(
            " {} did not run (--inventory FILE or --inventory-cloud)",
            facts.join(", ")
        ));
    }
    if !exists.is_empty() {
        line.push_str(if facts.is_empty() { " " } else { "; " });
        line.push_str("lb-exists did not run (--inventory-cloud: only the cloud can say a load balancer does not exist)");
    }
    line
}
