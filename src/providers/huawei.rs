//! Huawei Cloud CCE / CCE Turbo (seeds 002, 003): ELB annotations, listener hosting
//! (`skip-managed-listener`) and the cluster-version gates of ELB features.

use super::data;
use crate::vocab::cel;
use crate::vocab::checks::{
    ccm_only, ccm_request_cel, duplicates, protocol_entries, require_version, version_too_old,
};
use crate::vocab::config::Flavor;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::{Catalog, Provider, annotation_field};
use crate::vocab::rule::{CelCheck, Rule, Vap, VapCtx, rule};
use crate::vocab::service::Svc;
use crate::vocab::version::{KubeVersion, VersionOf};

/// Seed names plus CCE's documented ELB annotations (all under `kubernetes.io/elb.`).
pub static CATALOG: Catalog = Catalog {
    provider: Provider::Huawei,
    prefix: "kubernetes.io/elb.",
    legacy_prefix: None,
    default_address_type: None,
    lb_id_label: None,
    finalizers: &[],
    table: &data::HUAWEI,
};

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
        "elb.autocreate is a valid JSON object (type, bandwidth, flavors, zones) and excludes elb.id",
        "002 examples; \"需要在kubernetes.io/elb.autocreate的annotation中指定4層和7層flavor\"",
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

const SKIP: &str = "skip-managed-listener";
const SYSTEM_KEYS: [&str; 2] = ["listener-port", "listener-port-ranges-auto-generated"];

fn skipping(cat: &Catalog, svc: Svc) -> bool {
    cat.get(svc, SKIP).is_some_and(|a| a.value == "true")
}

fn skip_listener_irreversible(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    if skipping(cat, old) && !skipping(cat, new) {
        let key = cat.key(SKIP);
        let now = cat
            .get(new, SKIP)
            .map_or_else(|| "removed".to_string(), |a| format!("\"{}\"", a.value));
        out.push(
            annotation_field(&key),
            format!("{key} was \"true\" and is now {now}: listener hosting cannot be turned back on; keep \"true\", or delete and recreate the Service"),
        );
    }
}

fn skip_listener_needs_existing_elb(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if !skipping(cat, new) {
        return;
    }
    let key = cat.key(SKIP);
    if cat.get(new, "id").is_none() {
        out.push(
            annotation_field(&key),
            format!(
                "{key}: \"true\" needs an existing ELB: add {} (an ELB in the cluster's VPC)",
                cat.key("id")
            ),
        );
    }
    if let Some(a) = cat.get(new, "autocreate") {
        out.push(
            annotation_field(a.key),
            format!("{key}: \"true\" cannot be used with {} (auto-created ELBs are not supported); use {} of an existing ELB", a.key, cat.key("id")),
        );
    }
}

fn skip_listener_not_multicluster(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if skipping(cat, new)
        && let Some(m) = cat.get(new, "multicluster")
        && m.value == "true"
    {
        out.push(
            annotation_field(m.key),
            format!(
                "{}: \"true\" cannot be combined with {}: \"true\"; remove one of them",
                m.key,
                cat.key(SKIP)
            ),
        );
    }
}

/// Minimum version per minor; older minors never qualify, newer minors always do.
const SKIP_MIN: &[KubeVersion] = &[
    KubeVersion::new(1, 29, 15, 90),
    KubeVersion::new(1, 30, 14, 90),
    KubeVersion::new(1, 31, 14, 50),
    KubeVersion::new(1, 32, 13, 20),
    KubeVersion::new(1, 33, 12, 0),
    KubeVersion::new(1, 34, 8, 0),
    KubeVersion::new(1, 35, 5, 0),
    KubeVersion::new(1, 36, 1, 10),
];

