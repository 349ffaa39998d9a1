//! scripts/action/install.sh: which release, from where, checked how.

use std::path::Path;
use std::process::Command;

use super::{ROOT, Release, Run, TARGETS, text};

/// scripts/action/install.sh on a runner of `os`/`arch`, with the step's environment.
fn install(os: &str, arch: &str, env: &[(&str, &str)]) -> Run {
    let runner = tempfile::tempdir().unwrap();
    let (path, output) = (runner.path().join("path"), runner.path().join("output"));
    let temp = runner.path().join("temp");
    std::fs::create_dir(&temp).unwrap();
    let mut cmd = Command::new(format!("{ROOT}/scripts/action/install.sh"));
    cmd.env("RUNNER_OS", os)
        .env("RUNNER_ARCH", arch)
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_PATH", &path)
        .env("GITHUB_OUTPUT", &output)
        .env_remove("GITHUB_ACTION_PATH")
        .env_remove("GITHUB_SERVER_URL")
        .env_remove("GITHUB_API_URL");
    for var in [
        "LBGUARD_VERSION",
        "LBGUARD_DOWNLOAD_URL",
        "ACTION_REPOSITORY",
        "ACTION_REF",
        "ACTION_TOKEN",
    ] {
        cmd.env(var, "");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Run {
        github_path: read(&path),
        github_output: read(&output),
        step_summary: String::new(),
        out,
        _runner: Some(runner),
    }
}

#[test]
fn install_fetches_checks_and_puts_the_runners_binary_on_the_path() {
    let release = Release::new("9.8.7", TARGETS, "assets");
    let url = release.url("assets");
    for (os, arch, target, exe) in [
        ("Linux", "X64", "x86_64-unknown-linux-musl", "lbguard"),
        ("macOS", "ARM64", "aarch64-apple-darwin", "lbguard"),
    ] {
        let run = install(
            os,
            arch,
            &[("LBGUARD_VERSION", "9.8.7"), ("LBGUARD_DOWNLOAD_URL", &url)],
        );
        assert!(run.out.status.success(), "{os}: {}", text(&run.out.stderr));
        let dir = run.github_path.trim();
        assert!(
            dir.ends_with(&format!("lbguard-v9.8.7/lbguard-{target}")),
            "{dir}"
        );
        let bin = format!("{dir}/{exe}");
        assert!(
            run.github_output.contains(&format!("path={bin}\n")),
            "{}",
            run.github_output
        );
        assert!(
            run.github_output.contains("version=9.8.7\n"),
            "{}",
            run.github_output
        );
        let ran = Command::new(&bin).arg("--version").output().unwrap();
        assert_eq!(text(&ran.stdout), "lbguard 9.8.7\n");
        assert!(text(&run.out.stdout).contains("matches SHA256SUMS"));
    }
    // Linux on arm64 has no archive in this release: the download fails, nothing is added.
    let run = install("Linux", "ARM64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(
        text(&run.out.stderr).contains("cannot download"),
        "{}",
        text(&run.out.stderr)
    );
    assert!(run.github_path.is_empty());
    // No release binary for the platform at all.
    let run = install("Linux", "X86", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("no lbguard release binary for Linux X86"));
}

#[test]
fn install_refuses_an_archive_that_does_not_match_its_checksum() {
    let release = Release::new("1.0.0", TARGETS, "assets");
    let url = release.url("assets");
    let asset = release.path("assets/lbguard-x86_64-unknown-linux-musl.tar.gz");
    // Changed after the sums were taken (a tampered mirror, a truncated download).
    let mut bytes = std::fs::read(&asset).unwrap();
    bytes.push(0);
    std::fs::write(&asset, bytes).unwrap();
    let run = install("Linux", "X64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    let err = text(&run.out.stderr);
    assert!(
        err.contains("lbguard-x86_64-unknown-linux-musl.tar.gz: SHA-256 is"),
        "{err}"
    );
    assert!(run.github_path.is_empty() && run.github_output.is_empty());

    // An archive SHA256SUMS does not name is not trusted either.
    let sums = release.path("assets/SHA256SUMS");
    let kept: String = std::fs::read_to_string(&sums)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("darwin"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&sums, kept).unwrap();
    let run = install("macOS", "ARM64", &[("LBGUARD_DOWNLOAD_URL", &url)]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("names no lbguard-aarch64-apple-darwin.tar.gz"));
}

#[test]
fn install_picks_the_release_the_uses_line_names() {
    // GITHUB_SERVER_URL/OWNER/REPO/releases/download/TAG, laid out locally.
    let tagged = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    let server = tagged.url("");
    let server = server.trim_end_matches('/');
    let ok = |run: &Run, want: &str| {
        assert!(run.out.status.success(), "{}", text(&run.out.stderr));
        assert!(
            run.github_output.contains(&format!("version={want}\n")),
            "{}",
            run.github_output
        );
    };
    let uses = [
        ("GITHUB_SERVER_URL", server),
        ("ACTION_REPOSITORY", "o/lbguard"),
        ("ACTION_REF", "v1.2.3"),
    ];
    ok(&install("Linux", "X64", &uses), "1.2.3");
    // Where github.action_ref is empty, the action's own path names it.
    let path = [
        ("GITHUB_SERVER_URL", server),
        (
            "GITHUB_ACTION_PATH",
            "/home/runner/work/_actions/o/lbguard/v1.2.3",
        ),
    ];
    ok(&install("Linux", "X64", &path), "1.2.3");
    // A branch (`@main`) runs the latest release, and says so.
    let latest = Release::new("2.0.0", TARGETS, "o/lbguard/releases/latest/download");
    let server = latest.url("");
    let branch = [
        ("GITHUB_SERVER_URL", server.trim_end_matches('/')),
        ("ACTION_REPOSITORY", "o/lbguard"),
        ("ACTION_REF", "main"),
    ];
    let run = install("Linux", "X64", &branch);
    ok(&run, "2.0.0");
    assert!(
        text(&run.out.stdout).contains(
            "::notice title=lbguard::uses: o/lbguard@main is neither a release tag nor a commit: running the latest release"
        ),
        "{}",
        text(&run.out.stdout)
    );
    // A version input that is not a version goes nowhere near a URL.
    let run = install("Linux", "X64", &[("LBGUARD_VERSION", "1.2.3/../../x")]);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("is not a release version"));
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// The action as the runner keeps a commit-pinned `uses:`: _actions/o/lbguard/SHA, its
/// Cargo.toml naming `version`.
fn pinned(runner: &Path, version: &str) -> std::path::PathBuf {
    let at = runner.join(format!("_actions/o/lbguard/{SHA}"));
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(
        at.join("Cargo.toml"),
        format!("[package]\nname = \"lbguard\"\nversion = \"{version}\"\n"),
    )
    .unwrap();
    at
}

/// What the REST API answers for `GET /repos/o/lbguard/commits/TAG` with the SHA media type
/// (the tag's commit), laid out under `api/`.
fn tag_is(release: &Release, tag: &str, sha: &str) {
    let file = release.path(&format!("api/repos/o/lbguard/commits/{tag}"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, format!("{sha}\n")).unwrap();
}

#[test]
fn a_commit_pin_runs_the_release_that_commit_is_and_never_the_latest() {
    let release = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    // A newer latest release, which a pinned action must not run.
    let newer = release.path("o/lbguard/releases/latest/download");
    std::fs::create_dir_all(&newer).unwrap();
    let server = release.url("");
    let server = server.trim_end_matches('/');
    let api = release.url("api");
    let runner = tempfile::tempdir().unwrap();
    let action = pinned(runner.path(), "1.2.3");
    let action = action.to_str().unwrap();
    let env = |more: &[(&'static str, &'static str)]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = vec![
            ("GITHUB_SERVER_URL".into(), server.into()),
            ("GITHUB_API_URL".into(), api.clone()),
            ("GITHUB_ACTION_PATH".into(), action.into()),
            ("ACTION_REPOSITORY".into(), "o/lbguard".into()),
            ("ACTION_REF".into(), SHA.into()),
            ("ACTION_TOKEN".into(), "t0ken".into()),
        ];
        v.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        v
    };
    let run = |env: &[(String, String)]| {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        install("Linux", "X64", &env)
    };

    // The API says tag v1.2.3 is this commit: release 1.2.3.
    tag_is(&release, "v1.2.3", SHA);
    let ok = run(&env(&[]));
    assert!(ok.out.status.success(), "{}", text(&ok.out.stderr));
    assert!(
        ok.github_output.contains("version=1.2.3\n"),
        "{}",
        ok.github_output
    );
    assert!(
        text(&ok.out.stderr).contains(&format!("commit {SHA} is release v1.2.3")),
        "{}",
        text(&ok.out.stderr)
    );
    // The runner's path alone names the commit too (github.action_ref empty).
    let ok = run(&env(&[("ACTION_REF", ""), ("ACTION_REPOSITORY", "")]));
    assert!(ok.out.status.success(), "{}", text(&ok.out.stderr));

    // The tag is another commit: this one is not a release.
    tag_is(
        &release,
        "v1.2.3",
        "fedcba9876543210fedcba9876543210fedcba98",
    );
    let run_other = run(&env(&[]));
    assert_eq!(run_other.out.status.code(), Some(1));
    let err = text(&run_other.out.stderr);
    assert!(
        err.contains(&format!(
            "uses: pins commit {SHA}, which is not release v1.2.3 (tag v1.2.3 is commit fedcba98"
        )) && err.contains("set the version input"),
        "{err}"
    );
    assert!(run_other.github_path.is_empty());

    // No answer (no such tag, no API): the version input is asked for, not the latest run.
    std::fs::remove_file(release.path("api/repos/o/lbguard/commits/v1.2.3")).unwrap();
    let unsure = run(&env(&[]));
    assert_eq!(unsure.out.status.code(), Some(1));
    let err = text(&unsure.out.stderr);
    assert!(
        err.contains(&format!(
            "uses: pins commit {SHA}; cannot confirm that it is release v1.2.3"
        )) && err.contains("(version: 1.2.3)"),
        "{err}"
    );
    // ... which then decides, without asking.
    let chosen = run(&env(&[("LBGUARD_VERSION", "1.2.3")]));
    assert!(chosen.out.status.success(), "{}", text(&chosen.out.stderr));
    assert!(chosen.github_output.contains("version=1.2.3\n"));

    // An action whose Cargo.toml names no version.
    std::fs::write(format!("{action}/Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let bare = run(&env(&[]));
    assert_eq!(bare.out.status.code(), Some(1));
    assert!(
        text(&bare.out.stderr).contains("names no version"),
        "{}",
        text(&bare.out.stderr)
    );
}

#[test]
fn install_refuses_a_plain_http_mirror_with_a_message() {
    for (url, want) in [
        ("http://127.0.0.1:9/lbguard", "is plain HTTP"),
        ("HTTP://127.0.0.1:9/lbguard", "is plain HTTP"),
        (
            "ftp://127.0.0.1:9/lbguard",
            "is neither https:// nor file://",
        ),
        ("127.0.0.1/lbguard", "is neither https:// nor file://"),
    ] {
        let run = install(
            "Linux",
            "X64",
            &[("LBGUARD_DOWNLOAD_URL", url), ("LBGUARD_VERSION", "1.0.0")],
        );
        assert_eq!(run.out.status.code(), Some(1), "{url}");
        let err = text(&run.out.stderr);
        assert!(err.contains(&format!("download-url {url} {want}")), "{err}");
        assert!(!err.contains("Protocol"), "{err}");
    }
    // A plain-HTTP server behind the default URL is refused the same way.
    let run = install(
        "Linux",
        "X64",
        &[
            ("GITHUB_SERVER_URL", "http://ghes.invalid"),
            ("ACTION_REPOSITORY", "o/lbguard"),
            ("ACTION_REF", "v1.0.0"),
        ],
    );
    assert_eq!(run.out.status.code(), Some(1));
    assert!(text(&run.out.stderr).contains("is plain HTTP"));
}

/// cosign on the runner (a stand-in that records its arguments and answers as told): the
/// release's SHA256SUMS must carry the release workflow's signature, or nothing is installed.
#[test]
fn install_checks_the_cosign_bundle_when_cosign_is_on_the_runner() {
    let release = Release::new("1.2.3", TARGETS, "o/lbguard/releases/download/v1.2.3");
    let assets = release.path("o/lbguard/releases/download/v1.2.3");
    let server = release.url("");
    let server = server.trim_end_matches('/').to_string();
    let tools = tempfile::tempdir().unwrap();
    let log = tools.path().join("cosign.log");
    let cosign = tools.path().join("cosign");
    std::fs::write(
        &cosign,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\nexit \"${{COSIGN_EXIT:-0}}\"\n",
            log.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&cosign)
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |exit: &str, version: &str| {
        install(
            "Linux",
            "X64",
            &[
                ("PATH", &path),
                ("COSIGN_EXIT", exit),
                ("GITHUB_SERVER_URL", &server),
                ("ACTION_REPOSITORY", "o/lbguard"),
                ("ACTION_REF", "v1.2.3"),
                ("LBGUARD_VERSION", version),
                (
                    "LBGUARD_DOWNLOAD_URL",
                    &release.url("o/lbguard/releases/download/v1.2.3"),
                ),
            ],
        )
    };

    // No bundle beside SHA256SUMS: not installed.
    let unsigned = run("0", "");
    assert_eq!(unsigned.out.status.code(), Some(1));
    assert!(
        text(&unsigned.out.stderr).contains("SHA256SUMS.sigstore.json"),
        "{}",
        text(&unsigned.out.stderr)
    );
    assert!(unsigned.github_path.is_empty());

    std::fs::write(assets.join("SHA256SUMS.sigstore.json"), "{}").unwrap();
    let signed = run("0", "");
    assert!(signed.out.status.success(), "{}", text(&signed.out.stderr));
    assert!(
        text(&signed.out.stdout).contains("SHA256SUMS is signed by o/lbguard's release workflow")
    );
    let args = std::fs::read_to_string(&log).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], "verify-blob");
    assert!(args[1].ends_with("/SHA256SUMS"), "{args:?}");
    for pair in [
        [
            "--certificate-oidc-issuer",
            "https://token.actions.githubusercontent.com",
        ],
        [
            "--certificate-identity",
            &format!("{server}/o/lbguard/.github/workflows/release.yml@refs/tags/v1.2.3"),
        ],
    ] {
        assert!(args.windows(2).any(|w| w == pair), "{pair:?} in {args:?}");
    }
    assert!(
        args.windows(2)
            .any(|w| w[0] == "--bundle" && w[1].ends_with("/SHA256SUMS.sigstore.json")),
        "{args:?}"
    );
    // The latest release: any of the release workflow's tags.
    assert!(run("0", "latest").out.status.success());
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.contains("--certificate-identity-regexp\n^")
            && args.contains("/o/lbguard/\\.github/workflows/release\\.yml@refs/tags/v\n"),
        "{args}"
    );

    // A signature cosign does not accept: nothing is installed.
    let forged = run("1", "");
    assert_eq!(forged.out.status.code(), Some(1));
    assert!(
        text(&forged.out.stderr).contains("is not signed by o/lbguard's release workflow"),
        "{}",
        text(&forged.out.stderr)
    );
    assert!(forged.github_path.is_empty());
}
