//! Volcengine VKE: reuse of an existing CLB/NLB. `-id` alone is the controller's plain
//! reuse (it makes the listeners and server groups); seed 004's cross-cluster mode attaches
//! the Service to server groups made by hand and needs `-id`, `-server-group-id` and
//! `-weight` together. None of them can change once the Service exists.

#[path = "volcengine_create.rs"]
mod create;

pub use create::{dependent_annotations, dependent_annotations_cel};

#[path = "volcengine_health.rs"]
mod health;

pub use health::{value_pairs, value_pairs_cel};

use super::data;
use crate::vocab::action::Action;
use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::checks::{duplicates, require_version, version_too_old};
use crate::vocab::ctx::{Ctx, Findings, Proposed};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, Check, Class, Gate, Rule, Vap, VapCtx};
use crate::vocab::version::{KubeVersion, VersionOf};

/// Names from the seed (including the `-weights` its example output shows) plus the
/// CCM's annotation table for CLB (`docs/usage.md` of the Volcengine CCM).
pub static CATALOG: Catalog = Catalog {
    provider: Provider::Volcengine,
    prefix: "service.beta.kubernetes.io/volcengine-loadbalancer-",
    legacy_prefix: None,
    default_address_type: None,
    lb_id_label: None,
    finalizers: &[],
    table: &data::VOLCENGINE,
};

const VOLC: &[Provider] = &[Provider::Volcengine];

pub static RULES: &[Rule] = &[
    Rule {
        id: "server-group-immutable",
        providers: VOLC,
        class: Class::Transition,
        gate: Gate::Transition,
        default: Action::Deny,
        title: "server-group-id cannot be added, removed or changed on an existing Service",
        source: "004 \"不支持在已有 Service 中，添加、删除或修改...server-group-id字段\"",
        check: Check::PerProvider(server_group_immutable),
        vap: Vap::Cel(server_group_immutable_cel),
    },
    Rule {
        id: "weight-immutable",
        providers: VOLC,
        class: Class::Transition,
        gate: Gate::Transition,
        default: Action::Deny,
        title: "weight cannot change on an existing Service",
        source: "004 table: 是否支持修改 = 否",
        check: Check::PerProvider(weight_immutable),
        vap: Vap::Cel(weight_immutable_cel),
    },
    Rule {
        id: "reuse-requires-fields",
        providers: VOLC,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "-server-group-id and -weight go together, with -id (server groups made by hand, as in VKE cross-cluster reuse); -id alone is plain reuse",
        source: "004 table: -id, -server-group-id, -weight 是否必须 = 是 (its cross-cluster mode); volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md:9,35-55 (reuse with -id alone)",
        check: Check::PerProvider(reuse_requires_fields),
        vap: Vap::Cel(reuse_requires_fields_cel),
    },
    Rule {
        id: "server-group-format",
        providers: VOLC,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "server-group-id is rsp-<id>:<port>[,...] with each port a spec.ports[].port, none twice",
        source: "004 \"端口号，为 Service spec配置中的port端口，而非target port或node port端口\"",
        check: Check::PerProvider(server_group_format),
        vap: Vap::Cel(server_group_format_cel),
    },
    Rule {
        id: "weight-range",
        providers: VOLC,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "weight is an integer 0..100 (0 warns: no new requests)",
        source: "004 \"整数形式，取值范围为 0～100...权重配置为 0 时，表示该服务器不会再接受新请求\"",
        check: Check::PerProvider(weight_range),
        vap: Vap::Cel(weight_range_cel),
    },
    Rule {
        id: "nlb-requires-ccm-version",
        providers: VOLC,
        class: Class::Version,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "An nlb- load balancer id needs cloud-controller-manager v1.45.1 or newer",
        source: "004 \"如需对接 NLB 实例，请升级 cloud-controller-manager 组件至 v1.45.1 及以上版本\"",
        check: Check::PerProvider(nlb_requires_ccm_version),
        vap: Vap::Cel(nlb_requires_ccm_version_cel),
    },
];