pub fn skip_listener_supported(v: &KubeVersion) -> bool {
    let (first, last) = (SKIP_MIN[0], SKIP_MIN[SKIP_MIN.len() - 1]);
    if (v.major, v.minor) > (last.major, last.minor) {
        return true;
    }
    if (v.major, v.minor) < (first.major, first.minor) {
        return false;
    }
    SKIP_MIN
        .iter()
        .find(|m| (m.major, m.minor) == (v.major, v.minor))
        .is_some_and(|m| v >= m)
}

fn skip_listener_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if skipping(cat, new) {
        let key = cat.key(SKIP);
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            &annotation_field(&key),
            &format!("{key}: \"true\""),
            "v1.29.15-r90, v1.30.14-r90, v1.31.14-r50, v1.32.13-r20, v1.33.12-r0, v1.34.8-r0, v1.35.5-r0, v1.36.1-r10 or newer",
            skip_listener_supported,
        );
    }
}

/// CCE writes these after creating a skip-managed-listener Service on a dedicated ELB;
/// users never create them, and only the CCM may change them afterwards.
fn system_annotations_reserved(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let old = ctx.old.filter(|o| o.is_lb());
    for suffix in SYSTEM_KEYS {
        let key = cat.key(suffix);
        let n = new.annotation(&key);
        match old {
            None => {
                if let Some(v) = n {
                    out.push(
                        annotation_field(&key),
                        format!("{key}: \"{v}\" is set by CCE for its own bookkeeping and cannot be given by users; remove it"),
                    );
                }
            }
            Some(old) => {
                let o = old.annotation(&key);
                if o != n {
                    let show = |v: Option<&str>| {
                        v.map_or_else(|| "unset".to_string(), |v| format!("\"{v}\""))
                    };
                    ccm_only(
                        ctx,
                        out,
                        annotation_field(&key),
                        format!(
                            "{key} is managed by CCE and cannot be changed or removed (was {}, now {}); changing it makes ELB clean-up fail; restore the old value",
                            show(o),
                            show(n)
                        ),
                    );
                }
            }
        }
    }
}

fn layer7(cat: &Catalog, svc: Svc) -> bool {
    cat.get(svc, "protocol-port").is_some_and(|a| {
        protocol_entries(a.value)
            .0
            .iter()
            .any(|(p, _, _)| *p == "http" || *p == "https")
    })
}

const ELB_PROTOCOLS: [&str; 5] = ["http", "https", "tcp", "udp", "tls"];

fn protocol_port_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "protocol-port") else {
        return;
    };
    let field = annotation_field(a.key);
    let (entries, bad) = protocol_entries(a.value);
    for entry in bad {
        out.push(
            field.clone(),
            format!(
                "{} entry \"{entry}\" is not protocol:port; write e.g. \"https:443,http:80\"",
                a.key
            ),
        );
    }
    let mut ports = Vec::new();
    for (proto, port, entry) in entries {
        if !ELB_PROTOCOLS.contains(&proto) {
            out.push(
                field.clone(),
                format!("{} entry \"{entry}\": protocol \"{proto}\" is not one of http, https, tcp, udp, tls (lower case)", a.key),
            );
        }
        let Some(port) = port else {
            out.push(
                field.clone(),
                format!(
                    "{} entry \"{entry}\": the port is not a number from 1 to 65535",
                    a.key
                ),
            );
            continue;
        };
        ports.push(port);
        let spec: Vec<&str> = new
            .ports()
            .iter()
            .filter(|p| p.port == port)
            .map(|p| p.protocol.as_deref().unwrap_or("TCP"))
            .collect();
        if spec.is_empty() {
            out.push(
                field.clone(),
                format!("{} entry \"{entry}\": port {port} is not one of spec.ports[].port ({}); each entry must name a Service port", a.key, new.port_list()),
            );
            continue;
        }
        let want = if proto == "udp" { "UDP" } else { "TCP" };
        if !spec.contains(&want) {
            out.push(
                field.clone(),
                format!("{} entry \"{entry}\": spec.ports port {port} has protocol {}, but an ELB {proto} listener needs protocol {want} in spec.ports", a.key, spec.join("/")),
            );
        }
    }
    for p in duplicates(ports.into_iter()) {
        out.push(
            field.clone(),
            format!(
                "{} lists port {p} more than once; give each port one protocol",
                a.key
            ),
        );
    }
}

