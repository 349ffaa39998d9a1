//! Every `--flag` a page names with an lbguard command is one of that command's: in a
//! command line (`lbguard check --inventory-cloud`, `cargo run --release -- serve --dev`),
//! in a code span, or bare in the prose after the command it belongs to (`lbguard serve`
//! options: `--addr`, ...). A page about one command (check.md, local.md, export-vap.md)
//! names its flags without repeating the command.

use std::collections::BTreeSet;

use clap::CommandFactory;

use super::{CodeLine, Page, fail, spans};

/// Whose flags a stretch of text names.
#[derive(Debug, Clone, PartialEq)]
pub enum Ctx {
    /// An lbguard subcommand, as its path (`["inventory", "dump"]`).
    Lbguard(Vec<String>),
    /// Another tool (helm, kubectl, curl, cargo's own flags...): not lbguard's to check.
    Other,
    /// No command named.
    Unknown,
}

/// The command a page is about, for flags it names alone.
fn page_default(page: &str) -> Ctx {
    let sub = match page {
        "docs/src/check.md" => "check",
        "docs/src/local.md" => "serve",
        "docs/src/export-vap.md" => "export-vap",
        _ => return Ctx::Unknown,
    };
    Ctx::Lbguard(vec![sub.to_string()])
}

/// The long flags of the subcommand at `path` (with `--help`), or `None` for no such command.
pub fn flags_of(path: &[String]) -> Option<BTreeSet<String>> {
    // Built, so that clap's own `--help` and `--version` are there.
    let mut cmd = lbguard::cli::Cli::command();
    cmd.build();
    for p in path {
        cmd = cmd.find_subcommand(p)?.clone();
    }
    let mut out: BTreeSet<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect();
    out.insert("--help".to_string());
    Some(out)
}

fn is_subcommand(path: &[String], word: &str) -> bool {
    let mut cmd = lbguard::cli::Cli::command();
    for p in path {
        match cmd.find_subcommand(p) {
            Some(c) => cmd = c.clone(),
            None => return false,
        }
    }
    cmd.find_subcommand(word).is_some()
}

/// The flag a word is, if it is one: `--output`, from `[--output`, `--tls-cert=FILE`, `--x,`.
fn flag(word: &str) -> Option<String> {
    let w = word.trim_start_matches(['[', '(', '`', '"', '\'']);
    let rest = w.strip_prefix("--")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    let name = name.trim_end_matches('-');
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase()))
        .then(|| format!("--{name}"))
}

/// One command: whose it is, and the flags that belong to it. `span`: a code span in prose,
/// where a bare subcommand (`check --inventory-cloud`) stands for lbguard's.
pub fn command(text: &str, span: bool) -> (Ctx, Vec<String>) {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len()
        && (["sudo", "exec", "time", "(", "$(", "{"].contains(&words[i])
            || (words[i].contains('=') && words[i].starts_with(|c: char| c.is_ascii_uppercase())))
    {
        i += 1;
    }
    let Some(first) = words.get(i) else {
        return (Ctx::Unknown, Vec::new());
    };
    let base = first
        .trim_matches(['"', '\'', '(', '`'])
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let flags_from =
        |j: usize| -> Vec<String> { words[j..].iter().filter_map(|w| flag(w)).collect() };
    let lbguard_at = |mut j: usize| -> (Ctx, Vec<String>) {
        let mut path: Vec<String> = Vec::new();
        while let Some(w) = words.get(j) {
            if !is_subcommand(&path, w) {
                break;
            }
            path.push(w.to_string());
            j += 1;
        }
        (Ctx::Lbguard(path), flags_from(j))
    };
    if base == "lbguard" || base == "$lbguard" {
        return lbguard_at(i + 1);
    }
    if base == "cargo" && words.get(i + 1) == Some(&"run") {
        // cargo's own flags come before `--`, lbguard's after it; another binary's
        // (`--bin lbguard-bench`) are not lbguard's.
        let other_bin = words
            .windows(2)
            .any(|w| w[0] == "--bin" && w[1].trim_matches('`') != "lbguard");
        if other_bin {
            return (Ctx::Other, Vec::new());
        }
        return match words.iter().position(|w| *w == "--") {
            Some(j) => lbguard_at(j + 1),
            None => (Ctx::Other, Vec::new()),
        };
    }
    if flag(first).is_some() {
        return (Ctx::Unknown, flags_from(i));
    }
    if span && is_subcommand(&[], base) && words.iter().any(|w| flag(w).is_some()) {
        return lbguard_at(i);
    }
    (Ctx::Other, Vec::new())
}

/// The pieces of a command line: ` | `, `&&`, `||`, `;` and `$(` start another command.
fn pieces(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let words: Vec<&str> = line.split_whitespace().collect();
    for w in words {
        if ["|", "&&", "||", ";"].contains(&w) {
            out.push(String::new());
            continue;
        }
        if let Some(rest) = w.strip_prefix("\"$(").or(w.strip_prefix("$(")) {
            out.push(rest.to_string());
            continue;
        }
        let last = out.last_mut().unwrap();
        last.push(' ');
        last.push_str(w);
    }
    out
}

