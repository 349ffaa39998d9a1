//! `annotation-format` for ACK: values as the CLB or the NLB controller parses them, which
//! one the Service's class picks. This file reads what both controllers read (the table's
//! formats, `protocol-port`, `vgroup-port`); `clb` and `nlb` what only one of them does. Entries are split as the code splits them (`strings.Split`
//! on `,` then `:`, nothing trimmed), ports are matched as strings (`fmt.Sprintf("%d")`), and
//! numbers are read by Go's `strconv.Atoi`. A message quotes the controller's error only
//! where the controller gives it; otherwise it says what the controller does instead.
//!
//! Sources: kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/
//! clbv1/listeners.go:711-753 (protocol-port, vgroup-port), :618-643 (forward-port),
//! nlbv2/listeners.go:62-110 and :620-644 (vgroup-port, listener-port-range, protocol-port),
//! nlbv2/loadbalancer.go:56-58 and :639-666 (zone-maps), nlbv2/server_groups.go:1389-1399.

use super::value::{group_id_ok, names_service_port, protocol_ok};
use crate::vocab::annotations::{Entry, Format, Table};
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::go;
use crate::vocab::service::Svc;

pub fn annotation_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let nlb = ctx.is_nlb(cat.provider);
    values(new, cat, nlb, out);
    let get = |s: &str| cat.get(new, s).filter(|a| !a.value.is_empty());
    if let Some(a) = get("protocol-port") {
        port_list(new, a, PortList::Protocol { nlb }, out);
    }
    if let Some(a) = get("vgroup-port") {
        let reused = get("id").is_some();
        port_list(new, a, PortList::Group { nlb, reused }, out);
    }
    if nlb {
        super::nlb::check(new, cat, out);
    } else {
        super::clb::check(new, cat, out);
    }
    // What the controller sends, held to the cloud API's limits (data/alibaba-api.yaml).
    let rows = out.len();
    crate::providers::api::check(ctx, cat, "annotation-format", out);
    // A reused NLB's server groups, from the inventory.
    super::groups::reused_server_groups(ctx, cat, out);
    // An existing CLB's charge type and spec, from the inventory.
    super::charge::live_charge_type(ctx, cat, rows, out);
}

/// The table's formats (`providers/data/alibaba.yaml`), for the controller that takes the
/// Service. Empty values are absent to the controller, so they are not checked.
fn values(svc: Svc, cat: &'static Catalog, nlb: bool, out: &mut Findings) {
    for (e, a) in in_table(svc, cat)
        .filter(|(e, a)| e.rule.as_deref() == Some("annotation-format") && !a.value.is_empty())
    {
        let format = Table::format_for(e, nlb);
        let Err(why) = format.check(a.value) else {
            continue;
        };
        let controller = if nlb { "NLB" } else { "CLB" };
        let template = if nlb { &e.nlb_error } else { &e.error };
        let parse_error = go::atoi(a.value).err();
        let outcome = match (template, &parse_error) {
            // Numbers out of range parse: the controller passes them on to the cloud's API.
            (Some(t), Some(err)) if t.contains("{err}") => format!(
                "the {controller} controller fails on every resync with \"{}\"",
                t.replace("{value}", a.value)
                    .replace("{err}", err)
                    .trim_end()
            ),
            (Some(t), _) if !t.contains("{err}") => format!(
                "the {controller} controller fails on every resync with \"{}\"",
                t.replace("{value}", a.value).trim_end()
            ),
            // NLB numbers kept as Go int32 are set only when not 0 (nlb/listener.go:188-190,
            // :239-241; nlb/servergroup.go:314-328, :409-423): 0 is a no-op, a typo.
            _ if matches!(format, Format::Atoi32(_))
                && go::atoi(a.value).map(|n| n as i32) == Ok(0) =>
            {
                "the NLB controller sends nothing for 0, so the cloud keeps what it has and the value does nothing (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/provider/alibaba/nlb/listener.go:188-190, nlb/servergroup.go:314-328); it is refused as a typo".to_string()
            }
            _ => match unused_by(svc, cat, e, nlb) {
                Some(unused) => unused,
                None => {
                    format!(
                        "the {controller} controller or the cloud's API behind it cannot use it"
                    )
                }
            },
        };
        out.push(
            annotation_field(a.key),
            format!(
                "{} is \"{}\": {why}; {outcome}; allowed: {}, e.g. {}",
                a.key,
                a.value,
                format.expected(),
                format.example()
            ),
        );
    }
}

/// The Service's annotations the table has an entry for, in the table's order, each read as
/// `Catalog::get` reads it (the current prefix's key before the legacy one's). The handful
/// on the Service are looked up in the table, not the table's some sixty formats each on the
/// Service (17,000 instructions an admission, BENCHMARKS.md).
fn in_table<'s>(
    svc: Svc<'s>,
    cat: &'static Catalog,
) -> impl Iterator<Item = (&'static Entry, Annot<'s>)> {
    let table = cat.table();
    let mut found: Vec<(usize, usize, Annot<'s>)> = svc
        .annotations()
        .into_iter()
        .flatten()
        .flat_map(|(key, value)| {
            cat.prefixes().enumerate().filter_map(move |(rank, p)| {
                let i = table.position(key.strip_prefix(p)?)?;
                Some((i, rank, Annot { key, value }))
            })
        })
        .collect();
    found.sort_unstable_by_key(|(i, rank, _)| (*i, *rank));
    found.dedup_by_key(|(i, _, _)| *i);
    found
        .into_iter()
        .map(move |(i, _, a)| (&table.annotations[i], a))
}

/// When the CLB controller puts the value in no call it makes for this Service (it sends it
/// only on listeners of other protocols, `pkg/provider/alibaba/slb/listener.go`), why it
/// is still refused: a typo guard, the value fails once such a listener is added.
fn unused_by(svc: Svc, cat: &Catalog, e: &Entry, nlb: bool) -> Option<String> {
    if nlb || e.clb_protocols.is_empty() {
        return None;
    }
    let listeners = crate::providers::api::listeners(cat, svc);
    if listeners
        .iter()
        .any(|l| e.clb_protocols.contains(&l.protocol))
    {
        return None;
    }
    let mut have: Vec<&str> = listeners.iter().map(|l| l.protocol.as_str()).collect();
    have.sort_unstable();
    have.dedup();
    Some(format!(
        "the CLB controller sends it only on {} listeners and this Service has none (its listeners: {}), so the value is not used for this Service's protocols; it is refused as a typo that fails once such a listener is added",
        e.clb_protocols.join("/").to_ascii_uppercase(),
        if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ").to_ascii_uppercase()
        }
    ))
}