pub const NLB_CCM_MIN: KubeVersion = KubeVersion::new(1, 45, 1, 0);

/// Shared by the two immutability rules: any add, remove or change is a finding.
fn immutable(ctx: &Ctx, cat: &'static Catalog, suffix: &str, out: &mut Findings) {
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    let (o, n) = (
        cat.get(old, suffix).map(|a| a.value),
        cat.get(new, suffix).map(|a| a.value),
    );
    if o == n {
        return;
    }
    let key = cat.key(suffix);
    let show = |v: Option<&str>| v.map_or_else(|| "unset".to_string(), |v| format!("\"{v}\""));
    out.push(
        annotation_field(&key),
        format!("{key} cannot be added, removed or changed on an existing Service (was {}, now {}); restore the old value, or delete and recreate the Service", show(o), show(n)),
    );
}

fn server_group_immutable(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    immutable(ctx, cat, "server-group-id", out);
}

fn weight_immutable(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    immutable(ctx, cat, "weight", out);
}

/// The three annotations of seed 004's mode, with an example each.
const REUSE_FIELDS: [(&str, &str); 3] = [
    ("id", "\"clb-xxx\""),
    ("server-group-id", "\"rsp-xxx:80\""),
    ("weight", "\"100\""),
];

/// Seed 004's mode is on when the Service names a server group or a weight; then each of the
/// three must be given. `-id` alone is the plain reuse of the published controller table.
fn reuse_requires_fields(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(by) = cat
        .get(new, "server-group-id")
        .or_else(|| cat.get(new, "weight"))
    else {
        return;
    };
    for (suffix, example) in REUSE_FIELDS {
        if cat
            .get(new, suffix)
            .is_none_or(|a| a.value.trim().is_empty())
        {
            let key = cat.key(suffix);
            out.push(
                annotation_field(&key),
                format!("{key} is required with {}: \"{}\": attaching the Service to server groups made by hand (as in VKE cross-cluster reuse) takes -id, -server-group-id and -weight together; add it (e.g. {example}), or remove -server-group-id and -weight to let the controller make the server groups of the load balancer named by -id", by.key, by.value),
            );
        }
    }
}

fn server_group_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "server-group-id") else {
        return;
    };
    let field = annotation_field(a.key);
    let mut ports = Vec::new();
    for entry in a.value.split(',') {
        let entry = entry.trim();
        let parsed = entry.rsplit_once(':').and_then(|(group, port)| {
            let ok_group = group.strip_prefix("rsp-").is_some_and(|id| {
                !id.is_empty()
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'*')
            });
            let port = port.parse::<i32>().ok().filter(|p| (1..=65535).contains(p));
            ok_group.then_some(port).flatten()
        });
        match parsed {
            None => out.push(
                field.clone(),
                format!("{} entry \"{entry}\" is not rsp-<id>:<port>; write e.g. \"rsp-2fe7xxx:80,rsp-2fe7yyy:443\"", a.key),
            ),
            Some(p) if !new.has_port(p) => out.push(
                field.clone(),
                format!("{} entry \"{entry}\": port {p} is not one of spec.ports[].port ({}); use the Service port, not targetPort or nodePort", a.key, new.port_list()),
            ),
            Some(p) => ports.push(p),
        }
    }
    for p in duplicates(ports.into_iter()) {
        out.push(
            field.clone(),
            format!(
                "{} lists port {p} more than once; each Service port maps to one server group",
                a.key
            ),
        );
    }
}

fn weight_range(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let Some(a) = cat.get(new, "weight") else {
        return;
    };
    let field = annotation_field(a.key);
    let parsed =
        (!a.value.is_empty() && a.value.len() <= 3 && a.value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| a.value.parse::<u32>().ok())
            .flatten();
    match parsed {
        Some(0) => out.advise(
            field,
            format!(
                "{} is \"0\": the backends get no new requests; set 1-100 to send traffic",
                a.key
            ),
        ),
        Some(w) if w <= 100 => {}
        _ => out.push(
            field,
            format!(
                "{} is \"{}\"; allowed: an integer from 0 to 100",
                a.key, a.value
            ),
        ),
    }
}

