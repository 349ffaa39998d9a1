//! The rule registry: every rule's static metadata and check, in one explicit list.

pub mod annotations;
pub mod common;
pub mod inventory;
pub mod listeners;

use std::sync::LazyLock;

use crate::providers;
pub use crate::vocab::rule::{Action, Check, Class, Gate, Rule};

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

/// The rules that apply to `provider` (all when `None`), in registry order.
pub fn for_provider(
    provider: Option<crate::vocab::provider::Provider>,
) -> impl Iterator<Item = &'static Rule> {
    registry()
        .iter()
        .copied()
        .filter(move |r| provider.is_none_or(|p| r.providers.contains(&p)))
}

/// The rule table as Markdown (the book's rules reference and `lbguard rules --markdown`).
pub fn markdown_table() -> String {
    markdown_table_for(None)
}

/// The table of the rules that apply to `provider` (all rules when `None`).
pub fn markdown_table_for(provider: Option<crate::vocab::provider::Provider>) -> String {
    let mut out = String::from(
        "| id | providers | class | default | what it checks | export-vap |\n|---|---|---|---|---|---|\n",
    );
    for r in for_provider(provider) {
        let providers: Vec<&str> = r.providers.iter().map(|p| p.as_str()).collect();
        let vap = match r.vap {
            crate::vocab::rule::Vap::Cel(_) => "yes".to_string(),
            crate::vocab::rule::Vap::No(why) => format!("no: {why}"),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            r.id,
            providers.join(", "),
            r.class.as_str(),
            r.default.as_str(),
            // `<port>` in a title is text, not an HTML tag.
            r.title.replace('<', "&lt;").replace('>', "&gt;"),
            vap
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::provider::Provider;
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
    fn book_tables_match_registry() {
        let book = include_str!("../../docs/src/rules.md");
        assert!(
            book.contains(&markdown_table()),
            "the rules reference (docs/src/rules.md) is stale: run scripts/rules-table"
        );
        for (p, page) in [
            (
                Provider::Ctyun,
                include_str!("../../docs/src/providers/ctyun.md"),
            ),
            (
                Provider::Alibaba,
                include_str!("../../docs/src/providers/alibaba.md"),
            ),
            (
                Provider::Huawei,
                include_str!("../../docs/src/providers/huawei.md"),
            ),
            (
                Provider::Volcengine,
                include_str!("../../docs/src/providers/volcengine.md"),
            ),
        ] {
            assert!(
                page.contains(&markdown_table_for(Some(p))),
                "the {p:?} page's rule table is stale: run scripts/rules-table"
            );
        }
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
