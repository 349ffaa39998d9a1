//! Listener rules: which ports of a load balancer each Service takes, checked against the
//! other Services of the cluster (the cluster view, which also holds admitted-but-unwatched
//! reservations) and against the inventory's existing listeners. TCP, HTTP, HTTPS, TLS and
//! TCPSSL listeners share one port space; UDP has its own.
//!
//! ACK (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/): on a reused
//! load balancer without `force-override-listeners: "true"` the controller touches no listener
//! (clbv1/model_applier.go:99-112, nlbv2/model_applier.go:115-117: "listener override is
//! false, skip reconcile listeners"), so a listener the user made is expected; with it, a
//! same-port listener of the same protocol is taken over (clbv1/listeners.go:645-708) and one
//! of another protocol makes the create fail at the API. ACK's NLB controller refuses
//! overlapping listeners of one Service (nlbv2/listeners.go:650-682).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::inventory::reused;
use super::ports::listener_ports;
use crate::providers::catalog;
use crate::vocab::catalog::{Catalog, annotation_field};
pub use crate::vocab::checks::protocol_entries;
use crate::vocab::config::ProxyMode;
use crate::vocab::controller::Classes;
use crate::vocab::ctx::{Ctx, Findings, IngressUse, LbUser};
use crate::vocab::lb::{Family, protocol_family};
use crate::vocab::provider::Provider;
use crate::vocab::route::Scope;
use crate::vocab::rule::{Rule, Vap, rule};
use crate::vocab::service::Svc;

pub const PORT_PROVIDERS: &[Provider] = &[Provider::Ctyun, Provider::Alibaba, Provider::Huawei];
const HUAWEI: &[Provider] = &[Provider::Huawei];

pub static RULES: &[Rule] = &[
    rule!(
        "listener-port-unique",
        PORT_PROVIDERS,
        ClusterInventory,
        Admit,
        Deny,
        "No two Services, and no Service and an existing listener it cannot use, share one listener port of a load balancer (TCP family and UDP apart; ACK: a user's listener is expected without force-override, taken over with it; NLB port ranges may not overlap)",
        "000/001 \"多个Service不能共用同一个负载均衡实例上的同一个监听端口\"; 000 \"不能使用负载均衡监听器已有端口\"; 001's force-override table; kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/model_applier.go:99-112, nlbv2/model_applier.go:115-117, clbv1/listeners.go:645-708, nlbv2/listeners.go:650-682",
        listener_port_unique,
        Vap::No("reads the cluster view and the load balancer inventory")
    ),
    rule!(
        "listener-quota",
        &[Provider::Ctyun, Provider::Alibaba],
        ClusterInventory,
        Admit,
        Deny,
        "Listeners on one load balancer (the existing ones and those the cloud controller will create for Services' ports) stay within quotas.listenersPerLoadBalancer (default 50)",
        "000, 001 \"默认情况下一个实例可以添加50个监听\"",
        listener_quota,
        Vap::No("reads the cluster view and the load balancer inventory")
    ),
    rule!(
        "shared-listener-mixed-management",
        HUAWEI,
        Cluster,
        Admit,
        Deny,
        "A managed-listener Service and a skip-managed-listener Service may not share a port of one ELB",
        "003 \"若一个由CCE托管监听器的Service与一个取消监听器托管的Service共享同一监听器...监听器会被级联删除\"",
        shared_listener_mixed_management,
        Vap::No("reads the cluster view (other Services, Nodes or Ingresses)")
    ),
    rule!(
        "shared-listener-needs-l7",
        HUAWEI,
        Cluster,
        Admit,
        Warn,
        "Several skip-managed-listener Services on one ELB port only work with HTTP/HTTPS listeners",
        "003 \"网络型...一个监听器只能绑定一个后端云服务器组\"",
        shared_listener_needs_l7,
        Vap::No("reads the cluster view (other Services, Nodes or Ingresses)")
    ),
    rule!(
        "pass-through-consistent",
        HUAWEI,
        Cluster,
        Admit,
        Deny,
        "In IPVS mode all Services on one ELB have the same elb.pass-through setting",
        "002",
        pass_through_consistent,
        Vap::No("reads the cluster view (other Services, Nodes or Ingresses)")
    ),
    rule!(
        "ipvs-node-external-ip",
        HUAWEI,
        Cluster,
        Admit,
        Deny,
        "In IPVS mode spec.externalIPs may not contain a node's IP",
        "002 \"不支持配置節點的IP作為Service的externalIP，會導致節點不可用\"",
        ipvs_node_external_ip,
        Vap::No("reads the cluster view (other Services, Nodes or Ingresses)")
    ),
    rule!(
        "ingress-shares-elb",
        HUAWEI,
        Cluster,
        Admit,
        Warn,
        "In IPVS mode an Ingress and a Service on one ELB make the Ingress unreachable in-cluster; an HTTP Service and an Ingress on one ELB port are denied",
        "002 \"請勿將Ingress與使用HTTP的Service對接同一個ELB下的同一個監聽器，否則將產生端口沖突\"",
        ingress_shares_elb,
        Vap::No("reads the cluster view (other Services, Nodes or Ingresses)")
    ),
];

