//! The CEL of ACK's rules (`lbguard export-vap`): the same reading as `format`, with the
//! controller picked by the Service's class, and the engine's update ratchet finding by
//! finding.

use super::nlb::BACKEND_TYPE;
use super::value::{CLB_PROTOCOLS, NLB_PROTOCOLS};
use crate::vocab::annotations::{Format, Table};
use crate::vocab::catalog::{Catalog, catalog_annotation};
use crate::vocab::cel::{self, on};
use crate::vocab::controller::Controller;
use crate::vocab::route::{Scope, builtin_classes};
use crate::vocab::rule::{CelCheck, VapCtx};

/// White space as Rust's `char::is_whitespace` sees it (RE2's `\s` is ASCII only).
const WHITE_SPACE: &str = r"[\s\v\x{85}\p{Z}]";
/// A number as Go's `strconv.Atoi` reads it (leading zeros past 18 digits aside).
const ATOI: &str = "^[+-]?0*[0-9]{1,18}$";

/// CEL over `$s`: ACK's NLB controller takes it (as `Ctx::is_nlb`).
pub fn is_nlb(v: &VapCtx) -> String {
    let scope = Scope::of(v.config);
    let mut classes: Vec<&str> = scope
        .classes
        .iter()
        .filter(|(_, c)| **c == Controller::Nlb)
        .map(|(k, _)| k.as_str())
        .collect();
    classes.extend(
        builtin_classes(crate::vocab::provider::Provider::Alibaba)
            .iter()
            .filter(|(_, c)| *c == Controller::Nlb)
            .map(|(k, _)| *k),
    );
    // Every check reads it: one policy variable per object.
    cel::shared(
        "$s_alibaba_nlb",
        &format!(
            "$s != null && has($s.spec.loadBalancerClass) && $s.spec.loadBalancerClass in {}",
            cel::list(&classes)
        ),
    )
}

/// CEL: `v` is a port as `value::port_ok` reads it.
fn port(v: &str) -> String {
    format!(
        "({v}.matches({}) && int({v}) >= 1 && int({v}) <= 65535)",
        cel::lit(ATOI)
    )
}

/// CEL: `v` is not empty and has no white space (`value::group_id_ok`).
fn token(v: &str) -> String {
    format!("({v} != '' && !{v}.matches({}))", cel::lit(WHITE_SPACE))
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\'', "\\'")
        .replace('"', "\\\"")
}

