//! End-to-end tests on a real control plane: etcd, two kube-apiservers on it (HA), and two
//! `lbguard serve` processes installed from the chart. The binaries come from
//! `KUBEBUILDER_ASSETS` (the envtest convention: `setup-envtest use 1.36`, or the project's
//! `.ci/run`); the policy report CRDs from `LBGUARD_E2E_CRDS`.
//!
//! `cargo test --test e2e -- --node` runs the real-node suite instead (`tests/node/`: the
//! image, the chart on ../shared/node, the tutorial).
//! `cargo test --release --test e2e -- --bench` runs the latency benchmark instead
//! (`scripts/bench-e2e`); `-- --bench-cloud` the cloud source's (`scripts/bench-e2e cloud`);
//! `-- --bench-map` the defaults by policy against the webhook (`scripts/bench-e2e map`);
//! `-- --bench-vap` the exported policies against the validating webhook (`scripts/bench-e2e vap`).
//!
//! `cargo test --test e2e [-- NAME...]` runs every case (or those whose names contain a
//! NAME) one after another against one control plane. Without the binaries the suite says so
//! and passes, except under `CI=true`, where a missing control plane fails the run.

#[path = "../common/mod.rs"]
mod common;
// The STS stand-in for workload identity; the SDK runs it also offers are not used here.
#[allow(dead_code)]
#[path = "../common/identity_stand_in.rs"]
mod identity_stand_in;
mod install;
#[path = "../node/mod.rs"]
mod node;
mod plane;
mod runner;

mod apply;
mod bench;
mod bench_cloud;
mod claims;
mod cloud;
mod examples;
mod exceptions;
mod identity;
mod map;
mod metrics;
mod plan;
mod quota;
mod reports;
mod restart;
mod rolling;
mod vap;
mod vapbench;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures::FutureExt;

use install::Install;
use plane::ControlPlane;

/// What every case works with.
pub struct Env {
    pub plane: ControlPlane,
    pub lbguard: Install,
    /// Admin clients, one per API server.
    pub admin: Vec<kube::Client>,
}

impl Env {
    /// Puts back what a case may have taken away: every API server and replica running,
    /// the proxy reaching all of them, the webhooks registered.
    async fn recover(&mut self) {
        for i in 0..self.plane.apis.len() {
            let running = self.plane.apis[i].proc.as_mut().is_some_and(|p| p.alive());
            if !running {
                self.plane.start_api(i).await;
            }
        }
        for i in 0..self.lbguard.replicas.len() {
            let running = self.lbguard.replicas[i]
                .proc
                .as_mut()
                .is_some_and(|p| p.alive());
            if !running {
                self.lbguard.start_replica(i).await;
            }
        }
        self.lbguard.route_to_all();
        self.lbguard.register(&self.admin).await;
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for p in self.plane.procs().into_iter().chain(self.lbguard.procs()) {
            out.push_str(&format!(
                "--- {} ({}), last lines:\n{}\n",
                p.name,
                p.log.display(),
                p.tail(25)
            ));
        }
        out
    }
}

fn cases() -> Vec<(&'static str, runner::Case<Env>)> {
    runner::cases![
        "examples_through_the_api_server" => examples::run,
        "deletion_protection" => examples::deletion_protection,
        "claims_hold_across_api_servers_and_replicas" => claims::run,
        "listener_quota_counts_only_listeners_the_controller_creates" => quota::run,
        "reports_pass_the_crd_schemas" => reports::run,
        "reports_flow_past_a_namespace_stuck_terminating" => reports::stuck_namespace,
        "exceptions_unblock_one_service_for_one_rule_until_they_expire" => exceptions::run,
        "plan_warnings_reach_kubectl_apply" => plan::run,
        "exported_policies_agree_with_the_webhook" => vap::run,
        "exported_policies_apply_with_client_side_kubectl_apply" => apply::run,
        "defaults_as_policies_equal_the_webhook" => map::run,
        "secure_metrics_with_real_token_reviews" => metrics::run,
        "rolling_restart_loses_no_create" => rolling::run,
        "api_server_restart" => restart::run,
        // Last: they reinstall with other values and put the suite's install back.
        "cloud_inventory_from_a_secret" => cloud::run,
        "cloud_workload_identity" => identity::run,
    ]
}

