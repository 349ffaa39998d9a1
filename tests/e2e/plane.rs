//! A real control plane: etcd and two kube-apiservers sharing it (an HA control plane on one
//! host), certificates made here, an admin client per API server, and raw calls that keep the
//! response's `Warning` headers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};

pub use crate::common::free_port;

/// The certificates of one run: one CA signs the API servers', the admin's and lbguard's.
pub struct Pki {
    pub ca_pem: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    pub fn new() -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "lbguard e2e CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        Self {
            ca_pem: issuer.pem(),
            issuer,
        }
    }

    /// A serving certificate for localhost and 127.0.0.1.
    pub fn server(&self, dir: &Path, name: &str) -> Pair {
        let mut p = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.write(dir, name, p)
    }

    /// A client certificate for `user` in `group`.
    pub fn client(&self, dir: &Path, user: &str, group: &str) -> Pair {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, user);
        p.distinguished_name.push(DnType::OrganizationName, group);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.write(dir, user, p)
    }

    fn write(&self, dir: &Path, name: &str, p: CertificateParams) -> Pair {
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        let pair = Pair {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&pair.cert, cert.pem()).unwrap();
        std::fs::write(&pair.key, key.serialize_pem()).unwrap();
        pair
    }
}

/// A child process whose output goes to a log file; killed when dropped.
pub struct Proc {
    pub name: String,
    pub log: PathBuf,
    child: Option<Child>,
}

impl Proc {
    pub fn spawn(dir: &Path, name: &str, cmd: &mut Command) -> Self {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("{name} does not start: {e}"));
        Self {
            name: name.into(),
            log,
            child: Some(child),
        }
    }

    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGKILL, as a crashed node or OOM kill does.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            let until = Instant::now() + grace;
            while Instant::now() < until && self.alive() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.kill();
    }

    /// The last `n` lines of the log.
    pub fn tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

pub struct ApiServer {
    pub port: u16,
    pub proc: Option<Proc>,
    pub kubeconfig: PathBuf,
    args: Vec<String>,
}

/// etcd and the API servers of one run.
pub struct ControlPlane {
    pub dir: PathBuf,
    pub assets: PathBuf,
    pub pki: Pki,
    pub etcd: Proc,
    pub apis: Vec<ApiServer>,
    pub admin: Pair,
}

impl ControlPlane {
    /// Starts etcd and `n` API servers on it; waits until every one is ready.
    pub async fn start(assets: &Path, dir: &Path, n: usize) -> Self {
        let pki = Pki::new();
        std::fs::write(dir.join("ca.crt"), &pki.ca_pem).unwrap();
        let serving = pki.server(dir, "apiserver");
        let admin = pki.client(dir, "admin", "system:masters");
        let sa = KeyPair::generate().unwrap();
        std::fs::write(dir.join("sa.key"), sa.serialize_pem()).unwrap();
        std::fs::write(dir.join("sa.pub"), sa.public_key_pem()).unwrap();

        let (client_port, peer_port) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd = Proc::spawn(
            dir,
            "etcd",
            Command::new(assets.join("etcd")).args([
                "--name=e2e",
                &format!("--data-dir={}", dir.join("etcd-data").display()),
                &format!("--listen-client-urls={client_url}"),
                &format!("--advertise-client-urls={client_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=e2e={peer_url}"),
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ]),
        );
        let mut plane = Self {
            dir: dir.to_path_buf(),
            assets: assets.to_path_buf(),
            pki,
            etcd,
            apis: Vec::new(),
            admin,
        };
        for i in 0..n {
            let port = free_port();
            let mut args = vec![
                format!("--etcd-servers={client_url}"),
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--tls-cert-file={}", serving.cert.display()),
                format!("--tls-private-key-file={}", serving.key.display()),
                format!("--client-ca-file={}", dir.join("ca.crt").display()),
                "--service-account-issuer=https://kubernetes.default.svc".into(),
                format!(
                    "--service-account-key-file={}",
                    dir.join("sa.pub").display()
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    dir.join("sa.key").display()
                ),
                "--authorization-mode=RBAC".into(),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                "--endpoint-reconciler-type=none".into(),
                "--allow-privileged=true".into(),
                format!("--cert-dir={}", dir.join(format!("certs-{port}")).display()),
                "--profiling=false".into(),
                // The beta form of MutatingAdmissionPolicy (1.34-1.35 clusters), so the e2e
                // suite checks it on this API server too; v1 is on by default.
                "--runtime-config=admissionregistration.k8s.io/v1beta1=true".into(),
            ];
            // Two API servers on one host would share (and fight over) one identity lease.
            if i > 0 {
                args.push(
                    "--feature-gates=APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false"
                        .into(),
                );
            }
            let kubeconfig = dir.join(format!("admin-{i}.kubeconfig"));
            write_kubeconfig(
                &kubeconfig,
                port,
                &dir.join("ca.crt"),
                User::Cert(&plane.admin),
            );
            plane.apis.push(ApiServer {
                port,
                proc: None,
                kubeconfig,
                args,
            });
        }
        for i in 0..n {
            plane.start_api(i).await;
        }
        plane
    }

