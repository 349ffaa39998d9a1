//! Defaults the prose states. A rule said to warn or deny ("`annotation-ccm-version`
//! warns", "denied by `lb-exists`", "`a`, `b` and `c` deny") has that default action. A
//! config or chart value said to default to something ("`webhook.failurePolicy: Fail` (the
//! default)", "`metrics.secure` (default)", "`claims.timeout` (2 s)", "`x` (default `warn`)",
//! a table with a Default column) has that default, in the chart's values.yaml or, for
//! lbguard's own config (`config.` in the chart), in the binary's defaults.

use std::path::Path;

use serde_json::Value;

use super::{Page, fail, spans};

fn rule_default(id: &str) -> Option<&'static str> {
    lbguard::rules::find(id).map(|r| r.default.as_str())
}

/// What the words after a rule id (or a list of them) say it does.
fn verb_after(rest: &str) -> Option<&'static str> {
    let mut rest = rest.trim_start();
    // A parenthesis between the id and the verb: `x` (the version rule) warns.
    if rest.starts_with('(') {
        let end = rest.find(')')?;
        rest = rest[end + 1..].trim_start();
    }
    for adverb in ["only ", "always ", "still ", "also ", "then "] {
        rest = rest.strip_prefix(adverb).unwrap_or(rest);
    }
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match word.as_str() {
        "warns" | "warn" => Some("warn"),
        "denies" | "deny" => Some("deny"),
        _ => None,
    }
}

/// Every claim "rule R acts A" in a stretch of prose: (rule, action).
pub fn rule_claims(text: &str) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    let spans = spans(text);
    let mut i = 0;
    while i < spans.len() {
        let (at, id) = spans[i];
        if rule_default(id).is_none() {
            i += 1;
            continue;
        }
        // Passive: "denied by `x`", "warned by `x`", unless negated.
        let before = &text[..at.saturating_sub(1)];
        for (phrase, action) in [("denied by ", "deny"), ("warned by ", "warn")] {
            if let Some(head) = before.strip_suffix(phrase) {
                let negated = ["not ", "never ", "no longer "]
                    .iter()
                    .any(|n| head.ends_with(n));
                if !negated {
                    out.push((id.to_string(), action));
                }
            }
        }
        // Active, for one id or a list: `a`, `b` and `c` warn.
        let mut group = vec![id];
        let mut end = at + id.len() + 1;
        while let Some(&(next_at, next)) = spans.get(i + group.len()) {
            let gap = &text[end..next_at.saturating_sub(1)];
            if rule_default(next).is_some() && [", ", " and ", ", and ", " or "].contains(&gap) {
                group.push(next);
                end = next_at + next.len() + 1;
            } else {
                break;
            }
        }
        if let Some(action) = verb_after(&text[end.min(text.len())..]) {
            out.extend(group.iter().map(|id| (id.to_string(), action)));
        }
        i += group.len();
    }
    out
}

pub fn rules(pages: &[Page]) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages {
        for para in &page.paras {
            for (id, said) in rule_claims(&para.text) {
                checked += 1;
                let default = rule_default(&id).unwrap();
                if default != said {
                    wrong.push(fail(
                        &para.page,
                        para.line,
                        format!("`{id}` is said to {said}, but its default is {default}"),
                    ));
                }
            }
        }
    }
    (wrong, checked)
}

/// The chart's values and lbguard's default config.
pub struct Defaults {
    values: Value,
    config: Value,
}

impl Defaults {
    pub fn load() -> Self {
        let root = Path::new(super::ROOT);
        let values = lbguard::yaml::from_str(
            &std::fs::read_to_string(root.join("charts/lbguard/values.yaml")).unwrap(),
        )
        .unwrap();
        let config =
            serde_json::to_value(lbguard::engine::parse_config("", "defaults").unwrap()).unwrap();
        Defaults { values, config }
    }

    /// The default of a dotted key: the chart's value, else the config's (`config.` or bare).
    fn get(&self, key: &str) -> Option<&Value> {
        fn walk<'a>(mut v: &'a Value, path: &str) -> Option<&'a Value> {
            for part in path.split('.') {
                v = v.as_object()?.get(part)?;
            }
            Some(v)
        }
        walk(&self.values, key)
            .or_else(|| walk(&self.config, key.strip_prefix("config.").unwrap_or(key)))
    }
}

