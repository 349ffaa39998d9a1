//! The config's defaults as the MutatingAdmissionPolicy of `lbguard export-vap`, against
//! lbguard's mutating webhook, on the real API server. Every mutate case of the rule tests
//! (and the edges around them) is written through four arms in turn: the mutating webhook
//! alone, the policy alone as `admissionregistration.k8s.io/v1`, and as `v1beta1`, and the
//! chart's `vap.defaults` deployment (the v1 policy and the webhook with
//! `defaults.exported`, which then applies only the inventory's default). The objects the API
//! server stores must be the same: annotations byte for byte, labels and spec. Creates are
//! written back unchanged (a second pass changes nothing), and updates start from a live
//! Service stored with no mutation at all.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Env;
use crate::plane::{self, Reply, call, eventually, object_path};

const NS: &str = "map-defaults";
const EXEMPT: &str = "map-exempt";
const VOLC: &str = "service.beta.kubernetes.io/volcengine-loadbalancer-";
const HUAWEI: &str = "kubernetes.io/elb.";
const CTYUN: &str = "service.beta.kubernetes.io/ctyun-loadbalancer-";

/// The rule tests' defaults (engine_tests' DEFAULTS, on a turbo cluster), and one exempt
/// namespace.
fn configure(c: &mut Value) {
    c["defaults"] = json!({
        "enabled": true,
        "volcengineWeight": 100,
        "huaweiElbClass": "performance",
        "ctyunIpModeProxy": true,
        "huaweiTurboClusterPolicy": true,
        "annotations": {"example.com/owner": "platform"},
    });
    c["cluster"]["flavor"] = "turbo".into();
    c["exemptions"]["namespaces"] = json!([EXEMPT]);
}

fn svc(ns: &str, name: &str, annotations: &[(&str, &str)], etp: Option<&str>) -> Value {
    let anns: serde_json::Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    let mut s = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    });
    if !anns.is_empty() {
        s["metadata"]["annotations"] = Value::Object(anns);
    }
    if let Some(p) = etp {
        s["spec"]["externalTrafficPolicy"] = p.into();
    }
    s
}

