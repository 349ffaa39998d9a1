use super::*;
use crate::bench::{CLIENTS, Run, SERVICES, buckets, clear, creates_with, quantile, service};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Validate,
    Webhook,
    Policy,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Validate => "validating webhook only, no default",
            Mode::Webhook => "defaults by the mutating webhook",
            Mode::Policy => "defaults by the MutatingAdmissionPolicy",
        }
    }
}

/// The chart's MutatingWebhookConfiguration for this config, pointed at the replicas.
fn mutating_webhook(env: &Env) -> Value {
    let mut values = crate::install::values(&env.lbguard.ca_pem);
    values = json!({
        "certificates": values["certificates"],
        "config": {"defaults": {"annotations": {"example.com/owner": "platform"}}},
    });
    let objects = crate::install::render(&values);
    let mut o = crate::install::of_kind(&objects, "MutatingWebhookConfiguration")[0].clone();
    for w in o["webhooks"].as_array_mut().unwrap() {
        let ca = w["clientConfig"]["caBundle"].clone();
        w["clientConfig"] = json!({
            "url": format!("https://127.0.0.1:{}/mutate", env.lbguard.proxy.port()),
            "caBundle": ca,
        });
    }
    o
}

async fn until_owner(env: &Env, ns: &str, on: bool) {
    let probe = service(ns, 999_999);
    for client in &env.admin {
        eventually(
            Duration::from_secs(30),
            "the default is in effect (or gone)",
            || async {
                let r = call(
                    client,
                    "POST",
                    &format!("/api/v1/namespaces/{ns}/services?dryRun=All"),
                    Some(&probe),
                )
                .await;
                let owner = r.body["metadata"]["annotations"]["example.com/owner"].is_string();
                (r.ok() && owner == on).then_some(())
            },
        )
        .await;
    }
}

async fn set(env: &Env, objects: &[Value], on: bool) {
    for o in objects {
        let r = if on {
            call(&env.admin[0], "POST", &plane::collection(o), Some(o)).await
        } else {
            plane::delete(&env.admin[0], o).await
        };
        assert!(r.ok() || (!on && r.status == 404), "{}", r.body);
    }
    until_owner(env, "bench-map-probe", on && !objects.is_empty()).await;
}

pub async fn run(env: &mut Env) {
    env.lbguard
        .reconfigure(|c| {
            c["claims"]["enabled"] = false.into();
            c["defaults"]["annotations"] = json!({"example.com/owner": "platform"});
        })
        .await;
    env.lbguard.register(&env.admin).await;
    plane::namespace(&env.admin[0], "bench-map-probe").await;
    let webhook = [mutating_webhook(env)];
    let policy = export(env, &[]);
    assert_eq!(policy.len(), 2, "{policy:?}");
    let mut phases: Vec<(usize, Mode, Run, f64)> = Vec::new();
    for round in 1..=2 {
        for mode in [Mode::Validate, Mode::Webhook, Mode::Policy] {
            let extra = match mode {
                Mode::Validate => &[][..],
                Mode::Webhook => &webhook[..],
                Mode::Policy => &policy[..],
            };
            set(env, extra, true).await;
            let warm = format!("map-warm-{round}-{}", mode as u8);
            creates_with(env, &warm, 50, CLIENTS, service).await;
            clear(env, &warm, 50).await;
            let ns = format!("map-bench-{round}-{}", mode as u8);
            let before = buckets(env, "mutate.lbguard.io").await;
            let run = creates_with(env, &ns, SERVICES, CLIENTS, service).await;
            let after = buckets(env, "mutate.lbguard.io").await;
            let (_, calls) = quantile(&before, &after, 0.5);
            let first = call(
                &env.admin[0],
                "GET",
                &format!("/api/v1/namespaces/{ns}/services/svc-0"),
                None,
            )
            .await;
            let owner = first.body["metadata"]["annotations"]["example.com/owner"].as_str();
            assert_eq!(owner.is_some(), mode != Mode::Validate, "{}", first.body);
            clear(env, &ns, SERVICES).await;
            set(env, extra, false).await;
            phases.push((round, mode, run, calls));
        }
    }
    println!();
    println!(
        "{SERVICES} Service creates a phase, {CLIENTS} clients over 2 kube-apiservers v1.36.2 on one etcd, 2 lbguard replicas (release build), claims off, one annotation default:"
    );
    println!();
    println!(
        "| round | | creates/s | client p50 | client p99 | mutate.lbguard.io calls | CPU s, API servers | CPU s, lbguard |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (round, mode, run, calls) in &phases {
        println!(
            "| {round} | {} | {:.0} | {:.1} ms | {:.1} ms | {calls:.0} | {:.2} | {:.2} |",
            mode.name(),
            run.per_second,
            run.p50.as_secs_f64() * 1e3,
            run.p99.as_secs_f64() * 1e3,
            run.cpu[0],
            run.cpu[2],
        );
    }
    let mean = |m: Mode| -> f64 {
        let v: Vec<f64> = phases
            .iter()
            .filter(|p| p.1 == m)
            .map(|p| p.2.per_second)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    println!();
    println!(
        "the rounds' mean: defaults by the policy {:.0} creates/s, by the webhook {:.0} ({:+.1}%); the validating webhook alone {:.0}",
        mean(Mode::Policy),
        mean(Mode::Webhook),
        100.0 * (mean(Mode::Policy) / mean(Mode::Webhook) - 1.0),
        mean(Mode::Validate)
    );
}
