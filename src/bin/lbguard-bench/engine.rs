//! The `engine` benchmark: one admission through the full rule set (the default config, every
//! provider's rules on) per provider body, as `evaluate` runs it for the webhook and `check`.
//! Time per evaluation depends on the machine's load; the instruction count (`--instructions`,
//! each body run under valgrind's callgrind) does not, and is the figure BENCHMARKS.md
//! records per commit.

use std::process::Command;
use std::time::Instant;

use k8s_openapi::api::core::v1::Service;
use lbguard::cluster::ClusterState;
use lbguard::config::Config;
use lbguard::engine::{EmptyInventory, Input, Operation, UserInfo, Versions, evaluate};
use serde::{Deserialize, Serialize};

use crate::cache::percentile;

/// The bodies: each provider's example Service, reviewed as an UPDATE that changes a label
/// (old and new both run every object rule; the transition rules compare them).
pub const BODIES: &[(&str, &str)] = &[
    (
        "alibaba-clb",
        include_str!("../../../examples/alibaba/good-reuse-intranet.yaml"),
    ),
    (
        "alibaba-nlb",
        include_str!("../../../examples/alibaba/good-nlb.yaml"),
    ),
    (
        "huawei-cce",
        include_str!("../../../examples/huawei/good-dedicated-https.yaml"),
    ),
    (
        "volcengine-vke",
        include_str!("../../../examples/volcengine/good-reuse-clb.yaml"),
    ),
    (
        "ctyun",
        include_str!("../../../examples/ctyun/good-reuse-intranet.yaml"),
    ),
];

#[derive(Debug, Serialize, Deserialize)]
pub struct Row {
    pub body: String,
    pub findings: usize,
    pub p50_ns: f64,
    pub p99_ns: f64,
    /// Instructions per evaluation (callgrind), when asked for.
    pub instructions: Option<u64>,
}

fn input(yaml: &str) -> Input {
    let old: Service = lbguard::yaml::from_str(yaml).expect("example Service");
    let mut new = old.clone();
    new.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("tier".into(), "updated".into());
    Input::new(Operation::Update, Some(new), Some(old), UserInfo::default()).expect("input")
}

/// Evaluates `body` `iterations` times; the time of each, and the findings of the last.
fn run(body: &str, iterations: usize) -> (Vec<f64>, usize) {
    let yaml = BODIES
        .iter()
        .find(|(name, _)| *name == body)
        .unwrap_or_else(|| panic!("no body {body}"))
        .1;
    let config = Config::default();
    let versions = Versions::from_config(&config);
    let state = ClusterState::new(config.provider);
    let input = input(yaml);
    let mut times = Vec::with_capacity(iterations);
    let mut findings = 0;
    for _ in 0..iterations {
        let t = Instant::now();
        let v = evaluate(&input, &config, &versions, &state, &EmptyInventory);
        times.push(t.elapsed().as_secs_f64() * 1e9);
        findings = v.violations.len();
        assert!(v.exempt.is_none(), "{body}: {:?}", v.notes);
    }
    times.sort_by(f64::total_cmp);
    (times, findings)
}

/// Internal (`--one`): runs one body, prints its findings and times as JSON.
pub fn one(body: &str, iterations: usize) {
    let (times, findings) = run(body, iterations);
    let row = Row {
        body: body.into(),
        findings,
        p50_ns: percentile(&times, 0.5),
        p99_ns: percentile(&times, 0.99),
        instructions: None,
    };
    println!("{}", serde_json::to_string(&row).unwrap_or_default());
}

/// Total instructions of `lbguard-bench engine --one BODY --iterations N` under callgrind.
fn instructions(body: &str, iterations: usize) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("lbguard-bench-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("{body}-{iterations}"));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(&exe)
        .args(["engine", "--one", body, "--iterations"])
        .arg(iterations.to_string())
        .output()
        .map_err(|e| format!("valgrind: {e} (install valgrind)"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "no totals in callgrind's output".into())
}

/// Every body in its own process; with `count`, also the instructions per evaluation:
/// (instructions with 10 + count evaluations - with 10) / count.
pub fn measure(iterations: usize, count: Option<usize>) -> Result<Vec<Row>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for (body, _) in BODIES {
        let out = Command::new(&exe)
            .args(["engine", "--one", body, "--iterations"])
            .arg(iterations.to_string())
            .output()
            .map_err(|e| e.to_string())?;
        let mut row: Row = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("{body}: {e}: {}", String::from_utf8_lossy(&out.stderr)))?;
        if let Some(n) = count {
            let (few, many) = (instructions(body, 10)?, instructions(body, 10 + n)?);
            row.instructions = Some(many.saturating_sub(few) / n as u64);
        }
        rows.push(row);
    }
    Ok(rows)
}

pub fn print(rows: &[Row]) {
    println!("| body (UPDATE, default config) | findings | p50 | p99 | instructions |");
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        let ir = r
            .instructions
            .map_or_else(|| "-".to_string(), |i| i.to_string());
        println!(
            "| {} | {} | {:.1} µs | {:.1} µs | {ir} |",
            r.body,
            r.findings,
            r.p50_ns / 1000.0,
            r.p99_ns / 1000.0
        );
    }
}
