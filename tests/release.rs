//! What the release workflow runs, run here: the release notes taken from CHANGELOG.md
//! (scripts/release-notes), the archives and their SHA256SUMS (scripts/release-archive,
//! scripts/release-sums), and the static Linux binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn script(name: &str, args: &[&str]) -> Output {
    Command::new(format!("{ROOT}/scripts/{name}"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("scripts/{name}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CHANGELOG: &str = "# Changelog

## [Unreleased]

### Added

- Something not yet released.

## [1.2.0] - 2026-01-05

### Changed verdicts

- `lb-id-immutable` (Alibaba): denies more. Why: the controller.

### Added

- A flag.

## [1.2.0-rc1] - 2025-12-20

- The candidate.

## [1.1.0] - 2025-12-01

### Fixed

- The last one.

## [1.0.0]

- Undated: not released.

## [0.9.0] - 2025-10-01

[Unreleased]: https://example.invalid/compare/v1.2.0...HEAD
[1.2.0]: https://example.invalid/compare/v1.1.0...v1.2.0
";

fn notes(tag: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("CHANGELOG.md");
    std::fs::write(&file, CHANGELOG).unwrap();
    script("release-notes", &[tag, file.to_str().unwrap()])
}

#[test]
fn release_notes_are_the_tagged_section() {
    let out = notes("v1.2.0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "### Changed verdicts\n\n- `lb-id-immutable` (Alibaba): denies more. Why: the controller.\n\n### Added\n\n- A flag.\n"
    );
    // Without the `v`, and the last section before the link references.
    let out = notes("1.1.0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "### Fixed\n\n- The last one.\n");
}

#[test]
fn a_tag_without_a_dated_section_has_no_notes() {
    // No section; a pre-release's section is not the release's; an undated heading is not
    // released yet; an empty section says nothing.
    for tag in ["v3.0.0", "v1.2", "v1.0.0", "v0.9.0", "Unreleased"] {
        let out = notes(tag);
        assert_eq!(out.status.code(), Some(1), "{tag}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("has no section for"),
            "{tag}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{tag}");
    }
    let out = script("release-notes", &[]);
    assert_eq!(out.status.code(), Some(2));
}

/// The archive's entries: `mode owner/group size date time name`.
fn listing(archive: &Path) -> Vec<String> {
    let out = Command::new("tar")
        .args(["-tvzf", archive.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(str::to_string).collect()
}

fn archive(target: &str, binary: &Path, out: &Path) -> PathBuf {
    let run = script(
        "release-archive",
        &[target, binary.to_str().unwrap(), out.to_str().unwrap()],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    PathBuf::from(text(&run.stdout).trim())
}

#[test]
fn archives_hold_the_binary_license_and_documents() {
    let dir = tempfile::tempdir().unwrap();
    // A stand-in binary: the layout does not depend on what it is (and a 200 MB debug
    // build would only slow gzip down).
    let bin = dir.path().join("built");
    std::fs::write(&bin, b"\x7fELF stand-in").unwrap();
    let out = dir.path().join("dist");
    let tgz = archive("x86_64-unknown-linux-musl", &bin, &out);
    assert_eq!(
        tgz,
        out.canonicalize()
            .unwrap()
            .join("lbguard-x86_64-unknown-linux-musl.tar.gz")
    );
    let entries = listing(&tgz);
    let names: Vec<&str> = entries
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap_or_default())
        .collect();
    let top = "lbguard-x86_64-unknown-linux-musl";
    assert_eq!(
        names,
        [
            format!("{top}/"),
            format!("{top}/CHANGELOG.md"),
            format!("{top}/LICENSE"),
            format!("{top}/README.md"),
            format!("{top}/lbguard"),
        ]
    );
    for line in &entries {
        assert!(line.contains(" 0/0 "), "owned by root: {line}");
    }
    let exe = entries.iter().find(|l| l.ends_with("/lbguard")).unwrap();
    assert!(exe.starts_with("-rwxr-xr-x"), "{exe}");

    // The same inputs give the same bytes (a re-run of a release job changes no checksum).
    let first = std::fs::read(&tgz).unwrap();
    archive("x86_64-unknown-linux-musl", &bin, &out);
    assert_eq!(first, std::fs::read(&tgz).unwrap());

    // Windows gets a zip with lbguard.exe.
    let zip = archive("x86_64-pc-windows-msvc", &bin, &out);
    assert!(zip.ends_with("lbguard-x86_64-pc-windows-msvc.zip"));
    let list = Command::new("unzip").arg("-Z1").arg(&zip).output().unwrap();
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert_eq!(
        text(&list.stdout),
        "lbguard-x86_64-pc-windows-msvc/\nlbguard-x86_64-pc-windows-msvc/CHANGELOG.md\n\
         lbguard-x86_64-pc-windows-msvc/LICENSE\nlbguard-x86_64-pc-windows-msvc/README.md\n\
         lbguard-x86_64-pc-windows-msvc/lbguard.exe\n"
    );

    // A target name is a path component: nothing else gets in.
    let bad = script(
        "release-archive",
        &["../x", bin.to_str().unwrap(), out.to_str().unwrap()],
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn sha256sums_name_every_archive_and_catch_a_changed_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dist");
    let empty =
        std::fs::create_dir_all(&out).map(|_| script("release-sums", &[out.to_str().unwrap()]));
    assert_eq!(
        empty.unwrap().status.code(),
        Some(1),
        "no archives, no sums"
    );

    let bin = dir.path().join("built");
    std::fs::write(&bin, b"binary").unwrap();
    for target in [
        "x86_64-unknown-linux-musl",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        archive(target, &bin, &out);
    }
    std::fs::write(out.join("unrelated.txt"), "not an asset").unwrap();
    let run = script("release-sums", &[out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    let names: Vec<&str> = sums.lines().map(|l| &l[66..]).collect();
    assert_eq!(
        names,
        [
            "lbguard-aarch64-apple-darwin.tar.gz",
            "lbguard-x86_64-pc-windows-msvc.zip",
            "lbguard-x86_64-unknown-linux-musl.tar.gz"
        ]
    );
    let check = |dir: &Path| {
        Command::new("sha256sum")
            .args(["--check", "--strict", "SHA256SUMS"])
            .current_dir(dir)
            .output()
            .unwrap()
    };
    assert!(check(&out).status.success());
    std::fs::write(out.join("lbguard-aarch64-apple-darwin.tar.gz"), b"changed").unwrap();
    let changed = check(&out);
    assert!(!changed.status.success());
    assert!(
        text(&changed.stdout).contains("lbguard-aarch64-apple-darwin.tar.gz: FAILED"),
        "{}",
        text(&changed.stdout)
    );
}

/// The static Linux build the release ships (musl there; here, where rustup cannot add a
/// target offline, glibc with `+crt-static`). Building it takes minutes, so this reuses
/// target/x86_64-unknown-linux-gnu/release/lbguard when present and builds it only when
/// LBGUARD_STATIC_BUILD=1:
/// `RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu --bin lbguard`.
#[test]
fn the_static_linux_binary_needs_nothing_from_the_system() {
    let bin = PathBuf::from(format!(
        "{ROOT}/target/x86_64-unknown-linux-gnu/release/lbguard"
    ));
    if std::env::var("LBGUARD_STATIC_BUILD").as_deref() == Ok("1") {
        let build = Command::new(env!("CARGO"))
            .args(["build", "--release", "--locked", "--bin", "lbguard"])
            .args(["--target", "x86_64-unknown-linux-gnu"])
            .env("RUSTFLAGS", "-C target-feature=+crt-static")
            .current_dir(ROOT)
            .status()
            .unwrap();
        assert!(build.success());
    }
    if !bin.exists() {
        eprintln!(
            "static build: not run: no {} (LBGUARD_STATIC_BUILD=1 builds it)",
            bin.display()
        );
        return;
    }
    // No interpreter and no shared libraries.
    let headers = Command::new("readelf")
        .args(["-l", "-d", "-W"])
        .arg(&bin)
        .output()
        .unwrap();
    let headers = text(&headers.stdout);
    assert!(headers.contains("LOAD"), "{headers}");
    assert!(
        !headers.contains("INTERP"),
        "dynamically loaded:\n{headers}"
    );
    assert!(
        !headers.contains("(NEEDED)"),
        "shared libraries:\n{headers}"
    );
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let says = text(&ldd.stdout) + &text(&ldd.stderr);
    assert!(
        says.contains("not a dynamic executable") || says.contains("statically linked"),
        "ldd: {says}"
    );

    // Run it in an empty root: only the binary and one manifest (root only: chroot).
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| text(&o.stdout));
    if root_user.ok().as_deref().map(str::trim) != Some("0") {
        eprintln!("static build: empty-root run not run: chroot needs root");
        return;
    }
    let jail = tempfile::tempdir().unwrap();
    std::fs::copy(&bin, jail.path().join("lbguard")).unwrap();
    std::fs::copy(
        format!("{ROOT}/examples/alibaba/bad-address-type-value.yaml"),
        jail.path().join("bad.yaml"),
    )
    .unwrap();
    std::fs::copy(
        format!("{ROOT}/examples/alibaba/good-nlb.yaml"),
        jail.path().join("good.yaml"),
    )
    .unwrap();
    let run = |file: &str| {
        Command::new("chroot")
            .arg(jail.path())
            .args(["/lbguard", "check", file])
            .env_clear()
            // Only to find chroot; inside there is nothing to find.
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .output()
            .unwrap()
    };
    let bad = run("/bad.yaml");
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stdout).contains("deny [address-type-value]"),
        "{}",
        text(&bad.stdout)
    );
    assert_eq!(run("/good.yaml").status.code(), Some(0));
    assert_eq!(run("/missing.yaml").status.code(), Some(2));
}

/// CHANGELOG.md as its header says: Keep a Changelog's headings, and a "Changed verdicts"
/// list whose every entry names registered rules (or all of them) and says why.
#[test]
fn the_changelog_names_each_changed_verdicts_rule_and_why() {
    let changelog = std::fs::read_to_string(format!("{ROOT}/CHANGELOG.md")).unwrap();
    let rules = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .arg("rules")
        .output()
        .unwrap();
    let rules = text(&rules.stdout);
    let ids: Vec<&str> = rules
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(ids.len() > 20, "{rules}");

    assert!(changelog.starts_with("# Changelog\n"));
    const ORDER: [&str; 7] = [
        "Changed verdicts",
        "Added",
        "Changed",
        "Deprecated",
        "Removed",
        "Fixed",
        "Security",
    ];
    let mut releases = Vec::new();
    let mut kinds: Vec<usize> = Vec::new();
    let mut kind = "";
    let mut bullets: Vec<String> = Vec::new();
    for line in changelog.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            let (name, date) = h.split_once(" - ").unwrap_or((h, ""));
            let name = name.trim_start_matches('[').trim_end_matches(']');
            if name != "Unreleased" {
                let numbers: Vec<&str> = name.split('.').collect();
                assert!(
                    numbers.len() == 3 && numbers.iter().all(|n| n.parse::<u64>().is_ok()),
                    "{line}"
                );
                let d: Vec<&str> = date.split('-').collect();
                assert!(
                    d.len() == 3 && d.iter().all(|n| n.parse::<u32>().is_ok()),
                    "{line}"
                );
            }
            releases.push(name.to_string());
            kinds.clear();
        } else if let Some(h) = line.strip_prefix("### ") {
            let at = ORDER
                .iter()
                .position(|k| *k == h)
                .unwrap_or_else(|| panic!("unknown heading: {line}"));
            assert!(kinds.last().is_none_or(|&l| l < at), "out of order: {line}");
            kinds.push(at);
            kind = ORDER[at];
        } else if kind == "Changed verdicts" {
            if line.starts_with("- ") {
                bullets.push(line.to_string());
            } else if line.starts_with("  ") {
                let last = bullets.last_mut().expect("a bullet");
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    assert_eq!(releases.first().map(String::as_str), Some("Unreleased"));
    for release in &releases {
        assert!(
            changelog.contains(&format!("\n[{release}]: https://")),
            "no link for [{release}]"
        );
    }
    assert!(!bullets.is_empty());
    for bullet in &bullets {
        assert!(bullet.contains(" Why: "), "no why: {bullet}");
        let head = &bullet[2..];
        if head.starts_with("All rules: ") {
            continue;
        }
        // `rule-a`, `rule-b` (Provider): ...
        let names = head.split(" (").next().unwrap_or_default();
        for name in names.split(", ") {
            let id = name.trim_matches('`');
            assert!(
                name.starts_with('`') && ids.contains(&id),
                "not a rule id: {name} in {bullet}"
            );
        }
    }
}