/// A duration in milliseconds: `5m`, `1500ms`, `2 s`, `1.5 s`, `300000ms`.
fn millis(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let factor = match unit.trim() {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    Some(n * factor)
}

/// Whether a stated value is the default (`key`: a number of seconds reads as a duration).
fn same(key: &str, default: &Value, said: &str) -> bool {
    let said = said.trim().trim_matches(['`', '"', '\'']);
    if key.ends_with("Seconds")
        && let (Some(n), Some(ms)) = (default.as_f64(), millis(said))
    {
        return n * 1000.0 == ms;
    }
    match default {
        Value::Array(a) if a.is_empty() => said == "[]",
        Value::Object(m) if m.is_empty() => said == "{}",
        Value::Bool(b) => match said {
            "true" | "on" => *b,
            "false" | "off" => !*b,
            _ => false,
        },
        Value::Number(n) => said
            .replace(',', "")
            .parse::<f64>()
            .is_ok_and(|s| Some(s) == n.as_f64()),
        Value::String(s) => s == said || millis(s).is_some_and(|d| millis(said) == Some(d)),
        Value::Null => ["null", "none", "unset"].contains(&said),
        _ => false,
    }
}

/// A value as prose writes it: one token (`warn`, `5m`, `10,000`), or a number and a unit.
fn value_like(s: &str) -> bool {
    let s = s.trim().trim_matches('`');
    !s.is_empty() && (!s.contains(' ') || millis(s).is_some()) && !s.contains(['`', ':', '(', ')'])
}

/// What the words right after a key's code span say its default is.
fn stated_after(rest: &str) -> Option<String> {
    let rest = rest.trim_start();
    for (lead, then) in [(", default ", ""), (", on by default", "true")] {
        if let Some(r) = rest.strip_prefix(lead) {
            if !then.is_empty() {
                return Some(then.to_string());
            }
            let v: String = r
                .chars()
                .take_while(|c| !matches!(c, ')' | ',' | ';' | ' '))
                .collect();
            return value_like(&v).then_some(v);
        }
    }
    let inner = rest.strip_prefix('(')?.split(')').next()?;
    match inner.trim() {
        "default" | "the default" | "on by default" | "the chart's default" => {
            return Some("true".to_string());
        }
        _ => {}
    }
    for lead in ["default: ", "default "] {
        if let Some(i) = inner.find(lead) {
            let before = &inner[..i];
            if before.is_empty() || before.ends_with("; ") || before.ends_with(", ") {
                let v: String = inner[i + lead.len()..]
                    .chars()
                    .take_while(|c| !matches!(c, ',' | ';'))
                    .collect();
                return value_like(&v).then(|| v.trim().to_string());
            }
        }
    }
    if let Some(v) = inner.strip_suffix(" by default") {
        return value_like(v).then(|| v.to_string());
    }
    value_like(inner).then(|| inner.trim().to_string())
}

/// Every claim "key K defaults to V" in a stretch of prose: (key, value).
pub fn value_claims(text: &str, defaults: &Defaults) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (at, span) in spans(text) {
        let rest = &text[(at + span.len() + 1).min(text.len())..];
        // `key: value` (the default)
        if let Some((k, v)) = span.split_once(": ").or_else(|| span.split_once('='))
            && k.contains('.')
            && defaults.get(k).is_some()
        {
            let r = rest.trim_start();
            if ["(default)", "(the default)", ", the default", "by default"]
                .iter()
                .any(|p| r.starts_with(p))
            {
                out.push((k.to_string(), v.to_string()));
            }
            continue;
        }
        if span.contains('.')
            && !span.contains(' ')
            && defaults
                .get(span)
                .is_some_and(|v| !v.is_object() && !v.is_array())
            && let Some(v) = stated_after(rest)
        {
            out.push((span.to_string(), v));
        }
    }
    // A table row under a Default column: | `key` | `value` | ...
    let cells: Vec<&str> = text.trim_matches('|').split(" | ").map(str::trim).collect();
    if text.starts_with('|') && cells.len() >= 3 {
        let key = cells[0].trim_matches('`');
        if key.contains('.') && defaults.get(key).is_some() && value_like(cells[1]) {
            out.push((key.to_string(), cells[1].to_string()));
        }
    }
    out
}

pub fn values(pages: &[Page]) -> (Vec<String>, usize) {
    let defaults = Defaults::load();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages {
        let mut under_default_column = false;
        for para in &page.paras {
            if para.text.starts_with('|') {
                let header = para.text.to_lowercase();
                if header.contains("| default |") {
                    under_default_column = header.split(" | ").nth(1) == Some("default");
                    continue;
                }
            } else {
                under_default_column = false;
            }
            for (key, said) in value_claims(&para.text, &defaults) {
                if para.text.starts_with('|')
                    && !under_default_column
                    && said == cells_1(&para.text)
                {
                    continue;
                }
                checked += 1;
                let default = defaults.get(&key).unwrap();
                if !same(&key, default, &said) {
                    wrong.push(fail(
                        &para.page,
                        para.line,
                        format!("`{key}` is said to default to {said}, but it is {default}"),
                    ));
                }
            }
        }
    }
    (wrong, checked)
}

/// A table row's second cell.
fn cells_1(row: &str) -> String {
    row.trim_matches('|')
        .split(" | ")
        .nth(1)
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn a_wrong_default_is_caught() {
    let page = super::parse(
        "p.md",
        "`annotation-ccm-version` denies old ones. `lb-exists`, `address-type-match` and `ip-mode-version` warn.\n\nThe loser is warned by `listener-port-unique`.\n\n`webhook.failurePolicy: Ignore` (the default) lets writes in. `metrics.secure` (default false). `config.claims.timeout` (5 s) bounds it.\n\n| Key | Default | Meaning |\n|---|---|---|\n| `exceptions.maxDays` | `60` | cap |\n",
    );
    let (rules, n) = rules(std::slice::from_ref(&page));
    assert_eq!(n, 5);
    assert_eq!(rules.len(), 5, "{rules:?}");
    let (values, n) = values(&[page]);
    assert_eq!(n, 4);
    assert_eq!(values.len(), 4, "{values:?}");
}

#[test]
fn right_defaults_pass() {
    let page = super::parse(
        "p.md",
        "`annotation-ccm-version` warns (set it to `deny`). `lb-exists` (with the cloud) denies. `x` is not denied by `lb-exists`.\n\n`webhook.failurePolicy: Fail` (the default). `metrics.secure` (default), `inventory.cloud.timeout` (1500ms), `claims.timeout` (2 s), `inventory.unknownLoadBalancer` (`deny`, `warn` or `off`; default `warn`).\n\n| Key | Default | Meaning |\n|---|---|---|\n| `exceptions.maxDays` | `30` | cap |\n\n| mode | what |\n|---|---|\n| `certificates.mode` | `secret` |\n",
    );
    let (rules, n) = rules(std::slice::from_ref(&page));
    assert!(rules.is_empty(), "{rules:?}");
    assert_eq!(n, 2);
    let (values, n) = values(&[page]);
    assert!(values.is_empty(), "{values:?}");
    assert_eq!(n, 6);
}
