//! What only ACK's CLB controller reads (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:
//! pkg/controller/service/clbv1/listeners.go:618-643): `forward-port`, and where it points
//! (:224-233: an HTTP listener forwards to the port its entry names, which the CLB API's
//! ForwardPort needs to be an HTTPS listener); `hostname`, which clbv1/service_controller.go:
//! 419-424 writes as the Service's status.loadBalancer.ingress[0].hostname, where the API
//! server takes only a lowercase DNS-1123 subdomain that is not an IP address
//! (ValidateLoadBalancerStatus, pkg/apis/core/validation); `domain-extensions`, which
//! clbv1/listeners.go:379-385 parses (:1177-1197) while building every listener.

use super::value::port_ok;
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::Findings;
use crate::vocab::go;
use crate::vocab::labels::dns_subdomain;
use crate::vocab::service::Svc;

pub fn check(svc: Svc, cat: &Catalog, out: &mut Findings) {
    if let Some(a) = cat.get(svc, "forward-port").filter(|a| !a.value.is_empty()) {
        forward_port(a, out);
        forward_target(svc, cat, a, out);
    }
    if let Some(a) = cat.get(svc, "hostname").filter(|a| !a.value.is_empty()) {
        hostname(a, out);
    }
    if let Some(a) = cat
        .get(svc, "domain-extensions")
        .filter(|a| !a.value.is_empty())
    {
        domain_extensions(a, out);
    }
}

/// `domain-extensions` (CLB, HTTPS listeners' CreateDomainExtension): `<domain>:<certId>`
/// pairs. The controller trims each entry and needs exactly one ':' in it; it parses the
/// annotation for every listener, whatever its protocol, so one bad entry (an empty one after
/// a trailing ',' too) fails the whole Service.
fn domain_extensions(a: Annot, out: &mut Findings) {
    for entry in a.value.split(',') {
        let e = entry.trim();
        if e.split(':').count() != 2 {
            out.push(
                annotation_field(a.key),
                format!(
                    "{} entry \"{e}\" is not <domain>:<certificate id> (exactly one ':'); the CLB controller fails on it while building every listener (\"parse DomainExtensions error: invalid domain extension {e}\"), so the Service's load balancer is not reconciled; write e.g. \"www.example.com:1231579085529123_166f8204689_1714763408_709017975\"",
                    a.key
                ),
            );
        }
    }
}

/// A DNS-1123 subdomain as the API server reads one: at most 253 characters, dot-separated
/// labels of lower-case letters, digits and '-', each starting and ending with a letter or
/// digit (`IsDNS1123Subdomain`).
pub const DNS_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// An IPv4 address written plainly (no leading zeros): every IP parser reads it as one.
pub const IPV4: &str = r"^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$";

/// Reading: a dotted quad with leading zeros ("010.1.1.1") is an IP to the API server's
/// sloppy parser but a name to a strict one; lbguard denies only the plain form both read
/// as an IP.
fn is_plain_ipv4(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            (1..=3).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `hostname`: written as the status hostname, which the API server validates.
fn hostname(a: Annot, out: &mut Findings) {
    let v = a.value;
    let why = if is_plain_ipv4(v) {
        "it is an IP address, and the API server takes only a DNS name there (\"must be a DNS name, not an IP address\"); to show the load balancer's IP, remove the annotation (the controller then writes the CLB's address)"
    } else if !dns_subdomain(v) {
        "it is not a lowercase DNS name (RFC 1123 subdomain: at most 253 characters; lower-case letters, digits, '-' and '.'; each dot-separated part starts and ends with a letter or digit), which the API server requires there; write it in lower case, e.g. \"web.example.com\""
    } else {
        return;
    };
    out.push(
        annotation_field(a.key),
        format!(
            "{} is \"{v}\": the CLB controller writes it as the Service's status.loadBalancer.ingress[0].hostname and the API server refuses that status update on every resync, so the Service never shows its address: {why}",
            a.key
        ),
    );
}

/// Each HTTP listener's forward target (the first entry naming its port) must be an HTTPS
/// listener: one of this Service's, or, on a reused load balancer, possibly another's.
fn forward_target(svc: Svc, cat: &Catalog, a: Annot, out: &mut Findings) {
    let listeners = crate::providers::api::listeners(cat, svc);
    let reused = cat.get(svc, "id").is_some_and(|i| !i.value.is_empty());
    for http in listeners.iter().filter(|l| l.protocol == "http") {
        let port = http.port.to_string();
        let Some(entry) = a.value.split(',').find(|e| {
            let p: Vec<&str> = e.split(':').collect();
            p.len() == 2 && p[0] == port
        }) else {
            continue;
        };
        let Some(target) = entry.split(':').nth(1).and_then(|t| go::atoi(t).ok()) else {
            continue;
        };
        let ours: Vec<&str> = listeners
            .iter()
            .filter(|l| i64::from(l.port) == target)
            .map(|l| l.protocol.as_str())
            .collect();
        let ok = if ours.is_empty() {
            reused
        } else {
            ours.contains(&"https")
        };
        if !ok {
            out.push(
                annotation_field(a.key),
                format!(
                    "{} entry \"{entry}\" forwards the HTTP listener on port {port} to port {target}, which is not an HTTPS port of this Service; the controller sends it as ForwardPort of CreateLoadBalancerHTTPListener, which the cloud's API refuses unless port {target} is an HTTPS listener; add an HTTPS port {target} (protocol-port \"https:{target}\" and a cert-id), or point the entry at one",
                    a.key
                ),
            );
        }
    }
}

/// `forward-port` (CLB, HTTP listeners): `<httpPort>:<httpsPort>` pairs.
fn forward_port(a: Annot, out: &mut Findings) {
    for entry in a.value.split(',') {
        let parts: Vec<&str> = entry.split(':').collect();
        if parts.len() != 2 || !parts.iter().all(|p| port_ok(p)) {
            out.push(
                annotation_field(a.key),
                format!(
                    "{} entry \"{entry}\" is not <httpPort>:<httpsPort> (two ports, no spaces); the cloud controller fails on it for an HTTP listener; write e.g. \"80:443\"",
                    a.key
                ),
            );
        }
    }
}