/// The CEL of `format::annotation_format`.
pub fn annotation_format(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let nlb_s = is_nlb(v);
    let nlb = on(&nlb_s, "object");
    // Three policies (`lbguard-annotation-format-alibaba[-values|-api]`): together they are
    // too big for client-side `kubectl apply`, and the tables grow.
    let values: Vec<CelCheck> = values(cat, &nlb_s)?
        .into_iter()
        .map(|c| c.in_part("values"))
        .collect();
    let api = crate::providers::api::cel::checks(cat, &nlb_s, "annotation-format")
        .into_iter()
        .map(|c| c.in_part("api"));
    let mut out = Vec::new();
    let clb_protocols = cel::list(CLB_PROTOCOLS);
    let nlb_protocols: Vec<String> = NLB_PROTOCOLS
        .iter()
        .map(|p| p.to_ascii_lowercase())
        .collect();
    let nlb_protocols: Vec<&str> = nlb_protocols.iter().map(String::as_str).collect();
    let nlb_protocols = cel::list(&nlb_protocols);
    out.extend(port_list(cat, v, "protocol-port", &|i| {
        format!("({nlb} ? {i}.lowerAscii() in {nlb_protocols} : {i} in {clb_protocols})")
    }));
    out.extend(port_list(cat, v, "vgroup-port", &|i| token(i)));
    let nlb_only = |c: CelCheck| CelCheck {
        violates: format!("{nlb} && ({})", c.violates),
        ..c
    };
    let clb_only = |c: CelCheck| CelCheck {
        violates: format!("!{nlb} && ({})", c.violates),
        ..c
    };
    let parts = |e: &str| format!("{e}.split(':')");
    out.push(clb_only(entries(cat, v, "forward-port", &|e| {
        let p = parts(e);
        format!(
            "(size({p}) == 2 && {} && {})",
            port(&format!("{p}[0]")),
            port(&format!("{p}[1]"))
        )
    })));
    out.push(clb_only(forward_target(cat)));
    out.push(clb_only(entries(cat, v, "domain-extensions", &|e| {
        format!("(size({e}.trim().split(':')) == 2)")
    })));
    out.push(clb_only(hostname(cat)));
    out.push(nlb_only(entries(cat, v, "listener-port-range", &|e| {
        let p = parts(e);
        let r = format!("{p}[0].split('-')");
        let (s, en) = (format!("{r}[0]"), format!("{r}[1]"));
        format!(
            "(size({p}) == 2 && size({r}) == 2 && {s}.matches({atoi}) && {en}.matches({atoi}) && int({s}) >= 1 && int({en}) <= 65535 && int({s}) < int({en}) && {})",
            port(&format!("{p}[1]")),
            atoi = cel::lit(ATOI)
        )
    })));
    out.push(nlb_only(entries(cat, v, "zone-maps", &|e| {
        let p = parts(e);
        format!(
            "(size({p}) >= 2 && {} && {} && {p}[1].startsWith('vsw-'))",
            token(&format!("{p}[0]")),
            token(&format!("{p}[1]"))
        )
    })));
    let range = catalog_annotation(cat, "listener-port-range");
    let backend = cel::has_annotation(BACKEND_TYPE);
    let backend_value = cel::annotation(BACKEND_TYPE);
    out.push(
        CelCheck::new(
            format!(
                "{nlb_s} && {} && {} != '' && {backend} && {backend_value} != '' && {backend_value} != 'eni'",
                range.present, range.value,
            ),
            format!(
                "'[annotation-format] ' + {} + ' needs the ENI backend, but {BACKEND_TYPE} is \"' + {backend_value} + '\"; set it to eni, or remove the port range'",
                range.key,
            ),
        )
        .same_when(format!("{} + '=' + {backend_value}", range.key)),
    );
    let zones = catalog_annotation(cat, "zone-maps");
    let id = catalog_annotation(cat, "id");
    out.push(
        CelCheck::new(
            format!(
                "{nlb_s} && !({} && {} != '') && !({} && {} != '')",
                zones.present, zones.value, id.present, id.value
            ),
            cel::lit(&format!(
                "[annotation-format] an NLB that the cloud controller creates needs {}: its vSwitch in each zone",
                cat.key("zone-maps")
            )),
        )
        .same_when("'zone-maps'"),
    );
    out.extend(values);
    out.extend(api);
    Ok(out)
}

