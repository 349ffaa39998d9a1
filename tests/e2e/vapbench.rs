//! What the exported ValidatingAdmissionPolicies cost the API server per request, against
//! the validating webhook (`scripts/bench-e2e vap`, not a test). The chart's defaults,
//! claims off (what is measured is the check, not a listener claim), and
//! `lbguard export-vap --config <the install's config>` as a user runs it. Three phases:
//! no check at all, lbguard's validating webhook, the exported policies with no webhook.
//! Per phase: creates/s, the clients' p50/p99, CPU seconds of the API servers and of
//! lbguard, and the API servers' own figures: the webhook call
//! (`apiserver_admission_webhook_admission_duration_seconds`) and each policy's evaluation
//! (`apiserver_validating_admission_policy_check_duration_seconds`, sum and count).

use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::bench::{CLIENTS, Run, SERVICES, clear, creates_with};
use crate::plane::{self, call, eventually};

/// A Service with the annotations a user sets on an ACK load balancer it reuses.
fn service(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": ns, "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id": format!("lb-bench-{ns}-{i}"),
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "false",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-protocol-port": "http:80",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-health-check-flag": "on",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-health-check-type": "http",
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-health-check-uri": "/healthz"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "bench"}, "allocateLoadBalancerNodePorts": false,
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nothing,
    Webhook,
    Policies,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Nothing => "no check",
            Mode::Webhook => "lbguard's validating webhook",
            Mode::Policies => "the exported policies, no webhook",
        }
    }
}

/// Summed over both API servers: the policies' evaluation (seconds, evaluations) and the
/// validating webhook's calls (seconds, calls).
async fn server_figures(env: &Env) -> [f64; 4] {
    let mut out = [0.0; 4];
    for client in &env.admin {
        let r = plane::raw(client, "GET", "/metrics", None)
            .await
            .expect("metrics");
        let text = r.body.as_str().unwrap_or_default().to_string();
        for line in text.lines() {
            let value = || line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
            let policy = line.contains("policy=\"lbguard-");
            let hook = line.contains("name=\"validate.lbguard.io\"");
            let metric = |m: &str| line.starts_with(&format!("{m}{{"));
            let checks = "apiserver_validating_admission_policy_check_duration_seconds";
            let calls = "apiserver_admission_webhook_admission_duration_seconds";
            match () {
                _ if policy && metric(&format!("{checks}_sum")) => out[0] += value().unwrap_or(0.0),
                _ if policy && metric(&format!("{checks}_count")) => {
                    out[1] += value().unwrap_or(0.0)
                }
                _ if hook && metric(&format!("{calls}_sum")) => out[2] += value().unwrap_or(0.0),
                _ if hook && metric(&format!("{calls}_count")) => out[3] += value().unwrap_or(0.0),
                _ => {}
            }
        }
    }
    out
}

/// Waits until a dry run of a Service the rules deny gets the answer `mode` gives.
async fn until(env: &Env, mode: Mode) {
    let mut probe = service("default", 999_999);
    probe["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"] =
        json!("public");
    for client in &env.admin {
        eventually(
            Duration::from_secs(30),
            "the phase's checks are in effect",
            || async {
                let r = call(
                    client,
                    "POST",
                    "/api/v1/namespaces/default/services?dryRun=All",
                    Some(&probe),
                )
                .await;
                let by_policy = r.message().contains("ValidatingAdmissionPolicy 'lbguard-");
                let by_hook = r.message().contains("validate.lbguard.io");
                let ok = match mode {
                    Mode::Nothing => r.ok(),
                    Mode::Webhook => by_hook,
                    Mode::Policies => by_policy,
                };
                ok.then_some(())
            },
        )
        .await;
    }
}

