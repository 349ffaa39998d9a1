//! Alibaba Cloud ACK: the annotation catalog and the rules only its controllers have. ACK
//! runs two: CLB (`clbv1`, Services without a class) and NLB (`nlbv2`, class
//! `alibabacloud.com/nlb`); `vocab::route` tells them apart and `format` reads each one's
//! vocabulary. The known names are every constant of the public controller's
//! `pkg/controller/service/reconcile/annotation/annotations.go` at the commit
//! `data/alibaba.yaml` pins.

mod cel;
mod charge;
mod clb;
pub mod format;
mod groups;
pub mod nlb;
mod value;

/// CEL over `$s`: ACK's NLB controller takes the Service (for rules outside this module).
pub fn nlb_cel(v: &crate::vocab::rule::VapCtx) -> String {
    cel::is_nlb(v)
}

use super::data;
use crate::vocab::action::Action;
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings, Proposed};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{Check, Class, Gate, Rule, Vap};

pub static CATALOG: Catalog = Catalog {
    provider: Provider::Alibaba,
    prefix: "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-",
    legacy_prefix: Some("service.beta.kubernetes.io/alicloud-loadbalancer-"),
    default_address_type: Some("internet"),
    lb_id_label: Some("service.k8s.alibaba/loadbalancer-id"),
    finalizers: &["service.k8s.alibaba/resources", "service.k8s.alibaba/nlb"],
    table: &data::ALIBABA,
};

const ALIBABA: &[Provider] = &[Provider::Alibaba];

/// `dependent-annotations` also holds Huawei's and Volcengine's parameters that go together
/// (issue 39); each provider's own module checks its own.
const DEPENDENT: &[Provider] = &[Provider::Alibaba, Provider::Huawei, Provider::Volcengine];

pub static RULES: &[Rule] = &[
    Rule {
        id: "legacy-prefix-conflict",
        providers: ALIBABA,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "The same key under alibaba-cloud-loadbalancer- and the legacy alicloud-loadbalancer- prefix with different values",
        source: "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/reconcile/annotation/annotations.go:150-172 (Get: the new prefix wins silently)",
        check: Check::PerProvider(legacy_prefix_conflict),
        vap: Vap::Cel(cel::legacy_prefix_conflict),
    },
    Rule {
        id: "annotation-format",
        providers: ALIBABA,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "Values as ACK's CLB or NLB controller parses them (protocol-port, vgroup-port, zone-maps, port ranges, Go integers) and within the published ranges and values",
        source: "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/listeners.go:711-753, nlbv2/listeners.go:62-110,620-644, nlbv2/loadbalancer.go:56-58,639-666; a reused NLB's vgroup-port against its VPC's server groups (inventory): nlbv2/server_groups.go:209-230, model_applier.go:311-318; an existing CLB's instance-charge-type and spec against its live charge type and spec (inventory chargeType, spec; a spec equal to the live one is not sent): clbv1/loadbalancer.go:451-491 and the CLB API's ModifyLoadBalancerInstanceChargeType (\"You cannot change the metering method from pay-by-LCU to pay-by-specification\"); data/alibaba.yaml rows (CCM docs table, CLB and NLB API references)",
        check: Check::PerProvider(format::annotation_format),
        vap: Vap::Cel(cel::annotation_format),
    },
    Rule {
        id: "dependent-annotations",
        providers: DEPENDENT,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "acl-status on needs acl-id; sticky-session on needs its type; insert needs cookie-timeout, server needs cookie; vswitch-id needs intranet (Alibaba). Huawei: health-check-flag on needs an option, not both options, no sticky session with SOURCE_IP, acl-id needs acl-status and acl-type, client/member_timeout need an HTTP(S) listener, tls needs cert-id, no HTTP(S) on port 21 of a shared ELB, client-ca-cert-id and tls-certificate-ids need an HTTPS or TLS listener, transparent-client-ip false only on a shared ELB's TCP/UDP listeners. Volcengine: a new CLB needs subnet-id, slave-zone-id needs a different master-zone-id, acl-status on needs acl-id on a CLB",
        source: "ACK CCM docs/usage.md; Huawei: CCE's annotation table (cce_10_0385, cce_10_0684, cce_10_0683, cce_10_0729, cce_10_0916) and the ELB v3 API's CreateListener; Volcengine: the controller's table (volcengine-cloud-controller-manager docs/usage.md) and the CLB API's CreateLoadBalancer",
        check: Check::PerProvider(dependent_annotations),
        vap: Vap::Cel(dependent_annotations_cel),
    },
];

