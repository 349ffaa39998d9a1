//! `dependent-annotations` on Huawei: annotations CCE's table says go together, or must not
//! (issue 39 notes, others.md). OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:
//! umn/source/networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! HW-0684 = https://support.huaweicloud.com/usermanual-cce/cce_10_0684.html;
//! OTC-0729 = opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/services/
//! loadbalancer/configuring_timeout_for_a_loadbalancer_service.rst; OTC-0683 = the same at
//! .../configuring_http_https_for_a_loadbalancer_service.rst; OTC-0916 = the same at
//! .../enabling_a_loadbalancer_service_to_obtain_the_client_ip_address.rst.

use crate::vocab::catalog::{Annot, Catalog, annotation_field, catalog_annotation};
use crate::vocab::checks::protocol_entries;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;

/// Listener timeouts that only HTTP and HTTPS listeners take.
const TIMEOUTS_L7: [&str; 2] = ["client_timeout", "member_timeout"];

/// Certificates only HTTPS and TLS listeners take: the name, what it becomes, and the source.
/// `client-ca-cert-id`: client_ca_tls_container_ref, "仅TLS和HTTPS协议监听器支持该字段"
/// (huaweicloudsdkelb 3.1.219 v3/model/create_listener_option.py), mutual authentication of an
/// HTTPS listener (OTC-0683 :71-76, :161). `tls-certificate-ids`: sni_container_refs, "HTTPS
/// must be enabled" (OTC-0385 :399), "If Frontend Protocol is set to HTTPS or TLS, you must
/// determine whether to add an SNI certificate" (OTC-0683 :78).
const TLS_ONLY: [(&str, &str, &str); 2] = [
    (
        "client-ca-cert-id",
        "the listener's client_ca_tls_container_ref (mutual authentication)",
        "taken only by TLS and HTTPS listeners (ELB API)",
    ),
    (
        "tls-certificate-ids",
        "the listener's sni_container_refs (SNI certificates)",
        "used only on an HTTPS listener (CCE: HTTPS must be enabled)",
    ),
];

/// An annotation that is there with a non-empty value (empty reads as unset).
fn set<'a>(cat: &Catalog, svc: Svc<'a>, name: &str) -> Option<Annot<'a>> {
    cat.get(svc, name).filter(|a| !a.value.is_empty())
}

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    // What the API rows of providers/data/huawei-api.yaml say goes together, or must not:
    // health-check-flag "on" needs health-check-option or -options (OTC-0385 Table 3) but not
    // both (HW-0684), no session-affinity-mode with lb-algorithm SOURCE_IP (OTC-0385 Tables
    // 1-2), a non-empty acl-id needs acl-status and acl-type (OTC-0385 Table 11),
    // transparent-client-ip "false" only on a shared ELB's TCP/UDP listeners (the ELB API's
    // transparent_client_ip_enable, OTC-0385 :608-611, OTC-0916), no http or https entry on
    // port 21 of a shared ELB (the ELB API's protocol_port).
    crate::providers::api::check(ctx, cat, "dependent-annotations", out);
    // A TLS listener needs a server certificate, as an HTTPS one does (https-needs-cert):
    // "If Frontend Protocol is set to HTTPS or TLS, you must select a server certificate", and
    // elb.cert-id is "used as the TLS/HTTPS server certificate" (OTC-0683 :77, :148-159); the ELB
    // API's default_tls_container_ref "当监听器协议为HTTPS、TLS或QUIC时，该字段必传"
    // (huaweicloudsdkelb 3.1.219 v3/model/create_listener_option.py).
    if let Some(pp) = cat.get(new, "protocol-port")
        && protocol_entries(pp.value)
            .0
            .iter()
            .any(|(p, _, _)| *p == "tls")
        && cat
            .get(new, "cert-id")
            .is_none_or(|c| c.value.trim().is_empty())
        && !super::listeners::skipping(cat, new)
    {
        out.push(
            annotation_field(pp.key),
            format!("{}: \"{}\" has a tls entry but {} is not set: the ELB creates no TLS listener without a server certificate; add the ELB certificate id as {}, or use tcp", pp.key, pp.value, cat.key("cert-id"), cat.key("cert-id")),
        );
    }
    // Request and response timeouts exist on HTTP/HTTPS listeners only: "Request timeout |
    // Dedicated and shared | Only HTTP and HTTPS are supported", the same for the response timeout
    // (OTC-0729 :34-37; "available only after HTTP/HTTPS is enabled on ports", :81-92), and the ELB
    // API's client_timeout and member_timeout: "仅协议为HTTP/HTTPS的监听器支持该字段" (huaweicloudDocs/
    // elb@1d83a96:cn.zh-cn/API参考/创建监听器.md:343-376; huaweicloudsdkelb 3.1.219
    // v3/model/create_listener_option.py). Without managed listeners CCE sends neither (seed 003).
    if !super::conditions::layer7(cat, new) && !super::listeners::skipping(cat, new) {
        for name in TIMEOUTS_L7 {
            if let Some(t) = set(cat, new, name) {
                out.push(
                    annotation_field(t.key),
                    format!("{}: \"{}\" needs an HTTP or HTTPS listener, but {} has no http or https entry, so every listener is TCP or UDP and the ELB takes no {name} on it (CCE: only HTTP and HTTPS are supported); add e.g. {}: \"http:{}\", or remove {}", t.key, t.value, cat.key("protocol-port"), cat.key("protocol-port"), new.port_numbers().next().unwrap_or(80), t.key),
                );
            }
        }
    }
    // Certificates only a TLS or HTTPS listener takes (see `TLS_ONLY`).
    if !super::conditions::protocol_in(cat, new, &["https", "tls"])
        && !super::listeners::skipping(cat, new)
    {
        for (name, what, why) in TLS_ONLY {
            if let Some(c) = set(cat, new, name) {
                out.push(
                    annotation_field(c.key),
                    format!("{}: \"{}\" needs an HTTPS or TLS listener, but {} has no https or tls entry: {what} is {why}; add e.g. {}: \"https:{}\" with {}, or remove {}", c.key, c.value, cat.key("protocol-port"), cat.key("protocol-port"), new.port_numbers().next().unwrap_or(443), cat.key("cert-id"), c.key),
                );
            }
        }
    }
}

