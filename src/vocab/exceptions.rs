//! Exceptions an operator grants: the `LBGuardException` object (`lbguard.io/v1alpha1`) as
//! plain data, and the config section that bounds them. Matching and applying them is the
//! engine's (`engine::exceptions`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub const GROUP: &str = "lbguard.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "LBGuardException";
pub const PLURAL: &str = "lbguardexceptions";
/// `rules: ["*"]`, allowed only with `exceptions.allowWildcard`.
pub const WILDCARD: &str = "*";

/// The config's `exceptions` section.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ExceptionsConfig {
    /// Whether lbguard watches, validates and applies `LBGuardException`s (the CRD must be
    /// installed).
    pub enabled: bool,
    /// How far ahead an exception may expire, in days from its creation.
    pub max_days: u32,
    /// Rule ids no exception may cover.
    pub not_exemptable: Vec<String>,
    /// Record an Event on an exception when it expires.
    pub events: bool,
    /// Whether `rules: ["*"]` (every rule) and an empty selector (every Service) are taken.
    pub allow_wildcard: bool,
}

impl Default for ExceptionsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_days: 30,
            not_exemptable: Vec::new(),
            events: true,
            allow_wildcard: false,
        }
    }
}

/// The longest cap the config takes: the duration parser's own limit.
pub const MAX_DAYS: u32 = 365;

impl ExceptionsConfig {
    pub fn max_age(&self) -> Duration {
        Duration::from_secs(u64::from(self.max_days) * 24 * 3600)
    }

    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.max_days == 0 || self.max_days > MAX_DAYS {
            out.push(format!(
                "exceptions.maxDays: {} is outside 1..{MAX_DAYS}",
                self.max_days
            ));
        }
        out
    }
}

/// Which Services an exception covers, in its own namespace: those it names and those its
/// selector matches.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServicesSpec {
    pub names: Vec<String>,
    pub selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExceptionSpec {
    pub services: ServicesSpec,
    pub rules: Vec<String>,
    /// `listener-port-unique`: the Services (`namespace/name`) the covered ones may share a
    /// listener port with, besides those `services.names` lists.
    pub shares_with: Vec<String>,
    pub reason: String,
    /// RFC 3339, as the object carries it.
    pub expires: String,
}

/// One `LBGuardException`, read from the API server or a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Exception {
    pub namespace: String,
    pub name: String,
    pub spec: ExceptionSpec,
    /// When it was created; `None` for a file (`lbguard check`), read as "now".
    pub created: Option<SystemTime>,
    /// `spec.expires` as read, parsed once: every request with a finding asks each
    /// exception whether it is still active.
    expires_at: Option<SystemTime>,
}

/// Parses an RFC 3339 time (`2026-12-09T00:00:00Z`).
pub fn parse_time(s: &str) -> Result<SystemTime, String> {
    let t: k8s_openapi::jiff::Timestamp = s
        .parse()
        .map_err(|_| format!("\"{s}\" is not an RFC 3339 time such as 2026-12-09T17:00:00Z"))?;
    Ok(SystemTime::from(t))
}

/// Formats a time the way the object writes it.
pub fn format_time(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "(out of range)".into())
}

impl Exception {
    /// Reads an object (`apiVersion`, `kind`, `metadata`, `spec`) as the API server or a
    /// manifest gives it. `None` when it is not an `LBGuardException` at all.
    pub fn from_value(v: &serde_json::Value) -> Option<Result<Self, String>> {
        let api = v.get("apiVersion").and_then(|a| a.as_str())?;
        let kind = v.get("kind").and_then(|k| k.as_str())?;
        if kind != KIND || api.split('/').next() != Some(GROUP) {
            return None;
        }
        Some(Self::read(v, api))
    }