struct Case {
    name: &'static str,
    /// Stored first, with no mutation; `new` then replaces it.
    live: Option<Value>,
    new: Value,
    /// An annotation the stored object must have (so no arm passes by doing nothing).
    expect: Option<(String, Option<&'static str>)>,
    /// Takes the inventory's default: only arms with the webhook apply it.
    inventory: bool,
}

fn cases() -> Vec<Case> {
    let k = |p: &str, s: &str| format!("{p}{s}");
    let id_volc = k(VOLC, "id");
    let sg = k(VOLC, "server-group-id");
    let weight = k(VOLC, "weight");
    let class = k(HUAWEI, "class");
    let ip_mode = k(CTYUN, "ip-mode");
    let v = |name: &str, extra: &[(&str, &str)]| {
        let mut a = vec![(id_volc.as_str(), "clb-1"), (sg.as_str(), "rsp-1:80")];
        a.extend_from_slice(extra);
        svc(NS, name, &a, None)
    };
    let mut cluster_ip = v("cluster-ip-to-lb", &[]);
    cluster_ip["spec"]["type"] = "ClusterIP".into();
    let mut plain_cluster_ip = svc(NS, "cluster-ip", &[(&id_volc, "clb-1")], None);
    plain_cluster_ip["spec"]["type"] = "ClusterIP".into();
    let mut weight_live = v("weight-kept-from-live", &[(&weight, "30")]);
    weight_live["metadata"]["labels"] = json!({"tier": "edge"});
    let mut weight_dropped = v("weight-kept-from-live", &[]);
    weight_dropped["metadata"]["labels"] = json!({"tier": "edge"});
    vec![
        // engine_tests::defaults_are_injected_and_listed (and validation_sees_the_mutated_object)
        Case {
            name: "volcengine weight and annotations injected",
            live: None,
            new: v("injected", &[]),
            expect: Some((weight.clone(), Some("100"))),
            inventory: false,
        },
        // engine_tests::defaults_never_override_and_are_idempotent
        Case {
            name: "huawei class never overridden",
            live: None,
            new: svc(
                NS,
                "class-kept",
                &[(&k(HUAWEI, "id"), "e"), (&class, "union")],
                Some("Local"),
            ),
            expect: Some((class.clone(), Some("union"))),
            inventory: false,
        },
        // engine_tests::ctyun_ip_mode_needs_local_and_1_30 (the 1.29 half needs a 1.29 API
        // server, which has no MutatingAdmissionPolicy: the unit tests cover it)
        Case {
            name: "ctyun ip-mode for Local",
            live: None,
            new: svc(NS, "ip-mode", &[(&k(CTYUN, "id"), "lb-1")], Some("Local")),
            expect: Some((ip_mode.clone(), Some("proxy"))),
            inventory: false,
        },
        Case {
            name: "ctyun ip-mode not for Cluster",
            live: None,
            new: svc(
                NS,
                "ip-mode-cluster",
                &[(&k(CTYUN, "id"), "lb-1")],
                Some("Cluster"),
            ),
            expect: Some((ip_mode.clone(), None)),
            inventory: false,
        },
        Case {
            name: "ctyun ip-mode not without a ctyun annotation (provider auto)",
            live: None,
            new: svc(NS, "ip-mode-no-provider", &[], Some("Local")),
            expect: Some((ip_mode.clone(), None)),
            inventory: false,
        },
        Case {
            name: "ctyun ip-mode kept as the user set it",
            live: None,
            new: svc(
                NS,
                "ip-mode-user",
                &[(&k(CTYUN, "id"), "lb-1"), (&ip_mode, "vip")],
                Some("Local"),
            ),
            expect: Some((ip_mode.clone(), Some("vip"))),
            inventory: false,
        },
        // engine_tests::huawei_class_is_injected_on_create
        Case {
            name: "huawei class injected for autocreate",
            live: None,
            new: svc(
                NS,
                "class-autocreate",
                &[(&k(HUAWEI, "autocreate"), r#"{"type":"inner"}"#)],
                None,
            ),
            expect: Some((class.clone(), Some("performance"))),
            inventory: false,
        },
        // engine_tests::fixed_defaults_are_not_added_late_but_are_kept
        Case {
            name: "weight not added late on update",
            live: Some(v("weight-not-late", &[])),
            new: v(
                "weight-not-late",
                &[(&k(VOLC, "health-check-interval"), "3")],
            ),
            expect: Some((weight.clone(), None)),
            inventory: false,
        },
        Case {
            name: "weight kept from the live Service when an update drops it",
            live: Some(weight_live),
            new: weight_dropped,
            expect: Some((weight.clone(), Some("30"))),
            inventory: false,
        },
        Case {
            name: "class kept from the live Service when an update drops it",
            live: Some(svc(
                NS,
                "class-kept-live",
                &[(&k(HUAWEI, "id"), "e"), (&class, "union")],
                None,
            )),
            new: svc(NS, "class-kept-live", &[(&k(HUAWEI, "id"), "e")], None),
            expect: Some((class.clone(), Some("union"))),
            inventory: false,
        },
        Case {
            name: "a Service that becomes a LoadBalancer gets the weight",
            live: Some(cluster_ip),
            new: v("cluster-ip-to-lb", &[]),
            expect: Some((weight.clone(), Some("100"))),
            inventory: false,
        },
        Case {
            name: "an update changes the owner annotation the user set",
            live: Some(v("owner-updated", &[("example.com/owner", "team-a")])),
            new: v("owner-updated", &[("example.com/owner", "team-b")]),
            expect: Some(("example.com/owner".into(), Some("team-b"))),
            inventory: false,
        },
        // engine_tests::turbo_clusters_get_cluster_policy_when_unset (the API server's own
        // defaulting sets Cluster before admission: both arms must leave it so)
        Case {
            name: "turbo cluster policy",
            live: None,
            new: svc(NS, "turbo", &[(&k(HUAWEI, "id"), "e")], None),
            expect: Some((class.clone(), Some("performance"))),
            inventory: false,
        },
        Case {
            name: "user weight kept",
            live: None,
            new: v("weight-user", &[(&weight, "7")]),
            expect: Some((weight.clone(), Some("7"))),
            inventory: false,
        },
        Case {
            name: "only the owner annotation without a provider",
            live: None,
            new: svc(NS, "owner-only", &[], None),
            expect: Some(("example.com/owner".into(), Some("platform"))),
            inventory: false,
        },
        Case {
            name: "not a LoadBalancer",
            live: None,
            new: plain_cluster_ip,
            expect: Some((weight.clone(), None)),
            inventory: false,
        },
        // inventory_tests::mutation_takes_the_address_type_from_the_inventory, with a policy
        // default on the same Service
        Case {
            name: "the inventory's address type stays with the webhook",
            live: None,
            new: svc(
                NS,
                "inventory",
                &[(&k(CTYUN, "id"), "lb-ctyun-full")],
                Some("Local"),
            ),
            expect: Some((k(CTYUN, "address-type"), Some("intranet"))),
            inventory: true,
        },
        Case {
            name: "exempt namespace",
            live: None,
            new: svc(EXEMPT, "exempt", &[(&id_volc, "clb-1")], None),
            expect: Some(("example.com/owner".into(), None)),
            inventory: false,
        },
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arm {
    Webhook,
    Policy(&'static str),
    /// The v1 policy and the webhook with `defaults.exported`.
    Both,
}

/// What one arm stored for one case.
#[derive(Debug)]
struct Outcome {
    status: u16,
    warnings: Vec<String>,
    stored: Value,
    /// The stored object written back unchanged: status and what it stored then.
    again: Option<(u16, Value)>,
}

fn export(env: &Env, args: &[&str]) -> Vec<Value> {
    lbguard::yaml::documents(&crate::vap::export(env, args))
        .into_iter()
        .map(|d| d.unwrap())
        .filter(|o: &Value| {
            o["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("MutatingAdmissionPolicy"))
        })
        .collect()
}

/// The parts the defaults decide: annotations, labels, spec without what the API server
/// allocates.
fn decided(o: &Value) -> Value {
    let mut spec = o["spec"].clone();
    if let Some(m) = spec.as_object_mut() {
        for k in ["clusterIP", "clusterIPs", "healthCheckNodePort"] {
            m.remove(k);
        }
        for p in m
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_object_mut() {
                p.remove("nodePort");
            }
        }
    }
    json!({
        "annotations": o["metadata"]["annotations"],
        "labels": o["metadata"]["labels"],
        "spec": spec,
    })
}

/// A dry-run create of a Volcengine Service through every API server until `weighted`
/// says whether the defaults are in effect.
async fn until_defaults(env: &Env, on: bool) {
    // The weight default applies in VKE's cross-cluster mode (an id and a server group).
    let probe = svc(
        NS,
        "map-probe",
        &[
            (&format!("{VOLC}id"), "clb-1"),
            (&format!("{VOLC}server-group-id"), "rsp-1:80"),
        ],
        None,
    );
    for client in &env.admin {
        eventually(
            Duration::from_secs(30),
            "the defaults are in effect (or gone)",
            || async {
                let r = call(
                    client,
                    "POST",
                    &format!("/api/v1/namespaces/{NS}/services?dryRun=All"),
                    Some(&probe),
                )
                .await;
                let weighted = r.body["metadata"]["annotations"][format!("{VOLC}weight")]
                    .as_str()
                    .is_some();
                (r.ok() && weighted == on).then_some(())
            },
        )
        .await;
    }
}

fn mutating_webhook(env: &Env) -> Value {
    env.lbguard
        .webhook_configurations()
        .into_iter()
        .find(|o| o["kind"] == "MutatingWebhookConfiguration")
        .expect("the e2e install registers the mutating webhook (its inventory is on)")
}

async fn switch(env: &Env, arm: Arm, on: bool, policies: &[Value]) {
    let admin = &env.admin[0];
    let objects = match arm {
        Arm::Webhook => vec![mutating_webhook(env)],
        Arm::Policy(_) => policies.to_vec(),
        Arm::Both => [policies, &[mutating_webhook(env)]].concat(),
    };
    for o in &objects {
        if on {
            let r = call(admin, "POST", &plane::collection(o), Some(o)).await;
            assert!(
                r.ok(),
                "{} {}: {} {}",
                o["kind"],
                o["apiVersion"],
                r.status,
                r.body
            );
            // The API server's schema and type checks pass with nothing to warn about.
            assert!(
                r.warnings.is_empty(),
                "{}: {:?}",
                o["apiVersion"],
                r.warnings
            );
        } else {
            let r = plane::delete(admin, o).await;
            assert!(r.ok() || r.status == 404, "{}", r.body);
        }
    }
    until_defaults(env, on).await;
}

async fn write(env: &Env, i: usize, method: &str, path: &str, body: &Value) -> Reply {
    call(&env.admin[i % env.admin.len()], method, path, Some(body)).await
}

/// Runs every case through one arm: live objects stored first with no mutation on.
async fn run_arm(env: &Env, arm: Arm, policies: &[Value]) -> Vec<Outcome> {
    let admin = &env.admin[0];
    let cases = cases();
    let mut live_versions = Vec::new();
    for c in &cases {
        live_versions.push(match &c.live {
            Some(l) => {
                let r = call(admin, "POST", &plane::collection(l), Some(l))
                    .await
                    .expect_ok(c.name);
                Some(r.body["metadata"]["resourceVersion"].clone())
            }
            None => None,
        });
    }
    switch(env, arm, true, policies).await;
    let mut out = Vec::new();
    for (i, (c, rv)) in cases.iter().zip(&live_versions).enumerate() {
        let r = match rv {
            None => write(env, i, "POST", &plane::collection(&c.new), &c.new).await,
            Some(rv) => {
                let mut next = c.new.clone();
                next["metadata"]["resourceVersion"] = rv.clone();
                write(env, i, "PUT", &object_path(&next), &next).await
            }
        };
        assert!(r.ok(), "{arm:?} {}: {} {}", c.name, r.status, r.body);
        let stored = call(admin, "GET", &object_path(&c.new), None)
            .await
            .expect_ok(c.name)
            .body;
        // A second pass: the stored object written back as it is (reinvocation, or a
        // client that replaces with what it read).
        let again = write(env, i + 1, "PUT", &object_path(&stored), &stored).await;
        let again_stored = call(admin, "GET", &object_path(&c.new), None).await.body;
        out.push(Outcome {
            status: r.status,
            warnings: r.warnings,
            stored,
            again: Some((again.status, again_stored)),
        });
    }
    switch(env, arm, false, policies).await;
    for c in &cases {
        plane::delete(admin, &c.new).await;
    }
    out
}

pub async fn run(env: &mut Env) {
    let original: Value =
        lbguard::yaml::from_str(&std::fs::read_to_string(&env.lbguard.config).unwrap()).unwrap();
    env.lbguard.reconfigure(configure).await;
    env.lbguard.unregister(&env.admin).await;
    for ns in [NS, EXEMPT] {
        plane::namespace(&env.admin[0], ns).await;
    }
    let v1 = export(env, &[]);
    let beta = export(env, &["--mutating=v1beta1"]);
    assert_eq!(v1.len(), 2, "{v1:?}");
    assert_eq!(beta.len(), 2, "{beta:?}");
    assert!(
        v1.iter()
            .all(|o| o["apiVersion"] == "admissionregistration.k8s.io/v1")
    );
    assert!(
        beta.iter()
            .all(|o| o["apiVersion"] == "admissionregistration.k8s.io/v1beta1")
    );
    assert_eq!(
        v1[0]["spec"]["mutations"].as_array().unwrap().len(),
        5,
        "every default of the config is a mutation"
    );

    let t = Instant::now();
    let webhook = run_arm(env, Arm::Webhook, &[]).await;
    let mut arms = vec![
        (
            Arm::Policy("v1"),
            run_arm(env, Arm::Policy("v1"), &v1).await,
        ),
        (
            Arm::Policy("v1beta1"),
            run_arm(env, Arm::Policy("v1beta1"), &beta).await,
        ),
    ];
    env.lbguard
        .reconfigure(|c| c["defaults"]["exported"] = true.into())
        .await;
    arms.push((Arm::Both, run_arm(env, Arm::Both, &v1).await));
    let cases = cases();
    let mut compared = 0;
    let mut webhook_warnings = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let w = &webhook[i];
        if let Some((key, want)) = &c.expect {
            assert_eq!(
                w.stored["metadata"]["annotations"][key].as_str(),
                *want,
                "{}: the webhook stored {}",
                c.name,
                w.stored["metadata"]
            );
        }
        for (arm, outcomes) in &arms {
            let p = &outcomes[i];
            assert_eq!(p.status, w.status, "{arm:?} {}", c.name);
            if c.inventory && *arm != Arm::Both {
                let (key, _) = c.expect.as_ref().unwrap();
                let got = &p.stored["metadata"]["annotations"][key];
                assert!(got.is_null(), "{arm:?} {}: {got}", c.name);
                continue;
            }
            assert_eq!(
                decided(&p.stored),
                decided(&w.stored),
                "{arm:?} {}: the policy stored one object, the webhook another",
                c.name
            );
            // Annotations byte for byte (JSON equality of strings is byte equality).
            assert_eq!(
                serde_json::to_string(&p.stored["metadata"]["annotations"]).unwrap(),
                serde_json::to_string(&w.stored["metadata"]["annotations"]).unwrap()
            );
            let (ws, wa) = w.again.as_ref().unwrap();
            let (ps, pa) = p.again.as_ref().unwrap();
            assert_eq!(
                (ps, decided(pa)),
                (ws, decided(wa)),
                "{arm:?} {}: again",
                c.name
            );
            assert_eq!(
                decided(pa),
                decided(&p.stored),
                "{arm:?} {}: a second pass changed it",
                c.name
            );
            // A policy has no way to send a warning; it must not add any either.
            assert!(
                p.warnings.iter().all(|x| w.warnings.contains(x)),
                "{arm:?} {}: {:?} vs {:?}",
                c.name,
                p.warnings,
                w.warnings
            );
            compared += 1;
        }
        webhook_warnings.insert(c.name, w.warnings.clone());
    }
    let inventory_cases = cases.iter().filter(|c| c.inventory).count();
    assert_eq!(compared, 3 * cases.len() - 2 * inventory_cases);
    println!(
        "map: {} cases, 4 arms, stored objects equal in {:.1}s; the webhook's own warnings (a policy cannot send any): {}",
        cases.len(),
        t.elapsed().as_secs_f64(),
        webhook_warnings.values().map(Vec::len).sum::<usize>()
    );

    env.lbguard.reconfigure(|c| *c = original.clone()).await;
}

/// Service creates/s with the defaults applied by the policy against the mutating webhook
/// (`scripts/bench-e2e map`, not a test): the chart's defaults but one configured annotation
/// default, claims off (the cost of a second webhook call, not of a claim), 8 clients over
/// both API servers, two interleaved rounds; the validating webhook is on throughout.
pub mod bench;
