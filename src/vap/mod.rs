//! `lbguard export-vap`: the rules that are pure functions of the Service (and, on updates,
//! of the live Service) as ValidatingAdmissionPolicies, which the API server evaluates
//! itself. One policy and one binding per rule: a binding has one action, and rules differ in
//! theirs; a rule too big for one policy (client-side `kubectl apply` stores at most 256 KiB)
//! is one per provider and part (`CelCheck::part`). The config is baked in: actions,
//! exemptions, versions, providers.
//!
//! Not exported: rules that read the cluster view or the inventory, rules whose CEL is not
//! written, and rules the config turns off or has nothing to check for (a version rule when
//! the cluster is new enough). `export-vap --list` says which and why.

pub mod apply;
#[cfg(test)]
pub mod eval;
pub mod mutating;
pub mod route;
pub mod vars;

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingSpec,
    ValidatingAdmissionPolicySpec, Validation,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use crate::providers::catalog;
use crate::rules::registry;
use crate::vocab::action::Action;
use crate::vocab::catalog::Catalog;
use crate::vocab::cel::{self, IS_LB, on};
use crate::vocab::config::{Config, ProviderChoice};
use crate::vocab::ctx::Versions;
use crate::vocab::provider::Provider;
use crate::vocab::rule::{Check, Gate, Rule, Vap, VapCtx};

/// One exported rule.
#[derive(Debug, Clone)]
pub struct Exported {
    pub rule: &'static Rule,
    pub action: Action,
    /// Its policies, each with its binding: `lbguard-<id>`, or for a rule whose checks name
    /// parts (`CelCheck::part`) one per provider and part, `lbguard-<id>-<provider>[-<part>]`.
    /// A deny rule's advisory checks (the engine's warnings whatever the action, e.g. weight
    /// 0) are one more policy each, `<name>-advice`, bound with Warn: one binding has one
    /// action.
    pub policies: Vec<Bound>,
}

/// One policy, its binding and the action the binding has.
#[derive(Debug, Clone)]
pub struct Bound {
    pub policy: ValidatingAdmissionPolicy,
    pub binding: ValidatingAdmissionPolicyBinding,
    pub action: Action,
}

impl Bound {
    pub fn name(&self) -> &str {
        self.policy.metadata.name.as_deref().unwrap_or_default()
    }
}

