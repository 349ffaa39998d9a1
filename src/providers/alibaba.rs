//! Alibaba Cloud ACK: annotation catalog and the rules only its CCM has.
//!
//! The known names are the public CCM's (`pkg/controller/service/reconcile/annotation/
//! annotations.go`), plus NLB names the CCM parses in `nlbv2` (`listener-port-range`).

use super::data;
use crate::vocab::cel;
use crate::vocab::checks::duplicates;
use crate::vocab::ctx::{Ctx, Findings, Proposed};
use crate::vocab::provider::{Catalog, Provider, annotation_field};
use crate::vocab::rule::{Action, CelCheck, Check, Class, Gate, Rule, Vap, VapCtx};
use crate::vocab::service::Svc;

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

pub static RULES: &[Rule] = &[
    Rule {
        id: "legacy-prefix-conflict",
        providers: ALIBABA,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "The same key under alibaba-cloud-loadbalancer- and the legacy alicloud-loadbalancer- prefix with different values",
        source: "Alibaba CCM annotations.go Get(): the new prefix wins silently",
        check: Check::PerProvider(legacy_prefix_conflict),
        vap: Vap::Cel(legacy_prefix_conflict_cel),
    },
    Rule {
        id: "annotation-format",
        providers: ALIBABA,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "Value formats the Alibaba CCM parses (protocol-port, vgroup-port, weights, integers, forward-port, listener-port-range, zone-maps)",
        source: "Alibaba CCM clbv1/listeners.go, clbv1/vgroups.go, nlbv2/*",
        check: Check::PerProvider(annotation_format),
        vap: Vap::Cel(annotation_format_cel),
    },
    Rule {
        id: "dependent-annotations",
        providers: ALIBABA,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "acl-status on needs acl-id; sticky-session on needs its type; insert needs cookie-timeout, server needs cookie; vswitch-id needs intranet",
        source: "ACK CCM docs/usage.md",
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

fn is_int(v: &str) -> bool {
    let v = v.strip_prefix('-').unwrap_or(v);
    !v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit())
}

fn parse_port(v: &str) -> Option<i32> {
    (is_int(v) && !v.starts_with('-'))
        .then(|| v.parse::<i32>().ok())
        .flatten()
        .filter(|p| (1..=65535).contains(p))
}

const INTEGER_KEYS: &[&str] = &[
    "idle-timeout",
    "request-timeout",
    "established-timeout",
    "persistence-timeout",
    "cookie-timeout",
    "connection-drain-timeout",
    "health-check-connect-port",
    "healthy-threshold",
    "unhealthy-threshold",
    "health-check-interval",
    "health-check-connect-timeout",
    "health-check-timeout",
    "bandwidth",
];

/// `<item>:<port>` lists, comma separated, where the port must be a Service port.
fn port_list(
    svc: Svc,
    key: &str,
    value: &str,
    what: &str,
    item_ok: impl Fn(&str) -> bool,
    out: &mut Findings,
) {
    let mut ports = Vec::new();
    for entry in value.split(',') {
        let entry = entry.trim();
        let Some((item, port)) = entry.rsplit_once(':') else {
            out.push(
                annotation_field(key),
                format!("{key} entry \"{entry}\" is not {what}:<port>; the cloud controller fails to parse it; write e.g. {}", example(what)),
            );
            continue;
        };
        if !item_ok(item) {
            out.push(
                annotation_field(key),
                format!(
                    "{key} entry \"{entry}\": \"{item}\" is not a valid {what}; write e.g. {}",
                    example(what)
                ),
            );
        }
        match parse_port(port) {
            None => out.push(
                annotation_field(key),
                format!("{key} entry \"{entry}\": \"{port}\" is not a port number (1-65535)"),
            ),
            Some(p) if !svc.has_port(p) => out.push(
                annotation_field(key),
                format!("{key} entry \"{entry}\": port {p} is not one of spec.ports[].port ({}); use the Service port, not targetPort or nodePort", svc.port_list()),
            ),
            Some(p) => ports.push(p),
        }
    }
    for p in duplicates(ports.into_iter()) {
        out.push(
            annotation_field(key),
            format!("{key} lists port {p} more than once; give each port one entry"),
        );
    }
}

fn example(what: &str) -> &'static str {
    match what {
        "protocol" => "\"https:443,http:80\"",
        "vgroup" => "\"vsp-bp1xxx:80\"",
        _ => "\"<value>:<port>\"",
    }
}

