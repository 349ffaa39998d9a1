//! Huawei's JSON option annotations, field by field (for `annotation-value-format`, once the
//! value parses): `elb.health-check-option` (one object for every port),
//! `elb.health-check-options` (per Service port: CCE's own example is an array of objects;
//! one object is read as a one-entry array) and `elb.session-affinity-option`.
//!
//! The ranges are CCE's tables: OTC-0385 Tables 16-18 (opentelekomcloud-docs/
//! cloud-container-engine@4863737:umn/source/networking/services/loadbalancer/
//! configuring_advanced_load_balancing_functions_using_annotations.rst:726-803), OTC-0684
//! (.../configuring_health_check_on_multiple_loadbalancer_service_ports.rst:21-23, 84-120) and
//! HWDOC-zh Tables 3-4 (huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md:
//! 402-490). The ELB API's health monitor takes the same ranges (huaweicloudDocs/elb@1d83a96:
//! cn.zh-cn/API参考/创建健康检查.md:121-280). CCE's examples write numbers as strings
//! (`"delay":"5"`); JSON numbers are read too. Fields CCE does not document (e.g. the
//! `expected_codes` of its own example) are left alone.

use serde_json::{Map, Value};

use crate::vocab::annotations::parse_int;
use crate::vocab::service::Svc;

/// Whole-number health-check fields: name, range and CCE's default (OTC-0385:731-741,
/// HWDOC-zh:415-442). `max_retries_down` is not in CCE's table; when given it becomes the
/// health monitor's max_retries_down, 1-10 (huaweicloudsdkelb 3.1.219
/// v3/model/create_health_monitor_option.py).
const NUMBERS: [(&str, i64, i64, i64); 4] = [
    ("delay", 1, 50, 5),
    ("timeout", 1, 50, 10),
    ("max_retries", 1, 10, 3),
    ("max_retries_down", 1, 10, 3),
];

/// OTC-0385:743-745, HWDOC-zh:453 (exact case, as the tables and examples write them).
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "HTTP"];

/// The health-check URL: OTC-0385:747-751 and the ELB API (url_path, 创建健康检查.md:276-280)
/// give 1-80 characters starting with "/"; HWDOC-zh's 2023 table said 1-10000, which the ELB
/// API that CCE calls does not take.
const PATH_MAX: usize = 80;

/// The characters url_path takes besides letters and digits (huaweicloudsdkelb 3.1.219
/// v3/model/create_health_monitor_option.py url_path 取值范围: "-/.%?#&" and "_;~!()*[]@$^:',+").
const PATH_CHARS: &str = "-/.%?#&_;~!()*[]@$^:',+";

/// expected_codes: a code, a list ("200,202") or a range ("200-204"), 1-64 characters
/// (create_health_monitor_option.py expected_codes; huaweicloudDocs/elb@1d83a96
/// 创建健康检查.md 最大长度64).
const CODES_MAX: usize = 64;

/// `session-affinity-option`'s `persistence_timeout`, in minutes (OTC-0385:801-803,
/// HWDOC-zh:483-490): mandatory, 1-60.
const PERSISTENCE: (i64, i64) = (1, 60);

/// The problems of `value`, the JSON of annotation `name` (`elb.` + name) on `svc`; none for
/// names without documented fields, or a value that does not parse (the format check says so).
pub fn json_fields(name: &str, value: &str, svc: Svc) -> Vec<String> {
    let mut out = Vec::new();
    if name == "keepalive_timeout" {
        return super::timeouts::keepalive(value, svc);
    }
    if name == "tags" {
        return super::tags::tags(value, svc);
    }
    if !matches!(
        name,
        "health-check-option" | "health-check-options" | "session-affinity-option"
    ) {
        return out;
    }
    let Ok(v) = serde_json::from_str::<Value>(value) else {
        return out;
    };
    match (name, &v) {
        ("health-check-option", Value::Object(o)) => {
            health_check(o, "", &mut out);
            fits_every_listener(o, svc, &mut out);
        }
        ("health-check-options", Value::Object(_)) => {
            per_port(std::slice::from_ref(&v), svc, &mut out)
        }
        ("health-check-options", Value::Array(a)) => per_port(a, svc, &mut out),
        ("session-affinity-option", Value::Object(o)) => session_affinity(o, &mut out),
        _ => {}
    }
    out
}