fn https_needs_cert(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "protocol-port") else {
        return;
    };
    let https = protocol_entries(a.value)
        .0
        .iter()
        .any(|(p, _, _)| *p == "https");
    if https
        && cat
            .get(new, "cert-id")
            .is_none_or(|c| c.value.trim().is_empty())
    {
        out.push(
            annotation_field(a.key),
            format!(
                "{} has an https entry but {} is not set; add the ELB certificate id as {}",
                a.key,
                cat.key("cert-id"),
                cat.key("cert-id")
            ),
        );
    }
}

fn http_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if layer7(cat, new) {
        let key = cat.key("protocol-port");
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            &annotation_field(&key),
            &format!("HTTP/HTTPS in {key}"),
            "a v1.19.16 or newer cluster",
            |v| *v >= KubeVersion::new(1, 19, 16, 0),
        );
    }
}

fn dedicated_elb_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "class")
        && a.value == "performance"
    {
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            &annotation_field(a.key),
            &format!("a dedicated ELB ({}: \"performance\")", a.key),
            "a v1.17 or newer cluster",
            |v| (v.major, v.minor) >= (1, 17),
        );
    }
}

fn pass_through_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "pass-through") {
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            &annotation_field(a.key),
            a.key,
            "a cluster newer than v1.15 (v1.16+)",
            |v| (v.major, v.minor) > (1, 15),
        );
    }
}

fn huawei_autocreate_valid(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "autocreate") else {
        return;
    };
    let field = annotation_field(a.key);
    let key = a.key;
    if let Some(id) = cat.get(new, "id") {
        out.push(
            field.clone(),
            format!("{key} and {} cannot both be set: use an existing ELB (elb.id) or let CCE create one (elb.autocreate), not both", id.key),
        );
    }
    let obj = match serde_json::from_str::<serde_json::Value>(a.value) {
        Ok(serde_json::Value::Object(o)) => o,
        Ok(_) => {
            out.push(
                field,
                format!("{key} must be a JSON object, e.g. '{{\"type\":\"public\",...}}'"),
            );
            return;
        }
        Err(e) => {
            out.push(field, format!("{key} is not valid JSON ({e}); write a JSON object, e.g. '{{\"type\":\"inner\"}}'"));
            return;
        }
    };
    let nonempty_str = |k: &str| {
        obj.get(k)
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.trim().is_empty())
    };
    let ty = obj.get("type").and_then(|v| v.as_str());
    match ty {
        Some("public") => {
            for k in [
                "bandwidth_name",
                "bandwidth_chargemode",
                "bandwidth_sharetype",
                "eip_type",
            ] {
                if !nonempty_str(k) {
                    out.push(
                        field.clone(),
                        format!("{key}: type \"public\" needs \"{k}\" (a non-empty string)"),
                    );
                }
            }
            let size_ok = obj
                .get("bandwidth_size")
                .and_then(|v| v.as_f64())
                .is_some_and(|n| n > 0.0);
            if !size_ok {
                out.push(field.clone(), format!("{key}: type \"public\" needs \"bandwidth_size\" (a positive number, Mbit/s)"));
            }
        }
        Some("inner") => {}
        other => out.push(
            field.clone(),
            format!(
                "{key}: \"type\" is {}; allowed: \"public\" or \"inner\"",
                other.map_or_else(|| "missing".to_string(), |t| format!("\"{t}\""))
            ),
        ),
    }
    let dedicated = cat
        .get(new, "class")
        .is_some_and(|c| c.value == "performance");
    if dedicated {
        let zones_ok = obj
            .get("available_zone")
            .and_then(|v| v.as_array())
            .is_some_and(|z| {
                !z.is_empty() && z.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty()))
            });
        if !zones_ok {
            out.push(field.clone(), format!("{key}: a dedicated ELB (elb.class: performance) needs \"available_zone\" (a non-empty array of zone names)"));
        }
        if !nonempty_str("l4_flavor_name") {
            out.push(
                field.clone(),
                format!("{key}: a dedicated ELB needs \"l4_flavor_name\""),
            );
        }
        if layer7(cat, new) && !nonempty_str("l7_flavor_name") {
            out.push(
                field.clone(),
                format!(
                    "{key}: a dedicated ELB with http/https in {} needs \"l7_flavor_name\"",
                    cat.key("protocol-port")
                ),
            );
        }
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

