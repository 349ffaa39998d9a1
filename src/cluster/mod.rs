//! The cluster view: the index of `index`, fed from watch events (apply, delete, relist),
//! with the reservations of admitted Services and the watches' health.

pub mod audit;
pub mod ccm;
pub mod exceptions;
mod index;
pub mod reports;
pub mod watch;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::Ingress;

pub use crate::rules::listeners::lb_uses;
use crate::vocab::ctx::{ClusterView, IngressUse, LbUser};
use crate::vocab::provider::Provider;
use crate::vocab::route::Scope;
use crate::vocab::service::Svc;
pub use index::SvcProj;
use index::{Inner, Key, key_of};

/// Which kinds are watched and whether their initial lists have arrived.
#[derive(Debug, Default)]
struct Health {
    synced: HashMap<&'static str, bool>,
    broken_since: Option<Instant>,
}

/// Called with a cached LoadBalancer Service's old projection and what replaced it
/// (`None` when it is gone), after every change the watch shows.
pub type ChangeHook = Box<dyn Fn(&Service, Option<&Service>) + Send + Sync>;

/// The cache behind the cluster rules.
pub struct ClusterState {
    scope: Scope,
    inner: RwLock<Inner>,
    health: Mutex<Health>,
    on_change: std::sync::OnceLock<ChangeHook>,
}

impl std::fmt::Debug for ClusterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterState")
            .field("scope", &self.scope)
            .field("inner", &self.inner)
            .field("health", &self.health)
            .finish_non_exhaustive()
    }
}

/// How long an admitted Service holds its ports before the watch must have shown it.
pub const RESERVATION_TTL: Duration = Duration::from_secs(30);

