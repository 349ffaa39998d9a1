//! What the exported ValidatingAdmissionPolicies cost the API server per request, against
//! the validating webhook (`scripts/bench-e2e vap`, not a test). The chart's defaults,
//! claims off (what is measured is the check, not a listener claim), and
//! `lbguard export-vap --config <the install's config>` as a user runs it. Three phases:
//! no check at all, lbguard's validating webhook, the exported policies with no webhook.
//! Per phase: creates/s, the clients' p50/p99, CPU seconds of the API servers and of
//! lbguard, and the API servers' own time for the webhook call
//! (`apiserver_admission_webhook_admission_duration_seconds`). The API servers time a
//! policy (`apiserver_validating_admission_policy_check_duration_seconds`) only when it
//! denies or warns, so for admitted creates their CPU is the measure. Two more phases say
//! where that CPU goes: as many policies that check nothing, and the same validations merged
//! into fewer policies.

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
    /// As many policies, each `true`: what a policy costs whatever it checks.
    Empty,
    /// The exported validations, merged into one policy per action, operations and match
    /// conditions (variables of the same name are the same expression).
    Merged,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Nothing => "no check",
            Mode::Webhook => "lbguard's validating webhook",
            Mode::Policies => "the exported policies, no webhook",
            Mode::Empty => "as many policies, each only `true`",
            Mode::Merged => "the exported validations merged into fewer policies",
        }
    }
}

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, actions: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": actions}})
}

/// `n` policies (and bindings) whose one validation is `true`.
fn empty_policies(n: usize) -> Vec<Value> {
    (0..n)
        .flat_map(|i| {
            let name = format!("lbguard-bench-empty-{i}");
            let spec = json!({"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["services"], "operations": ["CREATE", "UPDATE"]}]},
                "validations": [{"expression": "true"}]});
            [policy(&name, spec), binding(&name, json!(["Deny"]))]
        })
        .collect()
}

/// One merged policy's parts: its binding's actions, the first policy (for the rest of its
/// spec), its variables and its validations.
type Group = (Value, Value, Vec<(String, String)>, Vec<Value>);

/// The exported policies merged: one per (action, operations, match conditions).
fn merged(exported: &[Value]) -> Vec<Value> {
    let actions = |name: &Value| {
        exported
            .iter()
            .find(|o| {
                o["kind"] == "ValidatingAdmissionPolicyBinding" && o["metadata"]["name"] == *name
            })
            .map(|b| b["spec"]["validationActions"].clone())
            .unwrap()
    };
    let mut groups: Vec<(String, Group)> = Vec::new();
    for p in exported
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicy")
    {
        let act = actions(&p["metadata"]["name"]);
        let key = format!(
            "{act}|{}|{}",
            p["spec"]["matchConstraints"]["resourceRules"][0]["operations"],
            p["spec"]["matchConditions"]
        );
        let i = match groups.iter().position(|g| g.0 == key) {
            Some(i) => i,
            None => {
                groups.push((key, (act, p.clone(), Vec::new(), Vec::new())));
                groups.len() - 1
            }
        };
        let g = &mut groups[i].1;
        for v in p["spec"]["variables"].as_array().into_iter().flatten() {
            let (n, e) = (
                v["name"].as_str().unwrap(),
                v["expression"].as_str().unwrap(),
            );
            match g.2.iter().find(|(m, _)| m == n) {
                Some((_, f)) => assert_eq!(f, e, "variable {n} differs between policies"),
                None => g.2.push((n.to_string(), e.to_string())),
            }
        }
        g.3.extend(p["spec"]["validations"].as_array().unwrap().iter().cloned());
    }
    groups
        .into_iter()
        .enumerate()
        .flat_map(|(i, (_, (act, first, vars, validations)))| {
            let name = format!("lbguard-bench-merged-{i}");
            let mut spec = first["spec"].clone();
            spec["variables"] = vars
                .into_iter()
                .map(|(n, e)| json!({"name": n, "expression": e}))
                .collect();
            spec["validations"] = Value::Array(validations);
            [policy(&name, spec), binding(&name, act)]
        })
        .collect()
}

