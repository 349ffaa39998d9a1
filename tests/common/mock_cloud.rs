//! The mock cloud (tests/cloud/mock.py) as a test helper: started on a free port with its
//! own certificate, loaded with load balancers in the inventory file's format.

use std::process::Command;

use serde_json::{Value, json};

use super::Client;
use super::python::Process;

const MOCK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cloud/mock.py");
pub const REGION: &str = "region-1";
pub const AK: &str = "AKIDmock";
pub const SK: &str = "mock-secret";
/// A name for the mock that is not loopback (in its certificate; only a proxy resolves it).
pub const TUNNEL_NAME: &str = "lbguard-mock.test";

pub fn sdks_present() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import alibabacloud_slb20140515, alibabacloud_nlb20220430, huaweicloudsdkelb, huaweicloudsdkcore, volcenginesdkclb, ctyunsdk_elb20220909",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

/// The mock cloud, or `None` (the test says why and passes) when the SDKs are not installed;
/// under `CI=true` that is a failure.
pub struct Mock {
    _process: Process,
    client: Client,
    pub ca_pem: String,
    pub url: String,
}

impl Mock {
    /// On loopback, as `https://localhost:<port>`.
    pub async fn start(inventory: &str) -> Option<Self> {
        Self::start_on(inventory, None).await
    }

    /// Listening on `host` (an IP, e.g. the test node's bridge, where pods reach it) and
    /// named by it in its URL and certificate; loopback when `None`.
    pub async fn start_on(inventory: &str, host: Option<std::net::IpAddr>) -> Option<Self> {
        if !sdks_present() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the clouds' Python SDKs are missing (scripts/test installs them)"
            );
            eprintln!(
                "cloud mock: not run: the clouds' Python SDKs are not installed (scripts/test installs them)"
            );
            return None;
        }
        let ip = host.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        let ip_name = ip.to_string();
        let process = Process::start(MOCK, ip, &[TUNNEL_NAME], &["--host", &ip_name]).await;
        let port = process.ports[0];
        let mock = Self {
            client: Client::new(
                &process.certs.ca_pem,
                std::net::SocketAddr::from((ip, port)),
            ),
            ca_pem: process.certs.ca_pem.clone(),
            url: match host {
                Some(ip) => format!("https://{}", std::net::SocketAddr::from((ip, port))),
                None => format!("https://localhost:{port}"),
            },
            _process: process,
        };
        mock.control("creds", json!({"ak": AK, "sk": SK})).await;
        mock.load(inventory).await;
        Some(mock)
    }

    pub async fn control(&self, what: &str, body: Value) -> Value {
        let r = self.client.post(&format!("/_mock/{what}"), &body).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    pub async fn load(&self, inventory: &str) {
        let file: Value = lbguard::yaml::from_str(inventory).unwrap();
        self.control(
            "state",
            json!({"loadBalancers": file["loadBalancers"], "region": REGION, "clusterId": "c-own", "projectId": "p-1"}),
        )
        .await;
    }

    pub async fn calls(&self, op: &str) -> u64 {
        self.control("calls", json!({})).await["byOperation"][op]
            .as_u64()
            .unwrap_or(0)
    }

    pub async fn assert_clean(&self) {
        let c = self.control("calls", json!({})).await;
        assert_eq!(c["badSignatures"], 0, "{c}");
        assert_eq!(c["modelFailures"], json!([]), "{c}");
    }

    pub async fn fault(&self, mode: Option<&str>, delay: f64) {
        self.control("fault", json!({"mode": mode, "delay": delay}))
            .await;
    }
}
