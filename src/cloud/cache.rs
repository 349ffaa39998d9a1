//! The facts cache: bounded (least recently used out first), self-cleaning (ids nobody
//! names or asks for are dropped), and one call in flight per id however many admissions
//! ask meanwhile. Times come from the caller, so tests drive the clock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::cloud::base::fact::Fact;
use crate::cloud::base::outcome::CloudError;

/// A "not found" is asked again this soon by an admission: the user who just created the
/// load balancer at the cloud retries at once.
pub(crate) const NOT_FOUND_TTL: Duration = Duration::from_secs(15);

#[derive(Debug)]
struct Entry {
    fact: Arc<Fact>,
    fetched: Instant,
    /// When a Service named it or an admission asked for it last.
    used: Instant,
    /// Its key in the recency order.
    tick: u64,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, Entry>,
    /// Recency: the smallest tick is the least recently used.
    order: BTreeMap<u64, String>,
    tick: u64,
}

impl Inner {
    fn touch(&mut self, id: &str) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.map.get_mut(id) {
            self.order.remove(&e.tick);
            e.tick = tick;
            self.order.insert(tick, id.to_string());
        }
    }

    fn remove(&mut self, id: &str) {
        if let Some(e) = self.map.remove(id) {
            self.order.remove(&e.tick);
        }
    }
}

/// At most `cap` facts.
#[derive(Debug)]
pub(crate) struct Cache {
    cap: usize,
    inner: Mutex<Inner>,
}

impl Cache {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fact an admission may use (a "not found" only while fresh, any fact only while
    /// younger than `max_age`), marked as used.
    #[cfg(test)]
    pub fn get(&self, id: &str, now: Instant, max_age: Option<Duration>) -> Option<Arc<Fact>> {
        self.get_unless(id, now, max_age, &|_| false)
    }

    /// As [`Cache::get`], and a fact that `negative` says lacks what the admission needs (an
    /// NLB's server group) is, like a "not found", used only while fresh.
    pub fn get_unless(
        &self,
        id: &str,
        now: Instant,
        max_age: Option<Duration>,
        negative: &dyn Fn(&Fact) -> bool,
    ) -> Option<Arc<Fact>> {
        let mut inner = self.lock();
        let e = inner.map.get_mut(id)?;
        let age = now.saturating_duration_since(e.fetched);
        let negative = *e.fact == Fact::NotFound || negative(&e.fact);
        if (negative && age > NOT_FOUND_TTL) || max_age.is_some_and(|m| age > m) {
            return None;
        }
        e.used = now;
        let fact = Arc::clone(&e.fact);
        inner.touch(id);
        Some(fact)
    }

    /// Stores a fact; `used` when an admission or a Service wants it now. The least recently
    /// used ids go when the cache is full. Returns the number of facts held.
    pub fn put(&self, id: &str, fact: Arc<Fact>, now: Instant, used: bool) -> usize {
        let mut inner = self.lock();
        let last_used = inner.map.get(id).map(|e| e.used);
        inner.remove(id);
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.insert(
            id.to_string(),
            Entry {
                fact,
                fetched: now,
                used: if used { now } else { last_used.unwrap_or(now) },
                tick,
            },
        );
        inner.order.insert(tick, id.to_string());
        while inner.map.len() > self.cap {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            inner.map.remove(&oldest);
        }
        inner.map.len()
    }

    /// Before a refresh round: the ids `named` by Services count as used; ids unused for
    /// `idle` are dropped. Returns what to read again: the named ids and the recently used
    /// ones, except "not found" ones (never read in the background).
    pub fn plan_round(&self, named: &HashSet<String>, now: Instant, idle: Duration) -> Vec<String> {
        let mut inner = self.lock();
        for id in named {
            if let Some(e) = inner.map.get_mut(id) {
                e.used = now;
            }
        }
        let stale: Vec<String> = inner
            .map
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.used) > idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &stale {
            inner.remove(id);
        }
        let mut ids: Vec<String> = named
            .iter()
            .filter(|id| {
                inner
                    .map
                    .get(id.as_str())
                    .is_none_or(|e| *e.fact != Fact::NotFound)
            })
            .cloned()
            .chain(
                inner
                    .map
                    .iter()
                    .filter(|(id, e)| *e.fact != Fact::NotFound && !named.contains(*id))
                    .map(|(id, _)| id.clone()),
            )
            .collect();
        ids.sort();
        ids
    }

    /// How long ago `id`'s fact was read, if it is cached.
    pub fn age(&self, id: &str, now: Instant) -> Option<Duration> {
        self.lock()
            .map
            .get(id)
            .map(|e| now.saturating_duration_since(e.fetched))
    }

    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// The age of the oldest fact among the ids `mine` keeps fresh, in seconds.
    pub fn oldest_age(&self, now: Instant, mine: impl Fn(&str) -> bool) -> u64 {
        self.lock()
            .map
            .iter()
            .filter(|(id, _)| mine(id))
            .map(|(_, e)| now.saturating_duration_since(e.fetched).as_secs())
            .max()
            .unwrap_or(0)
    }

