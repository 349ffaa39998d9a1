//! `kubernetes.io/elb.autocreate`: the JSON that tells CCE to create the ELB, checked field by
//! field against CCE's elb.autocreate table: OTC-0385 Table 15 (opentelekomcloud-docs/
//! cloud-container-engine@4863737:umn/source/networking/services/loadbalancer/
//! configuring_advanced_load_balancing_functions_using_annotations.rst:621-722) and HWDOC-zh
//! Table 2 (huaweicloudDocs/cce@99b4f7e:cn.zh-cn/用户指南/Service-Annotations说明.md:257-396).
//! Where the two disagree the less strict one decides, so no value CCE documents is denied:
//! `bandwidth_chargemode` is optional (HWDOC-zh:302-310, default `bandwidth`; OTC:643 says
//! required for public), and `l4_flavor_name` is needed only when a port is TCP or UDP
//! (OTC:711; HWDOC-zh:363-365 says always).

use serde_json::{Map, Value};

use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::service::Svc;

/// `bandwidth_size`, Mbit/s: "1 Mbit/s to 2000 Mbit/s by default" (OTC:647, HWDOC-zh:319).
const BANDWIDTH: (i64, i64) = (1, 2000);

/// `bandwidth_chargemode`: bandwidth | traffic (HWDOC-zh:309; OTC:645 lists traffic only).
const CHARGE_MODES: [&str; 2] = ["bandwidth", "traffic"];

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
    let mut why = Vec::new();
    // OTC:632-637, HWDOC-zh:281-289: optional, default inner.
    match get(&obj, "type") {
        None => {}
        Some(Value::String(t)) if t == "inner" => {}
        Some(Value::String(t)) if t == "public" => public(&obj, &mut why),
        Some(other) => why.push(format!(
            "\"type\" is {other}; CCE documents \"public\" or \"inner\" (the default when it is left out)"
        )),
    }
    if cat
        .get(new, "class")
        .is_some_and(|c| c.value == "performance")
    {
        dedicated(&obj, cat, new, &mut why);
    }
    for w in why {
        out.push(field.clone(), format!("{key}: {w}"));
    }
    // The fields CCE passes on to the ELB API's CreateLoadBalancer (name, bandwidth_name,
    // vip_address, subnet ids): their limits are rows of providers/data/huawei-api.yaml.
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

/// A public ELB's EIP: OTC:639-663, HWDOC-zh:292-339.
fn public(obj: &Map<String, Value>, why: &mut Vec<String>) {
    for k in ["bandwidth_name", "bandwidth_sharetype", "eip_type"] {
        if !nonempty_str(obj, k) {
            why.push(format!(
                "type \"public\" needs \"{k}\" (a non-empty string)"
            ));
        }
    }
    // The only sharing mode either table documents (OTC:655-657, HWDOC-zh:322-329).
    if let Some(v) = get(obj, "bandwidth_sharetype")
        && nonempty_str(obj, "bandwidth_sharetype")
        && v.as_str() != Some("PER")
    {
        why.push(format!(
            "\"bandwidth_sharetype\" is {v}; CCE documents \"PER\" (dedicated bandwidth)"
        ));
    }
    if let Some(v) = get(obj, "bandwidth_chargemode")
        && !v.as_str().is_some_and(|m| CHARGE_MODES.contains(&m))
    {
        why.push(format!(
            "\"bandwidth_chargemode\" is {v}; CCE documents \"bandwidth\" or \"traffic\" (or leave it out: bandwidth)"
        ));
    }
    let (min, max) = BANDWIDTH;
    match get(obj, "bandwidth_size") {
        None => why.push(format!(
            "type \"public\" needs \"bandwidth_size\", a whole number of Mbit/s from {min} to {max}, e.g. \"bandwidth_size\": 5"
        )),
        // An Integer in both tables, a JSON number in every CCE example.
        Some(v) if !v.as_i64().is_some_and(|n| (min..=max).contains(&n)) => why.push(format!(
            "\"bandwidth_size\" is {v}; CCE documents a whole number of Mbit/s from {min} to {max}, written as a JSON number, e.g. \"bandwidth_size\": 5"
        )),
        Some(_) => {}
    }
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
