//! The rule registry: every rule's static metadata and check, in one explicit list.

/// A per-provider rule: `rule!(id, providers, class, gate, default, title, source, check)`.
macro_rules! rule {
    ($id:literal, $providers:expr, $class:ident, $gate:ident, $default:ident, $title:literal, $source:literal, $check:ident) => {
        $crate::rules::Rule {
            id: $id,
            providers: $providers,
            class: $crate::rules::Class::$class,
            gate: $crate::rules::Gate::$gate,
            default: $crate::rules::Action::$default,
            title: $title,
            source: $source,
            check: $crate::rules::Check::PerProvider($check),
        }
    };
}
pub(crate) use rule;

pub mod annotations;
pub mod common;
pub mod inventory;
pub mod listeners;

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::engine::{Ctx, Findings};
use crate::providers::{self, Catalog, Provider};

/// What a rule's findings do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Deny,
    Warn,
    Off,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "deny",
            Action::Warn => "warn",
            Action::Off => "off",
        }
    }
}

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
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

static REGISTRY: LazyLock<Vec<&'static Rule>> = LazyLock::new(|| {
    common::RULES
        .iter()
        .chain(providers::alibaba::RULES)
        .chain(providers::ctyun::RULES)
        .chain(providers::huawei::RULES)
        .chain(providers::volcengine::RULES)
        .chain(inventory::RULES)
        .chain(listeners::RULES)
        .chain(annotations::RULES)
        .collect()
});

/// Every rule, in evaluation order.
pub fn registry() -> &'static [&'static Rule] {
    &REGISTRY
}

pub fn find(id: &str) -> Option<&'static Rule> {
    registry().iter().copied().find(|r| r.id == id)
}

/// The rule table as Markdown (README and `lbguard rules --markdown`).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| id | providers | class | default | what it checks |\n|---|---|---|---|---|\n",
    );
    for r in registry() {
        let providers: Vec<&str> = r.providers.iter().map(|p| p.as_str()).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            r.id,
            providers.join(", "),
            r.class.as_str(),
            r.default.as_str(),
            r.title
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique() {
        let mut seen = HashSet::new();
        for r in registry() {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
        }
    }

    /// Catalog ids whose class is object/transition/version, plus deletion-protection,
    /// must all be registered.
    #[test]
    fn catalog_rules_in_scope_are_registered() {
        let catalog = include_str!("../../tests/fixtures/RULES.md");
        for line in catalog.lines() {
            let Some(rest) = line.strip_prefix("| `") else {
                continue;
            };
            let Some((id, rest)) = rest.split_once('`') else {
                continue;
            };
            let cols: Vec<&str> = rest.split('|').map(str::trim).collect();
            if cols.len() < 4 || Provider::ALL.iter().any(|p| p.as_str() == id) {
                continue;
            }
            let class = cols[2];
            let in_scope = [
                "object",
                "transition",
                "version",
                "object + transition",
                "DELETE",
                "inventory",
                "cluster",
                "cluster + inventory",
            ]
            .contains(&class);
            if in_scope {
                assert!(
                    find(id).is_some(),
                    "catalog rule {id} ({class}) is not registered"
                );
            }
        }
    }

    #[test]
    fn readme_table_matches_registry() {
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&markdown_table()),
            "README rule table is stale: run scripts/rules-table"
        );
    }

    #[test]
    fn every_rule_names_providers_and_source() {
        for r in registry() {
            assert!(!r.providers.is_empty(), "{} lists no provider", r.id);
            assert!(!r.source.is_empty(), "{} names no source", r.id);
            assert!(!r.title.is_empty(), "{} has no title", r.id);
        }
    }
}
