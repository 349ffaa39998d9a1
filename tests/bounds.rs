//! Resource bounds under hostile clients: idle and slow connections, a connection cap, an
//! in-flight cap, oversized headers. Real TLS, real AdmissionReviews.

mod common;

use std::time::{Duration, Instant};

use axum::body::Bytes;
use common::{Client, Start, TestServer, fixture};
use http_body_util::BodyExt;
use tokio::io::AsyncWriteExt;

/// p99 of `n` /validate requests over `conns` keep-alive connections, in microseconds.
async fn p99(c: &Client, conns: usize, n: usize) -> u128 {
    let body = Bytes::from(serde_json::to_vec(&fixture("review-create.json")).unwrap());
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (c, body) = (c.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut send = c.keep_alive().await.unwrap();
            let mut lat = Vec::new();
            for _ in 0..n / conns {
                let req = common::validate_request(body.clone());
                let t = Instant::now();
                let resp = send.send_request(req).await.unwrap();
                assert_eq!(resp.status(), 200);
                resp.into_body().collect().await.unwrap();
                lat.push(t.elapsed().as_micros());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_unstable();
    all[(all.len() - 1) * 99 / 100]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_or_slow_connections_do_not_starve_real_requests() {
    let s = TestServer::start("").await;
    let c = s.client();
    p99(&c, 4, 200).await; // warm-up
    let quiet = p99(&c, 4, 800).await;
    let mut held = Vec::new();
    // 400 TLS connections that never send a request (keep-alive idle).
    for _ in 0..400 {
        held.push(Box::new(c.connect().await.unwrap()) as Box<dyn std::any::Any + Send>);
    }
    // 300 that send half a request and stall (slowloris).
    for _ in 0..300 {
        let mut t = c.connect().await.unwrap();
        t.write_all(b"POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: applic")
            .await
            .unwrap();
        t.flush().await.unwrap();
        held.push(Box::new(t));
    }
    // 300 TCP connections that never start TLS.
    for _ in 0..300 {
        held.push(Box::new(
            tokio::net::TcpStream::connect(s.running.addr)
                .await
                .unwrap(),
        ));
    }
    let busy = p99(&c, 4, 800).await;
    assert_eq!(held.len(), 1000);
    eprintln!("p99 quiet {quiet} µs, with 1,000 idle/slow connections {busy} µs");
    // Starvation shows as requests waiting for a handshake or header timeout (seconds). The
    // latency itself is a benchmark figure, not asserted here: a shared 2-core CI host makes
    // any tight ratio flaky.
    assert!(
        busy < 1_000_000,
        "p99 with 1,000 idle/slow connections {busy} µs (quiet {quiet} µs): requests are starved"
    );
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let s = TestServer::start_with(Start {
        max_connections: 8,
        ..Default::default()
    })
    .await;
    let c = s.client();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(c.connect().await.unwrap());
    }
    let blocked = tokio::time::timeout(Duration::from_millis(500), c.get("/healthz")).await;
    assert!(
        blocked.is_err(),
        "a ninth connection is not served while eight are open"
    );
    held.pop();
    let r = tokio::time::timeout(Duration::from_secs(5), c.get("/healthz"))
        .await
        .expect("served once a slot is free");
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn admissions_past_the_in_flight_cap_wait_and_probes_do_not() {
    let s = TestServer::start_with(Start {
        max_inflight: 1,
        ..Default::default()
    })
    .await;
    let c = s.client();
    let body = serde_json::to_vec(&fixture("review-create.json")).unwrap();
    // A client that sends its headers and half its body, then stalls: it holds the slot.
    let mut slow = c.connect().await.unwrap();
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..body.len() / 2]).await.unwrap();
    slow.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = {
        let c = c.clone();
        tokio::spawn(async move { c.post("/validate", &fixture("review-create.json")).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the second admission waits for the slot"
    );
    assert_eq!(c.get("/readyz").await.status, 200, "probes never wait");
    slow.write_all(&body[body.len() / 2..]).await.unwrap();
    slow.flush().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.review()["allowed"], true);
}

#[tokio::test]
async fn oversized_headers_are_refused() {
    let s = TestServer::start("").await;
    let c = s.client();
    let big = "x".repeat(100 * 1024);
    let r = c
        .request_with("GET", "/healthz", &[("x-filler", big.as_str())], vec![])
        .await;
    match r {
        Ok(r) => assert_eq!(r.status, 431),
        Err(e) => panic!("expected a 431 answer, got {e}"),
    }
    // The server is fine afterwards.
    assert_eq!(c.get("/healthz").await.status, 200);
}
