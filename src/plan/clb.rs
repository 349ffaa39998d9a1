//! ACK's CLB controller (`clbv1`), in its order: the load balancer (create, or reuse and
//! tag), its attributes, the vServer groups, the listeners (deletes, then updates and take
//! overs, then creates), then the cleanup of vServer groups no port uses
//! (clbv1/model_applier.go:40-126).

use super::attrs;
use super::listeners::{Have, Want, held, wanted};
use super::side::{
    Side, bound_group, code, facts, lb_id, lb_name, tags_cleared, unknown, unmanaged_listeners,
};
use crate::vocab::ctx::Ctx;
use crate::vocab::lb::LoadBalancer;
use crate::vocab::plan::{Action, Plan, Step};

/// Attributes fixed at creation: a change makes the controller fail with its error
/// (clbv1/loadbalancer.go:128-154); `lb-attributes-immutable` denies it.
const FIXED: &[(&str, &str)] = &[
    (
        "address-type",
        "alicloud: can not change LoadBalancer AddressType once created. delete and retry",
    ),
    (
        "master-zoneid",
        "alicloud: can not change LoadBalancer master zone id once created",
    ),
    (
        "slave-zoneid",
        "alicloud: can not change LoadBalancer slave zone id once created",
    ),
    (
        "resource-group-id",
        "alicloud: can not change ResourceGroupId once created",
    ),
    (
        "network-type",
        "alicloud: can not change LoadBalancer network type once created",
    ),
    (
        "ip",
        "alicloud: can not change LoadBalancer address once created",
    ),
];

pub(super) fn plan(ctx: &Ctx, old: Option<Side>, new: Side, plan: &mut Plan) {
    let cluster = ctx.config.cluster.id.as_deref().unwrap_or("<cluster id>");
    let id = lb_id(&new, old.map(|o| o.svc));
    let lb = lb_name(id);
    let lb_facts = facts(ctx, new.cat, id);
    let why_unknown = match lb_facts {
        Some(_) => String::new(),
        None => unknown(ctx, new.cat, id),
    };
    plan.load_balancer =
        Some(id.map_or_else(|| "created by the controller".into(), str::to_string));
    load_balancer(ctx, old, new, &lb, lb_facts, plan);

    let wants = match wanted(&new, false, cluster) {
        Ok(w) => w,
        Err(e) => {
            plan.push(
                Step::new(
                    Action::Fails,
                    "listeners",
                    code!("controller/service/clbv1/listeners.go:711-737"),
                )
                .detail(format!(
                    "{e}: the controller stops before any listener (annotation-format denies it)"
                )),
            );
            return;
        }
    };
    let before = old
        .map(|o| wanted(&o, false, cluster).unwrap_or_default())
        .unwrap_or_default();
    groups(&new, &wants, &before, plan);
    let kept = listeners(old, new, &wants, (lb_facts, &why_unknown), plan);
    if let Some(o) = old {
        let kept: Vec<&Want> = kept.iter().collect();
        attrs::diff(&o, &new, attrs::CLB, &lb, &kept, plan);
    }
    cleanup(old, new, &wants, &before, plan);
}