/// Every load balancer a Service uses, one entry per provider whose id it carries and one
/// of whose controllers takes it.
pub fn lb_uses(scope: &Scope, svc: Svc) -> Vec<(Provider, String, LbUser)> {
    uses_of(scope.providers(), &scope.classes, svc)
}

fn uses_of(providers: &[Provider], classes: &Classes, svc: Svc) -> Vec<(Provider, String, LbUser)> {
    let meta = &svc.0.metadata;
    let namespace: Arc<str> = meta.namespace.as_deref().unwrap_or("default").into();
    let name: Arc<str> = meta.name.as_deref().unwrap_or_default().into();
    providers
        .iter()
        .filter_map(|p| {
            let cat = catalog(*p);
            let id = cat.get(svc, "id")?;
            crate::vocab::route::controller(*p, svc, classes)?;
            Some((
                *p,
                id.value.to_string(),
                LbUser {
                    namespace: Arc::clone(&namespace),
                    name: Arc::clone(&name),
                    ports: listener_ports(cat, svc),
                    skip_listener: skips_listeners(cat, svc),
                    makes_listeners: makes_listeners(cat, svc),
                    pass_through: (*p == Provider::Huawei)
                        .then(|| cat.get(svc, "pass-through").map(|a| a.value.to_string()))
                        .flatten(),
                    reserved_until: None,
                },
            ))
        })
        .collect()
}

/// Whether the controller creates listeners for the Service's ports on the load balancer its
/// id annotation names. ACK leaves a reused load balancer's listeners alone without
/// `force-override-listeners: "true"`, exactly (clbv1/model_applier.go:99-112,
/// nlbv2/model_applier.go:115-117; annotations.go:270-272).
pub fn makes_listeners(cat: &Catalog, svc: Svc) -> bool {
    cat.provider != Provider::Alibaba
        || cat
            .get(svc, "force-override-listeners")
            .is_some_and(|a| a.value == "true")
}

/// Huawei Services that do not manage listeners share them on purpose.
pub fn skips_listeners(cat: &Catalog, svc: Svc) -> bool {
    cat.provider == Provider::Huawei
        && cat
            .get(svc, "skip-managed-listener")
            .is_some_and(|a| a.value == "true")
}

/// The ports two users of one load balancer both take, as "port 443/TCP".
pub fn port_clashes(a: &LbUser, b: &LbUser) -> Vec<String> {
    if a.skip_listener && b.skip_listener {
        return vec![];
    }
    a.ports
        .iter()
        .filter(|(p, f, _)| b.ports.iter().any(|(q, g, _)| p == q && f == g))
        .map(|(p, f, _)| format!("port {p}/{}", f.as_str()))
        .collect()
}

/// This request's own use of the load balancer, and the other users of it.
fn me_and_others(ctx: &Ctx, cat: &'static Catalog) -> Option<(String, LbUser, Vec<LbUser>)> {
    let new = ctx.new?;
    let (_, id, me) = uses_of(
        std::slice::from_ref(&cat.provider),
        &ctx.config.load_balancer_classes,
        new,
    )
    .into_iter()
    .next()?;
    let mut users = Vec::new();
    ctx.cluster.lb_users(cat.provider, &id, &mut users);
    // A Service never conflicts with itself (its old version, or its own reservation).
    let input = ctx.input;
    users.retain(|u| !(*u.namespace == *input.namespace && *u.name == *input.name));
    Some((id, me, users))
}

