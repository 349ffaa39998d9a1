//! What only ACK's CLB controller reads (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:
//! pkg/controller/service/clbv1/listeners.go:618-643): `forward-port`, and where it points
//! (:224-233: an HTTP listener forwards to the port its entry names, which the CLB API's
//! ForwardPort needs to be an HTTPS listener).

use super::value::port_ok;
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::Findings;
use crate::vocab::go;
use crate::vocab::service::Svc;

pub fn check(svc: Svc, cat: &Catalog, out: &mut Findings) {
    if let Some(a) = cat.get(svc, "forward-port").filter(|a| !a.value.is_empty()) {
        forward_port(a, out);
        forward_target(svc, cat, a, out);
    }
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