impl ClusterState {
    /// The providers and classes whose Services this view indexes.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    pub fn new(scope: impl Into<Scope>) -> Self {
        Self {
            scope: scope.into(),
            inner: RwLock::new(Inner::default()),
            health: Mutex::new(Health::default()),
            on_change: std::sync::OnceLock::new(),
        }
    }

    /// Installs the hook told of every change to a cached LoadBalancer Service (once).
    pub fn on_change(&self, hook: ChangeHook) {
        let _ = self.on_change.set(hook);
    }

    /// The cached projection of `key`, rebuilt, when a change hook wants it.
    fn old_for_hook(&self, inner: &Inner, key: &Key) -> Option<Service> {
        self.on_change.get()?;
        inner.services.get(key).map(SvcProj::to_service)
    }

    fn changed(&self, old: Option<Service>, new: Option<&Service>) {
        if let (Some(hook), Some(old)) = (self.on_change.get(), old) {
            hook(&old, new);
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
        let key = key_of(s.metadata.namespace.as_deref(), s.metadata.name.as_deref());
        let uses = if Svc::new(s).is_lb() {
            lb_uses(&self.scope, Svc::new(s))
        } else {
            Vec::new()
        };
        let mut inner = self.write();
        let old = self.old_for_hook(&inner, &key);
        inner.drop_reservation(&key);
        inner.remove_service(&key);
        if !Svc::new(s).is_lb() {
            drop(inner);
            self.changed(old, Some(s));
            return;
        }
        // One allocation per name, shared by the key, the projection and the index.
        let (namespace, name) = uses
            .first()
            .map(|(_, _, u)| (Arc::clone(&u.namespace), Arc::clone(&u.name)))
            .unwrap_or(key);
        let mut proj = SvcProj::from_service(s, Arc::clone(&namespace), Arc::clone(&name));
        proj.lbs = uses
            .iter()
            .map(|(p, id, _)| (*p, id.as_str().into()))
            .collect();
        for (p, id, user) in uses {
            inner.lbs.entry((p, id.into())).or_default().push(user);
        }
        inner.services.insert((namespace, name), proj);
        drop(inner);
        self.changed(old, Some(s));
    }

    pub fn delete_service(&self, s: &Service) {
        let key = key_of(s.metadata.namespace.as_deref(), s.metadata.name.as_deref());
        let mut inner = self.write();
        let old = self.old_for_hook(&inner, &key);
        inner.drop_reservation(&key);
        inner.remove_service(&key);
        drop(inner);
        self.changed(old, None);
    }

    /// Drops this replica's in-memory hold on a Service's ports (its admission was denied
    /// after all).
    pub fn unreserve(&self, namespace: &str, name: &str) {
        self.write()
            .drop_reservation(&key_of(Some(namespace), Some(name)));
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
        let region = n.metadata.labels.as_ref().and_then(|l| {
            l.get("topology.kubernetes.io/region")
                .or_else(|| l.get("failure-domain.beta.kubernetes.io/region"))
                .cloned()
        });
        let mut inner = self.write();
        if let Some(old) = inner.nodes.remove(&name) {
            for ip in old {
                inner.node_ips.remove(&ip);
            }
        }
        match region {
            Some(r) => inner.node_regions.insert(name.clone(), r),
            None => inner.node_regions.remove(&name),
        };
        for ip in &ips {
            inner.node_ips.insert(ip.clone(), name.clone());
        }
        inner.nodes.insert(name, ips);
    }

    pub fn delete_node(&self, n: &Node) {
        let name = n.metadata.name.clone().unwrap_or_default();
        let mut inner = self.write();
        inner.node_regions.remove(&name);
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
            inner.node_regions.clear();
        }
        for n in all {
            self.apply_node(n);
        }
    }

    /// The region most nodes are labelled with (`topology.kubernetes.io/region`).
    pub fn region(&self) -> Option<String> {
        let inner = self.read();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for r in inner.node_regions.values() {
            *counts.entry(r.as_str()).or_default() += 1;
        }
        counts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
            .map(|(r, _)| r.to_string())
    }

    /// Every load balancer id of `provider` that a cached Service names.
    pub fn lb_ids(&self, provider: Provider) -> std::collections::HashSet<String> {
        self.read()
            .lbs
            .keys()
            .filter(|(p, _)| *p == provider)
            .map(|(_, id)| id.to_string())
            .collect()
    }

    pub fn apply_ingress(&self, i: &Ingress) {
        let key = key_of(i.metadata.namespace.as_deref(), i.metadata.name.as_deref());
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
            namespace: key.0.to_string(),
            name: key.1.to_string(),
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
        let key = key_of(i.metadata.namespace.as_deref(), i.metadata.name.as_deref());
        self.write().remove_ingress(&key);
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

    /// The listener ports this Service shares with others (watched or reserved), as
    /// `reserve` words them. An UPDATE passes its live object's clashes to `reserve` as
    /// tolerated: they predate the update (and the rules have judged them).
    pub fn clashes(&self, svc: Svc) -> Vec<String> {
        self.clashes_of(&lb_uses(&self.scope, svc))
    }

    /// `clashes`, for uses the caller already has (`lb_uses`).
    pub fn clashes_of(&self, uses: &[(Provider, String, LbUser)]) -> Vec<String> {
        if uses.is_empty() {
            return Vec::new();
        }
        self.read().clashes(uses, Instant::now(), |_| true)
    }

    /// The clashes with these Services (namespace/name) only, worded as `clashes` words them.
    pub fn clashes_with(&self, svc: Svc, holders: &[&str]) -> Vec<String> {
        self.read()
            .clashes(&lb_uses(&self.scope, svc), Instant::now(), |u| {
                holders.contains(&u.key().as_str())
            })
    }

    /// After a relist: drops the Services it did not mention.
    pub fn retain_services(&self, keep: &HashSet<Key>) {
        let mut inner = self.write();
        let gone: Vec<Key> = inner
            .services
            .keys()
            .filter(|k| !keep.contains(*k))
            .cloned()
            .collect();
        let mut olds = Vec::new();
        for k in gone {
            olds.extend(self.old_for_hook(&inner, &k));
            inner.remove_service(&k);
        }
        drop(inner);
        for old in olds {
            self.changed(Some(old), None);
        }
    }

    pub fn retain_nodes(&self, keep: &HashSet<Key>) {
        let mut inner = self.write();
        let gone: Vec<String> = inner
            .nodes
            .keys()
            .filter(|n| !keep.iter().any(|(_, name)| **name == ***n))
            .cloned()
            .collect();
        for n in gone {
            if let Some(ips) = inner.nodes.remove(&n) {
                for ip in ips {
                    inner.node_ips.remove(&ip);
                }
            }
        }
    }

    pub fn retain_ingresses(&self, keep: &HashSet<Key>) {
        let mut inner = self.write();
        let gone: Vec<Key> = inner
            .ingresses
            .keys()
            .filter(|k| !keep.contains(*k))
            .cloned()
            .collect();
        for k in gone {
            inner.remove_ingress(&k);
        }
    }

    /// Holds an admitted Service's ports until the watch shows it, unless another Service
    /// (or reservation) took one of them meanwhile: then returns the conflicts and holds
    /// nothing. Check and hold happen under one lock, so of two concurrent admissions that
    /// want one port, exactly one wins.
    pub fn reserve(&self, svc: Svc, ttl: Duration, tolerate: &[String]) -> Result<(), Vec<String>> {
        self.reserve_uses(lb_uses(&self.scope, svc), ttl, tolerate)
    }

    /// `reserve`, for uses the caller already has (`lb_uses`).
    pub fn reserve_uses(
        &self,
        uses: Vec<(Provider, String, LbUser)>,
        ttl: Duration,
        tolerate: &[String],
    ) -> Result<(), Vec<String>> {
        let now = Instant::now();
        if uses.is_empty() {
            return Ok(());
        }
        // The same Service admitted again with the same uses (an API server retry, a repeated
        // apply) while its hold has more than half its time left: the hold stands, and only
        // the clashes are checked, under the read lock (a Service that appeared meanwhile
        // still clashes). Everything else takes the write lock.
        {
            let inner = self.read();
            if inner.holds_same(&uses, now + ttl / 2) {
                let conflicts: Vec<String> = inner
                    .clashes(&uses, now, |_| true)
                    .into_iter()
                    .filter(|c| !tolerate.contains(c))
                    .collect();
                return if conflicts.is_empty() {
                    Ok(())
                } else {
                    Err(conflicts)
                };
            }
        }
        let mut inner = self.write();
        let conflicts: Vec<String> = inner
            .clashes(&uses, now, |_| true)
            .into_iter()
            .filter(|c| !tolerate.contains(c))
            .collect();
        if !conflicts.is_empty() {
            return Err(conflicts);
        }
        // Purge expired reservations while holding the lock anyway.
        let expired: Vec<Key> = inner
            .reservations
            .iter()
            .filter(|(_, (until, _))| *until <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            inner.drop_reservation(&k);
        }
        let key = (
            Arc::clone(&uses[0].2.namespace),
            Arc::clone(&uses[0].2.name),
        );
        inner.drop_reservation(&key);
        let mut held = Vec::new();
        for (p, id, mut user) in uses {
            user.reserved_until = Some(now + ttl);
            let id: Box<str> = id.into();
            held.push((p, id.clone()));
            inner.lbs.entry((p, id)).or_default().push(user);
        }
        inner.reservations.insert(key, (now + ttl, held));
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
        if let Some(users) = self.read().lbs.get(&(provider, Box::from(lb))) {
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
