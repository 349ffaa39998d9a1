//! `elb.keepalive_timeout` on a shared ELB's UDP listeners, which take none. The ranges per
//! listener protocol (TCP, UDP, TLS 10-4000 s; HTTP, HTTPS 0-4000 s) are rows of
//! providers/data/huawei-api.yaml (CreateListener listener.keepalive_timeout); this one needs
//! the ELB's class (`shared_elb`: `elb.class: union`, or an ELB CCE creates without a class),
//! an either-or the rows' conditions cannot say. The annotation table's own check keeps 0-4000.

use crate::vocab::annotations::parse_int;
use crate::vocab::service::Svc;

pub fn keepalive(value: &str, svc: Svc) -> Vec<String> {
    if parse_int(value).is_none() {
        return Vec::new();
    }
    // With skip-managed-listener CCE makes no listener, so nothing is sent (seed 003).
    if super::catalog::CATALOG
        .get(svc, "skip-managed-listener")
        .is_some_and(|a| a.value == "true")
    {
        return Vec::new();
    }
    let listeners = super::catalog::listener_protocols(svc);
    let ports = |want: &[&str]| -> Vec<String> {
        listeners
            .iter()
            .filter(|(_, p)| want.contains(&p.as_str()))
            .map(|(port, p)| format!("{port} ({p})"))
            .collect()
    };
    let mut out = Vec::new();
    // A shared ELB's UDP listener takes no keepalive_timeout: "共享型实例的UDP监听器不支持此字段"
    // (create_listener_option.py keepalive_timeout 约束限制; huaweicloudDocs/elb@1d83a96
    // cn.zh-cn/API参考/创建监听器.md:329-340 "UDP监听器不支持此字段"), and CCE's timeout page
    // says so for Services: "Idle timeout | Shared | UDP is not supported" (opentelekomcloud-docs/
    // cloud-container-engine@4863737:umn/source/networking/services/loadbalancer/
    // configuring_timeout_for_a_loadbalancer_service.rst:20-37, Table 13 of OTC-0385:576-582
    // "UDP listeners (supported only by dedicated load balancers)"); ELB's guide: "For shared load
    // balancers, you can only change the timeout durations of TCP, HTTP, and HTTPS listeners, but
    // cannot change the timeout durations of UDP listeners" (https://support.huaweicloud.com/intl/
    // en-us/usermanual-elb/elb_ug_jt_0014.html; FAQ elb_faq_0309 likewise). Shared: `elb.class: union`,
    // or an ELB CCE creates without a class (see `shared_elb`).
    let shared = super::catalog::shared_elb(svc);
    let udp = ports(&["udp"]);
    if shared && !udp.is_empty() {
        out.push(format!(
            "\"{value}\" cannot be applied: CCE sends keepalive_timeout to every listener, and a shared ELB (elb.class: union, the default) takes none on its UDP listeners (ports {}): CCE and the ELB API support it there only on TCP and HTTP/HTTPS listeners. Remove the annotation, or use a dedicated ELB (elb.class: performance)",
            udp.join(", ")
        ));
    }
    out
}

#[cfg(test)]
#[path = "timeouts_tests.rs"]
mod tests;
