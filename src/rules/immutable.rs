//! `lb-attributes-immutable`: attributes a cloud controller fixes when it creates a load
//! balancer (ACK CLB and NLB, CCE), on an update; and, with the inventory, what ACK's
//! controllers compare between a Service and the load balancer it reuses (`super::reuse`).

use super::fixed::{ALIBABA_FIXED, Fixed, fixed};
use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, VapCtx};

/// CCE's table: "This parameter cannot be modified after the resource is created"
/// (opentelekomcloud-docs/cloud-container-engine@4863737 cce_10_0385 :44, :67). CCE's
/// controller is not public, so the message quotes the table, not an error.
static HUAWEI_FIXED: &[Fixed] = &[
    fixed("class", Some("union"), HUAWEI_FIXED_WHY),
    fixed("autocreate", None, HUAWEI_FIXED_WHY),
];

const HUAWEI_FIXED_WHY: &str =
    "CCE documents that it \"cannot be modified after the resource is created\"";

/// Why a change is refused: the controller's error (ACK), or what the reference says (CCE).
fn fixed_why(p: Provider, error: &str) -> String {
    match p {
        Provider::Huawei => error.to_string(),
        _ => format!("the cloud controller fails with \"{error}\""),
    }
}

fn immutable_attributes(p: Provider) -> &'static [Fixed] {
    match p {
        Provider::Alibaba => ALIBABA_FIXED,
        Provider::Huawei => HUAWEI_FIXED,
        _ => &[],
    }
}

/// Attributes the CCM sets when it creates the LB and refuses to change afterwards.
/// ACK's controllers compare the annotation with the live LB, so a removed (or empty)
/// annotation is ignored and an unset one means the CCM default; CCE's class defaults to
/// `union`. ACK's NLB controller compares in any case and changes its address type and zones
/// in place: `plan-convert` warns about that.
pub fn lb_attributes_immutable(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    if cat.provider == Provider::Alibaba {
        super::reuse::compared_with_the_live_lb(ctx, cat, out);
    }
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    // A transition: an update of a Service that was and stays a LoadBalancer.
    if ctx.input.operation != crate::vocab::input::Operation::Update || !old.is_lb() {
        return;
    }
    let nlb = ctx.is_nlb(cat.provider);
    let alibaba = cat.provider == Provider::Alibaba;
    fn read(
        a: Option<crate::vocab::catalog::Annot<'_>>,
        alibaba: bool,
    ) -> Option<crate::vocab::catalog::Annot<'_>> {
        a.filter(|a| !(alibaba && a.value.is_empty()))
    }
    // On a reused load balancer an unset attribute is whatever the live one has, which only
    // the inventory knows (`super::reuse`): adding the live value is no change.
    let reused = read(cat.get(old, "id"), alibaba).is_some();
    for f in immutable_attributes(cat.provider) {
        let Some(n) = read(cat.get(new, f.suffix), alibaba) else {
            continue;
        };
        let Some(before) = read(cat.get(old, f.suffix), alibaba)
            .map(|a| a.value)
            .or(f.default.filter(|_| !reused))
        else {
            continue;
        };
        let before = Some(before);
        let changed = |fold: bool| match before {
            Some(b) if fold => !b.eq_ignore_ascii_case(n.value),
            Some(b) => b != n.value,
            None => false,
        };
        let (error, fold) = if nlb { (f.nlb, true) } else { (f.clb, false) };
        if let Some(error) = error
            && changed(fold)
        {
            let was = before.map_or_else(|| "unset".to_string(), |v| format!("\"{v}\""));
            out.push(
                annotation_field(n.key),
                format!("{} cannot change once the load balancer exists (was {was}, now \"{}\"); {}; restore the old value, or delete and recreate the Service", n.key, n.value, fixed_why(cat.provider, error)),
            );
        }
        // An NLB converted in place (address type, zones): `plan-convert` warns.
    }
    // CLB reads an absent ip-version as ipv4 (clbv1/loadbalancer.go:140-141, :369-378), so
    // removing ipv6 is a change the controller refuses.
    if alibaba
        && !nlb
        && read(cat.get(old, "ip-version"), true).is_some_and(|o| o.value == "ipv6")
        && read(cat.get(new, "ip-version"), true).is_none()
    {
        let key = cat.key("ip-version");
        out.push(
            annotation_field(&key),
            format!("{key} was \"ipv6\" and is now unset, which the CLB controller reads as ipv4; {}; restore {key}: ipv6, or delete and recreate the Service", fixed_why(cat.provider, IPV6_REMOVED)),
        );
    }
}

