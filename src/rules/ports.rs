//! The listener ports a Service asks for, as the listener rules and the inventory's
//! existing listeners compare them.

use crate::vocab::catalog::Catalog;
use crate::vocab::checks::protocol_entries;
use crate::vocab::lb::{Family, protocol_family};
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;

/// The listener ports a Service asks for: (port, family, listener protocol). Huawei's and
/// Alibaba's `protocol-port` name the listener protocol per port; otherwise the spec's.
pub fn listener_ports(cat: &Catalog, svc: Svc) -> Vec<(i32, Family, &'static str)> {
    let mapped: Vec<(i32, String)> = match cat.provider {
        Provider::Huawei | Provider::Alibaba => cat
            .get(svc, "protocol-port")
            .map(|a| {
                protocol_entries(a.value)
                    .0
                    .into_iter()
                    .filter_map(|(proto, port, _)| Some((port?, proto.to_ascii_uppercase())))
                    .collect()
            })
            .unwrap_or_default(),
        _ => vec![],
    };
    let mut out: Vec<(i32, Family, &'static str)> = svc
        .ports()
        .iter()
        .filter_map(|p| {
            let proto = mapped
                .iter()
                .find(|(port, _)| *port == p.port)
                .map(|(_, proto)| proto.clone())
                .unwrap_or_else(|| {
                    p.protocol
                        .clone()
                        .unwrap_or_else(|| "TCP".into())
                        .to_ascii_uppercase()
                });
            Some((p.port, protocol_family(&proto)?, listener_protocol(&proto)?))
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    out
}

/// A listener protocol as a static string (no allocation per cached Service).
fn listener_protocol(p: &str) -> Option<&'static str> {
    ["TCP", "UDP", "HTTP", "HTTPS", "TLS", "TCPSSL"]
        .into_iter()
        .find(|x| *x == p)
}
