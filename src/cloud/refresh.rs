//! The background refresh: every `inventory.cloud.refresh`, every load balancer a Service
//! names (and every one an admission asked for lately) is read again, so admissions almost
//! never wait. "Not found" ids are not read in the background; failures keep the last fact
//! and retry with backoff. The stale-facts gauge is kept current while a round runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::Cloud;

/// Ids no Service names and no admission asked for are dropped after this many refreshes.
const UNUSED_REFRESHES: u32 = 2;
/// A load balancer a Service names that another replica refreshes is read here once in this
/// many rounds, so the audit (which never calls the cloud) knows every one.
pub const FOREIGN_ROUNDS: u32 = 6;
/// How often the gauges are updated, whether or not a round runs.
const GAUGES_EVERY: Duration = Duration::from_secs(5);

impl Cloud {
    /// One background round over `named` and the ids admissions asked for lately.
    pub async fn refresh_round(&self, named: &HashSet<String>) {
        let idle = self.refresh * UNUSED_REFRESHES;
        let mut ids = self.cache.plan_round(named, self.now(), idle);
        // An id that cannot be one is never asked about, in the background either.
        ids.retain(|id| super::valid_id(id));
        // Another replica refreshes the rest: admissions re-ask what is older than a refresh,
        // and the audit's copy of a named one is read here every FOREIGN_ROUNDS rounds.
        let now = self.now();
        let foreign_every = self.refresh * FOREIGN_ROUNDS;
        ids.retain(|id| {
            self.shard.owns(id)
                || (named.contains(id)
                    && self
                        .cache
                        .age(id, now)
                        .is_none_or(|a| a + self.refresh / 2 >= foreign_every))
        });
        self.update_gauges();
        for id in ids {
            let mut backoff = Duration::from_millis(500);
            for attempt in 0..3 {
                match self.fetch(&id, None, super::Tokens::Background).await {
                    Ok(fact) => {
                        let n = self.cache.put(&id, fact, self.now(), named.contains(&id));
                        self.metrics.cached.set(n as i64);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(load_balancer = %id, error = %e, attempt, "cloud refresh failed; the last facts stay");
                        if !e.transient() || attempt == 2 {
                            break;
                        }
                        tokio::time::sleep(backoff).await;
                        backoff *= 4;
                    }
                }
            }
        }
        self.update_gauges();
    }

    pub fn update_gauges(&self) {
        self.metrics.cached.set(self.cache.len() as i64);
        self.metrics
            .oldest_fact_age
            .set(self.cache.oldest_age(self.now(), |id| self.shard.owns(id)) as i64);
    }

    /// Runs the refresh every `inventory.cloud.refresh`, for the ids `named` returns, and
    /// the gauges on their own beat (a long round does not hide stale facts).
    pub fn spawn_refresh(
        self: &Arc<Self>,
        named: impl Fn() -> HashSet<String> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut gauges = tokio::time::interval(GAUGES_EVERY);
            loop {
                gauges.tick().await;
                match me.upgrade() {
                    Some(c) => c.update_gauges(),
                    None => return,
                }
            }
        });
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.refresh);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.refresh_round(&named()).await;
            }
        })
    }
}
