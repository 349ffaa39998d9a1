//! What lbguard knows of each provider's annotations: its catalog, how a rule reads a
//! catalog annotation on a Service, and the same read in CEL.

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::Service;

use super::annotations::Table;
use super::cel::{annotation, annotation_token, has_annotation, lit};
use super::provider::Provider;
use super::service::Svc;

/// What lbguard knows about one provider's annotations.
#[derive(Debug)]
pub struct Catalog {
    pub provider: Provider,
    /// The prefix every annotation key of this provider starts with.
    pub prefix: &'static str,
    /// An older prefix the CCM still reads as the same keys.
    pub legacy_prefix: Option<&'static str>,
    /// Address type the CCM assumes when the Service does not say.
    pub default_address_type: Option<&'static str>,
    /// Label in which the CCM records the bound load balancer.
    pub lb_id_label: Option<&'static str>,
    /// Finalizers the CCM owns.
    pub finalizers: &'static [&'static str],
    /// The provider's annotation reference (`providers/data/<provider>.yaml`).
    pub table: &'static LazyLock<Table>,
}

/// Compared from the prefix's end: the providers' prefixes share their head
/// (`service.beta.kubernetes.io/`), so another provider's key differs near the end, and
/// each admission asks this of every annotation for every provider.
fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()]
            .iter()
            .rev()
            .zip(prefix.as_bytes().iter().rev())
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

impl Catalog {
    /// The provider's annotation reference.
    pub fn table(&self) -> &'static Table {
        LazyLock::force(self.table)
    }

    /// Whether the cloud controller reads this annotation name (without prefix).
    pub fn knows(&self, suffix: &str) -> bool {
        self.table()
            .get(suffix)
            .is_some_and(|e| e.instead.is_none())
    }

    /// The canonical key for an annotation name.
    pub fn key(&self, suffix: &str) -> String {
        [self.prefix, suffix].concat()
    }

    pub fn prefixes(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.prefix).chain(self.legacy_prefix)
    }

    /// True when a key looks like this provider's, ignoring case (so typos are caught).
    pub fn claims_key(&self, key: &str) -> bool {
        self.prefixes().any(|p| starts_with_ignore_case(key, p))
    }

    /// Does this Service carry anything of this provider's (annotations, label, finalizers)?
    pub fn detect(&self, svc: &Service) -> bool {
        let m = &svc.metadata;
        let class = svc
            .spec
            .as_ref()
            .and_then(|s| s.load_balancer_class.as_deref());
        class.is_some_and(|c| {
            super::route::builtin_classes(self.provider)
                .iter()
                .any(|(b, _)| *b == c)
        }) || m
            .annotations
            .as_ref()
            .is_some_and(|a| a.keys().any(|k| self.claims_key(k)))
            || self
                .lb_id_label
                .is_some_and(|l| m.labels.as_ref().is_some_and(|ls| ls.contains_key(l)))
            || m.finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|f| self.finalizers.contains(&f.as_str())))
    }
}

/// A view of a catalog annotation found on a Service: the exact key used and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annot<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// Field path of an annotation in messages: `metadata.annotations[key]`.
pub fn annotation_field(key: &str) -> String {
    ["metadata.annotations[", key, "]"].concat()
}

impl Catalog {
    /// Same key, either prefix (Alibaba reads the legacy prefix too).
    pub fn get<'s>(&self, svc: Svc<'s>, suffix: &str) -> Option<Annot<'s>> {
        // This runs for every annotation every rule reads (some 250 names on an ACK
        // admission, nearly all absent), so it builds no "prefix+suffix" String, first asks
        // the Service's key shapes whether such a key can be there at all and, on the usual
        // handful of annotations, compares lengths before bytes instead of searching the map
        // (a search compares the long shared prefix key by key).
        let anns = svc.annotations()?;
        find(anns, svc, self.prefix, suffix)
            .or_else(|| find(anns, svc, self.legacy_prefix?, suffix))
    }
}

#[inline]
fn find<'s>(
    anns: &'s std::collections::BTreeMap<String, String>,
    svc: Svc<'s>,
    prefix: &str,
    suffix: &str,
) -> Option<Annot<'s>> {
    let len = prefix.len() + suffix.len();
    let last = suffix.as_bytes().last().or(prefix.as_bytes().last());
    if !svc.key_shapes().may_have(len, last.copied().unwrap_or(0)) {
        return None;
    }
    let is = |k: &str| k.len() == len && k.ends_with(suffix) && k.starts_with(prefix);
    let (k, v) = if anns.len() <= SCAN_UP_TO {
        anns.iter().find(|(k, _)| is(k))
    } else {
        use std::ops::Bound;
        anns.range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .find(|(k, _)| is(k))
    }?;
    Some(Annot { key: k, value: v })
}

/// Up to this many annotations `Catalog::get` compares every key; above, it searches the map.
const SCAN_UP_TO: usize = 16;

/// A catalog annotation as `Catalog::get` reads it: the current prefix first, then the
/// legacy one.
pub struct Annotation {
    /// True when either key is there.
    pub present: String,
    /// The value read (guard with `present`).
    pub value: String,
    /// The key read, as a CEL string (for messages).
    pub key: String,
}

pub fn catalog_annotation(cat: &Catalog, suffix: &str) -> Annotation {
    let current = format!("{}{suffix}", cat.prefix);
    match cat.legacy_prefix {
        None => Annotation {
            present: has_annotation(&current),
            value: annotation(&current),
            key: lit(&current),
        },
        Some(legacy) => {
            let old = format!("{legacy}{suffix}");
            let value = annotation_token(&[&current, &old]);
            Annotation {
                present: format!("({value} != null)"),
                key: format!("$key($s,{},{})", lit(&current), lit(&old)),
                value,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::starts_with_ignore_case;

    #[test]
    fn a_prefix_matches_in_any_case_and_nothing_else_does() {
        let alibaba = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
        for (key, prefix, claimed) in [
            (
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
                alibaba,
                true,
            ),
            (
                "Service.Beta.Kubernetes.io/Alibaba-Cloud-LoadBalancer-Id",
                alibaba,
                true,
            ),
            (
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-",
                alibaba,
                true,
            ),
            (
                "service.beta.kubernetes.io/alibaba-cloud-loadbalancer",
                alibaba,
                false,
            ),
            (
                "service.beta.kubernetes.io/volcengine-loadbalancer-id",
                alibaba,
                false,
            ),
            (
                "xervice.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
                alibaba,
                false,
            ),
            ("kubernetes.io/ELB.class", "kubernetes.io/elb.", true),
            ("kubernetes.io/elb", "kubernetes.io/elb.", false),
            ("", "", true),
            ("é", "É", false),
        ] {
            assert_eq!(
                starts_with_ignore_case(key, prefix),
                claimed,
                "{key} {prefix}"
            );
            let forward = key.len() >= prefix.len()
                && key.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes());
            assert_eq!(forward, claimed, "{key} {prefix}");
        }
    }
}
