//! The rule registry: every rule's static metadata and check, in one explicit list.

pub mod annotations;
pub mod common;
mod fixed;
pub mod immutable;
pub mod inventory;
pub mod listeners;
mod plan;
mod ports;
pub mod reuse;
mod unknown;

use std::sync::LazyLock;

use crate::providers;
pub use crate::vocab::action::Action;
pub use crate::vocab::rule::{Check, Class, Gate, Rule};

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
        .chain(plan::RULES)
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

/// An annotation row's key and its sources.
pub type RowSources = (String, Vec<String>);
/// A rule's id, its own source and its rows' sources.
pub type RuleSources = (&'static str, &'static str, Vec<RowSources>);

/// Every source of a rule: its own, and those of each annotation-table row it checks
/// (`lbguard rules --sources`): the document, the published range, the controller's code
/// lines at the pinned commit, and the reading where they disagree.
pub fn sources(provider: Option<crate::vocab::provider::Provider>) -> Vec<RuleSources> {
    use crate::vocab::provider::Provider;
    let providers: Vec<Provider> = match provider {
        Some(p) => vec![p],
        None => Provider::ALL.to_vec(),
    };
    for_provider(provider)
        .map(|r| {
            let mut rows = Vec::new();
            for p in &providers {
                if !r.providers.contains(p) {
                    continue;
                }
                let cat = crate::providers::catalog(*p);
                let table = cat.table();
                for e in &table.annotations {
                    let owner = e.rule.as_deref().unwrap_or("annotation-value-format");
                    if owner == r.id {
                        rows.push((cat.key(&e.name), table.provenance(e)));
                    }
                }
                // The cloud API's rows the rule reports, one entry per source (its annotations
                // joined by ", ", which no annotation name contains).
                let api = crate::providers::api::table(*p).map(|t| t.provenance(r.id));
                for (names, from) in api.into_iter().flatten() {
                    let keys: Vec<String> = names.iter().map(|n| cat.key(n)).collect();
                    rows.push((keys.join(", "), from));
                }
            }
            (r.id, r.source, rows)
        })
        .collect()
}

/// The provider documents the rules started from, by the numbers rule sources use.
const DOCUMENTS: &[(&str, &str)] = &[
    ("000", "CTyun's guide to LoadBalancer Services (Chinese)"),
    (
        "001",
        "ACK's \"配置Service负载均衡的注意事项及CCM资源更新策略\" (Chinese)",
    ),
    ("002", "CCE's guide to LoadBalancer Services (Chinese)"),
    (
        "003",
        "CCE's guide to taking a Service's listeners out of CCE's management (Chinese)",
    ),
    (
        "004",
        "VKE's guide to reusing a load balancer across clusters (Chinese)",
    ),
];

