//! Huawei's JSON option annotations where a field depends on the Service (for
//! `annotation-value-format`, once the value parses): `elb.health-check-option` (one object for
//! every port) must suit every listener, and each entry of `elb.health-check-options` (per
//! Service port: CCE's own example is an array of objects; one object is read as a one-entry
//! array) names a Service port and a protocol that suits it. The fields' own limits (delay,
//! timeout, max_retries, max_retries_down, protocol, path, expected_codes, monitor_port,
//! `elb.session-affinity-option`'s persistence_timeout) are rows of
//! providers/data/huawei-api.yaml (CreateHealthMonitor, CreatePool).
//!
//! Sources: OTC-0385 Tables 16-18 (opentelekomcloud-docs/cloud-container-engine@4863737:umn/
//! source/networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_
//! annotations.rst:726-803), OTC-0684 (.../configuring_health_check_on_multiple_loadbalancer_
//! service_ports.rst:21-23, 84-120) and HWDOC-zh Tables 3-4 (huaweicloudDocs/cce@99b4f7e:
//! cn.zh-cn/用户指南/Service-Annotations说明.md:402-490).

use serde_json::{Map, Value};

use crate::vocab::annotations::parse_int;
use crate::vocab::service::Svc;

/// OTC-0385:743-745, HWDOC-zh:453 (exact case, as the tables and examples write them); the
/// protocol's own enumeration is a row of huawei-api.yaml (healthmonitor.type).
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "HTTP"];

/// The problems of `value`, the JSON of annotation `name` (`elb.` + name) on `svc`; none for
/// names without documented fields, or a value that does not parse (the format check says so).
pub fn json_fields(name: &str, value: &str, svc: Svc) -> Vec<String> {
    let mut out = Vec::new();
    if name == "tags" {
        return super::tags::tags(value, svc);
    }
    if !matches!(name, "health-check-option" | "health-check-options") {
        return out;
    }
    let Ok(v) = serde_json::from_str::<Value>(value) else {
        return out;
    };
    match (name, &v) {
        ("health-check-option", Value::Object(o)) => fits_every_listener(o, svc, &mut out),
        ("health-check-options", Value::Object(_)) => {
            per_port(std::slice::from_ref(&v), svc, &mut out)
        }
        ("health-check-options", Value::Array(a)) => per_port(a, svc, &mut out),
        _ => {}
    }
    out
}

/// A field that is there (JSON `null` counts as absent).
fn field<'a>(o: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).filter(|v| !v.is_null())
}

/// The one health-check-option is every port's health monitor, so its protocol must suit
/// every listener: a UDP pool is checked over UDP only, a TCP or HTTP(S) pool over TCP or HTTP
/// (CCE: hw-0684 约束与限制 "TCP端口只能配置健康检查协议为TCP、HTTP,UDP端口必须配置健康检查协议为UDP";
/// API: huaweicloudsdkelb 3.1.219 v3/model/create_health_monitor_option.py type, "若pool的protocol
/// 为UDP，则type只能UDP_CONNECT").
fn fits_every_listener(o: &Map<String, Value>, svc: Svc, out: &mut Vec<String>) {
    let Some(p) = field(o, "protocol").and_then(Value::as_str) else {
        return;
    };
    if !PROTOCOLS.contains(&p) {
        return;
    }
    let misfits: Vec<String> = super::catalog::listener_protocols(svc)
        .into_iter()
        .filter(|(_, l)| (p == "UDP") != (l == "udp"))
        .map(|(port, l)| format!("{port} ({l})"))
        .collect();
    if !misfits.is_empty() {
        out.push(format!(
            "\"protocol\" is \"{p}\" but ports {} take {}; the ELB refuses the health monitor. Use elb.health-check-options to give each port its own protocol",
            misfits.join(", "),
            if p == "UDP" { "a TCP or HTTP health check" } else { "a UDP health check" }
        ));
    }
}

/// `PROTOCOL:port`, as `target_service_port` names a Service port ("TCP:80").
fn target(v: &Value) -> Option<(&str, i32)> {
    let (proto, port) = v.as_str()?.split_once(':')?;
    let port = parse_int(port).and_then(|p| i32::try_from(p).ok())?;
    (!proto.is_empty() && (1..=65535).contains(&port)).then_some((proto, port))
}

fn per_port(entries: &[Value], svc: Svc, out: &mut Vec<String>) {
    let mut seen: Vec<(&str, i32)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(o) = entry else { continue };
        let at = format!("entry {}: ", i + 1);
        let Some(t) = field(o, "target_service_port") else {
            out.push(format!(
                "{at}\"target_service_port\" is required (OTC-0684: mandatory and unique): the Service port the entry configures, as PROTOCOL:port, e.g. \"target_service_port\": \"TCP:80\""
            ));
            continue;
        };
        let Some((proto, port)) = target(t) else {
            out.push(format!(
                "{at}\"target_service_port\" is {t}; expected PROTOCOL:port of a Service port, e.g. \"TCP:80\""
            ));
            continue;
        };
        let named = svc
            .ports()
            .iter()
            .any(|p| p.port == port && p.protocol.as_deref().unwrap_or("TCP") == proto);
        if !named {
            out.push(format!(
                "{at}\"target_service_port\" is {t}, but no spec.ports[] entry has port {port} and protocol {proto} (ports: {}); name a Service port as PROTOCOL:port, e.g. \"TCP:{}\"",
                svc.port_list(),
                svc.port_numbers().next().unwrap_or(80)
            ));
        } else if seen.contains(&(proto, port)) {
            out.push(format!(
                "{at}\"target_service_port\" {t} is listed twice; each Service port takes one entry (OTC-0684: unique)"
            ));
        }
        seen.push((proto, port));
        // OTC-0684:23: a TCP port is checked over TCP or HTTP, a UDP port over UDP.
        let allowed: &[&str] = match proto {
            "TCP" => &["TCP", "HTTP"],
            "UDP" => &["UDP"],
            _ => continue,
        };
        if let Some(p) = field(o, "protocol").and_then(Value::as_str)
            && PROTOCOLS.contains(&p)
            && !allowed.contains(&p)
        {
            out.push(format!(
                "{at}\"protocol\" is \"{p}\" for {proto} port {port}; CCE checks a TCP port over TCP or HTTP and a UDP port over UDP"
            ));
        }
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
