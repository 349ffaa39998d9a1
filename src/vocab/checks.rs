//! Checks several rules share: who the cloud controller is, version gates, duplicate and
//! `proto:port` parsing.

use std::collections::BTreeSet;

use super::ctx::{Ctx, Findings};
use super::version::{Known, KubeVersion, VersionOf};

/// Whether the request comes from the CCM: `None` when no CCM identity is configured,
/// so rules that protect the CCM's own writes cannot tell and only warn.
pub fn ccm_identity(ctx: &Ctx) -> Option<bool> {
    let ccm = &ctx.config.ccm;
    if ccm.users.is_empty() && ccm.groups.is_empty() {
        None
    } else {
        Some(ctx.by_ccm())
    }
}

/// Pushes a finding that only the CCM may cause: denied for others, advisory when
/// lbguard does not know who the CCM is.
pub fn ccm_only(ctx: &Ctx, out: &mut Findings, field: String, message: String) {
    match ccm_identity(ctx) {
        Some(true) => {}
        Some(false) => out.push(field, message),
        None => out.advise(
            field,
            format!("{message} (set ccm.users or ccm.groups so lbguard can tell the cloud controller's own writes apart and deny this)"),
        ),
    }
}

/// Version gate shared by the version rules: a finding when the version is known and too
/// old, an advisory "cannot tell" when it is unknown or unparseable.
pub fn require_version(
    ctx: &Ctx,
    out: &mut Findings,
    of: VersionOf,
    field: &str,
    feature: &str,
    needs: &str,
    ok: impl Fn(&KubeVersion) -> bool,
) {
    let (known, what, key) = match of {
        VersionOf::Cluster => (
            ctx.cluster_version,
            "cluster",
            "cluster.version or --cluster-version",
        ),
        VersionOf::Ccm => (ctx.ccm_version, "cloud-controller-manager", "ccm.version"),
    };
    match known {
        Known::Yes(v) if ok(v) => {}
        Known::Yes(v) => out.push(
            field,
            format!("{feature} needs {needs}; the {what} runs {v}; upgrade the {what} first, or remove it"),
        ),
        Known::Missing => out.advise(
            field,
            format!("cannot tell whether {feature} is supported: it needs {needs} and the {what} version is unknown (set {key})"),
        ),
        Known::Invalid(e) => out.advise(
            field,
            format!("cannot tell whether {feature} is supported: it needs {needs} and the {what} version is unusable: {e}"),
        ),
    }
}

/// Ports listed twice in one annotation.
pub fn duplicates<T: Ord + Copy>(items: impl Iterator<Item = T>) -> BTreeSet<T> {
    let mut seen = BTreeSet::new();
    let mut dup = BTreeSet::new();
    for i in items {
        if !seen.insert(i) {
            dup.insert(i);
        }
    }
    dup
}

/// One `proto:port` entry: protocol, port (if a number from 1 to 65535), the entry as written.
pub type Entry<'a> = (&'a str, Option<i32>, &'a str);

/// Parses a `protocol-port` value (`proto:port[,proto:port...]`, Huawei's and Alibaba's
/// format); entries without a colon come back separately.
pub fn protocol_entries(value: &str) -> (Vec<Entry<'_>>, Vec<&str>) {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for entry in value.split(',').map(str::trim) {
        match entry.split_once(':') {
            Some((proto, port)) => ok.push((
                proto.trim(),
                port.trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|p| (1..=65535).contains(p)),
                entry,
            )),
            None => bad.push(entry),
        }
    }
    (ok, bad)
}

/// Whether `text` is `port` as `to_string` writes it ("0443" is not 443), without writing
/// it: controllers compare a `proto:port` entry's port with the port's text.
pub fn is_port_text(text: &str, port: i32) -> bool {
    let mut digits = [0u8; 11]; // every i32
    let mut cursor = std::io::Cursor::new(&mut digits[..]);
    let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{port}"));
    let n = usize::try_from(cursor.position()).unwrap_or(0);
    text.as_bytes() == &digits[..n]
}

/// The first part of the first `a:port[:...]` entry of a comma-separated list that names
/// `port` (as `is_port_text` compares it): what ACK's controllers read from `protocol-port`,
/// `vgroup-port` and `listener-port-range`.
pub fn first_naming_port(list: &str, port: i32) -> Option<&str> {
    list.split(',').find_map(|e| {
        let mut parts = e.split(':');
        let first = parts.next()?;
        parts
            .next()
            .filter(|n| is_port_text(n, port))
            .map(|_| first)
    })
}

/// A version rule's export: `Ok(true)` when the version is known and too old (so the policy
/// must check for the feature), `Ok(false)` when it is new enough (nothing to check), `Err`
/// when it is unknown: the webhook then only warns "cannot tell", which a policy cannot.
pub fn version_too_old(
    v: &super::rule::VapCtx,
    of: VersionOf,
    ok: impl Fn(&KubeVersion) -> bool,
) -> Result<bool, &'static str> {
    let known = match of {
        VersionOf::Cluster => &v.versions.cluster,
        VersionOf::Ccm => &v.versions.ccm,
    };
    match (known, of) {
        (Known::Yes(version), _) => Ok(!ok(version)),
        (_, VersionOf::Cluster) => {
            Err("the cluster version is unknown (set cluster.version or --cluster-version)")
        }
        (_, VersionOf::Ccm) => {
            Err("the cloud controller version is unknown (set ccm.version or --ccm-version)")
        }
    }
}

/// CEL: whether the request comes from the cloud controller (config `ccm.users/groups`).
pub fn ccm_request_cel(v: &super::rule::VapCtx) -> Option<String> {
    let ccm = &v.config.ccm;
    if ccm.users.is_empty() && ccm.groups.is_empty() {
        return None;
    }
    let users: Vec<&str> = ccm.users.iter().map(String::as_str).collect();
    let groups: Vec<&str> = ccm.groups.iter().map(String::as_str).collect();
    Some(format!(
        "(request.userInfo.username in {} || request.userInfo.groups.exists(g, g in {}))",
        super::cel::list(&users),
        super::cel::list(&groups)
    ))
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
