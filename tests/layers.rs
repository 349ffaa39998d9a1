//! The crate's shape, read from its source: the cloud layer's files import only their own
//! layer or the layers below it, without a circle, and a cloud's module uses no other
//! cloud's; no source or test file is over 600 lines (DESIGN: one concept per file). The
//! layers are named in docs/src/architecture.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `src/cloud`'s layers, lowest first: a file's layer is named by its first path component
/// under `src/cloud` (`mod.rs` alone is the facade at the top).
const LAYERS: &[(&str, &[&str])] = &[
    ("what knows no cloud", &["base"]),
    ("signing and credentials", &["auth"]),
    ("the transport", &["transport", "client"]),
    ("one module per cloud", &["clients"]),
    (
        "the source, the cache, refresh, shard and view",
        &["source", "cache", "refresh", "shard", "view"],
    ),
    ("the Cloud facade", &["mod.rs"]),
];

/// The folder whose modules are one cloud each; they may not use one another.
const CLOUDS: &str = "clients";

/// The longest a source file may be.
const MAX_LINES: usize = 600;

/// A source file: its path under `src/cloud` and its module path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct File {
    rel: String,
    module: Vec<String>,
}

fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let last = parts.pop().unwrap_or_default();
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// Which layer (index into [`LAYERS`]) a file belongs to, if any.
fn layer_of(rel: &str) -> Option<usize> {
    let first = if rel == "mod.rs" {
        "mod.rs"
    } else {
        rel.split('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".rs")
    };
    LAYERS.iter().position(|(_, names)| names.contains(&first))
}

/// The code of a file that is compiled outside tests, without comments.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn ident(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// Every path the code names from `start` (`super::`, `super::super::` or `crate::cloud::`):
/// its segments, a `{...}` group expanded one level.
fn paths(code: &str, start: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(start) {
        let at = from + i;
        from = at + start.len();
        // `super::` inside `super::super::` is counted once, from its start.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &code[from..];
        let mut ups = 0;
        while start == "super::" && rest.starts_with("super::") {
            rest = &rest["super::".len()..];
            ups += 1;
        }
        let mut segs = Vec::new();
        loop {
            let (id, tail) = ident(rest);
            if id.is_empty() {
                break;
            }
            segs.push(id.to_string());
            match tail.strip_prefix("::") {
                Some(t) => rest = t,
                None => {
                    rest = "";
                    break;
                }
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let mut s = segs.clone();
                s.extend(
                    item.split("::")
                        .map(|p| ident(p.trim()).0.to_string())
                        .filter(|p| !p.is_empty() && p != "self"),
                );
                out.push((ups, s));
            }
        } else {
            out.push((ups, segs));
        }
    }
    out
}

/// The files a file's code imports (by `super::` or `crate::cloud::`), other than itself.
fn imports(file: &File, text: &str, modules: &BTreeMap<Vec<String>, File>) -> BTreeSet<File> {
    let code = code(text);
    let mut found = BTreeSet::new();
    let mut resolve = |base: Vec<String>, segs: &[String]| {
        let mut target = modules.get(&base);
        let mut m = base;
        for s in segs {
            m.push(s.clone());
            match modules.get(&m) {
                Some(f) => target = Some(f),
                None => break,
            }
        }
        if let Some(t) = target
            && t != file
        {
            found.insert(t.clone());
        }
    };
    for (ups, segs) in paths(&code, "super::") {
        let mut base = file.module.clone();
        // A file's own module is `module`; `super` is its parent.
        for _ in 0..=ups {
            base.pop();
        }
        resolve(base, &segs);
    }
    for (_, segs) in paths(&code, "crate::cloud::") {
        resolve(Vec::new(), &segs);
    }
    // A file's own child modules, named bare (`use child::X`, `child::f()`).
    for child in children(&code) {
        for (_, segs) in paths(&code, &format!("{child}::")) {
            let mut s = vec![child.clone()];
            s.extend(segs);
            resolve(file.module.clone(), &s);
        }
    }
    found
}

/// The modules a file declares (`mod x;`, `pub mod x;`).
fn children(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("pub ").or_else(|| {
                l.strip_prefix("pub(crate) ")
                    .or_else(|| l.strip_prefix("pub(super) "))
            });
            let name = rest.unwrap_or(l).strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// Everything wrong with the layering of these files (path under `src/cloud`, text).
fn problems(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeMap<Vec<String>, File> = files
        .iter()
        .map(|(rel, _)| {
            let f = File {
                rel: rel.clone(),
                module: module_of(rel),
            };
            (f.module.clone(), f)
        })
        .collect();
    let mut problems = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files {
        let file = &modules[&module_of(rel)];
        let Some(layer) = layer_of(rel) else {
            problems.push(format!("src/cloud/{rel}: in no layer; add it to LAYERS"));
            continue;
        };
        for t in imports(file, text, &modules) {
            let to = layer_of(&t.rel).unwrap_or(usize::MAX);
            if to > layer {
                problems.push(format!(
                    "src/cloud/{rel} ({}) imports src/cloud/{} ({}), a higher layer",
                    LAYERS[layer].0,
                    t.rel,
                    LAYERS.get(to).map_or("no layer", |l| l.0)
                ));
            }
            let cloud = |f: &File| {
                (f.module.len() > 1 && f.module[0] == CLOUDS).then(|| f.module[1].clone())
            };
            if let (Some(a), Some(b)) = (cloud(file), cloud(&t))
                && a != b
            {
                problems.push(format!(
                    "src/cloud/{rel} imports src/cloud/{}: a cloud uses only the layers below",
                    t.rel
                ));
            }
            graph.entry(rel.clone()).or_default().insert(t.rel.clone());
        }
    }
    // No circle of any length (two files importing each other is the shortest).
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(n) = stack.pop() {
            if n == start {
                problems.push(format!("src/cloud/{start} is in an import circle"));
                break;
            }
            if seen.insert(n) {
                stack.extend(graph.get(n).into_iter().flatten());
            }
        }
    }
    problems
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_cloud_layers_only_point_down() {
    let dir = root().join("src/cloud");
    let mut paths = Vec::new();
    rs_files(&dir, &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&dir)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            let name = rel.rsplit('/').next().unwrap_or_default();
            // Tests may reach anything; only the code that ships is layered.
            if name.ends_with("_tests.rs") || name == "tests.rs" {
                return None;
            }
            Some((rel, std::fs::read_to_string(p).ok()?))
        })
        .collect();
    assert!(files.len() > 20, "src/cloud not found: {}", dir.display());
    let problems = problems(&files);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_check_sees_an_upward_import_a_circle_and_one_cloud_using_another() {
    let f = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let clean = [
        f("mod.rs", "mod base;\nuse base::outcome::CloudError;\n"),
        f("base/mod.rs", "pub mod outcome;\n"),
        f("base/outcome.rs", "pub enum CloudError {}\n"),
        f("transport.rs", "use super::base::outcome::CloudError;\n"),
        f("clients/mod.rs", "pub mod a;\npub mod b;\n"),
        f("clients/a.rs", "use crate::cloud::transport::Call;\n"),
        f("clients/b.rs", "use super::super::transport::Call;\n"),
    ];
    assert_eq!(problems(&clean), Vec::<String>::new());

    let mut up = clean.to_vec();
    up[2] = f(
        "base/outcome.rs",
        "// use crate::cloud::transport::x; is a comment\nfn f() { crate::cloud::transport::go() }\n",
    );
    let p = problems(&up);
    assert!(
        p.iter()
            .any(|m| m.contains("base/outcome.rs") && m.contains("higher layer")),
        "{p:?}"
    );

    let mut circle = clean.to_vec();
    circle[6] = f(
        "clients/b.rs",
        "use super::{a::X, b2};\nuse super::super::transport::Call;\n",
    );
    circle[5] = f("clients/a.rs", "use super::b::Y;\n");
    let p = problems(&circle);
    assert!(p.iter().any(|m| m.contains("circle")), "{p:?}");
    assert!(p.iter().any(|m| m.contains("a cloud uses only")), "{p:?}");

    // A parent using its child by its bare name, the child using the parent.
    let mut family = clean.to_vec();
    family[1] = f(
        "base/mod.rs",
        "pub mod outcome;\npub use outcome::CloudError;\npub struct Clock;\n",
    );
    family[2] = f("base/outcome.rs", "use super::Clock;\n");
    let p = problems(&family);
    assert!(
        p.iter()
            .any(|m| m.contains("base/mod.rs is in an import circle")),
        "{p:?}"
    );

    let mut stray = clean.to_vec();
    stray.push(f("elsewhere.rs", ""));
    assert!(problems(&stray).iter().any(|m| m.contains("in no layer")));

    // Test code below `#[cfg(test)]` is not layered.
    let mut tests = clean.to_vec();
    tests[2] = f(
        "base/outcome.rs",
        "pub enum CloudError {}\n#[cfg(test)]\nmod tests { use crate::cloud::transport::Call; }\n",
    );
    assert_eq!(problems(&tests), Vec::<String>::new());
}

/// Source files over [`MAX_LINES`], with their lengths.
fn too_long(dirs: &[&str]) -> Vec<String> {
    let mut paths = Vec::new();
    for d in dirs {
        rs_files(&root().join(d), &mut paths);
    }
    let mut long: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).ok()?.lines().count();
            (n > MAX_LINES).then(|| format!("{} has {n} lines", p.display()))
        })
        .collect();
    long.sort();
    long
}

#[test]
fn no_source_or_test_file_is_over_600_lines() {
    let long = too_long(&["src", "tests"]);
    assert!(
        long.is_empty(),
        "one concept per file, under {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
