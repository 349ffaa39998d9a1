//! Rules that need facts about the load balancer itself, from the inventory. A Service
//! whose load balancer is not in the inventory gets one "unknown" report, whose action is
//! `inventory.unknownLoadBalancer`. Without an inventory configured these rules are silent.

use super::ports::listener_ports;
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings, Lookup};
use crate::vocab::lb::{AddressType, CreatedBy, LbKind, LoadBalancer};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{Rule, Vap, rule};

const CTYUN_ALIBABA: &[Provider] = &[Provider::Ctyun, Provider::Alibaba];
const PORT_PROVIDERS: &[Provider] = &[Provider::Ctyun, Provider::Alibaba, Provider::Huawei];

pub static RULES: &[Rule] = &[
    rule!(
        "lb-exists",
        &Provider::ALL,
        Inventory,
        Admit,
        Deny,
        "The LB id names a load balancer that exists in the cluster's region: the cloud's API answered \"not found\" (with the cloud source; a file inventory cannot tell)",
        "000, 001, 004: reuse is of an existing instance \"您通过负载均衡控制台手动创建的实例\"; 002 \"kubernetes.io/elb.id ... ID of a load balancer\"",
        lb_exists,
        Vap::No("reads the cloud's load balancer API")
    ),
    rule!(
        "address-type-match",
        CTYUN_ALIBABA,
        Inventory,
        Admit,
        Deny,
        "A reused load balancer's address type equals the Service's (annotation, or the provider default: intranet on CTyun, internet on Alibaba; ACK NLB converts it in place: a warning)",
        "000 \"所复用实例的地址类型必须与Service的访问类型严格一致\"; 001 (same). Reading: ACK's CLB controller compares only a set annotation (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/loadbalancer.go:136-139), so without one it serves an intranet load balancer to a Service that asked for nothing; lbguard follows 001 there (the default is internet) and the mutating webhook sets the load balancer's type; nlbv2/loadbalancer.go:200-206 converts an NLB in place",
        address_type_match,
        Vap::No("reads the load balancer inventory")
    ),
    rule!(
        "reuse-user-created-only",
        &Provider::ALL,
        Inventory,
        Admit,
        Deny,
        "Only load balancers created by the user may be reused, not ones made by the CCM, for the API server or an ingress",
        "000, 001, 004 \"仅支持复用用户手工创建的\"; 002",
        reuse_user_created_only,
        Vap::No("reads the load balancer inventory")
    ),
    rule!(
        "reuse-same-vpc",
        PORT_PROVIDERS,
        Inventory,
        Admit,
        Deny,
        "A reused private load balancer is in the cluster's VPC (cluster.vpcId); Alibaba allows another VPC for NLB only",
        "000 \"跨VPC复用暂不支持\"; 001 \"跨VPC复用仅适用于NLB实例\"; 002 \"僅支持與集群在同一個VPC下的ELB實例\"",
        reuse_same_vpc,
        Vap::No("reads the load balancer inventory")
    ),
    rule!(
        "cross-cluster-name-clash",
        &[Provider::Alibaba],
        Inventory,
        Admit,
        Deny,
        "A load balancer shared across clusters is not already used by the same namespace/name from another cluster",
        "001 \"需要确保两个集群的命名空间和Service组合名称不一致\"",
        cross_cluster_name_clash,
        Vap::No("reads the load balancer inventory")
    ),
    rule!(
        "elb-flavor-supports-protocol",
        &[Provider::Huawei],
        Inventory,
        Admit,
        Deny,
        "An existing dedicated ELB used with http/https has both an L4 and an L7 flavor",
        "002 \"對接已有的獨享型ELB實例，需要獨享型ELB實例同時支持4層和7層的flavor\"",
        elb_flavor_supports_protocol,
        Vap::No("reads the load balancer inventory")
    ),
];