pub fn dependent_annotations_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = |n: &str| catalog_annotation(cat, n);
    let set = |n: &str| {
        let x = a(n);
        format!("({} && {} != '')", x.present, x.value)
    };
    // The API rows' (huawei-api.yaml: health-check-flag, the exclusions, acl-id,
    // transparent-client-ip, port 21).
    let mut out = crate::providers::api::cel::checks(cat, "false", "dependent-annotations");
    let (pp, cert) = (a("protocol-port"), a("cert-id"));
    out.push(
        CelCheck::new(
            format!(
                "{} && (!{} || {}.trim() == '') && !{}",
                super::conditions::protocol_in_cel(cat, &["tls"]),
                cert.present,
                cert.value,
                super::listeners::skipping_cel(cat)
            ),
            format!(
                "'[dependent-annotations] ' + {} + ': \"' + {} + '\" has a tls entry but {} is not set; add the ELB certificate id as {}, or use tcp'",
                pp.key,
                pp.value,
                cat.key("cert-id"),
                cat.key("cert-id")
            ),
        )
        .same_when(pp.value.clone()),
    );
    let http = super::conditions::protocol_in_cel(cat, &["http", "https"]);
    let tls = super::conditions::protocol_in_cel(cat, &["https", "tls"]);
    let skipping = super::listeners::skipping_cel(cat);
    // An annotation only listeners of some protocols take (`listener`: there is one), set
    // without one: `kinds` and `entries` name them in the message.
    let needs_listener = |name: &str, listener: &str, kinds: &str, entries: &str| {
        let t = a(name);
        CelCheck::new(
            format!("{} && !{listener} && !{skipping}", set(name)),
            format!(
                "'[dependent-annotations] ' + {} + ': \"' + {} + '\" needs an {kinds} listener (an {entries} entry in {}); add one, or remove it'",
                t.key,
                t.value,
                cat.key("protocol-port")
            ),
        )
        .same_when(t.value)
    };
    out.extend(
        TIMEOUTS_L7
            .into_iter()
            .map(|name| needs_listener(name, &http, "HTTP or HTTPS", "http or https")),
    );
    out.extend(
        TLS_ONLY
            .into_iter()
            .map(|(name, _, _)| needs_listener(name, &tls, "HTTPS or TLS", "https or tls")),
    );
    Ok(out)
}

#[cfg(test)]
#[path = "dependent_tests.rs"]
mod tests;