/// Each check mirrors a parse the CCM does, so the message says what the CCM would.
fn annotation_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if let Some(a) = cat.get(new, "protocol-port") {
        port_list(
            new,
            a.key,
            a.value,
            "protocol",
            |p| ["http", "https", "tcp", "udp"].contains(&p),
            out,
        );
    }
    if let Some(a) = cat.get(new, "vgroup-port") {
        port_list(
            new,
            a.key,
            a.value,
            "vgroup",
            |v| v.starts_with("vsp-") && v.len() > 4,
            out,
        );
    }
    for suffix in ["weight", "default-weight"] {
        if let Some(a) = cat.get(new, suffix) {
            let ok =
                is_int(a.value) && a.value.parse::<i64>().is_ok_and(|w| (0..=100).contains(&w));
            if !ok {
                out.push(
                    annotation_field(a.key),
                    format!(
                        "{} is \"{}\"; allowed: an integer from 0 to 100",
                        a.key, a.value
                    ),
                );
            }
        }
    }
    for suffix in INTEGER_KEYS {
        if let Some(a) = cat.get(new, suffix)
            && !is_int(a.value.trim())
        {
            out.push(
                annotation_field(a.key),
                format!("{} is \"{}\"; the cloud controller fails with \"strconv.Atoi: parsing {:?}: invalid syntax\"; allowed: an integer", a.key, a.value, a.value),
            );
        }
    }
    if let Some(a) = cat.get(new, "forward-port") {
        for entry in a.value.split(',') {
            let ok = entry.split_once(':').is_some_and(|(f, t)| {
                parse_port(f.trim()).is_some() && parse_port(t.trim()).is_some()
            });
            if !ok {
                out.push(
                    annotation_field(a.key),
                    format!(
                        "{} entry \"{entry}\" is not <httpPort>:<httpsPort>; write e.g. \"80:443\"",
                        a.key
                    ),
                );
            }
        }
    }
    if let Some(a) = cat.get(new, "listener-port-range") {
        for entry in a.value.split(',') {
            let ok = entry.split_once(':').and_then(|(range, port)| {
                let (s, e) = range.trim().split_once('-')?;
                let (s, e) = (parse_port(s.trim())?, parse_port(e.trim())?);
                parse_port(port.trim())?;
                (s < e).then_some(())
            });
            if ok.is_none() {
                out.push(
                    annotation_field(a.key),
                    format!("{} entry \"{entry}\" is not <start>-<end>:<port> with 1 <= start < end <= 65535; write e.g. \"10000-10010:80\"", a.key),
                );
            }
        }
    }
    if let Some(a) = cat.get(new, "zone-maps") {
        for entry in a.value.split(',') {
            let ok = entry
                .split_once(':')
                .is_some_and(|(z, v)| !z.trim().is_empty() && v.trim().starts_with("vsw-"));
            if !ok {
                out.push(
                    annotation_field(a.key),
                    format!("{} entry \"{entry}\" is not <zone>:<vswitch-id>; write e.g. \"cn-hangzhou-h:vsw-xxx,cn-hangzhou-i:vsw-yyy\"", a.key),
                );
            }
        }
    }
}

fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
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
    needs("vswitch-id", None, "address-type", Some("intranet"));
}

