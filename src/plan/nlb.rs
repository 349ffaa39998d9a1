//! ACK's NLB controller (`nlbv2`), in its order: the NLB (create, then the attributes the
//! create cannot take), its attributes and conversions, the server groups, the listeners
//! (deletes first), then the cleanup of server groups no port uses
//! (nlbv2/model_applier.go:41-145).

use super::attrs;
use super::listeners::{Have, Want, held, wanted};
use super::side::{
    Side, bound_group, code, facts, lb_id, lb_name, tags_cleared, unknown, unmanaged_listeners,
};
use crate::vocab::ctx::Ctx;
use crate::vocab::lb::LoadBalancer;
use crate::vocab::plan::{Action, Plan, Step};

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
    match old {
        None => {
            create(ctx, new, &lb, plan);
            empties(None, new, &lb, plan);
        }
        Some(o) => attributes(o, new, &lb, lb_facts, plan),
    }
    let wants = match wanted(&new, true, cluster) {
        Ok(w) => w,
        Err(e) => {
            plan.push(
                Step::new(
                    Action::Fails,
                    "listeners",
                    code!("controller/service/nlbv2/listeners.go:138-164"),
                )
                .detail(format!(
                    "{e}: the controller stops before any listener (annotation-format denies it)"
                )),
            );
            return;
        }
    };
    let before = old
        .map(|o| wanted(&o, true, cluster).unwrap_or_default())
        .unwrap_or_default();
    groups(old, &new, &wants, &before, plan);
    let kept = listeners(old, new, &wants, (lb_facts, &why_unknown), plan);
    if let Some(o) = old {
        let kept: Vec<&Want> = kept.iter().collect();
        attrs::diff(&o, &new, attrs::NLB, &lb, &kept, plan);
        for b in &before {
            if bound_group(&o, b.port).is_none() && !wants.iter().any(|w| w.group == b.group) {
                plan.push(
                    Step::new(
                        Action::Delete,
                        format!("server group {}", b.group),
                        code!("controller/service/nlbv2/model_applier.go:530-577"),
                    )
                    .detail(format!(
                        "no port of the Service uses it any more (it served port {})",
                        b.port
                    ))
                    .calls(&["DeleteServerGroup"]),
                );
            }
        }
    }
}

/// `CreateLoadBalancer`, then what the create cannot take (nlbv2/model_applier.go:198-226,
/// loadbalancer.go:44-105, 600-637; provider/alibaba/nlb/loadbalancer.go:145-200).
fn create(ctx: &Ctx, new: Side, lb: &str, plan: &mut Plan) {
    if new.reused.is_some() {
        return;
    }
    let get = |s: &str| new.get(s);
    let address = match get("address-type") {
        Some(v) if v.eq_ignore_ascii_case("intranet") => "intranet".to_string(),
        Some(v) if !v.eq_ignore_ascii_case("internet") => v.to_string(),
        _ => "internet".to_string(),
    };
    let cluster = ctx.config.cluster.id.as_deref().unwrap_or("<cluster id>");
    let mut out = vec![
        format!("AddressType={address}"),
        format!(
            "LoadBalancerName={}",
            get("name").unwrap_or("a<the Service's uid>")
        ),
        "VpcId=<the cluster's>".to_string(),
        format!(
            "ZoneMappings={}",
            get("zone-maps").unwrap_or("<none: the controller fails, zone-maps is required>")
        ),
    ];
    if let Some(v) = get("ip-version") {
        out.push(format!("AddressIpVersion={v}"));
    }
    out.push(format!(
        "ResourceGroupId={}",
        get("resource-group-id").unwrap_or("<the cluster's>")
    ));
    out.push("DeletionProtectionConfig.Enabled=true".into());
    out.push("ModificationProtectionConfig.Status=ConsoleProtection".into());
    let mut tags =
        format!("Tag=kubernetes.do.not.delete=a<the Service's uid>,ack.aliyun.com={cluster}");
    if let Some(t) = get("additional-resource-tags") {
        tags.push(',');
        tags.push_str(t);
    }
    out.push(tags);
    plan.push(
        Step::new(
            Action::Create,
            "load balancer (NLB)",
            code!("controller/service/nlbv2/model_applier.go:198-215"),
        )
        .detail(out.join(", "))
        .calls(&["CreateLoadBalancer"]),
    );
    let mut then = Vec::new();
    if let Some(sg) = get("security-group-ids") {
        then.push(format!("joins security groups {sg}"));
    }
    if let Some(v) = get("ipv6-address-type") {
        then.push(format!("IPv6 address type {v}"));
    }
    if let Some(v) = get("cross-zone-enabled") {
        then.push(format!("cross-zone {v}"));
    }
    if !then.is_empty() {
        plan.push(
            Step::new(
                Action::Update,
                lb.to_string(),
                code!("controller/service/nlbv2/model_applier.go:216-225"),
            )
            .detail(then.join(", "))
            .calls(&[
                "LoadBalancerJoinSecurityGroup",
                "UpdateLoadBalancerAttribute",
            ]),
        );
    }
    if has_source_ranges(&new) {
        plan.push(
            Step::new(Action::Create, "security group k8s-nlb-a<the Service's uid>", code!("controller/service/nlbv2/model_applier.go:502-528"))
                .detail("for spec.loadBalancerSourceRanges: accepts the ranges, drops the rest, and joins the NLB")
                .calls(&["CreateSecurityGroup", "LoadBalancerJoinSecurityGroup"]),
        );
    }
}