/// The table's formats, CLB's or NLB's by the Service's class.
fn values(cat: &'static Catalog, nlb: &str) -> Result<Vec<CelCheck>, &'static str> {
    let mut out = Vec::new();
    for e in cat
        .table()
        .annotations
        .iter()
        .filter(|e| e.rule.as_deref() == Some("annotation-format"))
    {
        let a = catalog_annotation(cat, &e.name);
        let value = a.value.clone();
        let (clb, nlb_f) = (Table::format_for(e, false), Table::format_for(e, true));
        let (Some(clb_ok), Some(nlb_ok)) = (clb.cel(&value), nlb_f.cel(&value)) else {
            return Err("a JSON value needs a JSON parser, which Kubernetes CEL lacks");
        };
        if clb_ok == "true" && nlb_ok == "true" {
            continue;
        }
        // One reading for both controllers: no need to ask which.
        let ok = if clb_ok == nlb_ok {
            clb_ok
        } else {
            format!("({nlb} ? ({nlb_ok}) : ({clb_ok}))")
        };
        let (nlb_says, clb_says) = (esc(&nlb_f.expected()), esc(&clb.expected()));
        let allowed = if nlb_says == clb_says {
            format!("'{clb_says}'")
        } else {
            format!("({nlb} ? '{nlb_says}' : '{clb_says}')")
        };
        let mut message = format!(
            "'[annotation-format] ' + {} + ' is \"' + {value} + '\", which the cloud controller cannot use; allowed: ' + {allowed}",
            a.key,
        );
        // As `format`: an NLB number the controller sends as 0 (Go int32) it does not send.
        if matches!(nlb_f, Format::Atoi32(_)) {
            message = format!(
                "({nlb} && {} && {} == 0 ? '[annotation-format] ' + {} + ' is \"' + {value} + '\": the NLB controller sends nothing for 0, so the cloud keeps what it has and the value does nothing; it is refused as a typo; allowed: ' + {allowed} : {message})",
                cel::atoi_number(&value),
                cel::int32(&format!("int({value})")),
                a.key,
            );
        }
        out.push(
            CelCheck::new(
                format!("{} && {value} != '' && !({ok})", a.present),
                message,
            )
            .same_when(format!("{} + '=' + {}", a.key, a.value)),
        );
    }
    Ok(out)
}

/// `<item>:<port>` entries as `format::port_list` reads them (split on `,` then `:`, not
/// trimmed, ports matched as strings); on an update, bad entries the live Service already had
/// under the same key are kept. Entries the controller ignores are advice.
fn port_list(
    cat: &Catalog,
    v: &VapCtx,
    suffix: &str,
    item_ok: &dyn Fn(&str) -> String,
) -> Vec<CelCheck> {
    let a = catalog_annotation(cat, suffix);
    let entries = |s: &str| format!("{}.split(',')", on(&a.value, s));
    let colon = |e: &str| format!("(size({e}.split(':')) >= 2)");
    let item = |e: &str| format!("{e}.split(':')[0]");
    let port_of = |e: &str| format!("{e}.split(':')[1]");
    let in_spec = |s: &str, e: &str| {
        format!(
            "(has({s}.spec.ports) && {s}.spec.ports.exists(p, string(p.port) == {}))",
            port_of(e)
        )
    };
    let counted = |s: &str, e: &str| format!("({} && {})", colon(e), in_spec(s, e));
    let dup = |s: &str, e: &str| {
        format!(
            "({}.filter(f, {} && {} == {}).size() > 1)",
            entries(s),
            counted(s, "f"),
            port_of("f"),
            port_of(e)
        )
    };
    let bad = format!("(!{} || !{})", colon("e"), item_ok(&item("e")));
    let missing = format!("({} && !{})", colon("e"), in_spec("object", "e"));
    let twice = format!("({} && {})", counted("object", "e"), dup("object", "e"));
    let kept_bad = match &v.ratchet {
        None => "false".to_string(),
        Some(r) => {
            let same_key = format!(
                "({r} && {} && {} != '' && {} == {})",
                on(&a.present, "oldObject"),
                on(&a.value, "oldObject"),
                on(&a.key, "oldObject"),
                on(&a.key, "object")
            );
            format!("({same_key} && {}.exists(o, o == e))", entries("oldObject"))
        }
    };
    // Entries the controller never reads (no such Service port, or a port named twice) are
    // notes: the advice.
    let now = |x: &str| on(x, "object");
    vec![
        CelCheck::new(
            format!(
                "{} && {} != '' && {}.exists(e, {bad} && !{kept_bad})",
                now(&a.present),
                now(&a.value),
                entries("object")
            ),
            format!(
                "'[annotation-format] ' + {} + ' is \"' + {} + '\": each entry must be <value>:<port> with a value the cloud controller takes'",
                now(&a.key),
                now(&a.value)
            ),
        ),
        CelCheck::advice(
            format!(
                "{} && {} != '' && {}.exists(e, {missing} || {twice})",
                now(&a.present),
                now(&a.value),
                entries("object")
            ),
            format!(
                "'[annotation-format] ' + {} + ' is \"' + {} + '\": ' + {}",
                now(&a.key),
                now(&a.value),
                cel::lit(super::format::IGNORED_ENTRIES)
            ),
        ),
    ]
}

/// Every comma-separated entry of `suffix`'s value passes `entry_ok` (entries as written);
/// on an update, bad entries the live Service already had under the same key are kept.
fn entries(cat: &Catalog, v: &VapCtx, suffix: &str, entry_ok: &dyn Fn(&str) -> String) -> CelCheck {
    let a = catalog_annotation(cat, suffix);
    let kept = match &v.ratchet {
        Some(r) => format!(
            "({r} && {} && {} == {} && {}.split(',').exists(o, o == e))",
            on(&a.present, "oldObject"),
            on(&a.key, "oldObject"),
            on(&a.key, "object"),
            on(&a.value, "oldObject")
        ),
        None => "false".into(),
    };
    let now = |x: &str| on(x, "object");
    CelCheck::new(
        format!(
            "{} && {} != '' && {}.split(',').exists(e, !{} && !{kept})",
            now(&a.present),
            now(&a.value),
            now(&a.value),
            entry_ok("e")
        ),
        format!(
            "'[annotation-format] ' + {} + ' is \"' + {} + '\": an entry is not in the form the cloud controller reads'",
            now(&a.key),
            now(&a.value)
        ),
    )
}

/// One finding per legacy key whose current twin differs; on an update, a conflict the live
/// Service already had (same key, same values) is kept, as the engine's ratchet does.
pub fn legacy_prefix_conflict(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
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

pub fn dependent_annotations(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let nlb = is_nlb(v);
    let needs = |when: &str, when_value: Option<&str>, need: &str, need_value: Option<&str>| {
        let a = catalog_annotation(cat, when);
        let n = catalog_annotation(cat, need);
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
            format!("!{nlb} && {triggered} && !{ok}"),
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
    let mut out = crate::providers::api::cel::checks(cat, &nlb, "dependent-annotations");
    out.extend([
        needs("acl-status", Some("on"), "acl-id", None),
        needs("sticky-session", Some("on"), "sticky-session-type", None),
        needs(
            "sticky-session-type",
            Some("insert"),
            "cookie-timeout",
            None,
        ),
        needs("sticky-session-type", Some("server"), "cookie", None),
        {
            let mut c = needs("vswitch-id", None, "address-type", Some("intranet"));
            let id = catalog_annotation(cat, "id");
            c.violates = format!("!({} && {} != '') && {}", id.present, id.value, c.violates);
            c
        },
    ]);
    Ok(out)
}

/// The CEL of `clb::hostname`: the status hostname the API server takes.
fn hostname(cat: &Catalog) -> CelCheck {
    let h = catalog_annotation(cat, "hostname");
    let v = &h.value;
    CelCheck::new(
        format!(
            "{} && {v} != '' && (size({v}) > 253 || !{v}.matches({}) || {v}.matches({}))",
            h.present,
            cel::lit(super::clb::DNS_SUBDOMAIN),
            cel::lit(super::clb::IPV4)
        ),
        format!(
            "'[annotation-format] ' + {} + ' is \"' + {v} + '\": the CLB controller writes it as the status hostname, where the API server takes only a lowercase DNS name that is not an IP address'",
            h.key
        ),
    )
    .same_when(format!("{} + '=' + {v}", h.key))
}

/// The CEL of `clb::forward_target`: an HTTP listener's forward target is an HTTPS port of
/// the Service (or, on a reused load balancer, a port the Service does not have).
fn forward_target(cat: &Catalog) -> CelCheck {
    let fp = catalog_annotation(cat, "forward-port");
    let id = catalog_annotation(cat, "id");
    let pp = catalog_annotation(cat, "protocol-port");
    let l = crate::providers::api::cel::listeners(cat);
    let names = "(size(e.split(':')) == 2 && e.split(':')[0] == x.split('/')[0])";
    let entries = format!("{}.split(',')", fp.value);
    let target = format!("{entries}.filter(e, {names})[0].split(':')[1]");
    let reused = format!("({} && {} != '')", id.present, id.value);
    let https = format!("{l}.exists(y, y == string(int({target})) + '/https')");
    let ours = format!("{l}.exists(y, y.split('/')[0] == string(int({target})))");
    CelCheck::new(
        format!(
            "{} && {} != '' && {l}.exists(x, x.split('/')[1] == 'http' && {entries}.exists(e, {names}) && {target}.matches({}) && !({ours} ? {https} : {reused}))",
            fp.present,
            fp.value,
            cel::lit(ATOI)
        ),
        format!(
            "'[annotation-format] ' + {} + ' is \"' + {} + '\": an HTTP listener forwards to a port that is not an HTTPS port of this Service, which the CLB API refuses as ForwardPort'",
            fp.key, fp.value
        ),
    )
    .same_when(format!(
        "{} + '=' + {} + '|' + ({} ? {} : '')",
        fp.key, fp.value, pp.present, pp.value
    ))
}
