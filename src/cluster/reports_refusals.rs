//! A namespace that refuses its report: counted with its reason, the others written.

use std::collections::BTreeMap;

use http::StatusCode;
use serde_json::{Value, json};

use super::tests::{OPEN, WEB, fake, report_of, services};
use super::*;

/// The Status the API server sends for a create in a namespace being deleted.
fn terminating(ns: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("reports.openreports.io \"lbguard\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"),
        "reason": "Forbidden",
        "details": {"name": "lbguard", "group": "openreports.io", "kind": "reports",
                    "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]},
        "code": 403})
}

/// A namespace that refuses (being deleted, forbidden) is counted with its reason and
/// skipped; every other namespace gets its report, in the same round and the next.
#[tokio::test]
async fn a_namespace_that_refuses_does_not_stop_the_others() {
    let (client, state) = fake(&[OPEN]);
    state
        .lock()
        .unwrap()
        .refuse
        .insert("shop".into(), (StatusCode::FORBIDDEN, terminating("shop")));
    let mut failing = BTreeMap::new();
    for _ in 0..2 {
        let p = round(
            &client,
            ReportsApi::Auto,
            &report_of(&services()),
            &mut failing,
        )
        .await
        .unwrap();
        assert_eq!(p.applied, 1, "{p:?}");
        assert_eq!(p.failed.len(), 1, "{p:?}");
        assert_eq!(p.failed[0].namespace, "shop");
        assert_eq!(p.failed[0].reason, Refusal::Terminating);
        assert!(p.failed[0].error.contains("being terminated"), "{p:?}");
        assert_eq!(failing.get("shop"), Some(&Refusal::Terminating));
        assert_eq!(
            state.lock().unwrap().objects.keys().collect::<Vec<_>>(),
            [WEB]
        );
    }
    // Forbidden by RBAC is told apart; once the namespace takes writes again, it is written.
    state.lock().unwrap().refuse.insert(
        "shop".into(),
        (
            StatusCode::FORBIDDEN,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                   "message": "reports.openreports.io is forbidden: User cannot patch", "code": 403}),
        ),
    );
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&services()),
        &mut failing,
    )
    .await
    .unwrap();
    assert_eq!(p.failed[0].reason, Refusal::Forbidden);
    state.lock().unwrap().refuse.clear();
    let p = round(
        &client,
        ReportsApi::Auto,
        &report_of(&services()),
        &mut failing,
    )
    .await
    .unwrap();
    assert_eq!(p.applied, 2);
    assert!(p.failed.is_empty() && failing.is_empty(), "{p:?}");
}

#[test]
fn refusals_are_read_from_the_api_server_s_status() {
    let status = |v: Value| kube::Error::Api(serde_json::from_value(v).unwrap());
    assert_eq!(
        Refusal::of(&status(terminating("shop"))),
        Refusal::Terminating
    );
    for (code, want) in [
        (403, Refusal::Forbidden),
        (409, Refusal::Conflict),
        (404, Refusal::NotFound),
        (422, Refusal::Invalid),
        (429, Refusal::Unavailable),
        (503, Refusal::Unavailable),
        (418, Refusal::Other),
    ] {
        let e =
            status(json!({"kind": "Status", "status": "Failure", "message": "x", "code": code}));
        assert_eq!(Refusal::of(&e), want, "{code}");
    }
}