fn has_source_ranges(side: &Side) -> bool {
    side.svc
        .0
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_source_ranges.as_ref())
        .is_some_and(|r| !r.is_empty())
}

/// A zone-maps entry as the controller parses it (nlbv2/loadbalancer.go:639-666).
fn zones(v: Option<&str>) -> Vec<[&str; 4]> {
    v.map(|v| {
        v.split(',')
            .filter_map(|e| {
                let i: Vec<&str> = e.split(':').collect();
                (i.len() >= 2).then(|| {
                    [
                        i[0],
                        i[1],
                        i.get(2).copied().unwrap_or(""),
                        i.get(3).copied().unwrap_or(""),
                    ]
                })
            })
            .collect()
    })
    .unwrap_or_default()
}

/// The NLB's attributes on an update: the fixed ones, conversions, and what an empty
/// value clears (nlbv2/loadbalancer.go:177-305).
fn attributes(old: Side, new: Side, lb: &str, lb_facts: Option<&LoadBalancer>, plan: &mut Plan) {
    for (suffix, error) in [
        ("ip-version", "AddressIpVersion cannot be changed"),
        ("resource-group-id", "ResourceGroupId cannot be changed"),
    ] {
        if let (Some(w), Some(n)) = (old.get(suffix), new.get(suffix))
            && !w.eq_ignore_ascii_case(n)
        {
            plan.push(Step::new(Action::Fails, lb.to_string(), code!("controller/service/nlbv2/loadbalancer.go:186-197")).detail(format!("{suffix} cannot change from \"{w}\" to \"{n}\": the controller fails with \"{error}, service: {n}, nlb: {w}\"")).field(new.field(suffix)));
        }
    }
    for suffix in ["ip-version", "resource-group-id"] {
        if let (Some(w), None) = (old.get(suffix), new.get(suffix)) {
            plan.push(
                Step::new(
                    Action::Keep,
                    format!("{suffix} stays \"{w}\""),
                    code!("controller/service/nlbv2/loadbalancer.go:186-197"),
                )
                .detail("removed, but the controller compares it only when set")
                .rule("plan-no-reset")
                .field(old.field(suffix)),
            );
        }
    }
    // Address type: converted in place (UpdateLoadBalancerAddressTypeConfig).
    let was = old
        .get("address-type")
        .or_else(|| lb_facts.and_then(|f| f.address_type).map(|a| a.as_str()))
        .or(old.reused.is_none().then_some("internet"));
    match (was, new.get("address-type")) {
        (Some(w), Some(n)) if !w.eq_ignore_ascii_case(n) => plan.push(
            Step::new(Action::Convert, lb.to_string(), code!("controller/service/nlbv2/loadbalancer.go:199-207"))
                .detail(format!("address-type goes from \"{w}\" to \"{n}\": the controller converts the NLB in place (UpdateLoadBalancerAddressTypeConfig) and its address changes; clients of the old address lose it"))
                .calls(&["UpdateLoadBalancerAddressTypeConfig"])
                .rule("plan-convert")
                .field(new.field("address-type")),
        ),
        (_, None) if old.get("address-type").is_some() => plan.push(
            Step::new(Action::Keep, format!("the address type stays \"{}\"", old.get("address-type").unwrap_or_default()), code!("controller/service/nlbv2/loadbalancer.go:199-207"))
                .detail("address-type is removed, but the controller compares it only when set (its empty value maps to nothing, model/nlb:21-29): the NLB keeps its address type")
                .rule("plan-no-reset")
                .field(old.field("address-type")),
        ),
        _ => {}
    }
    // Zones: a new or changed entry sends the annotation's whole list.
    let (zw, zn) = (zones(old.get("zone-maps")), zones(new.get("zone-maps")));
    let found = |l: &[&str; 4]| {
        zw.iter().any(|r| {
            l[0] == r[0]
                && l[1] == r[1]
                && (l[3].is_empty() || l[3] == r[3])
                && (l[2].is_empty() || l[2] == r[2])
        })
    };
    if !zw.is_empty() && !zn.is_empty() {
        if zn.iter().any(|l| !found(l)) {
            plan.push(
                Step::new(Action::Convert, lb.to_string(), code!("controller/service/nlbv2/loadbalancer.go:209-228"))
                    .detail(format!("zone-maps changes to \"{}\": the controller sends UpdateLoadBalancerZones with the annotation's whole list, so zones it does not name leave and the addresses in changed zones change", new.get("zone-maps").unwrap_or_default()))
                    .calls(&["UpdateLoadBalancerZones"])
                    .rule("plan-convert")
                    .field(new.field("zone-maps")),
            );
        } else if zn.len() < zw.len() {
            let gone: Vec<&str> = zw
                .iter()
                .filter(|r| !zn.iter().any(|l| l[0] == r[0]))
                .map(|r| r[0])
                .collect();
            plan.push(
                Step::new(Action::Keep, format!("zone {} stays on the NLB", gone.join(", ")), code!("controller/service/nlbv2/loadbalancer.go:209-228"))
                    .detail("zone-maps only lost entries: every zone it names is still on the NLB, so the controller makes no call and the removed zones stay")
                    .rule("plan-no-reset")
                    .field(new.field("zone-maps")),
            );
        }
    }
    empties(Some(old), new, lb, plan);
    if old.reused.is_none() {
        match (has_source_ranges(&old), has_source_ranges(&new)) {
            (false, true) => plan.push(
                Step::new(
                    Action::Create,
                    "security group k8s-nlb-a<the Service's uid>",
                    code!("controller/service/nlbv2/model_applier.go:502-528"),
                )
                .detail("for spec.loadBalancerSourceRanges")
                .calls(&["CreateSecurityGroup", "LoadBalancerJoinSecurityGroup"]),
            ),
            (true, false) => plan.push(
                Step::new(
                    Action::Delete,
                    "security group k8s-nlb-a<the Service's uid>",
                    code!("controller/service/nlbv2/model_applier.go:580-593"),
                )
                .detail("spec.loadBalancerSourceRanges is gone: the NLB accepts every client again")
                .calls(&["LoadBalancerLeaveSecurityGroup", "DeleteSecurityGroup"]),
            ),
            _ => {}
        }
    }
    tags_cleared(
        Some(old),
        new,
        lb,
        code!("controller/service/nlbv2/loadbalancer.go:307-336"),
        plan,
    );
}

