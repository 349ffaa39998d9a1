//! What a rule reads (the request, the config, versions, the cluster and the inventory)
//! and what it writes (findings).

use std::cell::OnceCell;
use std::sync::Arc;
use std::time::Instant;

use super::config::Config;
use super::input::Input;
use super::lb::{Family, LoadBalancer};
use super::plan::Plan;
use super::provider::Provider;
use super::service::Svc;
use super::version::Known;

/// One Service's (or reservation's) use of a load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LbUser {
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    /// Listener ports: (port, family, listener protocol, upper case).
    pub ports: Vec<(i32, Family, &'static str)>,
    /// Huawei `skip-managed-listener: "true"`.
    pub skip_listener: bool,
    /// The cloud controller makes listeners for its ports on this load balancer (ACK: only
    /// with `force-override-listeners: "true"` on a reused one).
    pub makes_listeners: bool,
    /// Huawei `elb.pass-through` value.
    pub pass_through: Option<String>,
    /// Admitted but not yet seen by the watch: held until this instant.
    pub reserved_until: Option<Instant>,
}

impl LbUser {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn is_live(&self, now: Instant) -> bool {
        self.reserved_until.is_none_or(|t| t > now)
    }
}

/// An Ingress using an ELB (CCE: `kubernetes.io/elb.id`, port `kubernetes.io/elb.port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressUse {
    pub namespace: String,
    pub name: String,
    pub ports: Vec<i32>,
}

/// Other objects in the cluster, as the watches see them.
pub trait ClusterView: Send + Sync {
    /// Appends every Service (or reservation) using load balancer `lb` of `provider`.
    fn lb_users(&self, provider: Provider, lb: &str, out: &mut Vec<LbUser>);
    /// The node that has this IP address, if any.
    fn node_with_ip(&self, ip: &str) -> Option<String>;
    /// Appends the Ingresses that use ELB `elb`.
    fn ingresses_on(&self, elb: &str, out: &mut Vec<IngressUse>);
    /// How long the cache has been missing changes (watch broken), if at all.
    fn stale_for(&self) -> Option<std::time::Duration>;
}

/// A cluster with nothing in it: offline checks and standalone mode.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyCluster;
impl ClusterView for EmptyCluster {
    fn lb_users(&self, _: Provider, _: &str, _: &mut Vec<LbUser>) {}
    fn node_with_ip(&self, _: &str) -> Option<String> {
        None
    }
    fn ingresses_on(&self, _: &str, _: &mut Vec<IngressUse>) {}
    fn stale_for(&self) -> Option<std::time::Duration> {
        None
    }
}

/// What the inventory knows of one load balancer id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    Found(&'a LoadBalancer),
    /// The cloud answered that the region has no load balancer with this id.
    NotFound {
        region: &'a str,
    },
    /// The cloud could not be asked in time; the cause, for the message.
    Unavailable(&'a str),
    /// The id cannot name a load balancer (its shape); the cloud was not asked.
    Invalid,
    /// Neither the file nor the cloud knows it.
    Unknown,
}

/// Facts about load balancers that Kubernetes does not hold.
pub trait Inventory: Send + Sync {
    /// False when no inventory is configured: inventory rules then stay silent.
    fn configured(&self) -> bool;
    fn lookup(&self, provider: Provider, id: &str) -> Lookup<'_>;
    fn get(&self, provider: Provider, id: &str) -> Option<&LoadBalancer> {
        match self.lookup(provider, id) {
            Lookup::Found(lb) => Some(lb),
            _ => None,
        }
    }
}

