//! Label keys, label values and label selectors, checked as the API server checks them in
//! every other `metav1.LabelSelector` (apimachinery's `ValidateLabelSelector`): a selector
//! the API server would refuse is never read as a wider one.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters (empty allowed here).
fn name_part(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
        && b.first().is_none_or(u8::is_ascii_alphanumeric)
        && b.last().is_none_or(u8::is_ascii_alphanumeric)
}

/// A DNS-1123 subdomain: dot-separated lower-case labels, at most 253 characters
/// (`IsDNS1123Subdomain`).
pub fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// Why `key` is not a label key (a qualified name: an optional DNS subdomain and `/`, then
/// a name of at most 63 characters), if it is not.
pub fn key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && !dns_subdomain(p)
    {
        return Some(format!(
            "\"{key}\" is not a valid label key: the prefix before '/' must be a DNS subdomain (lower case, e.g. example.com)"
        ));
    }
    if name.is_empty() || !name_part(name) {
        return Some(format!(
            "\"{key}\" is not a valid label key: the name must be 1-63 characters, alphanumerics with '-', '_' or '.' inside (e.g. app or example.com/tier)"
        ));
    }
    None
}

/// Why `value` is not a label value (at most 63 characters, alphanumerics with `-_.` inside,
/// or empty), if it is not.
pub fn value_problem(value: &str) -> Option<String> {
    (!name_part(value)).then(|| {
        format!(
            "\"{value}\" is not a valid label value: at most 63 characters, alphanumerics with '-', '_' or '.' inside, or empty"
        )
    })
}

/// Everything that makes `sel` a selector the API server refuses, each naming its field
/// under `field`. Empty: the selector means what it says.
pub fn selector_problems(sel: &LabelSelector, field: &str) -> Vec<String> {
    // Every request with a finding asks: nothing is allocated for a selector without a problem.
    let mut out = Vec::new();
    for (k, v) in sel.match_labels.iter().flatten() {
        let at = || format!("{field}.matchLabels[{k}]");
        out.extend(key_problem(k).map(|p| format!("{}: {p}", at())));
        out.extend(value_problem(v).map(|p| format!("{}: {p}", at())));
    }
    for (i, e) in sel.match_expressions.iter().flatten().enumerate() {
        let at = || format!("{field}.matchExpressions[{i}]");
        out.extend(key_problem(&e.key).map(|p| format!("{}.key: {p}", at())));
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => out.push(format!(
                "{}.values: required with operator {}: list the label values",
                at(),
                e.operator
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(format!(
                "{}.values: not allowed with operator {}: it would ignore them and select by the key alone; use In or NotIn to name values",
                at(),
                e.operator
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.push(format!(
                "{}.operator: \"{other}\" is not a selector operator (In, NotIn, Exists, DoesNotExist)",
                at()
            )),
        }
        for (j, v) in values.iter().enumerate() {
            out.extend(value_problem(v).map(|p| format!("{}.values[{j}]: {p}", at())));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(sel: serde_json::Value) -> Vec<String> {
        selector_problems(&serde_json::from_value(sel).unwrap(), "selector")
    }

    #[test]
    fn keys_and_values_follow_the_api_server_s_syntax() {
        for good in ["app", "example.com/tier", "a.b-c_d", "x/y", &"a".repeat(63)] {
            assert_eq!(key_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "/app",
            "Example.com/app",
            "example.com/",
            "-app",
            "app-",
            "a b",
            "a/b/c",
            &"a".repeat(64),
        ] {
            assert!(key_problem(bad).is_some(), "{bad:?}");
        }
        for good in ["", "web", "v1.2_3-x", &"a".repeat(63)] {
            assert_eq!(value_problem(good), None, "{good}");
        }
        for bad in ["-web", "web.", "a b", "a/b", &"a".repeat(64)] {
            assert!(value_problem(bad).is_some(), "{bad:?}");
        }
    }

    /// What the API server refuses in any other LabelSelector, this refuses too.
    #[test]
    fn a_selector_is_refused_where_kubernetes_refuses_it() {
        assert!(problems(json!({"matchLabels": {"app": "web"}})).is_empty());
        assert!(
            problems(json!({"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "tier", "operator": "Exists"},
                {"key": "example.com/x", "operator": "DoesNotExist", "values": []}]}))
            .is_empty()
        );
        let p = problems(
            json!({"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["only-this"]}]}),
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(
                "selector.matchExpressions[0].values: not allowed with operator Exists"
            ),
            "{p:?}"
        );
        let p = problems(
            json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist", "values": ["x"]}]}),
        );
        assert_eq!(p.len(), 1, "{p:?}");
        let p = problems(json!({"matchExpressions": [{"key": "tier", "operator": "In"}]}));
        assert!(p[0].contains("required with operator In"), "{p:?}");
        let p = problems(
            json!({"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}),
        );
        assert!(p[0].contains("\"Gt\" is not a selector operator"), "{p:?}");
        let p = problems(json!({"matchLabels": {"not a key": "web", "app": "not a value"}}));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p.iter()
                .any(|m| m.starts_with("selector.matchLabels[not a key]: ")),
            "{p:?}"
        );
        let p = problems(
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["ok", "not ok"]}]}),
        );
        assert!(
            p[0].starts_with("selector.matchExpressions[0].values[1]: "),
            "{p:?}"
        );
    }
}