    /// Every fact, sorted by id.
    pub fn all(&self) -> Vec<(String, Arc<Fact>)> {
        let inner = self.lock();
        let mut v: Vec<_> = inner
            .map
            .iter()
            .map(|(k, e)| (k.clone(), Arc::clone(&e.fact)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

pub(crate) type Pending = watch::Receiver<Option<Result<Arc<Fact>, CloudError>>>;
pub(crate) type Answer = watch::Sender<Option<Result<Arc<Fact>, CloudError>>>;

/// The calls in flight, one per id.
#[derive(Debug, Default)]
pub(crate) struct Flights {
    pending: Mutex<HashMap<String, Pending>>,
}

impl Flights {
    /// The call in flight for `id` to wait on, or `Err` with the sender of a new one the
    /// caller must start (and [`Flights::done`] when it ends).
    pub fn join(&self, id: &str) -> Result<Pending, (Answer, Pending)> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        // A call whose task ended without answering (it cannot, but then) is not joined.
        if let Some(rx) = pending.get(id)
            && rx.has_changed().is_ok()
        {
            return Ok(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        pending.insert(id.to_string(), rx.clone());
        Err((tx, rx))
    }

    pub fn done(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    pub fn len(&self) -> usize {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::lb::LoadBalancer;
    use crate::vocab::provider::Provider;

    fn found(id: &str) -> Arc<Fact> {
        Arc::new(Fact::Found(LoadBalancer::new(id, Provider::Alibaba)))
    }

    #[test]
    fn the_least_recently_used_goes_first_and_the_size_holds() {
        let t0 = Instant::now();
        let c = Cache::new(3);
        for id in ["a", "b", "c"] {
            c.put(id, found(id), t0, true);
        }
        assert!(c.get("a", t0, None).is_some(), "a is used again");
        assert_eq!(c.put("d", found("d"), t0, true), 3);
        assert!(
            c.get("b", t0, None).is_none(),
            "b was the least recently used"
        );
        assert!(c.get("a", t0, None).is_some() && c.get("d", t0, None).is_some());
        for i in 0..10_000 {
            let id = format!("random-{i}");
            assert!(c.put(&id, Arc::new(Fact::NotFound), t0, true) <= 3);
        }
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn not_found_is_fresh_for_a_while_and_never_read_in_the_background() {
        let t0 = Instant::now();
        let c = Cache::new(10);
        c.put("gone", Arc::new(Fact::NotFound), t0, true);
        c.put("here", found("here"), t0, true);
        assert!(c.get("gone", t0 + Duration::from_secs(5), None).is_some());
        assert!(
            c.get("gone", t0 + NOT_FOUND_TTL + Duration::from_secs(1), None)
                .is_none()
        );
        let named = HashSet::from(["gone".to_string(), "new".to_string()]);
        let ids = c.plan_round(&named, t0, Duration::from_secs(600));
        assert_eq!(ids, vec!["here".to_string(), "new".to_string()]);
    }

    #[test]
    fn ids_nobody_names_or_asks_for_are_dropped() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(600);
        let c = Cache::new(10);
        c.put("named", found("named"), t0, true);
        c.put("asked", found("asked"), t0, true);
        c.put("idle", found("idle"), t0, true);
        let t1 = t0 + Duration::from_secs(500);
        assert!(c.get("asked", t1, None).is_some());
        // A background read is not a use.
        c.put("idle", found("idle"), t1, false);
        let named = HashSet::from(["named".to_string()]);
        let t2 = t0 + Duration::from_secs(700);
        let ids = c.plan_round(&named, t2, idle);
        assert_eq!(ids, vec!["asked".to_string(), "named".to_string()]);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_fact_older_than_the_bound_is_asked_again() {
        let t0 = Instant::now();
        let c = Cache::new(10);
        c.put("theirs", found("theirs"), t0, true);
        let bound = Some(Duration::from_secs(300));
        assert!(
            c.get("theirs", t0 + Duration::from_secs(299), bound)
                .is_some()
        );
        assert!(
            c.get("theirs", t0 + Duration::from_secs(301), bound)
                .is_none()
        );
        assert!(
            c.get("theirs", t0 + Duration::from_secs(301), None)
                .is_some()
        );
        // The stale-facts gauge only looks at the ids this replica keeps fresh.
        let later = t0 + Duration::from_secs(400);
        assert_eq!(c.oldest_age(later, |_| true), 400);
        assert_eq!(c.oldest_age(later, |id| id != "theirs"), 0);
    }
}
