//! The exported ValidatingAdmissionPolicies on the real API server, with no webhook
//! registered: the API server accepts every policy (its CEL compiles within the cost budget),
//! and every example gets the verdict and the warnings the webhook gives for those rules.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Env;
use crate::examples::{UPDATES, check, rule_ids, services, single_files};
use crate::install::EXAMPLES;
use crate::plane::{self, Reply, call, collection, eventually, object_path};

/// `lbguard export-vap` with the suite's config, for a 1.36 cluster.
pub fn export(env: &Env, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .arg("export-vap")
        .arg(format!("--config={}", env.lbguard.config.display()))
        .arg("--cluster-version=v1.36.2")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A policy's warning as the API server words it, back to lbguard's message.
fn unwrap_warning(w: &str) -> String {
    match w.split_once("': ") {
        Some((head, msg))
            if head.starts_with("Validation failed for ValidatingAdmissionPolicy") =>
        {
            msg.to_string()
        }
        _ => w.to_string(),
    }
}

/// What the policies should say of one example: the webhook's findings of exported rules,
/// on the object as sent (no mutating webhook runs here).
struct Want {
    denials: BTreeSet<String>,
    warnings: BTreeSet<String>,
}

fn want(env: &Env, ids: &BTreeSet<String>, args: &[&str]) -> Vec<Want> {
    let mut all = vec!["--no-defaults"];
    all.extend_from_slice(args);
    check(env, &all)
        .into_iter()
        .map(|e| {
            let keep = |set: BTreeSet<String>| -> BTreeSet<String> {
                set.into_iter()
                    .filter(|m| rule_ids([m]).iter().all(|id| ids.contains(id)))
                    .collect()
            };
            Want {
                denials: keep(e.denials),
                warnings: keep(e.warnings),
            }
        })
        .collect()
}

fn compare(what: &str, got: &Reply, want: &Want) {
    assert_eq!(
        got.ok(),
        want.denials.is_empty(),
        "{what}: the API server answered {} {}; the webhook denies {:?}",
        got.status,
        got.message(),
        want.denials
    );
    if !want.denials.is_empty() {
        assert_eq!(got.status, 403, "{what}: {}", got.body);
        let message = got.message();
        let denied = rule_ids([&message]);
        assert!(!denied.is_empty(), "{what}: {message}");
        assert!(
            denied.is_subset(&rule_ids(&want.denials)),
            "{what}: {message} vs {:?}",
            want.denials
        );
        assert!(
            message.contains("ValidatingAdmissionPolicy 'lbguard-"),
            "{what}: {message}"
        );
    }
    let warnings: BTreeSet<String> = got.warnings.iter().map(|w| unwrap_warning(w)).collect();
    assert_eq!(warnings, want.warnings, "{what}: Warning lines");
}

/// Waits until a dry run of `probe` through every API server gets an answer `done` accepts.
async fn until_every_api_server(
    env: &Env,
    probe: &Value,
    what: &str,
    done: impl Fn(&Reply) -> bool,
) {
    for client in &env.admin {
        eventually(Duration::from_secs(30), what, || async {
            let path = "/api/v1/namespaces/default/services?dryRun=All";
            done(&call(client, "POST", path, Some(probe)).await).then_some(())
        })
        .await;
    }
}

fn is_policy(o: &Value) -> bool {
    o["kind"] == "ValidatingAdmissionPolicy"
}

pub async fn run(env: &mut Env) {
    let admin = env.admin[0].clone();
    let ids: BTreeSet<String> = export(env, &["--ids"])
        .trim()
        .split(',')
        .map(String::from)
        .collect();
    assert!(ids.len() >= 20, "{ids:?}");
    let mut objects = Vec::new();
    for doc in lbguard::yaml::documents(&export(env, &[])) {
        objects.push(doc.unwrap());
    }
    // The probe's policy last: the API server's informers deliver policies and bindings in
    // the order they were written, so once the probe is denied every policy is in effect.
    let probe_last = |o: &Value| o["metadata"]["name"] == "lbguard-address-type-value";
    objects.sort_by_key(probe_last);
    let policies: Vec<&Value> = objects.iter().filter(|o| is_policy(o)).collect();
    assert_eq!(policies.len(), objects.len() / 2);
    env.lbguard.unregister(&env.admin).await;

    // The API server validates each policy as it is created (CEL compiles, cost in budget).
    for o in &objects {
        let r = call(&admin, "POST", &plane::collection(o), Some(o)).await;
        assert!(
            r.ok(),
            "{} {}: {} {}",
            o["kind"],
            o["metadata"]["name"],
            r.status,
            r.body
        );
        assert!(
            r.warnings.is_empty(),
            "{}: {:?}",
            o["metadata"]["name"],
            r.warnings
        );
    }
    let probe = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "vap-probe", "namespace": "default", "annotations": {
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "public"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
    });
    // Each API server loads policies on its own: probe through every one.
    until_every_api_server(env, &probe, "the policies are in effect", |r| {
        r.message().contains("lbguard-address-type-value")
    })
    .await;

    let mut compared = 0;
    let files = single_files();
    for (i, file) in files.iter().enumerate() {
        let what = file.display().to_string();
        let wants = want(env, &ids, &[file.to_str().unwrap()]);
        for (svc, w) in services(file).into_iter().zip(&wants) {
            plane::namespace(&admin, svc["metadata"]["namespace"].as_str().unwrap()).await;
            let path = format!("{}?dryRun=All", collection(&svc));
            let got = call(&env.admin[i % 2], "POST", &path, Some(&svc)).await;
            compare(&what, &got, w);
            compared += 1;
        }
    }
    // Updates: the live Service stored (the policies admit it), the new one sent in its place.
    for (old, new) in UPDATES {
        let old_file = format!("{EXAMPLES}/updates/{old}.yaml");
        let new_file = format!("{EXAMPLES}/updates/{new}.yaml");
        let live = services(Path::new(&old_file)).remove(0);
        plane::namespace(&admin, live["metadata"]["namespace"].as_str().unwrap()).await;
        let stored = call(&admin, "POST", &collection(&live), Some(&live))
            .await
            .expect_ok(&old_file);
        let w = want(env, &ids, &["--old", &old_file, &new_file]).remove(0);
        let mut next = services(Path::new(&new_file)).remove(0);
        next["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
        let got = call(
            &env.admin[1],
            "PUT",
            &format!("{}?dryRun=All", object_path(&next)),
            Some(&next),
        )
        .await;
        compare(&new_file, &got, &w);
        compared += 1;
        plane::delete(&admin, &live).await.expect_ok("delete");
    }
    // Deletion protection is a policy too, for the same Services as the webhook.
    for svc in crate::examples::marked_services("default") {
        let mut svc = svc;
        svc["metadata"]["name"] =
            format!("vap-{}", svc["metadata"]["name"].as_str().unwrap()).into();
        crate::examples::protected_until_unmarked(
            env,
            svc,
            "ValidatingAdmissionPolicy 'lbguard-deletion-protection'",
        )
        .await;
    }
    assert!(compared >= 35, "{compared}");

    // Back to the webhook.
    for o in objects.iter().rev() {
        plane::delete(&admin, o).await;
    }
    until_every_api_server(env, &probe, "the policies are gone", Reply::ok).await;
}
