//! The Alibaba Cloud and Volcengine identity stand-ins (tests/cloud/identity_alibaba_volc.py)
//! as a test helper: STS on HTTPS with its own certificate, the metadata services on plain
//! HTTP, both on loopback; and the clouds' own credential providers run against them
//! (tests/cloud/identity_sdk.py). Included with `#[path]` next to `mod common;`.

use std::process::Command;

use serde_json::Value;

use crate::common::Client;
use crate::common::python::Process;

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cloud/identity_alibaba_volc.py"
);
const SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cloud/identity_sdk.py");

/// Whether the SDKs' credential providers are installed (scripts/test installs them).
pub fn sdks_present() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import alibabacloud_credentials.provider, volcenginesdkcore.auth.providers",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

pub struct StandIn {
    process: Process,
    client: Client,
    pub ca_pem: String,
    pub ca_file: std::path::PathBuf,
    /// `https://localhost:<port>` (or the host's IP)
    pub sts: String,
    /// `localhost:<port>` (or the host's IP), as the SDKs' variables name an STS host.
    pub sts_host: String,
    /// `http://127.0.0.1:<port>` (or the host's IP)
    pub metadata: String,
}

impl StandIn {
    /// `None` (the test says why and passes) without the SDKs; under `CI=true` a failure.
    pub async fn start() -> Option<Self> {
        Self::start_on(None).await
    }

    /// Listening on `host` (an IP, e.g. the test node's bridge, where pods reach it) and
    /// named by it in its URLs and certificate; loopback when `None`.
    pub async fn start_on(host: Option<std::net::IpAddr>) -> Option<Self> {
        if !sdks_present() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the clouds' Python SDKs are missing (scripts/test installs them)"
            );
            eprintln!("identity stand-ins: not run: the clouds' Python SDKs are not installed");
            return None;
        }
        let ip = host.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        let ip_name = ip.to_string();
        let process = Process::start(STAND_IN, ip, &[], &["--host", &ip_name]).await;
        let [sts, metadata] = process.ports[..] else {
            panic!("the stand-ins said {:?}", process.ports);
        };
        let ca_file = process.dir.path().join("ca.pem");
        std::fs::write(&ca_file, &process.certs.ca_pem).unwrap();
        let name = match host {
            Some(ip) => std::net::SocketAddr::from((ip, sts)).to_string(),
            None => format!("localhost:{sts}"),
        };
        Some(Self {
            client: Client::new(&process.certs.ca_pem, std::net::SocketAddr::from((ip, sts))),
            ca_pem: process.certs.ca_pem.clone(),
            ca_file,
            sts: format!("https://{name}"),
            sts_host: name,
            metadata: format!("http://{}", std::net::SocketAddr::from((ip, metadata))),
            process,
        })
    }

    /// The stand-in's own directory (its certificate, and the tokens a test writes).
    pub fn dir(&self) -> &std::path::Path {
        self.process.dir.path()
    }

    /// POST /_sts/<what>.
    pub async fn control(&self, what: &str, body: Value) -> Value {
        let r = self.client.post(&format!("/_sts/{what}"), &body).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    pub async fn last(&self) -> Value {
        self.control("last", serde_json::json!({})).await
    }

    /// Credentials from the cloud's own provider (`case`: alibaba-chain, alibaba-ecs,
    /// volcengine-chain, volcengine-ecs), in an environment of `vars` only.
    pub async fn sdk(&self, case: &str, vars: &[(&str, String)]) -> Value {
        let mut cmd = Command::new("python3");
        cmd.arg(SDK)
            .arg(case)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir())
            .env("IDENTITY_CA", &self.ca_file)
            .env("IDENTITY_STS", &self.sts_host)
            .env(
                "IDENTITY_METADATA",
                self.metadata.trim_start_matches("http://"),
            );
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(line.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{case}: {e}: {line}"))
    }
}
