//! The `lbguard serve --dev` binary as the README runs it, stopped with SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Client, fixture, free_port};

/// `lbguard serve --dev` on a free port with no cluster in reach; stdout and stderr as given.
fn lbguard(dir: &std::path::Path, args: &[&str], output: fn() -> Stdio) -> (Child, u16) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--dev", "--dev-dir"])
        .arg(dir)
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("KUBECONFIG", dir.join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(output())
        .stderr(output())
        .spawn()
        .unwrap();
    (child, port)
}

#[tokio::test]
async fn dev_server_answers_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = free_port();
    let (mut child, port) = lbguard(
        dir.path(),
        &[
            "--metrics-addr",
            &format!("127.0.0.1:{metrics}"),
            "--log-format",
            "json",
        ],
        Stdio::piped,
    );
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

/// What one load task saw.
#[derive(Default, Debug)]
struct Seen {
    answered: usize,
    closed_by_server: usize,
    not_sent: usize,
    failed: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_turns_unready_first_and_loses_no_request() {
    use axum::body::Bytes;
    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = lbguard(
        dir.path(),
        &[
            "--metrics-addr",
            "127.0.0.1:0",
            "--shutdown-delay",
            "1s",
            "--shutdown-grace",
            "5s",
        ],
        Stdio::null,
    );
    let ca_path = dir.path().join("ca.crt");
    for _ in 0..200 {
        if ca_path.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ca = std::fs::read_to_string(&ca_path).unwrap();
    let client = Client::new(&ca, format!("127.0.0.1:{port}").parse().unwrap());
    for _ in 0..200 {
        if matches!(client.request("GET", "/readyz", vec![]).await, Ok(r) if r.status == 200) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let closed = Arc::new(AtomicBool::new(false));
    let body = Bytes::from(serde_json::to_vec(&fixture("review-create.json")).unwrap());
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (client, body, closed) = (client.clone(), body.clone(), Arc::clone(&closed));
        tasks.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            let mut conn = None;
            loop {
                if conn.is_none() {
                    match client.connect().await {
                        Ok(s) => {
                            let (send, c) = hyper::client::conn::http1::handshake(TokioIo::new(s))
                                .await
                                .unwrap();
                            tokio::spawn(c);
                            conn = Some(send);
                        }
                        // The listener is closed: this pod is gone from the endpoints.
                        Err(_) => {
                            closed.store(true, Ordering::SeqCst);
                            return seen;
                        }
                    }
                }
                let send = conn.as_mut().unwrap();
                if send.ready().await.is_err() {
                    seen.not_sent += 1;
                    conn = None;
                    continue;
                }
                let req = common::validate_request(body.clone());
                match send.send_request(req).await {
                    Ok(r) => {
                        let close = r.headers().get("connection").is_some_and(|v| v == "close");
                        let status = r.status();
                        match r.into_body().collect().await {
                            Ok(_) if status == 200 => seen.answered += 1,
                            other => seen.failed.push(format!("{status}: {:?}", other.err())),
                        }
                        if close {
                            seen.closed_by_server += 1;
                            conn = None;
                        }
                    }
                    // Closed before the request went out: nothing lost, reconnect.
                    Err(e) if e.is_canceled() => {
                        seen.not_sent += 1;
                        conn = None;
                    }
                    Err(e) => {
                        seen.failed.push(e.to_string());
                        conn = None;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Readiness turns false while the listener is still open.
    let mut unready = false;
    for _ in 0..100 {
        match client.request("GET", "/readyz", vec![]).await {
            Ok(r) if r.status == 503 => {
                unready = true;
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("the listener closed before readiness turned false: {e}"),
        }
    }
    assert!(unready, "readiness never turned false");
    assert!(
        !closed.load(Ordering::SeqCst),
        "still serving after readiness turned false"
    );
    let mut total = Seen::default();
    for t in tasks {
        let s = tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .expect("load stops once the listener closes")
            .unwrap();
        total.answered += s.answered;
        total.closed_by_server += s.closed_by_server;
        total.not_sent += s.not_sent;
        total.failed.extend(s.failed);
    }
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0));
    assert!(total.failed.is_empty(), "requests lost: {total:?}");
    assert!(total.answered > 100, "{total:?}");
    assert!(
        total.closed_by_server > 0,
        "draining answers close their connections: {total:?}"
    );
}

/// Text logs to a pipe or file carry no ANSI colour codes (they are for a terminal).
#[test]
fn text_logs_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = free_port();
    let (mut child, _port) = lbguard(
        dir.path(),
        &[
            "--metrics-addr",
            &format!("127.0.0.1:{metrics}"),
            "--log-format",
            "text",
        ],
        Stdio::piped,
    );
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let serving = line.contains("lbguard serving");
        seen.push(line);
        if serving {
            break;
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let text = seen.join("\n");
    assert!(text.contains("lbguard serving"), "{text}");
    assert!(text.contains("INFO"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in piped logs: {text:?}"
    );
}