/// CEL: `$s` has skip-managed-listener: "true".
fn skipping_cel(cat: &Catalog) -> String {
    let a = cel::catalog_annotation(cat, SKIP);
    format!("({} && {} == 'true')", a.present, a.value)
}

/// CEL: `$s`'s protocol-port has an entry with one of `protocols`.
fn protocol_in_cel(cat: &Catalog, protocols: &[&str]) -> String {
    let a = cel::catalog_annotation(cat, "protocol-port");
    format!(
        "({} && {}.split(',').exists(e, e.trim().indexOf(':') >= 0 && e.trim().substring(0, e.trim().indexOf(':')).trim() in {}))",
        a.present,
        a.value,
        cel::list(protocols)
    )
}

fn skip_listener_irreversible_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = cel::catalog_annotation(cat, SKIP);
    let now = cel::on(
        &format!("({} ? '\"' + {} + '\"' : 'removed')", a.present, a.value),
        "object",
    );
    Ok(vec![CelCheck::new(
        format!(
            "{} && !{}",
            cel::on(&skipping_cel(cat), "oldObject"),
            cel::on(&skipping_cel(cat), "object")
        ),
        format!(
            "'[skip-listener-irreversible] {} was \"true\" and is now ' + {now} + ': listener hosting cannot be turned back on; keep \"true\", or delete and recreate the Service'",
            cat.key(SKIP)
        ),
    )])
}

fn skip_listener_needs_existing_elb_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let key = cat.key(SKIP);
    let id = cel::catalog_annotation(cat, "id");
    let auto = cel::catalog_annotation(cat, "autocreate");
    Ok(vec![
        CelCheck::new(
            format!("{} && !{}", skipping_cel(cat), id.present),
            format!("'[skip-listener-needs-existing-elb] {key}: \"true\" needs an existing ELB: add {} (an ELB in the cluster\\'s VPC)'", cat.key("id")),
        )
        .same_when("'needs-id'"),
        CelCheck::new(
            format!("{} && {}", skipping_cel(cat), auto.present),
            format!("'[skip-listener-needs-existing-elb] {key}: \"true\" cannot be used with ' + {} + ' (auto-created ELBs are not supported); use {} of an existing ELB'", auto.key, cat.key("id")),
        )
        .same_when(auto.key),
    ])
}

fn skip_listener_not_multicluster_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let m = cel::catalog_annotation(cat, "multicluster");
    Ok(vec![
        CelCheck::new(
            format!("{} && {} && {} == 'true'", skipping_cel(cat), m.present, m.value),
            format!("'[skip-listener-not-multicluster] ' + {} + ': \"true\" cannot be combined with {}: \"true\"; remove one of them'", m.key, cat.key(SKIP)),
        )
        .same_when(m.key),
    ])
}

/// A cluster-version rule's CEL: `uses` when the cluster is older than `ok` allows.
fn cluster_gate_cel(
    v: &VapCtx,
    rule: &str,
    ok: impl Fn(&KubeVersion) -> bool,
    uses: String,
    feature: String,
    needs: &str,
) -> Result<Vec<CelCheck>, &'static str> {
    if !version_too_old(v, VersionOf::Cluster, ok)? {
        return Ok(vec![]);
    }
    let runs = v.versions.cluster_text();
    Ok(vec![
        CelCheck::new(
            uses,
            format!("'[{rule}] ' + {feature} + ' needs {needs}; the cluster runs {runs}; upgrade the cluster first, or remove it'"),
        )
        .same_when("'uses'"),
    ])
}

