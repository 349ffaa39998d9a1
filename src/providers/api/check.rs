//! A Service's annotations held to the API rows of its provider: each row only when the
//! controller that takes the Service makes that call for it (per listener protocol, or once).

use serde_json::Value;

use super::model::{ApiTable, Call, Cond, Need, Param, Reading, Side};
use crate::vocab::annotations::Table;
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::checks::{first_naming_port, protocol_entries};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;

/// A listener the controller makes: the Service port and its protocol (lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub port: i32,
    pub protocol: String,
}

/// The listeners the provider's controller makes, as its table's `listeners` reads them.
pub fn listeners(cat: &Catalog, svc: Svc) -> Vec<Listener> {
    match super::model::table(cat.provider).map(|t| t.listeners) {
        Some(Reading::Cce) => cce_listeners(cat, svc),
        _ => ack_listeners(cat, svc),
    }
}

/// The listener protocol CCE gives each Service port, lower case: the `elb.protocol-port`
/// entry for that port (http, https, tcp, udp, tls), else `spec.ports[].protocol` (TCP when
/// unset). CCE makes one listener per Service port (otc-0385 Table 7).
pub fn cce_listeners(cat: &Catalog, svc: Svc) -> Vec<Listener> {
    let entries = cat
        .get(svc, "protocol-port")
        .map(|a| protocol_entries(a.value).0)
        .unwrap_or_default();
    svc.ports()
        .iter()
        .map(|p| {
            let protocol = entries
                .iter()
                .find(|(_, port, _)| *port == Some(p.port))
                .map_or_else(
                    || p.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase(),
                    |(proto, _, _)| proto.to_ascii_lowercase(),
                );
            Listener {
                port: p.port,
                protocol,
            }
        })
        .collect()
}

/// ACK's listeners as its controllers read `protocol-port`: the first `proto:port` entry
/// naming the port, else the port's own protocol (clbv1/listeners.go:711-737 exact case,
/// nlbv2/listeners.go:620-644 any case).
fn ack_listeners(cat: &Catalog, svc: Svc) -> Vec<Listener> {
    let pp = cat.get(svc, "protocol-port").map_or("", |a| a.value);
    svc.ports()
        .iter()
        .map(|p| {
            let protocol = first_naming_port(pp, p.port)
                .or(p.protocol.as_deref())
                .unwrap_or("TCP")
                .to_ascii_lowercase();
            Listener {
                port: p.port,
                protocol,
            }
        })
        .collect()
}

fn holds(table: &ApiTable, cat: &Catalog, svc: Svc, c: &Cond) -> bool {
    if !c.entry.is_empty() {
        let raw = cat.get(svc, &c.annotation).map_or("", |a| a.value);
        return protocol_entries(raw).0.iter().any(|(p, port, _)| {
            c.entry.iter().any(|e| e == p) && c.port.is_none_or(|n| *port == Some(n))
        });
    }
    if let Some(on) = c.exists {
        return cat.get(svc, &c.annotation).is_some() == on;
    }
    let raw = cat.get(svc, &c.annotation).map_or("", |a| a.value);
    let inner = c
        .field
        .as_ref()
        .and_then(|f| super::fields::json_field(raw, f));
    let value = match (&c.field, &inner) {
        (None, _) => raw,
        (Some(_), Some(Value::String(s))) => s.as_str(),
        (Some(_), _) => "",
    };
    let value = if c.trim { value.trim() } else { value };
    let same = |v: &String| {
        if c.fold {
            v.eq_ignore_ascii_case(value)
        } else {
            v == value
        }
    };
    if !c.not_in.is_empty() {
        return !c.not_in.iter().any(same);
    }
    if c.present == Some(false) {
        return table.unset(value);
    }
    if table.unset(value) {
        return false;
    }
    c.one_of.is_empty() || c.one_of.iter().any(same)
}

/// The listener ports a call (narrowed by a row) is made for; `None`: made once per Service.
/// `Some(empty)`: not made for this Service.
fn ports_for(call: &Call, row: Option<&Vec<String>>, listeners: &[Listener]) -> Option<Vec<i32>> {
    let protocols = row.or(call.protocols.as_ref())?;
    Some(
        listeners
            .iter()
            .filter(|l| {
                protocols
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(&l.protocol))
            })
            .map(|l| l.port)
            .collect(),
    )
}