/// The validating webhook's calls, summed over both API servers: (seconds, calls).
async fn webhook_calls(env: &Env) -> [f64; 2] {
    let mut out = [0.0; 2];
    let metric = "apiserver_admission_webhook_admission_duration_seconds";
    for client in &env.admin {
        let r = plane::raw(client, "GET", "/metrics", None)
            .await
            .expect("metrics");
        let text = r.body.as_str().unwrap_or_default().to_string();
        for line in text
            .lines()
            .filter(|l| l.contains("name=\"validate.lbguard.io\""))
        {
            let value = line
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            if line.starts_with(&format!("{metric}_sum{{")) {
                out[0] += value;
            } else if line.starts_with(&format!("{metric}_count{{")) {
                out[1] += value;
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
                let by_policy = r.message().contains("ValidatingAdmissionPolicy 'lbguard-")
                    && r.message().contains("[address-type-value]");
                let by_hook = r.message().contains("validate.lbguard.io");
                let ok = match mode {
                    Mode::Nothing | Mode::Empty => r.ok(),
                    Mode::Webhook => by_hook,
                    Mode::Policies | Mode::Merged => by_policy,
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
    let empty = empty_policies(n_policies);
    let merged = merged(&policies);
    let mut phases: Vec<(usize, Mode, Run, [f64; 2])> = Vec::new();
    for round in 1..=2 {
        for mode in [
            Mode::Nothing,
            Mode::Webhook,
            Mode::Policies,
            Mode::Empty,
            Mode::Merged,
        ] {
            match mode {
                Mode::Webhook => env.lbguard.register(&env.admin).await,
                _ => env.lbguard.unregister(&env.admin).await,
            }
            let installed: &[Value] = match mode {
                Mode::Policies => &policies,
                Mode::Empty => &empty,
                Mode::Merged => &merged,
                _ => &[],
            };
            for o in installed {
                call(&env.admin[0], "POST", &plane::collection(o), Some(o))
                    .await
                    .expect_ok("install a policy");
            }
            until(env, mode).await;
            let warm = format!("vap-warm-{round}-{}", mode as u8);
            creates_with(env, &warm, 50, CLIENTS, service).await;
            clear(env, &warm, 50).await;
            let ns = format!("vap-bench-{round}-{}", mode as u8);
            let before = webhook_calls(env).await;
            let run = creates_with(env, &ns, SERVICES, CLIENTS, service).await;
            let after = webhook_calls(env).await;
            let delta: [f64; 2] = std::array::from_fn(|i| after[i] - before[i]);
            clear(env, &ns, SERVICES).await;
            for o in installed.iter().rev() {
                plane::delete(&env.admin[0], o).await;
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
        "| round | | creates/s | client p50 | client p99 | CPU s, API servers | CPU s, lbguard | webhook calls | their time per create |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (round, mode, run, d) in &phases {
        let per = |secs: f64| format!("{:.3} ms", secs * 1e3 / SERVICES as f64);
        println!(
            "| {round} | {} | {:.0} | {:.1} ms | {:.1} ms | {:.2} | {:.2} | {:.0} | {} |",
            mode.name(),
            run.per_second,
            run.p50.as_secs_f64() * 1e3,
            run.p99.as_secs_f64() * 1e3,
            run.cpu[0],
            run.cpu[2],
            d[1],
            per(d[0]),
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
        "CPU per create (rounds' mean): API servers {:.2} ms with no check, {:.2} ms with the webhook (+ lbguard {:.2} ms), {:.2} ms with the {n_policies} policies (+ lbguard {:.2} ms), {:.2} ms with {n_policies} policies that check nothing, {:.2} ms with the validations merged into {} policies",
        api_cpu(Mode::Nothing),
        api_cpu(Mode::Webhook),
        lbguard_cpu(Mode::Webhook),
        api_cpu(Mode::Policies),
        lbguard_cpu(Mode::Policies),
        api_cpu(Mode::Empty),
        api_cpu(Mode::Merged),
        merged.len() / 2,
    );
}
