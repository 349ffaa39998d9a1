//! `lbguard plan --inventory-cloud` against the mock cloud: the plan is made with what the
//! cloud says of the load balancers the Services use (their listeners and whose they are),
//! and a cloud that cannot answer is an error, never a load balancer without listeners.

use super::*;

/// Two load balancers other Services share, in the VPC of the config `cloud_config` writes.
const SHARED: &str = r#"
loadBalancers:
  - {id: lb-shared, provider: alibaba, kind: clb, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 443, protocol: HTTPS, owner: external}, {port: 80, protocol: TCP, owner: shop/web}]}
  - {id: nlb-shared, provider: alibaba, kind: nlb, addressType: internet, vpcId: vpc-1, createdBy: user,
     listeners: [{port: 8443, protocol: TCP, owner: shop/api}, {port: 9443, protocol: TCP, owner: external}]}
"#;

/// A run of `lbguard plan` in a directory of its own: the config (the mock's endpoint, CA
/// and an access key), the manifests, and what the command printed.
struct Planned {
    code: Option<i32>,
    out: String,
    err: String,
}

/// `lbguard plan --config <the mock's config> ARGS... FILES...`, the files written from
/// `(name, YAML)` pairs; `--old` before a name marks a live object.
fn plan(provider: Provider, mock: &Mock, args: &[&str], files: &[(&str, &str)]) -> Planned {
    let dir = tempfile::tempdir().unwrap();
    let creds = creds_dir(provider, AK, SK);
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &mock.ca_pem).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        cloud_config(
            provider,
            mock,
            creds.path(),
            &format!("    timeout: 2s\n    caFile: {}\n", ca.display()),
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbguard"));
    cmd.args(["plan", "--config", config.to_str().unwrap()])
        .args(args);
    for (name, yaml) in files {
        let (flag, name) = match name.strip_prefix("--old ") {
            Some(n) => (Some("--old"), n),
            None => (None, *name),
        };
        let path = dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        cmd.args(flag).arg(&path);
    }
    let out = cmd.output().unwrap();
    Planned {
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A Service `shop/NAME` on port 80/TCP with these Alibaba annotations (suffixes).
fn service(name: &str, annotations: &[(&str, &str)]) -> String {
    let cat = lbguard::providers::catalog(Provider::Alibaba);
    let anns: String = annotations
        .iter()
        .map(|(k, v)| format!("    {}: \"{v}\"\n", cat.key(k)))
        .collect();
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations:\n{anns}spec:\n  type: LoadBalancer\n  selector: {{app: {name}}}\n  ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]\n"
    )
}

/// A Service that reuses `lb-shared` and takes its listeners over.
fn taking_over() -> String {
    service(
        "api",
        &[("id", "lb-shared"), ("force-override-listeners", "true")],
    )
}

/// The cloud's listener 80/TCP of `lb-shared`, named for `shop/web`, is what makes
/// the take-over: offline the same plan cannot know it and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_clbs_listeners_come_from_the_cloud_and_make_a_takeover() {
    let Some(mock) = Mock::start(SHARED).await else {
        return;
    };
    let svc = taking_over();
    let files = [("api.yaml", svc.as_str())];
    let online = plan(Provider::Alibaba, &mock, &["--inventory-cloud"], &files);
    let p = &online;
    assert_eq!(p.code, Some(3), "{}{}", p.out, p.err);
    assert!(
        p.out
            .contains("  ACK CLB controller, load balancer lb-shared\n"),
        "{}",
        p.out
    );
    assert!(p.out.contains("    ! listener 80/TCP"), "{}", p.out);
    assert!(p.out.contains("shop/web"), "{}", p.out);
    assert!(p.out.contains("[plan-takeover]"), "{}", p.out);
    assert!(!p.out.contains("not known"), "{}", p.out);
    assert!(p.out.contains("1 to take over"), "{}", p.out);
    assert!(mock.calls("alibaba/DescribeLoadBalancerAttribute").await >= 1);
    mock.assert_clean().await;

    // JSON says whose listener it is.
    let json = plan(
        Provider::Alibaba,
        &mock,
        &["--inventory-cloud", "--output", "json"],
        &files,
    );
    assert_eq!(json.code, Some(3), "{}{}", json.out, json.err);
    let doc: Value = serde_json::from_str(&json.out).unwrap();
    let take = doc["services"][0]["plans"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["action"] == "take-over")
        .unwrap_or_else(|| panic!("{}", json.out));
    assert_eq!(take["peer"], "shop/web", "{take}");

    // Without the cloud: no listener is known, no take-over, the plan says it assumed.
    let offline = plan(Provider::Alibaba, &mock, &[], &files);
    assert_eq!(offline.code, Some(0), "{}{}", offline.out, offline.err);
    assert!(!offline.out.contains("! listener"), "{}", offline.out);
    assert!(offline.out.contains("not known"), "{}", offline.out);
}

