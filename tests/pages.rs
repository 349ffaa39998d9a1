//! What the pages say about the project itself: the repository they name is the one
//! Cargo.toml names (one setting: action.yml, the chart and CHANGELOG follow it too), a page
//! that fetches a release says none is published while none is (with the way from source),
//! every repository file a page names exists, and the README reads the book in its order.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The book's pages and the Markdown files at the top, by path under the repository.
fn pages() -> Vec<String> {
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
    let mut out: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    for f in [
        "README.md",
        "charts/lbguard/README.md",
        "CONTRIBUTING.md",
        "SECURITY.md",
        "CHANGELOG.md",
        "BENCHMARKS.md",
        "FUZZING.md",
        "certs/README.md",
    ] {
        out.push(f.to_string());
    }
    out.sort();
    out
}

/// `owner/name` from Cargo.toml's `repository = "https://github.com/owner/name"`.
fn repository() -> String {
    let cargo = read("Cargo.toml");
    let line = cargo
        .lines()
        .find_map(|l| l.strip_prefix("repository = \""))
        .expect("Cargo.toml names the repository");
    line.trim_end_matches('"')
        .strip_prefix("https://github.com/")
        .expect("a GitHub repository")
        .to_string()
}

/// Every mention of this project's repository or registry in `text`: `github.com/X/lbguard`,
/// `ghcr.io/X/lbguard`, `ghcr.io/X/charts/lbguard`, `uses: X/lbguard@`, `--repo X/lbguard`,
/// as the `X/lbguard` they name; and every `OWNER` placeholder.
fn mentions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (lead, tail) in [
        ("github.com/", "/lbguard"),
        ("ghcr.io/", "/lbguard"),
        ("ghcr.io/", "/charts/lbguard"),
        ("uses: ", "/lbguard@"),
        ("--repo ", "/lbguard"),
    ] {
        for (i, _) in text.match_indices(lead) {
            let rest = &text[i + lead.len()..];
            let owner: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if rest[owner.len()..].starts_with(tail) {
                out.push(format!("{owner}/lbguard"));
            }
        }
    }
    if text.contains("OWNER") {
        out.push("OWNER".to_string());
    }
    out
}

