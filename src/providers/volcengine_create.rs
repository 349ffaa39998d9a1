//! `dependent-annotations` on Volcengine: the parameters of CreateLoadBalancer and of the CLB
//! listeners that go together are the API rows' (providers/data/volcengine-api.yaml: SubnetId
//! for a new CLB, MasterZoneId with SlaveZoneId, AclIds with AclStatus on); this file adds
//! what the rows cannot say, two zones that must differ. CLB-API =
//! https://www.volcengine.com/docs/6406/71769 (CreateLoadBalancer SlaveZoneId: "取值不能与
//! MasterZoneId参数相同"); VCCM = volcengine/volcengine-cloud-controller-manager@903e85e:
//! docs/usage.md:19-20 ("Can not be the same with `slave-zone-id`").

use crate::vocab::catalog::{Annot, Catalog, annotation_field, catalog_annotation};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;

/// Empty reads as unset (VCCM-ZH:19-20 "不配置该参数或该参数为空时").
fn set<'a>(cat: &Catalog, svc: Svc<'a>, name: &str) -> Option<Annot<'a>> {
    cat.get(svc, name).filter(|a| !a.value.trim().is_empty())
}

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    crate::providers::api::check(ctx, cat, "dependent-annotations", out);
    let Some(new) = ctx.new else { return };
    // A reused CLB or NLB: no CreateLoadBalancer, its zones are not sent.
    if set(cat, new, "id").is_some() {
        return;
    }
    if let (Some(master), Some(slave)) = (
        set(cat, new, "master-zone-id"),
        set(cat, new, "slave-zone-id"),
    ) && master.value == slave.value
    {
        out.push(
            annotation_field(slave.key),
            format!("{} and {} are both \"{}\": CreateLoadBalancer needs two different zones; choose another standby zone, or remove {}", master.key, slave.key, slave.value, slave.key),
        );
    }
}

pub fn dependent_annotations_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let set = |n: &str| {
        let a = catalog_annotation(cat, n);
        format!("({} && {}.trim() != '')", a.present, a.value)
    };
    let (master, slave) = (
        catalog_annotation(cat, "master-zone-id"),
        catalog_annotation(cat, "slave-zone-id"),
    );
    let mut out = crate::providers::api::cel::checks(cat, "false", "dependent-annotations");
    out.push(
        CelCheck::new(
            format!(
                "!{} && {} && {} && {} == {}",
                set("id"),
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
    );
    Ok(out)
}

#[cfg(test)]
#[path = "volcengine_create_tests.rs"]
mod tests;
