//! ACK: which of its controllers reconciles the Service before and after the request, and
//! what both share: the orphan paths, the teardown when a Service stops being a
//! LoadBalancer, and the values they read differently than written. The CLB and NLB steps
//! themselves are in `clb` and `nlb`.
//!
//! Every source is kubernetes/cloud-provider-alibaba-cloud@eeb0ddc (the commit
//! `providers/data/alibaba.yaml` pins), under `pkg/`.

use super::side::{Side, code, facts, lb_id, lb_name};
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::controller::Controller;
use crate::vocab::ctx::Ctx;
use crate::vocab::input::Operation;
use crate::vocab::plan::{Action, Plan, Step};
use crate::vocab::route::{self, ALIBABA_CLASS_ANNOTATION, ALIBABA_TUNNEL_ANNOTATION};
use crate::vocab::service::Svc;

pub fn plan(ctx: &Ctx, cat: &'static Catalog, plan: &mut Plan) {
    let classes = &ctx.config.load_balancer_classes;
    let op = ctx.input.operation;
    let old = ctx
        .old
        .filter(|_| matches!(op, Operation::Update | Operation::Delete));
    let new = ctx.new.filter(|_| op != Operation::Delete);
    let was = old.and_then(|o| route::controller(cat.provider, o, classes));
    let now = new.and_then(|n| route::controller(cat.provider, n, classes));
    plan.controller = match now.or(was) {
        Some(Controller::Nlb) => "ACK NLB controller",
        _ => "ACK CLB controller",
    };
    match (was, now, old, new) {
        (Some(Controller::Default), None, Some(o), Some(n)) if n.is_lb() => {
            orphan(cat, o, n, plan)
        }
        (Some(c), None, Some(o), _) => teardown(ctx, cat, c, o, plan),
        (Some(a), Some(b), _, _) if a != b => plan.push(
            Step::new(
                Action::Unknown,
                "the Service moves between ACK's CLB and NLB controllers",
                code!("controller/helper/service_utils.go:98-125"),
            )
            .detail("spec.loadBalancerClass cannot change on a LoadBalancer Service (the API server refuses it); lbguard has no model of such a move"),
        ),
        (was, Some(c), _, Some(n)) => {
            let old = was.and(old).map(|o| Side::of(cat, o));
            let new = Side::of(cat, n);
            match c {
                Controller::Default => super::clb::plan(ctx, old, new, plan),
                Controller::Nlb => super::nlb::plan(ctx, old, new, plan),
            }
            super::misread::misread(ctx, cat, new, c == Controller::Nlb, plan);
        }
        _ => {}
    }
}

/// The live Service was the CLB controller's and the new one is no controller's, while it
/// stays a LoadBalancer: the class or the tunnel annotation.
fn orphan(cat: &'static Catalog, old: Svc, new: Svc, plan: &mut Plan) {
    let side = Side::of(cat, old);
    let id = lb_id(&side, Some(new));
    plan.load_balancer = id.map(str::to_string);
    let lb = lb_name(id);
    if new.annotation(ALIBABA_TUNNEL_ANNOTATION).is_some() {
        plan.push(
            Step::new(Action::Orphan, lb, code!("controller/service/clbv1/event_handler.go:79-81"))
                .detail(format!("{ALIBABA_TUNNEL_ANNOTATION} makes the CLB controller drop this Service for good (clbv1/event_handler.go:79-81, 151-153): the load balancer keeps its listeners and its last backends, which stop following the pods, and deleting the Service then waits on finalizer service.k8s.alibaba/resources forever; remove the annotation, or delete the Service before adding it"))
                .rule("plan-orphan")
                .field(annotation_field(ALIBABA_TUNNEL_ANNOTATION)),
        );
    } else {
        let class = new.annotation(ALIBABA_CLASS_ANNOTATION).unwrap_or_default();
        plan.push(
            Step::new(Action::Orphan, lb, code!("controller/service/clbv1/service_controller.go:297-330"))
                .detail(format!("{ALIBABA_CLASS_ANNOTATION} \"{class}\" makes the CLB controller stop reconciling this Service (clbv1/event_handler.go:83-88): its backends stop following the pods, and at the controller's next start it removes the Service's status, labels and finalizer and leaves the load balancer, its listeners and vServer groups running with no owner (clbv1/service_controller.go:297-330; the Service is still a LoadBalancer, so nothing is deleted); remove the annotation, or delete the Service first if the load balancer should go"))
                .rule("plan-orphan")
                .field(annotation_field(ALIBABA_CLASS_ANNOTATION)),
        );
    }
}

