//! The cluster's `LBGuardException`s, kept current by a watch: every request and audit round
//! reads one snapshot. A separate watch from the Services': an exception API that is missing
//! or failing never marks the cluster view stale; until it syncs, nothing is exempted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;
use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use super::watch::{OnError, Retry};
use crate::vocab::exceptions::{Exception, ExceptionSet, GROUP, KIND, PLURAL, VERSION};

/// At most this many exceptions are held; past it the rest (by namespace/name) are left
/// out and a warning is logged. Each is a few hundred bytes.
pub const MAX_EXCEPTIONS: usize = 10_000;

/// The kind label the watch's errors are counted under.
pub const WATCH_KIND: &str = PLURAL;

#[derive(Default)]
pub struct ExceptionStore {
    current: ArcSwap<ExceptionSet>,
    /// The first list has arrived.
    synced: AtomicBool,
}

impl ExceptionStore {
    pub fn snapshot(&self) -> Arc<ExceptionSet> {
        self.current.load_full()
    }

    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Replaces the held set (at most `MAX_EXCEPTIONS`: `insert` keeps it so). The watch
    /// swaps in a set only once its first list is whole, so the first swap is the sync.
    pub fn replace(&self, all: &BTreeMap<(String, String), Exception>) {
        let items: ExceptionSet = all.values().take(MAX_EXCEPTIONS).cloned().collect();
        self.current.store(Arc::new(items));
        if !self.synced.swap(true, Ordering::AcqRel) {
            tracing::info!(count = all.len(), "LBGuardException watch synced");
        }
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
        let mut held = Held::default();
        while let Some(event) = stream.next().await {
            let mut changed = held.handle(event, &on_error);
            // Events already waiting are taken before the set is swapped: each swap copies
            // every held exception, and a burst (a GitOps sync) needs only one.
            while let Some(Some(event)) = stream.next().now_or_never() {
                changed |= held.handle(event, &on_error);
            }
            if changed {
                store.replace(&held.all);
            }
        }
    });
}

/// The watch's own copy, from which the store's snapshots are made.
#[derive(Default)]
struct Held {
    all: BTreeMap<(String, String), Exception>,
    relist: Option<BTreeMap<(String, String), Exception>>,
    full: bool,
}

impl Held {
    /// Takes one watch event; whether the held set changed (never before the first list is
    /// whole: only then may the store be swapped).
    fn handle(
        &mut self,
        event: Result<Event<DynamicObject>, watcher::Error>,
        on_error: &OnError,
    ) -> bool {
        match event {
            Ok(Event::Init) => {
                self.relist = Some(BTreeMap::new());
                false
            }
            Ok(Event::InitApply(o)) => {
                if let (Some(r), Some(e)) = (self.relist.as_mut(), read(&o)) {
                    insert(r, key(&o), e, &mut self.full);
                }
                false
            }
            Ok(Event::InitDone) => {
                if let Some(r) = self.relist.take() {
                    self.all = r;
                }
                true
            }
            Ok(Event::Apply(o)) => {
                match read(&o) {
                    Some(e) => insert(&mut self.all, key(&o), e, &mut self.full),
                    None => {
                        self.all.remove(&key(&o));
                    }
                }
                true
            }
            Ok(Event::Delete(o)) => {
                self.all.remove(&key(&o));
                true
            }
            Err(e) => {
                on_error(WATCH_KIND);
                tracing::warn!(error = %e, "LBGuardException watch failed (is the CRD installed?); keeping the last set and retrying");
                false
            }
        }
    }
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
        assert_eq!(snap.all()[0].key(), "shop/e00000");
        let mut bad = object("shop", "bad");
        bad.data["spec"]["rules"] = json!("not a list");
        assert!(read(&bad).is_none());
    }

    #[test]
    fn a_relist_replaces_the_set_and_later_events_change_it() {
        let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&errors);
        let on_error: OnError = Arc::new(move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        let store = ExceptionStore::default();
        let mut held = Held::default();
        let take = |held: &mut Held, event| {
            let changed = held.handle(event, &on_error);
            if changed {
                store.replace(&held.all);
            }
            changed
        };
        held.all.insert(
            ("old".into(), "gone".into()),
            read(&object("old", "gone")).unwrap(),
        );
        assert!(!take(&mut held, Ok(Event::Init)));
        assert!(!take(&mut held, Ok(Event::InitApply(object("shop", "a")))));
        assert!(!take(&mut held, Ok(Event::InitApply(object("shop", "b")))));
        assert!(!store.synced(), "not before the list is whole");
        assert!(take(&mut held, Ok(Event::InitDone)));
        assert!(store.synced());
        let keys = |h: &Held| {
            h.all
                .keys()
                .map(|(ns, n)| format!("{ns}/{n}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(&held),
            ["shop/a", "shop/b"],
            "the relist replaced the old set"
        );
        let mut bad = object("shop", "a");
        bad.data["spec"]["rules"] = json!("not a list");
        assert!(take(&mut held, Ok(Event::Apply(bad))));
        assert!(take(&mut held, Ok(Event::Delete(object("shop", "b")))));
        assert!(held.all.is_empty(), "an unreadable edit covers nothing");
        let failed = watcher::Error::NoResourceVersion;
        assert!(!take(&mut held, Err(failed)));
        assert_eq!(errors.load(Ordering::Relaxed), 1);
    }
}
