//! The cluster view: slim projections of Services, Nodes and Ingresses, fed from watch
//! events, and an index from load balancer to the Services on it, updated per event so a
//! lookup costs the same with 100 or 100,000 Services.

pub mod audit;
pub mod watch;

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::ProviderChoice;
use crate::engine::{ClusterView, Svc};
use crate::inventory::Family;
use crate::providers::{Provider, catalog};
use crate::rules::listeners::{listener_ports, skips_listeners};

/// One Service's (or reservation's) use of a load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LbUser {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// Listener ports: (port, family, listener protocol, upper case).
    pub ports: Vec<(i32, Family, String)>,
    /// Huawei `skip-managed-listener: "true"`.
    pub skip_listener: bool,
    /// Huawei `elb.pass-through` value.
    pub pass_through: Option<String>,
    /// Admitted but not yet seen by the watch: held until this instant.
    pub reserved_until: Option<Instant>,
}

impl LbUser {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn is_live(&self, now: Instant) -> bool {
        self.reserved_until.is_none_or(|t| t > now)
    }
}

/// An Ingress using an ELB (CCE: `kubernetes.io/elb.id`, port `kubernetes.io/elb.port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressUse {
    pub namespace: String,
    pub name: String,
    pub ports: Vec<i32>,
}

/// Every load balancer a Service uses, one entry per provider whose id it carries.
pub fn lb_uses(choice: ProviderChoice, svc: Svc) -> Vec<(Provider, String, LbUser)> {
    let providers: &[Provider] = match &choice {
        ProviderChoice::Fixed(p) => std::slice::from_ref(p),
        ProviderChoice::Auto => &Provider::ALL,
    };
    let meta = &svc.0.metadata;
    providers
        .iter()
        .filter_map(|p| {
            let cat = catalog(*p);
            let id = cat.get(svc, "id")?;
            Some((
                *p,
                id.value.to_string(),
                LbUser {
                    namespace: meta.namespace.clone().unwrap_or_else(|| "default".into()),
                    name: meta.name.clone().unwrap_or_default(),
                    uid: meta.uid.clone().unwrap_or_default(),
                    ports: listener_ports(cat, svc),
                    skip_listener: skips_listeners(cat, svc),
                    pass_through: (*p == Provider::Huawei)
                        .then(|| cat.get(svc, "pass-through").map(|a| a.value.to_string()))
                        .flatten(),
                    reserved_until: None,
                },
            ))
        })
        .collect()
}

/// A cached LoadBalancer Service: only what the rules read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvcProj {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// Provider annotations only (keys any catalog claims).
    pub annotations: Vec<(String, String)>,
    pub ports: Vec<(Option<String>, i32, String)>,
    pub traffic_policy: Option<String>,
    pub external_ips: Vec<String>,
    lbs: Vec<(Provider, String)>,
}

impl SvcProj {
    /// Drops everything the rules never read (managedFields, status, other annotations).
    pub fn from_service(s: &Service) -> Self {
        let claimed = |k: &str| Provider::ALL.iter().any(|p| catalog(*p).claims_key(k));
        let spec = s.spec.as_ref();
        Self {
            namespace: s
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            name: s.metadata.name.clone().unwrap_or_default(),
            uid: s.metadata.uid.clone().unwrap_or_default(),
            annotations: s
                .metadata
                .annotations
                .iter()
                .flatten()
                .filter(|(k, _)| claimed(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ports: Svc(s)
                .ports()
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.port,
                        p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    )
                })
                .collect(),
            traffic_policy: spec.and_then(|s| s.external_traffic_policy.clone()),
            external_ips: spec
                .and_then(|s| s.external_ips.clone())
                .unwrap_or_default(),
            lbs: Vec::new(),
        }
    }

    /// Rebuilds a Service with the projected fields (for audit and rule checks).
    pub fn to_service(&self) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some(self.namespace.clone()),
                name: Some(self.name.clone()),
                uid: (!self.uid.is_empty()).then(|| self.uid.clone()),
                annotations: (!self.annotations.is_empty())
                    .then(|| self.annotations.iter().cloned().collect()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(
                    self.ports
                        .iter()
                        .map(|(name, port, protocol)| ServicePort {
                            name: name.clone(),
                            port: *port,
                            protocol: Some(protocol.clone()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                external_traffic_policy: self.traffic_policy.clone(),
                external_ips: (!self.external_ips.is_empty()).then(|| self.external_ips.clone()),
                ..Default::default()
            }),
            status: None,
        }
    }
}

type Key = (String, String);

#[derive(Debug, Default)]
struct Inner {
    services: HashMap<Key, SvcProj>,
    lbs: HashMap<(Provider, String), Vec<LbUser>>,
    /// Reserved Services and the load balancers they hold.
    reservations: HashMap<Key, Vec<(Provider, String)>>,
    nodes: HashMap<String, Vec<String>>,
    node_ips: HashMap<String, String>,
    ingresses: HashMap<Key, (String, IngressUse)>,
    ingress_by_elb: HashMap<String, Vec<Key>>,
}

