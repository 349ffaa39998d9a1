//! What every part of the ACK plan reads: one side of the request (the live Service or the
//! new one) as ACK's controllers read its annotations, the load balancer it uses and what
//! the inventory knows of it, and the controllers' source lines.
//!
//! Every source is kubernetes/cloud-provider-alibaba-cloud@eeb0ddc (the commit
//! `providers/data/alibaba.yaml` pins), under `pkg/`.

use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Lookup};
use crate::vocab::lb::LoadBalancer;
use crate::vocab::plan::{Action, Plan, Step};
use crate::vocab::service::Svc;

/// A line of ACK's controller at the pinned commit, `path` under `pkg/`.
macro_rules! code {
    ($path:literal) => {
        concat!(
            "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/",
            $path
        )
    };
}
pub(super) use code;

/// One side of the request (the live object or the new one) as an ACK controller reads it.
#[derive(Clone, Copy)]
pub(super) struct Side<'a> {
    pub svc: Svc<'a>,
    pub cat: &'static Catalog,
    /// `-id`: a load balancer the user made, reused.
    pub reused: Option<&'a str>,
    /// `force-override-listeners` exactly "true" (annotations.go:270-272).
    pub overrides: bool,
}

impl<'a> Side<'a> {
    pub fn of(cat: &'static Catalog, svc: Svc<'a>) -> Self {
        Self {
            svc,
            cat,
            reused: get(cat, svc, "id"),
            overrides: get(cat, svc, "force-override-listeners") == Some("true"),
        }
    }

    /// An annotation as the controller's `Get` reads it: new prefix first, then the legacy
    /// one; empty is absent (annotations.go:150-172).
    pub fn get(&self, suffix: &str) -> Option<&'a str> {
        get(self.cat, self.svc, suffix)
    }

    /// An annotation as `Has` reads it: present, even empty (annotations.go:174-194).
    pub fn has(&self, suffix: &str) -> Option<&'a str> {
        self.cat.get(self.svc, suffix).map(|a| a.value)
    }

    /// The field path of an annotation, for findings.
    pub fn field(&self, suffix: &str) -> String {
        let key = self
            .cat
            .get(self.svc, suffix)
            .map_or_else(|| self.cat.key(suffix), |a| a.key.to_string());
        annotation_field(&key)
    }

    /// Listeners are reconciled on a load balancer the controller made, and on a reused
    /// one only with force-override (clbv1/model_applier.go:99-112, nlbv2/model_applier.go:
    /// 115-126).
    pub fn manages_listeners(&self) -> bool {
        self.reused.is_none() || self.overrides
    }

    /// `namespace/name`, as the inventory names a listener's owner.
    pub fn me(&self) -> String {
        self.svc.namespaced_name()
    }
}

pub(super) fn get<'a>(cat: &Catalog, svc: Svc<'a>, suffix: &str) -> Option<&'a str> {
    cat.get(svc, suffix)
        .map(|a| a.value)
        .filter(|v| !v.is_empty())
}

/// The load balancer a side uses: the reused id, or the id the controller recorded in the
/// label `service.k8s.alibaba/loadbalancer-id` (clbv1/service_controller.go:542-556).
pub(super) fn lb_id<'a>(side: &Side<'a>, live: Option<Svc<'a>>) -> Option<&'a str> {
    side.reused.or_else(|| {
        let label = side.cat.lb_id_label?;
        side.svc
            .label(label)
            .or_else(|| live.and_then(|l| l.label(label)))
            .filter(|v| !v.is_empty())
    })
}

/// What the inventory knows of a load balancer.
pub(super) fn facts<'c>(ctx: &'c Ctx, cat: &Catalog, id: Option<&str>) -> Option<&'c LoadBalancer> {
    ctx.inventory.get(cat.provider, id?)
}

/// Why the inventory knows nothing of a load balancer, for the plan's assumptions: a cloud
/// that did not answer is not a load balancer without listeners.
pub(super) fn unknown(ctx: &Ctx, cat: &Catalog, id: Option<&str>) -> String {
    match id.map(|id| ctx.inventory.lookup(cat.provider, id)) {
        Some(Lookup::Unavailable(cause)) => {
            format!("lbguard could not read it from the cloud's API: {cause}")
        }
        Some(Lookup::NotFound { region }) => {
            format!("the cloud has no such load balancer in region {region}")
        }
        Some(Lookup::Invalid) => "not a load balancer id".into(),
        _ => "no inventory entry".into(),
    }
}

/// How a plan names a load balancer.
pub(super) fn lb_name(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("load balancer \"{id}\""),
        None => "the load balancer of this Service".into(),
    }
}

/// The user's group `vgroup-port` binds to a port, on a reused load balancer.
pub(super) fn bound_group<'a>(side: &Side<'a>, port: i32) -> Option<&'a str> {
    side.reused?;
    crate::vocab::checks::first_naming_port(side.get("vgroup-port")?, port)
}

/// With additional-resource-tags set, every tag of the load balancer it does not list goes
/// (except `acs:` ones, the controller's own and kubernetes.reused.by.user;
/// controller/helper/tags.go:8-62): on a reused load balancer, the user's own.
pub(super) fn tags_cleared(
    old: Option<Side>,
    new: Side,
    lb: &str,
    source: &'static str,
    plan: &mut Plan,
) {
    let Some(tags) = new.get("additional-resource-tags") else {
        return;
    };
    if new.reused.is_none() || old.and_then(|o| o.get("additional-resource-tags")) == Some(tags) {
        return;
    }
    plan.push(
        Step::new(Action::Delete, format!("the other tags of {lb}"), source)
            .detail(format!("with additional-resource-tags \"{tags}\" the controller removes every tag of the load balancer it does not list (except acs:* and its own): on this reused load balancer your console tags go too; list them in the annotation to keep them"))
            .calls(&["UntagResources"])
            .rule("plan-no-reset")
            .field(new.field("additional-resource-tags")),
    );
}

/// A reused load balancer whose listeners the controller leaves alone (no
/// `force-override-listeners: "true"`, both controllers alike): what stays, said once.
/// `names`: the load balancer and its server groups, as the controller's product calls them.
pub(super) fn unmanaged_listeners(
    old: Option<Side>,
    new: Side,
    source: &'static str,
    (lb, groups): (&str, &str),
    plan: &mut Plan,
) {
    if old.is_some_and(|o| o.manages_listeners()) {
        plan.push(
            Step::new(Action::Keep, "the listeners stay as they are", source)
                .detail(format!("force-override-listeners is no longer \"true\" on this reused {lb}: the controller stops reconciling its listeners, which keep their ports, attributes and {groups}, whatever the Service says next"))
                .rule("plan-no-reset")
                .field(new.field("force-override-listeners")),
        );
    } else if old.is_none() {
        plan.push(
            Step::new(Action::Keep, "no listener", source).detail(format!("the {lb} is reused and force-override-listeners is not \"true\": the controller creates, changes and deletes no listener; bind ports to your listeners' {groups} with vgroup-port")),
        );
    }
}
