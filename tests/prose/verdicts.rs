//! Example files the prose gives a verdict: "`examples/<provider>/bad-<rule-id>.yaml` is
//! denied by that rule", "`good-*.yaml` is allowed", "`examples/inventory/deny-*.yaml` is
//! allowed unless given the inventory (`--inventory examples/inventory/inventory.yaml`)".
//! Each file a pattern names is checked alone with `lbguard check` (with the flags the
//! sentence gives it), and must get that verdict, from that rule. A file several patterns
//! of one paragraph name is judged by the most specific one ("`bad-*.yaml` is denied;
//! `bad-annotation-ccm-version-*.yaml` is allowed").

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::{Page, ROOT, fail, spans};

const PROVIDERS: &[&str] = &["ctyun", "alibaba", "huawei", "volcengine"];

#[derive(Debug, Clone)]
pub struct Claim {
    pub line: usize,
    /// A glob under the repository: `*` for any part of a name, `<provider>` a cloud's dir.
    pub pattern: String,
    pub denied: bool,
    /// "by that rule": the rule the file is named after; "by `id`": that one.
    pub rule: Option<Option<String>>,
    /// The flags the verdict holds with (empty: none).
    pub flags: Vec<String>,
    /// "unless given ...": the verdict without the flags, the other one with them.
    pub unless: bool,
}

/// Splits prose into clauses at ". " and "; " outside code spans.
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut code) = (0, false);
    let b = text.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'`' => code = !code,
            b'.' | b';' if !code && b.get(i + 1) == Some(&b' ') => {
                out.push(&text[start..=i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    out.push(&text[start.min(text.len())..]);
    out
}

fn is_example(span: &str) -> bool {
    (span.ends_with(".yaml") || span.ends_with(".yml") || span.ends_with('/'))
        && (span.starts_with("examples/")
            || ["bad-", "good-", "deny-"]
                .iter()
                .any(|p| span.starts_with(p)))
}

/// The claims of one stretch of prose. In a clause, the files named before a verdict (and
/// after the one before it) get it: "`a` is denied by that rule, `b` is allowed".
pub fn claims(text: &str, line: usize) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut dir = String::from("examples/");
    for clause in clauses(text) {
        let lower = clause.to_lowercase();
        let mut verdicts: Vec<(usize, &str)> = Vec::new();
        for v in ["is denied", "are denied", "is allowed", "are allowed"] {
            verdicts.extend(lower.match_indices(v).map(|(i, _)| (i, v)));
        }
        verdicts.sort();
        let flags: Vec<String> = spans(clause)
            .into_iter()
            .filter(|(_, s)| s.starts_with("--") && s.contains(' '))
            .flat_map(|(_, s)| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect();
        let unless = lower.contains(" unless ");
        let with = !unless
            && !lower.contains("without")
            && (lower.contains(" with ") || lower.contains("given"));
        let mut files: Vec<(usize, String)> = Vec::new();
        for (at, span) in spans(clause) {
            if !is_example(span) {
                continue;
            }
            let path = if span.starts_with("examples/") {
                span.to_string()
            } else {
                format!("{dir}{span}")
            };
            if let Some(i) = path.rfind('/') {
                dir = path[..=i].to_string();
            }
            if !span.ends_with('/') {
                files.push((at, path));
            }
        }
        let mut from = 0;
        for (i, phrase) in verdicts {
            let after = &clause[i + phrase.len()..];
            let rule = if after.starts_with(" by that rule") {
                Some(None)
            } else {
                after
                    .strip_prefix(" by `")
                    .and_then(|r| r.split('`').next())
                    .map(|id| Some(id.to_string()))
            };
            for (_, pattern) in files.iter().filter(|(at, _)| (from..i).contains(at)) {
                out.push(Claim {
                    line,
                    pattern: pattern.clone(),
                    denied: phrase.ends_with("denied"),
                    rule: rule.clone(),
                    flags: if unless || with {
                        flags.clone()
                    } else {
                        Vec::new()
                    },
                    unless,
                });
            }
            from = i + phrase.len();
        }
    }
    out
}

/// Whether `name` matches a glob whose only wildcard is `*`.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.starts_with(head)
                && (0..=name.len() - head.len()).any(|k| glob(tail, &name[head.len() + k..]))
        }
    }
}

/// The example files a pattern names.
fn files(pattern: &str) -> Vec<String> {
    let pattern = pattern
        .replace("<rule-id>", "*")
        .replace("<rule>", "*")
        .replace("<what>", "*");
    let dirs: Vec<String> = match pattern.strip_prefix("examples/<provider>/") {
        Some(rest) => PROVIDERS
            .iter()
            .map(|p| format!("examples/{p}/{rest}"))
            .collect(),
        None => vec![pattern],
    };
    let mut out = Vec::new();
    for p in dirs {
        let (dir, name) = p.rsplit_once('/').unwrap();
        let Ok(entries) = std::fs::read_dir(Path::new(ROOT).join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if glob(name, &n) {
                out.push(format!("{dir}/{n}"));
            }
        }
    }
    out.sort();
    out
}