/// No inventory configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyInventory;
impl Inventory for EmptyInventory {
    fn configured(&self) -> bool {
        false
    }
    fn lookup(&self, _: Provider, _: &str) -> Lookup<'_> {
        Lookup::Unknown
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
    /// The plan of each provider (`Provider::ALL`'s order), computed by the first plan rule
    /// that needs it and shared by the others.
    pub plans: [OnceCell<Plan>; 4],
    /// `controller`'s answer per provider (`Provider::ALL`'s order): rules ask it dozens of
    /// times a request.
    controllers: [OnceCell<Option<super::controller::Controller>>; 4],
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
            new: input.object.as_ref().map(Svc::new),
            old: input.old_object.as_ref().map(Svc::new),
            config,
            cluster_version: &versions.cluster,
            ccm_version: &versions.ccm,
            cluster,
            inventory,
            plans: Default::default(),
            controllers: Default::default(),
        }
    }

    /// The controller of `p` that takes this request's Service: the new object's, or on a
    /// change away from LoadBalancer (or a delete) the live one's.
    pub fn controller(&self, p: Provider) -> Option<super::controller::Controller> {
        let i = Provider::ALL
            .iter()
            .position(|q| *q == p)
            .unwrap_or_default();
        *self.controllers[i].get_or_init(|| {
            let classes = &self.config.load_balancer_classes;
            self.new
                .and_then(|s| super::route::controller(p, s, classes))
                .or_else(|| {
                    self.old
                        .and_then(|s| super::route::controller(p, s, classes))
                })
        })
    }

    /// True when `p` has a say on this request: a controller of `p` takes its LoadBalancer
    /// Service, or neither object is a LoadBalancer (deletion protection, finalizers).
    pub fn routed_to(&self, p: Provider) -> bool {
        let lb = |s: Option<Svc>| s.is_some_and(|s| s.is_lb());
        (!lb(self.new) && !lb(self.old)) || self.controller(p).is_some()
    }

    /// ACK's NLB controller takes the Service.
    pub fn is_nlb(&self, p: Provider) -> bool {
        self.controller(p) == Some(super::controller::Controller::Nlb)
    }

    /// True when the request comes from the cloud controller (config `ccm.users/groups`).
    pub fn by_ccm(&self) -> bool {
        let (ccm, user) = (&self.config.ccm, &self.input.user);
        ccm.users.contains(&user.username) || user.groups.iter().any(|g| ccm.groups.contains(g))
    }
}

/// The cluster's and the CCM's versions, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    pub cluster: Known,
    pub ccm: Known,
}

impl Versions {
    /// The cluster version for messages (`unknown` when not known).
    pub fn cluster_text(&self) -> String {
        match &self.cluster {
            Known::Yes(v) => v.to_string(),
            _ => "an unknown version".into(),
        }
    }

    /// The cloud controller version for messages.
    pub fn ccm_text(&self) -> String {
        match &self.ccm {
            Known::Yes(v) => v.to_string(),
            _ => "an unknown version".into(),
        }
    }

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
    /// With `unknown`: the cloud could not be asked, so `inventory.cloud.onError` decides.
    pub cloud_error: bool,
    /// Denies even under a warn rule.
    pub escalated: bool,
    /// Read from the load balancer inventory (an exported policy cannot see it).
    pub inventory: bool,
    /// The other Service the finding names (namespace/name): an exception covers it only
    /// when it covers that Service too.
    pub peer: Option<String>,
    /// Cleared by the inventory's facts: the controller sends nothing there, so it is no
    /// violation (an exported policy, which cannot read them, still reports it).
    pub cleared: bool,
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

    /// A violation found in the load balancer inventory's facts (a rule that otherwise
    /// reads only the Service; its exported policy cannot see them).
    pub fn push_inventory(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.add(field.into(), message.into(), false);
        if let Some(last) = self.items.last_mut() {
            last.inventory = true;
        }
    }

    /// A violation that involves another Service (namespace/name), such as a shared port.
    pub fn push_peer(
        &mut self,
        field: impl Into<String>,
        message: impl Into<String>,
        peer: String,
    ) {
        self.add(field.into(), message.into(), false);
        if let Some(last) = self.items.last_mut() {
            last.peer = Some(peer);
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

    /// The rule needs a load balancer the cloud could not be asked about in time.
    pub fn unavailable(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.unknown(field, message);
        if let Some(last) = self.items.last_mut() {
            last.cloud_error = true;
        }
    }

    /// Clears the running rule's findings from `start` on at `field`: the inventory's facts
    /// show the controller sends nothing there.
    pub fn clear_from(&mut self, start: usize, field: &str) {
        let rule = self.rule;
        for f in self.items.iter_mut().skip(start) {
            if f.rule == rule && f.field == field {
                f.cleared = true;
            }
        }
    }

    fn add(&mut self, field: String, message: String, advisory: bool) {
        self.items.push(Finding {
            rule: self.rule,
            field,
            message,
            advisory,
            unknown: false,
            cloud_error: false,
            escalated: false,
            inventory: false,
            peer: None,
            cleared: false,
        });
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The findings from `start` on, removed.
    pub fn take_from(&mut self, start: usize) -> Vec<Finding> {
        self.items.split_off(start.min(self.items.len()))
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

/// A default a provider proposes for the Service in `Ctx`: the engine sets the annotation
/// only where the user set nothing. `fixed` marks keys that cannot change once the Service
/// exists (on an update the live value is kept instead of a late default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    pub key: String,
    pub value: String,
    pub reason: String,
    pub fixed: bool,
    /// Read from the inventory: only the webhook can apply it (a policy cannot read it).
    pub inventory: bool,
}
