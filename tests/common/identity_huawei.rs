//! The Huawei identity stand-in (tests/cloud/identity_huawei.py) as a test helper: STS and
//! IAM over HTTPS with a certificate made here, the metadata service and pod identity over
//! plain HTTP, all on loopback.

use std::process::Command;

use serde_json::Value;

use crate::common::Client;
use crate::common::python::Process;

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cloud/identity_huawei.py"
);
const SDK_CHECK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cloud/identity_huawei_sdk.py"
);

pub struct IdentityHuawei {
    process: Process,
    client: Client,
    pub ca_pem: String,
    /// `https://localhost:N`: STS and IAM.
    pub https: String,
    /// `http://127.0.0.1:N`: the metadata service and pod identity.
    pub http: String,
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
        let ip = std::net::IpAddr::from([127, 0, 0, 1]);
        let process = Process::start(STAND_IN, ip, &[], &[]).await;
        let [https, http] = process.ports[..] else {
            panic!("the identity stand-in said {:?}", process.ports);
        };
        std::fs::write(process.dir.path().join("ca.pem"), &process.certs.ca_pem).unwrap();
        let me = Self {
            client: Client::new(
                &process.certs.ca_pem,
                std::net::SocketAddr::from((ip, https)),
            ),
            ca_pem: process.certs.ca_pem.clone(),
            https: format!("https://localhost:{https}"),
            http: format!("http://127.0.0.1:{http}"),
            process,
        };
        me.write("oidc-token", "id-token-1");
        me.write("pod-token", "pod-token-1");
        Some(me)
    }

    /// The stand-in's own directory (its certificate, and the tokens a test writes).
    pub fn dir(&self) -> &std::path::Path {
        self.process.dir.path()
    }

    /// Writes a file in the stand-in's directory (a token the kubelet would project).
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir().join(name);
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
            .arg(self.dir().join("ca.pem"))
            .arg("--dir")
            .arg(self.dir())
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
