//! The attributes ACK's controllers set from annotations and compare with the cloud only
//! when the annotation is set: a change is an update call, a removal (or an empty value)
//! is no call at all, so the cloud keeps the last value (`plan-no-reset`). Each row names
//! the line where the controller compares it only when set.

use super::attr_table::{Attr, CLB_LISTENER, On};
pub(super) use super::attr_table::{CLB, NLB};
use super::listeners::Want;
use super::side::{Side, code};
use crate::vocab::plan::{Action, Plan, Step};

/// The call that updates a CLB listener of this protocol.
fn clb_listener_call(proto: &str) -> &'static str {
    match proto {
        "UDP" => "SetLoadBalancerUDPListenerAttribute",
        "HTTP" => "SetLoadBalancerHTTPListenerAttribute",
        "HTTPS" => "SetLoadBalancerHTTPSListenerAttribute",
        _ => "SetLoadBalancerTCPListenerAttribute",
    }
}

fn applies(on: On, proto: &str) -> bool {
    match on {
        On::Listener(ps) => ps.is_empty() || ps.contains(&proto),
        _ => true,
    }
}

/// Updates for changed attributes and no-reset notes for removed ones, between the live
/// Service and the new one. `lb` names the load balancer; `listeners` are this Service's
/// listeners the controller keeps and manages; `groups` whether server group rows apply.
pub(super) fn diff(
    old: &Side,
    new: &Side,
    table: &[Attr],
    lb: &str,
    listeners: &[&Want],
    plan: &mut Plan,
) {
    // The usual update changes no annotation of the provider's (kubectl's last-applied copy
    // and labels aside): then no row differs, and some hundred look-ups are skipped. When
    // some change, only the rows they name can differ.
    let changed = changed_suffixes(old, new);
    if changed.is_empty() {
        return;
    }
    let mut changed_listener: Vec<&Attr> = Vec::new();
    let mut changed_group: Vec<&str> = Vec::new();
    for a in table.iter().filter(|a| changed.contains(&a.suffix)) {
        let (was, now) = (old.get(a.suffix), new.get(a.suffix));
        if was == now {
            continue;
        }
        let key = new.cat.key(a.suffix);
        match (was, now, a.on) {
            (Some(w), None, _) => {
                if plan.steps.iter().any(|s| s.subject == a.stays) {
                    continue;
                }
                if matches!(a.on, On::Listener(_))
                    && !listeners.iter().any(|l| applies(a.on, &l.proto))
                {
                    continue;
                }
                plan.push(
                    Step::new(Action::Keep, a.stays, a.source)
                        .detail(format!("{key} was \"{w}\" and is removed (or empty), but the controller compares it only when it is set, so it makes no call; set the value you want instead of removing it"))
                        .rule("plan-no-reset")
                        .field(old.field(a.suffix)),
                );
            }
            (_, Some(n), On::Lb) => plan.push(
                Step::new(Action::Update, lb.to_string(), a.source)
                    .detail(match was {
                        Some(w) => format!("{} from \"{w}\" to \"{n}\"", a.suffix),
                        None => format!("{} set to \"{n}\" (if it differs)", a.suffix),
                    })
                    .calls(&[a.call]),
            ),
            (_, Some(_), On::Listener(_)) => changed_listener.push(a),
            (_, Some(_), On::Group) => changed_group.push(a.suffix),
            _ => {}
        }
    }
    for l in listeners {
        let names: Vec<&str> = changed_listener
            .iter()
            .filter(|a| applies(a.on, &l.proto))
            .map(|a| a.suffix)
            .collect();
        if names.is_empty() {
            continue;
        }
        let call = match changed_listener[0].call {
            CLB_LISTENER => clb_listener_call(&l.proto),
            c => c,
        };
        plan.push(
            Step::new(
                Action::Update,
                format!("listener {}", l.label()),
                changed_listener[0].source,
            )
            .detail(names.join(", "))
            .calls(&[call]),
        );
    }
    if !changed_group.is_empty() {
        plan.push(
            Step::new(
                Action::Update,
                "server groups of this Service",
                code!("controller/service/nlbv2/server_groups.go:311-470"),
            )
            .detail(changed_group.join(", "))
            .calls(&["UpdateServerGroupAttribute"]),
        );
    }
}

/// The names (keys without either prefix) of the provider's annotations that differ between
/// the two sides: added, removed or changed.
fn changed_suffixes<'a>(old: &Side<'a>, new: &Side<'a>) -> Vec<&'a str> {
    let (mut o, mut n) = (
        provider_annotations(old).peekable(),
        provider_annotations(new).peekable(),
    );
    let mut keys: Vec<&'a str> = Vec::new();
    loop {
        let key = match (o.peek(), n.peek()) {
            (None, None) => break,
            (Some((ko, vo)), Some((kn, vn))) if ko == kn => {
                let key = Some(*ko).filter(|_| vo != vn);
                o.next();
                n.next();
                key
            }
            (Some((ko, _)), Some((kn, _))) if ko < kn => o.next().map(|(k, _)| k),
            (Some(_), Some(_)) | (None, Some(_)) => n.next().map(|(k, _)| k),
            (Some(_), None) => o.next().map(|(k, _)| k),
        };
        keys.extend(key.map(String::as_str));
    }
    let cat = new.cat;
    keys.iter()
        .flat_map(|k| cat.prefixes().filter_map(move |p| k.strip_prefix(p)))
        .collect()
}

/// The side's annotations under its provider's prefixes, in key order.
fn provider_annotations<'a>(side: &Side<'a>) -> impl Iterator<Item = (&'a String, &'a String)> {
    let cat = side.cat;
    side.svc
        .annotations()
        .into_iter()
        .flatten()
        .filter(move |(k, _)| {
            k.starts_with(cat.prefix) || cat.legacy_prefix.is_some_and(|p| k.starts_with(p))
        })
}
