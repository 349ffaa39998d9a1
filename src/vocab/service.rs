//! Read-only helpers over a Service, so rules read fields the same way.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort};

#[derive(Debug, Clone, Copy)]
pub struct Svc<'a>(pub &'a Service, KeyShapes);

/// The Service's annotation keys as bits of (length, last byte): rules ask for some two
/// hundred catalog annotations on each admission and nearly all are absent, so a lookup
/// first asks whether any key has that length and last byte, and most end there.
#[derive(Debug, Clone, Copy)]
pub struct KeyShapes(u128);

impl KeyShapes {
    fn bit(len: usize, last: u8) -> u128 {
        1 << (len.wrapping_mul(31).wrapping_add(usize::from(last)) % 128)
    }

    fn of(svc: &Service) -> Self {
        let keys = svc.metadata.annotations.iter().flat_map(|a| a.keys());
        Self(keys.fold(0, |bits, k| {
            bits | Self::bit(k.len(), k.as_bytes().last().copied().unwrap_or(0))
        }))
    }

    /// False when no annotation key is `len` bytes long and ends in `last`.
    pub fn may_have(self, len: usize, last: u8) -> bool {
        self.0 & Self::bit(len, last) != 0
    }
}

impl<'a> Svc<'a> {
    pub fn new(svc: &'a Service) -> Self {
        Self(svc, KeyShapes::of(svc))
    }

    pub fn key_shapes(self) -> KeyShapes {
        self.1
    }

    pub fn annotations(self) -> Option<&'a BTreeMap<String, String>> {
        self.0.metadata.annotations.as_ref()
    }

    pub fn annotation(self, key: &str) -> Option<&'a str> {
        self.annotations()?.get(key).map(String::as_str)
    }

    pub fn label(self, key: &str) -> Option<&'a str> {
        self.0
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    pub fn finalizers(self) -> &'a [String] {
        self.0.metadata.finalizers.as_deref().unwrap_or_default()
    }

    pub fn type_(self) -> &'a str {
        self.0
            .spec
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            .unwrap_or("ClusterIP")
    }

    pub fn is_lb(self) -> bool {
        self.type_() == "LoadBalancer"
    }

    /// `spec.loadBalancerClass`: which implementation serves the load balancer.
    pub fn load_balancer_class(self) -> Option<&'a str> {
        self.0
            .spec
            .as_ref()
            .and_then(|s| s.load_balancer_class.as_deref())
    }

    pub fn ports(self) -> &'a [ServicePort] {
        self.0
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_deref())
            .unwrap_or_default()
    }

    /// The Service ports as a message lists them: "80, 443", or "none".
    pub fn port_list(self) -> String {
        let ports: Vec<String> = self.port_numbers().map(|p| p.to_string()).collect();
        if ports.is_empty() {
            "none".into()
        } else {
            ports.join(", ")
        }
    }

    pub fn port_numbers(self) -> impl Iterator<Item = i32> + 'a {
        self.ports().iter().map(|p| p.port)
    }

    pub fn has_port(self, port: i32) -> bool {
        self.ports().iter().any(|p| p.port == port)
    }

    /// `spec.externalTrafficPolicy`; the API server defaults it to Cluster.
    pub fn traffic_policy(self) -> Option<&'a str> {
        self.0
            .spec
            .as_ref()
            .and_then(|s| s.external_traffic_policy.as_deref())
    }

    pub fn external_ips(self) -> &'a [String] {
        self.0
            .spec
            .as_ref()
            .and_then(|s| s.external_ips.as_deref())
            .unwrap_or_default()
    }

    pub fn namespaced_name(self) -> String {
        format!(
            "{}/{}",
            self.0.metadata.namespace.as_deref().unwrap_or("default"),
            self.0.metadata.name.as_deref().unwrap_or_default()
        )
    }
}
