//! `dependent-annotations` on Huawei: annotations CCE's table says go together, or must not
//! (issue 39 notes, others.md). OTC-0385 = opentelekomcloud-docs/cloud-container-engine@4863737:
//! umn/source/networking/services/loadbalancer/configuring_advanced_load_balancing_functions_using_annotations.rst;
//! HW-0684 = https://support.huaweicloud.com/usermanual-cce/cce_10_0684.html.

use crate::vocab::catalog::{Annot, Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;

/// An annotation that is there with a non-empty value (empty reads as unset).
fn set<'a>(cat: &Catalog, svc: Svc<'a>, name: &str) -> Option<Annot<'a>> {
    cat.get(svc, name).filter(|a| !a.value.is_empty())
}

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let (option, options) = (
        cat.key("health-check-option"),
        cat.key("health-check-options"),
    );
    // OTC-0385 Table 3: "If this parameter is set to on, you must specify
    // kubernetes.io/elb.health-check-option or kubernetes.io/elb.health-check-options".
    if let Some(flag) = cat.get(new, "health-check-flag")
        && flag.value == "on"
        && set(cat, new, "health-check-option").is_none()
        && set(cat, new, "health-check-options").is_none()
    {
        out.push(
            annotation_field(flag.key),
            format!("{}: \"on\" needs {option} or {options} (CCE: with the flag on, one of them must say how to check); add one, e.g. {option}: '{{\"protocol\":\"TCP\",\"delay\":\"5\",\"timeout\":\"10\",\"max_retries\":\"3\"}}', or remove the flag", flag.key),
        );
    }
    // HW-0684 约束与限制: "不允许同时配置 health-check-option 和 health-check-options".
    if let (Some(_), Some(b)) = (
        set(cat, new, "health-check-option"),
        set(cat, new, "health-check-options"),
    ) {
        out.push(
            annotation_field(b.key),
            format!("{option} and {options} cannot both be set (CCE takes one or the other); keep {options} for per-port checks, or {option} for one check on every port"),
        );
    }
    // OTC-0385 Tables 1-2: with lb-algorithm SOURCE_IP "sticky session cannot be enabled".
    if let (Some(mode), Some(alg)) = (
        set(cat, new, "session-affinity-mode"),
        cat.get(new, "lb-algorithm"),
    ) && alg.value == "SOURCE_IP"
    {
        out.push(
            annotation_field(mode.key),
            format!("{}: \"{}\" cannot go with {}: \"SOURCE_IP\": CCE does not enable sticky sessions on a source-IP-hash backend group (source IP hash already keeps a client on one backend); remove {}, or choose ROUND_ROBIN or LEAST_CONNECTIONS", mode.key, mode.value, alg.key, mode.key),
        );
    }
    // OTC-0385 Table 11: an IP address group id needs "both kubernetes.io/elb.acl-status and
    // kubernetes.io/elb.acl-type" (an empty acl-id allows every IP and needs neither).
    if let Some(id) = set(cat, new, "acl-id") {
        for (need, e) in [("acl-status", "on"), ("acl-type", "white")] {
            if set(cat, new, need).is_none() {
                out.push(
                    annotation_field(id.key),
                    format!("{}: \"{}\" needs {} (CCE: an IP address group id needs both acl-status and acl-type); add it, e.g. {}: \"{e}\"", id.key, id.value, cat.key(need), cat.key(need)),
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
    let lit = cel::lit;
    let (flag, opt, opts, mode, alg, id) = (
        a("health-check-flag"),
        cat.key("health-check-option"),
        cat.key("health-check-options"),
        a("session-affinity-mode"),
        a("lb-algorithm"),
        a("acl-id"),
    );
    let mut out = vec![
        CelCheck::new(
            format!(
                "{} && {} == 'on' && !{} && !{}",
                flag.present,
                flag.value,
                set("health-check-option"),
                set("health-check-options")
            ),
            lit(&format!(
                "[dependent-annotations] {}: \"on\" needs {opt} or {opts}; add one, or remove the flag",
                cat.key("health-check-flag")
            )),
        )
        .same_when("'w0'"),
        CelCheck::new(
            format!(
                "{} && {}",
                set("health-check-option"),
                set("health-check-options")
            ),
            lit(&format!(
                "[dependent-annotations] {opt} and {opts} cannot both be set; keep one"
            )),
        )
        .same_when("'w1'"),
        CelCheck::new(
            format!(
                "{} && {} && {} == 'SOURCE_IP'",
                set("session-affinity-mode"),
                alg.present,
                alg.value
            ),
            format!(
                "'[dependent-annotations] ' + {} + ': \"' + {} + '\" cannot go with {}: \"SOURCE_IP\"; remove it, or choose ROUND_ROBIN or LEAST_CONNECTIONS'",
                mode.key,
                mode.value,
                cat.key("lb-algorithm")
            ),
        )
        .same_when("'w2'"),
    ];
    for need in ["acl-status", "acl-type"] {
        out.push(
            CelCheck::new(
                format!("{} && !{}", set("acl-id"), set(need)),
                format!(
                    "'[dependent-annotations] ' + {} + ': \"' + {} + '\" needs {}; add it'",
                    id.key,
                    id.value,
                    cat.key(need)
                ),
            )
            .same_when("'w3'"),
        );
    }
    Ok(out)
}

#[cfg(test)]
#[path = "dependent_tests.rs"]
mod tests;