/// A whole number as a JSON string of digits or a JSON number.
fn number(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_int(s),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// A field that is there (JSON `null` counts as absent).
fn field<'a>(o: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).filter(|v| !v.is_null())
}

fn health_check(o: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    for (name, min, max, default) in NUMBERS {
        if let Some(v) = field(o, name)
            && !number(v).is_some_and(|n| (min..=max).contains(&n))
        {
            out.push(format!(
                "{at}\"{name}\" is {v}; CCE documents a whole number from {min} to {max}, e.g. \"{name}\": \"{default}\""
            ));
        }
    }
    if let Some(v) = field(o, "protocol")
        && !v.as_str().is_some_and(|p| PROTOCOLS.contains(&p))
    {
        out.push(format!(
            "{at}\"protocol\" is {v}; CCE documents \"TCP\", \"UDP\" or \"HTTP\" (exact case)"
        ));
    }
    if let Some(v) = field(o, "path") {
        if !v
            .as_str()
            .is_some_and(|p| p.starts_with('/') && p.chars().count() <= PATH_MAX)
        {
            out.push(format!(
                "{at}\"path\" is {v}; CCE documents a URL path of 1 to {PATH_MAX} characters starting with \"/\", e.g. \"path\": \"/healthz\""
            ));
        } else if let Some(bad) = v.as_str().and_then(|p| {
            p.chars()
                .find(|c| !c.is_ascii_alphanumeric() && !PATH_CHARS.contains(*c))
        }) {
            out.push(format!(
                "{at}\"path\" is {v}: {bad:?} is a character the ELB API's url_path does not take (letters, digits and {PATH_CHARS}); the health monitor is refused, e.g. \"path\": \"/healthz\""
            ));
        }
    }
    if let Some(v) = field(o, "expected_codes")
        && !v.as_str().is_some_and(codes_ok)
    {
        out.push(format!(
            "{at}\"expected_codes\" is {v}; the ELB API takes a status code, a list or a range of codes ({CODES_MAX} characters at most), e.g. \"200\", \"200,202\" or \"200-299\""
        ));
    }
}

/// `200`, `200,202`, `200-204` (and lists of codes and ranges).
fn codes_ok(v: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    v.len() <= CODES_MAX
        && v.split(',').all(|item| match item.split_once('-') {
            Some((a, b)) => number(a) && number(b),
            None => number(item),
        })
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
        health_check(o, &at, out);
        if let Some(v) = field(o, "monitor_port")
            && !number(v).is_some_and(|p| (1..=65535).contains(&p))
        {
            out.push(format!(
                "{at}\"monitor_port\" is {v}; expected a port from 1 to 65535 (the ELB API's monitor_port), or leave it out to check the Service port"
            ));
        }
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

fn session_affinity(o: &Map<String, Value>, out: &mut Vec<String>) {
    let (min, max) = PERSISTENCE;
    match field(o, "persistence_timeout") {
        None => out.push(format!(
            "\"persistence_timeout\" is required: the sticky-session timeout in minutes, {min} to {max}, e.g. '{{\"persistence_timeout\": \"30\"}}'"
        )),
        Some(v) if !number(v).is_some_and(|n| (min..=max).contains(&n)) => out.push(format!(
            "\"persistence_timeout\" is {v}; CCE documents a whole number of minutes from {min} to {max}, e.g. \"persistence_timeout\": \"30\""
        )),
        Some(_) => {}
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