    fn read(v: &serde_json::Value, api: &str) -> Result<Self, String> {
        if api != format!("{GROUP}/{VERSION}") {
            return Err(format!("apiVersion {api}: only {GROUP}/{VERSION} is known"));
        }
        let meta = v.get("metadata");
        let text = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(|s| s.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let name = text("name");
        if name.is_empty() {
            return Err("metadata.name is missing".into());
        }
        let namespace = match text("namespace") {
            ns if ns.is_empty() => "default".to_string(),
            ns => ns,
        };
        let created = match text("creationTimestamp") {
            t if t.is_empty() => None,
            t => Some(parse_time(&t).map_err(|e| format!("metadata.creationTimestamp: {e}"))?),
        };
        let spec: ExceptionSpec = match v.get("spec") {
            Some(s) => serde_json::from_value(s.clone()).map_err(|e| format!("spec: {e}"))?,
            None => return Err("spec is missing".into()),
        };
        let expires_at = parse_time(&spec.expires).ok();
        Ok(Self {
            namespace,
            name,
            spec,
            created,
            expires_at,
        })
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// When it stops covering, if its `expires` read when the object was read.
    pub fn expires(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// Whether its selector (when it has one) matches these labels. A selector the API
    /// server would refuse selects nothing: it is never read as a wider one.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        use kube::core::SelectorExt;
        let Some(sel) = &self.spec.services.selector else {
            return false;
        };
        super::labels::selector_problems(sel, "").is_empty()
            && kube::core::Selector::try_from(sel.clone()).is_ok_and(|s| s.matches(labels))
    }

    /// Whether it names `namespace/name`: in `services.names` (its own namespace) or in
    /// `sharesWith`. A selector never names a Service.
    pub fn names(&self, namespace: &str, name: &str) -> bool {
        (self.namespace == namespace && self.spec.services.names.iter().any(|n| n == name))
            || self.spec.shares_with.iter().any(|s| {
                s.split_once('/')
                    .is_some_and(|(ns, n)| ns == namespace && n == name)
            })
    }
}

/// Exceptions ordered by namespace and name: a request finds its namespace's few by a binary
/// search instead of reading every one the cluster holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExceptionSet {
    items: Vec<Exception>,
}

impl ExceptionSet {
    pub const EMPTY: ExceptionSet = ExceptionSet { items: Vec::new() };

    pub fn all(&self) -> &[Exception] {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Those in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> &[Exception] {
        let start = self
            .items
            .partition_point(|e| e.namespace.as_str() < namespace);
        let len = self.items[start..].partition_point(|e| e.namespace == namespace);
        &self.items[start..start + len]
    }
}

impl From<Vec<Exception>> for ExceptionSet {
    fn from(mut items: Vec<Exception>) -> Self {
        items.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        Self { items }
    }
}

impl FromIterator<Exception> for ExceptionSet {
    fn from_iter<I: IntoIterator<Item = Exception>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_an_object_and_leaves_other_kinds_alone() {
        let v = json!({"apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
            "metadata": {"name": "x", "namespace": "shop", "creationTimestamp": "2026-12-01T00:00:00Z"},
            "spec": {"services": {"names": ["web"]}, "rules": ["listener-port-unique"],
                     "reason": "migration", "expires": "2026-12-09T00:00:00Z"}});
        let e = Exception::from_value(&v).unwrap().unwrap();
        assert_eq!(e.key(), "shop/x");
        assert_eq!(e.spec.services.names, ["web"]);
        assert_eq!(format_time(e.expires().unwrap()), "2026-12-09T00:00:00Z");
        assert!(e.created.is_some());
        let svc = json!({"apiVersion": "v1", "kind": "Service"});
        assert!(Exception::from_value(&svc).is_none());
        let v2 = json!({"apiVersion": "lbguard.io/v1", "kind": "LBGuardException"});
        assert!(Exception::from_value(&v2).unwrap().is_err());
        let bad = json!({"apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
            "metadata": {"name": "x"}, "spec": {"rules": "one"}});
        let err = Exception::from_value(&bad).unwrap().unwrap_err();
        assert!(err.starts_with("spec: "), "{err}");
    }