/// What `export` produced: the policies, and every other rule with the reason it is not one.
#[derive(Debug, Clone, Default)]
pub struct Export {
    pub exported: Vec<Exported>,
    pub skipped: Vec<(&'static str, String)>,
}

/// The "is or was LoadBalancer" condition of the chart's validating webhook.
pub const IS_OR_WAS_LB: &str = "(object != null && has(object.spec) && has(object.spec.type) && object.spec.type == 'LoadBalancer') || (oldObject != null && has(oldObject.spec) && has(oldObject.spec.type) && oldObject.spec.type == 'LoadBalancer')";

/// Exports every rule the config keeps on (or only `only`, when given).
pub fn export(config: &Config, versions: &Versions, only: Option<&[String]>) -> Export {
    let mut out = Export::default();
    for rule in registry() {
        if only.is_some_and(|ids| !ids.iter().any(|i| i == rule.id)) {
            continue;
        }
        match export_rule(rule, config, versions) {
            Ok(e) => out.exported.push(e),
            Err(why) => out.skipped.push((rule.id, why)),
        }
    }
    out
}

/// The providers whose rules the policies carry.
fn providers(config: &Config, rule: &Rule) -> Vec<Provider> {
    match config.provider {
        ProviderChoice::Fixed(p) => rule.providers.iter().copied().filter(|r| *r == p).collect(),
        ProviderChoice::Auto => rule.providers.to_vec(),
    }
}

/// CEL for "the engine would apply `p`'s rules to `var`" (`provider: auto`): the Service
/// carries one of its annotations (prefix, any case), its load balancer label or a finalizer.
pub(crate) fn detects(cat: &Catalog, var: &str) -> String {
    let mut any: Vec<String> = cat
        .prefixes()
        .map(|p| {
            format!(
                "(has($s.metadata.annotations) && $s.metadata.annotations.exists(k, k.lowerAscii().startsWith({})))",
                cel::lit(&p.to_ascii_lowercase())
            )
        })
        .collect();
    if let Some(l) = cat.lb_id_label {
        any.push(cel::has_label(l));
    }
    let classes: Vec<&str> = crate::vocab::route::builtin_classes(cat.provider)
        .iter()
        .map(|(c, _)| *c)
        .collect();
    if !classes.is_empty() {
        any.push(format!(
            "(has($s.spec.loadBalancerClass) && $s.spec.loadBalancerClass in {})",
            cel::list(&classes)
        ));
    }
    if !cat.finalizers.is_empty() {
        any.push(format!(
            "(has($s.metadata.finalizers) && $s.metadata.finalizers.exists(f, f in {}))",
            cel::list(cat.finalizers)
        ));
    }
    format!("({var} != null && ({}))", on(&any.join(" || "), var))
}

/// CEL for the engine's gate: when a rule runs at all.
fn gate(g: Gate) -> String {
    let new_lb = format!("(object != null && {})", on(IS_LB, "object"));
    let old_lb = format!("(oldObject != null && {})", on(IS_LB, "oldObject"));
    match g {
        Gate::Admit => new_lb,
        Gate::Transition => format!("({old_lb} && {new_lb})"),
        Gate::AnyUpdate => format!("({old_lb} && object != null)"),
        Gate::Update => "(oldObject != null && object != null)".into(),
        Gate::Delete => "(oldObject != null && object == null)".into(),
    }
}

fn operations(g: Gate) -> Vec<String> {
    let ops: &[&str] = match g {
        Gate::Admit => &["CREATE", "UPDATE"],
        Gate::Transition | Gate::AnyUpdate | Gate::Update => &["UPDATE"],
        Gate::Delete => &["DELETE"],
    };
    ops.iter().map(|s| s.to_string()).collect()
}

fn export_rule(
    rule: &'static Rule,
    config: &Config,
    versions: &Versions,
) -> Result<Exported, String> {
    let action = config.action_for(rule.id, rule.default);
    if action == Action::Off {
        return Err("off in the config".into());
    }
    let make = match rule.vap {
        Vap::No(why) => return Err(why.into()),
        Vap::Cel(f) => f,
    };
    let fixed = matches!(config.provider, ProviderChoice::Fixed(_));
    // Per policy name: its validations and its advice.
    let mut groups: Vec<(String, Vec<Validation>, Vec<Validation>)> = Vec::new();
    let mut checks_of = Vec::new();
    let targets: Vec<Option<&'static Catalog>> = match rule.check {
        Check::Generic(_) => vec![None],
        Check::PerProvider(_) => providers(config, rule)
            .into_iter()
            .map(|p| Some(catalog(p)))
            .collect(),
    };
    for cat in targets {
        let scope = crate::vocab::route::Scope::of(config);
        // One variable each per policy: every check of the provider reads them.
        let applies_new = match (cat, fixed) {
            (Some(c), false) => cel::shared(
                &format!("{}_applies", c.provider),
                &format!(
                    "({} || {}) && ({})",
                    detects(c, "object"),
                    detects(c, "oldObject"),
                    route::routed_to(c.provider, &scope)
                ),
            ),
            _ => "true".into(),
        };
        let applies_old = match (cat, fixed) {
            (Some(c), false) => cel::shared(
                &format!("old_{}_applies", c.provider),
                &format!(
                    "{} && {}",
                    detects(c, "oldObject"),
                    on(&route::served_by(c.provider, &scope), "oldObject")
                ),
            ),
            _ => "true".into(),
        };
        let ratchet = (action == Action::Deny && rule.gate == Gate::Admit).then(|| {
            format!(
                "(oldObject != null && {} && {applies_old})",
                on(IS_LB, "oldObject")
            )
        });
        let checks = make(&VapCtx {
            cat,
            config,
            versions,
            ratchet,
        })
        .map_err(String::from)?;
        checks_of.push((cat, applies_new, applies_old, checks));
    }
    let split = checks_of
        .iter()
        .any(|(_, _, _, cs)| cs.iter().any(|c| c.part.is_some()));
    for (cat, applies_new, applies_old, checks) in checks_of {
        for c in checks {
            let violates_now = on(&c.violates, "object");
            // The engine lets an update keep a denial the live LoadBalancer already had
            // (advice has no witness: a warning is never kept or dropped by the ratchet).
            let ratchet = match (&c.witness, action, rule.gate) {
                (Some(w), Action::Deny, Gate::Admit) => format!(
                    " || (oldObject != null && {} && {applies_old} && ({}) && ({}) == ({}))",
                    on(IS_LB, "oldObject"),
                    on(&c.violates, "oldObject"),
                    on(w, "oldObject"),
                    on(w, "object"),
                ),
                _ => String::new(),
            };
            let mut name = format!("lbguard-{}", rule.id);
            if split {
                for p in cat.map(|c| c.provider.as_str()).into_iter().chain(c.part) {
                    if !p.is_empty() {
                        name = format!("{name}-{p}");
                    }
                }
            }
            let at = match groups.iter().position(|(n, ..)| *n == name) {
                Some(i) => i,
                None => {
                    groups.push((name, Vec::new(), Vec::new()));
                    groups.len() - 1
                }
            };
            let (_, validations, advice) = &mut groups[at];
            let into = if c.advisory { advice } else { validations };
            into.push(Validation {
                expression: format!(
                    "!({} && {applies_new} && ({violates_now})){ratchet}",
                    gate(rule.gate)
                ),
                message_expression: Some(on(&c.message, "object")),
                // 403, as the webhook's denials.
                reason: Some("Forbidden".into()),
                ..Default::default()
            });
        }
    }
    let mut policies = Vec::new();
    for (name, mut validations, mut advice) in groups {
        // Under a warn action the advice is one more warning of the same policy.
        if action != Action::Deny {
            validations.append(&mut advice);
        }
        for (name, validations, action) in [
            (name.clone(), validations, action),
            (format!("{name}-advice"), advice, Action::Warn),
        ] {
            if !validations.is_empty() {
                policies.push(policy_and_binding(rule, config, name, validations, action));
            }
        }
    }
    // A rule with only advice under this config would export nothing it denies: as before,
    // its main policy is what makes it exported.
    if !policies.iter().any(|b| b.action == action) {
        return Err("nothing to check with this config (for example: the version is new enough, or the setting it guards is off)".into());
    }
    Ok(Exported {
        rule,
        action,
        policies,
    })
}