const IPV6_REMOVED: &str = "alicloud: can not change LoadBalancer AddressIPVersion once created";

pub fn lb_attributes_immutable_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let alibaba = cat.provider == Provider::Alibaba;
    // The rule runs on creates too (the reused load balancer's facts, webhook only); what
    // the policy checks is the transition.
    let transition = format!(
        "(oldObject != null && {})",
        cel::on(cel::IS_LB, "oldObject")
    );
    let nlb = if alibaba {
        cel::on(&crate::providers::alibaba::nlb_cel(v), "object")
    } else {
        "false".into()
    };
    let mut out = Vec::new();
    if alibaba {
        let a = catalog_annotation(cat, "ip-version");
        let set = |s: &str| {
            format!(
                "({} && {} != '')",
                cel::on(&a.present, s),
                cel::on(&a.value, s)
            )
        };
        out.push(CelCheck::new(
            format!(
                "{transition} && !{nlb} && {} && {} == 'ipv6' && !{}",
                set("oldObject"),
                cel::on(&a.value, "oldObject"),
                set("object")
            ),
            cel::lit(&format!(
                "[lb-attributes-immutable] {} was \"ipv6\" and is now unset, which the CLB controller reads as ipv4; {}",
                cat.key("ip-version"),
                fixed_why(cat.provider, IPV6_REMOVED)
            )),
        ));
    }
    for f in immutable_attributes(cat.provider) {
        let a = catalog_annotation(cat, f.suffix);
        let set = |s: &str| {
            let (p, val) = (cel::on(&a.present, s), cel::on(&a.value, s));
            if alibaba {
                format!("({p} && {val} != '')")
            } else {
                p
            }
        };
        let (op, ov) = (set("oldObject"), cel::on(&a.value, "oldObject"));
        let (np, nv, nk) = (
            set("object"),
            cel::on(&a.value, "object"),
            cel::on(&a.key, "object"),
        );
        let id = catalog_annotation(cat, "id");
        let reused = if alibaba {
            format!(
                "({} && {} != '')",
                cel::on(&id.present, "oldObject"),
                cel::on(&id.value, "oldObject")
            )
        } else {
            cel::on(&id.present, "oldObject")
        };
        let differs = |fold: bool| {
            let (o, n) = if fold {
                (format!("{ov}.lowerAscii()"), format!("{nv}.lowerAscii()"))
            } else {
                (ov.clone(), nv.clone())
            };
            match f.default {
                Some(d) => {
                    let d = if fold {
                        d.to_ascii_lowercase()
                    } else {
                        d.to_string()
                    };
                    format!(
                        "({op} ? {o} != {n} : (!{reused} && {} != {n}))",
                        cel::lit(&d)
                    )
                }
                None => format!("({op} && {o} != {n})"),
            }
        };
        let was = match f.default {
            Some(d) => format!(
                "({op} ? '\"' + {ov} + '\"' : {})",
                cel::lit(&format!("\"{d}\""))
            ),
            None => format!("({op} ? '\"' + {ov} + '\"' : 'unset')"),
        };
        let message = |error: &str| {
            format!(
                "'[lb-attributes-immutable] ' + {nk} + ' cannot change once the load balancer exists (was ' + {was} + ', now \"' + {nv} + '\"); {}; restore the old value, or delete and recreate the Service'",
                fixed_why(cat.provider, error)
                    .replace('\'', "\\'")
                    .replace('"', "\\\"")
            )
        };
        if let Some(e) = f.clb {
            out.push(CelCheck::new(
                format!("{transition} && !{nlb} && {np} && {}", differs(false)),
                message(e),
            ));
        }
        if let Some(e) = f.nlb {
            out.push(CelCheck::new(
                format!("{transition} && {nlb} && {np} && {}", differs(true)),
                message(e),
            ));
        }
    }
    Ok(out)
}