/// Creates the load balancer with the attributes it sends, or reuses one; on an update,
/// what fixed attributes and tags do.
fn load_balancer(
    ctx: &Ctx,
    old: Option<Side>,
    new: Side,
    lb: &str,
    lb_facts: Option<&LoadBalancer>,
    plan: &mut Plan,
) {
    match (new.reused, old) {
        (None, None) => plan.push(
            Step::new(Action::Create, "load balancer (CLB)", code!("controller/service/clbv1/model_applier.go:180-197"))
                .detail(create_attributes(ctx, &new))
                .calls(&["CreateLoadBalancer"]),
        ),
        (Some(_), None) => plan.push(
            Step::new(Action::Update, lb.to_string(), code!("controller/service/clbv1/loadbalancer.go:117-126"))
                .detail("reused: tagged kubernetes.reused.by.user=true unless it is, and never deleted with the Service")
                .calls(&["TagResources"]),
        ),
        (_, Some(o)) => {
            for (suffix, error) in FIXED {
                let was = o.get(suffix).or_else(|| fact(lb_facts, suffix));
                if let (Some(n), Some(w)) = (new.get(suffix), was)
                    && n != w
                {
                    plan.push(Step::new(Action::Fails, lb.to_string(), code!("controller/service/clbv1/loadbalancer.go:128-154")).detail(format!("{suffix} cannot change from \"{w}\" to \"{n}\": the controller fails with \"{error}\"")).field(new.field(suffix)));
                }
            }
            let (ipo, ipn) = (
                o.get("ip-version").unwrap_or("ipv4"),
                new.get("ip-version").unwrap_or("ipv4"),
            );
            if ipo != ipn {
                plan.push(Step::new(Action::Fails, lb.to_string(), code!("controller/service/clbv1/loadbalancer.go:140-142")).detail(format!("ip-version goes from \"{}\" to \"{}\" (unset counts as ipv4, clbv1/loadbalancer.go:369-378): the controller fails with \"alicloud: can not change LoadBalancer AddressIPVersion once created\"", ipo, ipn)).field(new.field("ip-version")));
            }
            if let (Some(w), None) = (o.get("address-type"), new.get("address-type")) {
                plan.push(Step::new(Action::Keep, "the address type stays as it is", code!("controller/service/clbv1/loadbalancer.go:136-139")).detail(format!("address-type was \"{w}\" and is removed: the controller compares it only when set")).rule("plan-no-reset").field(o.field("address-type")));
            }
        }
    }
    tags_cleared(
        old,
        new,
        lb,
        code!("controller/service/clbv1/loadbalancer.go:289-317"),
        plan,
    );
}

/// What the inventory knows of a fixed attribute.
fn fact<'f>(lb: Option<&'f LoadBalancer>, suffix: &str) -> Option<&'f str> {
    let lb = lb?;
    match suffix {
        "address-type" => lb.address_type.map(|a| a.as_str()),
        "master-zoneid" => lb.master_zone_id.as_deref(),
        "slave-zoneid" => lb.slave_zone_id.as_deref(),
        "resource-group-id" => lb.resource_group_id.as_deref(),
        "network-type" => lb.network_type.as_deref(),
        _ => None,
    }
}

/// `CreateLoadBalancer`'s parameters: the annotations, and the controller's defaults
/// (clbv1/loadbalancer.go:243-283, 380-436; provider/alibaba/slb/loadbalancer.go:346-404).
fn create_attributes(ctx: &Ctx, new: &Side) -> String {
    let get = |s: &str| new.get(s);
    let address = get("address-type").unwrap_or("internet");
    let charge = match get("instance-charge-type") {
        None => "PayByCLCU".to_string(),
        Some(v) if v.eq_ignore_ascii_case("PayByCLCU") => "PayByCLCU".to_string(),
        Some(v) => v.to_string(),
    };
    let mut out = vec![
        format!("AddressType={address}"),
        format!("InstanceChargeType={charge}"),
    ];
    if let Some(spec) = get("spec").or(charge
        .eq_ignore_ascii_case("PayBySpec")
        .then_some("slb.s1.small"))
    {
        out.push(format!("LoadBalancerSpec={spec}"));
    }
    for (suffix, param) in [
        ("charge-type", "InternetChargeType"),
        ("bandwidth", "Bandwidth"),
        ("master-zoneid", "MasterZoneId"),
        ("slave-zoneid", "SlaveZoneId"),
        ("ip-version", "AddressIPVersion"),
        ("ip", "Address"),
    ] {
        if let Some(v) = get(suffix) {
            out.push(format!("{param}={v}"));
        }
    }
    let classic = get("network-type") == Some("classic");
    match get("vswitch-id") {
        Some(v) if !classic => out.push(format!("VSwitchId={v}")),
        None if address == "intranet" && !classic => {
            out.push("VSwitchId=<a vSwitch of the cluster, picked at random>".into())
        }
        _ => {}
    }
    out.push(format!(
        "LoadBalancerName={}",
        get("name").unwrap_or("a<the Service's uid>")
    ));
    out.push(format!(
        "ResourceGroupId={}",
        get("resource-group-id").unwrap_or("<the cluster's>")
    ));
    out.push(format!(
        "DeleteProtection={}",
        get("delete-protection").unwrap_or("on")
    ));
    out.push(format!(
        "ModificationProtectionStatus={}",
        get("modification-protection").unwrap_or("ConsoleProtection")
    ));
    let cluster = ctx.config.cluster.id.as_deref().unwrap_or("<cluster id>");
    let mut tags =
        format!("Tag=kubernetes.do.not.delete=a<the Service's uid>,ack.aliyun.com={cluster}");
    if let Some(t) = get("additional-resource-tags") {
        tags.push(',');
        tags.push_str(t);
    }
    out.push(tags);
    out.join(", ")
}