/// The load balancer a Service reuses, as the inventory knows it. Reports an unknown load
/// balancer (once per request, deduplicated by the engine) and returns `None` then.
pub fn reused<'a>(
    ctx: &Ctx<'a>,
    cat: &'static Catalog,
    out: &mut Findings,
) -> Option<(Annot<'a>, &'a LoadBalancer)> {
    if !ctx.inventory.configured() {
        return None;
    }
    let id = cat.get(ctx.new?, "id")?;
    match ctx.inventory.lookup(cat.provider, id.value) {
        Lookup::Found(lb) => Some((id, lb)),
        // lb-exists reports it; nothing else can be said of a load balancer that is not there.
        Lookup::NotFound { .. } | Lookup::Invalid => None,
        Lookup::Unavailable(cause) => {
            out.unavailable(
                annotation_field(id.key),
                format!("lbguard could not read load balancer \"{}\" ({}) from the {} API: {cause}; retry, or add it to the inventory file", id.value, id.key, cat.provider),
            );
            None
        }
        Lookup::Unknown => {
            out.unknown(
                annotation_field(id.key),
                format!("load balancer \"{}\" ({}) is not in the load balancer inventory, so lbguard cannot check it; add it to the inventory file or turn on inventory.cloud", id.value, id.key),
            );
            None
        }
    }
}

/// Reading: only a request that binds the Service to the id is checked (a create, a new
/// LoadBalancer, a changed id). A load balancer deleted at the cloud under a running Service
/// does not block that Service's updates: the CCM reports it, and blocking would keep the
/// user from pointing the Service elsewhere or removing the annotation.
fn lb_exists(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(id) = cat.get(new, "id") else { return };
    if !takes_lb(ctx, cat) {
        return;
    }
    match ctx.inventory.lookup(cat.provider, id.value) {
        Lookup::NotFound { region } => out.push(
            annotation_field(id.key),
            format!("{}: \"{}\" names no load balancer in region {region}: the {} API answered \"not found\"; check the id (and the region), or remove the annotation to let the CCM create one", id.key, id.value, cat.provider),
        ),
        Lookup::Invalid => out.push(
            annotation_field(id.key),
            format!("{}: \"{}\" is not a valid load balancer id: {} ids are letters, digits, '-', '_' and '.' (at most 128); copy the id from the console", id.key, id.value, cat.provider),
        ),
        _ => {}
    }
}

/// True when this request binds the Service to its load balancer: a create, a Service that
/// becomes a LoadBalancer, or a changed id (which lb-id-immutable denies anyway).
fn takes_lb(ctx: &Ctx, cat: &Catalog) -> bool {
    match ctx
        .old
        .filter(|o| o.is_lb() && ctx.input.operation == crate::vocab::input::Operation::Update)
    {
        None => true,
        Some(old) => {
            cat.get(old, "id").map(|a| a.value)
                != ctx.new.and_then(|n| cat.get(n, "id")).map(|a| a.value)
        }
    }
}

fn address_type_match(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let Some(actual) = lb.address_type else {
        return;
    };
    let Some(new) = ctx.new else { return };
    // ACK reads an empty value as unset.
    let set = cat
        .get(new, "address-type")
        .filter(|a| !(cat.provider == Provider::Alibaba && a.value.is_empty()));
    let (wanted, how) = match set {
        Some(a) => (a.value, format!("{}: \"{}\"", a.key, a.value)),
        None => (
            cat.default_address_type.unwrap_or("internet"),
            format!(
                "no {} (the {} default is \"{}\")",
                cat.key("address-type"),
                cat.provider,
                cat.default_address_type.unwrap_or("internet")
            ),
        ),
    };
    if ctx.is_nlb(cat.provider) {
        // ACK's NLB controller converts a reused NLB's address type in place
        // (nlbv2/loadbalancer.go:200-206, any case).
        if !wanted.eq_ignore_ascii_case(actual.as_str()) {
            out.advise(
                annotation_field(&cat.key("address-type")),
                format!("NLB \"{}\" is {} but the Service asks for {wanted} ({how}): the NLB controller converts the NLB's address type in place, so its address changes for every Service on it; set {}: \"{}\" to keep it", id.value, actual.as_str(), cat.key("address-type"), actual.as_str()),
            );
        }
        return;
    }
    if wanted != actual.as_str() {
        out.push(
            annotation_field(&cat.key("address-type")),
            format!("load balancer \"{}\" is {} but the Service asks for {wanted} ({how}); set {}: \"{}\" or reuse a load balancer whose address type is {wanted}", id.value, actual.as_str(), cat.key("address-type"), actual.as_str()),
        );
    }
}