fn nlb_requires_ccm_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "id")
        && a.value.starts_with("nlb-")
    {
        require_version(
            ctx,
            out,
            VersionOf::Ccm,
            &annotation_field(a.key),
            &format!("an NLB ({}: \"{}\")", a.key, a.value),
            "cloud-controller-manager v1.45.1 or newer",
            |v| *v >= NLB_CCM_MIN,
        );
    }
}

/// CEL of `immutable`: any add, remove or change.
fn immutable_cel(cat: &Catalog, rule: &str, suffix: &str) -> CelCheck {
    let a = catalog_annotation(cat, suffix);
    let (op, ov) = (
        cel::on(&a.present, "oldObject"),
        cel::on(&a.value, "oldObject"),
    );
    let (np, nv) = (cel::on(&a.present, "object"), cel::on(&a.value, "object"));
    let show = |p: &str, v: &str| format!("({p} ? '\"' + {v} + '\"' : 'unset')");
    CelCheck::new(
        format!("{op} != {np} || ({op} && {np} && {ov} != {nv})"),
        format!(
            "'[{rule}] {} cannot be added, removed or changed on an existing Service (was ' + {} + ', now ' + {} + '); restore the old value, or delete and recreate the Service'",
            cat.key(suffix),
            show(&op, &ov),
            show(&np, &nv)
        ),
    )
}

fn server_group_immutable_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    Ok(vec![immutable_cel(
        cat,
        "server-group-immutable",
        "server-group-id",
    )])
}

fn weight_immutable_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    Ok(vec![immutable_cel(cat, "weight-immutable", "weight")])
}

fn reuse_requires_fields_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let (group, weight) = (
        catalog_annotation(cat, "server-group-id"),
        catalog_annotation(cat, "weight"),
    );
    // The annotation that turns the mode on, as `reuse_requires_fields` picks it.
    let by_key = format!("({} ? {} : {})", group.present, group.key, weight.key);
    let by_value = format!("({} ? {} : {})", group.present, group.value, weight.value);
    Ok(REUSE_FIELDS
        .into_iter()
        .map(|(suffix, example)| {
            let a = catalog_annotation(cat, suffix);
            CelCheck::new(
                format!(
                    "({} || {}) && (!{} || {}.trim() == '')",
                    group.present, weight.present, a.present, a.value
                ),
                format!(
                    "'[reuse-requires-fields] {} is required with ' + {by_key} + ': \"' + {by_value} + '\": attaching the Service to server groups made by hand (as in VKE cross-cluster reuse) takes -id, -server-group-id and -weight together; add it (e.g. {example}), or remove -server-group-id and -weight to let the controller make the server groups of the load balancer named by -id'",
                    cat.key(suffix),
                ),
            )
            .same_when(format!("{by_key} + {by_value}"))
        })
        .collect())
}

