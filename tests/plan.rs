//! The plan against cases derived from the controllers' code (tests/fixtures/plan/*.yaml):
//! for each, the operations the code performs appear in the plan in the code's order, each
//! citing the line that performs it, no destructive step is left out of the case, and the
//! plan rules warn at admission exactly as the case says. See the fixtures' README.

use std::collections::BTreeSet;
use std::path::Path;

use lbguard::config::Config;
use lbguard::engine::{
    Ctx, EmptyCluster, EmptyInventory, Input, Inventory, Operation, UserInfo, Versions, evaluate,
    providers,
};
use lbguard::inventory::Snapshot;
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Counts this thread's allocations, so a test can show a path allocates nothing.
struct Counting;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from the system allocator.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

struct Case {
    name: String,
    doc: Value,
}

fn cases() -> Vec<Case> {
    let dir = Path::new(ROOT).join("tests/fixtures/plan");
    let mut out: Vec<Case> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| Case {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            doc: lbguard::yaml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn service(v: &Value) -> Option<k8s_openapi::api::core::v1::Service> {
    (!v.is_null()).then(|| serde_json::from_value(v.clone()).unwrap())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn every_case_plans_what_the_code_does_and_warns_as_it_says() {
    let cases = cases();
    assert!(cases.len() >= 15, "only {} plan cases", cases.len());
    for case in cases {
        let name = &case.name;
        let d = &case.doc;
        let config = Config::from_yaml(
            &serde_json::to_string(&d["config"])
                .unwrap()
                .replace("null", "{}"),
            name,
        )
        .unwrap();
        let versions = Versions::from_config(&config);
        let facts = serde_json::json!({"loadBalancers": d["facts"].as_array().cloned().unwrap_or_default()});
        let snapshot = Snapshot::parse(&serde_json::to_string(&facts).unwrap(), name).unwrap();
        let inventory: &dyn Inventory = if d["facts"].is_null() {
            &EmptyInventory
        } else {
            &snapshot
        };
        let (new, old) = (service(&d["new"]), service(&d["old"]));
        let op = if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let input = Input::new(op, new, old, UserInfo::default()).unwrap();

        // The operations, in order, each with its line.
        let ctx = Ctx::new(&input, &config, &versions, &EmptyCluster, inventory);
        let asks = lbguard::plan::relevant(&ctx);
        assert_eq!(asks, d["asks"].as_bool().unwrap_or(true), "{name}");
        let steps: Vec<lbguard::plan::Step> = providers(&ctx)
            .into_iter()
            .flat_map(|p| {
                lbguard::plan::of(&ctx, lbguard::providers::catalog(p))
                    .steps
                    .clone()
            })
            .collect();
        let mut at = 0;
        for want in d["plan"].as_array().unwrap() {
            let label = want["step"].as_str().unwrap();
            let found = steps[at..]
                .iter()
                .position(|s| format!("{} {}", s.action.symbol(), s.subject) == label)
                .unwrap_or_else(|| {
                    panic!("{name}: no step \"{label}\" after step {at} in {steps:#?}")
                });
            let s = &steps[at + found];
            assert_eq!(s.source, want["line"].as_str().unwrap(), "{name}: {label}");
            if !want["calls"].is_null() {
                assert_eq!(s.calls, strings(&want["calls"]), "{name}: {label}");
            }
            at += found + 1;
        }
        if asks {
            for s in steps.iter().filter(|s| s.action.destructive()) {
                let label = format!("{} {}", s.action.symbol(), s.subject);
                assert!(
                    d["plan"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|w| w["step"] == label.as_str()),
                    "{name}: destructive step \"{label}\" is not in the case"
                );
            }
        }

        // The warnings at admission: exactly the case's plan rules.
        let verdict = evaluate(&input, &config, &versions, &EmptyCluster, inventory);
        let warned: BTreeSet<&str> = verdict
            .violations
            .iter()
            .filter(|v| v.rule.starts_with("plan-"))
            .map(|v| v.rule)
            .collect();
        let expected: BTreeSet<String> = strings(&d["warnings"]).into_iter().collect();
        assert_eq!(
            warned
                .iter()
                .map(|s| s.to_string())
                .collect::<BTreeSet<_>>(),
            expected,
            "{name}: {:#?}",
            verdict.violations
        );
        for v in verdict
            .violations
            .iter()
            .filter(|v| v.rule.starts_with("plan-"))
        {
            assert_eq!(
                v.action,
                lbguard::rules::Action::Warn,
                "{name}: {}",
                v.message
            );
        }
        let denied: BTreeSet<&str> = verdict.denials().map(|v| v.rule).collect();
        for rule in strings(&d["denied"]) {
            assert!(
                denied.contains(rule.as_str()),
                "{name}: not denied by {rule}: {denied:?}"
            );
        }
    }
}

/// Each plan rule can be raised to deny.
#[test]
fn a_plan_rule_set_to_deny_denies() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "clb-port-removed-deletes-listener.yaml")
        .unwrap();
    let config = Config::from_yaml("rules: {plan-delete-listener: deny}", "t").unwrap();
    let versions = Versions::from_config(&config);
    let input = Input::new(
        Operation::Update,
        service(&case.doc["new"]),
        service(&case.doc["old"]),
        UserInfo::default(),
    )
    .unwrap();
    let verdict = evaluate(&input, &config, &versions, &EmptyCluster, &EmptyInventory);
    assert!(!verdict.allowed());
    let msg = verdict.denial_message().unwrap();
    assert!(
        msg.starts_with("[plan-delete-listener] the cloud controller deletes listener 443/TCP"),
        "{msg}"
    );
}

/// An update that asks nothing new of the cloud computes no plan: the rules return before
/// building one, and allocate nothing (what `plan::relevant` compares is read in place).
#[test]
fn an_unchanged_update_computes_no_plan() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "clb-labels-only-update-plans-nothing.yaml")
        .unwrap();
    let config = Config::default();
    let versions = Versions::from_config(&config);
    let input = Input::new(
        Operation::Update,
        service(&case.doc["new"]),
        service(&case.doc["old"]),
        UserInfo::default(),
    )
    .unwrap();
    let ctx = Ctx::new(&input, &config, &versions, &EmptyCluster, &EmptyInventory);
    let p = providers(&ctx);
    let rules: Vec<_> = lbguard::rules::registry()
        .iter()
        .filter(|r| r.id.starts_with("plan-"))
        .collect();
    assert_eq!(rules.len(), 6);
    let mut findings = lbguard::engine::Findings::new();
    let before = allocations();
    for rule in &rules {
        lbguard::engine::run_rule(rule, &ctx, &p, &mut findings);
    }
    assert_eq!(allocations() - before, 0, "the plan rules allocated");
    assert!(findings.is_empty());
    assert!(
        ctx.plans.iter().all(|c| c.get().is_none()),
        "a plan was computed"
    );

    // The counter counts: an update that removes a port plans, and allocates.
    let case = cases()
        .into_iter()
        .find(|c| c.name == "clb-port-removed-deletes-listener.yaml")
        .unwrap();
    let input = Input::new(
        Operation::Update,
        service(&case.doc["new"]),
        service(&case.doc["old"]),
        UserInfo::default(),
    )
    .unwrap();
    let ctx = Ctx::new(&input, &config, &versions, &EmptyCluster, &EmptyInventory);
    let p = providers(&ctx);
    let before = allocations();
    for rule in &rules {
        lbguard::engine::run_rule(rule, &ctx, &p, &mut findings);
    }
    assert!(allocations() > before);
    assert!(!findings.is_empty());
}

