//! SARIF, text and JUnit output, a closed stdout, help, `inventory dump` and config messages.

use super::*;

/// `check --output sarif` over every example: valid SARIF 2.1.0 (the OASIS schema, kept as a
/// fixture), one rule per lbguard rule, one result per finding, each at the line and column
/// of the field it names.
#[test]
fn sarif_output_is_valid_and_points_at_the_field() {
    let out = lbguard(&["check", "--output", "sarif", "examples/"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sarif = json(&out);
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sarif-schema-2.1.0.json"),
    )
    .unwrap();
    // The published 2.1.0 schema's `language` patterns have a bare `]`, which ECMAScript's
    // legacy syntax reads as a literal and strict engines reject: escape it, same meaning.
    let text = text.replace("{2}]?$", "{2}\\\\]?$");
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The validator does reject what the schema forbids.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.len() >= 45);
    // Help names the documents users can find, not lbguard's numbers for them.
    for r in rules {
        let help = r["help"]["text"].as_str().unwrap();
        assert!(!help.contains("Source: 00"), "{help}");
    }
    let results = run["results"].as_array().unwrap();
    // The same findings as the JSON output, with the same positions.
    let plain = json(&lbguard(&["check", "--output", "json", "examples/"], None));
    let mut expected = Vec::new();
    for r in plain["results"].as_array().unwrap() {
        let file = r["file"]
            .as_str()
            .unwrap()
            .split(" document")
            .next()
            .unwrap()
            .to_string();
        for v in r["violations"].as_array().unwrap() {
            expected.push((file.clone(), v.clone()));
        }
    }
    assert_eq!(results.len(), expected.len());
    let (mut annotation_checked, mut other_checked) = (0, 0);
    for (res, (file, v)) in results.iter().zip(&expected) {
        assert_eq!(res["ruleId"], v["rule"]);
        assert_eq!(
            rules[res["ruleIndex"].as_u64().unwrap() as usize]["id"],
            v["rule"]
        );
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], file.as_str());
        let (line, col) = (
            loc["region"]["startLine"].as_u64().unwrap() as usize,
            loc["region"]["startColumn"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            (line, col),
            (
                v["line"].as_u64().unwrap() as usize,
                v["column"].as_u64().unwrap() as usize
            )
        );
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
                .unwrap();
        let at_line = text
            .lines()
            .nth(line - 1)
            .unwrap_or_else(|| panic!("{file}:{line}"));
        // An annotation finding points at that annotation's key.
        if let Some(key) = v["field"]
            .as_str()
            .unwrap()
            .strip_prefix("metadata.annotations[")
            .and_then(|k| k.strip_suffix(']'))
            && text.contains(key)
        {
            let from_col: String = at_line.chars().skip(col - 1).collect();
            assert!(
                from_col.trim_start_matches(['"', '\'']).starts_with(key),
                "{file}:{line}:{col} is {at_line:?}, not {key}"
            );
            annotation_checked += 1;
        } else if let Some(last) = v["field"].as_str().unwrap().rsplit('.').next()
            && !last.is_empty()
            && !last.contains('[')
            && text.contains(&format!("{last}:"))
        {
            // Another field that is in the file: the position is its key.
            let from_col: String = at_line.chars().skip(col - 1).collect();
            assert!(
                from_col.starts_with(last),
                "{file}:{line}:{col} is {at_line:?}, not {last}"
            );
            other_checked += 1;
        }
    }
    assert!(annotation_checked >= 20, "{annotation_checked}");
    assert!(other_checked >= 1, "{other_checked}");
}

#[test]
fn text_output_is_compiler_style_and_junit_counts_failures() {
    let out = lbguard(&["check", "examples/ctyun/bad-ip-mode-value.yaml"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("examples/ctyun/bad-ip-mode-value.yaml:7:5: deny [ip-mode-value] "),
        "{text}"
    );
    let out = lbguard(&["check", "--output", "junit", "examples/ctyun/"], None);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lbguard check\""
        ),
        "{xml}"
    );
    let cases = xml.matches("<testcase ").count();
    let failures = xml.matches("<failure ").count();
    assert!(
        xml.contains(&format!("tests=\"{cases}\" failures=\"{failures}\"")),
        "{xml}"
    );
    assert!(failures >= 3 && cases > failures, "{xml}");
    assert!(xml.contains("type=\"ip-mode-value\""), "{xml}");
    assert!(
        xml.contains("bad-ip-mode-value.yaml:7:5: [ip-mode-value]"),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<testsuite ").count(),
        xml.matches("</testsuite>").count()
    );
}

/// `lbguard check ... | head`: the reader goes away; lbguard stops without a panic.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["check", "examples/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn every_flag_and_output_format_has_help() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() {
                missing.push(format!("{path} --{id}"));
            }
            for v in arg.get_possible_values() {
                if arg.get_action().takes_values()
                    && !matches!(v.get_name(), "true" | "false")
                    && v.get_help().is_none()
                {
                    missing.push(format!("{path} --{id} {}", v.get_name()));
                }
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&lbguard::cli::Cli::command(), "lbguard", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:?}");
}

#[test]
fn inventory_dump_offers_only_what_applies() {
    let out = lbguard(&["inventory", "dump", "--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for absent in ["--cluster-version", "--ccm-version", "auto"] {
        assert!(!help.contains(absent), "{absent} in:\n{help}");
    }
    let out = lbguard(
        &["inventory", "dump", "--provider", "auto", "--id", "x"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected ctyun, alibaba, huawei or volcengine)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_provider_in_the_config_reads_like_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "provider: alibbaa\n").unwrap();
    let want = "unknown provider \"alibbaa\" (expected ctyun, alibaba, huawei, volcengine or auto)";
    let flag = lbguard(&["check", "--provider", "alibbaa", "-"], Some(""));
    assert!(stderr(&flag).contains(want), "{}", stderr(&flag));
    let file = lbguard(
        &["check", "--config", config.to_str().unwrap(), "-"],
        Some(""),
    );
    assert_eq!(file.status.code(), Some(2));
    let text = stderr(&file);
    assert!(text.contains(want) && text.contains("provider"), "{text}");
    assert!(!text.contains("untagged enum"), "{text}");
}

#[test]
fn rules_prints_a_header() {
    let out = lbguard(&["rules"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["RULE", "DEFAULT", "CLASS", "PROVIDERS", "TITLE"],
        "{text}"
    );
    // The columns line up under it.
    let second = text.lines().nth(1).unwrap();
    assert_eq!(
        second.find(" deny ").or(second.find(" warn ")),
        text.lines().next().unwrap().find(" DEFAULT")
    );
}

/// `rules --sources` names the provider documents, in text as in Markdown: the numbers
/// lbguard keeps for them are explained nowhere a reader looks.
#[test]
fn rules_sources_name_the_documents() {
    for args in [
        &["rules", "--sources"][..],
        &["rules", "--sources", "--markdown"],
    ] {
        let out = lbguard(args, None);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("lb-id-immutable: ") || text.contains("### `lb-id-immutable`"),
            "{text}"
        );
        assert!(
            text.contains("CTyun's guide to LoadBalancer Services (Chinese)"),
            "{args:?}"
        );
        for bare in ["000/001", " 000,", " 001,", " 002 ", " 004 ", "seed 00"] {
            assert!(!text.contains(bare), "{args:?} prints {bare:?}");
        }
    }
}
