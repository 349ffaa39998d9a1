//! The crate's shape, read from its source: no file of `src/` imports another in a circle
//! (tests/layers/imports.rs reads which file imports which); the cloud layer's files import
//! only their own layer or the layers below it, and a cloud's module uses no other cloud's;
//! no source or test file is over 600 lines (DESIGN: one concept per file). The layers are
//! named in docs/src/architecture.md.

#[path = "layers/imports.rs"]
mod imports;

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

/// A file's layer under `src/cloud` (index into [`LAYERS`]), if any.
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

/// Everything wrong with the imports of these files (path under `src/`, text): a circle
/// anywhere, and in `src/cloud` an import up its layers or from one cloud to another.
fn problems(files: &[(String, String)]) -> Vec<String> {
    let graph = imports::graph(files);
    let mut problems = Vec::new();
    for (path, _) in files {
        let Some(rel) = path.strip_prefix("cloud/") else {
            continue;
        };
        let Some(layer) = layer_of(rel) else {
            problems.push(format!("src/cloud/{rel}: in no layer; add it to LAYERS"));
            continue;
        };
        // `clients/<cloud>.rs` or `clients/<cloud>/...`; `clients/mod.rs` picks among them.
        let cloud = |r: &str| {
            let mut parts = r.split('/');
            let c = (parts.next() == Some(CLOUDS))
                .then(|| parts.next())
                .flatten()?;
            (c != "mod.rs").then(|| c.trim_end_matches(".rs").to_string())
        };
        let targets = graph.get(path).into_iter().flat_map(|e| e.keys());
        for t in targets.filter_map(|t| t.strip_prefix("cloud/")) {
            let to = layer_of(t).unwrap_or(usize::MAX);
            if to > layer {
                problems.push(format!(
                    "src/cloud/{rel} ({}) imports src/cloud/{t} ({}), a higher layer",
                    LAYERS[layer].0,
                    LAYERS.get(to).map_or("no layer", |l| l.0)
                ));
            }
            if let (Some(a), Some(b)) = (cloud(rel), cloud(t))
                && a != b
            {
                problems.push(format!(
                    "src/cloud/{rel} imports src/cloud/{t}: a cloud uses only the layers below"
                ));
            }
        }
    }
    problems.extend(imports::circles(&graph));
    problems
}

/// The code of `src/` that ships (path under `src/`, text): tests may reach anything.
fn sources() -> Vec<(String, String)> {
    let dir = root().join("src");
    let mut paths = Vec::new();
    rs_files(&dir, &mut paths);
    let mut files: Vec<(String, String)> = paths
        .iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&dir)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            let name = rel.rsplit('/').next().unwrap_or_default();
            if name.ends_with("_tests.rs") || name == "tests.rs" {
                return None;
            }
            Some((rel, std::fs::read_to_string(p).ok()?))
        })
        .collect();
    files.sort();
    files
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
fn no_file_of_src_is_in_an_import_circle_and_the_cloud_layers_only_point_down() {
    let files = sources();
    let cloud = files
        .iter()
        .filter(|(r, _)| r.starts_with("cloud/"))
        .count();
    assert!(files.len() > 100 && cloud > 20, "src not found");
    let problems = problems(&files);
    assert!(problems.is_empty(), "\n{}", problems.join("\n\n"));
}