fn skip_listener_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    cluster_gate_cel(
        v,
        "skip-listener-version",
        skip_listener_supported,
        skipping_cel(cat),
        cel::lit(&format!("{}: \"true\"", cat.key(SKIP))),
        "v1.29.15-r90, v1.30.14-r90, v1.31.14-r50, v1.32.13-r20, v1.33.12-r0, v1.34.8-r0, v1.35.5-r0, v1.36.1-r10 or newer",
    )
}

fn http_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    cluster_gate_cel(
        v,
        "http-version",
        |k| *k >= KubeVersion::new(1, 19, 16, 0),
        protocol_in_cel(cat, &["http", "https"]),
        cel::lit(&format!("HTTP/HTTPS in {}", cat.key("protocol-port"))),
        "a v1.19.16 or newer cluster",
    )
}

fn dedicated_elb_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = cel::catalog_annotation(cat, "class");
    cluster_gate_cel(
        v,
        "dedicated-elb-version",
        |k| (k.major, k.minor) >= (1, 17),
        format!("{} && {} == 'performance'", a.present, a.value),
        format!("'a dedicated ELB (' + {} + ': \"performance\")'", a.key),
        "a v1.17 or newer cluster",
    )
}

fn pass_through_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = cel::catalog_annotation(cat, "pass-through");
    cluster_gate_cel(
        v,
        "pass-through-version",
        |k| (k.major, k.minor) > (1, 15),
        a.present.clone(),
        a.key,
        "a cluster newer than v1.15 (v1.16+)",
    )
}

/// CCE's bookkeeping keys: never given at creation; changed later only by the CCM (a
/// denial only when the CCM's identity is configured, as in the webhook).
fn system_annotations_reserved_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let old_lb = format!(
        "(oldObject != null && {})",
        cel::on(cel::IS_LB, "oldObject")
    );
    Ok(SYSTEM_KEYS
        .iter()
        .map(|suffix| {
            let key = cat.key(suffix);
            let (np, nv) = (cel::on(&cel::has_annotation(&key), "object"), cel::on(&cel::annotation(&key), "object"));
            let (op, ov) = (cel::on(&cel::has_annotation(&key), "oldObject"), cel::on(&cel::annotation(&key), "oldObject"));
            let changed = match ccm_request_cel(v) {
                Some(by_ccm) => format!("!{by_ccm} && ({op} != {np} || ({op} && {np} && {ov} != {nv}))"),
                None => "false".into(),
            };
            CelCheck::new(
                format!("({old_lb} ? ({changed}) : {np})"),
                format!("{} ? '[system-annotations-reserved] {key} is managed by CCE and cannot be changed or removed; changing it makes ELB clean-up fail; restore the old value' : '[system-annotations-reserved] {key}: \"' + {nv} + '\" is set by CCE for its own bookkeeping and cannot be given by users; remove it'", old_lb),
            )
        })
        .collect())
}