/// vServer groups: one per port, or the user's group a reused load balancer's
/// `vgroup-port` names (clbv1/vgroups.go:490-530, model_applier.go:382-447).
fn groups(new: &Side, wants: &[Want], before: &[Want], plan: &mut Plan) {
    for w in wants {
        if let Some(id) = bound_group(new, w.port) {
            plan.push(
                Step::new(
                    Action::Update,
                    format!("vServer group {id}"),
                    code!("controller/service/clbv1/vgroups.go:499-520"),
                )
                .detail(format!(
                    "yours (vgroup-port): this Service's backends for port {} are added to it",
                    w.port
                ))
                .calls(&["AddVServerGroupBackendServers"]),
            );
        } else if !before.iter().any(|b| b.group == w.group) {
            plan.push(
                Step::new(
                    Action::Create,
                    format!("vServer group {}", w.group),
                    code!("controller/service/clbv1/model_applier.go:434-443"),
                )
                .detail(format!("for port {}, with this Service's backends", w.port))
                .calls(&["CreateVServerGroup", "AddVServerGroupBackendServers"]),
            );
        }
    }
}

/// The listeners: deletes, take overs and updates, creates. Returns this Service's
/// listeners that stay (the attribute updates apply to them).
fn listeners(
    old: Option<Side>,
    new: Side,
    wants: &[Want],
    (lb_facts, unknown): (Option<&LoadBalancer>, &str),
    plan: &mut Plan,
) -> Vec<Want> {
    let was_managed = old.is_some_and(|o| o.manages_listeners());
    if !new.manages_listeners() {
        unmanaged_listeners(
            old,
            new,
            code!("controller/service/clbv1/model_applier.go:99-112"),
            ("load balancer", "vServer groups"),
            plan,
        );
        return Vec::new();
    }
    let haves: Vec<Have> = match (lb_facts, old) {
        (Some(_), _) => held(&new, lb_facts, false, false),
        (None, Some(o)) if was_managed => held(&o, None, false, false),
        (None, _) if new.reused.is_some() => {
            plan.basis.push(format!("the reused load balancer's listeners are not known ({unknown}): a listener already on one of the Service's ports is taken over (same protocol) or makes the create fail (another protocol)"));
            Vec::new()
        }
        _ => Vec::new(),
    };
    let mut kept = Vec::new();
    for h in haves
        .iter()
        .filter(|h| h.mine && !wants.iter().any(|w| h.matches(w)))
    {
        let why = match wants.iter().find(|w| w.port == h.port) {
            Some(w) => format!(
                "port {} changes protocol to {}: the listener is deleted and a new one created",
                h.port, w.proto
            ),
            None => format!("port {} is no longer in the Service", h.port),
        };
        plan.push(
            Step::new(
                Action::Delete,
                format!("listener {}", h.label()),
                code!("controller/service/clbv1/listeners.go:676-689"),
            )
            .detail(why)
            .calls(&["DeleteLoadBalancerListener"])
            .rule("plan-delete-listener")
            .field("spec.ports"),
        );
    }
    let mut creates = Vec::new();
    for w in wants {
        match haves.iter().find(|h| h.matches(w)) {
            Some(h) if !h.mine => plan.push(
                Step::new(Action::TakeOver, format!("listener {} ({})", w.label(), h.whose()), code!("controller/service/clbv1/listeners.go:661-675"))
                    .detail(format!("with force-override-listeners: \"true\" the controller updates the existing {} listener on port {} to this Service's description and vServer group (clbv1/listeners.go:803-814): its traffic comes to this Service's pods", w.proto, w.port))
                    .calls(&[attrs_call(&w.proto)])
                    .rule("plan-takeover")
                    .field("spec.ports")
                    .peer(h.peer()),
            ),
            Some(_) if forward_changes(old, &new, w) => {
                plan.push(Step::new(Action::Delete, format!("listener {}", w.label()), code!("controller/service/clbv1/listeners.go:473-501")).detail("its forward-port policy changes, and an HTTP listener's forwarding cannot be updated: it is deleted and created again (a short outage)").calls(&["DeleteLoadBalancerListener"]).rule("plan-delete-listener").field(new.field("forward-port")));
                creates.push(w);
            }
            Some(_) => kept.push(w.clone()),
            None => creates.push(w),
        }
    }
    for w in creates {
        plan.push(
            Step::new(
                Action::Create,
                format!("listener {}", w.label()),
                code!("controller/service/clbv1/listeners.go:692-706"),
            )
            .detail(format!(
                "forwarding to vServer group {}",
                bound_group(&new, w.port).unwrap_or(&w.group)
            ))
            .calls(&[create_call(&w.proto), "StartLoadBalancerListener"]),
        );
    }
    kept
}