#[test]
fn the_check_sees_an_upward_import_a_circle_and_one_cloud_using_another() {
    let f = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let clean = [
        f(
            "cloud/mod.rs",
            "mod base;\nuse base::outcome::CloudError;\n",
        ),
        f("cloud/base/mod.rs", "pub mod outcome;\n"),
        f("cloud/base/outcome.rs", "pub enum CloudError {}\n"),
        f(
            "cloud/transport.rs",
            "use super::base::outcome::CloudError;\n",
        ),
        f("cloud/clients/mod.rs", "pub mod a;\npub mod b;\n"),
        f("cloud/clients/a.rs", "use crate::cloud::transport::Call;\n"),
        f("cloud/clients/b.rs", "use super::super::transport::Call;\n"),
    ];
    assert_eq!(problems(&clean), Vec::<String>::new());

    let mut up = clean.to_vec();
    up[2] = f(
        "cloud/base/outcome.rs",
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
        "cloud/clients/b.rs",
        "use super::{a::X, b2};\nuse super::super::transport::Call;\n",
    );
    circle[5] = f("cloud/clients/a.rs", "use super::b::Y;\n");
    let p = problems(&circle);
    assert!(p.iter().any(|m| m.contains("circle")), "{p:?}");
    assert!(p.iter().any(|m| m.contains("a cloud uses only")), "{p:?}");

    // A parent using its child by its bare name, the child using the parent.
    let mut family = clean.to_vec();
    family[1] = f(
        "cloud/base/mod.rs",
        "pub mod outcome;\npub use outcome::CloudError;\npub struct Clock;\n",
    );
    family[2] = f("cloud/base/outcome.rs", "use super::Clock;\n");
    let p = problems(&family);
    assert!(
        p.iter()
            .any(|m| m.contains("base/mod.rs is in an import circle")),
        "{p:?}"
    );

    let mut stray = clean.to_vec();
    stray.push(f("cloud/elsewhere.rs", ""));
    assert!(problems(&stray).iter().any(|m| m.contains("in no layer")));

    // Test code below `#[cfg(test)]` is not layered.
    let mut tests = clean.to_vec();
    tests[2] = f(
        "cloud/base/outcome.rs",
        "pub enum CloudError {}\n#[cfg(test)]\nmod tests { use crate::cloud::transport::Call; }\n",
    );
    assert_eq!(problems(&tests), Vec::<String>::new());
}

/// The imports a set of files (path under `src/`, text) makes, as `from -> to` lines.
fn edges(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    imports::graph(&files)
        .into_iter()
        .flat_map(|(from, to)| to.into_keys().map(move |t| format!("{from} -> {t}")))
        .collect()
}

