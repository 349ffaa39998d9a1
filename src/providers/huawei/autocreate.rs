//! `kubernetes.io/elb.autocreate`: the JSON that tells CCE to create the ELB, checked
//! field by field against what CCE requires for each ELB type.

use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::{Catalog, annotation_field};

use super::layer7;

pub(super) fn huawei_autocreate_valid(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "autocreate") else {
        return;
    };
    let field = annotation_field(a.key);
    let key = a.key;
    if let Some(id) = cat.get(new, "id") {
        out.push(
            field.clone(),
            format!("{key} and {} cannot both be set: use an existing ELB (elb.id) or let CCE create one (elb.autocreate), not both", id.key),
        );
    }
    let obj = match serde_json::from_str::<serde_json::Value>(a.value) {
        Ok(serde_json::Value::Object(o)) => o,
        Ok(_) => {
            out.push(
                field,
                format!("{key} must be a JSON object, e.g. '{{\"type\":\"public\",...}}'"),
            );
            return;
        }
        Err(e) => {
            out.push(field, format!("{key} is not valid JSON ({e}); write a JSON object, e.g. '{{\"type\":\"inner\"}}'"));
            return;
        }
    };
    let nonempty_str = |k: &str| {
        obj.get(k)
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.trim().is_empty())
    };
    let ty = obj.get("type").and_then(|v| v.as_str());
    match ty {
        Some("public") => {
            for k in [
                "bandwidth_name",
                "bandwidth_chargemode",
                "bandwidth_sharetype",
                "eip_type",
            ] {
                if !nonempty_str(k) {
                    out.push(
                        field.clone(),
                        format!("{key}: type \"public\" needs \"{k}\" (a non-empty string)"),
                    );
                }
            }
            let size_ok = obj
                .get("bandwidth_size")
                .and_then(|v| v.as_f64())
                .is_some_and(|n| n > 0.0);
            if !size_ok {
                out.push(field.clone(), format!("{key}: type \"public\" needs \"bandwidth_size\" (a positive number, Mbit/s)"));
            }
        }
        Some("inner") => {}
        other => out.push(
            field.clone(),
            format!(
                "{key}: \"type\" is {}; allowed: \"public\" or \"inner\"",
                other.map_or_else(|| "missing".to_string(), |t| format!("\"{t}\""))
            ),
        ),
    }
    let dedicated = cat
        .get(new, "class")
        .is_some_and(|c| c.value == "performance");
    if dedicated {
        let zones_ok = obj
            .get("available_zone")
            .and_then(|v| v.as_array())
            .is_some_and(|z| {
                !z.is_empty() && z.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty()))
            });
        if !zones_ok {
            out.push(field.clone(), format!("{key}: a dedicated ELB (elb.class: performance) needs \"available_zone\" (a non-empty array of zone names)"));
        }
        if !nonempty_str("l4_flavor_name") {
            out.push(
                field.clone(),
                format!("{key}: a dedicated ELB needs \"l4_flavor_name\""),
            );
        }
        if layer7(cat, new) && !nonempty_str("l7_flavor_name") {
            out.push(
                field.clone(),
                format!(
                    "{key}: a dedicated ELB with http/https in {} needs \"l7_flavor_name\"",
                    cat.key("protocol-port")
                ),
            );
        }
    }
}
