//! Admission reviews answered: allowed, denied, warned, updates, deletes, dry runs, exemptions, other kinds, and the defaults' patch.

use super::*;

#[tokio::test]
async fn create_allowed_echoes_uid() {
    let s = TestServer::start("").await;
    let review = fixture("review-create.json");
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["uid"], review["request"]["uid"]);
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");
}

#[tokio::test]
async fn server_side_apply_create_is_allowed() {
    let s = TestServer::start("").await;
    let r = s
        .client()
        .post("/validate", &fixture("review-ssa-create.json"))
        .await
        .review();
    assert_eq!(r["allowed"], true);
}

#[tokio::test]
async fn create_denied_with_403_and_the_rule_message() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create-denied.json");
    set_annotations(
        &mut review,
        "object",
        &[(&key(ALI, "address-type"), "Intranet")],
    );
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["uid"], review["request"]["uid"]);
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 403);
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(msg.starts_with("[address-type-value] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type is \"Intranet\""), "{msg}");
}

#[tokio::test]
async fn warnings_reach_the_response() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    set_annotations(
        &mut review,
        "object",
        &[
            (&key(VOLC, "id"), "clb-1"),
            (&key(VOLC, "server-group-id"), "rsp-1:80"),
            (&key(VOLC, "weight"), "0"),
        ],
    );
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], true);
    let warnings = r["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("[weight-range]")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn update_that_moves_the_load_balancer_is_denied() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-update.json");
    set_annotations(&mut review, "oldObject", &[(&key(ALI, "id"), "lb-a")]);
    set_annotations(&mut review, "object", &[(&key(ALI, "id"), "lb-b")]);
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], false);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[lb-id-immutable]")
    );
}

fn delete_review(protected: bool) -> Value {
    let mut review = fixture("review-update.json");
    let req = &mut review["request"];
    req["operation"] = json!("DELETE");
    req["oldObject"] = req["object"].clone();
    req["object"] = Value::Null;
    req["options"] = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"});
    if protected {
        set_annotations(
            &mut review,
            "oldObject",
            &[("lbguard.io/deletion-protection", "true")],
        );
    }
    review
}

#[tokio::test]
async fn delete_of_a_protected_service_is_denied() {
    let s = TestServer::start("").await;
    let r = s
        .client()
        .post("/validate", &delete_review(true))
        .await
        .review();
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 403);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[deletion-protection]")
    );
    let r = s
        .client()
        .post("/validate", &delete_review(false))
        .await
        .review();
    assert_eq!(r["allowed"], true);
}

#[tokio::test]
async fn dry_run_is_evaluated_the_same_way() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-dryrun-create.json");
    assert_eq!(review["request"]["dryRun"], true);
    set_annotations(
        &mut review,
        "object",
        &[(&key(ALI, "address-type"), "public")],
    );
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], false);
    let mut review = fixture("review-dryrun-update.json");
    set_annotations(&mut review, "oldObject", &[(&key(VOLC, "weight"), "10")]);
    set_annotations(&mut review, "object", &[(&key(VOLC, "weight"), "20")]);
    let r = s.client().post("/validate", &review).await.review();
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .contains("[weight-immutable]"),
        "{r}"
    );
}

#[tokio::test]
async fn exempt_namespace_is_allowed_unchecked() {
    let s = TestServer::start("exemptions:\n  namespaces: [webhook-e2e]\n").await;
    let mut review = fixture("review-create.json");
    set_annotations(
        &mut review,
        "object",
        &[(&key(ALI, "address-type"), "public")],
    );
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], true);
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not checked: namespace webhook-e2e is exempt")
    );
}

#[tokio::test]
async fn other_kinds_are_allowed_at_once() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    review["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    review["request"]["resource"] = json!({"group": "", "version": "v1", "resource": "configmaps"});
    review["request"]["object"] = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}});
    for path in ["/validate", "/mutate"] {
        let r = s.client().post(path, &review).await.review();
        assert_eq!(r["allowed"], true);
        assert_eq!(r["uid"], review["request"]["uid"]);
        assert!(r.get("patch").is_none());
    }
}

#[tokio::test]
async fn non_load_balancer_service_is_allowed() {
    let s = TestServer::start("").await;
    let mut review = fixture("review-create.json");
    review["request"]["object"]["spec"]["type"] = json!("ClusterIP");
    set_annotations(
        &mut review,
        "object",
        &[(&key(ALI, "address-type"), "public")],
    );
    let r = s.client().post("/validate", &review).await.review();
    assert_eq!(r["allowed"], true);
}

const DEFAULTS: &str =
    "defaults:\n  volcengineWeight: 100\n  annotations:\n    example.com/team: platform\n";

#[tokio::test]
async fn mutate_patch_applies_and_a_second_pass_is_empty() {
    let s = TestServer::start(DEFAULTS).await;
    let mut review = fixture("review-create-mutate.json");
    set_annotations(
        &mut review,
        "object",
        &[
            (&key(VOLC, "id"), "clb-1"),
            (&key(VOLC, "server-group-id"), "rsp-1:80"),
        ],
    );
    let r = s.client().post("/mutate", &review).await.review();
    assert_eq!(r["allowed"], true);
    assert_eq!(r["patchType"], "JSONPatch");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap())
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&raw).unwrap();
    let mut object = review["request"]["object"].clone();
    json_patch::patch(&mut object, &patch).unwrap();
    assert_eq!(
        object["metadata"]["annotations"][key(VOLC, "weight")],
        "100"
    );
    assert_eq!(
        object["metadata"]["annotations"]["example.com/team"],
        "platform"
    );
    // Everything else is untouched.
    assert_eq!(object["spec"], review["request"]["object"]["spec"]);
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(r["auditAnnotations"].as_object().unwrap().len() == 2);

    // The API server may reinvoke the webhook with its own output: nothing more to do.
    review["request"]["object"] = object.clone();
    let again = s.client().post("/mutate", &review).await.review();
    assert!(again.get("patch").is_none(), "{again}");
    // And validation of the mutated object passes.
    let v = s.client().post("/validate", &review).await.review();
    assert_eq!(v["allowed"], true, "{v}");
}

#[tokio::test]
async fn mutate_without_defaults_sends_no_patch() {
    let s = TestServer::start("").await;
    let r = s
        .client()
        .post("/mutate", &fixture("review-create-mutate.json"))
        .await
        .review();
    assert_eq!(r["allowed"], true);
    assert!(r.get("patch").is_none());
}
