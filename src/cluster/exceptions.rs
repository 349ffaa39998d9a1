//! The cluster's `LBGuardException`s, kept current by a watch: every request and audit round
//! reads one snapshot. A separate watch from the Services': an exception API that is missing
//! or failing never marks the cluster view stale; until it syncs, nothing is exempted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use super::watch::{OnError, Retry};
use crate::vocab::exceptions::{Exception, GROUP, KIND, PLURAL, VERSION};

/// At most this many exceptions are held; past it the rest (by namespace/name) are left
/// out and a warning is logged. Each is a few hundred bytes.
pub const MAX_EXCEPTIONS: usize = 10_000;

/// The kind label the watch's errors are counted under.
pub const WATCH_KIND: &str = PLURAL;

#[derive(Default)]
pub struct ExceptionStore {
    current: ArcSwap<Vec<Exception>>,
    /// The first list has arrived.
    synced: AtomicBool,
}

impl ExceptionStore {
    pub fn snapshot(&self) -> Arc<Vec<Exception>> {
        self.current.load_full()
    }

    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Replaces the held set (at most `MAX_EXCEPTIONS`: `insert` keeps it so).
    pub fn replace(&self, all: &BTreeMap<(String, String), Exception>) {
        let items: Vec<Exception> = all.values().take(MAX_EXCEPTIONS).cloned().collect();
        self.current.store(Arc::new(items));
    }
}

/// Adds or replaces one exception, unless the map is full and it is new; says so once.
fn insert(
    all: &mut BTreeMap<(String, String), Exception>,
    key: (String, String),
    e: Exception,
    full: &mut bool,
) {
    if all.len() >= MAX_EXCEPTIONS && !all.contains_key(&key) {
        if !*full {
            tracing::warn!(
                max = MAX_EXCEPTIONS,
                "more LBGuardExceptions than lbguard holds; those past the limit cover nothing"
            );
        }
        *full = true;
        return;
    }
    all.insert(key, e);
}

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

fn read(o: &DynamicObject) -> Option<Exception> {
    let v = serde_json::to_value(o).ok()?;
    match Exception::from_value(&v)? {
        Ok(e) => Some(e),
        Err(e) => {
            tracing::warn!(
                namespace = o.metadata.namespace.as_deref().unwrap_or_default(),
                name = o.metadata.name.as_deref().unwrap_or_default(),
                error = %e,
                "LBGuardException cannot be read; it covers nothing"
            );
            None
        }
    }
}

fn key(o: &DynamicObject) -> (String, String) {
    (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

/// Watches every namespace's exceptions into `store` until the process ends.
pub fn spawn(client: Client, store: Arc<ExceptionStore>, retry: Retry, on_error: OnError) {
    let ar = resource();
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .backoff(retry)
            .boxed();
        let mut all = BTreeMap::new();
        let mut relist: Option<BTreeMap<(String, String), Exception>> = None;
        let mut full = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => relist = Some(BTreeMap::new()),
                Ok(Event::InitApply(o)) => {
                    if let (Some(r), Some(e)) = (relist.as_mut(), read(&o)) {
                        insert(r, key(&o), e, &mut full);
                    }
                }
                Ok(Event::InitDone) => {
                    if let Some(r) = relist.take() {
                        all = r;
                    }
                    store.replace(&all);
                    store.synced.store(true, Ordering::Release);
                    tracing::info!(count = all.len(), "LBGuardException watch synced");
                }
                Ok(Event::Apply(o)) => {
                    match read(&o) {
                        Some(e) => insert(&mut all, key(&o), e, &mut full),
                        None => {
                            all.remove(&key(&o));
                        }
                    }
                    store.replace(&all);
                }
                Ok(Event::Delete(o)) => {
                    all.remove(&key(&o));
                    store.replace(&all);
                }
                Err(e) => {
                    on_error(WATCH_KIND);
                    tracing::warn!(error = %e, "LBGuardException watch failed (is the CRD installed?); keeping the last set and retrying");
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(ns: &str, name: &str) -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"services": {"names": ["web"]}, "rules": ["address-type-value"],
                     "reason": "r", "expires": "2026-12-09T00:00:00Z"}}),
        )
        .unwrap()
    }

    #[test]
    fn the_store_is_bounded_and_reads_objects_as_the_api_sends_them() {
        let store = ExceptionStore::default();
        let mut all = BTreeMap::new();
        let mut full = false;
        for i in 0..MAX_EXCEPTIONS + 5 {
            let o = object("shop", &format!("e{i:05}"));
            insert(&mut all, key(&o), read(&o).unwrap(), &mut full);
        }
        assert!(full);
        assert_eq!(all.len(), MAX_EXCEPTIONS);
        // One already held is still updated when full.
        let o = object("shop", "e00000");
        insert(&mut all, key(&o), read(&o).unwrap(), &mut full);
        store.replace(&all);
        let snap = store.snapshot();
        assert_eq!(snap.len(), MAX_EXCEPTIONS);
        assert_eq!(snap[0].key(), "shop/e00000");
        let mut bad = object("shop", "bad");
        bad.data["spec"]["rules"] = json!("not a list");
        assert!(read(&bad).is_none());
    }
}
