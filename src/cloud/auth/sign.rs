//! Request signing, one scheme per cloud, as each cloud's SDK signs (the SDKs are the
//! reference the tests check against). HMAC and SHA-256 come from the `hmac` and `sha2` crates.

use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{AsciiSet, utf8_percent_encode};
use sha2::{Digest, Sha256};

use super::creds::Creds;
use crate::cloud::base::request::UNRESERVED;
pub use crate::cloud::base::request::{Req, encode};

/// The time and nonce of one signature, fixed by the caller so tests can reproduce it.
#[derive(Debug, Clone)]
pub struct Stamp {
    pub time: time::OffsetDateTime,
    pub nonce: String,
}

impl Stamp {
    pub fn now() -> Self {
        Self::with_random(|b| {
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), b).map_err(|_| ())
        })
    }

    /// A nonce only needs to be unique: when the system RNG fails, the time and a process-wide
    /// counter make one (never the all-zero nonce every failed call would share).
    pub fn with_random(fill: impl FnOnce(&mut [u8]) -> Result<(), ()>) -> Self {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let time = time::OffsetDateTime::now_utc();
        let mut bytes = [0u8; 16];
        if fill(&mut bytes).is_err() {
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let t = time.unix_timestamp_nanos() as u64;
            bytes[..8].copy_from_slice(&t.to_be_bytes());
            bytes[8..12].copy_from_slice(&std::process::id().to_be_bytes());
            bytes[12..].copy_from_slice(&(n as u32).to_be_bytes());
        }
        Self {
            time,
            nonce: hex::encode(bytes),
        }
    }

    /// `20261201T080000Z`
    fn basic(&self) -> String {
        self.format("", "")
    }

    /// `2026-12-01T08:00:00Z`
    fn iso(&self) -> String {
        self.format("-", ":")
    }

    fn format(&self, date: &str, time: &str) -> String {
        crate::vocab::timestamp::civil(self.time, date, time) + "Z"
    }

    /// A UUID-shaped request id from the nonce (CTyun wants one per request).
    fn request_id(&self) -> String {
        let n = format!("{:0<32}", self.nonce);
        format!(
            "{}-{}-{}-{}-{}",
            &n[0..8],
            &n[8..12],
            &n[12..16],
            &n[16..20],
            &n[20..32]
        )
    }
}

/// Python's `quote(s)` default: unreserved and `/` stay.
const UNRESERVED_SLASH: &AsciiSet = &UNRESERVED.remove(b'/');

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: the error case cannot happen.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// CTyun's EOP signature (the ELB SDK's `CtyunSigner`).
pub fn ctyun(req: &mut Req, creds: &Creds, stamp: &Stamp) {
    let date = stamp.basic();
    let request_id = stamp.request_id();
    let mut q: Vec<_> = req.query.clone();
    q.sort();
    // The SDK signs values with `/` left as is; the query is sent exactly so, else the API
    // checks a signature over `%2F` against one over `/`.
    let query = q
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, UNRESERVED),
                utf8_percent_encode(v, UNRESERVED_SLASH)
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    req.signed_query = Some(query.clone());
    let to_sign = format!(
        "ctyun-eop-request-id:{request_id}\neop-date:{date}\n\n{query}\n{}",
        sha256_hex(&req.body)
    );
    let k_time = hmac(creds.access_key_secret.as_bytes(), date.as_bytes());
    let k_ak = hmac(&k_time, creds.access_key_id.as_bytes());
    let k_date = hmac(&k_ak, &date.as_bytes()[..8]);
    let signature =
        base64::engine::general_purpose::STANDARD.encode(hmac(&k_date, to_sign.as_bytes()));
    req.set("Content-Type", "application/json;charset=UTF-8".into());
    req.set("ctyun-eop-request-id", request_id);
    req.set("Eop-date", date);
    req.set(
        "Eop-Authorization",
        format!(
            "{} Headers=ctyun-eop-request-id;eop-date Signature={signature}",
            creds.access_key_id
        ),
    );
}

