//! The pure core: `evaluate` turns an admission input into a verdict, `mutate` into the
//! desired object. No I/O and no async: every front end (webhook, CLI) calls these.

mod applies;
pub mod exceptions;
pub mod mutate;
mod verdict;

pub use crate::vocab::catalog::{Annot, annotation_field};
pub use crate::vocab::ctx::{
    ClusterView, Ctx, EmptyCluster, EmptyInventory, Finding, Findings, Inventory, Versions,
};
pub use crate::vocab::input::{Input, InputError, Operation, UserInfo};
pub use crate::vocab::service::Svc;
pub use crate::vocab::version;
pub use applies::{exemption, not_ours, providers};
pub use mutate::{AppliedDefault, Mutation, mutate};
pub use verdict::{Verdict, Violation};

use crate::providers::catalog;
use crate::rules::registry;
use crate::vocab::action::Action;
use crate::vocab::config::{Config, ConfigError};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{Check, Gate, Rule};
use k8s_openapi::api::core::v1::Service;

/// Parses a config and checks everything, rule ids included, listing every problem.
pub fn parse_config(text: &str, path: &str) -> Result<Config, ConfigError> {
    Config::from_yaml(text, path).and_then(|c| validate_config(c, path))
}

/// A config checked for everything, rule ids included.
pub fn validate_config(config: Config, path: &str) -> Result<Config, ConfigError> {
    let problems = config_problems(&config);
    config.unless(problems, path)
}

/// Everything wrong with a config: its own checks plus rule ids the registry lacks.
pub fn config_problems(config: &Config) -> Vec<String> {
    let mut problems: Vec<String> = config
        .rules
        .keys()
        .filter(|id| !registry().iter().any(|r| r.id == id.as_str()))
        .map(|id| format!("rules.{id}: unknown rule id (run `lbguard rules` for the list)"))
        .collect();
    problems.extend(
        config
            .exceptions
            .not_exemptable
            .iter()
            .enumerate()
            .filter(|(_, id)| !registry().iter().any(|r| r.id == id.as_str()))
            .map(|(i, id)| {
                format!("exceptions.notExemptable[{i}]: unknown rule id {id:?} (run `lbguard rules` for the list)")
            }),
    );
    problems.extend(config.problems());
    problems
}

fn gate_open(gate: Gate, ctx: &Ctx) -> bool {
    let new_lb = ctx.new.is_some_and(|s| s.is_lb());
    let old_lb = ctx.old.is_some_and(|s| s.is_lb());
    match (gate, ctx.input.operation) {
        (Gate::Admit, Operation::Create | Operation::Update) => new_lb,
        (Gate::Transition, Operation::Update) => old_lb && new_lb,
        (Gate::AnyUpdate, Operation::Update) => old_lb && ctx.new.is_some(),
        (Gate::Update, Operation::Update) => ctx.old.is_some() && ctx.new.is_some(),
        (Gate::Delete, Operation::Delete) => ctx.old.is_some(),
        _ => false,
    }
}

/// Runs one rule and returns its raw findings. Rule tests and the engine share this.
pub fn run_rule(rule: &Rule, ctx: &Ctx, providers: &[Provider], out: &mut Findings) {
    if !gate_open(rule.gate, ctx) {
        return;
    }
    out.start(rule.id);
    match rule.check {
        Check::Generic(f) => f(ctx, out),
        Check::PerProvider(f) => {
            for p in providers {
                if rule.providers.contains(p) {
                    f(ctx, catalog(*p), out);
                }
            }
        }
    }
}