fn reuse_user_created_only(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    if !takes_lb(ctx, cat) {
        return;
    }
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let Some(by) = lb.created_by.filter(|b| *b != CreatedBy::User) else {
        return;
    };
    let what = match by {
        CreatedBy::Ccm => {
            "created by the cloud controller for another Service (it is deleted with that Service)"
        }
        CreatedBy::Apiserver => "managed for the cluster's API server",
        CreatedBy::Ingress => "managed by an ingress controller",
        CreatedBy::User => return,
    };
    out.push(
        annotation_field(id.key),
        format!("load balancer \"{}\" cannot be reused: it was {what} (createdBy: {}); only load balancers created by you in the console can be reused; create one, or remove {} to let the cloud controller create one", id.value, by.as_str(), id.key),
    );
}

fn reuse_same_vpc(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let private = lb.address_type == Some(AddressType::Intranet);
    // CCE's ELBs must share the cluster's VPC whatever their address type.
    if !private && cat.provider != Provider::Huawei {
        return;
    }
    if cat.provider == Provider::Alibaba && lb.kind == Some(LbKind::Nlb) {
        return;
    }
    let Some(lb_vpc) = &lb.vpc_id else { return };
    match &ctx.config.cluster.vpc_id {
        None => out.advise(
            annotation_field(id.key),
            format!("cannot tell whether load balancer \"{}\" (VPC {lb_vpc}) is in the cluster's VPC: set cluster.vpcId", id.value),
        ),
        Some(vpc) if vpc != lb_vpc => out.push(
            annotation_field(id.key),
            format!("load balancer \"{}\" is in VPC {lb_vpc}, not the cluster's VPC {vpc}; a private load balancer can only be reused in its own VPC{}; use one in {vpc}", id.value,
                if cat.provider == Provider::Alibaba { " (Alibaba allows other VPCs for NLB only)" } else { "" }),
        ),
        Some(_) => {}
    }
}

fn cross_cluster_name_clash(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let (ns, name) = (&ctx.input.namespace, &ctx.input.name);
    if let Some(a) = lb
        .attached_from
        .iter()
        .find(|a| a.namespace == *ns && a.name == *name)
    {
        out.push(
            annotation_field(id.key),
            format!("load balancer \"{}\" is already used by Service {ns}/{name} of cluster {}; Services of different clusters sharing a load balancer need different namespace/name pairs; rename this Service or use another namespace", id.value, a.cluster),
        );
    }
}

fn elb_flavor_supports_protocol(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let layer7 = listener_ports(cat, new)
        .iter()
        .any(|(_, _, p)| *p == "HTTP" || *p == "HTTPS");
    if !layer7 {
        return;
    }
    let Some((id, lb)) = reused(ctx, cat, out) else {
        return;
    };
    let dedicated = lb.kind == Some(LbKind::ElbDedicated)
        || cat
            .get(new, "class")
            .is_some_and(|c| c.value == "performance");
    if !dedicated {
        return;
    }
    let has = |f: &str| lb.flavors.iter().any(|x| x.eq_ignore_ascii_case(f));
    if lb.flavors.is_empty() {
        out.advise(
            annotation_field(id.key),
            format!("cannot tell whether dedicated ELB \"{}\" has an L7 flavor: the inventory lists no flavors for it", id.value),
        );
    } else if !(has("l4") && has("l7")) {
        out.push(
            annotation_field(&cat.key("protocol-port")),
            format!("dedicated ELB \"{}\" has flavors [{}] but http/https listeners need both an L4 and an L7 flavor; add an L7 flavor to the ELB, or use tcp/udp", id.value, lb.flavors.join(", ")),
        );
    }
}

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;