fn listener_port_unique(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if skips_listeners(cat, new) {
        return;
    }
    inventory_ports(ctx, cat, new, out);
    if ctx.is_nlb(cat.provider) {
        nlb_overlaps(cat, new, out);
    }
    let Some((id, me, others)) = me_and_others(ctx, cat) else {
        return;
    };
    for other in others.iter().filter(|o| !o.skip_listener) {
        for clash in port_clashes(&me, other) {
            out.push_peer(
                "spec.ports",
                format!("{clash} on load balancer \"{id}\" is already taken by Service {}{}; two Services cannot share one listener port; use another port or another load balancer",
                    other.key(), if other.reserved_until.is_some() { " (admitted moments ago)" } else { "" }),
                other.key(),
            );
        }
    }
}

/// Ports the Service already had on this load balancer before the update. The CCM made
/// their listeners for it, so they are its own even when the inventory cannot say whose a
/// listener is (the cloud source: most CCMs' listener names carry no namespace).
fn held_before(ctx: &Ctx, cat: &Catalog, id: &str) -> BTreeSet<(i32, Family)> {
    match ctx.old {
        Some(old)
            if old.is_lb()
                && ctx.input.operation == crate::vocab::input::Operation::Update
                && cat.get(old, "id").is_some_and(|a| a.value == id) =>
        {
            listener_ports(cat, old)
                .into_iter()
                .map(|(p, f, _)| (p, f))
                .collect()
        }
        _ => BTreeSet::new(),
    }
}

/// The inventory part: ports on which the load balancer already has someone else's listener.
fn inventory_ports(ctx: &Ctx, cat: &'static Catalog, new: Svc, out: &mut Findings) {
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let me = new.namespaced_name();
    let held = held_before(ctx, cat, id.value);
    let alibaba = cat.provider == Provider::Alibaba;
    // ACK reads exactly "true" (annotations.go:270-272).
    let overrides = alibaba
        && cat
            .get(new, "force-override-listeners")
            .is_some_and(|a| a.value == "true");
    let bound = |port: i32| {
        cat.get(new, "vgroup-port").is_some_and(|a| {
            a.value
                .split(',')
                .any(|e| e.split(':').nth(1) == Some(port.to_string().as_str()))
        })
    };
    for (port, family, proto) in listener_ports(cat, new) {
        let taken = lb.listeners.iter().find(|l| {
            i32::from(l.port) == port
                && protocol_family(&l.protocol) == Some(family)
                && l.owner != me
                && !held.contains(&(port, family))
        });
        let Some(l) = taken else { continue };
        let theirs = l.protocol.to_ascii_uppercase();
        let what = format!(
            "port {port}/{} is already a {theirs} listener on load balancer \"{}\" owned by {}",
            family.as_str(),
            id.value,
            l.owner
        );
        let users = l.owner == "external";
        if !alibaba && users {
            out.push("spec.ports", format!("{what}; use another port"));
        } else if !alibaba {
            // A Service's listener: an exception covers this only if it names that Service too.
            out.push_peer(
                "spec.ports",
                format!("{what}; use another port"),
                l.owner.clone(),
            );
        } else if !users {
            out.push_peer(
                "spec.ports",
                format!("{what}; two Services cannot share one listener port; use another port or another load balancer"),
                l.owner.clone(),
            );
        } else if !overrides {
            // The controller leaves the user's listeners alone: the user runs them.
            if !bound(port) {
                out.advise(
                    "spec.ports",
                    format!("{what}: without {}: \"true\" the cloud controller leaves it as it is and creates no listener of its own, so it keeps forwarding where you pointed it; bind port {port} to a server group with {} if this Service's pods should serve it", cat.key("force-override-listeners"), cat.key("vgroup-port")),
                );
            }
        } else if theirs == proto {
            // Taken over: `plan-takeover` says so, with the owner.
        } else {
            out.push(
                "spec.ports",
                format!("{what}; with force-override-listeners: \"true\" the cloud controller creates a {proto} listener on the same port, which the cloud's API refuses (one listener per port); use another port, or delete or change the {theirs} listener first"),
            );
        }
    }
}