/// CEL: `v` is a port as `parse_port` reads it.
fn port_cel(v: &str) -> String {
    format!("({v}.matches('^[0-9]{{1,10}}$') && int({v}) >= 1 && int({v}) <= 65535)")
}

/// CEL of `port_list`: `<item>:<port>` entries (split at the last colon), each item valid,
/// each port a Service port, none twice; on an update, findings the live Service already
/// had are kept one by one (same key, same entry, same Service ports).
fn port_list_cel(
    cat: &Catalog,
    v: &VapCtx,
    suffix: &str,
    item_ok: impl Fn(&str) -> String,
    example: &str,
) -> CelCheck {
    let a = cel::catalog_annotation(cat, suffix);
    let entries = |s: &str| format!("{}.split(',')", cel::on(&a.value, s));
    let t = |e: &str| format!("{e}.trim()");
    let colon = |e: &str| format!("({}.lastIndexOf(':') >= 0)", t(e));
    let item = |e: &str| format!("{}.substring(0, {}.lastIndexOf(':'))", t(e), t(e));
    let port_s = |e: &str| format!("{}.substring({}.lastIndexOf(':') + 1)", t(e), t(e));
    let port_ok = |e: &str| format!("({} && {})", colon(e), port_cel(&port_s(e)));
    let in_spec = |s: &str, e: &str| {
        format!(
            "(has({s}.spec.ports) && {s}.spec.ports.exists(p, p.port == int({})))",
            port_s(e)
        )
    };
    let counted = |s: &str, e: &str| format!("({} && {})", port_ok(e), in_spec(s, e));
    let dup = |s: &str, e: &str| {
        format!(
            "{}.filter(f, {} && int({}) == int({})).size() > 1",
            entries(s),
            counted(s, "f"),
            port_s("f"),
            port_s(e)
        )
    };
    let bad = format!(
        "(!{} || !{} || !{})",
        colon("e"),
        item_ok(&item("e")),
        port_ok("e")
    );
    let missing = format!("({} && !{})", port_ok("e"), in_spec("object", "e"));
    let twice = format!("({} && {})", counted("object", "e"), dup("object", "e"));
    // Findings name the key: only the same key (current or legacy prefix) keeps them.
    let old = v.ratchet.as_ref().map(|r| {
        format!(
            "({r} && {} && {} == {})",
            cel::on(&a.present, "oldObject"),
            cel::on(&a.key, "oldObject"),
            cel::on(&a.key, "object")
        )
    });
    let kept = cel::ListKept::new(
        old,
        &entries("oldObject"),
        format!(
            "{}.exists(o, {} && int({}) == int({}) && {})",
            entries("oldObject"),
            counted("oldObject", "o"),
            port_s("o"),
            port_s("e"),
            dup("oldObject", "o")
        ),
    );
    let (kept_bad, kept_missing, kept_dup) = (kept.entry, kept.ports, kept.dup);
    let now = |x: &str| cel::on(x, "object");
    CelCheck::new(
        format!(
            "{} && {}.exists(e, ({bad} && !{kept_bad}) || ({missing} && !{kept_missing}) || ({twice} && !{kept_dup}))",
            now(&a.present),
            entries("object")
        ),
        format!(
            "'[annotation-format] ' + {} + ' is \"' + {} + '\": each entry must be <value>:<port> with a valid value and a port of spec.ports[].port, no port twice; write e.g. {example}'",
            now(&a.key),
            now(&a.value)
        ),
    )
}