fn forward_changes(old: Option<Side>, new: &Side, w: &Want) -> bool {
    let fwd = |s: &Side| {
        let port = w.port.to_string();
        s.get("forward-port").and_then(|v| {
            v.split(',')
                .map(|e| e.split(':').collect::<Vec<_>>())
                .find(|pp| pp.len() == 2 && pp[0] == port)
                .map(|pp| pp[1].to_string())
        })
    };
    w.proto == "HTTP" && old.is_some_and(|o| fwd(&o) != fwd(new))
}

fn create_call(proto: &str) -> &'static str {
    match proto {
        "UDP" => "CreateLoadBalancerUDPListener",
        "HTTP" => "CreateLoadBalancerHTTPListener",
        "HTTPS" => "CreateLoadBalancerHTTPSListener",
        _ => "CreateLoadBalancerTCPListener",
    }
}

fn attrs_call(proto: &str) -> &'static str {
    match proto {
        "UDP" => "SetLoadBalancerUDPListenerAttribute",
        "HTTP" => "SetLoadBalancerHTTPListenerAttribute",
        "HTTPS" => "SetLoadBalancerHTTPSListenerAttribute",
        _ => "SetLoadBalancerTCPListenerAttribute",
    }
}

/// vServer groups no port uses any more are deleted; a user's group a port no longer binds
/// keeps this Service's backends (clbv1/model_applier.go:449-495, vgroups.go:303-336).
fn cleanup(old: Option<Side>, new: Side, wants: &[Want], before: &[Want], plan: &mut Plan) {
    let Some(o) = old else { return };
    for b in before {
        if bound_group(&o, b.port).is_none() && !wants.iter().any(|w| w.group == b.group) {
            plan.push(
                Step::new(
                    Action::Delete,
                    format!("vServer group {}", b.group),
                    code!("controller/service/clbv1/model_applier.go:449-495"),
                )
                .detail(format!(
                    "no port of the Service uses it any more (it served port {})",
                    b.port
                ))
                .calls(&["DeleteVServerGroup"]),
            );
        }
        if let Some(id) = bound_group(&o, b.port)
            && bound_group(&new, b.port) != Some(id)
        {
            plan.push(
                Step::new(Action::Keep, format!("this Service's backends stay in vServer group {id}"), code!("controller/service/clbv1/vgroups.go:303-336"))
                    .detail(format!("vgroup-port no longer binds port {} to it, and the controller only reads the backends of groups it binds, so it removes none", b.port))
                    .rule("plan-no-reset")
                    .field(o.field("vgroup-port")),
            );
        }
    }
}