pub async fn run(env: &mut Env) {
    env.lbguard
        .reconfigure(|c| c["claims"]["enabled"] = false.into())
        .await;
    let policies: Vec<Value> = {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .arg("export-vap")
            .arg(format!("--config={}", env.lbguard.config.display()))
            .args(["--cluster-version", "v1.36.2", "--mutating", "off"])
            .output()
            .unwrap();
        assert!(out.status.success());
        lbguard::yaml::documents(&String::from_utf8(out.stdout).unwrap())
            .into_iter()
            .map(|d| d.unwrap())
            .collect()
    };
    let n_policies = policies
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicy")
        .count();
    let mut phases: Vec<(usize, Mode, Run, [f64; 4])> = Vec::new();
    for round in 1..=2 {
        for mode in [Mode::Nothing, Mode::Webhook, Mode::Policies] {
            match mode {
                Mode::Webhook => env.lbguard.register(&env.admin).await,
                _ => env.lbguard.unregister(&env.admin).await,
            }
            if mode == Mode::Policies {
                for o in &policies {
                    call(&env.admin[0], "POST", &plane::collection(o), Some(o))
                        .await
                        .expect_ok("install a policy");
                }
            }
            until(env, mode).await;
            let warm = format!("vap-warm-{round}-{}", mode as u8);
            creates_with(env, &warm, 50, CLIENTS, service).await;
            clear(env, &warm, 50).await;
            let ns = format!("vap-bench-{round}-{}", mode as u8);
            let before = server_figures(env).await;
            let run = creates_with(env, &ns, SERVICES, CLIENTS, service).await;
            let after = server_figures(env).await;
            let delta: [f64; 4] = std::array::from_fn(|i| after[i] - before[i]);
            clear(env, &ns, SERVICES).await;
            if mode == Mode::Policies {
                for o in policies.iter().rev() {
                    plane::delete(&env.admin[0], o).await;
                }
            }
            phases.push((round, mode, run, delta));
        }
    }
    env.lbguard.register(&env.admin).await;
    println!();
    println!(
        "{SERVICES} Service creates a phase, {CLIENTS} clients over 2 kube-apiservers v1.36.2 on one etcd, 2 lbguard replicas (release build), chart defaults with claims off; {n_policies} exported policies:"
    );
    println!();
    println!(
        "| round | | creates/s | client p50 | client p99 | CPU s, API servers | CPU s, lbguard | policy evaluations | their time per create | webhook calls | their time per create |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (round, mode, run, d) in &phases {
        let per = |secs: f64| format!("{:.3} ms", secs * 1e3 / SERVICES as f64);
        println!(
            "| {round} | {} | {:.0} | {:.1} ms | {:.1} ms | {:.2} | {:.2} | {:.0} | {} | {:.0} | {} |",
            mode.name(),
            run.per_second,
            run.p50.as_secs_f64() * 1e3,
            run.p99.as_secs_f64() * 1e3,
            run.cpu[0],
            run.cpu[2],
            d[1],
            per(d[0]),
            d[3],
            per(d[2]),
        );
    }
    let mean = |m: Mode, f: &dyn Fn(&Run) -> f64| -> f64 {
        let v: Vec<f64> = phases
            .iter()
            .filter(|p| p.1 == m)
            .map(|p| f(&p.2))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let api_cpu = |m: Mode| mean(m, &|r: &Run| r.cpu[0]) * 1e3 / SERVICES as f64;
    let lbguard_cpu = |m: Mode| mean(m, &|r: &Run| r.cpu[2]) * 1e3 / SERVICES as f64;
    println!();
    println!(
        "CPU per create (rounds' mean): API servers {:.2} ms with no check, {:.2} ms with the webhook (+ lbguard {:.2} ms), {:.2} ms with the policies (+ lbguard {:.2} ms)",
        api_cpu(Mode::Nothing),
        api_cpu(Mode::Webhook),
        lbguard_cpu(Mode::Webhook),
        api_cpu(Mode::Policies),
        lbguard_cpu(Mode::Policies),
    );
}