/// A flag named with an lbguard command that does not have it.
fn judge(ctx: &Ctx, flags: &[String], at: (&str, usize), wrong: &mut Vec<String>) -> usize {
    let Ctx::Lbguard(path) = ctx else { return 0 };
    let name = format!("lbguard {}", path.join(" "));
    let Some(known) = flags_of(path) else {
        wrong.push(fail(at.0, at.1, format!("`{name}` is no lbguard command")));
        return 0;
    };
    for f in flags {
        if !known.contains(f) {
            wrong.push(fail(
                at.0,
                at.1,
                format!("`{f}` is not a flag of `{}`", name.trim_end()),
            ));
        }
    }
    flags.len()
}

/// A synopsis (a plain block that starts with `lbguard X`) names every flag of X.
fn synopsis(ctx: &Ctx, flags: &[String], at: (&str, usize), wrong: &mut Vec<String>) {
    let Ctx::Lbguard(path) = ctx else { return };
    if path.is_empty() {
        return;
    }
    let Some(mut all) = flags_of(path) else {
        return;
    };
    all.remove("--help");
    for f in all.iter().filter(|f| !flags.contains(f)) {
        wrong.push(fail(
            at.0,
            at.1,
            format!(
                "the synopsis of `lbguard {}` leaves out `{f}`",
                path.join(" ")
            ),
        ));
    }
}

/// Checks every page; returns what is wrong and how many flags were checked.
pub fn check(pages: &[Page]) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages {
        for CodeLine {
            page,
            line,
            text,
            lang,
        } in &page.code
        {
            // In a synopsis `|` separates alternatives, not commands.
            let commands = if lang.is_empty() {
                vec![text.clone()]
            } else {
                pieces(text)
            };
            for piece in commands {
                let (ctx, flags) = command(&piece, false);
                checked += judge(&ctx, &flags, (page, *line), &mut wrong);
                if lang.is_empty() {
                    synopsis(&ctx, &flags, (page, *line), &mut wrong);
                }
            }
        }
        for para in &page.paras {
            let mut ctx = page_default(&page.name);
            let mut last = 0;
            for (at, span) in spans(&para.text) {
                // Flags in the prose before this span belong to the command so far.
                let before: Vec<String> = para.text[last..at]
                    .split_whitespace()
                    .filter_map(flag)
                    .collect();
                checked += judge(&ctx, &before, (&para.page, para.line), &mut wrong);
                last = at + span.len();
                for piece in pieces(span) {
                    let (c, flags) = command(&piece, true);
                    match c {
                        Ctx::Unknown => {
                            checked += judge(&ctx, &flags, (&para.page, para.line), &mut wrong)
                        }
                        c => {
                            checked += judge(&c, &flags, (&para.page, para.line), &mut wrong);
                            ctx = c;
                        }
                    }
                }
            }
        }
    }
    (wrong, checked)
}

#[test]
fn a_flag_of_another_command_is_caught() {
    let page = super::parse(
        "docs/src/p.md",
        "Run `lbguard serve --inventory-cloud` now.\n\n`lbguard check` takes `--metrics-secure`.\n\n```\nlbguard config\n```\n\n```sh\nlbguard export-vap --region r\nkubectl get svc -A -o yaml | lbguard inventory dump --provider alibaba --dev -\ncargo run --release -- serve --dev --locked\n```\n",
    );
    let (wrong, _) = check(&[page]);
    let found: Vec<&str> = wrong
        .iter()
        .map(|w| w.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        found,
        [
            "the synopsis of `lbguard config` leaves out `--defaults`",
            "`--region` is not a flag of `lbguard export-vap`",
            "`--dev` is not a flag of `lbguard inventory dump`",
            "`--locked` is not a flag of `lbguard serve`",
            "`--inventory-cloud` is not a flag of `lbguard serve`",
            "`--metrics-secure` is not a flag of `lbguard check`",
        ],
        "{wrong:?}"
    );
}

#[test]
fn right_flags_and_other_tools_pass() {
    let page = super::parse(
        "docs/src/check.md",
        "- `--inventory-cloud` asks the cloud; `--cloud-timeout 30s` raises it.\n\n`helm upgrade --reuse-values` keeps `--set` values. `lbguard serve` options: `--addr`, `--dev`.\n\n```console\n$ lbguard check --old a.yaml b.yaml\nDENIED --nothing\n```\n\n```text\nlbguard check [--config FILE] [--provider P]\n              [--output text|json] FILE...\n```\n",
    );
    let (wrong, checked) = check(&[page]);
    assert!(wrong.is_empty(), "{wrong:?}");
    assert_eq!(checked, 8);
}