/// CEL: every comma-separated entry of `suffix`'s value passes `entry_ok` (entries as written,
/// not trimmed); on an update, bad entries the live Service already had are kept.
fn entries_cel(
    cat: &Catalog,
    v: &VapCtx,
    suffix: &str,
    entry_ok: impl Fn(&str) -> String,
    expected: &str,
) -> CelCheck {
    let a = cel::catalog_annotation(cat, suffix);
    let kept = match &v.ratchet {
        Some(r) => format!(
            "({r} && {} && {} == {} && {}.split(',').exists(o, o == e))",
            cel::on(&a.present, "oldObject"),
            cel::on(&a.key, "oldObject"),
            cel::on(&a.key, "object"),
            cel::on(&a.value, "oldObject")
        ),
        None => "false".into(),
    };
    let now = |x: &str| cel::on(x, "object");
    CelCheck::new(
        format!(
            "{} && {}.split(',').exists(e, !{} && !{kept})",
            now(&a.present),
            now(&a.value),
            entry_ok("e")
        ),
        format!(
            "'[annotation-format] ' + {} + ' is \"' + {} + '\": each entry must be {expected}'",
            now(&a.key),
            now(&a.value)
        ),
    )
}

/// The CEL of `annotation_format`, one check per annotation.
fn annotation_format_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let mut out = vec![
        port_list_cel(
            cat,
            v,
            "protocol-port",
            |i| format!("({i} in ['http', 'https', 'tcp', 'udp'])"),
            "\"https:443,http:80\"",
        ),
        port_list_cel(
            cat,
            v,
            "vgroup-port",
            |i| format!("({i}.startsWith('vsp-') && size({i}) > 4)"),
            "\"vsp-bp1xxx:80\"",
        ),
    ];
    for suffix in ["weight", "default-weight"] {
        let a = cel::catalog_annotation(cat, suffix);
        out.push(
            CelCheck::new(
                format!(
                    "{} && !({}.matches('^-?[0-9]{{1,10}}$') && int({}) >= 0 && int({}) <= 100)",
                    a.present, a.value, a.value, a.value
                ),
                format!(
                    "'[annotation-format] ' + {} + ' is \"' + {} + '\"; allowed: an integer from 0 to 100'",
                    a.key, a.value
                ),
            )
            .same_when(format!("{} + '=' + {}", a.key, a.value)),
        );
    }
    for suffix in INTEGER_KEYS {
        let a = cel::catalog_annotation(cat, suffix);
        out.push(
            CelCheck::new(
                format!(
                    "{} && !{}.trim().matches('^-?[0-9]{{1,10}}$')",
                    a.present, a.value
                ),
                format!(
                    "'[annotation-format] ' + {} + ' is \"' + {} + '\"; the cloud controller cannot parse it as an integer; allowed: an integer'",
                    a.key, a.value
                ),
            )
            .same_when(format!("{} + '=' + {}", a.key, a.value)),
        );
    }
    let first = |e: &str| format!("{e}.substring(0, {e}.indexOf(':')).trim()");
    let rest = |e: &str| format!("{e}.substring({e}.indexOf(':') + 1).trim()");
    out.push(entries_cel(
        cat,
        v,
        "forward-port",
        |e| {
            format!(
                "({e}.indexOf(':') >= 0 && {} && {})",
                port_cel(&first(e)),
                port_cel(&rest(e))
            )
        },
        "<httpPort>:<httpsPort>, e.g. \\\"80:443\\\"",
    ));
    out.push(entries_cel(
        cat,
        v,
        "listener-port-range",
        |e| {
            let range = first(e);
            let start = format!("{range}.substring(0, {range}.indexOf('-')).trim()");
            let end = format!("{range}.substring({range}.indexOf('-') + 1).trim()");
            format!(
                "({e}.indexOf(':') >= 0 && {range}.indexOf('-') >= 0 && {} && {} && {} && int({start}) < int({end}))",
                port_cel(&start),
                port_cel(&end),
                port_cel(&rest(e))
            )
        },
        "<start>-<end>:<port> with 1 <= start < end <= 65535, e.g. \\\"10000-10010:80\\\"",
    ));
    out.push(entries_cel(
        cat,
        v,
        "zone-maps",
        |e| {
            format!(
                "({e}.indexOf(':') >= 0 && {} != '' && {}.startsWith('vsw-'))",
                first(e),
                rest(e)
            )
        },
        "<zone>:<vswitch-id>, e.g. \\\"cn-hangzhou-h:vsw-xxx\\\"",
    ));
    Ok(out)
}