/// ACK NLB: one Service's listeners, ports and port ranges, may not overlap within one
/// protocol (nlbv2/listeners.go:650-682: "port of listener [%s] overlaps with listener [%s]").
fn nlb_overlaps(cat: &Catalog, new: Svc, out: &mut Findings) {
    let mapped = cat.get(new, "protocol-port").map(|a| a.value);
    let ranges = cat.get(new, "listener-port-range").map(|a| a.value);
    let mut listeners: Vec<(String, i64, i64, String)> = Vec::new();
    for p in new.ports() {
        // The first entry naming the port, as nlbListenerProtocol and portRange read them.
        let entry = |v: Option<&str>| {
            v.and_then(|v| crate::vocab::checks::first_naming_port(v, p.port))
                .map(str::to_string)
        };
        let proto = entry(mapped)
            .unwrap_or_else(|| p.protocol.clone().unwrap_or_else(|| "TCP".into()))
            .to_ascii_uppercase();
        let (start, end, shown) = match entry(ranges).and_then(|r| {
            let (s, e) = r.split_once('-')?;
            Some((
                crate::vocab::go::atoi(s).ok()?,
                crate::vocab::go::atoi(e).ok()?,
            ))
        }) {
            Some((s, e)) => (s, e, format!("{s}-{e}")),
            None => (i64::from(p.port), i64::from(p.port), p.port.to_string()),
        };
        listeners.push((proto, start, end, shown));
    }
    for (i, a) in listeners.iter().enumerate() {
        for b in &listeners[..i] {
            if a.0 == b.0 && a.1 <= b.2 && b.1 <= a.2 {
                out.push(
                    "spec.ports",
                    format!("{} listener {} overlaps {} listener {} of the same Service; the NLB controller fails on every resync with \"port of listener [{}] overlaps with listener [{}]\"; give each port (or range) its own numbers", a.0, a.3, b.0, b.3, b.3, a.3),
                );
            }
        }
    }
}

fn listener_quota(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    // The Service adds no listener the controller will not create.
    if !makes_listeners(cat, new) {
        return;
    }
    let Some((id, me, others)) = me_and_others(ctx, cat) else {
        return;
    };
    let mine = new.namespaced_name();
    let mut listeners: BTreeSet<(i32, Family)> =
        me.ports.iter().map(|(p, f, _)| (*p, *f)).collect();
    // Only the Services the controller makes listeners for (ACK: not those that reuse the
    // load balancer without force-override) and the listeners that exist.
    let makers: Vec<&LbUser> = others.iter().filter(|o| o.makes_listeners).collect();
    for o in &makers {
        listeners.extend(o.ports.iter().map(|(p, f, _)| (*p, *f)));
    }
    if let Some((lb_id, lb)) = reused(ctx, cat, &mut Findings::new()) {
        let held = held_before(ctx, cat, lb_id.value);
        listeners.extend(
            lb.listeners
                .iter()
                .filter(|l| l.owner != mine)
                .filter_map(|l| Some((i32::from(l.port), protocol_family(&l.protocol)?)))
                .filter(|p| !held.contains(p)),
        );
    }
    let quota = ctx.config.quotas.listeners_per_load_balancer as usize;
    if listeners.len() > quota {
        out.push(
            "spec.ports",
            format!("load balancer \"{id}\" would have {} listeners (existing listeners and those the cloud controller creates for {} other Service(s) included), over the quota of {quota} (quotas.listenersPerLoadBalancer); remove ports, use another load balancer, or raise the quota with the provider first", listeners.len(), makers.len()),
        );
    }
}

