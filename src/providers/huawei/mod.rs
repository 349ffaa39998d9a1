//! Huawei Cloud CCE / CCE Turbo (seeds 002, 003): the catalog and the rule list, with the
//! ELB object rules (cluster-version gates of ELB features, traffic policies). Listener
//! hosting (`skip-managed-listener`) and listener configuration are in `listeners`, the
//! `elb.autocreate` JSON in `autocreate`, the fields of the JSON option annotations
//! (health check, session affinity) in `options`.

mod autocreate;
mod catalog;
mod conditions;
mod dependent;
mod listeners;
mod options;
mod tags;
/// `elb.keepalive_timeout`: its limits are rows of providers/data/huawei-api.yaml
/// (CreateListener listener.keepalive_timeout), held here through the webhook.
#[cfg(test)]
mod timeouts_tests;

use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::config::Flavor;
use crate::vocab::ctx::{Ctx, Findings, Proposed};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, Rule, Vap, VapCtx, rule};
use crate::vocab::version::KubeVersion;

use autocreate::huawei_autocreate_valid;
pub use catalog::{CATALOG, listener_protocols};
use conditions::{ClusterNeeds, cluster_gate_cel, layer7, protocol_in_cel};
pub use dependent::{dependent_annotations, dependent_annotations_cel};
pub use listeners::skip_listener_supported;
use listeners::{
    https_needs_cert, https_needs_cert_cel, protocol_port_format, protocol_port_format_cel,
    skip_listener_irreversible, skip_listener_irreversible_cel, skip_listener_needs_existing_elb,
    skip_listener_needs_existing_elb_cel, skip_listener_not_multicluster,
    skip_listener_not_multicluster_cel, skip_listener_version, skip_listener_version_cel,
    system_annotations_reserved, system_annotations_reserved_cel,
};
pub use options::json_fields;

const HUAWEI: &[Provider] = &[Provider::Huawei];

