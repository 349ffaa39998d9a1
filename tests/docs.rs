//! Docs that cannot lie: every link in the book and the READMEs leads to a file (and, with
//! `#anchor`, to a heading of it), every `--flag` they name is one lbguard (or the named
//! external tool) has, and every dotted config or chart key they name exists. The book's
//! build itself runs in `scripts/test` (`mdbook build docs`, then lychee over the rendered
//! HTML); the tutorial runs in the e2e suite.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The book's pages, the READMEs, CONTRIBUTING and SECURITY.
fn pages() -> Vec<PathBuf> {
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
    let mut out = Vec::new();
    walk(&Path::new(ROOT).join("docs/src"), &mut out);
    out.push(Path::new(ROOT).join("README.md"));
    out.push(Path::new(ROOT).join("charts/lbguard/README.md"));
    out.push(Path::new(ROOT).join("CONTRIBUTING.md"));
    out.push(Path::new(ROOT).join("SECURITY.md"));
    out.sort();
    out
}

/// The text outside fenced code blocks (links in code are not links).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `[text](target)` targets.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(j) = rest.find(')') {
            out.push(rest[..j].to_string());
        }
    }
    out
}

/// mdBook's heading ids: lower case, spaces to '-', only alphanumerics, '-' and '_' kept.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| {
            h.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// A page's text as mdBook renders it: `{{#include FILE}}` lines replaced by the file.
fn rendered_text(page: &Path) -> String {
    let text = std::fs::read_to_string(page).unwrap();
    text.lines()
        .map(|line| {
            match line
                .trim()
                .strip_prefix("{{#include ")
                .and_then(|l| l.strip_suffix("}}"))
            {
                // `FILE:anchor` includes the part between `ANCHOR: anchor` and `ANCHOR_END`.
                Some(spec) => {
                    let (file, anchor) = match spec.trim().split_once(':') {
                        Some((f, a)) => (f, Some(a)),
                        None => (spec.trim(), None),
                    };
                    let text = std::fs::read_to_string(page.parent().unwrap().join(file))
                        .unwrap_or_else(|e| panic!("{}: {file}: {e}", page.display()));
                    match anchor {
                        None => text,
                        Some(a) => text
                            .split(&format!("ANCHOR: {a} -->"))
                            .nth(1)
                            .and_then(|t| t.split(&format!("<!-- ANCHOR_END: {a}")).next())
                            .unwrap_or_else(|| panic!("{}: {file}: no anchor {a}", page.display()))
                            .to_string(),
                    }
                }
                None => format!("{line}\n"),
            }
        })
        .collect()
}