#[derive(Clone, Copy)]
enum PortList {
    Protocol {
        nlb: bool,
    },
    /// `reused`: the Service names its load balancer (`-id`), so the NLB controller reads
    /// the entries on its listener path first.
    Group {
        nlb: bool,
        reused: bool,
    },
}

impl PortList {
    fn item_ok(self, item: &str) -> bool {
        match self {
            PortList::Protocol { nlb } => protocol_ok(item, nlb),
            PortList::Group { .. } => group_id_ok(item),
        }
    }

    /// The controller's error for an entry without a colon.
    fn colon_error(self, parts: &[&str]) -> String {
        let got = go::slice(parts);
        match self {
            PortList::Protocol { .. } => format!(
                "port and protocol format must be like 'https:443' with colon separated. got=[{got}]"
            ),
            PortList::Group { nlb: false, .. } => format!(
                "vgroupid and protocol format must be like 'vsp-xxx:443' with colon separated. got=[{got}]"
            ),
            // nlbv2/listeners.go:65-68 on a reused NLB, server_groups.go:1396-1398 otherwise.
            PortList::Group {
                nlb: true,
                reused: true,
            } => format!(
                "server group id and protocol format must be like 'sg-xxx:443' with colon separated. got=[{got}]"
            ),
            PortList::Group {
                nlb: true,
                reused: false,
            } => format!(
                "server group id and protocol format must be like'sgp-xxx:443' with colon separated. got=[{got}]"
            ),
        }
    }

    fn bad_item(self, key: &str, entry: &str, item: &str) -> String {
        match self {
            PortList::Protocol { nlb: false } => format!(
                "{key} entry \"{entry}\": \"{item}\" is not a CLB listener protocol (http, https, tcp or udp, lower case, no spaces); the cloud controller fails with \"port protocol format must be either [http|https|tcp|udp], protocol not supported wit [{item}]\" when it reads the entry"
            ),
            PortList::Protocol { nlb: true } => format!(
                "{key} entry \"{entry}\": \"{item}\" is not an NLB listener protocol (TCP, UDP or TCPSSL, any case, no spaces); the cloud controller fails with \"port protocol format must be either [TCP|UDP|TCPSSL], protocol not supported with [{item}]\" when it reads the entry"
            ),
            PortList::Group { nlb, .. } => format!(
                "{key} entry \"{entry}\": the server group id \"{item}\" is empty or has spaces; write the id of a server group of the load balancer, e.g. {}",
                if nlb {
                    "\"sgp-bp1xxx:80\""
                } else {
                    "\"rsp-bp1xxx:80\""
                }
            ),
        }
    }

    fn example(self) -> &'static str {
        match self {
            PortList::Protocol { nlb: false } => "\"https:443,http:80\"",
            PortList::Protocol { nlb: true } => "\"TCPSSL:443,TCP:80\"",
            PortList::Group { nlb: false, .. } => "\"rsp-bp1xxx:80\"",
            PortList::Group { nlb: true, .. } => "\"sgp-bp1xxx:80\"",
        }
    }
}

/// The note for entries the controller never reads, after `<key> is "<value>": ` (the
/// exported advice policy says the same).
pub const IGNORED_ENTRIES: &str = "the cloud controller ignores an entry that names no port of spec.ports[].port (it matches the Service port exactly: no spaces, sign or leading zeros) or a port an earlier entry named; give each Service port one entry";

/// `<item>:<port>` entries as the controller reads them: `,` then `:`, the first part the
/// item, the second the Service port (a third part is ignored), no trimming.
fn port_list(svc: Svc, a: Annot, kind: PortList, out: &mut Findings) {
    let key = a.key;
    let mut named = std::collections::BTreeSet::new();
    let mut ignored = false;
    for entry in a.value.split(',') {
        let parts: Vec<&str> = entry.split(':').collect();
        if parts.len() < 2 {
            out.push(
                annotation_field(key),
                format!(
                    "{key} entry \"{entry}\" is not <value>:<port>; the cloud controller fails with \"{}\" when it reads the entry; write e.g. {}",
                    kind.colon_error(&parts),
                    kind.example()
                ),
            );
            continue;
        }
        if !kind.item_ok(parts[0]) {
            out.push(annotation_field(key), kind.bad_item(key, entry, parts[0]));
        }
        // No such Service port, or one an earlier entry named: never read.
        ignored |= !names_service_port(svc, parts[1]) || !named.insert(parts[1]);
    }
    // A note, not a denial (a port removed from the Service often leaves its entry behind).
    if ignored {
        out.advise(
            annotation_field(key),
            format!("{key} is \"{}\": {IGNORED_ENTRIES}", a.value),
        );
    }
}
