//! Conditions the rules of `mod.rs`, `dependent` and `listeners` share: a protocol in
//! `protocol-port` (and its CEL), and a cluster too old for a feature.

use crate::vocab::catalog::{Catalog, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::checks::{protocol_entries, require_version, version_too_old};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};
use crate::vocab::service::Svc;
use crate::vocab::version::{KubeVersion, VersionOf};

/// Whether `protocol-port` has an http or https entry (a layer-7 listener).
pub(super) fn layer7(cat: &Catalog, svc: Svc) -> bool {
    protocol_in(cat, svc, &["http", "https"])
}

/// Whether `protocol-port` has an entry with one of `protocols`.
pub(super) fn protocol_in(cat: &Catalog, svc: Svc, protocols: &[&str]) -> bool {
    cat.get(svc, "protocol-port").is_some_and(|a| {
        protocol_entries(a.value)
            .0
            .iter()
            .any(|(p, _, _)| protocols.contains(p))
    })
}

/// CEL: `$s`'s protocol-port has an entry with one of `protocols`.
pub(super) fn protocol_in_cel(cat: &Catalog, protocols: &[&str]) -> String {
    let a = catalog_annotation(cat, "protocol-port");
    format!(
        "({} && {}.split(',').exists(e, e.trim().indexOf(':') >= 0 && e.trim().substring(0, e.trim().indexOf(':')).trim() in {}))",
        a.present,
        a.value,
        cel::list(protocols)
    )
}

/// The cluster a version rule's feature needs, in the messages' words and as a test: the
/// webhook (`require`) and the export (`cluster_gate_cel`) read the same one.
pub(super) struct ClusterNeeds {
    pub words: &'static str,
    pub ok: fn(&KubeVersion) -> bool,
}

impl ClusterNeeds {
    /// The webhook's gate: a finding on `field` when the cluster is too old for `feature`.
    pub fn require(&self, ctx: &Ctx, out: &mut Findings, field: &str, feature: &str) {
        require_version(
            ctx,
            out,
            VersionOf::Cluster,
            field,
            feature,
            self.words,
            self.ok,
        );
    }
}

/// A cluster-version rule's CEL: `uses` when the cluster is older than `needs` allows.
pub(super) fn cluster_gate_cel(
    v: &VapCtx,
    rule: &str,
    needs: &ClusterNeeds,
    uses: String,
    feature: String,
) -> Result<Vec<CelCheck>, &'static str> {
    if !version_too_old(v, VersionOf::Cluster, needs.ok)? {
        return Ok(vec![]);
    }
    let (needs, runs) = (needs.words, v.versions.cluster_text());
    Ok(vec![
        CelCheck::new(
            uses,
            format!("'[{rule}] ' + {feature} + ' needs {needs}; the cluster runs {runs}; upgrade the cluster first, or remove it'"),
        )
        .same_when("'uses'"),
    ])
}
