//! Deletion protection: DELETE registered by default, sent only for a marked Service.

use super::*;

/// DELETE is registered by default, sent only for a Service carrying the configured mark,
/// and not at all without a mark or with protectDeletion off.
#[test]
fn delete_is_sent_only_for_protected_services() {
    let webhook = |values: Value| {
        render(values).kind("ValidatingWebhookConfiguration")[0]["webhooks"][0].clone()
    };
    let w = webhook(json!({}));
    assert_eq!(
        w["rules"][0]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"])
    );
    let cond = w["matchConditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "delete-only-if-protected")
        .expect("a condition for DELETE");
    let expr = cond["expression"].as_str().unwrap();
    // What the API server decides with it: only a DELETE of a marked Service is sent.
    let sent = |op: &str, annotations: Value| {
        let old = json!({"metadata": {"name": "web", "annotations": annotations}, "spec": {"type": "LoadBalancer"}});
        let mut ctx = cel::Context::default();
        ctx.add_variable("oldObject", cel::to_value(&old).unwrap())
            .unwrap();
        ctx.add_variable("request", cel::to_value(json!({"operation": op})).unwrap())
            .unwrap();
        cel::Program::compile(expr).unwrap().execute(&ctx).unwrap() == cel::Value::Bool(true)
    };
    assert!(sent(
        "DELETE",
        json!({"lbguard.io/deletion-protection": "true"})
    ));
    assert!(!sent(
        "DELETE",
        json!({"lbguard.io/deletion-protection": "false"})
    ));
    assert!(!sent("DELETE", json!({"example.com/other": "true"})));
    assert!(sent("UPDATE", json!({})));
    assert!(
        expr.contains("oldObject.metadata.annotations['lbguard.io/deletion-protection'] == 'true'"),
        "{expr}"
    );
    let w = webhook(
        json!({"config": {"deletionProtection": {"annotation": null, "label": "example.com/keep"}}}),
    );
    let expr = w["matchConditions"].as_array().unwrap().last().unwrap()["expression"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        expr.contains("oldObject.metadata.labels['example.com/keep']")
            && !expr.contains("annotations"),
        "{expr}"
    );
    for values in [
        json!({"webhook": {"protectDeletion": false}}),
        json!({"config": {"deletionProtection": {"annotation": null, "label": null}}}),
    ] {
        let w = webhook(values.clone());
        assert_eq!(
            w["rules"][0]["operations"],
            json!(["CREATE", "UPDATE"]),
            "{values}"
        );
        assert!(
            !w["matchConditions"].to_string().contains("DELETE"),
            "{values}"
        );
    }
}
