//! `annotation-format` on a reused ACK NLB, with the inventory's server groups: each
//! `vgroup-port` id is one of the NLB's (a server group in its VPC), and the group a Service
//! port is bound to has the type `server-group-type` asks for. Sources,
//! kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/nlbv2/:
//! server_groups.go:209-230 (every id of vgroup-port looked up by id: "reused server group id
//! %s not found"), :546-567 (the id bound to a port), listeners.go:62-75 (the first entry
//! naming the port wins), model_applier.go:311-318 (a user's group of another type fails),
//! :336-337 (the controller makes its own groups in the NLB's VPC), server_groups.go:1203-1212
//! (server-group-type in any case). Findings are the inventory's: no policy can read it.

use super::value::names_service_port;
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings, Lookup};

/// What the NLB controller sends for `server-group-type` (any case), if it reads it.
fn wanted_type(value: &str) -> Option<&'static str> {
    ["Ip", "Instance"]
        .into_iter()
        .find(|t| t.eq_ignore_ascii_case(value))
}

pub fn reused_server_groups(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if !ctx.is_nlb(cat.provider) || !ctx.inventory.configured() {
        return;
    }
    let get = |s: &str| cat.get(new, s).filter(|a| !a.value.is_empty());
    let (Some(id), Some(vg)) = (get("id"), get("vgroup-port")) else {
        return;
    };
    // An NLB the inventory does not know is reported once, by the inventory rules.
    let Lookup::Found(nlb) = ctx.inventory.lookup(cat.provider, id.value) else {
        return;
    };
    let vpc = nlb
        .vpc_id
        .as_deref()
        .map_or("its VPC".to_string(), |v| format!("its VPC {v}"));
    let Some(groups) = &nlb.server_groups else {
        out.unknown(
            annotation_field(vg.key),
            format!("the inventory does not list the server groups of NLB \"{}\", so lbguard cannot check that {} names server groups of it; add serverGroups to its inventory entry, or turn on inventory.cloud", id.value, vg.key),
        );
        return;
    };
    let want = get("server-group-type").and_then(|a| wanted_type(a.value).map(|t| (a, t)));
    let mut bound = std::collections::BTreeSet::new();
    for entry in vg.value.split(',') {
        let parts: Vec<&str> = entry.split(':').collect();
        // Entries without an id or a port are the format check's.
        if parts.len() < 2 || parts[0].is_empty() {
            continue;
        }
        let (sg, port) = (parts[0], parts[1]);
        let Some(group) = groups.iter().find(|g| g.id == sg) else {
            let clb = if sg.starts_with("rsp-") {
                format!(
                    "; \"{sg}\" is a CLB vServer group id, and an NLB listener takes an NLB server group (sgp-…)"
                )
            } else {
                String::new()
            };
            out.push_inventory(
                annotation_field(vg.key),
                format!("{} entry \"{entry}\": \"{sg}\" is not a server group of NLB \"{}\": the NLB API lists no such server group in {vpc}{clb}; the NLB controller looks every id up and fails on every resync with \"reused server group id {sg} not found\" when the region has none, and it uses only server groups of the NLB's VPC (it makes its own there); write the id of a server group in {vpc}, e.g. \"sgp-bp1xxx:{port}\"", vg.key, id.value),
            );
            continue;
        };
        // Only the group a Service port is bound to (its first entry) is compared.
        if !names_service_port(new, port) || !bound.insert(port) {
            continue;
        }
        if let Some((a, want)) = want
            && !group.kind.is_empty()
            && group.kind != want
        {
            out.push_inventory(
                annotation_field(a.key),
                format!("{} is \"{}\" but server group \"{sg}\" ({} entry \"{entry}\") is of type {}; the NLB controller fails on every resync with \"ServerGroupType of user managed server group {sg} should be [{want}], but [{}]\"; set {}: \"{}\" (or remove it), or bind port {port} to a server group of type {want}", a.key, a.value, vg.key, group.kind, group.kind, a.key, group.kind),
            );
        }
    }
}

#[cfg(test)]
#[path = "groups_tests.rs"]
mod tests;
