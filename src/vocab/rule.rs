//! What a rule is: its metadata, when it runs and what its findings do.

use serde::Serialize;

use super::action::Action;
use super::catalog::Catalog;
use super::ctx::{Ctx, Findings};
use super::provider::Provider;

/// A per-provider rule: `rule!(id, providers, class, gate, default, title, source, check, vap)`.
macro_rules! rule {
    ($id:literal, $providers:expr, $class:ident, $gate:ident, $default:ident, $title:literal, $source:literal, $check:ident, $vap:expr) => {
        $crate::vocab::rule::Rule {
            id: $id,
            providers: $providers,
            class: $crate::vocab::rule::Class::$class,
            gate: $crate::vocab::rule::Gate::$gate,
            default: $crate::vocab::action::Action::$default,
            title: $title,
            source: $source,
            check: $crate::vocab::rule::Check::PerProvider($check),
            vap: $vap,
        }
    };
}
pub(crate) use rule;

/// The catalog's rule classes: what a rule needs to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Object,
    Transition,
    Version,
    Cluster,
    Inventory,
    /// Needs the cluster view and, when configured, the inventory.
    ClusterInventory,
    Delete,
    /// Reads the plan: the live object and the load balancer's facts.
    Plan,
}

impl Class {
    /// Rules that read the cluster view (and so depend on its freshness).
    pub fn needs_cluster(self) -> bool {
        matches!(self, Class::Cluster | Class::ClusterInventory)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Object => "object",
            Class::Transition => "transition",
            Class::Version => "version",
            Class::Cluster => "cluster",
            Class::Inventory => "inventory",
            Class::ClusterInventory => "cluster + inventory",
            Class::Delete => "delete",
            Class::Plan => "plan",
        }
    }
}

/// When the engine runs a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// CREATE or UPDATE whose new object is a LoadBalancer (a Service that becomes one on
    /// UPDATE is checked like a create).
    Admit,
    /// UPDATE of a LoadBalancer Service that stays one.
    Transition,
    /// UPDATE of a LoadBalancer Service, whatever its new type.
    AnyUpdate,
    /// Any UPDATE, LoadBalancer or not.
    Update,
    /// DELETE.
    Delete,
}

pub type GenericCheck = fn(&Ctx, &mut Findings);
pub type ProviderCheck = fn(&Ctx, &'static Catalog, &mut Findings);

#[derive(Clone, Copy)]
pub enum Check {
    /// Runs once, whatever the provider.
    Generic(GenericCheck),
    /// Runs once for each provider in play that the rule lists.
    PerProvider(ProviderCheck),
}

pub struct Rule {
    pub id: &'static str,
    pub providers: &'static [Provider],
    pub class: Class,
    pub gate: Gate,
    pub default: Action,
    pub title: &'static str,
    pub source: &'static str,
    pub check: Check,
    /// The rule as a ValidatingAdmissionPolicy (`lbguard export-vap`), or why it is not one.
    pub vap: Vap,
}

/// How a rule is exported as a ValidatingAdmissionPolicy.
#[derive(Clone, Copy)]
pub enum Vap {
    /// Not exported, and why.
    No(&'static str),
    /// The CEL checks for one provider (`cat` is `None` for generic rules); `Err` says why the
    /// rule cannot be exported under this config, an empty list that there is nothing to check.
    Cel(fn(&VapCtx) -> Result<Vec<CelCheck>, &'static str>),
}

/// What a rule's CEL is written from: the provider, the config and the versions, all fixed
/// at export time.
pub struct VapCtx<'a> {
    pub cat: Option<&'static Catalog>,
    pub config: &'a super::config::Config,
    pub versions: &'a super::ctx::Versions,
    /// When the engine's update ratchet applies to this rule (a deny rule that runs on
    /// create and update): the CEL condition that the live object is one the ratchet
    /// compares with. For checks that compare findings one by one themselves.
    pub ratchet: Option<String>,
}

/// One CEL check. In `violates`, `witness` and `message`, `$s` stands for the Service checked
/// (`object`, or `oldObject` when the engine's update ratchet looks at the live object);
/// transition and delete checks name `object` and `oldObject` themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelCheck {
    /// True when the Service breaks the rule.
    pub violates: String,
    /// What makes two findings the same (the engine's ratchet lets an update keep a finding
    /// the live object already had): compared between `object` and `oldObject`.
    pub witness: Option<String>,
    /// The message, a CEL string expression starting with the rule id.
    pub message: String,
    /// A warning whatever the rule's action (the engine's advisory findings, e.g. weight 0).
    pub advisory: bool,
    /// Which of the rule's policies holds it, for a rule too big for one (client-side
    /// `kubectl apply` stores at most 256 KiB): a rule one of whose checks names a part is
    /// exported as one policy per provider and part, `lbguard-<id>-<provider>[-<part>]`
    /// (`""` the provider's first). `None`: the rule's one policy, or the provider's first.
    pub part: Option<&'static str>,
}

impl CelCheck {
    pub fn new(violates: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            violates: violates.into(),
            witness: None,
            message: message.into(),
            advisory: false,
            part: None,
        }
    }

    /// A check whose finding only warns, as `Findings::advise` does in the engine.
    pub fn advice(violates: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            advisory: true,
            ..Self::new(violates, message)
        }
    }

    pub fn same_when(mut self, witness: impl Into<String>) -> Self {
        self.witness = Some(witness.into());
        self
    }

    /// The check goes in the rule's policy `part` (see `part`).
    pub fn in_part(mut self, part: &'static str) -> Self {
        self.part = Some(part);
        self
    }
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}
