//! Values ACK's controllers read differently than they are written (`plan-misread`):
//! flags they turn on only for "on", integers they keep in 32 bits, a preserve flag any
//! value turns on, a charge type read in any case once and exactly afterwards, and
//! annotations or fields the NLB controller never reads. Silent where annotation-format
//! already denies the value.

use super::side::{Side, code};
use crate::vocab::action::Action as RuleAction;
use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::plan::{Action, Plan, Step};

/// Whether annotation-format denies this field of the Service (then the plan does not
/// warn about the same value a second time).
fn denied_by_format(ctx: &Ctx, cat: &'static Catalog, field: &str) -> bool {
    if ctx.config.action_for("annotation-format", RuleAction::Deny) != RuleAction::Deny {
        return false;
    }
    let mut out = Findings::new();
    out.start("annotation-format");
    crate::providers::alibaba::format::annotation_format(ctx, cat, &mut out);
    out.into_vec().iter().any(|f| f.field == field)
}

/// Flags the controllers turn on only for "on" and read as off otherwise, "true" included.
/// (suffix, NLB only, what it turns on, source).
const ON_ONLY: &[(&str, bool, &str, &str)] = &[
    (
        "health-check-flag",
        true,
        "the server groups' health check",
        code!("controller/service/nlbv2/server_groups.go:1238-1245"),
    ),
    (
        "preserve-client-ip",
        true,
        "client IP preservation",
        code!("controller/service/nlbv2/server_groups.go:1228-1231"),
    ),
    (
        "connection-drain",
        true,
        "connection draining",
        code!("controller/service/nlbv2/server_groups.go:1214-1216"),
    ),
    (
        "proxy-protocol",
        true,
        "proxy protocol",
        code!("controller/service/nlbv2/listeners.go:205-207"),
    ),
    (
        "cacert",
        true,
        "mutual TLS (the CA certificate)",
        code!("controller/service/nlbv2/listeners.go:214-216"),
    ),
    (
        "ppv2-pvl-ep-id-enabled",
        true,
        "the proxy protocol's PrivateLink endpoint id",
        code!("controller/service/nlbv2/listeners.go:225-227"),
    ),
    (
        "ppv2-pvl-eps-id-enabled",
        true,
        "the proxy protocol's PrivateLink service id",
        code!("controller/service/nlbv2/listeners.go:228-230"),
    ),
    (
        "ppv2-pvl-vpc-id-enabled",
        true,
        "the proxy protocol's VPC id",
        code!("controller/service/nlbv2/listeners.go:231-233"),
    ),
    (
        "alpn",
        true,
        "ALPN",
        code!("controller/service/nlbv2/listeners.go:235-238"),
    ),
    (
        "ignore-weight-update",
        true,
        "ignoring weight updates",
        code!("controller/service/nlbv2/server_groups.go:1308-1310"),
    ),
    (
        "proxy-protocol",
        false,
        "proxy protocol",
        code!("controller/service/clbv1/listeners.go:220-222"),
    ),
];

/// NLB integers kept as Go `int32(...)` after `strconv.Atoi`: a value past 32 bits wraps.
/// (suffix, only read when the health check is on, source).
const INT32: &[(&str, bool, &str)] = &[
    (
        "cps",
        false,
        code!("controller/service/nlbv2/listeners.go:217-223"),
    ),
    (
        "idle-timeout",
        false,
        code!("controller/service/nlbv2/listeners.go:194-200"),
    ),
    (
        "connection-drain-timeout",
        false,
        code!("controller/service/nlbv2/server_groups.go:1218-1224"),
    ),
    (
        "health-check-connect-port",
        true,
        code!("controller/service/nlbv2/server_groups.go:1251-1257"),
    ),
    (
        "healthy-threshold",
        true,
        code!("controller/service/nlbv2/server_groups.go:1258-1264"),
    ),
    (
        "unhealthy-threshold",
        true,
        code!("controller/service/nlbv2/server_groups.go:1265-1271"),
    ),
    (
        "health-check-connect-timeout",
        true,
        code!("controller/service/nlbv2/server_groups.go:1272-1278"),
    ),
    (
        "health-check-interval",
        true,
        code!("controller/service/nlbv2/server_groups.go:1279-1285"),
    ),
];