pub static RULES: &[Rule] = &[
    rule!(
        "skip-listener-irreversible",
        HUAWEI,
        Transition,
        Transition,
        Deny,
        "Once elb.skip-managed-listener is \"true\" it stays \"true\"",
        "003 \"取消监听器托管后不支持恢复，如需恢复...需要删除并重建Service\"",
        skip_listener_irreversible,
        Vap::Cel(skip_listener_irreversible_cel)
    ),
    rule!(
        "skip-listener-needs-existing-elb",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "skip-managed-listener: \"true\" needs kubernetes.io/elb.id and no elb.autocreate",
        "003 \"只支持选择已有ELB，不支持自动创建ELB\"",
        skip_listener_needs_existing_elb,
        Vap::Cel(skip_listener_needs_existing_elb_cel)
    ),
    rule!(
        "skip-listener-not-multicluster",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "skip-managed-listener cannot be combined with kubernetes.io/elb.multicluster",
        "003 \"取消监听器托管不可与跨集群后端特性（kubernetes.io/elb.multicluster）同时使用\"",
        skip_listener_not_multicluster,
        Vap::Cel(skip_listener_not_multicluster_cel)
    ),
    rule!(
        "skip-listener-version",
        HUAWEI,
        Version,
        Admit,
        Deny,
        "skip-managed-listener needs v1.29.15-r90, v1.30.14-r90, v1.31.14-r50, v1.32.13-r20, v1.33.12-r0, v1.34.8-r0, v1.35.5-r0, v1.36.1-r10 or a newer minor",
        "003 功能说明 table",
        skip_listener_version,
        Vap::Cel(skip_listener_version_cel)
    ),
    rule!(
        "system-annotations-reserved",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "Users may not set, change or remove elb.listener-port / elb.listener-port-ranges-auto-generated",
        "003 \"请勿自行指定该注解，且不建议自行修改或删除\"",
        system_annotations_reserved,
        Vap::Cel(system_annotations_reserved_cel)
    ),
    rule!(
        "protocol-port-format",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "elb.protocol-port is proto:port pairs; each port a spec.ports[].port with protocol TCP (UDP for udp)",
        "002 \"protocol-port的取值需要和service的spec.ports字段中的端口对应\"",
        protocol_port_format,
        Vap::Cel(protocol_port_format_cel)
    ),
    rule!(
        "https-needs-cert",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "An https entry in elb.protocol-port needs kubernetes.io/elb.cert-id",
        "002 \"当protocol-port指定了https协议，ELB监听器的证书会设置为cert-id证书\"",
        https_needs_cert,
        Vap::Cel(https_needs_cert_cel)
    ),
    rule!(
        "http-version",
        HUAWEI,
        Version,
        Admit,
        Deny,
        "HTTP/HTTPS in elb.protocol-port needs cluster v1.19.16 or newer",
        "002 \"Service使用HTTP僅v1.19.16及以上版本集群支持\"",
        http_version,
        Vap::Cel(http_version_cel)
    ),
    rule!(
        "dedicated-elb-version",
        HUAWEI,
        Version,
        Admit,
        Deny,
        "elb.class: performance needs cluster v1.17 or newer",
        "002 \"獨享型ELB僅支持1.17及以上集群\"",
        dedicated_elb_version,
        Vap::Cel(dedicated_elb_version_cel)
    ),
    rule!(
        "pass-through-version",
        HUAWEI,
        Version,
        Admit,
        Deny,
        "elb.pass-through needs cluster v1.16 or newer (\"> v1.15\")",
        "002 \"1.15及以下老版本集群暫不支持該能力\"",
        pass_through_version,
        Vap::Cel(pass_through_version_cel)
    ),
    rule!(
        "huawei-autocreate-valid",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "elb.autocreate is a JSON object as CCE documents it (type defaults to inner; public: bandwidth 1-2000 Mbit/s; dedicated: zones, an L4 flavor for TCP/UDP ports, an L7 flavor for http/https) and excludes elb.id",
        "CCE's elb.autocreate table: opentelekomcloud-docs/cloud-container-engine@4863737 cce_10_0385 Table 15 (configuring_advanced_load_balancing_functions_using_annotations.rst:621-722), huaweicloudDocs/cce@99b4f7e Service-Annotations说明.md Table 2 (:257-396); 002 \"需要在kubernetes.io/elb.autocreate的annotation中指定4層和7層flavor\"",
        huawei_autocreate_valid,
        Vap::No("reads the JSON in elb.autocreate, and Kubernetes CEL has no JSON parser")
    ),
    rule!(
        "traffic-policy-change",
        HUAWEI,
        Transition,
        Transition,
        Warn,
        "externalTrafficPolicy Cluster -> Local on an existing Service leaves stale connection tracking",
        "002",
        traffic_policy_change,
        Vap::Cel(traffic_policy_change_cel)
    ),
    rule!(
        "turbo-cluster-policy",
        HUAWEI,
        Object,
        Admit,
        Deny,
        "On CCE Turbo (cluster.flavor: turbo) externalTrafficPolicy must be Cluster",
        "002 \"CCE Turbo集群僅支持集群級別服務親和\"",
        turbo_cluster_policy,
        Vap::Cel(turbo_cluster_policy_cel)
    ),
];

/// HTTP/HTTPS listeners (`http-version`).
const HTTP_NEEDS: ClusterNeeds = ClusterNeeds {
    words: "a v1.19.16 or newer cluster",
    ok: |v| *v >= KubeVersion::new(1, 19, 16, 0),
};

/// A dedicated ELB (`dedicated-elb-version`).
const DEDICATED_NEEDS: ClusterNeeds = ClusterNeeds {
    words: "a v1.17 or newer cluster",
    ok: |v| (v.major, v.minor) >= (1, 17),
};

/// `elb.pass-through` (`pass-through-version`).
const PASS_THROUGH_NEEDS: ClusterNeeds = ClusterNeeds {
    words: "a cluster newer than v1.15 (v1.16+)",
    ok: |v| (v.major, v.minor) > (1, 15),
};

fn http_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if layer7(cat, new) {
        let key = cat.key("protocol-port");
        HTTP_NEEDS.require(
            ctx,
            out,
            &annotation_field(&key),
            &format!("HTTP/HTTPS in {key}"),
        );
    }
}