    /// (Re)starts API server `i` with its flags; waits for `/readyz`.
    pub async fn start_api(&mut self, i: usize) {
        let api = &mut self.apis[i];
        api.proc = Some(Proc::spawn(
            &self.dir,
            &format!("apiserver-{i}"),
            Command::new(self.assets.join("kube-apiserver")).args(&api.args),
        ));
        let client = self.client(i).await;
        let until = Instant::now() + Duration::from_secs(90);
        loop {
            let ready =
                tokio::time::timeout(Duration::from_secs(2), raw(&client, "GET", "/readyz", None))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .is_some_and(|r| r.status == 200);
            if ready {
                return;
            }
            let api = &mut self.apis[i];
            let alive = api.proc.as_mut().is_some_and(|p| p.alive());
            if !alive || Instant::now() > until {
                let tail = api.proc.as_ref().map(|p| p.tail(30)).unwrap_or_default();
                panic!("kube-apiserver {i} is not ready:\n{tail}");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub fn stop_api(&mut self, i: usize) {
        if let Some(mut p) = self.apis[i].proc.take() {
            p.terminate(Duration::from_secs(10));
        }
    }

    /// An admin client of API server `i`.
    pub async fn client(&self, i: usize) -> kube::Client {
        client_from(&self.apis[i].kubeconfig).await
    }

    pub fn procs(&self) -> Vec<&Proc> {
        let mut v = vec![&self.etcd];
        v.extend(self.apis.iter().filter_map(|a| a.proc.as_ref()));
        v
    }
}

pub enum User<'a> {
    Cert(&'a Pair),
    Token(&'a str),
}

pub fn write_kubeconfig(path: &Path, port: u16, ca: &Path, user: User) {
    let user = match user {
        User::Cert(p) => json!({
            "client-certificate": p.cert.display().to_string(),
            "client-key": p.key.display().to_string(),
        }),
        User::Token(t) => json!({"token": t}),
    };
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://127.0.0.1:{port}"),
            "certificate-authority": ca.display().to_string(),
        }}],
        "users": [{"name": "e2e", "user": user}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e"}}],
        "current-context": "e2e",
    });
    // JSON is YAML.
    std::fs::write(path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
}

pub async fn client_from(kubeconfig: &Path) -> kube::Client {
    let kc = Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.read_timeout = Some(Duration::from_secs(30));
    kube::Client::try_from(config).unwrap()
}

/// One answer of the API server: status, the `Warning` headers' texts, the body as JSON.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub warnings: Vec<String>,
    pub body: Value,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The Status message of a refusal.
    pub fn message(&self) -> String {
        self.body["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn expect_ok(self, what: &str) -> Self {
        assert!(self.ok(), "{what}: {} {}", self.status, self.body);
        self
    }
}

/// `299 - "text"` (RFC 7234 as Kubernetes writes it) to the text.
fn warning_text(h: &str) -> String {
    let quoted = h
        .split_once(' ')
        .and_then(|(_, rest)| rest.split_once(' '))
        .map_or(h, |(_, q)| q);
    let inner = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(quoted);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A request with a JSON body (or none); `Err` with the whole error chain when the API
/// server cannot be reached or the answer is cut off.
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<(&str, &Value)>,
) -> Result<Reply, String> {
    let mut req = http::Request::builder().method(method).uri(path);
    let bytes = match body {
        Some((ctype, b)) => {
            req = req.header("content-type", ctype);
            serde_json::to_vec(b).unwrap()
        }
        None => Vec::new(),
    };
    let resp = client
        .send(req.body(kube::client::Body::from(bytes)).unwrap())
        .await
        .map_err(|e| chain(&e))?;
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| warning_text(&String::from_utf8_lossy(v.as_bytes())))
        .collect();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| chain(&e))?
        .to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Ok(Reply {
        status,
        warnings,
        body,
    })
}

