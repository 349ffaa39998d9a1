//! `annotation-format` on an existing ACK CLB, with the inventory's live charge type
//! (`chargeType`) and spec (`spec`): what the CLB controller sends for `instance-charge-type`
//! and `spec` depends on them, and the CLB API refuses some of it. Sources,
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
//! data/alibaba-api.yaml. With the live spec too (`spec`, the API's `LoadBalancerSpec`, which
//! the controller reads from DescribeLoadBalancerAttribute or DescribeLoadBalancers,
//! pkg/provider/alibaba/slb/loadbalancer.go:34-117,174-187,420), a spec equal to it, exactly
//! (clbv1/loadbalancer.go:481-482 compares the strings), is not sent when the charge type is
//! kept (absent, or the live one as the API spells it, :455-456 and :472), so it is held to
//! nothing: a CLB on a spec beyond the row's list (the allow-listed larger specs) may restate
//! it. The live spec counts only with the live charge type: a different `instance-charge-type`
//! sends the spec through ModifyLoadBalancerInstanceChargeType whatever it is (:456-471).
//! Without the facts nothing is said (the row's reading holds); findings are the inventory's:
//! no policy can read it, so a row's finding cleared here stays in the exported policy.

use crate::providers::api::{Param, table};
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings, Lookup};
use crate::vocab::lb::ChargeType;
use crate::vocab::provider::Provider;

/// The API row the controller's spec is held to (CreateLoadBalancer and
/// ModifyLoadBalancerInstanceSpec `LoadBalancerSpec`).
fn spec_row() -> Option<&'static Param> {
    static ROW: std::sync::OnceLock<Option<&'static Param>> = std::sync::OnceLock::new();
    *ROW.get_or_init(|| {
        table(Provider::Alibaba)?
            .calls
            .iter()
            .flat_map(|c| &c.params)
            .find(|p| p.name == "LoadBalancerSpec" && p.from == "spec")
    })
}

/// `rows`: where the API rows' findings (`providers::api::check`) start in `out`.
pub fn live_charge_type(ctx: &Ctx, cat: &'static Catalog, rows: usize, out: &mut Findings) {
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
    // The controller sends the spec only when it differs from the live one, exactly
    // (clbv1/loadbalancer.go:481-482).
    let same_spec = |s: &Annot<'_>| lb.spec.as_deref() == Some(s.value);
    match (get("instance-charge-type"), live) {
        (Some(a), ChargeType::PayByClcu) if a.value.eq_ignore_ascii_case("PayBySpec") => {
            out.push_inventory(
                annotation_field(a.key),
                format!("{} is \"{}\" but CLB \"{id}\" is pay-by-LCU (chargeType: PayByCLCU): the CLB controller calls ModifyLoadBalancerInstanceChargeType to make it pay-by-specification on every resync, and the CLB API refuses that (it takes only InstanceChargeType PayByCLCU: a pay-by-LCU instance cannot go back to pay-by-specification); set {}: \"PayByCLCU\" (or remove it) and remove {}, or reuse a pay-by-specification CLB", a.key, a.value, a.key, cat.key("spec")),
            );
        }
        // The live charge type kept (:455-456, :472): the row's finding on a spec that is
        // the live one is cleared, as nothing is sent.
        (Some(a), live) if a.value == live.as_str() => {
            if let Some(spec) = get("spec").filter(|s| same_spec(s)) {
                out.clear_from(rows, &annotation_field(spec.key));
            }
        }
        (None, ChargeType::PayBySpec) => {
            let (Some(spec), Some(row)) = (get("spec"), spec_row()) else {
                return;
            };
            if same_spec(&spec) {
                return;
            }
            if let Some(why) = row.item_error(spec.value) {
                let live_one = lb.spec.as_deref().map_or(String::new(), |l| {
                    format!(" or the CLB's live spec \"{l}\" (not sent)")
                });
                out.push_inventory(
                    annotation_field(spec.key),
                    format!("{} is \"{}\" and CLB \"{id}\" is pay-by-specification (chargeType: PayBySpec): with no {} the CLB controller keeps PayBySpec and sends the spec through ModifyLoadBalancerInstanceSpec, which the CLB API refuses: {why}; write one of those specs{live_one}, or remove {}", spec.key, spec.value, cat.key("instance-charge-type"), spec.key),
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "charge_tests.rs"]
mod tests;
