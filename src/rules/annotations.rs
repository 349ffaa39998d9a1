//! Rules read from each provider's annotation table (`providers/data/*.yaml`): value
//! formats and the first controller version that reads an annotation.

use std::ops::Bound;

use crate::vocab::action::Action;
use crate::vocab::annotations::Entry;
use crate::vocab::catalog::{Annot, Catalog, annotation_field};
use crate::vocab::cel;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, Check, Class, Gate, Rule, Vap, VapCtx};
use crate::vocab::version::{Known, VersionOf};

pub static RULES: &[Rule] = &[
    Rule {
        id: "annotation-value-format",
        providers: &[Provider::Ctyun, Provider::Huawei, Provider::Volcengine],
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "Annotation values in the format the provider documents (enumerations, on/off, true/false, whole numbers in range, ids and id lists, JSON and its documented fields) where no other rule checks them",
        source: "provider annotation references (providers/data/*.yaml)",
        check: Check::PerProvider(annotation_value_format),
        vap: Vap::Cel(annotation_value_format_cel),
    },
    // Volcengine publishes no per-annotation controller version (its one documented gate
    // is nlb-requires-ccm-version's), so the rule has nothing to check there yet.
    Rule {
        id: "annotation-ccm-version",
        providers: &[Provider::Ctyun, Provider::Alibaba, Provider::Huawei],
        class: Class::Version,
        gate: Gate::Admit,
        default: Action::Warn,
        title: "An annotation the configured cloud controller version does not read yet (Huawei: the cluster version, CCE runs the controller)",
        source: "provider annotation references: supported CCM / cluster version columns (providers/data/*.yaml)",
        check: Check::PerProvider(annotation_ccm_version),
        vap: Vap::Cel(annotation_ccm_version_cel),
    },
];

/// Every annotation on the new object that the provider's table lists, with its entry.
fn documented<'a>(ctx: &Ctx<'a>, cat: &'static Catalog) -> Vec<(Annot<'a>, &'static Entry)> {
    let Some(anns) = ctx.new.and_then(|s| s.annotations()) else {
        return Vec::new();
    };
    let table = cat.table();
    let mut out = Vec::new();
    for prefix in cat.prefixes() {
        for (key, value) in anns
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
        {
            if let Some(e) = table.get(&key[prefix.len()..]) {
                out.push((Annot { key, value }, e));
            }
        }
    }
    out
}

/// Formats that another rule owns (`rule:` in the table) are left to it, so a bad value is
/// reported once, under the id users already know. A JSON value that parses is then read
/// field by field where the provider documents its fields (`providers::json_fields`).
fn annotation_value_format(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    for (a, e) in documented(ctx, cat) {
        if e.rule.is_some() {
            continue;
        }
        if let Err(why) = e.format.check(a.value) {
            out.push(
                annotation_field(a.key),
                format!(
                    "{} is \"{}\": {why}; expected {} per the {} annotation reference, e.g. {}: {}",
                    a.key,
                    a.value,
                    e.format.expected(),
                    cat.provider,
                    a.key,
                    e.format.example()
                ),
            );
            continue;
        }
        for why in crate::providers::json_fields(cat.provider, &e.name, a.value, new) {
            out.push(annotation_field(a.key), format!("{}: {why}", a.key));
        }
    }
    // The cloud API's limits on the parameters the annotations become (providers/data/
    // <provider>-api.yaml; ACK's are annotation-format's).
    crate::providers::api::check(ctx, cat, "annotation-value-format", out);
}

/// Silent when the version is unknown: most clusters never configure it, and a warning on
/// every annotation would drown the real findings.
fn annotation_ccm_version(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let table = cat.table();
    let (known, what) = match table.version_of {
        VersionOf::Ccm => (ctx.ccm_version, "cloud-controller-manager"),
        VersionOf::Cluster => (
            ctx.cluster_version,
            "cluster (its cloud controller follows the cluster version)",
        ),
    };
    let Known::Yes(v) = known else { return };
    for (a, e) in documented(ctx, cat) {
        if e.version_rule.is_some() || e.supported_at(v) {
            continue;
        }
        out.push(
            annotation_field(a.key),
            format!(
                "{} needs {what} {} or newer ({}); this one runs {v}, so the annotation is ignored and the Service does not get what it asks for; upgrade first, or remove the annotation",
                a.key,
                e.since_text(),
                table.source_of(e)
            ),
        );
    }
}

fn annotation_value_format_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let mut out = Vec::new();
    for e in cat.table().annotations.iter().filter(|e| e.rule.is_none()) {
        for prefix in cat.prefixes() {
            let key = format!("{prefix}{}", e.name);
            let value = cel::annotation(&key);
            let Some(ok) = e.format.cel(&value) else {
                return Err(
                    "Huawei's JSON annotations (elb.health-check-option(s), elb.session-affinity-option and their field ranges) need a JSON parser, which Kubernetes CEL lacks, so only the webhook checks them; export it with --provider ctyun or volcengine",
                );
            };
            if ok == "true" {
                continue;
            }
            out.push(
                CelCheck::new(
                    format!("{} && !({ok})", cel::has_annotation(&key)),
                    format!(
                        "'[annotation-value-format] {key} is \"' + {value} + '\"; expected {} per the {} annotation reference, e.g. {key}: {}'",
                        e.format.expected().replace('\'', "\\'").replace('"', "\\\""),
                        cat.provider,
                        e.format.example().replace('\'', "\\'").replace('"', "\\\"")
                    ),
                )
                .same_when(value),
            );
        }
    }
    out.extend(crate::providers::json_fields_cel(cat));
    Ok(out)
}

fn annotation_ccm_version_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let table = cat.table();
    let (known, what) = match table.version_of {
        VersionOf::Ccm => (&v.versions.ccm, "cloud-controller-manager"),
        VersionOf::Cluster => (&v.versions.cluster, "cluster"),
    };
    // Unknown: the webhook says nothing either.
    let Known::Yes(version) = known else {
        return Err(
            "the version its annotations are compared with is unknown (set ccm.version, or cluster.version for Huawei)",
        );
    };
    let mut out = Vec::new();
    for e in table.annotations.iter() {
        if e.version_rule.is_some() || e.supported_at(version) {
            continue;
        }
        for prefix in cat.prefixes() {
            let key = format!("{prefix}{}", e.name);
            out.push(CelCheck::new(
                cel::has_annotation(&key),
                cel::lit(&format!(
                    "[annotation-ccm-version] {key} needs {what} {} or newer ({}); this one runs {version}, so the annotation is ignored; upgrade first, or remove the annotation",
                    e.since_text(),
                    table.source_of(e)
                )),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
