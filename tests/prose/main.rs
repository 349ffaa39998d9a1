//! The book's sentences, checked against what the binary and the chart answer: a `--flag`
//! named with a command is one of that command's (flags.rs); a rule said to warn or deny
//! has that default, and a config or chart value said to default to something does
//! (defaults.rs); an example file said to be denied or allowed is (verdicts.rs). Each part
//! has a test that plants a wrong sentence and sees it fail.
//!
//! The pages: README, the chart's README, CONTRIBUTING, SECURITY, certs/README.md and the
//! book. Generated tables (`<!-- rules:start -->`, `<!-- sources:start -->`) and command
//! output in ```console blocks are the binary's own words and are left out.

use std::path::{Path, PathBuf};

mod defaults;
mod flags;
mod verdicts;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A stretch of prose: one paragraph, list item or table row, code spans kept in backticks.
#[derive(Debug, Clone)]
pub struct Para {
    pub page: String,
    pub line: usize,
    pub text: String,
}

/// One command of a fenced block (lines continued with `\` joined).
#[derive(Debug, Clone)]
pub struct CodeLine {
    pub page: String,
    pub line: usize,
    pub text: String,
    /// The fence's language: `""` for a plain block (a synopsis), `sh`, `console`...
    pub lang: String,
}

#[derive(Debug, Default)]
pub struct Page {
    pub name: String,
    pub paras: Vec<Para>,
    pub code: Vec<CodeLine>,
}

