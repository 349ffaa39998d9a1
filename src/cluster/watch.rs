//! Feeds the cluster view from kube-rs watches. Each event is projected at once (so no
//! whole objects with managedFields are kept), relists replace what they do not mention,
//! and a broken watch keeps the cache, retries with backoff and marks the cache stale.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::ClusterState;
use crate::config::{Config, ProviderChoice, ProxyMode};
use crate::providers::Provider;
use crate::rules::Action;

/// Exponential retry delays between `min` and `max`.
#[derive(Debug, Clone)]
pub struct Retry {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Retry {
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            next: min,
        }
    }
}

impl Iterator for Retry {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(self.max);
        Some(now)
    }
}

impl Backoff for Retry {
    fn reset(&mut self) {
        self.next = self.min;
    }
}

/// Which kinds the enabled rules need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    pub nodes: bool,
    pub ingresses: bool,
}

impl Kinds {
    pub fn for_config(config: &Config) -> Self {
        let huawei = matches!(
            config.provider,
            ProviderChoice::Auto | ProviderChoice::Fixed(Provider::Huawei)
        );
        let on = |id: &str, default: Action| config.action_for(id, default) != Action::Off;
        // The cloud source takes its region from the nodes' label when the config has none.
        let cloud_region =
            config.inventory.cloud.enabled && config.inventory.cloud.region.is_none();
        Self {
            nodes: cloud_region
                || (huawei
                    && config.cluster.proxy_mode == ProxyMode::Ipvs
                    && on("ipvs-node-external-ip", Action::Deny)),
            ingresses: huawei && on("ingress-shares-elb", Action::Warn),
        }
    }
}

/// A kind the cluster view caches.
trait Cached: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static {
    const KIND: &'static str;
    fn apply(state: &ClusterState, o: &Self);
    fn delete(state: &ClusterState, o: &Self);
    /// Drops every cached object whose key is not in `keep`.
    fn retain(state: &ClusterState, keep: &HashSet<(Arc<str>, Arc<str>)>);
}

fn key<K: Resource>(o: &K) -> (Arc<str>, Arc<str>) {
    let m = o.meta();
    (
        m.namespace.as_deref().unwrap_or("default").into(),
        m.name.as_deref().unwrap_or_default().into(),
    )
}

impl Cached for Service {
    const KIND: &'static str = "services";
    fn apply(state: &ClusterState, o: &Self) {
        state.apply_service(o);
    }
    fn delete(state: &ClusterState, o: &Self) {
        state.delete_service(o);
    }
    fn retain(state: &ClusterState, keep: &HashSet<(Arc<str>, Arc<str>)>) {
        state.retain_services(keep);
    }
}

impl Cached for Node {
    const KIND: &'static str = "nodes";
    fn apply(state: &ClusterState, o: &Self) {
        state.apply_node(o);
    }
    fn delete(state: &ClusterState, o: &Self) {
        state.delete_node(o);
    }
    fn retain(state: &ClusterState, keep: &HashSet<(Arc<str>, Arc<str>)>) {
        state.retain_nodes(keep);
    }
}

impl Cached for Ingress {
    const KIND: &'static str = "ingresses";
    fn apply(state: &ClusterState, o: &Self) {
        state.apply_ingress(o);
    }
    fn delete(state: &ClusterState, o: &Self) {
        state.delete_ingress(o);
    }
    fn retain(state: &ClusterState, keep: &HashSet<(Arc<str>, Arc<str>)>) {
        state.retain_ingresses(keep);
    }
}

/// Called on every watch error, with the kind.
pub type OnError = Arc<dyn Fn(&'static str) + Send + Sync>;

async fn run<K: Cached>(api: Api<K>, state: Arc<ClusterState>, retry: Retry, on_error: OnError)
where
    K::DynamicType: Default,
{
    let mut stream = watcher(api).backoff(retry).boxed();
    let mut seen: Option<HashSet<(Arc<str>, Arc<str>)>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => seen = Some(HashSet::new()),
            Ok(Event::InitApply(o)) => {
                if let Some(s) = seen.as_mut() {
                    s.insert(key(&o));
                }
                K::apply(&state, &o);
            }
            Ok(Event::InitDone) => {
                if let Some(keep) = seen.take() {
                    K::retain(&state, &keep);
                }
                state.mark_synced(K::KIND);
                tracing::info!(kind = K::KIND, "watch synced");
            }
            Ok(Event::Apply(o)) => {
                K::apply(&state, &o);
                state.mark_healthy();
            }
            Ok(Event::Delete(o)) => {
                K::delete(&state, &o);
                state.mark_healthy();
            }
            Err(e) => {
                state.mark_broken();
                on_error(K::KIND);
                tracing::warn!(kind = K::KIND, error = %e, "watch failed; serving from the cache and retrying");
            }
        }
    }
}

fn watcher<K: Cached>(api: Api<K>) -> impl futures::Stream<Item = Result<Event<K>, watcher::Error>>
where
    K::DynamicType: Default,
{
    watcher::watcher(api, watcher::Config::default())
}

/// Starts the watches the config needs; `/readyz` waits for each to sync.
pub fn spawn(
    client: Client,
    state: Arc<ClusterState>,
    kinds: Kinds,
    retry: Retry,
    on_error: OnError,
) {
    state.expect(Service::KIND);
    tokio::spawn(run::<Service>(
        Api::all(client.clone()),
        Arc::clone(&state),
        retry.clone(),
        Arc::clone(&on_error),
    ));
    if kinds.nodes {
        state.expect(Node::KIND);
        tokio::spawn(run::<Node>(
            Api::all(client.clone()),
            Arc::clone(&state),
            retry.clone(),
            Arc::clone(&on_error),
        ));
    }
    if kinds.ingresses {
        state.expect(Ingress::KIND);
        tokio::spawn(run::<Ingress>(Api::all(client), state, retry, on_error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_watched_for_ipvs_rules_or_the_cloud_region() {
        let kinds = |yaml: &str| Kinds::for_config(&crate::testkit::cfg(yaml));
        assert!(!kinds("provider: alibaba\n").nodes);
        assert!(kinds("provider: huawei\ncluster:\n  proxyMode: ipvs\n").nodes);
        let cloud = "provider: alibaba\ninventory:\n  cloud:\n    enabled: true\n";
        assert!(kinds(cloud).nodes, "the region comes from the nodes");
        assert!(!kinds(&format!("{cloud}    region: cn-beijing\n")).nodes);
    }
}