impl Inner {
    fn unindex(&mut self, key: &Key, lbs: &[(Provider, String)]) {
        for lb in lbs {
            if let Some(users) = self.lbs.get_mut(lb) {
                users.retain(|u| (&u.namespace, &u.name) != (&key.0, &key.1));
                if users.is_empty() {
                    self.lbs.remove(lb);
                }
            }
        }
    }

    fn drop_reservation(&mut self, key: &Key) {
        if let Some(lbs) = self.reservations.remove(key) {
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

    fn remove_service(&mut self, key: &Key) {
        if let Some(old) = self.services.remove(key) {
            self.unindex(key, &old.lbs);
        }
    }
}

/// Which kinds are watched and whether their initial lists have arrived.
#[derive(Debug, Default)]
struct Health {
    synced: HashMap<&'static str, bool>,
    broken_since: Option<Instant>,
}

/// The cache behind the cluster rules.
#[derive(Debug)]
pub struct ClusterState {
    choice: ProviderChoice,
    inner: RwLock<Inner>,
    health: Mutex<Health>,
}

/// How long an admitted Service holds its ports before the watch must have shown it.
pub const RESERVATION_TTL: Duration = Duration::from_secs(30);

impl ClusterState {
    pub fn new(choice: ProviderChoice) -> Self {
        Self {
            choice,
            inner: RwLock::new(Inner::default()),
            health: Mutex::new(Health::default()),
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// A Service was added or changed (watch `Apply`/`InitApply`).
    pub fn apply_service(&self, s: &Service) {
        let key = (
            s.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            s.metadata.name.clone().unwrap_or_default(),
        );
        let mut inner = self.write();
        inner.drop_reservation(&key);
        inner.remove_service(&key);
        if !Svc(s).is_lb() {
            return;
        }
        let mut proj = SvcProj::from_service(s);
        let uses = lb_uses(self.choice, Svc(s));
        proj.lbs = uses.iter().map(|(p, id, _)| (*p, id.clone())).collect();
        for (p, id, user) in uses {
            inner.lbs.entry((p, id)).or_default().push(user);
        }
        inner.services.insert(key, proj);
    }

    pub fn delete_service(&self, s: &Service) {
        let key = (
            s.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            s.metadata.name.clone().unwrap_or_default(),
        );
        let mut inner = self.write();
        inner.drop_reservation(&key);
        inner.remove_service(&key);
    }

    /// A relist replaced every Service (watch `Init` … `InitDone`).
    pub fn replace_services<'a>(&self, all: impl IntoIterator<Item = &'a Service>) {
        {
            let mut inner = self.write();
            inner.services.clear();
            inner.lbs.retain(|_, users| {
                users.retain(|u| u.reserved_until.is_some());
                !users.is_empty()
            });
        }
        for s in all {
            self.apply_service(s);
        }
    }

    pub fn apply_node(&self, n: &Node) {
        let name = n.metadata.name.clone().unwrap_or_default();
        let ips: Vec<String> = n
            .status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .into_iter()
            .flatten()
            .filter(|a| a.type_ == "InternalIP" || a.type_ == "ExternalIP")
            .map(|a| a.address.clone())
            .collect();
        let mut inner = self.write();
        if let Some(old) = inner.nodes.remove(&name) {
            for ip in old {
                inner.node_ips.remove(&ip);
            }
        }
        for ip in &ips {
            inner.node_ips.insert(ip.clone(), name.clone());
        }
        inner.nodes.insert(name, ips);
    }

    pub fn delete_node(&self, n: &Node) {
        let name = n.metadata.name.clone().unwrap_or_default();
        let mut inner = self.write();
        if let Some(old) = inner.nodes.remove(&name) {
            for ip in old {
                inner.node_ips.remove(&ip);
            }
        }
    }

    pub fn replace_nodes<'a>(&self, all: impl IntoIterator<Item = &'a Node>) {
        {
            let mut inner = self.write();
            inner.nodes.clear();
            inner.node_ips.clear();
        }
        for n in all {
            self.apply_node(n);
        }
    }

    pub fn apply_ingress(&self, i: &Ingress) {
        let key = (
            i.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            i.metadata.name.clone().unwrap_or_default(),
        );
        self.delete_ingress(i);
        let anns = i.metadata.annotations.as_ref();
        let Some(elb) = anns.and_then(|a| a.get("kubernetes.io/elb.id")).cloned() else {
            return;
        };
        let port = anns
            .and_then(|a| a.get("kubernetes.io/elb.port"))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(80);
        let used = IngressUse {
            namespace: key.0.clone(),
            name: key.1.clone(),
            ports: vec![port],
        };
        let mut inner = self.write();
        inner
            .ingress_by_elb
            .entry(elb.clone())
            .or_default()
            .push(key.clone());
        inner.ingresses.insert(key, (elb, used));
    }

    pub fn delete_ingress(&self, i: &Ingress) {
        let key = (
            i.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            i.metadata.name.clone().unwrap_or_default(),
        );
        let mut inner = self.write();
        if let Some((elb, _)) = inner.ingresses.remove(&key)
            && let Some(keys) = inner.ingress_by_elb.get_mut(&elb)
        {
            keys.retain(|k| *k != key);
            if keys.is_empty() {
                inner.ingress_by_elb.remove(&elb);
            }
        }
    }

    pub fn replace_ingresses<'a>(&self, all: impl IntoIterator<Item = &'a Ingress>) {
        {
            let mut inner = self.write();
            inner.ingresses.clear();
            inner.ingress_by_elb.clear();
        }
        for i in all {
            self.apply_ingress(i);
        }
    }

    /// Holds an admitted Service's ports until the watch shows it, unless another Service
    /// (or reservation) took one of them meanwhile: then returns the conflicts and holds
    /// nothing. Check and hold happen under one lock, so of two concurrent admissions that
    /// want one port, exactly one wins.
    pub fn reserve(&self, svc: Svc, ttl: Duration) -> Result<(), Vec<String>> {
        let now = Instant::now();
        let uses = lb_uses(self.choice, svc);
        if uses.is_empty() {
            return Ok(());
        }
        let mut inner = self.write();
        let mut conflicts = Vec::new();
        for (p, id, me) in &uses {
            let Some(users) = inner.lbs.get(&(*p, id.clone())) else {
                continue;
            };
            for other in users.iter().filter(|u| u.is_live(now)) {
                if (&other.namespace, &other.name) == (&me.namespace, &me.name) {
                    continue;
                }
                for c in crate::rules::listeners::port_clashes(me, other) {
                    conflicts.push(format!(
                        "{c} on load balancer \"{id}\" is held by {}",
                        other.key()
                    ));
                }
            }
        }
        if !conflicts.is_empty() {
            return Err(conflicts);
        }
        // Purge expired reservations while holding the lock anyway.
        let expired: Vec<Key> = inner
            .lbs
            .values()
            .flatten()
            .filter(|u| !u.is_live(now))
            .map(|u| (u.namespace.clone(), u.name.clone()))
            .collect();
        for k in expired {
            inner.drop_reservation(&k);
        }
        let key = (uses[0].2.namespace.clone(), uses[0].2.name.clone());
        inner.drop_reservation(&key);
        let mut held = Vec::new();
        for (p, id, mut user) in uses {
            user.reserved_until = Some(now + ttl);
            held.push((p, id.clone()));
            inner.lbs.entry((p, id)).or_default().push(user);
        }
        inner.reservations.insert(key, held);
        Ok(())
    }

    /// Every cached LoadBalancer Service, rebuilt for evaluation.
    pub fn services(&self) -> Vec<Service> {
        self.read()
            .services
            .values()
            .map(SvcProj::to_service)
            .collect()
    }

    pub fn service_count(&self) -> usize {
        self.read().services.len()
    }

    /// Registers a kind to wait for; `/readyz` stays false until each has synced.
    pub fn expect(&self, kind: &'static str) {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .synced
            .insert(kind, false);
    }

    pub fn mark_synced(&self, kind: &'static str) {
        let mut h = self.health.lock().unwrap_or_else(|p| p.into_inner());
        h.synced.insert(kind, true);
        h.broken_since = None;
    }

    pub fn mark_healthy(&self) {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .broken_since = None;
    }

    pub fn mark_broken(&self) {
        let mut h = self.health.lock().unwrap_or_else(|p| p.into_inner());
        h.broken_since.get_or_insert_with(Instant::now);
    }

    pub fn synced(&self) -> bool {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .synced
            .values()
            .all(|s| *s)
    }
}

impl ClusterView for ClusterState {
    fn lb_users(&self, provider: Provider, lb: &str, out: &mut Vec<LbUser>) {
        let now = Instant::now();
        if let Some(users) = self.read().lbs.get(&(provider, lb.to_string())) {
            out.extend(users.iter().filter(|u| u.is_live(now)).cloned());
        }
    }

    fn node_with_ip(&self, ip: &str) -> Option<String> {
        self.read().node_ips.get(ip).cloned()
    }

    fn ingresses_on(&self, elb: &str, out: &mut Vec<IngressUse>) {
        let inner = self.read();
        if let Some(keys) = inner.ingress_by_elb.get(elb) {
            out.extend(
                keys.iter()
                    .filter_map(|k| inner.ingresses.get(k))
                    .map(|(_, u)| u.clone()),
            );
        }
    }

    fn stale_for(&self) -> Option<Duration> {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .broken_since
            .map(|t| t.elapsed())
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
