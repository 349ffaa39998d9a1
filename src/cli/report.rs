//! `check`'s reports for CI systems: SARIF 2.1.0 (code scanning shows each finding on the
//! line to change) and JUnit XML (one test case per Service). What is not a finding (a file
//! that could not be read, a skipped document, rules that did not run) is in both too.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::checked::Checked;
use super::run::{Level, Run};
use crate::rules::{Action, registry};

/// The SARIF schema's URI, as its `$id` names it.
pub const SARIF_SCHEMA: &str = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json";

fn level(a: Action) -> &'static str {
    match a {
        Action::Deny => "error",
        Action::Warn => "warning",
        Action::Off => "none",
    }
}

/// A file path as a relative URI reference (RFC 3986: spaces and the like escaped).
fn uri(path: &str) -> String {
    if path == "<stdin>" {
        return "stdin".into();
    }
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The run's errors and notes as SARIF tool execution notifications: code scanning shows
/// them as the tool's status, and a failed run is not read as a clean one.
fn invocation(run: &Run) -> Value {
    let notifications: Vec<Value> = run
        .notices()
        .into_iter()
        .map(|n| {
            json!({
                "level": match n.level {
                    Level::Error => "error",
                    Level::Warning => "warning",
                    Level::Note => "note",
                },
                "message": {"text": n.text},
            })
        })
        .collect();
    json!({
        "executionSuccessful": run.errors.is_empty(),
        "toolExecutionNotifications": notifications,
    })
}

/// One run of lbguard: every rule (title, help, default level), then one result per finding
/// with the file, line and column of the field it names.
pub(super) fn sarif(run: &Run) -> Value {
    let results = run.results;
    let rules: Vec<Value> = registry()
        .iter()
        .map(|r| {
            let providers: Vec<&str> = r.providers.iter().map(|p| p.as_str()).collect();
            json!({
                "id": r.id,
                "name": r.id,
                "shortDescription": {"text": r.title},
                "fullDescription": {"text": format!("{} ({} rule; providers: {})", r.title, r.class.as_str(), providers.join(", "))},
                "help": {"text": format!("{}. Source: {}. Set its action with `rules: {{{}: deny|warn|off}}` in the lbguard config.", r.title, crate::rules::readable(r.source), r.id)},
                "defaultConfiguration": {"level": level(r.default)},
                "properties": {"providers": providers, "class": r.class.as_str()},
            })
        })
        .collect();
    let index: BTreeMap<&str, usize> = registry()
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let mut out = Vec::new();
    for c in results {
        for v in &c.verdict.violations {
            let (line, column) = c.locate(v);
            let mut result = json!({
                "ruleId": v.rule,
                "level": level(v.action),
                "message": {"text": v.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&c.file)},
                        "region": {"startLine": line, "startColumn": column},
                    },
                    "logicalLocations": [{
                        "name": format!("{}/{}", c.input.namespace, c.input.name),
                        "kind": "object",
                    }],
                }],
            });
            if let Some(i) = index.get(v.rule) {
                result["ruleIndex"] = json!(i);
            }
            // Suppressed, not gone: code scanning shows it as dismissed with the reason.
            if let Some(e) = &v.exception {
                result["suppressions"] = json!([{
                    "kind": "external",
                    "status": "accepted",
                    "justification": format!("{} (LBGuardException {}, until {})", e.reason, e.key(), e.expires),
                    "properties": {"exception": e.key(), "expires": e.expires},
                }]);
            }
            out.push(result);
        }
    }
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "lbguard",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation(run)],
            "results": out,
        }],
    })
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to write other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One test suite per file, one test case per Service: denials fail it, warnings go to its
/// output (with the inventory rules that did not run for it). What could not be read is a
/// test case in error in a last suite, `lbguard check`, whose output holds the notes.
pub(super) fn junit(run: &Run) -> String {
    let results = run.results;
    let mut by_file: BTreeMap<&str, Vec<(usize, &Checked)>> = BTreeMap::new();
    for (i, c) in results.iter().enumerate() {
        by_file.entry(c.file.as_str()).or_default().push((i, c));
    }
    let failures = results.iter().filter(|c| !c.verdict.allowed()).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lbguard check\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\">\n",
        results.len() + run.errors.len(),
        run.errors.len()
    );
    let blind_note = run.summary.no_inventory_note().map(|_| {
        "the inventory rules did not run: it reuses a load balancer and no inventory was given (--inventory FILE or --inventory-cloud)".to_string()
    });
    for (file, cases) in by_file {
        let failed = cases.iter().filter(|(_, c)| !c.verdict.allowed()).count();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\">\n",
            xml(file),
            cases.len()
        ));
        for (i, c) in cases {
            let name = format!(
                "{}/{} ({})",
                c.input.namespace,
                c.input.name,
                c.input.operation.as_str()
            );
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\">\n",
                xml(file),
                xml(&name)
            ));
            let lines = |denying: bool| -> Vec<String> {
                c.verdict
                    .violations
                    .iter()
                    .filter(|v| v.denies() == denying && v.action != Action::Off)
                    .map(|v| {
                        let (line, col) = c.locate(v);
                        format!("{file}:{line}:{col}: {}", v.warning())
                    })
                    .collect()
            };
            let denials = lines(true);
            if let Some(first) = c.verdict.denials().next() {
                out.push_str(&format!(
                    "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                    first.rule,
                    xml(&first.message),
                    xml(&denials.join("\n"))
                ));
            }
            let mut warnings = lines(false);
            warnings.extend(c.verdict.notes.iter().cloned());
            if run.blind.get(i).copied().unwrap_or(false) {
                warnings.extend(blind_note.clone());
            }
            if !warnings.is_empty() {
                out.push_str(&format!(
                    "      <system-out>{}</system-out>\n",
                    xml(&warnings.join("\n"))
                ));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    let notes: Vec<String> = run
        .notices()
        .into_iter()
        .filter(|n| n.level != Level::Error)
        .map(|n| n.text)
        .collect();
    if !run.errors.is_empty() || !notes.is_empty() {
        out.push_str(&format!(
            "  <testsuite name=\"lbguard check\" tests=\"{0}\" failures=\"0\" errors=\"{0}\">\n",
            run.errors.len()
        ));
        for e in run.errors {
            // The file and document the message starts with names the case.
            let name = e.split_once(": ").map_or(e.as_str(), |(at, _)| at);
            out.push_str(&format!(
                "    <testcase classname=\"lbguard check\" name=\"{}\">\n      <error type=\"input\" message=\"{}\"/>\n    </testcase>\n",
                xml(name),
                xml(e)
            ));
        }
        if !notes.is_empty() {
            out.push_str(&format!(
                "    <system-out>{}</system-out>\n",
                xml(&notes.join("\n"))
            ));
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_xml_are_escaped() {
        assert_eq!(uri("examples/a b.yaml"), "examples/a%20b.yaml");
        assert_eq!(uri("<stdin>"), "stdin");
        assert_eq!(xml("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot; ");
    }
}
