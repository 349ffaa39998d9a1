//! CTyun CCE: annotation catalog and the ip-mode rules.
//!
//! The seed (000) documents only `ip-mode: "proxy"`, so the value is matched exactly;
//! Kubernetes' own `VIP` mode is what the Service gets without the annotation.

use super::data;
use crate::vocab::action::Action;
use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::checks::{require_version, version_too_old};
use crate::vocab::ctx::{Ctx, Findings, Proposed};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, Check, Class, Gate, Rule, Vap, VapCtx};
use crate::vocab::version::Known;
use crate::vocab::version::{KubeVersion, VersionOf};

pub static CATALOG: Catalog = Catalog {
    provider: Provider::Ctyun,
    prefix: "service.beta.kubernetes.io/ctyun-loadbalancer-",
    legacy_prefix: None,
    default_address_type: Some("intranet"),
    lb_id_label: None,
    finalizers: &[],
    table: &data::CTYUN,
};

const CTYUN: &[Provider] = &[Provider::Ctyun];

pub static RULES: &[Rule] = &[
    Rule {
        id: "ip-mode-value",
        providers: CTYUN,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "ctyun-loadbalancer-ip-mode is \"proxy\"",
        source: "000 \"service.beta.kubernetes.io/ctyun-loadbalancer-ip-mode = \\\"proxy\\\"\"",
        check: Check::PerProvider(ip_mode_value),
        vap: Vap::Cel(ip_mode_value_cel),
    },
    Rule {
        id: "ip-mode-version",
        providers: CTYUN,
        class: Class::Version,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "ip-mode: proxy needs Kubernetes 1.30 or newer",
        source: "000 \"该特性要求Kubernetes集群版本大于v1.29\"",
        check: Check::PerProvider(ip_mode_version),
        vap: Vap::Cel(ip_mode_version_cel),
    },
];

/// First version with `status.loadBalancer.ingress[].ipMode` ("greater than v1.29").
pub const IP_MODE_MIN: KubeVersion = KubeVersion::new(1, 30, 0, 0);

fn ip_mode_value(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "ip-mode")
        && a.value != "proxy"
    {
        out.push(
            annotation_field(a.key),
            format!("{} is \"{}\"; allowed: \"proxy\" (exact, lower case); remove the annotation for the default VIP mode", a.key, a.value),
        );
    }
}

fn ip_mode_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "ip-mode")
        && a.value == "proxy"
    {
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            &annotation_field(a.key),
            &format!("{}: \"proxy\"", a.key),
            "Kubernetes v1.30 or newer",
            |v| *v >= IP_MODE_MIN,
        );
    }
}

fn ip_mode_value_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "ip-mode");
    Ok(vec![
        CelCheck::new(
            format!("{} && {} != 'proxy'", a.present, a.value),
            format!("'[ip-mode-value] ' + {} + ' is \"' + {} + '\"; allowed: \"proxy\" (exact, lower case); remove the annotation for the default VIP mode'", a.key, a.value),
        )
        .same_when(a.value),
    ])
}

fn ip_mode_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    if !version_too_old(v, VersionOf::Cluster, |k| *k >= IP_MODE_MIN)? {
        return Ok(vec![]);
    }
    let a = catalog_annotation(cat, "ip-mode");
    let runs = v.versions.cluster_text();
    Ok(vec![
        CelCheck::new(
            format!("{} && {} == 'proxy'", a.present, a.value),
            format!("'[ip-mode-version] ' + {} + ': \"proxy\" needs Kubernetes v1.30 or newer; the cluster runs {runs}; upgrade the cluster first, or remove it'", a.key),
        )
        .same_when(a.value),
    ])
}

/// CTyun's defaults: the reused load balancer's address type from the inventory, and
/// `-ip-mode: proxy` for `externalTrafficPolicy: Local` on 1.30+ (`defaults.ctyunIpModeProxy`).
pub fn defaults(ctx: &Ctx) -> Vec<Proposed> {
    let cat = &CATALOG;
    let mut out: Vec<Proposed> = super::address_type::inventory_address_type(ctx, cat)
        .into_iter()
        .collect();
    if let Some(new) = ctx.new
        && ctx.config.defaults.ctyun_ip_mode_proxy
        && new.traffic_policy() == Some("Local")
        && matches!(ctx.cluster_version, Known::Yes(v) if *v >= IP_MODE_MIN)
    {
        out.push(Proposed {
            key: cat.key("ip-mode"),
            value: "proxy".into(),
            reason: "defaults.ctyunIpModeProxy: in-cluster clients of the LB IP go through the load balancer".into(),
            fixed: false,
            inventory: false,
        });
    }
    out
}

#[cfg(test)]
#[path = "ctyun_tests.rs"]
mod tests;
