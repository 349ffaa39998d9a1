//! The crate as `cargo publish` would upload it (so that `cargo install lbguard` works): its
//! metadata, and `cargo package --list` holding the sources and documents but no tests,
//! fixtures, examples, book, chart or benchmark binary.

use std::process::Command;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn cargo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_manifest_says_what_a_registry_page_shows() {
    let meta: Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--no-deps",
        "--format-version=1",
        "--offline",
        "--locked",
    ]))
    .unwrap();
    let package = &meta["packages"][0];
    assert_eq!(package["name"], "lbguard");
    for field in ["description", "license", "repository", "readme"] {
        let value = package[field].as_str().unwrap_or_default();
        assert!(!value.is_empty(), "Cargo.toml has no {field}");
    }
    assert!(
        package["repository"]
            .as_str()
            .is_some_and(|r| r.starts_with("https://"))
    );
    // The registry's limits: at most five keywords of at most 20 characters.
    let keywords = package["keywords"].as_array().unwrap();
    assert!((1..=5).contains(&keywords.len()), "{keywords:?}");
    for k in keywords {
        let k = k.as_str().unwrap();
        assert!(k.len() <= 20 && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
    let categories = package["categories"].as_array().unwrap();
    assert!(categories.iter().any(|c| c == "command-line-utilities"));
}

#[test]
fn the_package_holds_the_sources_not_the_tests() {
    let list = cargo(&[
        "package",
        "--list",
        "--locked",
        "--allow-dirty",
        "--offline",
    ]);
    let files: Vec<&str> = list.lines().collect();
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "src/main.rs",
        "src/lib.rs",
        "src/cli/check.rs",
        // Read with include_str! by the library.
        "src/providers/data/alibaba.yaml",
        "src/providers/data/ctyun.yaml",
        "src/providers/data/huawei.yaml",
        "src/providers/data/volcengine.yaml",
    ] {
        assert!(files.contains(&needed), "{needed} is not in the package");
    }
    for file in &files {
        let allowed = file.starts_with("src/")
            || [
                ".cargo_vcs_info.json",
                "Cargo.toml",
                "Cargo.toml.orig",
                "Cargo.lock",
                "README.md",
                "CHANGELOG.md",
                "LICENSE",
            ]
            .contains(file);
        assert!(allowed, "{file} is in the package");
        assert!(
            !file.ends_with("_tests.rs")
                && !file.ends_with("/tests.rs")
                && !file.starts_with("src/bin/")
                && *file != "src/testkit.rs",
            "{file} is a test or the benchmark"
        );
    }
    // Every source file the library and the CLI compile is there: each `.rs` under src/
    // that is not a test or the benchmark.
    let mut stack = vec![std::path::PathBuf::from(format!("{ROOT}/src"))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(ROOT)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if rel != "src/bin" {
                    stack.push(path);
                }
                continue;
            }
            let test_only = rel.ends_with("_tests.rs")
                || rel.ends_with("/tests.rs")
                || rel == "src/testkit.rs"
                || rel == "src/vap/eval.rs";
            if rel.ends_with(".rs") && !test_only {
                assert!(files.contains(&rel.as_str()), "{rel} is not in the package");
            }
        }
    }
}