/// A source as readers know it: the documents' names instead of lbguard's numbers for them.
pub fn readable(source: &str) -> String {
    let mut out = source.to_string();
    for (n, name) in DOCUMENTS {
        out = out.replace(&format!("lbguard seed {n}"), name);
        let mut done = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(n) {
            let before = rest[..i].chars().next_back();
            let after = rest[i + n.len()..].chars().next();
            let token = |c: Option<char>| {
                c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '.' && c != '-' && c != '_')
            };
            done.push_str(&rest[..i]);
            done.push_str(if token(before) && token(after) {
                name
            } else {
                n
            });
            rest = &rest[i + n.len()..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

/// `sources` as Markdown, for the book's rules page.
pub fn sources_markdown(provider: Option<crate::vocab::provider::Provider>) -> String {
    let mut out = String::new();
    for (id, source, rows) in sources(provider) {
        out.push_str(&format!(
            "### `{id}`\n\n{}\n",
            readable(source).replace('<', "&lt;")
        ));
        if !rows.is_empty() {
            out.push('\n');
        }
        for (key, from) in rows {
            let keys: Vec<String> = key.split(", ").map(|k| format!("`{k}`")).collect();
            out.push_str(&format!(
                "- {}: {}\n",
                keys.join(", "),
                readable(&from.join("; "))
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::rule_table::{markdown_table, markdown_table_for};
    use crate::vocab::provider::Provider;
    use std::collections::HashSet;

    /// Every source of the API rows is listed whole under the rules that report its rows
    /// (messages cite only a long one's title).
    #[test]
    fn api_sources_are_listed_whole() {
        for p in Provider::ALL {
            let Some(table) = crate::providers::api::table(p) else {
                continue;
            };
            let listed: Vec<String> = sources(Some(p))
                .into_iter()
                .flat_map(|(_, _, rows)| rows)
                .flat_map(|(_, from)| from)
                .collect();
            let named = table.calls.iter().flat_map(|c| {
                let params = c.params.iter().filter_map(|p| p.source.as_ref());
                let together = c.together.iter().filter_map(|t| t.source.as_ref());
                std::iter::once(&c.source).chain(params).chain(together)
            });
            for key in named {
                let source = &table.sources[key];
                assert!(
                    listed.iter().any(|l| l.ends_with(source.text())),
                    "{p} source {key} is not listed"
                );
            }
        }
    }

    /// Every rule names a source, and every annotation row its sources.
    #[test]
    fn every_rule_and_row_has_sources() {
        for (id, source, rows) in sources(None) {
            assert!(!source.is_empty(), "{id}");
            for (key, from) in rows {
                assert!(!from.is_empty() && !from[0].is_empty(), "{id} {key}");
            }
        }
        let alibaba = sources(Some(Provider::Alibaba));
        let (_, _, rows) = alibaba
            .iter()
            .find(|(id, _, _)| *id == "annotation-format")
            .unwrap();
        let idle = rows
            .iter()
            .find(|(k, _)| k.ends_with("-idle-timeout"))
            .unwrap();
        assert!(
            idle.1.iter().any(|s| s.starts_with(
                "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/listeners.go:"
            )),
            "{idle:?}"
        );
    }

    #[test]
    fn sources_name_documents_not_numbers() {
        assert_eq!(
            readable("000/001 \"x\"; lbguard seed 004 (z)"),
            "CTyun's guide to LoadBalancer Services (Chinese)/ACK's \"配置Service负载均衡的注意事项及CCM资源更新策略\" (Chinese) \"x\"; VKE's guide to reusing a load balancer across clusters (Chinese) (z)"
        );
        // Numbers inside other words stay.
        assert_eq!(
            readable("rsp-000a v1.000 port 1001"),
            "rsp-000a v1.000 port 1001"
        );
    }

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

    /// The plan table's rules (RULES.md "The plan"): registered with class `plan`, the
    /// catalog's default, and every provider it names (`others where published` beyond).
    #[test]
    fn catalog_plan_rules_are_registered() {
        let catalog = include_str!("../../tests/fixtures/RULES.md");
        let section = catalog
            .split("\n## ")
            .find(|s| s.starts_with("The plan"))
            .expect("RULES.md has the plan section");
        let mut seen = 0;
        for line in section.lines() {
            let Some(rest) = line.strip_prefix("| `") else {
                continue;
            };
            let Some((id, rest)) = rest.split_once('`') else {
                continue;
            };
            let cols: Vec<&str> = rest.split('|').map(str::trim).collect();
            let rule = find(id).unwrap_or_else(|| panic!("plan rule {id} is not registered"));
            assert_eq!(rule.class, Class::Plan, "{id}");
            assert_eq!(rule.default.as_str(), cols[2], "{id}");
            for p in cols[1].split(',').map(str::trim) {
                if let Ok(p) = p.parse::<Provider>() {
                    assert!(rule.providers.contains(&p), "{id} does not name {p}");
                }
            }
            seen += 1;
        }
        assert_eq!(seen, 6, "the catalog's plan table has six rules");
    }

    #[test]
    fn book_tables_match_registry() {
        let sources = include_str!("../../docs/src/rule-sources.md");
        assert!(
            sources.contains(sources_markdown(None).trim_end()),
            "the rule sources page (docs/src/rule-sources.md) is stale: run scripts/rules-table"
        );
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