/// The CCM reads the new prefix first and ignores the legacy key when both exist, so a
/// differing legacy value is silently dropped: almost always a half-done migration.
fn legacy_prefix_conflict(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let (Some(new), Some(legacy)) = (ctx.new, cat.legacy_prefix) else {
        return;
    };
    let Some(anns) = new.annotations() else {
        return;
    };
    for (key, value) in anns {
        let Some(suffix) = key.strip_prefix(legacy) else {
            continue;
        };
        let current = cat.key(suffix);
        if let Some(v) = anns.get(&current)
            && v != value
        {
            out.push(
                annotation_field(key),
                format!("{key} is \"{value}\" but {current} is \"{v}\"; the cloud controller uses \"{v}\" and ignores the legacy key; remove {key} or give both the same value"),
            );
        }
    }
}

fn dependent_annotations_cel(
    v: &crate::vocab::rule::VapCtx,
) -> Result<Vec<crate::vocab::rule::CelCheck>, &'static str> {
    match v.cat.map(|c| c.provider) {
        Some(Provider::Huawei) => super::huawei::dependent_annotations_cel(v),
        Some(Provider::Volcengine) => super::volcengine::dependent_annotations_cel(v),
        _ => cel::dependent_annotations(v),
    }
}

/// CLB's listener settings (the NLB controller reads none of them), and what the API
/// needs together.
fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    match cat.provider {
        Provider::Huawei => return super::huawei::dependent_annotations(ctx, cat, out),
        Provider::Volcengine => return super::volcengine::dependent_annotations(ctx, cat, out),
        _ => {}
    }
    let Some(new) = ctx.new else { return };
    // Parameters the cloud's API needs together (data/alibaba-api.yaml), CLB and NLB.
    crate::providers::api::check(ctx, cat, "dependent-annotations", out);
    if ctx.is_nlb(cat.provider) {
        return;
    }
    let get = |s: &str| cat.get(new, s);
    let mut needs = |when: &str, when_value: Option<&str>, need: &str, need_value: Option<&str>| {
        let Some(a) = get(when) else { return };
        if when_value.is_some_and(|w| w != a.value) {
            return;
        }
        let have = get(need);
        let ok = match need_value {
            None => have.is_some_and(|h| !h.value.is_empty()),
            Some(v) => have.is_some_and(|h| h.value == v),
        };
        if !ok {
            let need_desc = match need_value {
                None => cat.key(need),
                Some(v) => format!("{}: \"{v}\"", cat.key(need)),
            };
            out.push(
                annotation_field(a.key),
                format!(
                    "{}: \"{}\" needs {need_desc}; add it, or remove {}",
                    a.key, a.value, a.key
                ),
            );
        }
    };
    needs("acl-status", Some("on"), "acl-id", None);
    needs("sticky-session", Some("on"), "sticky-session-type", None);
    needs(
        "sticky-session-type",
        Some("insert"),
        "cookie-timeout",
        None,
    );
    needs("sticky-session-type", Some("server"), "cookie", None);
    // The vSwitch only places a load balancer the controller creates (clbv1/loadbalancer.go:
    // 263, 380-436); a reused one ignores it.
    if get("id").is_none_or(|a| a.value.is_empty()) {
        needs("vswitch-id", None, "address-type", Some("intranet"));
    }
}

/// Alibaba's defaults: the reused load balancer's address type from the inventory.
pub fn defaults(ctx: &Ctx) -> Vec<Proposed> {
    super::address_type::inventory_address_type(ctx, &CATALOG)
        .into_iter()
        .collect()
}

#[cfg(test)]
#[path = "alibaba_tests.rs"]
mod tests;
