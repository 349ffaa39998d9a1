//! A policy's CEL `variables`: what many validations read (an annotation's value, whether
//! the Service is a LoadBalancer, whether a provider's rules apply) is one variable, written
//! once and evaluated at most once per request (the API server evaluates a variable lazily
//! and keeps its value for the request). Without them, every validation repeated the same
//! look-ups: `kubectl apply` could not store the policy (its copy in the last-applied
//! annotation went past 256 KiB), and the API server evaluated every copy.

use std::collections::HashMap;

use k8s_openapi::api::admissionregistration::v1::Variable;

use crate::providers::catalog;
use crate::vocab::cel::{Token, lit, map_tokens};
use crate::vocab::provider::Provider;

/// The variables one policy defines, in an order where each one names only earlier ones.
#[derive(Debug, Default)]
pub struct Vars {
    list: Vec<(String, String)>,
    by_token: HashMap<Token, String>,
    by_expr: HashMap<String, String>,
}

/// `key`'s part that names it: after a provider's prefix (`alibaba_health_check_...`), or
/// the whole key (`ann_lbguard_io_deletion_protection`), as an identifier.
fn key_name(key: &str) -> String {
    let found = Provider::ALL.into_iter().find_map(|p| {
        let cat = catalog(p);
        std::iter::once(cat.prefix)
            .chain(cat.legacy_prefix)
            .find_map(|pre| key.strip_prefix(pre))
            .map(|rest| format!("{}_{rest}", p.as_str()))
    });
    let raw = found.unwrap_or_else(|| format!("ann_{key}"));
    raw.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `object`'s variables have plain names, `oldObject`'s start with `old_`.
fn role(obj: &str) -> &'static str {
    if obj == "oldObject" { "old_" } else { "" }
}

impl Vars {
    /// `expr` with every token a variable (`variables.<name>`).
    pub fn resolve(&mut self, expr: &str) -> String {
        map_tokens(expr, |t| format!("variables.{}", self.name_for(t)))
    }

    /// A variable for `expr` (its tokens made variables first), named after `hint`; the
    /// same expression gets the same variable. Returns `variables.<name>`.
    pub fn define(&mut self, hint: &str, expr: &str) -> String {
        let resolved = self.resolve(expr);
        if let Some(name) = self.by_expr.get(&resolved) {
            return format!("variables.{name}");
        }
        let name = self.push(hint, resolved.clone());
        self.by_expr.insert(resolved, name.clone());
        format!("variables.{name}")
    }

    fn name_for(&mut self, t: &Token) -> String {
        if let Some(n) = self.by_token.get(t) {
            return n.clone();
        }
        let (hint, expr) = match t {
            // The first key present, by optional indexing: each key written once.
            Token::Annotation { obj, keys } => {
                let all = self.annotations(obj);
                let mut read = format!("{all}[?{}]", lit(&keys[0]));
                for k in &keys[1..] {
                    read = format!("{read}.or({all}[?{}])", lit(k));
                }
                (
                    format!("{}{}", role(obj), key_name(&keys[0])),
                    format!("{read}.orValue(dyn(null))"),
                )
            }
            Token::Key { obj, keys } => {
                let all = self.annotations(obj);
                let mut out = keys.last().map(|k| lit(k)).unwrap_or_default();
                for k in keys.iter().rev().skip(1) {
                    out = format!("{} in {all} ? {} : {out}", lit(k), lit(k));
                }
                (format!("{}{}_key", role(obj), key_name(&keys[0])), out)
            }
            Token::IsLb { obj } => (
                format!("{}is_lb", role(obj)),
                format!("{obj} != null && {}", t.inline()),
            ),
            Token::Shared { name, expr } => {
                // `$s_x` named before `$s` was replaced: `object_x` is `x`, `oldObject_x` `old_x`.
                let name = match (
                    name.strip_prefix("object_"),
                    name.strip_prefix("oldObject_"),
                ) {
                    (Some(n), _) => n.to_string(),
                    (_, Some(n)) => format!("old_{n}"),
                    _ => name.clone(),
                };
                let v = self.define(&name, expr);
                let n = v.trim_start_matches("variables.").to_string();
                self.by_token.insert(t.clone(), n.clone());
                return n;
            }
        };
        let name = self.push(&hint, expr);
        self.by_token.insert(t.clone(), name.clone());
        name
    }

    /// `variables.annotations` (`old_annotations`): the object's annotations, empty without
    /// any or without an object.
    fn annotations(&mut self, obj: &str) -> String {
        let name = format!("{}annotations", role(obj));
        if !self.list.iter().any(|(n, _)| *n == name) {
            self.list.push((
                name.clone(),
                format!("{obj} != null && has({obj}.metadata.annotations) ? {obj}.metadata.annotations : {{}}"),
            ));
        }
        format!("variables.{name}")
    }

    /// Adds a variable under `hint`, or `hint_2`, ... when taken.
    fn push(&mut self, hint: &str, expr: String) -> String {
        let taken = |n: &str| self.list.iter().any(|(m, _)| m == n);
        let mut name = hint.to_string();
        let mut i = 2;
        while taken(&name) {
            name = format!("{hint}_{i}");
            i += 1;
        }
        self.list.push((name.clone(), expr));
        name
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The variables as the policy's `spec.variables`.
    pub fn into_variables(self) -> Vec<Variable> {
        self.list
            .into_iter()
            .map(|(name, expression)| Variable { name, expression })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::cel::{IS_LB, annotation, has_annotation, on};

    #[test]
    fn each_read_is_one_variable_named_after_its_key() {
        let mut v = Vars::default();
        let key =
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-health-check-connect-timeout";
        let e = format!("{} && {} != ''", has_annotation(key), annotation(key));
        let new = v.resolve(&on(&e, "object"));
        let old = v.resolve(&on(&e, "oldObject"));
        assert_eq!(
            new,
            "(variables.alibaba_health_check_connect_timeout != null) && variables.alibaba_health_check_connect_timeout != ''"
        );
        assert!(
            old.contains("variables.old_alibaba_health_check_connect_timeout"),
            "{old}"
        );
        let lb = v.resolve(&on(IS_LB, "object"));
        assert_eq!(lb, "variables.is_lb");
        let mark = v.resolve(&on(&annotation("lbguard.io/deletion-protection"), "object"));
        assert_eq!(mark, "variables.ann_lbguard_io_deletion_protection");
        let applies = v.define(
            "alibaba_applies",
            &on(&format!("{IS_LB} && true"), "object"),
        );
        assert_eq!(applies, "variables.alibaba_applies");
        assert_eq!(
            v.define("other", &on(&format!("{IS_LB} && true"), "object")),
            applies,
            "the same expression is one variable"
        );
        let names: Vec<String> = v.into_variables().into_iter().map(|x| x.name).collect();
        assert_eq!(
            names,
            [
                "annotations",
                "alibaba_health_check_connect_timeout",
                "old_annotations",
                "old_alibaba_health_check_connect_timeout",
                "is_lb",
                "ann_lbguard_io_deletion_protection",
                "alibaba_applies"
            ]
        );
    }

    #[test]
    fn names_stay_unique() {
        let mut v = Vars::default();
        assert_eq!(v.push("x", "1".into()), "x");
        assert_eq!(v.push("x", "2".into()), "x_2");
        assert_eq!(v.push("x", "3".into()), "x_3");
    }
}