/// On an NLB the cloud lists, the listener another Service holds on the port is taken over
/// with force-override; one the user made on another port is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_nlbs_listeners_come_from_the_cloud() {
    let Some(mock) = Mock::start(SHARED).await else {
        return;
    };
    let svc = service(
        "web",
        &[("id", "nlb-shared"), ("force-override-listeners", "true")],
    )
    .replace("port: 80,", "port: 8443,")
    .replace(
        "spec:\n",
        "spec:\n  loadBalancerClass: alibabacloud.com/nlb\n",
    );
    let p = plan(
        Provider::Alibaba,
        &mock,
        &["--inventory-cloud"],
        &[("web.yaml", &svc)],
    );
    assert_eq!(p.code, Some(3), "{}{}", p.out, p.err);
    assert!(p.out.contains("ACK NLB controller"), "{}", p.out);
    assert!(p.out.contains("    ! listener 8443/TCP"), "{}", p.out);
    assert!(p.out.contains("shop/api"), "{}", p.out);
    assert!(!p.out.contains("9443"), "{}", p.out);
    assert!(!p.out.contains("not known"), "{}", p.out);
    mock.assert_clean().await;
}

/// A cloud that fails is an error (exit 2, the id and the cause on stderr), and the plan says
/// the facts could not be read, not that the load balancer has none; one the cloud does not
/// have is refused as lb-exists refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloud_failure_is_an_error_not_a_load_balancer_without_listeners() {
    let Some(mock) = Mock::start(SHARED).await else {
        return;
    };
    let svc = taking_over();
    let files = [("api.yaml", svc.as_str())];
    for (fault, cause) in [
        ("server", "ServiceUnavailable"),
        ("throttle", "throttled"),
        ("auth", "SignatureDoesNotMatch"),
        ("slow", "no answer within 2000 ms"),
    ] {
        mock.fault(Some(fault), if fault == "slow" { 4.0 } else { 0.0 })
            .await;
        let p = plan(Provider::Alibaba, &mock, &["--inventory-cloud"], &files);
        assert_eq!(p.code, Some(2), "{fault}: {}{}", p.out, p.err);
        assert!(
            p.err.contains(
                "lbguard plan: lb-shared: lbguard could not read it from the cloud's API: "
            ) && p.err.contains(cause),
            "{fault}: {}",
            p.err
        );
        assert!(!p.out.contains("no inventory entry"), "{fault}: {}", p.out);
        assert!(
            p.out
                .contains("not known (lbguard could not read it from the cloud's API: "),
            "{fault}: {}",
            p.out
        );
        assert!(!p.out.contains("! listener"), "{fault}: {}", p.out);
    }
    // --cloud-timeout replaces the config's 2 s budget, as it does for `check`.
    mock.fault(Some("slow"), 4.0).await;
    let p = plan(
        Provider::Alibaba,
        &mock,
        &["--inventory-cloud", "--cloud-timeout", "500ms"],
        &files,
    );
    assert_eq!(p.code, Some(2), "{}{}", p.out, p.err);
    assert!(p.err.contains("no answer within 500 ms"), "{}", p.err);
    mock.fault(None, 0.0).await;

    // Not found is the cloud's answer, not a failure: lb-exists denies the Service.
    let typo = service("api", &[("id", "lb-typo")]);
    let p = plan(
        Provider::Alibaba,
        &mock,
        &["--inventory-cloud"],
        &[("api.yaml", &typo)],
    );
    assert_eq!(p.code, Some(0), "{}{}", p.out, p.err);
    assert!(p.out.contains("lb-exists"), "{}", p.out);
    assert!(!p.err.contains("lb-typo"), "{}", p.err);
}

/// The plan case tests/fixtures/plan/nlb-created-deletes-foreign-listener.yaml with its facts
/// served by the cloud: the NLB is named only by the label the controller recorded on the
/// live object, and the listener made in the console, which only the cloud knows of, is in
/// the plan as the controller deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_nlbs_foreign_listener_comes_from_the_cloud() {
    let case: Value = lbguard::yaml::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/plan/nlb-created-deletes-foreign-listener.yaml"
        ))
        .unwrap(),
    )
    .unwrap();
    let facts = json!({ "loadBalancers": case["facts"] }).to_string();
    let Some(mock) = Mock::start(&facts).await else {
        return;
    };
    let (old, new) = (case["old"].to_string(), case["new"].to_string());
    let files = [
        ("--old live.json", old.as_str()),
        ("new.json", new.as_str()),
    ];
    let p = plan(Provider::Alibaba, &mock, &["--inventory-cloud"], &files);
    assert_eq!(p.code, Some(3), "{}{}", p.out, p.err);
    assert!(
        p.out
            .contains("ACK NLB controller, load balancer nlb-mine01\n"),
        "{}",
        p.out
    );
    assert!(p.out.contains("    - listener 9000/TCP\n"), "{}", p.out);
    assert!(p.out.contains("[plan-delete-listener]"), "{}", p.out);
    assert!(p.out.contains("    ~ listener 443/TCP\n"), "{}", p.out);
    assert!(!p.out.contains("not known"), "{}", p.out);
    mock.assert_clean().await;

    // Offline the plan cannot see the console's listener, and says so.
    let offline = plan(Provider::Alibaba, &mock, &[], &files);
    assert!(!offline.out.contains("9000"), "{}", offline.out);
    assert!(
        offline.out.contains("not known (no inventory entry)"),
        "{}",
        offline.out
    );
}