/// Security groups and the bandwidth package (nlbv2/loadbalancer.go:60-66, 79-81).
fn empties(old: Option<Side>, new: Side, lb: &str, plan: &mut Plan) {
    present_or_empty(
        old,
        new,
        lb,
        "security-group-ids",
        "security groups",
        code!("controller/service/nlbv2/loadbalancer.go:230-261"),
        &["LoadBalancerLeaveSecurityGroup"],
        &[
            "LoadBalancerJoinSecurityGroup",
            "LoadBalancerLeaveSecurityGroup",
        ],
        "every security group of the NLB leaves it, except the one the controller made for loadBalancerSourceRanges",
        plan,
    );
    present_or_empty(
        old,
        new,
        lb,
        "bandwidth-package-id",
        "bandwidth package",
        code!("controller/service/nlbv2/loadbalancer.go:564-598"),
        &["DetachCommonBandwidthPackageFromLoadBalancer"],
        &[
            "DetachCommonBandwidthPackageFromLoadBalancer",
            "AttachCommonBandwidthPackageToLoadBalancer",
        ],
        "the NLB's bandwidth package is detached and none attached",
        plan,
    );
}

/// An annotation the NLB controller reads with `Has`: removed, nothing happens; present
/// but empty, it clears the NLB's; changed, it joins and leaves.
#[allow(clippy::too_many_arguments)]
fn present_or_empty(
    old: Option<Side>,
    new: Side,
    lb: &str,
    suffix: &str,
    what: &str,
    source: &'static str,
    clear: &[&'static str],
    change: &[&'static str],
    cleared: &str,
    plan: &mut Plan,
) {
    let (was, now) = (old.and_then(|o| o.has(suffix)), new.has(suffix));
    match (was, now) {
        (w, Some("")) if w != Some("") && (w.is_some() || new.reused.is_some()) => plan.push(
            Step::new(Action::Delete, format!("the {what} of {lb}"), source)
                .detail(format!("{} is present but empty, which the controller reads as \"none\": {cleared}; remove the annotation instead to leave them as they are", new.cat.key(suffix)))
                .calls(clear)
                .rule("plan-no-reset")
                .field(new.field(suffix)),
        ),
        (Some(w), None) if !w.is_empty() => plan.push(
            Step::new(Action::Keep, format!("the {what} stay"), source)
                .detail(format!("{} was \"{w}\" and is removed: the controller reads nothing then and leaves {w} attached; to detach, change the value", new.cat.key(suffix)))
                .rule("plan-no-reset")
                .field(old.map_or_else(String::new, |o| o.field(suffix))),
        ),
        (w, Some(n)) if w != Some(n) && !n.is_empty() && (old.is_some() || new.reused.is_some()) => plan.push(
            Step::new(Action::Update, lb.to_string(), source)
                .detail(format!("{suffix} becomes \"{n}\""))
                .calls(change),
        ),
        _ => {}
    }
}

/// Server groups: one per port (or the user's, by vgroup-port on a reused NLB); a type
/// change recreates a group and leaks the old one (nlbv2/model_applier.go:275-350).
fn groups(old: Option<Side>, new: &Side, wants: &[Want], before: &[Want], plan: &mut Plan) {
    fn kind<'a>(s: &Side<'a>) -> Option<&'a str> {
        s.get("server-group-type")
    }
    for w in wants {
        if let Some(id) = bound_group(new, w.port) {
            plan.push(
                Step::new(
                    Action::Update,
                    format!("server group {id}"),
                    code!("controller/service/nlbv2/server_groups.go:209-244"),
                )
                .detail(format!(
                    "yours (vgroup-port): this Service's backends for port {} are added to it",
                    w.port
                ))
                .calls(&["AddServersToServerGroup"]),
            );
        } else if !before.iter().any(|b| b.group == w.group) {
            plan.push(
                Step::new(
                    Action::Create,
                    format!("server group {}", w.group),
                    code!("controller/service/nlbv2/model_applier.go:333-346"),
                )
                .detail(format!(
                    "for port {}, type {}, with this Service's backends",
                    w.port,
                    kind(new).unwrap_or("<the API's default>")
                ))
                .calls(&["CreateServerGroup", "AddServersToServerGroup"]),
            );
        } else if let (Some(o), Some(n)) = (old, kind(new))
            && !kind(&o).unwrap_or("Instance").eq_ignore_ascii_case(n)
        {
            plan.push(
                Step::new(Action::Convert, format!("server group {}", w.group), code!("controller/service/nlbv2/model_applier.go:312-322"))
                    .detail(format!("server-group-type goes from \"{}\" to \"{n}\": the controller creates a second group of that name and type (nlbv2/model_applier.go:334-346), leaves the listener on the first (bound by name before the create, :436-447), then fails to delete the first while the listener uses it (:530-577); each retry that finds the first again creates one more; recreate the Service instead", kind(&o).unwrap_or("Instance (unset)")))
                    .calls(&["CreateServerGroup", "AddServersToServerGroup", "DeleteServerGroup"])
                    .rule("plan-convert")
                    .field(new.field("server-group-type")),
            );
        }
    }
}

