//! The pure core: `evaluate` turns an admission input into a verdict, `mutate` into the
//! desired object. No I/O and no async: every front end (webhook, CLI) calls these.

pub mod input;
pub mod mutate;
pub mod service;
pub mod version;

pub use input::{Input, InputError, Operation, UserInfo};
pub use mutate::{AppliedDefault, Mutation, mutate};
pub use service::Svc;

use serde::Serialize;

use crate::config::{Config, ProviderChoice};
use crate::providers::{Catalog, Provider, catalog};
use crate::rules::{Action, Check, Gate, Rule, registry};
use version::Known;

/// Other objects in the cluster, as the watches see them.
pub trait ClusterView: Send + Sync {
    /// Appends every Service (or reservation) using load balancer `lb` of `provider`.
    fn lb_users(&self, provider: Provider, lb: &str, out: &mut Vec<crate::cluster::LbUser>);
    /// The node that has this IP address, if any.
    fn node_with_ip(&self, ip: &str) -> Option<String>;
    /// Appends the Ingresses that use ELB `elb`.
    fn ingresses_on(&self, elb: &str, out: &mut Vec<crate::cluster::IngressUse>);
    /// How long the cache has been missing changes (watch broken), if at all.
    fn stale_for(&self) -> Option<std::time::Duration>;
}

/// A cluster with nothing in it: offline checks and standalone mode.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyCluster;
impl ClusterView for EmptyCluster {
    fn lb_users(&self, _: Provider, _: &str, _: &mut Vec<crate::cluster::LbUser>) {}
    fn node_with_ip(&self, _: &str) -> Option<String> {
        None
    }
    fn ingresses_on(&self, _: &str, _: &mut Vec<crate::cluster::IngressUse>) {}
    fn stale_for(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Facts about load balancers that Kubernetes does not hold.
pub trait Inventory: Send + Sync {
    /// False when no inventory is configured: inventory rules then stay silent.
    fn configured(&self) -> bool;
    fn get(&self, provider: Provider, id: &str) -> Option<&crate::inventory::LoadBalancer>;
}

/// No inventory configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyInventory;
impl Inventory for EmptyInventory {
    fn configured(&self) -> bool {
        false
    }
    fn get(&self, _: Provider, _: &str) -> Option<&crate::inventory::LoadBalancer> {
        None
    }
}

/// Everything a rule may read. Built once per request.
pub struct Ctx<'a> {
    pub input: &'a Input,
    pub new: Option<Svc<'a>>,
    pub old: Option<Svc<'a>>,
    pub config: &'a Config,
    pub cluster_version: &'a Known,
    pub ccm_version: &'a Known,
    pub cluster: &'a dyn ClusterView,
    pub inventory: &'a dyn Inventory,
}

impl<'a> Ctx<'a> {
    pub fn new(
        input: &'a Input,
        config: &'a Config,
        versions: &'a Versions,
        cluster: &'a dyn ClusterView,
        inventory: &'a dyn Inventory,
    ) -> Self {
        Self {
            input,
            new: input.object.as_ref().map(Svc),
            old: input.old_object.as_ref().map(Svc),
            config,
            cluster_version: &versions.cluster,
            ccm_version: &versions.ccm,
            cluster,
            inventory,
        }
    }

    /// True when the request comes from the cloud controller (config `ccm.users/groups`).
    pub fn by_ccm(&self) -> bool {
        self.config.is_ccm(&self.input.user)
    }

    /// The providers whose rules apply to this request.
    pub fn providers(&self) -> Vec<Provider> {
        match self.config.provider {
            ProviderChoice::Fixed(p) => vec![p],
            ProviderChoice::Auto => Provider::ALL
                .into_iter()
                .filter(|p| {
                    let c = catalog(*p);
                    self.new.is_some_and(|s| c.detect(s.0))
                        || self.old.is_some_and(|s| c.detect(s.0))
                })
                .collect(),
        }
    }
}

/// The cluster's and the CCM's versions, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    pub cluster: Known,
    pub ccm: Known,
}

impl Versions {
    pub fn from_config(config: &Config) -> Self {
        Self {
            cluster: Known::from_option(config.cluster.version.as_deref()),
            // `auto` stays unknown until the server reads it from the cluster.
            ccm: Known::from_option(config.ccm.version.as_deref().filter(|_| !config.ccm.auto())),
        }
    }
}

/// One thing a rule found. `advisory` findings are warnings whatever the rule's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub field: String,
    pub message: String,
    pub advisory: bool,
    /// The load balancer is not in the inventory: `inventory.unknownLoadBalancer` decides.
    pub unknown: bool,
    /// Denies even under a warn rule.
    pub escalated: bool,
}

/// What rules push into. Knows which rule is running so rules cannot mislabel findings.
pub struct Findings {
    rule: &'static str,
    items: Vec<Finding>,
}

impl Findings {
    pub fn new() -> Self {
        Self {
            rule: "",
            items: Vec::new(),
        }
    }

    pub(crate) fn start(&mut self, rule: &'static str) {
        self.rule = rule;
    }

    /// A violation of the running rule.
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.add(field.into(), message.into(), false);
    }

    /// A violation that denies even when the rule's default is warn (unless it is off).
    pub fn push_deny(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.add(field.into(), message.into(), false);
        if let Some(last) = self.items.last_mut() {
            last.escalated = true;
        }
    }

    /// Something worth a warning even when the rule denies (e.g. weight 0, unknown version).
    pub fn advise(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.add(field.into(), message.into(), true);
    }

    /// The rule needs a load balancer the inventory does not list.
    pub fn unknown(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.add(field.into(), message.into(), false);
        if let Some(last) = self.items.last_mut() {
            last.unknown = true;
        }
    }

    fn add(&mut self, field: String, message: String, advisory: bool) {
        self.items.push(Finding {
            rule: self.rule,
            field,
            message,
            advisory,
            unknown: false,
            escalated: false,
        });
    }

    pub fn into_vec(self) -> Vec<Finding> {
        self.items
    }
}

