//! `dependent-annotations` on Volcengine: the parameters of CreateLoadBalancer, which the
//! controller calls only when no `-id` names a load balancer to reuse (issue 39 notes,
//! others.md), and the access control of the CLB listeners it makes (new or reused CLB).
//! VCCM = volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md
//! (VCCM-ZH: docs/zh/usage_zh.md); CLB-API = https://www.volcengine.com/docs/6406/71769
//! (CreateLoadBalancer); SDK = PyPI volcengine-python-sdk 5.0.54
//! volcenginesdkclb/models/create_load_balancer_request.py; CLB-ACL =
//! https://docs.byteplus.com/en/docs/clb/Access-control-list-01 ("Each ACL-enabled listener
//! must be associated with at least one ACL").

use crate::vocab::catalog::{Annot, Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;

/// Empty reads as unset (VCCM-ZH:19-20 "不配置该参数或该参数为空时").
fn set<'a>(cat: &Catalog, svc: Svc<'a>, name: &str) -> Option<Annot<'a>> {
    cat.get(svc, name).filter(|a| !a.value.trim().is_empty())
}

/// An `nlb-` id: the NLB API's listeners take no ACL parameters (SDK
/// create_nlb_listener_request.py), so the ACL annotations are not sent for it.
fn reuses_nlb(cat: &Catalog, svc: Svc) -> bool {
    set(cat, svc, "id").is_some_and(|a| a.value.starts_with("nlb-"))
}

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    // CLB-ACL: a listener with access control on needs at least one ACL (CreateListener and
    // ModifyListenerAttributes AclStatus=on with AclIds); VCCM:29-31 documents the three.
    if let Some(status) = cat.get(new, "acl-status")
        && status.value == "on"
        && set(cat, new, "acl-id").is_none()
        && !reuses_nlb(cat, new)
    {
        out.push(
            annotation_field(status.key),
            format!("{}: \"on\" needs {}: a CLB listener with access control on must be associated with at least one ACL (BytePlus CLB access control overview), so the CLB API refuses AclStatus on without AclIds; add up to 5 ACL ids, e.g. {}: \"acl-3cj44nv0jhhxc6c6rrtet****\", or set {} to \"off\"", status.key, cat.key("acl-id"), cat.key("acl-id"), status.key),
        );
    }
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
    let (acl_status, own_id) = (
        catalog_annotation(cat, "acl-status"),
        catalog_annotation(cat, "id"),
    );
    Ok(vec![
        CelCheck::new(
            format!(
                "{} && {} == 'on' && !{} && !({id} && {}.startsWith('nlb-'))",
                acl_status.present,
                acl_status.value,
                set("acl-id"),
                own_id.value
            ),
            cel::lit(&format!(
                "[dependent-annotations] {}: \"on\" needs {}: a CLB listener with access control on must be associated with at least one ACL, so the CLB API refuses AclStatus on without AclIds; add up to 5 ACL ids, or set it to \"off\"",
                cat.key("acl-status"),
                cat.key("acl-id")
            )),
        )
        .same_when("'w3'"),
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