/// CEL of `protocol_port_format`, finding by finding; on an update, findings the live Service
/// already had (same entry, same Service ports) are kept, as the engine's ratchet does.
fn protocol_port_format_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let key = cat.key("protocol-port");
    let k = cel::lit(&key);
    let entries = |s: &str| format!("{s}.metadata.annotations[{k}].split(',')");
    let t = |e: &str| format!("{e}.trim()");
    let colon = |e: &str| format!("({}.indexOf(':') >= 0)", t(e));
    let proto = |e: &str| format!("{}.substring(0, {}.indexOf(':')).trim()", t(e), t(e));
    let port_s = |e: &str| format!("{}.substring({}.indexOf(':') + 1).trim()", t(e), t(e));
    let port = |e: &str| format!("int({})", port_s(e));
    let port_ok = |e: &str| {
        format!(
            "({} && {}.matches('^[+-]?[0-9]{{1,10}}$') && {p} >= 1 && {p} <= 65535)",
            colon(e),
            port_s(e),
            p = port(e)
        )
    };
    let spec_protocols = |s: &str, e: &str| {
        format!(
            "(has({s}.spec.ports) ? {s}.spec.ports.filter(p, p.port == {}).map(p, has(p.protocol) ? p.protocol : 'TCP') : [])",
            port(e)
        )
    };
    let want = |e: &str| format!("({} == 'udp' ? 'UDP' : 'TCP')", proto(e));
    let dup = |s: &str, e: &str| {
        format!(
            "{}.filter(f, {} && {} == {}).size() > 1",
            entries(s),
            port_ok("f"),
            port("f"),
            port(e)
        )
    };
    let bad_form = format!("!{}", colon("e"));
    let bad_proto = format!(
        "({} && !({} in ['http', 'https', 'tcp', 'udp', 'tls']))",
        colon("e"),
        proto("e")
    );
    let bad_port = format!("({} && !{})", colon("e"), port_ok("e"));
    let not_in_spec = format!(
        "({} && {}.size() == 0)",
        port_ok("e"),
        spec_protocols("object", "e")
    );
    let wrong_protocol = format!(
        "({} && {}.size() > 0 && !({} in {}))",
        port_ok("e"),
        spec_protocols("object", "e"),
        want("e"),
        spec_protocols("object", "e")
    );
    let twice = format!("({} && {})", port_ok("e"), dup("object", "e"));
    let old = v.ratchet.as_ref().map(|r| {
        format!(
            "({r} && {})",
            cel::on(&cel::has_annotation(&key), "oldObject")
        )
    });
    let kept = cel::ListKept::new(
        old,
        &entries("oldObject"),
        format!(
            "{}.exists(o, {} && {} == {} && {})",
            entries("oldObject"),
            port_ok("o"),
            port("o"),
            port("e"),
            dup("oldObject", "o")
        ),
    );
    // A wrong-protocol finding names the Service port's protocols: kept while they are equal.
    let kept_protocols = format!(
        "({} && {} == {})",
        kept.entry,
        spec_protocols("oldObject", "e"),
        spec_protocols("object", "e")
    );
    let (kept_entry, kept_ports, kept_dup) = (kept.entry, kept.ports, kept.dup);
    let violates = format!(
        "{} && {}.exists(e, (({bad_form} || {bad_proto} || {bad_port}) && !{kept_entry}) || ({not_in_spec} && !{kept_ports}) || ({wrong_protocol} && !{kept_protocols}) || ({twice} && !{kept_dup}))",
        cel::on(&cel::has_annotation(&key), "object"),
        entries("object"),
    );
    Ok(vec![CelCheck::new(
        violates,
        format!(
            "'[protocol-port-format] {key} is \"' + object.metadata.annotations[{k}] + '\": each entry must be protocol:port with a protocol of http, https, tcp, udp, tls (lower case), the port one of spec.ports[].port with protocol TCP (UDP for udp), and no port twice; write e.g. \"https:443,http:80\"'"
        ),
    )])
}

fn https_needs_cert_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let cert = cel::catalog_annotation(cat, "cert-id");
    let pp = cel::catalog_annotation(cat, "protocol-port");
    Ok(vec![
        CelCheck::new(
            format!("{} && (!{} || {}.trim() == '')", protocol_in_cel(cat, &["https"]), cert.present, cert.value),
            format!("'[https-needs-cert] ' + {} + ' has an https entry but {} is not set; add the ELB certificate id as {}'", pp.key, cat.key("cert-id"), cat.key("cert-id")),
        )
        .same_when(pp.key),
    ])
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

#[cfg(test)]
#[path = "huawei_tests.rs"]
mod tests;
