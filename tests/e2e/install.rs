//! lbguard as the chart installs it, on the real control plane: the chart rendered by Helm's
//! SDK, its RBAC applied, `lbguard serve` run as separate processes (one per API server, each
//! with its own connection and the chart's ServiceAccount token) behind a round-robin TCP
//! proxy, and the chart's webhook configurations retargeted to that proxy by URL.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

use crate::common;
use crate::plane::{self, ControlPlane, Proc, User, apply_ok, call, free_port, write_kubeconfig};

pub const NS: &str = "lbguard-system";
const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/lbguard");
const HELM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/chart/helm.py");
pub const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// The chart's objects for `values`, rendered by Helm's SDK (as the chart tests do).
pub fn render(values: &Value) -> Vec<Value> {
    let out = Command::new("python3")
        .args([HELM, "render", CHART, &values.to_string(), NS])
        .output()
        .expect("python3 runs (scripts/test installs helm-python-sdk)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.get("error").is_none(), "render: {}", out["error"]);
    let mut objects = Vec::new();
    for (path, text) in out["templates"].as_object().unwrap() {
        if path.ends_with("NOTES.txt") {
            continue;
        }
        for doc in lbguard::yaml::documents(text.as_str().unwrap()) {
            objects.push(doc.unwrap_or_else(|e| panic!("{path}: {e}")));
        }
    }
    objects
}

pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// `over` merged into `base`, objects key by key.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The chart values of the e2e install: the tutorial's (`examples/tutorial-values.yaml`, so
/// the tutorial runs against what it tells users to install), with every example's facts
/// known (the whole example inventory, the cloud controller's version and identity), this
/// run's certificate, and a short audit interval so reports follow quickly.
pub fn values(ca_pem: &str) -> Value {
    let inventory: Value = lbguard::yaml::from_str(
        &std::fs::read_to_string(format!("{EXAMPLES}/inventory/inventory.yaml")).unwrap(),
    )
    .unwrap();
    let mut values: Value = lbguard::yaml::from_str(
        &std::fs::read_to_string(format!("{EXAMPLES}/tutorial-values.yaml")).unwrap(),
    )
    .unwrap();
    merge(
        &mut values,
        &json!({
            "certificates": {"mode": "secret", "secret": {
                "name": "lbguard-tls",
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            }},
            "inventory": {"enabled": true, "loadBalancers": inventory["loadBalancers"]},
            "config": {
                "cluster": {"vpcId": "vpc-123"},
                "ccm": {
                    "version": "v2.10.0",
                    "users": ["system:serviceaccount:kube-system:cloud-controller-manager"],
                },
                "audit": {"interval": "1s"},
                "claims": {"grace": "5s", "gcInterval": "2s"},
            },
        }),
    );
    values
}

/// Waits until the API server serves a CRD just applied.
pub async fn established(admin: &kube::Client, crd: &Value) {
    let path = plane::object_path(crd);
    plane::eventually(
        Duration::from_secs(30),
        &format!("{path} is established"),
        || async {
            let r = call(admin, "GET", &path, None).await;
            r.body["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
                .then_some(())
        },
    )
    .await;
}

/// The chart's crds/ (what `helm install` applies first), established.
async fn install_chart_crds(admin: &kube::Client) {
    for e in std::fs::read_dir(format!("{CHART}/crds")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for doc in lbguard::yaml::documents(&text) {
            let crd = doc.unwrap();
            apply_ok(admin, &crd).await;
            established(admin, &crd).await;
        }
    }
}

/// One `lbguard serve` process, talking to one API server.
pub struct Replica {
    pub addr: SocketAddr,
    pub metrics: SocketAddr,
    pub proc: Option<Proc>,
    args: Vec<String>,
    kubeconfig: PathBuf,
    name: String,
}

pub struct Install {
    pub objects: Vec<Value>,
    pub config: PathBuf,
    pub inventory: PathBuf,
    pub ca_pem: String,
    pub replicas: Vec<Replica>,
    pub proxy: SocketAddr,
    /// More environment for the replicas (what a case's chart values put in the pod).
    pub env: Vec<(String, String)>,
    dir: PathBuf,
    /// Which replicas the proxy sends new connections to.
    backends: Arc<std::sync::Mutex<Vec<SocketAddr>>>,
}

impl Install {
    /// The e2e install, or (`defaults`) the chart's defaults but for the certificate.
    pub async fn start(plane: &ControlPlane, defaults: bool) -> Self {
        let dir = plane.dir.clone();
        let admin = plane.client(0).await;
        let mut values = values(&plane.pki.ca_pem);
        if defaults {
            values = json!({"certificates": values["certificates"]});
        }
        let objects = render(&values);
        plane::namespace(&admin, NS).await;
        install_chart_crds(&admin).await;
        for kind in [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
        ] {
            for o in of_kind(&objects, kind) {
                apply_ok(&admin, o).await;
            }
        }
        let token = token(&admin, "lbguard").await;

        // The chart's config and inventory, with the mounted paths made local.
        let maps = of_kind(&objects, "ConfigMap");
        let data = |suffix: &str, key: &str| -> Option<String> {
            maps.iter()
                .find(|m| m["metadata"]["name"].as_str().unwrap().ends_with(suffix))
                .and_then(|m| m["data"][key].as_str())
                .map(String::from)
        };
        let config = data("-config", "config.yaml").expect("the chart renders its config");
        let mut config: Value = lbguard::yaml::from_str(&config).unwrap();
        let inventory = dir.join("inventory.yaml");
        let listed = data("-inventory", "inventory.yaml");
        std::fs::write(
            &inventory,
            listed.as_deref().unwrap_or("loadBalancers: []\n"),
        )
        .unwrap();
        if listed.is_some() {
            config["inventory"]["path"] = inventory.display().to_string().into();
        }
        let config_path = dir.join("config.yaml");
        std::fs::write(&config_path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();

        let serving = plane.pki.server(&dir, "webhook");
        let deployment = of_kind(&objects, "Deployment")[0];
        let chart_args: Vec<String> = serde_json::from_value(
            deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone(),
        )
        .unwrap();
        let mut replicas = Vec::new();
        for (i, api) in plane.apis.iter().enumerate() {
            let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
            let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
            let args = chart_args
                .iter()
                .map(|a| match a.split_once('=').map(|(k, _)| k) {
                    Some("--config") => format!("--config={}", config_path.display()),
                    Some("--tls-cert") => format!("--tls-cert={}", serving.cert.display()),
                    Some("--tls-key") => format!("--tls-key={}", serving.key.display()),
                    Some("--addr") => format!("--addr={addr}"),
                    Some("--metrics-addr") => format!("--metrics-addr={metrics}"),
                    _ => a.clone(),
                })
                .collect();
            let kubeconfig = dir.join(format!("lbguard-{i}.kubeconfig"));
            write_kubeconfig(
                &kubeconfig,
                api.port,
                &dir.join("ca.crt"),
                User::Token(&token),
            );
            replicas.push(Replica {
                addr,
                metrics,
                proc: None,
                args,
                kubeconfig,
                name: format!("lbguard-{i}"),
            });
        }
        let backends = Arc::new(std::sync::Mutex::new(
            replicas.iter().map(|r| r.addr).collect::<Vec<_>>(),
        ));
        let proxy = proxy(Arc::clone(&backends)).await;
        let mut install = Self {
            objects,
            config: config_path,
            inventory,
            ca_pem: plane.pki.ca_pem.clone(),
            replicas,
            proxy,
            env: Vec::new(),
            dir,
            backends,
        };
        for i in 0..install.replicas.len() {
            install.start_replica(i).await;
        }
        let mut admins = vec![admin];
        for i in 1..plane.apis.len() {
            admins.push(plane.client(i).await);
        }
        install.register(&admins).await;
        install
    }

    pub async fn start_replica(&mut self, i: usize) {
        let r = &mut self.replicas[i];
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbguard"));
        cmd.args(&r.args)
            .env("KUBECONFIG", &r.kubeconfig)
            .env("POD_NAMESPACE", NS)
            .env("POD_NAME", &r.name)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("RUST_LOG");
        r.proc = Some(Proc::spawn(&self.dir, &r.name, &mut cmd));
        let client = common::Client::new(&self.ca_pem, r.addr);
        for _ in 0..300 {
            if let Ok(reply) = client.request("GET", "/readyz", vec![]).await
                && reply.status == 200
            {
                return;
            }
            let r = &mut self.replicas[i];
            if !r.proc.as_mut().is_some_and(|p| p.alive()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let tail = self.replicas[i]
            .proc
            .as_ref()
            .map(|p| p.tail(30))
            .unwrap_or_default();
        panic!("lbguard replica {i} is not ready:\n{tail}");
    }

    /// Rewrites the replicas' config and restarts them (lbguard reads its config at start).
    pub async fn reconfigure(&mut self, change: impl Fn(&mut Value)) {
        let mut config: Value =
            lbguard::yaml::from_str(&std::fs::read_to_string(&self.config).unwrap()).unwrap();
        change(&mut config);
        std::fs::write(&self.config, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        for i in 0..self.replicas.len() {
            self.kill_replica(i);
            self.start_replica(i).await;
        }
    }

    pub fn kill_replica(&mut self, i: usize) {
        if let Some(mut p) = self.replicas[i].proc.take() {
            p.kill();
        }
    }

    /// Sends new connections only to these replicas (the endpoints dropping a pod).
    pub fn route_to(&self, replicas: &[usize]) {
        *self.backends.lock().unwrap() = replicas.iter().map(|i| self.replicas[*i].addr).collect();
    }

    pub fn route_to_all(&self) {
        *self.backends.lock().unwrap() = self.replicas.iter().map(|r| r.addr).collect();
    }

    /// The chart's two webhook configurations, pointed at the proxy by URL.
    pub fn webhook_configurations(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for kind in [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ] {
            for o in of_kind(&self.objects, kind) {
                let mut o = o.clone();
                for w in o["webhooks"].as_array_mut().unwrap() {
                    let path = w["clientConfig"]["service"]["path"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    let ca = w["clientConfig"]["caBundle"].clone();
                    w["clientConfig"] = json!({
                        "url": format!("https://127.0.0.1:{}{path}", self.proxy.port()),
                        "caBundle": ca,
                    });
                }
                out.push(o);
            }
        }
        out
    }

    /// Registers the webhooks and waits until the API server calls them.
    /// Registers the webhooks and waits until every API server (`admins`, one client each)
    /// calls them: each picks up webhook configurations on its own.
    pub async fn register(&self, admins: &[kube::Client]) {
        for o in self.webhook_configurations() {
            apply_ok(&admins[0], &o).await;
        }
        for admin in admins {
            self.wait_for_webhooks(admin, true).await;
        }
    }

    pub async fn unregister(&self, admins: &[kube::Client]) {
        for o in self.webhook_configurations() {
            let r = plane::delete(&admins[0], &o).await;
            assert!(r.ok() || r.status == 404, "{}", r.body);
        }
        for admin in admins {
            self.wait_for_webhooks(admin, false).await;
        }
    }

    /// Waits until a dry-run of a Service the webhook denies is denied (or, with `on` false,
    /// admitted): the API server picks up webhook configurations asynchronously.
    async fn wait_for_webhooks(&self, admin: &kube::Client, on: bool) {
        let probe = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "webhook-probe", "namespace": "default", "annotations": {
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "public"}},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        });
        plane::eventually(
            Duration::from_secs(30),
            "the webhook configuration is in effect",
            || async {
                // Not answering yet is not an answer: ask again until the limit.
                let r = plane::raw(
                    admin,
                    "POST",
                    "/api/v1/namespaces/default/services?dryRun=All",
                    Some(("application/json", &probe)),
                )
                .await
                .inspect_err(|e| eprintln!("  webhook probe: {e}"))
                .ok()?;
                let denied = r.status == 403 || r.message().contains("lbguard");
                (denied == on).then_some(())
            },
        )
        .await;
    }

    pub fn procs(&self) -> Vec<&Proc> {
        self.replicas
            .iter()
            .filter_map(|r| r.proc.as_ref())
            .collect()
    }

    pub fn client(&self, i: usize) -> common::Client {
        common::Client::new(&self.ca_pem, self.replicas[i].addr)
    }
}

/// A ServiceAccount token from the TokenRequest API.
pub async fn token(admin: &kube::Client, sa: &str) -> String {
    let path = format!("/api/v1/namespaces/{NS}/serviceaccounts/{sa}/token");
    let r = call(
        admin,
        "POST",
        &path,
        Some(
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": {"expirationSeconds": 86400}}),
        ),
    )
    .await
    .expect_ok("token request");
    r.body["status"]["token"].as_str().unwrap().to_string()
}

/// Connections the proxy has accepted (the API servers reuse theirs: a count near the
/// number of calls means every call paid for a TLS handshake).
pub static PROXIED: AtomicUsize = AtomicUsize::new(0);

/// Round-robin TCP proxy: each new connection goes to the next backend that accepts it, as
/// a Service's endpoints spread the API servers' connections over the pods.
async fn proxy(backends: Arc<std::sync::Mutex<Vec<SocketAddr>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            PROXIED.fetch_add(1, Ordering::Relaxed);
            // As a kernel's Service routing would: no Nagle delay added on either leg.
            let _ = inbound.set_nodelay(true);
            let backends = backends.lock().unwrap().clone();
            let first = next.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                for k in 0..backends.len() {
                    let to = backends[(first + k) % backends.len()];
                    let Ok(Ok(mut outbound)) =
                        tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(to))
                            .await
                    else {
                        continue;
                    };
                    let _ = outbound.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    return;
                }
            });
        }
    });
    addr
}
