//! Certificate rotation while serving, laid out like a kubelet Secret volume.

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Client, Start, TestServer, fixture};
use lbguard::server::devcert::{DevCerts, generate};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

fn der(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// `dir/..<version>/tls.{crt,key}`, `dir/..data -> ..<version>`, `dir/tls.crt -> ..data/tls.crt`.
fn write_version(dir: &Path, version: &str, certs: &DevCerts) {
    let v = dir.join(format!("..{version}"));
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(v.join("tls.crt"), &certs.cert_pem).unwrap();
    std::fs::write(v.join("tls.key"), &certs.key_pem).unwrap();
    // Atomic swap, as the kubelet does it: new link, then rename over ..data.
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(format!("..{version}"), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    for f in ["tls.crt", "tls.key"] {
        if std::fs::symlink_metadata(dir.join(f)).is_err() {
            symlink(format!("..data/{f}"), dir.join(f)).unwrap();
        }
    }
}

/// A CA bundle trusting both certificates' CAs, so the client accepts either.
fn both(a: &DevCerts, b: &DevCerts) -> String {
    format!("{}{}", a.ca_pem, b.ca_pem)
}

async fn start_in_volume(first: &DevCerts, trust: String) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    write_version(dir.path(), "2026_11_29_a", first);
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let start = Start {
        reload: Duration::from_millis(50),
        ..Default::default()
    };
    TestServer::start_files(start, dir, trust, cert, key).await
}

async fn wait_for_cert(client: &Client, want: &[u8]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if client.peer_certificate().await == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn symlink_swap_rotates_without_a_failed_request() {
    let a = generate(&["localhost"]).unwrap();
    let b = generate(&["localhost"]).unwrap();
    let s = start_in_volume(&a, both(&a, &b)).await;
    let client = s.client();
    assert_eq!(client.peer_certificate().await, der(&a.cert_pem));

    // Keep requests flowing through the swap; none may fail.
    let review = fixture("review-create.json");
    let load = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut ok = 0;
            for _ in 0..60 {
                let r = client.post("/validate", &review).await.review();
                assert_eq!(r["allowed"], true);
                ok += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ok
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    write_version(s.dir.path(), "2026_11_29_b", &b);
    assert!(
        wait_for_cert(&client, &der(&b.cert_pem)).await,
        "new connections never got the new certificate"
    );
    assert_eq!(load.await.unwrap(), 60);
}

#[tokio::test]
async fn in_place_rewrite_is_picked_up() {
    let a = generate(&["localhost"]).unwrap();
    let b = generate(&["localhost"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::write_pair(dir.path(), &a);
    let start = Start {
        reload: Duration::from_millis(50),
        ..Default::default()
    };
    let s = TestServer::start_files(start, dir, both(&a, &b), cert, key).await;
    common::write_pair(s.dir.path(), &b);
    assert!(wait_for_cert(&s.client(), &der(&b.cert_pem)).await);
}

#[tokio::test]
async fn broken_new_files_keep_the_old_certificate() {
    let a = generate(&["localhost"]).unwrap();
    let s = start_in_volume(&a, a.ca_pem.clone()).await;
    let broken = DevCerts {
        ca_pem: String::new(),
        cert_pem: "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n".into(),
        key_pem: a.key_pem.clone(),
    };
    write_version(s.dir.path(), "2026_11_29_broken", &broken);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.running.app.metrics.tls_reload_errors.get() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        s.running.app.metrics.tls_reload_errors.get() > 0,
        "reload error not counted"
    );
    assert_eq!(s.client().peer_certificate().await, der(&a.cert_pem));
    let r = s
        .client()
        .post("/validate", &fixture("review-create.json"))
        .await
        .review();
    assert_eq!(r["allowed"], true);

    // A key that does not match the certificate is refused the same way.
    let other = generate(&["localhost"]).unwrap();
    let mismatched = DevCerts {
        ca_pem: String::new(),
        cert_pem: other.cert_pem.clone(),
        key_pem: a.key_pem.clone(),
    };
    let before = s.running.app.metrics.tls_reload_errors.get();
    write_version(s.dir.path(), "2026_11_29_mismatch", &mismatched);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.running.app.metrics.tls_reload_errors.get() == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(s.running.app.metrics.tls_reload_errors.get() > before);
    assert_eq!(s.client().peer_certificate().await, der(&a.cert_pem));
}

#[tokio::test]
async fn a_bad_first_certificate_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), "garbage").unwrap();
    std::fs::write(dir.path().join("tls.key"), "garbage").unwrap();
    let opts = lbguard::server::ServerOptions::local(
        Default::default(),
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
    );
    let err = lbguard::server::start(opts, std::future::pending())
        .await
        .err()
        .expect("start must fail");
    let text = format!("{err:#}");
    assert!(
        text.contains("loading the TLS certificate") && text.contains("tls.crt"),
        "{text}"
    );
}

#[tokio::test]
async fn tls12_clients_work_and_plaintext_does_not() {
    let s = TestServer::start("").await;
    let c12 = Client::with_versions(&s.ca_pem, s.running.addr, &[&rustls::version::TLS12]);
    let r = c12
        .post("/validate", &fixture("review-create.json"))
        .await
        .review();
    assert_eq!(r["allowed"], true);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(s.running.addr)
        .await
        .unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut buf)).await;
    assert!(
        !String::from_utf8_lossy(&buf).contains("ok"),
        "plaintext must not be served"
    );
}