/// The chapters SUMMARY.md lists, as paths under docs/src.
fn chapters() -> BTreeSet<PathBuf> {
    let src = Path::new(ROOT).join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    links(&summary)
        .into_iter()
        .map(|l| normalize(&src.join(l)))
        .collect()
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// In the built book a link works only when it leads to another chapter: a file outside
/// docs/src is not in `target/book`, and a chapter named README.md is rendered as
/// index.html, so a link to README.md is a 404 there. (scripts/test checks the rendered
/// HTML with lychee too.)
#[test]
fn book_links_stay_in_the_book() {
    let src = Path::new(ROOT).join("docs/src");
    let chapters = chapters();
    assert!(chapters.len() > 15, "{chapters:?}");
    let mut outside = Vec::new();
    for page in pages().into_iter().filter(|p| p.starts_with(&src)) {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&prose(&text)) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if file.is_empty() {
                continue;
            }
            let dest = normalize(&page.parent().unwrap().join(file));
            if !dest.starts_with(&src) || !chapters.contains(&dest) || file.ends_with("README.md") {
                outside.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "links that leave the built book:\n{}",
        outside.join("\n")
    );
}

/// The book says what its sources are, not the project's internal names for them, and
/// does not say the cloud is never asked.
#[test]
fn the_book_names_its_sources() {
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap().to_lowercase();
        for phrase in [
            "seed 0",
            "seeds 0",
            "does not call any cloud",
            "calls no cloud",
        ] {
            if text.contains(phrase) {
                bad.push(format!("{}: \"{phrase}\"", page.display()));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_link_leads_somewhere() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&prose(&text)) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            checked += 1;
            if !dest.exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
                continue;
            }
            if let Some(a) = anchor
                && !anchors(&rendered_text(&dest)).contains(a)
            {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 40, "only {checked} links");
}

/// Every long flag of every lbguard command.
fn lbguard_flags() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for a in cmd.get_arguments() {
            if let Some(l) = a.get_long() {
                out.insert(format!("--{l}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeSet::new();
    // Built, so that clap's own `--help` and `--version` are there.
    let mut cli = lbguard::cli::Cli::command();
    cli.build();
    walk(&cli, &mut out);
    out
}

/// Flags of the other tools the docs show (helm, kubectl, cargo, curl, podman, cosign, gh).
const EXTERNAL: &[&str] = &[
    // cosign verify-blob's signature bundle and gh attestation verify's repository
    // (check.md's release binaries).
    "--bundle",
    "--repo",
    "--version",
    "--node",
    "--for",
    "--timeout",
    "--resolve",
    "--rm",
    "--read-only",
    "--cap-drop",
    "--certificate-oidc-issuer",
    "--certificate-identity-regexp",
    "--release",
    "--test",
    "--locked",
    "--set",
    "--set-file",
    "--create-namespace",
    "--reuse-values",
    "--install",
    "--serviceaccount",
    "--clusterrole",
    "--ignore-not-found",
    "--data",
    "--cacert",
    "--from-file",
    "--check",
    // helm's and kubectl's, on the exceptions page.
    "--skip-crds",
    "--group",
    "--field-selector",
    // cargo's (`cargo install --path .`, `cargo check --all-targets`, the pre-commit hook's
    // `cargo install --locked --bin lbguard`, the benchmark's `--features bench`).
    // kubectl's, where a policy is too big for client-side apply (export-vap.md).
    "--server-side",
    "--path",
    "--all-targets",
    "--bin",
    "--features",
    // The Volcengine controller's flag (configuration.md, whose Services are lbguard's).
    "--loadbalancer-class",
    // cargo install from the repository (check.md, SECURITY.md), before the first release.
    "--git",
    "--rev",
    "--bin",
    // pre-commit autoupdate, to pin a commit before the first tag (check.md).
    "--bleeding-edge",
    "--freeze",
    // kubectl create secret tls (install.md).
    "--cert",
    "--key",
    // The node recipe's scripts (development.md).
    "--install-deps",
    "--purge",
    // scripts/bench-http's and lbguard-bench's (performance.md, CONTRIBUTING.md's release
    // checklist).
    "--against",
    "--body",
    "--instructions",
    "--cpu",
    "--pin",
    "--hot-functions",
    "--profile",
    "--image",
    "--answer-bytes",
];

#[test]
fn every_flag_the_docs_name_exists() {
    let known = lbguard_flags();
    let mut unknown = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (i, _) in text.match_indices("--") {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '-') {
                continue;
            }
            let flag: String = text[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            if flag.is_empty() || !flag.starts_with(|c: char| c.is_ascii_lowercase()) {
                continue;
            }
            let flag = format!("--{}", flag.trim_end_matches('-'));
            if !known.contains(&flag) && !EXTERNAL.contains(&flag.as_str()) {
                unknown.push(format!("{}: {flag}", page.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags no command has:\n{}",
        unknown.join("\n")
    );
}

/// Whether `path` (dotted, camelCase) names a key in `v`; a map the key goes through (an
/// empty object in the defaults, such as `ccm.workloads`) takes any name below it.
fn has_path(v: &Value, path: &[&str]) -> bool {
    match path.split_first() {
        None => true,
        Some((first, rest)) => match v {
            Value::Object(m) if m.is_empty() => true,
            Value::Object(m) => m.get(*first).is_some_and(|x| has_path(x, rest)),
            _ => false,
        },
    }
}

#[test]
fn every_config_and_chart_key_the_docs_name_exists() {
    let config =
        serde_json::to_value(lbguard::engine::parse_config("", "defaults").unwrap()).unwrap();
    let values: Value = lbguard::yaml::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("charts/lbguard/values.yaml")).unwrap(),
    )
    .unwrap();
    let config_roots: BTreeSet<&str> = config
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let value_roots: BTreeSet<&str> = values
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut checked = 0;
    let mut unknown = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for span in text.split('`').skip(1).step_by(2) {
            let parts: Vec<&str> = span.split('.').collect();
            let dotted = parts.len() > 1
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()));
            // A file, or a domain (`exceptions.lbguard.io`, a webhook's name).
            let file = [
                "rs", "md", "yaml", "json", "toml", "tpl", "py", "txt", "io", "com",
            ]
            .contains(parts.last().unwrap_or(&""));
            if !dotted
                || file
                || !(config_roots.contains(parts[0]) || value_roots.contains(parts[0]))
            {
                continue;
            }
            checked += 1;
            let ok = has_path(&config, &parts)
                || has_path(&values, &parts)
                || (parts[0] == "config" && has_path(&config, &parts[1..]));
            if !ok {
                unknown.push(format!("{}: {span}", page.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "keys neither the config nor the chart has:\n{}",
        unknown.join("\n")
    );
    assert!(checked > 30, "only {checked} keys");
}

/// Dotted paths of every key, through the objects that have keys.
fn paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.insert(p.clone());
            paths(x, &p, out);
        }
    }
}

/// The configuration reference's YAML is a config lbguard accepts (unknown keys are errors),
/// and it names every key the config has.
#[test]
fn configuration_reference_is_the_config() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("docs/src/configuration.md")).unwrap();
    let block = page
        .split("```yaml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the page starts with the config as YAML");
    lbguard::engine::parse_config(block, "docs/src/configuration.md")
        .unwrap_or_else(|e| panic!("the reference is not a valid config: {e:?}"));
    let documented: Value = lbguard::yaml::from_str(block).unwrap();
    let config =
        serde_json::to_value(lbguard::engine::parse_config("", "defaults").unwrap()).unwrap();
    let (mut want, mut have) = (BTreeSet::new(), BTreeSet::new());
    paths(&config, "", &mut want);
    paths(&documented, "", &mut have);
    let missing: Vec<&String> = want
        .iter()
        .filter(|p| {
            !have.contains(*p) && !p.starts_with("rules.") && !p.starts_with("knownAnnotations.")
        })
        .collect();
    assert!(
        missing.is_empty(),
        "keys the configuration reference does not show: {missing:?}"
    );
}

/// The licence Cargo.toml and README declare is the one LICENSE holds, in full.
#[test]
fn the_license_file_is_the_declared_license() {
    let cargo = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    assert!(
        cargo
            .lines()
            .any(|l| l.trim() == "license = \"Apache-2.0\""),
        "Cargo.toml declares another licence"
    );
    let text = std::fs::read_to_string(Path::new(ROOT).join("LICENSE")).unwrap();
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(
        words[..5],
        ["Apache", "License", "Version", "2.0,", "January"],
        "LICENSE is not the Apache License 2.0"
    );
    for part in [
        "END OF TERMS AND CONDITIONS",
        "APPENDIX: How to apply the Apache License to your work.",
        "9. Accepting Warranty or Additional Liability.",
    ] {
        assert!(
            text.contains(part),
            "LICENSE lacks {part:?}: not the full text"
        );
    }
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(readme.contains("Apache-2.0 ([LICENSE](LICENSE))"));
}