/// CEL of `server_group_format`: each entry well formed, its port a Service port, no port
/// twice. On an update, findings the live Service already had (same entry, same ports) are
/// kept, one by one, as the engine's ratchet does.
fn server_group_format_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let key = cat.key("server-group-id");
    let k = cel::lit(&key);
    let entries = |s: &str| format!("{s}.metadata.annotations[{k}].split(',')");
    let port = |e: &str| format!("int({e}.trim().substring({e}.trim().lastIndexOf(':') + 1))");
    let ok = |e: &str| {
        format!(
            "({e}.trim().matches('^rsp-[A-Za-z0-9*-]+:[+]?[0-9]{{1,10}}$') && {p} >= 1 && {p} <= 65535)",
            p = port(e)
        )
    };
    let in_spec = |s: &str, e: &str| {
        format!(
            "(has({s}.spec.ports) && {s}.spec.ports.exists(p, p.port == {}))",
            port(e)
        )
    };
    let dup = |s: &str, e: &str| {
        format!(
            "{}.filter(f, {} && {} && {} == {}).size() > 1",
            entries(s),
            ok("f"),
            in_spec(s, "f"),
            port("f"),
            port(e)
        )
    };
    let kept = cel::ListKept::new(
        v.ratchet.as_deref(),
        &key,
        &entries("oldObject"),
        format!(
            "{}.exists(o, {} && {} && {} == {} && {})",
            entries("oldObject"),
            ok("o"),
            in_spec("oldObject", "o"),
            port("o"),
            port("e"),
            dup("oldObject", "o")
        ),
    );
    let (kept_bad, kept_missing, kept_dup) = (kept.entry, kept.ports, kept.dup);
    let violates = format!(
        "{} && {}.exists(e, (!{} && !{kept_bad}) || ({} && !{} && !{kept_missing}) || ({} && {} && {} && !{kept_dup}))",
        cel::on(&cel::has_annotation(&key), "object"),
        entries("object"),
        ok("e"),
        ok("e"),
        in_spec("object", "e"),
        ok("e"),
        in_spec("object", "e"),
        dup("object", "e"),
    );
    Ok(vec![CelCheck::new(
        violates,
        format!(
            "'[server-group-format] {key} is \"' + object.metadata.annotations[{k}] + '\": each entry must be rsp-<id>:<port> with the port one of spec.ports[].port, and no port twice; write e.g. \"rsp-2fe7xxx:80,rsp-2fe7yyy:443\"'"
        ),
    )])
}

fn weight_range_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "weight");
    Ok(vec![
        CelCheck::new(
            format!(
                "{} && !({}.matches('^[0-9]{{1,3}}$') && int({}) <= 100)",
                a.present, a.value, a.value
            ),
            format!(
                "'[weight-range] ' + {} + ' is \"' + {} + '\"; allowed: an integer from 0 to 100'",
                a.key, a.value
            ),
        )
        .same_when(a.value.clone()),
        CelCheck::advice(
            format!("{} && {}.matches('^0{{1,3}}$')", a.present, a.value),
            format!(
                "'[weight-range] ' + {} + ' is \"0\": the backends get no new requests; set 1-100 to send traffic'",
                a.key
            ),
        ),
    ])
}

fn nlb_requires_ccm_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    if !version_too_old(v, VersionOf::Ccm, |k| *k >= NLB_CCM_MIN)? {
        return Ok(vec![]);
    }
    let a = catalog_annotation(cat, "id");
    let runs = v.versions.ccm_text();
    Ok(vec![
        CelCheck::new(
            format!("{} && {}.startsWith('nlb-')", a.present, a.value),
            format!("'[nlb-requires-ccm-version] an NLB (' + {} + ': \"' + {} + '\") needs cloud-controller-manager v1.45.1 or newer; the cloud-controller-manager runs {runs}; upgrade the cloud-controller-manager first, or remove it'", a.key, a.value),
        )
        .same_when(a.value),
    ])
}

/// Volcengine's defaults: a weight for a Service attached to server groups made by hand
/// (`defaults.volcengineWeight`). Plain reuse (`-id` alone) takes no weight: the controller
/// makes the server groups, and a weight without `-server-group-id` is denied.
pub fn defaults(ctx: &Ctx) -> Vec<Proposed> {
    let cat = &CATALOG;
    match (ctx.new, ctx.config.defaults.volcengine_weight) {
        (Some(new), Some(w)) if cat.get(new, "server-group-id").is_some() => vec![Proposed {
            key: cat.key("weight"),
            value: w.to_string(),
            reason: "defaults.volcengineWeight: server groups made by hand (-server-group-id) need a weight".into(),
            fixed: true,
            inventory: false,
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "volcengine_tests.rs"]
mod tests;