/// Alibaba Cloud's ACS3-HMAC-SHA256 (the Tea OpenAPI client's default), for RPC-style
/// actions: the action and version in headers, the parameters in the query.
pub fn alibaba(req: &mut Req, creds: &Creds, stamp: &Stamp, action: &str, version: &str) {
    let payload = sha256_hex(&req.body);
    req.set("host", req.host.clone());
    req.set("x-acs-action", action.into());
    req.set("x-acs-version", version.into());
    req.set("x-acs-date", stamp.iso());
    req.set("x-acs-signature-nonce", stamp.nonce.clone());
    req.set("x-acs-content-sha256", payload.clone());
    req.set("accept", "application/json".into());
    if let Some(token) = &creds.security_token {
        req.set("x-acs-accesskey-id", creds.access_key_id.clone());
        req.set("x-acs-security-token", token.clone());
    }
    let mut q: Vec<_> = req.query.clone();
    q.sort();
    let query = q
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let (headers, signed) = req.canonical_headers(|k| {
        let k = k.to_ascii_lowercase();
        k == "host" || k == "content-type" || k.starts_with("x-acs-")
    });
    let canonical = format!(
        "{}\n{}\n{query}\n{headers}\n{signed}\n{payload}",
        req.method, req.path
    );
    let to_sign = format!("ACS3-HMAC-SHA256\n{}", sha256_hex(canonical.as_bytes()));
    let signature = hex::encode(hmac(creds.access_key_secret.as_bytes(), to_sign.as_bytes()));
    req.set(
        "Authorization",
        format!(
            "ACS3-HMAC-SHA256 Credential={},SignedHeaders={signed},Signature={signature}",
            creds.access_key_id
        ),
    );
}

/// Huawei Cloud's SDK-HMAC-SHA256 (huaweicloudsdkcore's `Signer`).
pub fn huawei(req: &mut Req, creds: &Creds, stamp: &Stamp) {
    let date = stamp.basic();
    req.set("Host", req.host.clone());
    req.set("X-Sdk-Date", date.clone());
    req.set("Content-Type", "application/json".into());
    if let Some(p) = &creds.project_id {
        req.set("X-Project-Id", p.clone());
    }
    if let Some(token) = &creds.security_token {
        req.set("X-Security-Token", token.clone());
    }
    // As the SDK: the path as sent is decoded once, then each segment encoded once.
    let decoded = percent_encoding::percent_decode_str(&req.path).decode_utf8_lossy();
    let mut uri = decoded.split('/').map(encode).collect::<Vec<_>>().join("/");
    if !uri.ends_with('/') {
        uri.push('/');
    }
    let (headers, signed) = req.canonical_headers(|k| !k.contains('_'));
    let payload = sha256_hex(&req.body);
    let canonical = format!(
        "{}\n{uri}\n{}\n{headers}\n{signed}\n{payload}",
        req.method,
        req.query_string()
    );
    let to_sign = format!(
        "SDK-HMAC-SHA256\n{date}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let signature = hex::encode(hmac(creds.access_key_secret.as_bytes(), to_sign.as_bytes()));
    req.set(
        "Authorization",
        format!(
            "SDK-HMAC-SHA256 Access={}, SignedHeaders={signed}, Signature={signature}",
            creds.access_key_id
        ),
    );
}

/// Volcengine's HMAC-SHA256 signature V4 (volcenginesdkcore's `SignerV4`).
pub fn volcengine(req: &mut Req, creds: &Creds, stamp: &Stamp, region: &str, service: &str) {
    let date = stamp.basic();
    let payload = sha256_hex(&req.body);
    let host = req
        .host
        .strip_suffix(":443")
        .unwrap_or(&req.host)
        .to_string();
    req.set("Host", host);
    req.set("X-Date", date.clone());
    req.set("X-Content-Sha256", payload.clone());
    if let Some(token) = &creds.security_token {
        req.set("X-Security-Token", token.clone());
    }
    let (headers, signed) = req.canonical_headers(|k| {
        k == "Content-Type" || k == "Content-Md5" || k == "Host" || k.starts_with("X-")
    });
    let canonical = format!(
        "{}\n{}\n{}\n{headers}\n{signed}\n{payload}",
        req.method,
        req.path,
        req.query_string()
    );
    let scope = format!("{}/{region}/{service}/request", &date[..8]);
    let to_sign = format!(
        "HMAC-SHA256\n{date}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let k_date = hmac(creds.access_key_secret.as_bytes(), &date.as_bytes()[..8]);
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    let k_signing = hmac(&k_service, b"request");
    let signature = hex::encode(hmac(&k_signing, to_sign.as_bytes()));
    req.set(
        "Authorization",
        format!(
            "HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            creds.access_key_id
        ),
    );
}

#[cfg(test)]
#[path = "sign_tests.rs"]
mod tests;