#[test]
fn the_repository_is_the_one_cargo_toml_names() {
    let repo = repository();
    let mut files = pages();
    files.extend(
        [
            "action.yml",
            "charts/lbguard/Chart.yaml",
            "charts/lbguard/values.yaml",
        ]
        .map(str::to_string),
    );
    let (mut checked, mut wrong) = (0, Vec::new());
    for f in &files {
        for m in mentions(&read(f)) {
            checked += 1;
            if m != repo {
                wrong.push(format!("{f}: {m}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the repository is {repo} (Cargo.toml); these name another:\n{}",
        wrong.join("\n")
    );
    assert!(
        checked >= 20,
        "only {checked} mentions: is the scan finding them?"
    );
    // The chart and CHANGELOG link to it.
    let chart = read("charts/lbguard/Chart.yaml");
    assert!(chart.contains(&format!("home: https://github.com/{repo}\n")));
    assert!(read("CHANGELOG.md").contains(&format!("https://github.com/{repo}/")));
}

#[test]
fn the_scan_finds_other_owners_and_placeholders() {
    let mut found = mentions(
        "uses: acme/lbguard@v1 and ghcr.io/OWNER/charts/lbguard, github.com/kyverno/kyverno",
    );
    found.sort();
    assert_eq!(found, ["OWNER", "OWNER/lbguard", "acme/lbguard"]);
}

/// Whether a release has been published: CHANGELOG.md has a `## [X.Y.Z]` section.
fn released() -> bool {
    read("CHANGELOG.md")
        .lines()
        .any(|l| l.starts_with("## [") && l.as_bytes().get(4).is_some_and(u8::is_ascii_digit))
}

/// What fetches a release: the Action at a tag, a pre-commit tag, the published image or
/// chart, release assets, the published crate.
const FETCHES: &[&str] = &[
    "/lbguard@v",
    "rev: v",
    "ghcr.io/",
    "oci://",
    "/releases/download/",
    "/releases/latest/",
    "cargo install --locked lbguard",
];
/// The note, and the ways from source that work today.
const NOTE: &str = "no release is published yet";
const FROM_SOURCE: &[&str] = &[
    "cargo install --locked --git",
    "cargo install --locked --path .",
    "podman build",
    "helm install lbguard charts/lbguard",
    "#from-a-checkout",
];

#[test]
fn pages_that_fetch_a_release_say_none_is_published() {
    let mut wrong = Vec::new();
    let mut fetching = 0;
    for f in pages().iter().filter(|f| f.as_str() != "CHANGELOG.md") {
        let text = read(f);
        let lower = text.to_lowercase();
        let fetches = FETCHES.iter().any(|x| text.contains(x));
        fetching += usize::from(fetches);
        match (released(), fetches, lower.contains(NOTE)) {
            (false, true, false) => wrong.push(format!(
                "{f}: fetches a release but does not say \"{NOTE}\""
            )),
            (false, true, true) if !FROM_SOURCE.iter().any(|x| text.contains(x)) => wrong.push(
                format!("{f}: says no release is published, but not what to run instead"),
            ),
            (true, _, true) => wrong.push(format!(
                "{f}: CHANGELOG.md has a release: \"{NOTE}\" is no longer true"
            )),
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        fetching >= 3,
        "only {fetching} pages fetch a release: is the scan right?"
    );
}

/// A span that names a repository path: a top-level folder the project has, or a file at the
/// top (`Cargo.toml`, `Dockerfile`, `BENCHMARKS.md`). Globs and `<placeholders>` are matched.
fn repository_path(span: &str) -> Option<&str> {
    let span = span.split([' ', ':', '#']).next()?;
    let top = [
        "src/",
        "tests/",
        "scripts/",
        "charts/",
        "examples/",
        "docs/",
        "certs/",
        "fuzz/",
        ".github/",
        ".ci/",
    ];
    let files = [
        "Cargo.toml",
        "Cargo.lock",
        "Dockerfile",
        "action.yml",
        ".pre-commit-hooks.yaml",
    ];
    (top.iter().any(|t| span.starts_with(t)) || files.contains(&span)).then_some(span)
}

/// Whether a path with `*` or `<...>` parts names at least one file or folder.
fn exists(path: &str) -> bool {
    fn matches(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                name.starts_with(head)
                    && (0..=name.len() - head.len()).any(|k| matches(tail, &name[head.len() + k..]))
            }
        }
    }
    let mut dirs = vec![PathBuf::from(ROOT)];
    for part in path.trim_end_matches('/').split('/') {
        let mut pattern = String::new();
        let mut angle = false;
        for c in part.chars() {
            match c {
                '<' => {
                    angle = true;
                    pattern.push('*');
                }
                '>' => angle = false,
                '{' | '}' | ',' => pattern.push('*'),
                c if !angle => pattern.push(c),
                _ => {}
            }
        }
        let mut next = Vec::new();
        for d in &dirs {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            for e in entries.flatten() {
                if matches(&pattern, &e.file_name().to_string_lossy()) {
                    next.push(e.path());
                }
            }
        }
        dirs = next;
    }
    !dirs.is_empty()
}

#[test]
fn every_file_a_page_names_exists() {
    // What .gitignore leaves out (certs/dev/, fuzz/corpus, ...) is made by running things.
    let ignored: Vec<String> = read(".gitignore")
        .lines()
        .filter(|l| l.contains('/') && !l.starts_with('#'))
        .map(|l| l.trim_start_matches('/').trim_end_matches('/').to_string())
        .collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for f in pages() {
        let text = read(&f);
        for span in text.split('`').skip(1).step_by(2) {
            let Some(path) = repository_path(span) else {
                continue;
            };
            if ignored.iter().any(|i| path.starts_with(i.as_str())) {
                continue;
            }
            checked += 1;
            if !exists(path) {
                wrong.push(format!("{f}: {path}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files the pages name that do not exist:\n{}",
        wrong.join("\n")
    );
    assert!(checked >= 60, "only {checked} paths");
    assert!(!exists("src/cloud/sign_tests.rs") && exists("src/cloud/*/sign_tests.rs"));
    assert!(exists("examples/<provider>/bad-<rule-id>.yaml") && !exists("examples/nothing-*.yaml"));
}

/// The README's reading list follows the book's SUMMARY.md: the same chapters, in its order.
#[test]
fn the_readme_reads_the_book_in_its_order() {
    let links = |text: &str, prefix: &str| -> Vec<String> {
        text.split("](")
            .skip(1)
            .filter_map(|r| r.split(')').next())
            .map(|l| l.split('#').next().unwrap().to_string())
            .filter(|l| l.ends_with(".md"))
            .map(|l| format!("{prefix}{l}"))
            .collect()
    };
    let summary = links(&read("docs/src/SUMMARY.md"), "docs/src/");
    let readme = read("README.md");
    let list = readme
        .split("## The book")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("README has a section on the book");
    // Pages that only include a file at the top are read there.
    let alias = |p: &str| match p {
        "docs/src/changelog.md" => "CHANGELOG.md".to_string(),
        "docs/src/benchmarks.md" => "BENCHMARKS.md".to_string(),
        "docs/src/fuzzing.md" => "FUZZING.md".to_string(),
        p => p.to_string(),
    };
    let want: Vec<String> = summary.iter().map(|p| alias(p)).collect();
    let got: Vec<String> = links(list, "")
        .into_iter()
        .filter(|l| want.contains(l))
        .collect();
    let mut deduped = got.clone();
    deduped.dedup();
    assert_eq!(deduped, want, "README's reading list against SUMMARY.md");
}