/// Checks one admission request against every registered rule, collecting all findings.
///
/// Updates ratchet: a denial whose finding the live object already had (same rule, same
/// message) becomes a warning, so Services that predate lbguard (or a rule) can still be
/// updated, and the cloud controller can still remove its finalizer from them; only
/// problems the update introduces block it.
pub fn evaluate(
    input: &Input,
    config: &Config,
    versions: &Versions,
    cluster: &dyn ClusterView,
    inventory: &dyn Inventory,
) -> Verdict {
    let verdict = evaluate_once(input, config, versions, cluster, inventory, None);
    match ratchet_needed(input, &verdict) {
        Some(old) => ratchet(
            verdict,
            &live_as_create(input, old.clone(), input.user.clone()),
            config,
            versions,
            cluster,
            inventory,
        ),
        None => verdict,
    }
}

/// `evaluate` for a caller that owns the input (the webhook): the ratchet borrows the live
/// object and the user for its second look instead of copying them, and hands them back.
pub fn evaluate_owned(
    input: &mut Input,
    config: &Config,
    versions: &Versions,
    cluster: &dyn ClusterView,
    inventory: &dyn Inventory,
) -> Verdict {
    let verdict = evaluate_once(input, config, versions, cluster, inventory, None);
    if ratchet_needed(input, &verdict).is_none() {
        return verdict;
    }
    let Some(old) = input.old_object.take() else {
        return verdict;
    };
    let user = std::mem::take(&mut input.user);
    let mut before = live_as_create(input, old, user);
    let verdict = ratchet(verdict, &before, config, versions, cluster, inventory);
    input.old_object = before.object.take();
    input.user = before.user;
    verdict
}

/// The live object when an update's denials may be old ones: a denied UPDATE of a
/// LoadBalancer Service.
fn ratchet_needed<'i>(input: &'i Input, verdict: &Verdict) -> Option<&'i Service> {
    if input.operation != Operation::Update || verdict.allowed() {
        return None;
    }
    input.old_object.as_ref().filter(|o| Svc::new(o).is_lb())
}

/// The live object as a CREATE of this request's Service.
fn live_as_create(input: &Input, old: Service, user: UserInfo) -> Input {
    Input {
        operation: Operation::Create,
        namespace: input.namespace.clone(),
        name: input.name.clone(),
        uid: input.uid.clone(),
        object: Some(old),
        old_object: None,
        user,
        dry_run: false,
    }
}

/// Denials the live object (`before`) already had become warnings.
fn ratchet(
    mut verdict: Verdict,
    before: &Input,
    config: &Config,
    versions: &Versions,
    cluster: &dyn ClusterView,
    inventory: &dyn Inventory,
) -> Verdict {
    // Only the denying rules are asked again of the live object, unless a denial is the
    // report of an unknown load balancer: its message names every rule that could not decide.
    let denying: Vec<&'static str> = verdict
        .violations
        .iter()
        .filter(|v| v.action == Action::Deny)
        .map(|v| v.rule)
        .collect();
    let all = verdict
        .violations
        .iter()
        .any(|v| v.action == Action::Deny && v.inventory);
    let only = (!all).then_some(denying.as_slice());
    let already = evaluate_once(before, config, versions, cluster, inventory, only);
    for v in verdict
        .violations
        .iter_mut()
        .filter(|v| v.action == Action::Deny)
    {
        if already
            .violations
            .iter()
            .any(|a| a.rule == v.rule && a.message == v.message)
        {
            v.action = Action::Warn;
            v.message
                .push_str(" (already so before this update, so not blocking it)");
        }
    }
    verdict
}

