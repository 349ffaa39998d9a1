//! The plan rules: each destructive or surprising step of what the cloud controller will do
//! (`crate::plan`) is a finding of its own, so that an operator can raise it to deny. They
//! run only when the request asks something new of the cloud (`plan::relevant`), and share
//! one plan per request.

use crate::plan;
use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{Rule, Vap, rule};

const ALIBABA: &[Provider] = &[Provider::Alibaba];
/// ACK's code, and CCE's published listener management.
const DELETE_LISTENER: &[Provider] = &[Provider::Alibaba, Provider::Huawei];
const NO_VAP: Vap = Vap::No("needs the plan: the live object and the load balancer's facts");

pub static RULES: &[Rule] = &[
    rule!(
        "plan-takeover",
        ALIBABA,
        Plan,
        Admit,
        Warn,
        "force-override-listeners makes the controller rewrite a listener another Service (or the user) owns",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/model_applier.go:99-112, clbv1/listeners.go:661-675, 803-814; nlbv2/model_applier.go:115-126, 449-486, nlbv2/listeners.go:364-375",
        takeover,
        NO_VAP
    ),
    rule!(
        "plan-delete-listener",
        DELETE_LISTENER,
        Plan,
        Transition,
        Warn,
        "A listener on the load balancer will be deleted (a port removed, a protocol or forwarding changed; ACK NLB: any listener the Service does not name on an NLB the controller created)",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/listeners.go:473-501, 645-708, 1113-1121; nlbv2/model_applier.go:436-500; CCE cce_10_1167 (003): \"CCE为负载均衡类型的Service自动创建并完全托管监听器，包括监听器的创建、更新和删除\"",
        delete_listener,
        NO_VAP
    ),
    rule!(
        "plan-orphan",
        ALIBABA,
        Plan,
        Transition,
        Warn,
        "The controller will stop managing a live load balancer and leave it running (the class or tunnel annotation added)",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/helper/service_utils.go:98-112, 203-211; clbv1/event_handler.go:75-160; clbv1/service_controller.go:251-252, 297-330; clbv1/model_builder.go:63-71",
        orphan,
        NO_VAP
    ),
    rule!(
        "plan-no-reset",
        ALIBABA,
        Plan,
        Transition,
        Warn,
        "An annotation removed (or set empty) does not reset the cloud setting, or unexpectedly clears it; says what stays",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/loadbalancer.go:112-240, clbv1/listeners.go:798-1099, nlbv2/loadbalancer.go:44-105, 177-305, 564-598, nlbv2/listeners.go:351-510, nlbv2/server_groups.go:311-470, 1203-1312, controller/helper/tags.go:8-62, reconcile/annotation/annotations.go:150-194",
        no_reset,
        NO_VAP
    ),
    rule!(
        "plan-convert",
        ALIBABA,
        Plan,
        Transition,
        Warn,
        "An in-place conversion that changes what clients use: the NLB's address type or zones; a server group type (recreated, the old one leaked)",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/nlbv2/loadbalancer.go:199-228, nlbv2/model_applier.go:275-350, 436-447, 530-577",
        convert,
        NO_VAP
    ),
    rule!(
        "plan-misread",
        ALIBABA,
        Plan,
        Admit,
        Warn,
        "A value the controller reads differently than written (\"true\" read as off, a 32-bit wrap, preserve-lb-on-delete: \"false\", a charge type's case, NLB acl-*), where annotation-format does not already deny it",
        "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/nlbv2/server_groups.go:1203-1312, nlbv2/listeners.go:194-250, clbv1/listeners.go:220-222, clbv1/model_builder.go:67-69, clbv1/loadbalancer.go:273-275, 412-419, 451-471, nlbv2/loadbalancer.go:83-85, 95-102, model/load_balancer.go:37-43",
        misread,
        NO_VAP
    ),
];

/// The plan's steps that carry `id`, as findings; nothing when the request asks nothing
/// new of the cloud.
fn steps_of(ctx: &Ctx, cat: &'static Catalog, id: &str, out: &mut Findings) {
    if !plan::relevant(ctx) {
        return;
    }
    for s in plan::of(ctx, cat)
        .steps
        .iter()
        .filter(|s| s.rule == Some(id))
    {
        match &s.peer {
            Some(peer) => out.push_peer(s.field.clone(), s.warning(), peer.clone()),
            None => out.push(s.field.clone(), s.warning()),
        }
    }
}

fn takeover(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-takeover", out);
}

fn delete_listener(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-delete-listener", out);
}

fn orphan(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-orphan", out);
}

fn no_reset(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-no-reset", out);
}

fn convert(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-convert", out);
}

fn misread(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    steps_of(ctx, cat, "plan-misread", out);
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