#[test]
fn paths_resolve_to_the_files_that_define_what_they_name() {
    // `use` groups, `super::super::`, `self::`, a child by its bare name, inline paths in
    // code, a `use`d name (renamed or not) that a path goes on through.
    let uses = [
        ("lib.rs", "mod a;\nmod p;\nmod q;\nmod r;\nmod x;\n"),
        ("a/mod.rs", "pub mod b;\npub mod c;\npub mod d;\n"),
        ("a/b.rs", "use super::{c::X, d};\n"),
        ("a/c.rs", ""),
        ("a/d.rs", "use super::super::x::Z;\n"),
        (
            "p.rs",
            "mod kid;\nuse crate::q as other;\nuse crate::r;\n\
             fn f() -> other::T { self::kid::go(); r::s::go(); crate::a::c::go() }\n",
        ),
        ("p/kid.rs", ""),
        ("q.rs", ""),
        ("r/mod.rs", "pub mod s;\n"),
        ("r/s.rs", ""),
        ("x.rs", ""),
    ];
    assert_eq!(
        edges(&uses),
        [
            "a/b.rs -> a/c.rs",
            "a/b.rs -> a/d.rs",
            "a/d.rs -> x.rs",
            "p.rs -> a/c.rs",
            "p.rs -> p/kid.rs",
            "p.rs -> q.rs",
            "p.rs -> r/mod.rs",
            "p.rs -> r/s.rs",
        ]
    );

    // A path through a re-export imports the re-exporting file and the defining one; a
    // `super::` inside an inline `mod creds { }` starts from that module.
    let reexports = [
        (
            "lib.rs",
            "pub mod cloud;\npub mod m;\npub mod vocab;\npub use vocab::config;\n",
        ),
        ("vocab/mod.rs", "pub mod config;\n"),
        ("vocab/config.rs", "pub struct Config;\n"),
        ("m/mod.rs", "mod inner;\npub use inner::Thing;\n"),
        ("m/inner.rs", "pub struct Thing;\n"),
        (
            "cloud/mod.rs",
            "mod auth;\npub mod creds {\n    pub use super::auth::Key;\n}\n",
        ),
        ("cloud/auth.rs", "pub struct Key;\n"),
        (
            "user.rs",
            "use crate::m::Thing;\nfn f(_: crate::cloud::creds::Key) -> crate::config::Config {}\n",
        ),
    ];
    assert_eq!(
        edges(&reexports),
        [
            "cloud/mod.rs -> cloud/auth.rs",
            "lib.rs -> vocab/config.rs",
            "m/mod.rs -> m/inner.rs",
            "user.rs -> cloud/auth.rs",
            "user.rs -> cloud/mod.rs",
            "user.rs -> lib.rs",
            "user.rs -> m/inner.rs",
            "user.rs -> m/mod.rs",
            "user.rs -> vocab/config.rs",
        ]
    );

    // Not code that ships: comments, strings, char literals and lifetimes (a `'{'` that
    // opened a block would hide what follows), items under `#[cfg(test)]`.
    let text = "// crate::b::x\n/* crate::b::y /* nested */ crate::b::z */\n\
        const S: &str = \"crate::b::s \\\" crate::b::t\";\nconst R: &str = r#\"crate::b::\"r\"#;\n\
        const C: [char; 2] = ['\\'', '{'];\nfn f<'b>(x: &'b str) {}\n\
        #[cfg(test)]\nuse crate::b::T;\n#[cfg(test)]\nfn t(a: [u8; 2]) { let c = '}'; crate::b::t() }\n\
        #[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;\n\
        pub fn real() { crate::c::go() }\nmacro_rules! m { () => { $crate::d::D } }\n";
    let files = [("a.rs", text), ("b.rs", ""), ("c.rs", ""), ("d.rs", "")];
    assert_eq!(edges(&files), ["a.rs -> c.rs", "a.rs -> d.rs"]);

    // A bin is a crate of its own: its `crate::` is its root, `lbguard::` is the lib.
    let bins = [
        ("lib.rs", "pub mod engine;\npub struct Args;\n"),
        ("engine/mod.rs", ""),
        ("main.rs", "fn main() { lbguard::engine::run() }\n"),
        (
            "bin/bench/main.rs",
            "mod http;\nuse http::serve;\nfn main() { lbguard::engine::run() }\n",
        ),
        ("bin/bench/http.rs", "fn f(_: crate::Args) {}\n"),
    ];
    assert_eq!(
        edges(&bins),
        [
            "bin/bench/http.rs -> bin/bench/main.rs",
            "bin/bench/main.rs -> bin/bench/http.rs",
            "bin/bench/main.rs -> engine/mod.rs",
            "main.rs -> engine/mod.rs",
        ]
    );
}

#[test]
fn the_circle_check_fires_on_a_planted_circle() {
    let ring = [
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "pub fn f() { crate::c::go() }\n"),
        ("c.rs", "use super::a;\n"),
        ("d.rs", "use crate::a::A;\n"),
    ];
    let files: Vec<(String, String)> = ring
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    let found = imports::circles(&imports::graph(&files));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/a.rs is in an import circle of 3 files (a.rs, b.rs, c.rs)")
            && found[0].contains("src/a.rs -> src/b.rs (crate::b::B)")
            && found[0].contains("src/b.rs -> src/c.rs (crate::c::go)")
            && found[0].contains("src/c.rs -> src/a.rs (super::a)"),
        "{}",
        found[0]
    );

    // The same check over the crate as it is, with one arrow planted back up: the
    // vocabulary naming the engine, and a printer's type naming the command that prints.
    for (file, planted, circle) in [
        (
            "vocab/provider.rs",
            "use crate::engine::Verdict;\n",
            "vocab/provider.rs",
        ),
        (
            "cli/checked.rs",
            "use super::check::Output;\n",
            "cli/check.rs",
        ),
    ] {
        let mut files = sources();
        assert!(problems(&files).is_empty());
        let (_, text) = files.iter_mut().find(|(r, _)| r == file).unwrap();
        text.push_str(planted);
        let p = problems(&files);
        assert!(
            p.iter()
                .any(|m| m.contains("import circle") && m.contains(circle)),
            "{file}: {p:?}"
        );
    }
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
