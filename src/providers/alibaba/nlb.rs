//! What only ACK's NLB controller reads (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:
//! pkg/controller/service/nlbv2/): `zone-maps`, required unless the Service reuses an NLB
//! (loadbalancer.go:56-58, :639-666), and `listener-port-range`, only with the ENI backend
//! (listeners.go:77-110, :151-154).

use super::value::{group_id_ok, port_ok};
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::Findings;
use crate::vocab::go;
use crate::vocab::service::Svc;

/// What the NLB controller needs for a port range (`service_utils.go:78-88`).
pub const BACKEND_TYPE: &str = "service.beta.kubernetes.io/backend-type";

pub fn check(svc: Svc, cat: &Catalog, out: &mut Findings) {
    let get = |s: &str| cat.get(svc, s).filter(|a| !a.value.is_empty());
    if let Some(a) = get("listener-port-range") {
        port_ranges(svc, a, out);
    }
    match get("zone-maps") {
        Some(a) => zone_maps(a, out),
        None if get("id").is_none() => out.push(
            annotation_field(&cat.key("zone-maps")),
            format!("an NLB that the cloud controller creates needs {}: its vSwitch in each zone, e.g. \"cn-hangzhou-h:vsw-xxx,cn-hangzhou-i:vsw-yyy\"; without it the controller fails on every resync with \"ParameterMissing, zone mappings are required\"", cat.key("zone-maps")),
        ),
        None => {}
    }
}

/// `listener-port-range` (NLB): `<start>-<end>:<port>`, 1 <= start < end <= 65535, and only
/// with the ENI backend.
fn port_ranges(svc: Svc, a: Annot, out: &mut Findings) {
    // An empty value falls back to the cluster's default, as an absent one does.
    if let Some(t) = svc.annotation(BACKEND_TYPE)
        && !t.is_empty()
        && t != "eni"
    {
        out.push(
            annotation_field(a.key),
            format!("{} needs the ENI backend, but {BACKEND_TYPE} is \"{t}\"; the cloud controller fails on every resync with \"listener port range can only be used for eni backend type service\"; set {BACKEND_TYPE}: eni, or remove {}", a.key, a.key),
        );
    }
    for entry in a.value.split(',') {
        if !range_entry_ok(entry) {
            out.push(
                annotation_field(a.key),
                format!("{} entry \"{entry}\" is not <start>-<end>:<port> with 1 <= start < end <= 65535 (no spaces); the cloud controller fails with \"listener port range must be like 1000-2000:80 with colon separated\" or a range error when it reads it; write e.g. \"10000-10010:80\"", a.key),
            );
        }
    }
}

/// One `listener-port-range` entry the controller accepts.
pub fn range_entry_ok(entry: &str) -> bool {
    let parts: Vec<&str> = entry.split(':').collect();
    let [range, port] = parts[..] else {
        return false;
    };
    let bounds: Vec<&str> = range.split('-').collect();
    let [s, e] = bounds[..] else { return false };
    match (go::atoi(s), go::atoi(e)) {
        (Ok(s), Ok(e)) => s >= 1 && e <= 65535 && s < e && port_ok(port),
        _ => false,
    }
}

/// `zone-maps` (NLB): `zone:vSwitch[:ip[:eip]]` entries.
fn zone_maps(a: Annot, out: &mut Findings) {
    for entry in a.value.split(',') {
        if !zone_entry_ok(entry) {
            out.push(
                annotation_field(a.key),
                format!("{} entry \"{entry}\" is not <zone>:<vswitch-id> (no spaces); the cloud controller fails with \"ZoneMapping format error, expect [zone-a:vsw-id-1,zone-b:vsw-id-2], got {}\", or the NLB API refuses the zone or vSwitch; write e.g. \"cn-hangzhou-h:vsw-xxx,cn-hangzhou-i:vsw-yyy\"", a.key, a.value),
            );
        }
    }
}

/// One `zone-maps` entry: a zone id and a vSwitch id (`vsw-…`, every vSwitch id's prefix).
pub fn zone_entry_ok(entry: &str) -> bool {
    let parts: Vec<&str> = entry.split(':').collect();
    parts.len() >= 2
        && group_id_ok(parts[0])
        && group_id_ok(parts[1])
        && parts[1].starts_with("vsw-")
}
