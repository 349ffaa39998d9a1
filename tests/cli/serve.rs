//! `lbguard serve` with a kubeconfig naming a loopback stand-in of the API server.

use super::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Answers `/version`, and 404 to anything else; records every path asked for.
pub struct FakeApi {
    pub kubeconfig: std::path::PathBuf,
    pub paths: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

fn answer(stream: TcpStream, paths: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    paths.lock().unwrap().push(path.clone());
    let (status, body) = if path == "/version" {
        (
            "200 OK",
            r#"{"major":"1","minor":"36","gitVersion":"v1.36.2","platform":"linux/amd64"}"#
                .to_string(),
        )
    } else {
        (
                "404 Not Found",
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#
                    .to_string(),
            )
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

pub fn fake_api() -> FakeApi {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&paths);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || answer(stream, &seen));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\nusers:\n- name: dev\n  user: {{token: dev-token}}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: dev, namespace: default}}\ncurrent-context: fake\n"
            ),
        )
        .unwrap();
    FakeApi {
        kubeconfig,
        paths,
        _dir: dir,
    }
}

/// A running `lbguard serve --dev` and its stderr so far.
pub struct Serve {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub log: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Serve {
    pub fn start(kubeconfig: &std::path::Path, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args(["serve", "--dev", "--dev-dir"])
            .arg(dir.path())
            .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            log: Vec::new(),
            _dir: dir,
        }
    }

    /// Reads stderr until a line contains `what`.
    pub fn wait_for(&mut self, what: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !self.log.iter().any(|l| l.contains(what)) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.log.push(l),
                Err(_) => panic!("no \"{what}\" in:\n{}", self.log.join("\n")),
            }
        }
    }

    /// SIGTERM, then everything it logged until it exited.
    pub fn stop(mut self) -> Vec<String> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.log.push(l);
        }
        assert!(exit.success(), "{exit}: {}", self.log.join("\n"));
        std::mem::take(&mut self.log)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_dev_ignores_the_kubeconfig_unless_asked() {
    let api = serve::fake_api();
    let mut server = serve::Serve::start(&api.kubeconfig, &[]);
    server.wait_for("lbguard serving");
    let log = server.stop().join("\n");
    assert!(log.contains("running standalone (--dev"), "{log}");
    assert!(
        api.paths.lock().unwrap().is_empty(),
        "asked the kubeconfig's cluster: {:?}",
        api.paths.lock().unwrap()
    );
}

#[test]
fn serve_dev_with_the_kubeconfig_only_reads_and_shuts_down_once() {
    let api = serve::fake_api();
    let mut server =
        serve::Serve::start(&api.kubeconfig, &["--use-kubeconfig", "--metrics-secure"]);
    server.wait_for("lbguard serving");
    let log = server.stop();
    let text = log.join("\n");
    assert!(
        api.paths.lock().unwrap().iter().any(|p| p == "/version"),
        "{:?}",
        api.paths.lock().unwrap()
    );
    assert!(!text.contains("listener claims enabled"), "{text}");
    assert!(
        text.contains(
            "--dev only reads the cluster: listener claims, audit Events and policy reports off"
        ),
        "{text}"
    );
    let closed = log
        .iter()
        .filter(|l| l.contains("all connections closed"))
        .count();
    assert_eq!(closed, 1, "{text}");
}

#[test]
fn serve_errors_say_each_cause_once_and_paths_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-kubeconfig");
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", &missing)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains(&format!(
            "cannot read the kubeconfig {}: No such file or directory",
            missing.display()
        )),
        "{text}"
    );
    assert!(!text.contains("'\""), "{text}");

    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "inventory:\n  path: /no/such/inventory.yaml\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lbguard"))
        .args(["serve", "--dev", "--standalone", "--dev-dir"])
        .arg(dir.path().join("certs"))
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains("cannot read inventory /no/such/inventory.yaml"),
        "{text}"
    );
    assert_eq!(
        text.matches("No such file or directory").count(),
        1,
        "{text}"
    );
}

/// A Service another load balancer implementation serves is skipped, said once on stderr and
/// counted as foreign; it does not fail the run whatever its annotations hold.
#[test]
fn services_of_another_load_balancer_class_are_skipped_and_counted() {
    let manifest = r#"
apiVersion: v1
kind: Service
metadata:
  name: metal
  namespace: web
  annotations:
    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type: Internet
spec:
  type: LoadBalancer
  loadBalancerClass: metallb.io/metallb
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: ack
  namespace: web
  annotations:
    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type: Internet
spec:
  type: LoadBalancer
  ports: [{port: 80}]
"#;
    let out = lbguard(
        &["check", "--provider", "alibaba", "--output", "json", "-"],
        Some(manifest),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["summary"]["checked"], 1, "{doc}");
    assert_eq!(doc["summary"]["foreign"], 1, "{doc}");
    assert_eq!(doc["results"][0]["name"], "ack");
    let err = stderr(&out);
    assert!(
        err.contains("web/metal") && err.contains("metallb.io/metallb"),
        "{err}"
    );
    let text = lbguard(&["check", "--provider", "alibaba", "-"], Some(manifest));
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("1 Service(s) of another load balancer implementation skipped"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}
