//! The `lbguard serve --dev` binary as the README runs it, stopped with SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Client, fixture};

#[tokio::test]
async fn dev_server_answers_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--dev", "--dev-dir"])
        .arg(dir.path())
        .args([
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--metrics-addr",
            &format!("127.0.0.1:{metrics}"),
            "--log-format",
            "json",
        ])
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(3)
        .map(Result::unwrap)
        .collect();
    assert!(
        lines[0].starts_with("generated development certificate"),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("caBundle: LS0t"), "{lines:?}");
    assert!(
        lines[2].contains(&format!("https://localhost:{port}/validate")),
        "{lines:?}"
    );

    let ca = std::fs::read_to_string(dir.path().join("ca.crt")).unwrap();
    let client = Client::new(&ca, format!("127.0.0.1:{port}").parse().unwrap());
    let mut answered = None;
    for _ in 0..100 {
        match client.request("GET", "/readyz", vec![]).await {
            Ok(r) if r.status == 200 => {
                answered = Some(
                    client
                        .post("/validate", &fixture("review-create.json"))
                        .await
                        .review(),
                );
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let review = answered.expect("server never became ready");
    assert_eq!(review["allowed"], true);
    // A denial: decisions with findings are logged at info by default.
    let mut bad = fixture("review-create.json");
    bad["request"]["uid"] = "uid-denied".into();
    common::set_annotations(
        &mut bad,
        "object",
        &[(
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
            "Internet",
        )],
    );
    assert_eq!(
        client.post("/validate", &bad).await.review()["allowed"],
        false
    );

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(
        logs.contains("\"message\":\"admission decision\""),
        "{logs}"
    );
    assert!(logs.contains("\"uid\":\"uid-denied\""), "{logs}");
    assert!(logs.contains("address-type-value"), "{logs}");
    // A clean allow goes to debug unless --log-decisions all.
    assert!(
        !logs.contains("\"uid\":\"71ddba55-333c-4667-a11e-77a2fcb96919\""),
        "{logs}"
    );
    assert!(logs.contains("running standalone"), "{logs}");
    assert!(logs.contains("\"message\":\"stopped\""), "{logs}");
}