/// Every page the checks read.
fn pages() -> Vec<Page> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = Path::new(ROOT);
    let mut files = Vec::new();
    walk(&root.join("docs/src"), &mut files);
    for f in [
        "README.md",
        "charts/lbguard/README.md",
        "CONTRIBUTING.md",
        "SECURITY.md",
        "certs/README.md",
    ] {
        files.push(root.join(f));
    }
    files.sort();
    files
        .iter()
        .map(|f| {
            let name = f.strip_prefix(root).unwrap().display().to_string();
            parse(&name, &std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// A page split into prose stretches and fenced commands.
pub fn parse(name: &str, text: &str) -> Page {
    let mut page = Page {
        name: name.to_string(),
        ..Page::default()
    };
    let mut para: Option<Para> = None;
    let mut fence: Option<String> = None;
    let mut generated = false;
    let mut pending: Option<CodeLine> = None;
    let flush = |para: &mut Option<Para>, page: &mut Page| {
        if let Some(p) = para.take() {
            page.paras.push(p);
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if let Some(lang) = &fence {
            if trimmed.starts_with("```") {
                fence = None;
                continue;
            }
            let lang = lang.clone();
            code_line(name, i + 1, line, &lang, &mut pending, &mut page.code);
            continue;
        }
        if let Some(lang) = trimmed.strip_prefix("```") {
            flush(&mut para, &mut page);
            fence = Some(lang.trim().to_string());
            continue;
        }
        if trimmed.starts_with("<!-- rules:start") || trimmed.starts_with("<!-- sources:start") {
            generated = true;
        }
        if trimmed.starts_with("<!-- rules:end") || trimmed.starts_with("<!-- sources:end") {
            generated = false;
            continue;
        }
        if generated || trimmed.starts_with("<!--") {
            continue;
        }
        let starts_item = trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with('|')
            || trimmed.starts_with('#')
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if trimmed.is_empty() || starts_item {
            flush(&mut para, &mut page);
        }
        if trimmed.is_empty() {
            continue;
        }
        match &mut para {
            Some(p) => {
                p.text.push(' ');
                p.text.push_str(trimmed);
            }
            None => {
                para = Some(Para {
                    page: name.to_string(),
                    line: i + 1,
                    text: trimmed.to_string(),
                })
            }
        }
    }
    flush(&mut para, &mut page);
    page
}

/// Collects the commands of a fenced block: `$ ` lines of console blocks (not their output),
/// every line of sh and plain blocks. Data (yaml, json, ...) has no commands.
fn code_line(
    page: &str,
    line: usize,
    text: &str,
    lang: &str,
    pending: &mut Option<CodeLine>,
    out: &mut Vec<CodeLine>,
) {
    if !["", "sh", "bash", "console", "text"].contains(&lang) {
        return;
    }
    let continues = pending.is_some()
        || (lang != "console"
            && text.starts_with(char::is_whitespace)
            && text.trim_start().starts_with(['[', '-']));
    let body = if continues {
        Some(text.trim())
    } else if lang == "console" {
        text.strip_prefix("$ ")
    } else {
        Some(text.trim())
    };
    let Some(body) = body else { return };
    // A comment is not a command.
    let body = match body.find(" # ") {
        Some(i) => &body[..i],
        None if body.starts_with('#') => "",
        None => body,
    };
    let open = body.ends_with('\\');
    let body = body.trim_end_matches('\\');
    match pending {
        Some(p) => {
            p.text.push(' ');
            p.text.push_str(body);
        }
        None if continues && !out.is_empty() && lang != "console" => {
            let last = out.pop().unwrap();
            *pending = Some(CodeLine {
                text: format!("{} {body}", last.text),
                ..last
            });
        }
        None => {
            *pending = Some(CodeLine {
                page: page.to_string(),
                line,
                text: body.to_string(),
                lang: lang.to_string(),
            })
        }
    }
    if !open && let Some(p) = pending.take() {
        out.push(p);
    }
}

/// The code spans of a stretch of prose, with their byte offsets in it.
pub fn spans(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(a) = text[rest..].find('`') {
        let start = rest + a + 1;
        let Some(b) = text[start..].find('`') else {
            break;
        };
        out.push((start, &text[start..start + b]));
        rest = start + b + 1;
    }
    out
}

/// A finding: where, and what is wrong.
pub fn fail(page: &str, line: usize, what: String) -> String {
    format!("{page}:{line}: {what}")
}

fn assert_none(kind: &str, wrong: Vec<String>, checked: usize, at_least: usize) {
    assert!(
        wrong.is_empty(),
        "{} {kind}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        checked >= at_least,
        "only {checked} {kind} checked: is the parser finding them?"
    );
}

#[test]
fn every_flag_belongs_to_its_command() {
    let (wrong, checked) = flags::check(&pages());
    assert_none(
        "flags named with a command that has no such flag",
        wrong,
        checked,
        100,
    );
}

#[test]
fn every_rule_said_to_warn_or_deny_does_by_default() {
    let (wrong, checked) = defaults::rules(&pages());
    assert_none(
        "rules said to act otherwise than by default",
        wrong,
        checked,
        5,
    );
}

#[test]
fn every_value_said_to_default_to_something_does() {
    let (wrong, checked) = defaults::values(&pages());
    assert_none(
        "stated defaults that are not the defaults",
        wrong,
        checked,
        30,
    );
}

#[test]
fn every_example_said_to_be_denied_or_allowed_is() {
    let (wrong, checked) = verdicts::check(&pages());
    assert_none(
        "example verdicts the binary does not give",
        wrong,
        checked,
        40,
    );
}

#[test]
fn the_parser_splits_prose_commands_and_generated_tables() {
    let page = parse(
        "p.md",
        "A first\nparagraph `lbguard check`.\n\n- an item\n- another\n\n```console\n$ lbguard check \\\n  --provider ctyun x.yaml\noutput --not-a-flag\n```\n\n```\nlbguard check [--config FILE]\n              [--output text]\n```\n<!-- rules:start -->\n| `x` | warns |\n<!-- rules:end -->\n| row |\n",
    );
    let texts: Vec<&str> = page.paras.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "A first paragraph `lbguard check`.",
            "- an item",
            "- another",
            "| row |"
        ]
    );
    let code: Vec<&str> = page.code.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        code,
        [
            "lbguard check  --provider ctyun x.yaml",
            "lbguard check [--config FILE] [--output text]"
        ]
    );
    assert_eq!(spans("a `b` c `d e`"), [(3, "b"), (9, "d e")]);
}