fn shared_listener_mixed_management(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, me, others)) = me_and_others(ctx, cat) else {
        return;
    };
    for o in others
        .iter()
        .filter(|o| o.skip_listener != me.skip_listener)
    {
        let mut both = me.clone();
        both.skip_listener = false;
        for clash in port_clashes(&both, o) {
            let (managed, unmanaged) = if me.skip_listener {
                (o.key(), "this Service".to_string())
            } else {
                ("this Service".to_string(), o.key())
            };
            out.push(
                "spec.ports",
                format!("{clash} of ELB \"{id}\" would be shared by {managed} (listener managed by CCE) and {unmanaged} (skip-managed-listener): deleting the managed one deletes the shared listener; use listeners created on the ELB side for skip-managed-listener Services, or another port"),
            );
        }
    }
}

fn shared_listener_needs_l7(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, me, others)) = me_and_others(ctx, cat) else {
        return;
    };
    if !me.skip_listener {
        return;
    }
    let l7 = |proto: &str| proto == "HTTP" || proto == "HTTPS";
    for o in others.iter().filter(|o| o.skip_listener) {
        for (port, family, proto) in &me.ports {
            let shared = o.ports.iter().find(|(p, f, _)| p == port && f == family);
            if let Some((_, _, theirs)) = shared
                && !(l7(proto) && l7(theirs))
            {
                out.push(
                    annotation_field(&cat.key("protocol-port")),
                    format!("port {port} of ELB \"{id}\" is shared with skip-managed-listener Service {} over {proto}/{theirs}: a TCP/UDP listener binds one backend server group, so only one Service gets traffic; use http/https in {} to share a listener", o.key(), cat.key("protocol-port")),
                );
            }
        }
    }
}

fn pass_through_consistent(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    if ctx.config.cluster.proxy_mode != ProxyMode::Ipvs {
        return;
    }
    let Some((id, me, others)) = me_and_others(ctx, cat) else {
        return;
    };
    let on = |v: &Option<String>| v.as_deref() == Some("true");
    let differ: Vec<String> = others
        .iter()
        .filter(|o| on(&o.pass_through) != on(&me.pass_through))
        .map(|o| o.key())
        .collect();
    if !differ.is_empty() {
        let key = cat.key("pass-through");
        out.push(
            annotation_field(&key),
            format!("in IPVS mode every Service on ELB \"{id}\" needs the same {key}; this Service has {} but {} {}; give them all the same setting",
                if on(&me.pass_through) { "\"true\"" } else { "it off" },
                differ.join(", "),
                if on(&me.pass_through) { "have it off" } else { "have \"true\"" }),
        );
    }
}

fn ipvs_node_external_ip(ctx: &Ctx, _cat: &'static Catalog, out: &mut Findings) {
    if ctx.config.cluster.proxy_mode != ProxyMode::Ipvs {
        return;
    }
    let Some(new) = ctx.new else { return };
    for ip in new.external_ips() {
        if let Some(node) = ctx.cluster.node_with_ip(ip) {
            out.push(
                "spec.externalIPs",
                format!("spec.externalIPs contains {ip}, the address of node {node}: in IPVS mode that makes the node unreachable; remove it"),
            );
        }
    }
}

fn ingress_shares_elb(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, me, _)) = me_and_others(ctx, cat) else {
        return;
    };
    let mut ingresses: Vec<IngressUse> = Vec::new();
    ctx.cluster.ingresses_on(&id, &mut ingresses);
    let ipvs = ctx.config.cluster.proxy_mode == ProxyMode::Ipvs;
    for ing in &ingresses {
        let clash = me
            .ports
            .iter()
            .find(|(p, _, proto)| (*proto == "HTTP" || *proto == "HTTPS") && ing.ports.contains(p));
        if let Some((port, _, proto)) = clash {
            out.push_deny(
                "spec.ports",
                format!("{proto} port {port} of ELB \"{id}\" is also the listener of Ingress {}/{}: an Ingress and an HTTP Service cannot share one ELB listener; use another port or ELB", ing.namespace, ing.name),
            );
        } else if ipvs {
            out.push(
                annotation_field(&cat.key("id")),
                format!("ELB \"{id}\" is also used by Ingress {}/{}: in IPVS mode the Ingress becomes unreachable from inside the cluster; use separate ELBs", ing.namespace, ing.name),
            );
        }
    }
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