fn dedicated_elb_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "class")
        && a.value == "performance"
    {
        DEDICATED_NEEDS.require(
            ctx,
            out,
            &annotation_field(a.key),
            &format!("a dedicated ELB ({}: \"performance\")", a.key),
        );
    }
}

fn pass_through_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "pass-through") {
        PASS_THROUGH_NEEDS.require(ctx, out, &annotation_field(a.key), a.key);
    }
}

fn traffic_policy_change(ctx: &Ctx, _cat: &'static Catalog, out: &mut Findings) {
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    let before = old.traffic_policy().unwrap_or("Cluster");
    if before == "Cluster" && new.traffic_policy() == Some("Local") {
        out.push(
            "spec.externalTrafficPolicy",
            "spec.externalTrafficPolicy changes from Cluster to Local on an existing Service: the nodes' connection tracking entries are not cleared and some clients keep failing; recreate the Service with Local instead",
        );
    }
}

fn turbo_cluster_policy(ctx: &Ctx, _cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if ctx.config.cluster.flavor == Flavor::Turbo && new.traffic_policy() == Some("Local") {
        out.push(
            "spec.externalTrafficPolicy",
            "spec.externalTrafficPolicy is \"Local\" but CCE Turbo clusters support only \"Cluster\"; set spec.externalTrafficPolicy: Cluster",
        );
    }
}

fn http_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    cluster_gate_cel(
        v,
        "http-version",
        &HTTP_NEEDS,
        protocol_in_cel(cat, &["http", "https"]),
        cel::lit(&format!("HTTP/HTTPS in {}", cat.key("protocol-port"))),
    )
}

fn dedicated_elb_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "class");
    cluster_gate_cel(
        v,
        "dedicated-elb-version",
        &DEDICATED_NEEDS,
        format!("{} && {} == 'performance'", a.present, a.value),
        format!("'a dedicated ELB (' + {} + ': \"performance\")'", a.key),
    )
}

fn pass_through_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "pass-through");
    cluster_gate_cel(
        v,
        "pass-through-version",
        &PASS_THROUGH_NEEDS,
        a.present.clone(),
        a.key,
    )
}

fn traffic_policy_change_cel(_: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    Ok(vec![CelCheck::new(
        "(has(oldObject.spec.externalTrafficPolicy) ? oldObject.spec.externalTrafficPolicy : 'Cluster') == 'Cluster' && has(object.spec.externalTrafficPolicy) && object.spec.externalTrafficPolicy == 'Local'",
        "'[traffic-policy-change] spec.externalTrafficPolicy changes from Cluster to Local on an existing Service: the nodes\\' connection tracking entries are not cleared and some clients keep failing; recreate the Service with Local instead'",
    )])
}

fn turbo_cluster_policy_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    if v.config.cluster.flavor != Flavor::Turbo {
        return Ok(vec![]);
    }
    Ok(vec![
        CelCheck::new(
            "has($s.spec.externalTrafficPolicy) && $s.spec.externalTrafficPolicy == 'Local'",
            "'[turbo-cluster-policy] spec.externalTrafficPolicy is \"Local\" but CCE Turbo clusters support only \"Cluster\"; set spec.externalTrafficPolicy: Cluster'",
        )
        .same_when("'local'"),
    ])
}

/// Huawei's defaults: the ELB class for an `elb.id` or `elb.autocreate` given without one
/// (`defaults.huaweiElbClass`).
pub fn defaults(ctx: &Ctx) -> Vec<Proposed> {
    let cat = &CATALOG;
    match (ctx.new, &ctx.config.defaults.huawei_elb_class) {
        (Some(new), Some(class))
            if cat.get(new, "id").is_some() || cat.get(new, "autocreate").is_some() =>
        {
            vec![Proposed {
                key: cat.key("class"),
                value: class.clone(),
                reason: "defaults.huaweiElbClass".into(),
                fixed: true,
                inventory: false,
            }]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "huawei_tests.rs"]
mod tests;