/// Whether a call (narrowed by a row) is made per listener and for none of this Service's:
/// `ports_for` gives `Some(empty)`, without collecting the ports.
fn made_for_none(call: &Call, row: Option<&Vec<String>>, listeners: &[Listener]) -> bool {
    row.or(call.protocols.as_ref()).is_some_and(|protocols| {
        !listeners.iter().any(|l| {
            protocols
                .iter()
                .any(|p| p.eq_ignore_ascii_case(&l.protocol))
        })
    })
}

/// The side whose controller takes the Service: ACK's NLB controller, or (Volcengine) the
/// annotation the table's `nlbWhen` names starting with its prefix.
fn side(ctx: &Ctx, cat: &Catalog, svc: Svc, table: &ApiTable) -> Side {
    if ctx.is_nlb(cat.provider) || named_nlb(cat, svc, table) {
        Side::Nlb
    } else {
        Side::Clb
    }
}

/// Whether the annotation the table's `nlbWhen` names starts with its prefix (Volcengine: an
/// `nlb-` id sends the Service to the NLB API).
pub fn named_nlb(cat: &Catalog, svc: Svc, table: &ApiTable) -> bool {
    table.nlb_when.as_ref().is_some_and(|w| {
        cat.get(svc, &w.annotation)
            .is_some_and(|a| a.value.starts_with(w.prefix.as_str()))
    })
}

