//! The chart README's Permissions table is the RBAC the chart renders: every grant, the
//! values that turn it on, and who holds it. Rendered with every option on, with the
//! defaults, and with every option off.

use std::collections::BTreeSet;

use super::*;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/lbguard/README.md");

/// One row of the table, one resource of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    /// `<release>-claims`, with the release name as `<release>`.
    role: String,
    /// ClusterRole or Role.
    kind: String,
    /// The API group (`""` for core), or `nonResourceURLs`.
    group: String,
    resource: String,
    /// Sorted, comma-separated.
    verbs: String,
}

struct Row {
    grants: Vec<Grant>,
    when: String,
    to: String,
}

fn split(cell: &str) -> Vec<String> {
    cell.split(',').map(|s| s.trim().to_string()).collect()
}

fn verbs(v: &[String]) -> String {
    let mut v = v.to_vec();
    v.sort();
    v.join(",")
}

/// The table between the README's `ANCHOR: permissions` marks (the book includes it).
fn rows(readme: &str) -> Vec<Row> {
    let table = readme
        .split("<!-- ANCHOR: permissions -->")
        .nth(1)
        .and_then(|t| t.split("<!-- ANCHOR_END: permissions -->").next())
        .expect("the chart README has the permissions table");
    let mut out = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 8, "{line}");
        let role = cells[0].trim_matches('`').to_string();
        let kind = cells[1].split_whitespace().next().unwrap().to_string();
        let group = match cells[2] {
            "non-resource URLs" => "nonResourceURLs".to_string(),
            g => g.trim_matches('`').trim_matches('"').to_string(),
        };
        let verbs = verbs(&split(cells[4]));
        let grants = split(cells[3])
            .into_iter()
            .map(|resource| Grant {
                role: role.clone(),
                kind: kind.clone(),
                group: group.clone(),
                resource,
                verbs: verbs.clone(),
            })
            .collect();
        out.push(Row {
            grants,
            when: cells[5].to_string(),
            to: cells[6].to_string(),
        });
    }
    out
}

/// Every grant of every Role and ClusterRole the chart renders.
fn rendered(r: &Rendered) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for kind in ["ClusterRole", "Role"] {
        for o in r.kind(kind) {
            let name = o["metadata"]["name"].as_str().unwrap();
            let role = name.replacen("lbguard", "<release>", 1);
            for rule in o["rules"].as_array().unwrap() {
                let v: Vec<String> = serde_json::from_value(rule["verbs"].clone()).unwrap();
                let mut add = |group: &str, resource: &str| {
                    out.insert(Grant {
                        role: role.clone(),
                        kind: kind.to_string(),
                        group: group.to_string(),
                        resource: resource.to_string(),
                        verbs: verbs(&v),
                    });
                };
                if let Some(urls) = rule["nonResourceURLs"].as_array() {
                    for u in urls {
                        add("nonResourceURLs", u.as_str().unwrap());
                    }
                    continue;
                }
                for g in rule["apiGroups"].as_array().unwrap() {
                    for res in rule["resources"].as_array().unwrap() {
                        add(g.as_str().unwrap(), res.as_str().unwrap());
                    }
                }
            }
        }
    }
    out
}

/// The grants of the rows whose `when` passes `on`.
fn listed(rows: &[Row], on: impl Fn(&str) -> bool) -> BTreeSet<Grant> {
    rows.iter()
        .filter(|r| on(&r.when))
        .flat_map(|r| r.grants.clone())
        .collect()
}

fn every_option_on() -> Value {
    json!({
        "provider": "alibaba",
        "exceptionRoles": {"aggregateToAdmin": true},
        "config": {"ccm": {"version": "auto"}, "reports": {"api": "auto"}},
        "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "region": "r"}},
        "monitoring": {"serviceMonitor": {"enabled": true,
            "prometheusServiceAccount": {"name": "prometheus", "namespace": "monitoring"}}}
    })
}

fn every_option_off() -> Value {
    json!({
        "metrics": {"secure": false},
        "config": {"reports": {"api": "off"}, "exceptions": {"enabled": false},
            "claims": {"enabled": false}}
    })
}

fn always(when: &str) -> bool {
    when == "always"
}

fn by_default(when: &str) -> bool {
    always(when) || when.contains("(default)")
}

#[test]
fn the_readme_lists_every_permission_the_chart_grants() {
    let rows = rows(&std::fs::read_to_string(README).unwrap());
    assert!(rows.len() >= 10, "only {} rows", rows.len());
    let all = render(every_option_on());
    assert_eq!(rendered(&all), listed(&rows, |_| true), "every option on");
    assert_eq!(
        rendered(&render(json!({}))),
        listed(&rows, by_default),
        "defaults"
    );
    assert_eq!(
        rendered(&render(every_option_off())),
        listed(&rows, always),
        "every option off"
    );

    // Who holds each role: the chart's ServiceAccount through its bindings, another
    // ServiceAccount, or the built-in roles through aggregation labels.
    for row in &rows {
        let role = row.grants[0].role.replacen("<release>", "lbguard", 1);
        let bound: Vec<String> = ["ClusterRoleBinding", "RoleBinding"]
            .iter()
            .flat_map(|k| all.kind(k))
            .filter(|b| b["roleRef"]["name"] == role.as_str())
            .flat_map(|b| b["subjects"].as_array().unwrap().clone())
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        let to_lbguard = bound.iter().any(|s| s == "lbguard");
        assert_eq!(
            row.to == "lbguard",
            to_lbguard,
            "{role}: {:?} {bound:?}",
            row.to
        );
        for other in bound.iter().filter(|s| *s != "lbguard") {
            assert!(
                row.to.contains("prometheusServiceAccount") && other == "prometheus",
                "{role} is bound to {other}: {:?}",
                row.to
            );
        }
        let object = all
            .kind("ClusterRole")
            .into_iter()
            .chain(all.kind("Role"))
            .find(|o| o["metadata"]["name"] == role.as_str())
            .unwrap_or_else(|| panic!("{role} is not rendered"));
        for to in ["admin", "view"] {
            let label = format!("rbac.authorization.k8s.io/aggregate-to-{to}");
            let aggregated = object["metadata"]["labels"][label.as_str()] == "true";
            assert_eq!(
                aggregated,
                row.to.contains(&format!("aggregated to `{to}`")),
                "{role}: aggregated to {to}: {:?}",
                row.to
            );
        }
    }
}

/// The comparison fails on a table that lists a grant the chart does not make, or misses
/// one it makes.
#[test]
fn a_wrong_table_fails() {
    let readme = std::fs::read_to_string(README).unwrap();
    let all = rendered(&render(every_option_on()));
    let wrong = readme.replacen("| get, list, watch | always |", "| get, list | always |", 1);
    assert_ne!(all, listed(&rows(&wrong), |_| true));
    let start = readme
        .find("| `<release>` | ClusterRole | `networking.k8s.io`")
        .unwrap();
    let end = start + readme[start..].find('\n').unwrap() + 1;
    let missing = format!("{}{}", &readme[..start], &readme[end..]);
    assert_ne!(all, listed(&rows(&missing), |_| true));
}