#[tokio::test]
async fn certs_script_output_serves_the_service_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .args([
            concat!(env!("CARGO_MANIFEST_DIR"), "/certs/gen.sh"),
            "lbguard.lbguard-system.svc",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("caBundle: LS0t"));
    let ca = std::fs::read_to_string(dir.path().join("ca.crt")).unwrap();
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    let s = TestServer::start_files(
        Start::default(),
        tempfile::tempdir().unwrap(),
        ca,
        cert,
        key,
    )
    .await;
    // The client checks the chain and the name (localhost is in the SANs).
    let r = s
        .client()
        .post("/validate", &fixture("review-create.json"))
        .await
        .review();
    assert_eq!(r["allowed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_rotations_under_continuous_load_lose_no_request() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use axum::body::Bytes;
    use http_body_util::BodyExt;

    const RELOAD: Duration = Duration::from_millis(200);
    let certs: Vec<DevCerts> = (0..4).map(|_| generate(&["localhost"]).unwrap()).collect();
    let trust: String = certs.iter().map(|c| c.ca_pem.as_str()).collect();
    let dir = tempfile::tempdir().unwrap();
    write_version(dir.path(), "v0", &certs[0]);
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let s = TestServer::start_files(
        Start {
            reload: RELOAD,
            ..Default::default()
        },
        dir,
        trust,
        cert,
        key,
    )
    .await;
    let client = s.client();
    let stop = Arc::new(AtomicBool::new(false));
    let (ok_kept, ok_fresh, failed) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let body = Bytes::from(serde_json::to_vec(&fixture("review-create.json")).unwrap());
    let mut tasks = Vec::new();
    // Kept-alive connections: opened once, used for the whole run.
    for _ in 0..3 {
        let (client, body, stop, ok, failed) = (
            client.clone(),
            body.clone(),
            Arc::clone(&stop),
            Arc::clone(&ok_kept),
            Arc::clone(&failed),
        );
        tasks.push(tokio::spawn(async move {
            let mut send = client.keep_alive().await.unwrap();
            while !stop.load(Ordering::SeqCst) {
                let req = common::validate_request(body.clone());
                match send.send_request(req).await {
                    Ok(r) if r.status() == 200 => {
                        r.into_body().collect().await.unwrap();
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {
                        failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }));
    }
    // Fresh connections: a new TLS handshake for every request.
    for _ in 0..3 {
        let (client, stop, ok, failed) = (
            client.clone(),
            Arc::clone(&stop),
            Arc::clone(&ok_fresh),
            Arc::clone(&failed),
        );
        tasks.push(tokio::spawn(async move {
            let review = fixture("review-create.json");
            while !stop.load(Ordering::SeqCst) {
                let body = serde_json::to_vec(&review).unwrap();
                match client.request("POST", "/validate", body).await {
                    Ok(r) if r.status == 200 => {
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {
                        failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (i, next) in certs.iter().enumerate().skip(1) {
        let swapped = Instant::now();
        write_version(s.dir.path(), &format!("v{i}"), next);
        let want = der(&next.cert_pem);
        loop {
            if client.peer_certificate().await == want {
                break;
            }
            assert!(
                swapped.elapsed() < Duration::from_secs(5),
                "rotation {i}: new connections never got the new certificate"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let took = swapped.elapsed();
        // One reload interval, plus scheduling slack on a loaded 2-core machine.
        assert!(
            took <= RELOAD + Duration::from_millis(250),
            "rotation {i}: new certificate seen after {took:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    let (kept, fresh) = (
        ok_kept.load(Ordering::SeqCst),
        ok_fresh.load(Ordering::SeqCst),
    );
    assert_eq!(failed.load(Ordering::SeqCst), 0, "failed requests");
    assert!(
        kept > 100 && fresh > 20,
        "load kept flowing: {kept} kept-alive, {fresh} fresh"
    );
}
