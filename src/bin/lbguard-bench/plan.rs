//! The `plan` benchmark: what the plan rules add to one admission. Engine time per request
//! with the plan rules on (their default) and off, for an update that changes nothing the
//! controller reads (the plan is not computed), an update that removes a port and drops an
//! annotation (the plan is computed, with findings), and a create.

use std::time::Instant;

use k8s_openapi::api::core::v1::Service;
use lbguard::config::Config;
use lbguard::engine::{
    EmptyCluster, EmptyInventory, Input, Operation, UserInfo, Versions, evaluate,
};
use serde::Serialize;

use crate::cache::{percentile, service};

const ALI: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
const PLAN_OFF: &str = "rules: {plan-takeover: off, plan-delete-listener: off, plan-orphan: off, plan-no-reset: off, plan-convert: off, plan-misread: off}";

#[derive(Debug, Serialize)]
pub struct Row {
    pub case: &'static str,
    pub plan_rules: &'static str,
    pub p50_us: f64,
    pub p99_us: f64,
    pub warnings: usize,
}

/// A Service whose load balancer the controller made (no `-id`), with proxy protocol on.
fn live() -> Service {
    let mut s = service(7);
    let anns = s.metadata.annotations.get_or_insert_with(Default::default);
    anns.remove(&format!("{ALI}id"));
    anns.insert(format!("{ALI}proxy-protocol"), "on".into());
    s.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(
            "service.k8s.alibaba/loadbalancer-id".into(),
            "lb-00000001".into(),
        );
    s
}

fn cases() -> Vec<(&'static str, Input)> {
    let user = UserInfo::default;
    let mut relabelled = live();
    relabelled
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("team".into(), "shop".into());
    let mut shrunk = live();
    if let Some(ports) = shrunk.spec.as_mut().and_then(|s| s.ports.as_mut()) {
        ports.truncate(1);
    }
    shrunk
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .remove(&format!("{ALI}proxy-protocol"));
    vec![
        (
            "update, labels only",
            Input::new(Operation::Update, Some(relabelled), Some(live()), user()).expect("input"),
        ),
        (
            "update, a port and proxy-protocol removed",
            Input::new(Operation::Update, Some(shrunk), Some(live()), user()).expect("input"),
        ),
        (
            "create",
            Input::new(Operation::Create, Some(live()), None, user()).expect("input"),
        ),
    ]
}

pub fn run(requests: usize) -> Vec<Row> {
    let on = Config::default();
    let off = lbguard::engine::parse_config(PLAN_OFF, "bench").expect("config");
    let mut rows = Vec::new();
    for (case, input) in cases() {
        for (label, config) in [("on", &on), ("off", &off)] {
            let versions = Versions::from_config(config);
            let mut times = Vec::with_capacity(requests);
            let mut warnings = 0;
            for _ in 0..requests {
                let t = Instant::now();
                let v = evaluate(&input, config, &versions, &EmptyCluster, &EmptyInventory);
                times.push(t.elapsed().as_secs_f64() * 1e6);
                warnings = v.warnings().len();
            }
            times.sort_by(f64::total_cmp);
            rows.push(Row {
                case,
                plan_rules: label,
                p50_us: percentile(&times, 0.50),
                p99_us: percentile(&times, 0.99),
                warnings,
            });
        }
    }
    rows
}

pub fn print(rows: &[Row]) {
    println!("| request | plan rules | engine p50 | engine p99 | warnings |");
    println!("|---|---|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.1} µs | {:.1} µs | {} |",
            r.case, r.plan_rules, r.p50_us, r.p99_us, r.warnings
        );
    }
}
