//! `elb.keepalive_timeout` per listener: CCE sends the one value to every listener of the
//! Service (CreateListener keepalive_timeout), and the ELB API's range depends on the listener's
//! protocol: TCP, UDP (and TLS) 10-4000 s, HTTP and HTTPS 0-4000 s (PyPI huaweicloudsdkelb
//! 3.1.219 v3/model/create_listener_option.py keepalive_timeout; ELB FAQ elb_faq_0309
//! https://support.huaweicloud.com/intl/en-us/elb_faq/elb_faq_0309.html; CCE's table, OTC-0385
//! Table 13). The annotation table's own check keeps 0-4000, the widest.

use crate::vocab::annotations::parse_int;
use crate::vocab::service::Svc;

/// Layer-4 listeners: at least 10 s.
const L4_MIN: i64 = 10;

pub fn keepalive(value: &str, svc: Svc) -> Vec<String> {
    let Some(n) = parse_int(value) else {
        return Vec::new();
    };
    // With skip-managed-listener CCE makes no listener, so nothing is sent (seed 003).
    if super::catalog::CATALOG
        .get(svc, "skip-managed-listener")
        .is_some_and(|a| a.value == "true")
        || n >= L4_MIN
    {
        return Vec::new();
    }
    let l4: Vec<String> = super::catalog::listener_protocols(svc)
        .into_iter()
        .filter(|(_, p)| matches!(p.as_str(), "tcp" | "udp" | "tls"))
        .map(|(port, p)| format!("{port} ({p})"))
        .collect();
    if l4.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "\"{value}\" is below {L4_MIN}: CCE sends it as keepalive_timeout to every listener, and the ELB API takes {L4_MIN}-4000 s for TCP and UDP listeners (ports {}); 0-4000 only for HTTP/HTTPS. Write {L4_MIN} or more, e.g. \"300\" (the TCP default)",
        l4.join(", ")
    )]
}

#[cfg(test)]
#[path = "timeouts_tests.rs"]
mod tests;
