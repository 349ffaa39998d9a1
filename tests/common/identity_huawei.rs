//! The Huawei identity stand-in (tests/cloud/identity_huawei.py) as a test helper: STS and
//! IAM over HTTPS with a certificate made here, the metadata service and pod identity over
//! plain HTTP, all on loopback.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Client, write_pair};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cloud/identity_huawei.py"
);
const SDK_CHECK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cloud/identity_huawei_sdk.py"
);

pub struct IdentityHuawei {
    child: Child,
    client: Client,
    pub ca_pem: String,
    /// `https://localhost:N`: STS and IAM.
    pub https: String,
    /// `http://127.0.0.1:N`: the metadata service and pod identity.
    pub http: String,
    pub dir: tempfile::TempDir,
}

impl Drop for IdentityHuawei {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// huaweicloudsdkcore and the STS and IAM models are installed (scripts/test installs them);
/// under `CI=true` they must be.
pub fn sdk_present() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import huaweicloudsdkcore.auth.provider, huaweicloudsdksts.v1.model, huaweicloudsdkiam.v3.model",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "huaweicloudsdkcore, huaweicloudsdksts or huaweicloudsdkiam is missing (scripts/test installs them)"
        );
        eprintln!("huawei identity: not run: Huawei Cloud's Python SDK is not installed");
    }
    ok
}

impl IdentityHuawei {
    pub async fn start() -> Option<Self> {
        if !sdk_present() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let certs = lbguard::server::devcert::generate(&["localhost", "127.0.0.1"]).unwrap();
        let (cert, key) = write_pair(dir.path(), &certs);
        std::fs::write(dir.path().join("ca.pem"), &certs.ca_pem).unwrap();
        let mut child = Command::new("python3")
            .arg(STAND_IN)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the identity stand-in");
        let stdout = child.stdout.take().unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(30), line)
            .await
            .expect("the identity stand-in starts within 30 s")
            .unwrap()
            .unwrap();
        let ports: Vec<u16> = line
            .trim()
            .strip_prefix("ports ")
            .map(|p| p.split(' ').filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        let [https, http] = ports[..] else {
            panic!("the identity stand-in said {line:?}");
        };
        let me = Self {
            child,
            client: Client::new(
                &certs.ca_pem,
                std::net::SocketAddr::from(([127, 0, 0, 1], https)),
            ),
            ca_pem: certs.ca_pem,
            https: format!("https://localhost:{https}"),
            http: format!("http://127.0.0.1:{http}"),
            dir,
        };
        me.write("oidc-token", "id-token-1");
        me.write("pod-token", "pod-token-1");
        Some(me)
    }

    /// Writes a file in the stand-in's directory (a token the kubelet would project).
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    pub async fn control(&self, what: &str, body: Value) -> Value {
        let r = self.client.post(&format!("/_id/{what}"), &body).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    pub async fn calls(&self, op: &str) -> u64 {
        self.control("calls", serde_json::json!({})).await["byOperation"][op]
            .as_u64()
            .unwrap_or(0)
    }

    /// No request or answer the API's models refused.
    pub async fn assert_clean(&self) {
        let c = self.control("calls", serde_json::json!({})).await;
        assert_eq!(c["modelFailures"], serde_json::json!([]), "{c}");
    }

    /// What huaweicloudsdkcore's own providers get from the stand-in.
    pub fn sdk_check(&self) -> Value {
        let out = Command::new("python3")
            .arg(SDK_CHECK)
            .arg("--https")
            .arg(&self.https)
            .arg("--http")
            .arg(&self.http)
            .arg("--ca")
            .arg(self.dir.path().join("ca.pem"))
            .arg("--dir")
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the SDK check failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}