/// One rule's policy (its match conditions as the engine gates it) and its binding. What
/// the validations share becomes the policy's variables.
fn policy_and_binding(
    rule: &'static Rule,
    config: &Config,
    name: String,
    mut validations: Vec<Validation>,
    action: Action,
) -> Bound {
    let mut vars = vars::Vars::default();
    for v in &mut validations {
        v.expression = vars.resolve(&v.expression);
        v.message_expression = v.message_expression.as_deref().map(|m| vars.resolve(m));
    }
    let labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_string(),
            "lbguard".to_string(),
        ),
        ("lbguard.io/rule".to_string(), rule.id.to_string()),
    ]);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels),
        ..Default::default()
    };
    let ex = &config.exemptions;
    // Rules that run on any update (finalizers) see every Service the provider has a say
    // on; deletion protection every Service that carries the mark, whatever serves it, as
    // in the engine.
    let mut conditions = Vec::new();
    if rule.gate != Gate::Delete {
        conditions.push(MatchCondition {
            name: "served-by-provider".into(),
            expression: route::ours(config),
        });
    }
    if !matches!(rule.gate, Gate::Update | Gate::Delete) {
        conditions.push(MatchCondition {
            name: "is-or-was-load-balancer".into(),
            expression: IS_OR_WAS_LB.into(),
        });
    }
    if !ex.users.is_empty() || !ex.groups.is_empty() {
        let users: Vec<&str> = ex.users.iter().map(String::as_str).collect();
        let groups: Vec<&str> = ex.groups.iter().map(String::as_str).collect();
        conditions.push(MatchCondition {
            name: "not-exempt".into(),
            expression: format!(
                "!(request.userInfo.username in {}) && !request.userInfo.groups.exists(g, g in {})",
                cel::list(&users),
                cel::list(&groups)
            ),
        });
    }
    let policy = ValidatingAdmissionPolicy {
        metadata: meta.clone(),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".into()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![NamedRuleWithOperations {
                    api_groups: Some(vec![String::new()]),
                    api_versions: Some(vec!["v1".into()]),
                    resources: Some(vec!["services".into()]),
                    operations: Some(operations(rule.gate)),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            match_conditions: (!conditions.is_empty()).then_some(conditions),
            variables: (!vars.is_empty()).then(|| vars.into_variables()),
            validations: Some(validations),
            ..Default::default()
        }),
        status: None,
    };
    let namespace_selector = (!ex.namespaces.is_empty()).then(|| LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "kubernetes.io/metadata.name".into(),
            operator: "NotIn".into(),
            values: Some(ex.namespaces.clone()),
        }]),
        ..Default::default()
    });
    let binding = ValidatingAdmissionPolicyBinding {
        metadata: meta,
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some(name),
            validation_actions: Some(vec![match action {
                Action::Deny => "Deny".into(),
                _ => "Warn".into(),
            }]),
            match_resources: namespace_selector.map(|s| MatchResources {
                namespace_selector: Some(s),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    Bound {
        policy,
        binding,
        action,
    }
}

impl Exported {
    /// Its objects: each policy and its binding.
    pub fn objects(&self) -> Vec<serde_json::Value> {
        self.policies
            .iter()
            .flat_map(|b| {
                [
                    with_kind(&b.policy, "ValidatingAdmissionPolicy"),
                    with_kind(&b.binding, "ValidatingAdmissionPolicyBinding"),
                ]
            })
            .collect()
    }

    /// The largest of its objects' annotations once `kubectl apply` (client-side) added its
    /// copy of the object: what the API server holds to `apply::ANNOTATIONS_LIMIT`.
    pub fn applied_size(&self) -> usize {
        self.largest().1
    }

    /// The name of its object with the largest annotations once `kubectl apply` added its
    /// copy, and their size.
    pub fn largest(&self) -> (String, usize) {
        self.objects()
            .iter()
            .map(|o| {
                let name = o["metadata"]["name"].as_str().unwrap_or_default();
                (name.to_string(), apply::annotations_size(o))
            })
            .max_by_key(|(_, size)| *size)
            .unwrap_or_default()
    }
}

/// The policies and bindings as Kubernetes objects (JSON values with apiVersion and kind).
pub fn objects(export: &Export) -> Vec<serde_json::Value> {
    export.exported.iter().flat_map(Exported::objects).collect()
}

fn with_kind<T: serde::Serialize>(o: &T, kind: &str) -> serde_json::Value {
    let mut v = serde_json::to_value(o).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert(
            "apiVersion".into(),
            "admissionregistration.k8s.io/v1".into(),
        );
        m.insert("kind".into(), kind.into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::check::load;
    use crate::testkit::{cfg, run};
    use crate::vocab::input::{Input, Operation, UserInfo};
    use k8s_openapi::api::core::v1::Service;

    fn user() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
        }
    }

    fn examples() -> Vec<Service> {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
        load(&[root])
            .services
            .into_iter()
            .map(|f| f.service)
            .collect()
    }

    /// Configs that export as much as possible: each provider fixed, old and new versions,
    /// the CCM known, exemptions and deletion protection on.
    fn configs() -> Vec<Config> {
        let mut out = Vec::new();
        for p in ["ctyun", "alibaba", "huawei", "volcengine", "auto"] {
            for (cluster, ccm) in [("v1.14.0", "v0.9.0"), ("v1.31.14-r50", "v2.10.0")] {
                out.push(cfg(&format!(
                    "provider: {p}\ncluster:\n  version: {cluster}\n  flavor: turbo\nccm:\n  version: {ccm}\n  users: [system:serviceaccount:kube-system:cloud-controller-manager]\nexemptions:\n  namespaces: [kube-system]\n"
                )));
            }
        }
        out
    }

    /// Every example, created and updated onto every other example of the same name, through
    /// every config: the harness in `testkit::run` compares the policies with the engine.
    #[test]
    fn policies_agree_with_the_engine_on_every_example() {
        let services = examples();
        assert!(services.len() >= 30, "{}", services.len());
        let mut compared = 0;
        for config in configs() {
            for s in &services {
                let create = Input::new(Operation::Create, Some(s.clone()), None, user()).unwrap();
                run(&create, &config);
                for old in services
                    .iter()
                    .filter(|o| o.metadata.name == s.metadata.name)
                {
                    let update = Input::new(
                        Operation::Update,
                        Some(s.clone()),
                        Some(old.clone()),
                        user(),
                    )
                    .unwrap();
                    run(&update, &config);
                }
                let delete = Input::new(Operation::Delete, None, Some(s.clone()), user()).unwrap();
                run(&delete, &config);
                compared += 1;
            }
        }
        assert!(compared > 300);
    }

    #[test]
    fn every_exported_rule_is_exported_under_some_config() {
        let mut seen = std::collections::BTreeSet::new();
        for config in configs() {
            let versions = Versions::from_config(&config);
            for e in export(&config, &versions, None).exported {
                seen.insert(e.rule.id);
            }
        }
        for r in registry() {
            if matches!(r.vap, Vap::Cel(_)) {
                assert!(
                    seen.contains(r.id),
                    "{} has CEL but is never exported",
                    r.id
                );
            }
        }
    }

    #[test]
    fn output_parses_into_the_api_types() {
        let config = &configs()[1];
        let e = export(config, &Versions::from_config(config), None);
        for o in objects(&e) {
            match o["kind"].as_str() {
                Some("ValidatingAdmissionPolicy") => {
                    let p: ValidatingAdmissionPolicy = serde_json::from_value(o).unwrap();
                    let spec = p.spec.unwrap();
                    assert!(!spec.validations.unwrap().is_empty());
                }
                Some("ValidatingAdmissionPolicyBinding") => {
                    let b: ValidatingAdmissionPolicyBinding = serde_json::from_value(o).unwrap();
                    let spec = b.spec.unwrap();
                    assert_eq!(spec.policy_name, b.metadata.name);
                    let ns = spec.match_resources.unwrap().namespace_selector.unwrap();
                    assert_eq!(
                        ns.match_expressions.unwrap()[0].values,
                        Some(vec!["kube-system".to_string()])
                    );
                }
                other => panic!("unexpected kind {other:?}"),
            }
        }
    }
}
