//! The expected values are what each cloud's official Python SDK computes for the same
//! request (tests/cloud/vectors.py prints them); the mock cloud checks live requests the
//! same way (tests/cloud/).

use super::*;

const AK: &str = "AKIDEXAMPLE";
const SK: &str = "secretEXAMPLE/+=";

fn creds() -> Creds {
    Creds {
        access_key_id: AK.into(),
        access_key_secret: SK.into(),
        security_token: None,
        project_id: Some("p-1".into()),
    }
}

fn stamp() -> Stamp {
    Stamp {
        // 2026-12-01T08:00:00Z
        time: ::time::OffsetDateTime::from_unix_timestamp(1_796_112_000).unwrap(),
        nonce: "0123456789abcdef0123456789abcdef".into(),
    }
}

fn req(method: &'static str, host: &str, path: &str, query: &[(&str, &str)]) -> Req {
    Req {
        method,
        host: host.into(),
        path: path.into(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }
}

#[test]
fn the_stamp_is_the_vectors_time() {
    assert_eq!(stamp().basic(), "20261201T080000Z");
    assert_eq!(stamp().iso(), "2026-12-01T08:00:00Z");
    assert_eq!(stamp().request_id(), "01234567-89ab-cdef-0123-456789abcdef");
}

#[test]
fn ctyun_matches_the_sdk() {
    let mut r = req(
        "GET",
        "ctelb.example",
        "/v4/elb/show-loadbalancer",
        &[("regionID", "bb9fdb42"), ("elbID", "lb-1/x")],
    );
    ctyun(&mut r, &creds(), &stamp());
    assert_eq!(
        r.header("Eop-Authorization").unwrap(),
        "AKIDEXAMPLE Headers=ctyun-eop-request-id;eop-date Signature=hBnBFTS2ugp6EMV3jy32CEKLQjhdoJReDX6q8pevEyY="
    );
    assert_eq!(r.header("eop-date").unwrap(), "20261201T080000Z");
}

#[test]
fn alibaba_matches_the_sdk() {
    let mut r = req(
        "POST",
        "slb.cn-beijing.example",
        "/",
        &[("RegionId", "cn-beijing"), ("LoadBalancerId", "lb-2ze7")],
    );
    alibaba(
        &mut r,
        &creds(),
        &stamp(),
        "DescribeLoadBalancerAttribute",
        "2014-05-15",
    );
    assert_eq!(
        r.header("Authorization").unwrap(),
        "ACS3-HMAC-SHA256 Credential=AKIDEXAMPLE,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=8b263654e0dd48869b2ae2302268a31137c54e8f9ed76459f741f902ad6374de"
    );
}

#[test]
fn huawei_matches_the_sdk() {
    let mut r = req(
        "GET",
        "elb.cn-north-4.example",
        "/v3/p-1/elb/listeners",
        &[("loadbalancer_id", "elb-1"), ("limit", "100")],
    );
    huawei(&mut r, &creds(), &stamp());
    assert_eq!(
        r.header("Authorization").unwrap(),
        "SDK-HMAC-SHA256 Access=AKIDEXAMPLE, SignedHeaders=content-type;host;x-project-id;x-sdk-date, Signature=e245f6f4f9bd2868a882676348fdde25d5b89cdb769e9e752f972072fd726d41"
    );
}

#[test]
fn volcengine_matches_the_sdk() {
    let mut r = req(
        "GET",
        "clb.cn-beijing.example:443",
        "/",
        &[
            ("Action", "DescribeListeners"),
            ("Version", "2020-04-01"),
            ("LoadBalancerId", "clb-1"),
        ],
    );
    volcengine(&mut r, &creds(), &stamp(), "cn-beijing", "clb");
    assert_eq!(
        r.header("Authorization").unwrap(),
        "HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/cn-beijing/clb/request, SignedHeaders=host;x-content-sha256;x-date, Signature=5b07c5c34e387aa46a5a43bc86d7dba328d99d78abc5799d74c0d9008e280ae9"
    );
}

#[test]
fn a_changed_secret_changes_every_signature() {
    let mut other = creds();
    other.access_key_secret.push('x');
    for sign in [
        |r: &mut Req, c: &Creds| ctyun(r, c, &stamp()),
        |r: &mut Req, c: &Creds| alibaba(r, c, &stamp(), "A", "1"),
        |r: &mut Req, c: &Creds| huawei(r, c, &stamp()),
        |r: &mut Req, c: &Creds| volcengine(r, c, &stamp(), "r", "s"),
    ] {
        let (mut a, mut b) = (req("GET", "h", "/", &[]), req("GET", "h", "/", &[]));
        sign(&mut a, &creds());
        sign(&mut b, &other);
        assert_ne!(a.headers, b.headers);
    }
}

#[test]
fn a_request_never_shows_its_signature_or_token() {
    let mut r = req("POST", "slb.example", "/", &[("LoadBalancerId", "lb-1")]);
    let mut c = creds();
    c.security_token = Some("sts-token-secret".into());
    alibaba(
        &mut r,
        &c,
        &stamp(),
        "DescribeLoadBalancerAttribute",
        "2014-05-15",
    );
    let shown = format!("{r:?}");
    let auth = r.header("Authorization").unwrap();
    let signature = auth.rsplit("Signature=").next().unwrap();
    assert!(!shown.contains(signature), "{shown}");
    assert!(!shown.contains("sts-token-secret"), "{shown}");
    assert!(shown.contains("lb-1"), "{shown}");
}

#[test]
fn a_failed_random_source_still_gives_unique_nonces() {
    let a = Stamp::with_random(|_| Err(()));
    let b = Stamp::with_random(|_| Err(()));
    assert_ne!(a.nonce, "0".repeat(32));
    assert_ne!(a.nonce, b.nonce);
    let c = Stamp::with_random(|b| {
        b.fill(7);
        Ok(())
    });
    assert_eq!(c.nonce, "07".repeat(16));
}

#[test]
fn ctyun_sends_the_query_it_signed() {
    let mut r = req(
        "GET",
        "ctelb.example",
        "/v4/elb/show-loadbalancer",
        &[("regionID", "bb9fdb42"), ("elbID", "lb-1/x")],
    );
    ctyun(&mut r, &creds(), &stamp());
    // The signature is over `lb-1/x` (the SDK's encoding): the wire carries the same bytes.
    assert_eq!(r.sent_query(), "elbID=lb-1/x&regionID=bb9fdb42");
}

#[test]
fn huawei_encodes_a_path_once() {
    // The path as sent, already encoded: the signature is the SDK's for the same path
    // (it decodes the path once and encodes each segment once).
    let mut sent = req("GET", "elb.example", "/v3/p-1/elb/loadbalancers/a%3Ab", &[]);
    huawei(&mut sent, &creds(), &stamp());
    let mut plain = req("GET", "elb.example", "/v3/p-1/elb/loadbalancers/a:b", &[]);
    huawei(&mut plain, &creds(), &stamp());
    assert_eq!(
        sent.header("Authorization"),
        plain.header("Authorization"),
        "encoded twice would sign %253A"
    );
}