/// The Service stops being a LoadBalancer (or is deleted): what each controller removes
/// (clbv1/model_builder.go:63-71, model_applier.go:170-245, 449-495; nlbv2/model_builder.go:
/// 64-72, model_applier.go:188-273, 530-577). `type-change-drops-lb` warns about it already.
fn teardown(ctx: &Ctx, cat: &'static Catalog, c: Controller, old: Svc, plan: &mut Plan) {
    let side = Side::of(cat, old);
    let nlb = c == Controller::Nlb;
    let id = lb_id(&side, None);
    plan.load_balancer = id.map(str::to_string);
    let lb = lb_name(id);
    let preserve = side.get("preserve-lb-on-delete").is_some();
    let groups = if nlb {
        "server groups"
    } else {
        "vServer groups"
    };
    if side.reused.is_some() {
        plan.push(
            Step::new(
                Action::Keep,
                lb,
                if nlb {
                    code!("controller/service/nlbv2/model_applier.go:271")
                } else {
                    code!("controller/service/clbv1/model_applier.go:243")
                },
            )
            .detail("reused: the controller never deletes a load balancer it did not create"),
        );
    } else if preserve {
        plan.push(
            Step::new(Action::Orphan, lb, if nlb { code!("controller/service/nlbv2/model_applier.go:245-257") } else { code!("controller/service/clbv1/model_applier.go:217-229") })
                .detail(format!("kept (preserve-lb-on-delete): its deletion and modification protection are turned off and its tags kubernetes.do.not.delete and ack.aliyun.com removed, so nothing owns it any more; its listeners and this Service's {groups} go"))
                .calls(if nlb { &["UpdateLoadBalancerProtection", "UntagResources"] } else { &["SetLoadBalancerDeleteProtection", "SetLoadBalancerModificationProtection", "UntagResources"] }),
        );
    } else {
        plan.push(
            Step::new(Action::Delete, lb, if nlb { code!("controller/service/nlbv2/model_applier.go:258-267") } else { code!("controller/service/clbv1/model_applier.go:230-239") })
                .detail("created by the controller for this Service: deleted with its listeners and server groups, its deletion protection turned off first")
                .calls(if nlb { &["UpdateLoadBalancerProtection", "DeleteLoadBalancer"] } else { &["SetLoadBalancerDeleteProtection", "DeleteLoadBalancer"] }),
        );
        return;
    }
    // The load balancer stays: the controller removes what it made for this Service.
    if side.manages_listeners() {
        let lb_facts = facts(ctx, cat, id);
        for l in super::listeners::held(&side, lb_facts, nlb, !nlb || side.reused.is_some()) {
            plan.push(
                Step::new(
                    Action::Delete,
                    format!("listener {}", l.label()),
                    if nlb {
                        code!("controller/service/nlbv2/model_applier.go:449-473")
                    } else {
                        code!("controller/service/clbv1/listeners.go:676-689")
                    },
                )
                .detail(l.whose_detail("the Service no longer asks for a load balancer"))
                .calls(if nlb {
                    &["DeleteListener"]
                } else {
                    &["DeleteLoadBalancerListener"]
                })
                .peer(l.peer()),
            );
        }
    }
    if nlb && preserve {
        plan.push(
            Step::new(
                Action::Keep,
                "server groups of this Service",
                code!("controller/service/nlbv2/model_applier.go:544-551"),
            )
            .detail("kept with the NLB: their controller tags are removed instead")
            .calls(&["UntagResources"]),
        );
    } else {
        plan.push(
            Step::new(Action::Delete, format!("{groups} of this Service"), if nlb { code!("controller/service/nlbv2/model_applier.go:530-577") } else { code!("controller/service/clbv1/model_applier.go:449-495") })
                .detail("no port of the Service uses them any more; groups you made (vgroup-port) only lose this Service's backends")
                .calls(if nlb { &["DeleteServerGroup"] } else { &["DeleteVServerGroup"] }),
        );
    }
}