/// Findings of the rows owned by `rule` (`dependent-annotations`: required parameters and
/// parameters that go together; the provider's value rule, `annotation-format` on ACK and
/// `annotation-value-format` elsewhere: value limits).
pub fn check(ctx: &Ctx, cat: &'static Catalog, rule: &str, out: &mut Findings) {
    let (Some(svc), Some(table)) = (ctx.new, super::model::table(cat.provider)) else {
        return;
    };
    let side = side(ctx, cat, svc, table);
    let listeners = listeners(cat, svc);
    // ACK has a controller per side; the other clouds one cloud controller for both.
    let controller = match (cat.provider, side) {
        (Provider::Alibaba, Side::Nlb) => "NLB",
        (Provider::Alibaba, Side::Clb) => "CLB",
        (Provider::Huawei, _) => "CCE",
        _ => "cloud",
    };
    for call in &table.calls {
        // Only the calls with rows this rule reports: their conditions are not evaluated
        // for the other rule (each Service is checked by both).
        if !call.params.iter().any(|p| p.reported_by(rule))
            && (rule != "dependent-annotations" || call.together.is_empty())
        {
            continue;
        }
        if call.controller.is_some_and(|c| c != side)
            || !call.when.iter().all(|c| holds(table, cat, svc, c))
        {
            continue;
        }
        if made_for_none(call, None, &listeners) {
            continue;
        }
        // Words for messages only: built when a finding is, not on every admission.
        let calls = || {
            std::iter::once(call.call.as_str())
                .chain(call.also.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("/")
        };
        for param in &call.params {
            if !param.reported_by(rule) {
                continue;
            }
            let all = |conds: &[Cond]| conds.iter().all(|c| holds(table, cat, svc, c));
            if !all(&param.when)
                || !(param.when_any.is_empty() || param.when_any.iter().any(|w| all(w)))
            {
                continue;
            }
            if made_for_none(call, param.protocols.as_ref(), &listeners) {
                continue;
            }
            // Only messages name the ports.
            let ports = || ports_for(call, param.protocols.as_ref(), &listeners);
            let sent = cat.get(svc, &param.from).filter(|a| !a.value.is_empty());
            let source = || source(table, param.source.as_ref().unwrap_or(&call.source));
            let missing = sent.is_none_or(|a| table.unset(a.value));
            match sent {
                _ if missing
                    && param.required
                    && param.field.is_none()
                    && rule == "dependent-annotations" => out.push(
                    annotation_field(&cat.key(&param.from)),
                    format!(
                        "{} is not set, but the cloud's API needs {} in {}, which the {controller} controller makes for this Service ({}); set it, e.g. {}: \"{}\"{}",
                        cat.key(&param.from),
                        param.name,
                        calls(),
                        source(),
                        cat.key(&param.from),
                        param.example,
                        param.instead.as_ref().map_or(String::new(), |i| format!(
                            ", or set {} instead (then the controller makes no {})",
                            cat.key(i),
                            call.call
                        ))
                    ),
                ),
                Some(a) if param.field.is_some() && param.owned_by(rule) => {
                    let words = super::fields::Words {
                        controller,
                        calls: &calls(),
                        ports: &on_ports(
                            ports()
                                .as_deref()
                                .filter(|_| table.listeners == Reading::Cce),
                            &listeners,
                        ),
                        refuser: refuser(param),
                        source: source(),
                        given: &given(param),
                    };
                    for m in super::fields::problems(param, a.key, a.value, &words) {
                        out.push(annotation_field(a.key), m);
                    }
                }
                Some(a) if param.owned_by(rule) => {
                    if let Some(why) = value_error(param, a.value)
                        && !table_refuses(cat.table(), rule, side, &param.from, a.value)
                    {
                        let message = if param.none.is_some() {
                            format!(
                                "{} is \"{}\": the {controller} controller sends it as {} of {}{}, and {why} ({})",
                                a.key,
                                a.value,
                                param.name,
                                calls(),
                                on_ports(ports().as_deref().filter(|_| table.listeners == Reading::Cce), &listeners),
                                source(),
                            )
                        } else if param.zero_unsent
                            && crate::vocab::go::atoi(a.value).map(|v| param.sent(v)) == Ok(0)
                        {
                            format!(
                                "{} is \"{}\": {why}; the {controller} controller sends no {} for 0, so the cloud keeps what it has and the value does nothing ({}); it is refused as a typo: write e.g. \"{}\", or remove the annotation",
                                a.key,
                                a.value,
                                param.name,
                                param
                                    .code
                                    .iter()
                                    .map(|c| format!("{}{c}", table.code_base.as_deref().unwrap_or("")))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                param.example
                            )
                        } else {
                            format!(
                                "{} is \"{}\": {why}; the {controller} controller sends it as {} of {}{}, which {} refuses ({}); write e.g. \"{}\"",
                                a.key,
                                a.value,
                                param.name,
                                calls(),
                                on_ports(ports().as_deref().filter(|_| table.listeners == Reading::Cce), &listeners),
                                refuser(param),
                                source(),
                                param.example
                            )
                        };
                        out.push(annotation_field(a.key), message);
                    }
                }
                _ => {}
            }
        }
        if rule != "dependent-annotations" {
            continue;
        }
        for t in &call.together {
            if !holds(table, cat, svc, &t.when) {
                continue;
            }
            let Some(a) = cat.get(svc, &t.when.annotation) else {
                continue;
            };
            let source = source(table, t.source.as_ref().unwrap_or(&call.source));
            let calls = calls();
            let refuser = t.by.as_deref().unwrap_or("the cloud's API");
            // One finding per excluded condition that holds, on `if`'s annotation.
            for x in t.excludes.iter().filter(|x| holds(table, cat, svc, x)) {
                let other = cat.key(&x.annotation);
                let fix = if let Some(f) = &t.fix {
                    f.clone()
                } else if x.one_of.is_empty() {
                    format!("remove {} or {other}", a.key)
                } else {
                    format!(
                        "remove {}, or give {other} a value other than {}",
                        a.key,
                        x.one_of.join(", ")
                    )
                };
                out.push(
                    annotation_field(a.key),
                    format!(
                        "{} cannot go with {}: {refuser} refuses them together in {calls} ({}; {source}); {fix}",
                        named(cat, svc, &t.when),
                        named(cat, svc, x),
                        t.params
                    ),
                );
            }
            if t.need.is_empty() {
                continue;
            }
            let missing: Vec<&Need> = t
                .need
                .iter()
                .filter(|n| match n {
                    Need::Set(n) => cat.get(svc, n).is_none_or(|b| table.unset(b.value)),
                    Need::Holds(c) => !holds(table, cat, svc, c),
                })
                .collect();
            if t.any {
                // One of them suffices: one finding when none is set.
                if missing.len() == t.need.len() {
                    let names: Vec<String> = t.need.iter().map(|n| n.words(cat)).collect();
                    let names = names.join(" or ");
                    out.push(
                        annotation_field(a.key),
                        format!(
                            "{}: \"{}\" needs {names}: {refuser} refuses {} in {calls} without {} ({source}); add one, or remove {}",
                            a.key, a.value, t.when.annotation, t.params, a.key
                        ),
                    );
                }
                continue;
            }
            // One finding per missing annotation: the message depends on nothing else.
            for n in missing.into_iter().map(|n| n.words(cat)) {
                out.push(
                    annotation_field(a.key),
                    format!(
                        "{}: \"{}\" needs {n}: {refuser} refuses {} in {calls} without {} ({source}); add {n}, or remove {}",
                        a.key, a.value, t.when.annotation, t.params, a.key
                    ),
                );
            }
        }
    }
}

/// A condition's annotation in a message: its key, and its value where the condition names
/// values (`in`). Other values stay out, so the update ratchet (same rule, same message) keeps
/// the finding while they change.
fn named(cat: &Catalog, svc: Svc, c: &Cond) -> String {
    if !c.entry.is_empty() {
        return format!("{} with {}", cat.key(&c.annotation), c.entry_words());
    }
    match cat.get(svc, &c.annotation) {
        Some(a) if !c.one_of.is_empty() => format!("{}: \"{}\"", a.key, a.value),
        Some(a) => a.key.to_string(),
        None => cat.key(&c.annotation),
    }
}

/// The row's conditions on fields of its own annotation's object, for a required field's
/// message: ` with "type": "public"`.
fn given(param: &Param) -> String {
    param
        .when
        .iter()
        .filter(|c| c.annotation == param.from && !c.one_of.is_empty())
        .filter_map(|c| {
            let f = c.field.as_ref()?;
            let vs: Vec<String> = c.one_of.iter().map(|v| format!("\"{v}\"")).collect();
            Some(format!(" with \"{f}\": {}", vs.join(" or ")))
        })
        .collect()
}

/// Who refuses the value, in messages.
fn refuser(param: &Param) -> &str {
    param.by.as_deref().unwrap_or("the cloud's API")
}

/// The listeners a per-listener row held the value for: " for the listeners of ports 80 (tcp)"
/// (CCE's rows; ACK's messages name the listener calls instead).
fn on_ports(ports: Option<&[i32]>, listeners: &[Listener]) -> String {
    let Some(ports) = ports else {
        return String::new();
    };
    let named: Vec<String> = listeners
        .iter()
        .filter(|l| ports.contains(&l.port))
        .map(|l| format!("{} ({})", l.port, l.protocol))
        .collect();
    format!(" for the listeners of ports {}", named.join(", "))
}

/// A source as messages cite it: its title (the whole text stays in the data).
fn source<'t>(table: &'t ApiTable, key: &'t String) -> &'t str {
    table
        .sources
        .get(key)
        .map_or(key.as_str(), super::model::Source::title)
}

/// The annotation table's own format, checked under the same rule, already refuses the value
/// (reported once, there). An entry without `rule` is `annotation-value-format`'s.
fn table_refuses(table: &Table, rule: &str, side: Side, name: &str, value: &str) -> bool {
    table
        .annotations
        .iter()
        .find(|e| e.name == name && e.rule.as_deref().unwrap_or("annotation-value-format") == rule)
        .is_some_and(|e| {
            Table::format_for(e, side == Side::Nlb)
                .check(value)
                .is_err()
        })
}

/// Why a value (as the controller sends it) is refused by the row's limits.
pub fn value_error(param: &Param, value: &str) -> Option<String> {
    if let Some(why) = &param.none {
        return crate::vocab::annotations::parse_int(value).map(|_| why.clone());
    }
    let items = param.items(value);
    if let Some((min, max)) = param.count
        && (items.len() < min || items.len() > max)
    {
        return Some(format!(
            "{} entries, the API takes {min} to {max}",
            items.len()
        ));
    }
    if let Some(max) = param.once_max
        && let n = param.once(&items)
        && n > max
    {
        return Some(if param.once_not.is_empty() {
            format!("{n} entries named once, {} takes at most {max}", param.by())
        } else {
            format!(
                "{n} entries named once, and the controller adds {} of its own: at most {max} fit beside those",
                param.once_not.join(" and ")
            )
        });
    }
    if param.distinct {
        let mut seen = std::collections::BTreeSet::new();
        if let Some(d) = items.iter().find(|i| !seen.insert(**i)) {
            return Some(format!("\"{d}\" is named twice, the API takes each once"));
        }
    }
    let list = param.split.is_some();
    items.iter().find_map(|i| {
        param
            .item_error(i)
            .map(|e| if list { format!("entry {e}") } else { e })
    })
}
