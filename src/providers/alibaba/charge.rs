//! `annotation-format` on an existing ACK CLB, with the inventory's live charge type
//! (`chargeType`): what the CLB controller sends for `instance-charge-type` and `spec` depends
//! on it, and the CLB API refuses some of it. Sources,
//! kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/
//! loadbalancer.go:157 (every update of a reused or created CLB), :451-491
//! (updateInstanceChargeTypeAndInstanceSpec: a set `instance-charge-type` that differs, exactly,
//! from the live one is sent through ModifyLoadBalancerInstanceChargeType, with the spec when
//! it reads as PayBySpec; an absent one keeps the live type, and a pay-by-spec CLB gets a
//! changed `spec` through ModifyLoadBalancerInstanceSpec), pkg/model/load_balancer.go:37-43
//! (PayBySpec in any case). The CLB API reference, ModifyLoadBalancerInstanceChargeType
//! (https://www.alibabacloud.com/help/en/slb/classic-load-balancer/developer-reference/api-slb-2014-05-15-modifyloadbalancerinstancechargetype):
//! "you can only change the metering method from pay-by-specification to pay-by-LCU. You
//! cannot change the metering method from pay-by-LCU to pay-by-specification", and
//! InstanceChargeType "Valid value: PayByCLCU". The specs are the `LoadBalancerSpec` row of
//! data/alibaba-api.yaml. Without the fact nothing is said (the row's reading holds); findings
//! are the inventory's: no policy can read it.

use crate::providers::api::{Param, table};
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings, Lookup};
use crate::vocab::lb::ChargeType;
use crate::vocab::provider::Provider;

/// The API row the controller's spec is held to (CreateLoadBalancer and
/// ModifyLoadBalancerInstanceSpec `LoadBalancerSpec`).
fn spec_row() -> Option<&'static Param> {
    table(Provider::Alibaba)?
        .calls
        .iter()
        .flat_map(|c| &c.params)
        .find(|p| p.name == "LoadBalancerSpec" && p.from == "spec")
}

pub fn live_charge_type(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if ctx.is_nlb(cat.provider) || !ctx.inventory.configured() {
        return;
    }
    let get = |s: &str| cat.get(new, s).filter(|a| !a.value.is_empty());
    // The CLB the controller updates: the reused id, or the one it recorded in its label
    // (clbv1/service_controller.go:542-556) on a Service whose CLB it made.
    let label = || {
        let l = cat.lb_id_label?;
        new.label(l)
            .or_else(|| ctx.old.and_then(|o| o.label(l)))
            .filter(|v| !v.is_empty())
    };
    let Some(id) = get("id").map(|a| a.value).or_else(label) else {
        return;
    };
    // A CLB the inventory does not know is reported once, by the inventory rules.
    let Lookup::Found(lb) = ctx.inventory.lookup(cat.provider, id) else {
        return;
    };
    let Some(live) = lb.charge_type else { return };
    match (get("instance-charge-type"), live) {
        (Some(a), ChargeType::PayByClcu) if a.value.eq_ignore_ascii_case("PayBySpec") => {
            out.push_inventory(
                annotation_field(a.key),
                format!("{} is \"{}\" but CLB \"{id}\" is pay-by-LCU (chargeType: PayByCLCU): the CLB controller calls ModifyLoadBalancerInstanceChargeType to make it pay-by-specification on every resync, and the CLB API refuses that (it takes only InstanceChargeType PayByCLCU: a pay-by-LCU instance cannot go back to pay-by-specification); set {}: \"PayByCLCU\" (or remove it) and remove {}, or reuse a pay-by-specification CLB", a.key, a.value, a.key, cat.key("spec")),
            );
        }
        (None, ChargeType::PayBySpec) => {
            let (Some(spec), Some(row)) = (get("spec"), spec_row()) else {
                return;
            };
            if let Some(why) = row.item_error(spec.value) {
                out.push_inventory(
                    annotation_field(spec.key),
                    format!("{} is \"{}\" and CLB \"{id}\" is pay-by-specification (chargeType: PayBySpec): with no {} the CLB controller keeps PayBySpec and sends the spec through ModifyLoadBalancerInstanceSpec, which the CLB API refuses: {why}; write one of those specs, or remove {}", spec.key, spec.value, cat.key("instance-charge-type"), spec.key),
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "charge_tests.rs"]
mod tests;