    #[test]
    fn a_selector_matches_labels_and_no_selector_matches_nothing() {
        let v = json!({"apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
            "metadata": {"name": "x"},
            "spec": {"services": {"selector": {"matchLabels": {"app": "web"}}}}});
        let e = Exception::from_value(&v).unwrap().unwrap();
        let labels = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        assert!(e.selects(&labels("app", "web")));
        assert!(!e.selects(&labels("app", "db")));
        let mut none = e.clone();
        none.spec.services.selector = None;
        assert!(!none.selects(&labels("app", "web")));
    }

    /// `{key: tier, operator: Exists, values: [only-this]}` would act as plain Exists and
    /// cover `tier=something-else`: it selects nothing instead.
    #[test]
    fn a_selector_kubernetes_would_refuse_selects_nothing() {
        let labels = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let with = |sel: serde_json::Value| {
            Exception::from_value(&json!({"apiVersion": "lbguard.io/v1alpha1",
                "kind": "LBGuardException", "metadata": {"name": "x"},
                "spec": {"services": {"selector": sel}}}))
            .unwrap()
            .unwrap()
        };
        let wide = with(
            json!({"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["only-this"]}]}),
        );
        assert!(!wide.selects(&labels("tier", "something-else")));
        assert!(!wide.selects(&labels("tier", "only-this")));
        let plain = with(json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}));
        assert!(plain.selects(&labels("tier", "something-else")));
        let never = with(json!({"matchLabels": {"not a key": "x"}}));
        assert!(!never.selects(&labels("not a key", "x")));
    }

    #[test]
    fn it_names_services_of_its_namespace_and_those_it_shares_with() {
        let e = Exception::from_value(&json!({"apiVersion": "lbguard.io/v1alpha1",
            "kind": "LBGuardException", "metadata": {"name": "x", "namespace": "a"},
            "spec": {"services": {"names": ["holder"], "selector": {"matchLabels": {"app": "web"}}},
                     "sharesWith": ["b/joiner"]}}))
        .unwrap()
        .unwrap();
        assert!(e.names("a", "holder"));
        assert!(!e.names("b", "holder"), "names are of its own namespace");
        assert!(e.names("b", "joiner"));
        assert!(!e.names("a", "joiner"));
        assert!(!e.names("a", "web"));
    }

    #[test]
    fn a_set_finds_a_namespace_s_exceptions_whatever_the_order_given() {
        let e = |ns: &str, name: &str| {
            Exception::from_value(&json!({"apiVersion": "lbguard.io/v1alpha1",
                "kind": "LBGuardException", "metadata": {"name": name, "namespace": ns},
                "spec": {}}))
            .unwrap()
            .unwrap()
        };
        let set = ExceptionSet::from(vec![
            e("shop", "b"),
            e("a", "x"),
            e("shop", "a"),
            e("shop-2", "a"),
            e("z", "x"),
        ]);
        let keys = |s: &[Exception]| s.iter().map(Exception::key).collect::<Vec<_>>();
        assert_eq!(keys(set.in_namespace("shop")), ["shop/a", "shop/b"]);
        assert_eq!(keys(set.in_namespace("a")), ["a/x"]);
        assert_eq!(keys(set.in_namespace("z")), ["z/x"]);
        assert!(set.in_namespace("sho").is_empty());
        assert!(set.in_namespace("zz").is_empty());
        assert!(ExceptionSet::EMPTY.in_namespace("shop").is_empty());
        assert_eq!(set.len(), 5);
    }

    #[test]
    fn times_must_be_rfc3339() {
        assert!(parse_time("2026-12-09T00:00:00Z").is_ok());
        assert!(parse_time("2026-12-09T08:00:00+08:00").is_ok());
        assert!(parse_time("next friday").is_err());
        assert!(parse_time("2026-12-09").is_err());
    }
}
