//! `dependent-annotations` on Volcengine: the parameters of CreateLoadBalancer, which the
//! controller calls only when no `-id` names a load balancer to reuse (issue 39 notes,
//! others.md). VCCM = volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md
//! (VCCM-ZH: docs/zh/usage_zh.md); CLB-API = https://www.volcengine.com/docs/6406/71769
//! (CreateLoadBalancer); SDK = PyPI volcengine-python-sdk 5.0.54
//! volcenginesdkclb/models/create_load_balancer_request.py.

use crate::vocab::catalog::{Annot, Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;

/// Empty reads as unset (VCCM-ZH:19-20 "不配置该参数或该参数为空时").
fn set<'a>(cat: &Catalog, svc: Svc<'a>, name: &str) -> Option<Annot<'a>> {
    cat.get(svc, name).filter(|a| !a.value.trim().is_empty())
}

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    // A reused CLB or NLB: no CreateLoadBalancer, none of these parameters is sent.
    if set(cat, new, "id").is_some() {
        return;
    }
    // VCCM:11 Required YES, VCCM-ZH:11 是; CLB-API SubnetId 是否必选 是; SDK :612 refuses a
    // request without subnet_id.
    if set(cat, new, "subnet-id").is_none() {
        out.push(
            annotation_field(&cat.key("subnet-id")),
            format!("a Service that makes the controller create a CLB (no {}) needs {}: CreateLoadBalancer requires SubnetId, the subnet the CLB takes its address from; add it, e.g. {}: \"subnet-2fe6example\", or name an existing load balancer with {}", cat.key("id"), cat.key("subnet-id"), cat.key("subnet-id"), cat.key("id")),
        );
    }
    // CLB-API SlaveZoneId: "如果传入该参数,则参数MasterZoneId必须传入,且取值不能与MasterZoneId参数
    // 相同"; VCCM-ZH:20 "master-zone-id必须一并配置，否则会报错".
    if let Some(slave) = set(cat, new, "slave-zone-id") {
        match set(cat, new, "master-zone-id") {
            None => out.push(
                annotation_field(slave.key),
                format!("{}: \"{}\" needs {}: CreateLoadBalancer refuses a standby zone without a primary one; add the primary zone, e.g. {}: \"cn-beijing-a\", or remove {}", slave.key, slave.value, cat.key("master-zone-id"), cat.key("master-zone-id"), slave.key),
            ),
            Some(master) if master.value == slave.value => out.push(
                annotation_field(slave.key),
                format!("{} and {} are both \"{}\": CreateLoadBalancer needs two different zones; choose another standby zone, or remove {}", master.key, slave.key, slave.value, slave.key),
            ),
            Some(_) => {}
        }
    }
}

pub fn dependent_annotations_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let set = |n: &str| {
        let a = catalog_annotation(cat, n);
        format!("({} && {}.trim() != '')", a.present, a.value)
    };
    let (id, subnet, master, slave) = (
        set("id"),
        cat.key("subnet-id"),
        catalog_annotation(cat, "master-zone-id"),
        catalog_annotation(cat, "slave-zone-id"),
    );
    Ok(vec![
        CelCheck::new(
            format!("!{id} && !{}", set("subnet-id")),
            cel::lit(&format!(
                "[dependent-annotations] a Service that makes the controller create a CLB (no {}) needs {subnet}: CreateLoadBalancer requires SubnetId; add it, or name an existing load balancer",
                cat.key("id")
            )),
        )
        .same_when("'w0'"),
        CelCheck::new(
            format!(
                "!{id} && {} && !{}",
                set("slave-zone-id"),
                set("master-zone-id")
            ),
            format!(
                "'[dependent-annotations] ' + {} + ': \"' + {} + '\" needs {}; add the primary zone, or remove the standby one'",
                slave.key,
                slave.value,
                cat.key("master-zone-id")
            ),
        )
        .same_when("'w1'"),
        CelCheck::new(
            format!(
                "!{id} && {} && {} && {} == {}",
                set("slave-zone-id"),
                set("master-zone-id"),
                master.value,
                slave.value
            ),
            format!(
                "'[dependent-annotations] ' + {} + ' and ' + {} + ' are both \"' + {} + '\": CreateLoadBalancer needs two different zones'",
                master.key, slave.key, slave.value
            ),
        )
        .same_when("'w2'"),
    ])
}

#[cfg(test)]
#[path = "volcengine_create_tests.rs"]
mod tests;
