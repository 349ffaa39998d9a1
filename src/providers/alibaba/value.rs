//! One value as both of ACK's controllers read it: a listener protocol, a server group id,
//! a port. `format`, `clb`, `nlb` and the CEL they export share these.

use crate::vocab::go;

/// The listener protocols each controller takes in `protocol-port`.
pub const CLB_PROTOCOLS: &[&str] = &["http", "https", "tcp", "udp"];
pub const NLB_PROTOCOLS: &[&str] = &["TCP", "UDP", "TCPSSL"];

/// A protocol-port protocol the controller takes: CLB exact lower case, NLB any case.
pub fn protocol_ok(p: &str, nlb: bool) -> bool {
    if nlb {
        NLB_PROTOCOLS.iter().any(|n| n.eq_ignore_ascii_case(p))
    } else {
        CLB_PROTOCOLS.contains(&p)
    }
}

/// A server group id: what the cloud's ids are made of (CLB `rsp-…`, NLB `sgp-…`); the
/// controller checks no shape itself, so neither does lbguard beyond that.
pub fn group_id_ok(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(char::is_whitespace)
}

/// A port as `strconv.Atoi` reads it, from 1 to 65535.
pub(super) fn port_ok(v: &str) -> bool {
    go::atoi(v).is_ok_and(|p| (1..=65535).contains(&p))
}

/// The Service port a `:`-split entry names, matched as the controller matches it: the exact
/// decimal string of a `spec.ports[].port`.
pub(super) fn names_service_port(svc: crate::vocab::service::Svc, port: &str) -> bool {
    svc.port_numbers().any(|p| p.to_string() == port)
}
