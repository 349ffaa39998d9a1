//! `kubernetes.io/elb.autocreate`: the JSON that tells CCE to create the ELB, against CCE's
//! elb.autocreate table: OTC-0385 Table 15 (opentelekomcloud-docs/cloud-container-engine@4863737:
//! umn/source/networking/services/loadbalancer/
//! configuring_advanced_load_balancing_functions_using_annotations.rst:621-722) and HWDOC-zh
//! Table 2 (huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md:257-396).
//! Each field's own limits (type, a public ELB's bandwidth and EIP, name, addresses, subnets)
//! are CreateLoadBalancer rows of providers/data/huawei-api.yaml, read by `api::check` under
//! this rule. Here: a value that is no JSON object, the elb.id exclusion, and a dedicated ELB's
//! zones and flavors, which depend on elb.class and the listener protocols. Where the two
//! tables disagree the less strict one decides: `l4_flavor_name` is needed only when a port is
//! TCP or UDP (OTC:711; HWDOC-zh:363-365 says always).

use serde_json::{Map, Value};

use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::service::Svc;

pub(super) fn huawei_autocreate_valid(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "autocreate") else {
        return;
    };
    let field = annotation_field(a.key);
    let key = a.key;
    if let Some(id) = cat.get(new, "id") {
        // OTC:72-74: with both, CCE uses the existing ELB and later deletes it with the
        // Service as if it had created it.
        out.push(
            field.clone(),
            format!("{key} and {} cannot both be set: CCE then uses the existing ELB and deletes it with the Service as if it had created it; keep {} to use that ELB, or remove it to let CCE create one", id.key, id.key),
        );
    }
    let obj = match serde_json::from_str::<Value>(a.value) {
        Ok(Value::Object(o)) => o,
        Ok(_) => {
            out.push(
                field,
                format!("{key} must be a JSON object, e.g. '{{\"type\":\"inner\"}}'"),
            );
            return;
        }
        Err(e) => {
            out.push(field, format!("{key} is not valid JSON ({e}); write a JSON object, e.g. '{{\"type\":\"inner\"}}'"));
            return;
        }
    };
    // The fields' own limits (type, a public ELB's bandwidth and EIP, name, addresses,
    // subnets) are rows of providers/data/huawei-api.yaml (CreateLoadBalancer); what stays
    // here is not a parameter's limit: the elb.id exclusion above, and a dedicated ELB's zones
    // and flavors, which depend on elb.class and on the Service's listener protocols.
    let mut why = Vec::new();
    if cat
        .get(new, "class")
        .is_some_and(|c| c.value == "performance")
    {
        dedicated(&obj, cat, new, &mut why);
    }
    for w in why {
        out.push(field.clone(), format!("{key}: {w}"));
    }
    crate::providers::api::check(ctx, cat, "huawei-autocreate-valid", out);
}

/// A field that is there (JSON `null` counts as absent, as Go's decoder leaves it unset).
fn get<'a>(obj: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    obj.get(k).filter(|v| !v.is_null())
}

fn nonempty_str(obj: &Map<String, Value>, k: &str) -> bool {
    get(obj, k)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
}

/// A dedicated ELB's zones and flavors: OTC:705-722, HWDOC-zh:352-382.
fn dedicated(obj: &Map<String, Value>, cat: &Catalog, svc: Svc, why: &mut Vec<String>) {
    let zones_ok = get(obj, "available_zone")
        .and_then(Value::as_array)
        .is_some_and(|z| {
            !z.is_empty()
                && z.iter()
                    .all(|x| x.as_str().is_some_and(|s| !s.trim().is_empty()))
        });
    if !zones_ok {
        why.push("a dedicated ELB (elb.class: performance) needs \"available_zone\", a non-empty array of zone names, e.g. [\"cn-north-4a\"]".into());
    }
    let protocols = super::catalog::listener_protocols(svc);
    let uses = |list: &[&str]| protocols.iter().any(|(_, p)| list.contains(&p.as_str()));
    if uses(&["tcp", "udp"]) && !nonempty_str(obj, "l4_flavor_name") {
        why.push("a dedicated ELB with TCP or UDP ports needs \"l4_flavor_name\" (OTC: mandatory when TCP or UDP is used)".into());
    }
    if uses(&["http", "https"]) && !nonempty_str(obj, "l7_flavor_name") {
        why.push(format!(
            "a dedicated ELB with http/https in {} needs \"l7_flavor_name\" (OTC: mandatory when HTTP is used)",
            cat.key("protocol-port")
        ));
    }
}

#[cfg(test)]
#[path = "autocreate_tests.rs"]
mod tests;
