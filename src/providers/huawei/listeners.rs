//! Huawei listener hosting and configuration: `skip-managed-listener` (the user, not the
//! CCM, manages the ELB's listeners), the system annotations CCE writes for it, and the
//! `protocol-port` / certificate annotations of CCE-managed listeners.

use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::checks::{ccm_only, ccm_request_cel, duplicates, protocol_entries};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;
use crate::vocab::version::KubeVersion;

use super::conditions::{ClusterNeeds, cluster_gate_cel, protocol_in_cel};

pub(super) const SKIP: &str = "skip-managed-listener";

pub(super) const SYSTEM_KEYS: [&str; 2] = ["listener-port", "listener-port-ranges-auto-generated"];

pub(super) fn skipping(cat: &Catalog, svc: Svc) -> bool {
    cat.get(svc, SKIP).is_some_and(|a| a.value == "true")
}

pub(super) fn skip_listener_irreversible(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
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

pub(super) fn skip_listener_needs_existing_elb(
    ctx: &Ctx,
    cat: &'static Catalog,
    out: &mut Findings,
) {
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

pub(super) fn skip_listener_not_multicluster(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
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
pub(super) const SKIP_MIN: &[KubeVersion] = &[
    KubeVersion::new(1, 29, 15, 90),
    KubeVersion::new(1, 30, 14, 90),
    KubeVersion::new(1, 31, 14, 50),
    KubeVersion::new(1, 32, 13, 20),
    KubeVersion::new(1, 33, 12, 0),
    KubeVersion::new(1, 34, 8, 0),
    KubeVersion::new(1, 35, 5, 0),
    KubeVersion::new(1, 36, 1, 10),
];

/// `skip-listener-version`: the releases of `SKIP_MIN`.
const SKIP_NEEDS: ClusterNeeds = ClusterNeeds {
    words: "v1.29.15-r90, v1.30.14-r90, v1.31.14-r50, v1.32.13-r20, v1.33.12-r0, v1.34.8-r0, v1.35.5-r0, v1.36.1-r10 or newer",
    ok: skip_listener_supported,
};

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

pub(super) fn skip_listener_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if skipping(cat, new) {
        let key = cat.key(SKIP);
        SKIP_NEEDS.require(
            ctx,
            out,
            &annotation_field(&key),
            &format!("{key}: \"true\""),
        );
    }
}

/// CCE writes these after creating a skip-managed-listener Service on a dedicated ELB;
/// users never create them, and only the CCM may change them afterwards.
pub(super) fn system_annotations_reserved(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
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

pub(super) const ELB_PROTOCOLS: [&str; 5] = ["http", "https", "tcp", "udp", "tls"];

pub(super) fn protocol_port_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
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

pub(super) fn https_needs_cert(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
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

/// CEL: `$s` has skip-managed-listener: "true".
pub(super) fn skipping_cel(cat: &Catalog) -> String {
    let a = catalog_annotation(cat, SKIP);
    format!("({} && {} == 'true')", a.present, a.value)
}

pub(super) fn skip_listener_irreversible_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, SKIP);
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

pub(super) fn skip_listener_needs_existing_elb_cel(
    v: &VapCtx,
) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let key = cat.key(SKIP);
    let id = catalog_annotation(cat, "id");
    let auto = catalog_annotation(cat, "autocreate");
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

pub(super) fn skip_listener_not_multicluster_cel(
    v: &VapCtx,
) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let m = catalog_annotation(cat, "multicluster");
    Ok(vec![
        CelCheck::new(
            format!("{} && {} && {} == 'true'", skipping_cel(cat), m.present, m.value),
            format!("'[skip-listener-not-multicluster] ' + {} + ': \"true\" cannot be combined with {}: \"true\"; remove one of them'", m.key, cat.key(SKIP)),
        )
        .same_when(m.key),
    ])
}

pub(super) fn skip_listener_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    cluster_gate_cel(
        v,
        "skip-listener-version",
        &SKIP_NEEDS,
        skipping_cel(cat),
        cel::lit(&format!("{}: \"true\"", cat.key(SKIP))),
    )
}

/// CCE's bookkeeping keys: never given at creation; changed later only by the CCM (a
/// denial only when the CCM's identity is configured, as in the webhook).
pub(super) fn system_annotations_reserved_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
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
pub(super) fn protocol_port_format_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
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
    let kept = cel::ListKept::new(
        v.ratchet.as_deref(),
        &key,
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

pub(super) fn https_needs_cert_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let cert = catalog_annotation(cat, "cert-id");
    let pp = catalog_annotation(cat, "protocol-port");
    Ok(vec![
        CelCheck::new(
            format!("{} && (!{} || {}.trim() == '')", protocol_in_cel(cat, &["https"]), cert.present, cert.value),
            format!("'[https-needs-cert] ' + {} + ' has an https entry but {} is not set; add the ELB certificate id as {}'", pp.key, cat.key("cert-id"), cat.key("cert-id")),
        )
        .same_when(pp.key),
    ])
}
