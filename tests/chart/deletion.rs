//! Deletion protection: a webhook of its own for DELETE, registered by default, sent for a
//! marked Service whatever its type (the mark is on the Service), and for nothing else.

use super::*;

/// DELETE is registered by default, on a webhook of its own, sent only for a Service carrying
/// the configured mark (a ClusterIP Service too, and one of another load balancer class), and
/// not at all without a mark or with protectDeletion off. The checking webhook gets no DELETE.
#[test]
fn delete_is_sent_only_for_protected_services() {
    let hooks = |values: Value| {
        render(values).kind("ValidatingWebhookConfiguration")[0]["webhooks"]
            .as_array()
            .unwrap()
            .clone()
    };
    let named = |hooks: &[Value], name: &str| hooks.iter().find(|w| w["name"] == name).cloned();
    let all = hooks(json!({}));
    let validate = named(&all, "validate.lbguard.io").unwrap();
    assert_eq!(
        validate["rules"][0]["operations"],
        json!(["CREATE", "UPDATE"])
    );
    let w = named(&all, "deletion-protection.lbguard.io").expect("a webhook for DELETE");
    assert_eq!(w["rules"][0]["operations"], json!(["DELETE"]));
    assert_eq!(w["clientConfig"]["service"]["path"], "/validate");
    assert_eq!(w["sideEffects"], "None");
    let conditions = w["matchConditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1, "only the mark decides: {conditions:?}");
    let expr = conditions[0]["expression"].as_str().unwrap();
    // What the API server decides with it: only a DELETE of a marked Service is sent,
    // whatever its type or class.
    let sent = |spec: Value, annotations: Value| {
        let old = json!({"metadata": {"name": "web", "annotations": annotations}, "spec": spec});
        let mut ctx = cel::Context::default();
        ctx.add_variable("oldObject", cel::to_value(&old).unwrap())
            .unwrap();
        ctx.add_variable(
            "request",
            cel::to_value(json!({"operation": "DELETE"})).unwrap(),
        )
        .unwrap();
        cel::Program::compile(expr).unwrap().execute(&ctx).unwrap() == cel::Value::Bool(true)
    };
    let marked = json!({"lbguard.io/deletion-protection": "true"});
    let lb = json!({"type": "LoadBalancer"});
    assert!(sent(lb.clone(), marked.clone()));
    assert!(sent(json!({"type": "ClusterIP"}), marked.clone()));
    assert!(sent(
        json!({"type": "LoadBalancer", "loadBalancerClass": "metallb.io/metallb"}),
        marked
    ));
    assert!(!sent(
        lb.clone(),
        json!({"lbguard.io/deletion-protection": "false"})
    ));
    assert!(!sent(lb, json!({"example.com/other": "true"})));
    assert!(
        expr.contains("oldObject.metadata.annotations['lbguard.io/deletion-protection'] == 'true'"),
        "{expr}"
    );
    let all = hooks(
        json!({"config": {"deletionProtection": {"annotation": null, "label": "example.com/keep"}}}),
    );
    let w = named(&all, "deletion-protection.lbguard.io").unwrap();
    let expr = w["matchConditions"][0]["expression"].as_str().unwrap();
    assert!(
        expr.contains("oldObject.metadata.labels['example.com/keep']")
            && !expr.contains("annotations"),
        "{expr}"
    );
    for values in [
        json!({"webhook": {"protectDeletion": false}}),
        json!({"config": {"deletionProtection": {"annotation": null, "label": null}}}),
    ] {
        let all = hooks(values.clone());
        assert!(
            named(&all, "deletion-protection.lbguard.io").is_none(),
            "{values}"
        );
        assert!(!Value::from(all).to_string().contains("DELETE"), "{values}");
    }
}
