//! What ACK's controllers compare between a Service and the load balancer it reuses, on
//! every reconcile that changes the Service (`lb-attributes-immutable`, with the inventory's
//! facts). Sources, kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/:
//! CLB clbv1/loadbalancer.go:127-154 (each set annotation against the live load balancer,
//! case-sensitive; ip-version always, an absent one read as ipv4, :369-378) and
//! clbv1/model_applier.go:497-523 (the Service's status must name the load balancer's IP);
//! NLB nlbv2/loadbalancer.go:187-197 (ip-version and resource group, any case) and
//! nlbv2/model_applier.go:599-618 (the status must name the NLB's DNS name). Address type and
//! zones are `address-type-match`'s and the NLB changes them in place.

use super::inventory::reused;
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings};

pub fn compared_with_the_live_lb(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    // Unknown load balancers are reported once, by the inventory rules.
    let Some((id, lb)) = reused(ctx, cat, &mut Findings::new()) else {
        return;
    };
    let nlb = ctx.is_nlb(cat.provider);
    let set = |suffix: &str| cat.get(new, suffix).filter(|a| !a.value.is_empty());
    let mut differs = |suffix: &str, live: Option<&str>, default: Option<&str>, error: &str| {
        let wanted = set(suffix).map(|a| a.value).or(default);
        let (Some(wanted), Some(live)) = (wanted, live) else {
            return;
        };
        let same = if nlb {
            wanted.eq_ignore_ascii_case(live)
        } else {
            wanted == live
        };
        if !same {
            let how = match set(suffix) {
                Some(a) => format!("{}: \"{}\"", a.key, a.value),
                None => format!("no {} (read as \"{wanted}\")", cat.key(suffix)),
            };
            out.push_inventory(
                annotation_field(&cat.key(suffix)),
                format!("load balancer \"{}\" has {suffix} \"{live}\" but the Service asks for \"{wanted}\" ({how}); the cloud controller fails on every resync with \"{error}\"; set {}: \"{live}\", or reuse another load balancer", id.value, cat.key(suffix)),
            );
        }
    };
    // The attributes the controller fixes at creation, compared with the live ones instead
    // (address type is `address-type-match`'s; NLB reads an absent ip-version as no wish).
    for f in super::fixed::ALIBABA_FIXED {
        let error = if nlb { f.nlb } else { f.clb };
        let live = match f.suffix {
            "master-zoneid" => &lb.master_zone_id,
            "slave-zoneid" => &lb.slave_zone_id,
            "ip-version" => &lb.ip_version,
            "resource-group-id" => &lb.resource_group_id,
            "network-type" => &lb.network_type,
            "ip" => &lb.address,
            _ => continue,
        };
        if let Some(error) = error {
            differs(f.suffix, live.as_deref(), f.default.filter(|_| !nlb), error);
        }
    }
    status_names_the_lb(ctx, cat, id.value, lb.address.as_deref(), nlb, out);
}

/// A Service whose status already names another address is bound elsewhere: the controller
/// refuses to bind it to this load balancer (unless the CLB Service shows an EIP).
fn status_names_the_lb(
    ctx: &Ctx,
    cat: &Catalog,
    id: &str,
    address: Option<&str>,
    nlb: bool,
    out: &mut Findings,
) {
    let (Some(new), Some(address)) = (ctx.new, address) else {
        return;
    };
    let ingress = new
        .0
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_deref())
        .unwrap_or_default();
    if ingress.is_empty() {
        return;
    }
    let host = |i: &k8s_openapi::api::core::v1::LoadBalancerIngress| {
        i.hostname.clone().unwrap_or_default()
    };
    let ip = |i: &k8s_openapi::api::core::v1::LoadBalancerIngress| i.ip.clone().unwrap_or_default();
    let (bound, error) = if nlb {
        (
            ingress.iter().any(|i| host(i) == address),
            format!(
                "the loadbalancer {id} can not be reused, service has been associated with dnsname [{}], cannot be bound to dnsname [{address}]",
                host(&ingress[0])
            ),
        )
    } else {
        if cat
            .get(new, "external-ip-type")
            .is_some_and(|a| a.value == "eip")
        {
            return;
        }
        (
            ingress
                .iter()
                .any(|i| ip(i) == address || (!host(i).is_empty() && ip(i).is_empty())),
            format!(
                "service has been associated with ip [{}], cannot be bound to ip [{address}]",
                ip(&ingress[0])
            ),
        )
    };
    if !bound {
        out.push_inventory(
            "status.loadBalancer.ingress",
            format!("the Service's status names another load balancer than \"{id}\" ({address}); the cloud controller fails with \"{error}\"; a Service cannot move to another load balancer: delete and recreate it"),
        );
    }
}

#[cfg(test)]
#[path = "reuse_tests.rs"]
mod tests;
