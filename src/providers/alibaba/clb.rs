//! What only ACK's CLB controller reads (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:
//! pkg/controller/service/clbv1/listeners.go:618-643): `forward-port`.

use super::value::port_ok;
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::Findings;
use crate::vocab::service::Svc;

pub fn check(svc: Svc, cat: &Catalog, out: &mut Findings) {
    if let Some(a) = cat.get(svc, "forward-port").filter(|a| !a.value.is_empty()) {
        forward_port(a, out);
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