/// The listeners: deletes first, then take overs, updates and creates. On an NLB the
/// controller created, every listener the Service does not name goes, whoever made it
/// (nlbv2/model_applier.go:449-473).
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
            code!("controller/service/nlbv2/model_applier.go:115-126"),
            ("NLB", "server groups"),
            plan,
        );
        return Vec::new();
    }
    let reused = new.reused.is_some();
    let haves: Vec<Have> = match (lb_facts, old) {
        (Some(_), _) => held(&new, lb_facts, true, false),
        (None, Some(o)) if was_managed => {
            if !reused {
                plan.basis.push(format!("the NLB's listeners are not known ({unknown}): listeners on it that this Service did not make are deleted too, and are not shown"));
            }
            held(&o, None, true, false)
        }
        (None, _) if reused => {
            plan.basis.push(format!("the reused NLB's listeners are not known ({unknown}): a listener already on one of the Service's ports with the same protocol is taken over"));
            Vec::new()
        }
        _ => Vec::new(),
    };
    for h in haves
        .iter()
        .filter(|h| (h.mine || !reused) && !wants.iter().any(|w| h.matches(w)))
    {
        let why = match wants.iter().find(|w| w.port == h.port) {
            Some(w) if h.range.is_none() => format!("port {} changes protocol to {}: the listener is deleted and a new one created", h.port, w.proto),
            _ if h.mine => format!("port {} is no longer in the Service", h.label()),
            _ => "the Service does not name it, and the NLB controller deletes every listener of an NLB it created that the Service does not name".to_string(),
        };
        plan.push(
            Step::new(
                Action::Delete,
                format!("listener {}", h.label()),
                code!("controller/service/nlbv2/model_applier.go:449-473"),
            )
            .detail(h.whose_detail(&why))
            .calls(&["DeleteListener"])
            .rule("plan-delete-listener")
            .field("spec.ports")
            .peer(h.peer()),
        );
    }
    let mut kept = Vec::new();
    let mut creates = Vec::new();
    for w in wants {
        match haves.iter().find(|h| h.matches(w)) {
            Some(h) if !h.mine => plan.push(
                Step::new(Action::TakeOver, format!("listener {} ({})", w.label(), h.whose()), code!("controller/service/nlbv2/model_applier.go:449-486"))
                    .detail(format!("with force-override-listeners: \"true\" the controller updates the existing {} listener to this Service's description and server group (nlbv2/listeners.go:364-375): its traffic comes to this Service's pods", w.label()))
                    .calls(&["UpdateListenerAttribute"])
                    .rule("plan-takeover")
                    .field("spec.ports")
                    .peer(h.peer()),
            ),
            Some(_) => kept.push(w.clone()),
            None => creates.push(w),
        }
    }
    for w in creates {
        plan.push(
            Step::new(
                Action::Create,
                format!("listener {}", w.label()),
                code!("controller/service/nlbv2/model_applier.go:488-496"),
            )
            .detail(format!(
                "forwarding to server group {}",
                bound_group(&new, w.port).unwrap_or(&w.group)
            ))
            .calls(&["CreateListener"]),
        );
    }
    kept
}