/// An error and its causes on one line: "connection closed" alone does not say by whom.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        next = cause.source();
    }
    out
}

/// A request that must be answered. One that changes nothing (a GET or a dry run) is sent
/// again after a transport error, as kubectl would be run again: a pooled connection the
/// API server closed at the same moment is not what a case tests. Anything else panics with
/// the error, since it may have been carried out.
pub async fn call(client: &kube::Client, method: &str, path: &str, body: Option<&Value>) -> Reply {
    let safe = method == "GET" || path.contains("dryRun=All");
    let mut attempt = 1;
    loop {
        match raw(client, method, path, body.map(|b| ("application/json", b))).await {
            Ok(r) => return r,
            Err(e) if safe && attempt < 3 => {
                eprintln!("  {method} {path}: {e}; sending it again");
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("{method} {path}: the API server does not answer: {e}"),
        }
    }
}

/// Where objects of a kind live: (group/version path, plural, namespaced).
fn resource(api_version: &str, kind: &str) -> (String, &'static str, bool) {
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let (plural, namespaced) = match kind {
        "Namespace" => ("namespaces", false),
        "Service" => ("services", true),
        "Node" => ("nodes", false),
        "Ingress" => ("ingresses", true),
        "Secret" => ("secrets", true),
        "ConfigMap" => ("configmaps", true),
        "ServiceAccount" => ("serviceaccounts", true),
        "Lease" => ("leases", true),
        "ClusterRole" => ("clusterroles", false),
        "ClusterRoleBinding" => ("clusterrolebindings", false),
        "Role" => ("roles", true),
        "RoleBinding" => ("rolebindings", true),
        "ValidatingWebhookConfiguration" => ("validatingwebhookconfigurations", false),
        "MutatingWebhookConfiguration" => ("mutatingwebhookconfigurations", false),
        "ValidatingAdmissionPolicy" => ("validatingadmissionpolicies", false),
        "ValidatingAdmissionPolicyBinding" => ("validatingadmissionpolicybindings", false),
        "MutatingAdmissionPolicy" => ("mutatingadmissionpolicies", false),
        "MutatingAdmissionPolicyBinding" => ("mutatingadmissionpolicybindings", false),
        "CustomResourceDefinition" => ("customresourcedefinitions", false),
        "Report" => ("reports", true),
        "PolicyReport" => ("policyreports", true),
        "LBGuardException" => ("lbguardexceptions", true),
        other => panic!("no path known for kind {other}"),
    };
    (base, plural, namespaced)
}

/// The collection path of `obj`'s kind (in its namespace, or `default`).
pub fn collection(obj: &Value) -> String {
    let (base, plural, namespaced) = resource(
        obj["apiVersion"].as_str().unwrap_or_default(),
        obj["kind"].as_str().unwrap_or_default(),
    );
    if namespaced {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
        format!("{base}/namespaces/{ns}/{plural}")
    } else {
        format!("{base}/{plural}")
    }
}

pub fn object_path(obj: &Value) -> String {
    format!(
        "{}/{}",
        collection(obj),
        obj["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// Path of a kind's collection, in `ns` when namespaced.
pub fn kind_path(api_version: &str, kind: &str, ns: Option<&str>) -> String {
    let (base, plural, namespaced) = resource(api_version, kind);
    match (namespaced, ns) {
        (true, Some(ns)) => format!("{base}/namespaces/{ns}/{plural}"),
        _ => format!("{base}/{plural}"),
    }
}

/// Server-side apply, forced (the test owns every field it sets).
pub async fn apply(client: &kube::Client, obj: &Value) -> Reply {
    let path = format!("{}?fieldManager=e2e&force=true", object_path(obj));
    raw(
        client,
        "PATCH",
        &path,
        Some(("application/apply-patch+yaml", obj)),
    )
    .await
    .unwrap_or_else(|e| panic!("apply {path}: the API server does not answer: {e}"))
}

pub async fn apply_ok(client: &kube::Client, obj: &Value) {
    let r = apply(client, obj).await;
    assert!(
        r.ok(),
        "apply {}: {} {}",
        object_path(obj),
        r.status,
        r.body
    );
}

pub async fn delete(client: &kube::Client, obj: &Value) -> Reply {
    call(client, "DELETE", &object_path(obj), None).await
}

pub async fn namespace(client: &kube::Client, name: &str) {
    apply_ok(
        client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await;
}

/// Polls `f` every 100 ms until it gives `Some`, or panics with `what` after `limit`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let until = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < until, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