impl Default for Findings {
    fn default() -> Self {
        Self::new()
    }
}

/// Which action a finding takes: deny or warn (`off` findings are dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: &'static str,
    pub action: Action,
    pub field: String,
    /// `[rule-id] ...`, one line, as users see it.
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
    /// Warnings that are not rule findings (exemptions, provider ambiguity).
    pub notes: Vec<String>,
    /// Set when the request was exempt and not checked; says why.
    pub exempt: Option<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        !self.violations.iter().any(|v| v.action == Action::Deny)
    }

    pub fn denials(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| v.action == Action::Deny)
    }

    /// Every line a user should see as `Warning:`.
    pub fn warnings(&self) -> Vec<String> {
        self.notes
            .iter()
            .cloned()
            .chain(
                self.violations
                    .iter()
                    .filter(|v| v.action == Action::Warn)
                    .map(|v| v.message.clone()),
            )
            .collect()
    }

    /// Denial text for `status.message`: every denial, joined.
    pub fn denial_message(&self) -> Option<String> {
        let msgs: Vec<&str> = self.denials().map(|v| v.message.as_str()).collect();
        (!msgs.is_empty()).then(|| msgs.join("; "))
    }

    pub fn rule_ids(&self) -> Vec<&'static str> {
        self.violations.iter().map(|v| v.rule).collect()
    }
}

/// Why a request is exempt, if it is.
pub fn exemption(input: &Input, config: &Config) -> Option<String> {
    let ex = &config.exemptions;
    if ex.namespaces.contains(&input.namespace) {
        return Some(format!("namespace {} is exempt", input.namespace));
    }
    if ex.users.contains(&input.user.username) {
        return Some(format!("user {} is exempt", input.user.username));
    }
    input
        .user
        .groups
        .iter()
        .find(|g| ex.groups.contains(g))
        .map(|g| format!("group {g} is exempt"))
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
    let mut verdict = evaluate_once(input, config, versions, cluster, inventory);
    let old_lb = input.old_object.as_ref().filter(|o| Svc(o).is_lb());
    if input.operation != Operation::Update || verdict.allowed() {
        return verdict;
    }
    let Some(old) = old_lb else { return verdict };
    let Ok(mut before) = Input::new(
        Operation::Create,
        Some(old.clone()),
        None,
        input.user.clone(),
    ) else {
        return verdict;
    };
    before.namespace.clone_from(&input.namespace);
    before.name.clone_from(&input.name);
    before.uid.clone_from(&input.uid);
    let already = evaluate_once(&before, config, versions, cluster, inventory);
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
) -> Verdict {
    let mut verdict = Verdict::default();
    if let Some(why) = exemption(input, config) {
        verdict.notes.push(format!("lbguard: not checked: {why}"));
        verdict.exempt = Some(why);
        return verdict;
    }
    let ctx = Ctx::new(input, config, versions, cluster, inventory);
    let providers = ctx.providers();
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
        && config.cluster.on_stale == crate::config::OnStale::Allow
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
        let action = config.action_for(rule.id, rule.default);
        if action == Action::Off {
            continue;
        }
        let before = findings.items.len();
        if let Some(age) = stale
            && rule.class.needs_cluster()
        {
            if config.cluster.on_stale == crate::config::OnStale::Deny && gate_open(rule.gate, &ctx)
            {
                verdict.violations.push(Violation {
                    rule: rule.id,
                    action: Action::Deny,
                    field: String::new(),
                    message: format!("[{}] cannot check: the cluster cache is {}s behind (watch broken) and cluster.onStale is deny; retry when lbguard has caught up", rule.id, age.as_secs()),
                });
            }
            continue;
        }
        run_rule(rule, &ctx, &providers, &mut findings);
        for f in findings.items.drain(before..) {
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
                message: format!("[{}] {}", f.rule, f.message),
                field: f.field,
            });
        }
    }
    let unknown_action = config.inventory.unknown_load_balancer;
    if unknown_action != Action::Off {
        for (f, rules) in unknown {
            verdict.violations.push(Violation {
                rule: f.rule,
                action: unknown_action,
                message: format!(
                    "[{}] {} (rules that could not decide: {}; inventory.unknownLoadBalancer: {})",
                    f.rule,
                    f.message,
                    rules.join(", "),
                    unknown_action.as_str()
                ),
                field: f.field,
            });
        }
    }
    verdict
}

/// A view of a catalog annotation found on a Service: the exact key used and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annot<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// Field path of an annotation in messages: `metadata.annotations[key]`.
pub fn annotation_field(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

impl Catalog {
    /// Same key, either prefix (Alibaba reads the legacy prefix too).
    pub fn get<'s>(&self, svc: Svc<'s>, suffix: &str) -> Option<Annot<'s>> {
        use std::ops::Bound;
        let anns = svc.annotations()?;
        // Scans the keys under the prefix instead of building "prefix+suffix": this runs for
        // every annotation every rule reads, and the allocation showed up in profiles.
        for prefix in std::iter::once(self.prefix).chain(self.legacy_prefix) {
            let found = anns
                .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(prefix))
                .find(|(k, _)| &k[prefix.len()..] == suffix);
            if let Some((k, v)) = found {
                return Some(Annot { key: k, value: v });
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