/// `lbguard plan` on a case's files: (exit code, stdout, stderr).
fn run_plan(case: &str, extra: &[&str]) -> (i32, String, String) {
    let case = cases().into_iter().find(|c| c.name == case).unwrap();
    let dir =
        std::env::temp_dir().join(format!("lbguard-plan-{}-{}", std::process::id(), case.name));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"));
    cmd.arg("plan");
    for (side, flag) in [
        ("new", None),
        ("old", Some("--old")),
        ("facts", Some("--inventory")),
    ] {
        let v = &case.doc[side];
        if v.is_null() {
            continue;
        }
        let v = if side == "facts" {
            serde_json::json!({ "loadBalancers": v })
        } else {
            v.clone()
        };
        let path = dir.join(format!("{side}.yaml"));
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        cmd.args(flag);
        cmd.arg(&path);
    }
    let out = cmd.args(extra).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The command prints the steps like `terraform plan` and exits 3 when one destroys.
#[test]
fn the_command_prints_the_plan_and_exits_3_when_it_destroys() {
    let (code, out, err) = run_plan("clb-port-removed-deletes-listener.yaml", &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("shop/web ("), "{out}");
    assert!(out.contains("    - listener 443/TCP\n"), "{out}");
    assert!(
        out.contains(
            "DeleteLoadBalancerListener · clbv1/listeners.go:676-689 · [plan-delete-listener]"
        ),
        "{out}"
    );
    assert!(out.contains("to destroy"), "{out}");

    let (code, out, err) = run_plan("clb-force-override-takes-over.yaml", &["--output", "json"]);
    assert_eq!(code, 3, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let steps = &doc["services"][0]["plans"][0]["steps"];
    let take = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["action"] == "take-over")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(take["rule"], "plan-takeover");
    assert_eq!(take["peer"], "shop/other");
    assert_eq!(doc["summary"]["takeOver"], 1, "{out}");
}

/// A plan with nothing destructive exits 0; one the controller never reconciles says so;
/// unreadable input exits 2.
#[test]
fn the_command_exits_0_without_destruction_and_2_on_errors() {
    let (code, out, err) = run_plan("clb-create.yaml", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("+ "), "{out}");
    let (code, out, err) = run_plan("clb-labels-only-update-plans-nothing.yaml", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No changes"), "{out}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["plan", "/nonexistent/service.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lbguard plan:"));
}

/// The plan rules' findings reach `lbguard check`'s SARIF like any finding, and `lbguard
/// rules --sources` lists each plan rule with the controller lines it comes from.
#[test]
fn plan_findings_reach_sarif_and_rules_list_their_sources() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .current_dir(ROOT)
        .args(["check", "--provider", "alibaba", "--output", "sarif"])
        .args([
            "--old",
            "examples/plan/web-live.yaml",
            "examples/plan/web.yaml",
        ])
        .output()
        .unwrap();
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results: BTreeSet<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["ruleId"].as_str())
        .collect();
    assert_eq!(
        results,
        BTreeSet::from(["plan-delete-listener", "plan-no-reset"]),
        "{sarif:#}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["rules", "--sources", "--provider", "alibaba"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for id in [
        "plan-takeover",
        "plan-delete-listener",
        "plan-orphan",
        "plan-no-reset",
        "plan-convert",
        "plan-misread",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{id}: ")))
            .unwrap_or_else(|| panic!("{id} not listed:\n{text}"));
        assert!(
            line.contains("kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/"),
            "{line}"
        );
    }
}