/// One finding per legacy key whose current twin differs; on an update, a conflict the live
/// Service already had (same key, same values) is kept, as the engine's ratchet does.
fn legacy_prefix_conflict_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let Some(legacy) = cat.legacy_prefix else {
        return Ok(vec![]);
    };
    let twin = format!("{} + k.substring({})", cel::lit(cat.prefix), legacy.len());
    let conflict = |s: &str| {
        format!(
            "(k.startsWith({}) && ({twin}) in {s}.metadata.annotations && {s}.metadata.annotations[{twin}] != {s}.metadata.annotations[k])",
            cel::lit(legacy)
        )
    };
    let kept = match &v.ratchet {
        Some(old) => format!(
            " && !({old} && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && ({twin}) in oldObject.metadata.annotations && oldObject.metadata.annotations[k] == object.metadata.annotations[k] && oldObject.metadata.annotations[{twin}] == object.metadata.annotations[{twin}])"
        ),
        None => String::new(),
    };
    let new = conflict("object");
    let first = format!("object.metadata.annotations.filter(k, {new}{kept})[0]");
    let twin_first = format!(
        "{} + {first}.substring({})",
        cel::lit(cat.prefix),
        legacy.len()
    );
    Ok(vec![CelCheck::new(
        format!(
            "has(object.metadata.annotations) && object.metadata.annotations.exists(k, {new}{kept})"
        ),
        format!(
            "'[legacy-prefix-conflict] ' + {first} + ' is \"' + object.metadata.annotations[{first}] + '\" but ' + {twin_first} + ' is \"' + object.metadata.annotations[{twin_first}] + '\"; the cloud controller uses the latter and ignores the legacy key; remove the legacy key or give both the same value'"
        ),
    )])
}

fn dependent_annotations_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let needs = |when: &str, when_value: Option<&str>, need: &str, need_value: Option<&str>| {
        let a = cel::catalog_annotation(cat, when);
        let n = cel::catalog_annotation(cat, need);
        let triggered = match when_value {
            Some(w) => format!("{} && {} == {}", a.present, a.value, cel::lit(w)),
            None => a.present.clone(),
        };
        let (ok, desc) = match need_value {
            None => (
                format!("({} && {} != '')", n.present, n.value),
                cat.key(need),
            ),
            Some(nv) => (
                format!("({} && {} == {})", n.present, n.value, cel::lit(nv)),
                format!("{}: \"{nv}\"", cat.key(need)),
            ),
        };
        CelCheck::new(
            format!("{triggered} && !{ok}"),
            format!(
                "'[dependent-annotations] ' + {} + ': \"' + {} + '\" needs {} ; add it, or remove ' + {}",
                a.key,
                a.value,
                desc.replace('\'', "\\'").replace('"', "\\\""),
                a.key
            )
            .replace(" ; add", "; add"),
        )
        .same_when(format!("{} + '=' + {}", a.key, a.value))
    };
    Ok(vec![
        needs("acl-status", Some("on"), "acl-id", None),
        needs("sticky-session", Some("on"), "sticky-session-type", None),
        needs(
            "sticky-session-type",
            Some("insert"),
            "cookie-timeout",
            None,
        ),
        needs("sticky-session-type", Some("server"), "cookie", None),
        needs("vswitch-id", None, "address-type", Some("intranet")),
    ])
}

/// Alibaba's defaults: the reused load balancer's address type from the inventory.
pub fn defaults(ctx: &Ctx) -> Vec<Proposed> {
    super::inventory_address_type(ctx, &CATALOG)
        .into_iter()
        .collect()
}

#[cfg(test)]
#[path = "alibaba_tests.rs"]
mod tests;