fn evaluate_once(
    input: &Input,
    config: &Config,
    versions: &Versions,
    cluster: &dyn ClusterView,
    inventory: &dyn Inventory,
    only: Option<&[&'static str]>,
) -> Verdict {
    let mut verdict = Verdict::default();
    if let Some(why) = exemption(input, config) {
        verdict.notes.push(format!("lbguard: not checked: {why}"));
        verdict.exempt = Some(why);
        return verdict;
    }
    let ctx = Ctx::new(input, config, versions, cluster, inventory);
    // The deletion-protection mark is on the Service, not on its load balancer: a DELETE is
    // checked whatever serves the Service (only DELETE rules run: no provider's rules apply).
    if let Some(why) = not_ours(&ctx).filter(|_| input.operation != Operation::Delete) {
        verdict.notes.push(format!("lbguard: not checked: {why}"));
        verdict.exempt = Some(why);
        verdict.foreign = true;
        return verdict;
    }
    let providers = providers(&ctx);
    if providers.len() > 1 {
        let names: Vec<&str> = providers.iter().map(|p| p.as_str()).collect();
        verdict.notes.push(format!(
            "lbguard: annotations of several providers ({}) on one Service; each provider's rules were applied. Keep only your cloud's annotations",
            names.join(", ")
        ));
    }
    let stale = cluster.stale_for().filter(|age| {
        config
            .cluster
            .stale_after
            .is_some_and(|limit| *age > limit.0)
    });
    if let Some(age) = stale
        && config.cluster.on_stale == crate::vocab::config::OnStale::Allow
    {
        verdict.notes.push(format!(
            "lbguard: the cluster cache is {}s behind (watch broken); cluster rules were skipped (cluster.onStale: allow)",
            age.as_secs()
        ));
    }
    let mut findings = Findings::new();
    // One report per unknown load balancer, naming every rule that could not decide.
    let mut unknown: Vec<(Finding, Vec<&'static str>)> = Vec::new();
    for rule in registry() {
        if only.is_some_and(|only| !only.contains(&rule.id)) {
            continue;
        }
        let action = config.action_for(rule.id, rule.default);
        if action == Action::Off {
            continue;
        }
        let before = findings.len();
        if let Some(age) = stale
            && rule.class.needs_cluster()
        {
            if config.cluster.on_stale == crate::vocab::config::OnStale::Deny
                && gate_open(rule.gate, &ctx)
            {
                verdict.violations.push(Violation {
                    rule: rule.id,
                    action: Action::Deny,
                    field: String::new(),
                    inventory: false,
                    peer: None,
                    exception: None,
                    message: format!("[{}] cannot check: the cluster cache is {}s behind (watch broken) and cluster.onStale is deny; retry when lbguard has caught up", rule.id, age.as_secs()),
                });
            }
            continue;
        }
        run_rule(rule, &ctx, &providers, &mut findings);
        for f in findings.take_from(before) {
            if f.cleared {
                if !verdict.cleared.contains(&f.rule) {
                    verdict.cleared.push(f.rule);
                }
                continue;
            }
            if f.unknown {
                match unknown.iter_mut().find(|(u, _)| u.message == f.message) {
                    Some((_, rules)) => rules.push(f.rule),
                    None => unknown.push((f.clone(), vec![f.rule])),
                }
                continue;
            }
            verdict.violations.push(Violation {
                rule: f.rule,
                action: if f.advisory {
                    Action::Warn
                } else if f.escalated {
                    Action::Deny
                } else {
                    action
                },
                // One allocation of the exact size: `format!` grew it a few times per finding.
                message: ["[", f.rule, "] ", &f.message].concat(),
                field: f.field,
                inventory: f.inventory,
                peer: f.peer,
                exception: None,
            });
        }
    }
    for (f, rules) in unknown {
        let (action, setting, value) = if f.cloud_error {
            let on = config.inventory.cloud.on_error;
            (on.action(), "inventory.cloud.onError", on.as_str())
        } else {
            let a = config.inventory.unknown_load_balancer;
            (a, "inventory.unknownLoadBalancer", a.as_str())
        };
        if action == Action::Off {
            continue;
        }
        // A cloud failure reads as what it is, not as the verdict of the rule that asked first.
        let label = if f.cloud_error { "lb-exists" } else { f.rule };
        verdict.violations.push(Violation {
            rule: label,
            action,
            message: format!(
                "[{label}] {} (rules that could not decide: {}; {setting}: {value})",
                f.message,
                rules.join(", "),
            ),
            field: f.field,
            inventory: true,
            peer: None,
            exception: None,
        });
    }
    verdict
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