/// Values the controller reads differently than they are written, where no deny rule
/// already refuses them.
pub(super) fn misread(ctx: &Ctx, cat: &'static Catalog, new: Side, nlb: bool, plan: &mut Plan) {
    let controller = if nlb { "NLB" } else { "CLB" };
    let mut steps = Vec::new();
    for (suffix, only_nlb, what, source) in ON_ONLY {
        let Some(v) = new.get(suffix).filter(|_| *only_nlb == nlb) else {
            continue;
        };
        let on = if nlb {
            v.eq_ignore_ascii_case("on")
        } else {
            v == "on"
        };
        let off = if nlb {
            v.eq_ignore_ascii_case("off")
        } else {
            v == "off"
        };
        if !on && !off {
            let case = if nlb { " (any case)" } else { " exactly" };
            steps.push(
                Step::new(Action::Misread, format!("{what} is off"), source).detail(format!("{} is \"{v}\", and the {controller} controller turns it on only for \"on\"{case}, reading anything else as off; write \"on\" or \"off\"", cat.key(suffix))).field(new.field(suffix)),
            );
        }
    }
    if nlb {
        let hc_on = new
            .get("health-check-flag")
            .is_some_and(|v| v.eq_ignore_ascii_case("on"));
        for (suffix, needs_hc, source) in INT32 {
            let Some(v) = new.get(suffix).filter(|_| !needs_hc || hc_on) else {
                continue;
            };
            let Ok(n) = crate::vocab::go::atoi(v) else {
                continue;
            };
            let sent = n as i32;
            if i64::from(sent) != n {
                steps.push(
                    Step::new(Action::Misread, format!("{suffix} is sent as {sent}"), source).detail(format!("{} is \"{v}\": the NLB controller keeps it as a 32-bit number (Go int32), so the cloud gets {sent}", cat.key(suffix))).field(new.field(suffix)),
                );
            }
        }
        for suffix in ["acl-status", "acl-id", "acl-type"] {
            if new.get(suffix).is_some() {
                steps.push(
                    Step::new(Action::Misread, "no access control list", code!("controller/service/nlbv2/listeners.go:138-250"))
                        .detail(format!("{} is set, but the NLB controller reads no acl-* annotation (nothing under nlbv2 does): this NLB's listeners get no access control list; use security-group-ids, or set the list on the NLB yourself", cat.key(suffix)))
                        .field(new.field(suffix)),
                );
                break;
            }
        }
        if new.reused.is_some()
            && new
                .svc
                .0
                .spec
                .as_ref()
                .and_then(|s| s.load_balancer_source_ranges.as_ref())
                .is_some_and(|r| !r.is_empty())
        {
            steps.push(
                Step::new(Action::Misread, "no source ranges", code!("controller/service/nlbv2/loadbalancer.go:95-102"))
                    .detail("spec.loadBalancerSourceRanges is ignored on a reused NLB (the controller only records an Event, FeatureNotSupported): nothing restricts the clients; use security-group-ids")
                    .field("spec.loadBalancerSourceRanges"),
            );
        }
    } else if let Some(v) = new.get("instance-charge-type")
        && v != "PayBySpec"
        && v != "PayByCLCU"
        && (v.eq_ignore_ascii_case("PayBySpec") || v.eq_ignore_ascii_case("PayByCLCU"))
    {
        let canonical = if v.eq_ignore_ascii_case("PayBySpec") {
            "PayBySpec"
        } else {
            "PayByCLCU"
        };
        steps.push(
            Step::new(Action::Misread, format!("instance charge type \"{v}\" is set again on every change"), code!("controller/service/clbv1/loadbalancer.go:451-471"))
                .detail(format!("the CLB controller reads \"{v}\" in any case when it creates the load balancer (model/load_balancer.go:37-43) but compares it exactly with the cloud's \"{canonical}\" afterwards, so every later reconcile calls ModifyLoadBalancerInstanceChargeType; write \"{canonical}\""))
                .calls(&["ModifyLoadBalancerInstanceChargeType"])
                .field(new.field("instance-charge-type")),
        );
    }
    if let Some(v) = new.get("preserve-lb-on-delete")
        && ["false", "off", "no", "0", "disable", "disabled"]
            .iter()
            .any(|n| v.eq_ignore_ascii_case(n))
    {
        steps.push(
            Step::new(Action::Misread, "the load balancer is kept when the Service is deleted", if nlb { code!("controller/service/nlbv2/loadbalancer.go:83-85") } else { code!("controller/service/clbv1/loadbalancer.go:273-275") })
                .detail(format!("{} is \"{v}\", and the controller keeps the load balancer for any non-empty value; remove the annotation to have it deleted with the Service", cat.key("preserve-lb-on-delete")))
                .field(new.field("preserve-lb-on-delete")),
        );
    }
    for s in steps {
        if !denied_by_format(ctx, cat, &s.field) {
            plan.push(s.rule("plan-misread"));
        }
    }
}