/// Why the suite cannot run here, if it cannot.
fn assets() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .filter(|d| !d.is_empty())
        .ok_or("KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS=$(../shared/envtest/assets), or setup-envtest use 1.36)")?;
    let dir = PathBuf::from(dir);
    for bin in ["etcd", "kube-apiserver"] {
        if !dir.join(bin).is_file() {
            return Err(format!("{} has no {bin}", dir.display()));
        }
    }
    Ok(dir)
}

fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if std::env::args().any(|a| a == "--node") {
        let filters = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        return node::main(filters);
    }
    let bench_cloud = std::env::args().any(|a| a == "--bench-cloud");
    let bench_map = std::env::args().any(|a| a == "--bench-map");
    let bench =
        bench_cloud || bench_map || std::env::args().any(|a| a == "--bench" || a == "--bench-vap");
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let assets = match assets() {
        Ok(a) => a,
        Err(why) => {
            eprintln!("e2e: not run: {why}");
            return if ci {
                eprintln!("e2e: CI=true, so a missing control plane is a failure");
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(assets, filters, bench, bench_cloud, bench_map))
}

async fn run(
    assets: PathBuf,
    filters: Vec<String>,
    bench: bool,
    bench_cloud: bool,
    bench_map: bool,
) -> ExitCode {
    let dir = tempfile::Builder::new()
        .prefix("lbguard-e2e-")
        .tempdir()
        .unwrap();
    let started = Instant::now();
    let setup = AssertUnwindSafe(async {
        let plane = ControlPlane::start(&assets, dir.path(), 2).await;
        let admin = vec![plane.client(0).await, plane.client(1).await];
        let lbguard = Install::start(&plane, bench).await;
        Env {
            plane,
            lbguard,
            admin,
        }
    })
    .catch_unwind()
    .await;
    let mut env = match setup {
        Ok(env) => env,
        Err(_) => {
            let kept = dir.keep();
            eprintln!("e2e: setup failed; logs kept in {}", kept.display());
            for entry in std::fs::read_dir(&kept).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.extension().is_some_and(|e| e == "log") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    let tail: Vec<&str> = text.lines().rev().take(25).collect();
                    eprintln!("--- {}:", p.display());
                    for l in tail.into_iter().rev() {
                        eprintln!("{l}");
                    }
                }
            }
            println!("e2e: 0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "e2e: control plane (2 kube-apiservers, etcd) and 2 lbguard replicas up in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    if bench {
        let ok = if std::env::args().any(|a| a == "--bench-vap") {
            AssertUnwindSafe(vapbench::run(&mut env))
                .catch_unwind()
                .await
                .is_ok()
        } else if bench_map {
            AssertUnwindSafe(map::bench::run(&mut env))
                .catch_unwind()
                .await
                .is_ok()
        } else if bench_cloud {
            AssertUnwindSafe(bench_cloud::run(&mut env))
                .catch_unwind()
                .await
                .is_ok()
        } else {
            AssertUnwindSafe(bench::run(&mut env))
                .catch_unwind()
                .await
                .is_ok()
        };
        if !ok {
            eprintln!("{}", env.logs());
        }
        drop(env);
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let (mut passed, mut failed, mut skipped) = (0, Vec::new(), 0);
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    for (name, case) in cases() {
        if !runner::wanted(name, &filters) {
            continue;
        }
        // The report CRDs are not part of an envtest download: outside CI they are optional.
        let needs_crds = name.starts_with("reports") || name.starts_with("exceptions");
        if needs_crds && std::env::var_os("LBGUARD_E2E_CRDS").is_none() && !ci {
            println!(
                "test {name} ... skipped: LBGUARD_E2E_CRDS (the policy report CRDs' directory) is not set"
            );
            skipped += 1;
            continue;
        }
        if runner::run(name, &mut env, case, Duration::from_secs(240)).await {
            passed += 1;
        } else {
            eprintln!("{}", env.logs());
            failed.push(name);
        }
        if AssertUnwindSafe(env.recover())
            .catch_unwind()
            .await
            .is_err()
        {
            eprintln!("{}", env.logs());
            eprintln!("e2e: cannot restore the environment after {name}; stopping");
            failed.push("recover");
            break;
        }
    }
    println!(
        "e2e: {passed} passed, {} failed, {skipped} skipped in {:.1}s",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    drop(env);
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        let kept = dir.keep();
        eprintln!(
            "e2e: failed: {}; logs kept in {}",
            failed.join(", "),
            kept.display()
        );
        ExitCode::FAILURE
    }
}