/// How specific a pattern is: its literal characters.
fn specificity(pattern: &str) -> usize {
    pattern
        .replace("<provider>", "")
        .replace(['*', '<', '>'], "")
        .len()
}

/// The rule a file is named after: `bad-<rule-id>[-<what>].yaml`, `deny-<rule-id>.yaml`.
fn named_rule(file: &str) -> Option<String> {
    let name = file.rsplit('/').next()?.strip_suffix(".yaml")?;
    let rest = name.strip_prefix("bad-").or(name.strip_prefix("deny-"))?;
    lbguard::rules::registry()
        .iter()
        .map(|r| r.id)
        .filter(|id| rest == *id || rest.starts_with(&format!("{id}-")))
        .max_by_key(|id| id.len())
        .map(str::to_string)
}

/// `lbguard check FLAGS FILE`: denied, and the rules that deny.
fn verdict(
    flags: &[String],
    file: &str,
    cache: &mut BTreeMap<String, (bool, String)>,
) -> (bool, String) {
    let key = format!("{} {file}", flags.join(" "));
    cache
        .entry(key)
        .or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
                .arg("check")
                .args(flags)
                .arg(file)
                .current_dir(ROOT)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "lbguard check {flags:?} {file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.code() == Some(1), text)
        })
        .clone()
}

/// Checks every claim of a page's paragraphs; returns what is wrong and how many files.
pub fn judge(page: &Page, cache: &mut BTreeMap<String, (bool, String)>) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for para in &page.paras {
        let claims = claims(&para.text, para.line);
        // The most specific claim on each file.
        let mut best: BTreeMap<String, &Claim> = BTreeMap::new();
        for c in &claims {
            let found = files(&c.pattern);
            if found.is_empty() {
                wrong.push(fail(
                    &page.name,
                    c.line,
                    format!("`{}` names no file", c.pattern),
                ));
            }
            for f in found {
                let e = best.entry(f).or_insert(c);
                if specificity(&c.pattern) > specificity(&e.pattern) {
                    *e = c;
                }
            }
        }
        for (file, c) in best {
            let mut cases = vec![(Vec::new(), c.denied)];
            if c.unless && !c.flags.is_empty() {
                cases.push((c.flags.clone(), !c.denied));
            } else if !c.flags.is_empty() {
                cases = vec![(c.flags.clone(), c.denied)];
            }
            for (flags, denied) in cases {
                checked += 1;
                let (got, text) = verdict(&flags, &file, cache);
                let rule = match &c.rule {
                    Some(Some(id)) => Some(id.clone()),
                    Some(None) if denied => {
                        named_rule(&file).or(Some("<a rule in its name>".into()))
                    }
                    _ => None,
                };
                let by_rule = rule
                    .as_ref()
                    .is_none_or(|id| text.contains(&format!(": deny [{id}]")));
                if got != denied || (denied && !by_rule) {
                    wrong.push(fail(
                        &page.name,
                        c.line,
                        format!(
                            "`{file}` is said to be {}{} with `{}`, but lbguard check says:\n{}",
                            if denied { "denied" } else { "allowed" },
                            rule.map(|r| format!(" by {r}")).unwrap_or_default(),
                            flags.join(" "),
                            text.trim_end()
                        ),
                    ));
                }
            }
        }
    }
    (wrong, checked)
}

pub fn check(pages: &[Page]) -> (Vec<String>, usize) {
    let mut cache = BTreeMap::new();
    let (mut wrong, mut checked) = (Vec::new(), 0);
    for page in pages {
        let (w, n) = judge(page, &mut cache);
        wrong.extend(w);
        checked += n;
    }
    (wrong, checked)
}

#[test]
fn a_wrong_verdict_is_caught() {
    let page = super::parse(
        "p.md",
        "`examples/ctyun/good-*.yaml` is denied. `examples/alibaba/bad-enum-values.yaml` is allowed. `examples/inventory/deny-address-type-match.yaml` is denied. `examples/cluster/deny-*.yaml` is allowed unless given the other Services (`--inventory examples/inventory/inventory.yaml`). `examples/ctyun/bad-ip-mode-value.yaml` is denied by `address-type-value`.\n",
    );
    let (wrong, n) = judge(&page, &mut BTreeMap::new());
    assert_eq!(n, 6, "{wrong:#?}");
    assert_eq!(wrong.len(), 5, "{wrong:#?}");
}

#[test]
fn right_verdicts_pass() {
    let page = super::parse(
        "p.md",
        "Examples: `examples/ctyun/` (`bad-<rule-id>*.yaml` is denied by that rule, `good-*.yaml` is allowed; `bad-annotation-ccm-version-*.yaml` is allowed with no config). `examples/cluster/deny-<rule-id>.yaml` is allowed unless given the other Services (`--cluster-state examples/cluster/state.yaml`).\n",
    );
    let (wrong, n) = judge(&page, &mut BTreeMap::new());
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(n, 7);
}
