//! The cluster view's index: slim projections of Services, Nodes and Ingresses, and the
//! map from load balancer to the Services on it, kept per event so a lookup costs the same
//! with 100 or 100,000 Services. `ClusterState` feeds it from the watches.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::providers::catalog;
use crate::vocab::ctx::{IngressUse, LbUser};
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;

/// A cached LoadBalancer Service: only what the rules read. Names are shared with the
/// map key and the load balancer index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvcProj {
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    /// For references to the object (policy reports).
    pub uid: Option<Box<str>>,
    /// Provider annotations only (keys any catalog claims).
    pub annotations: Vec<(Box<str>, Box<str>)>,
    /// (port, protocol).
    pub ports: Vec<(i32, &'static str)>,
    pub traffic_policy: Option<Box<str>>,
    pub external_ips: Vec<Box<str>>,
    pub(super) lbs: Vec<(Provider, Box<str>)>,
}

/// The protocols a Service port can have, as static strings.
fn static_protocol(p: &str) -> &'static str {
    match p {
        "UDP" => "UDP",
        "SCTP" => "SCTP",
        _ => "TCP",
    }
}

impl SvcProj {
    /// Drops everything the rules never read (managedFields, status, other annotations).
    pub fn from_service(s: &Service, namespace: Arc<str>, name: Arc<str>) -> Self {
        let claimed = |k: &str| Provider::ALL.iter().any(|p| catalog(*p).claims_key(k));
        let spec = s.spec.as_ref();
        Self {
            namespace,
            name,
            uid: s.metadata.uid.as_deref().map(Into::into),
            annotations: s
                .metadata
                .annotations
                .iter()
                .flatten()
                .filter(|(k, _)| claimed(k))
                .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
                .collect(),
            ports: Svc::new(s)
                .ports()
                .iter()
                .map(|p| {
                    (
                        p.port,
                        static_protocol(p.protocol.as_deref().unwrap_or("TCP")),
                    )
                })
                .collect(),
            traffic_policy: spec
                .and_then(|s| s.external_traffic_policy.as_deref())
                .map(Into::into),
            external_ips: spec
                .and_then(|s| s.external_ips.as_ref())
                .map(|ips| ips.iter().map(|i| i.as_str().into()).collect())
                .unwrap_or_default(),
            lbs: Vec::new(),
        }
    }

    /// Rebuilds a Service with the projected fields (for audit and rule checks).
    pub fn to_service(&self) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some(self.namespace.to_string()),
                name: Some(self.name.to_string()),
                uid: self.uid.as_deref().map(String::from),
                annotations: (!self.annotations.is_empty()).then(|| {
                    self.annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                }),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(
                    self.ports
                        .iter()
                        .map(|(port, protocol)| ServicePort {
                            port: *port,
                            protocol: Some(protocol.to_string()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                external_traffic_policy: self.traffic_policy.as_deref().map(String::from),
                external_ips: (!self.external_ips.is_empty())
                    .then(|| self.external_ips.iter().map(|i| i.to_string()).collect()),
                ..Default::default()
            }),
            status: None,
        }
    }
}

pub(super) type Key = (Arc<str>, Arc<str>);

pub(super) fn key_of(namespace: Option<&str>, name: Option<&str>) -> Key {
    (
        namespace.unwrap_or("default").into(),
        name.unwrap_or_default().into(),
    )
}

/// The load balancers a reservation holds.
pub(super) type Held = Vec<(Provider, Box<str>)>;

#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) services: HashMap<Key, SvcProj>,
    pub(super) lbs: HashMap<(Provider, Box<str>), Vec<LbUser>>,
    /// Reserved Services: until when, and the load balancers they hold. The expiry is
    /// kept here so purging scans the reservations, not every load balancer's users.
    pub(super) reservations: HashMap<Key, (Instant, Held)>,
    pub(super) nodes: HashMap<String, Vec<String>>,
    pub(super) node_ips: HashMap<String, String>,
    /// Each node's `topology.kubernetes.io/region` label.
    pub(super) node_regions: HashMap<String, String>,
    pub(super) ingresses: HashMap<Key, (String, IngressUse)>,
    pub(super) ingress_by_elb: HashMap<String, Vec<Key>>,
}

impl Inner {
    pub(super) fn unindex(&mut self, key: &Key, lbs: &[(Provider, Box<str>)]) {
        for lb in lbs {
            if let Some(users) = self.lbs.get_mut(lb) {
                users.retain(|u| (&u.namespace, &u.name) != (&key.0, &key.1));
                if users.is_empty() {
                    self.lbs.remove(lb);
                }
            }
        }
    }

    pub(super) fn drop_reservation(&mut self, key: &Key) {
        if let Some((_, lbs)) = self.reservations.remove(key) {
            for lb in lbs {
                if let Some(users) = self.lbs.get_mut(&lb) {
                    users.retain(|u| {
                        !(u.reserved_until.is_some() && (&u.namespace, &u.name) == (&key.0, &key.1))
                    });
                    if users.is_empty() {
                        self.lbs.remove(&lb);
                    }
                }
            }
        }
    }

    /// True when the Service of `uses` holds a reservation until after `until` of exactly
    /// these uses (load balancers and what it asks of each).
    pub(super) fn holds_same(&self, uses: &[(Provider, String, LbUser)], until: Instant) -> bool {
        let me = &uses[0].2;
        let Some((expires, held)) = self
            .reservations
            .get(&(Arc::clone(&me.namespace), Arc::clone(&me.name)))
        else {
            return false;
        };
        *expires > until
            && held.len() == uses.len()
            && uses.iter().zip(held).all(|((p, id, want), (hp, hid))| {
                p == hp
                    && **id == **hid
                    && self.lbs.get(&(*hp, hid.clone())).is_some_and(|users| {
                        users.iter().any(|u| {
                            u.reserved_until.is_some()
                                && (&u.namespace, &u.name) == (&want.namespace, &want.name)
                                && u.ports == want.ports
                                && u.skip_listener == want.skip_listener
                                && u.makes_listeners == want.makes_listeners
                                && u.pass_through == want.pass_through
                        })
                    })
            })
    }

    /// The clashes with the live users `keep` selects, worded for messages.
    pub(super) fn clashes(
        &self,
        uses: &[(Provider, String, LbUser)],
        now: Instant,
        keep: impl Fn(&LbUser) -> bool,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for (p, id, me) in uses {
            let Some(users) = self.lbs.get(&(*p, id.as_str().into())) else {
                continue;
            };
            for other in users.iter().filter(|u| u.is_live(now) && keep(u)) {
                if (&other.namespace, &other.name) == (&me.namespace, &me.name) {
                    continue;
                }
                for c in crate::rules::listeners::port_clashes(me, other) {
                    out.push(format!(
                        "{c} on load balancer \"{id}\" is held by {}",
                        other.key()
                    ));
                }
            }
        }
        out
    }

    pub(super) fn remove_ingress(&mut self, key: &Key) {
        if let Some((elb, _)) = self.ingresses.remove(key)
            && let Some(keys) = self.ingress_by_elb.get_mut(&elb)
        {
            keys.retain(|k| k != key);
            if keys.is_empty() {
                self.ingress_by_elb.remove(&elb);
            }
        }
    }

    pub(super) fn remove_service(&mut self, key: &Key) {
        if let Some(old) = self.services.remove(key) {
            self.unindex(key, &old.lbs);
        }
    }
}
