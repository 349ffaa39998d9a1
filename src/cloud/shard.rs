//! The fleet shares one refresh: each replica holds a Lease named after its pod in its own
//! namespace, renewed every [`RENEW`]; the live replicas are the unexpired Leases of the same
//! fleet, and each id belongs to one of them by rendezvous hashing. A replica refreshes only
//! the ids it owns; an admission that finds a fact it does not own older than the refresh
//! interval asks the cloud again, and the audit's copy of the others' ids is read once in
//! `refresh::FOREIGN_ROUNDS` rounds. Without Leases (no cluster, or they cannot be read) a
//! replica refreshes everything, as one replica would.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};

/// Label on every replica's Lease; its value names the fleet (the release).
pub const FLEET_LABEL: &str = "lbguard.io/refresh-fleet";
/// How often a replica renews its Lease and reads the others'.
pub const RENEW: Duration = Duration::from_secs(10);
/// A Lease not renewed for this long is a gone replica's.
pub const LEASE_SECONDS: i32 = 30;

/// 64-bit FNV-1a, then a finalizer so near keys spread: stable across builds and replicas.
fn hash(replica: &str, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in replica.bytes().chain([0]).chain(id.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The replica that owns `id` among `live` (rendezvous hashing: when a replica leaves, only
/// its ids move).
pub fn owner<'a>(id: &str, live: &'a [String]) -> Option<&'a str> {
    live.iter()
        .max_by_key(|r| (hash(r, id), r.as_str()))
        .map(String::as_str)
}

/// Who this replica is and who is live, as the Leases said last; `None`: refresh everything.
#[derive(Debug, Default)]
pub struct Shard {
    members: Mutex<Option<(String, Vec<String>)>>,
}

impl Shard {
    /// Sets this replica and the live ones (`None`: no fleet known, own everything).
    pub fn set(&self, members: Option<(String, Vec<String>)>) {
        *self.members.lock().unwrap_or_else(|p| p.into_inner()) = members;
    }

    /// Whether this replica refreshes `id`.
    pub fn owns(&self, id: &str) -> bool {
        let m = self.members.lock().unwrap_or_else(|p| p.into_inner());
        match m.as_ref() {
            None => true,
            Some((me, live)) => owner(id, live).is_none_or(|o| o == me),
        }
    }

    /// The live replicas (empty: no fleet known).
    pub fn live(&self) -> Vec<String> {
        let m = self.members.lock().unwrap_or_else(|p| p.into_inner());
        m.as_ref().map(|(_, l)| l.clone()).unwrap_or_default()
    }
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// One replica's Lease in the fleet.
pub struct Membership {
    api: Api<Lease>,
    pod: String,
    fleet: String,
    /// Set when the replica stops: the Lease is not renewed again.
    left: AtomicBool,
}

impl Membership {
    pub fn new(client: kube::Client, namespace: &str, pod: &str, fleet: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            pod: pod.into(),
            fleet: fleet.into(),
            left: AtomicBool::new(false),
        }
    }

    fn lease(&self) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.pod.clone()),
                labels: Some(BTreeMap::from([
                    (FLEET_LABEL.to_string(), self.fleet.clone()),
                    (
                        "app.kubernetes.io/managed-by".to_string(),
                        "lbguard".to_string(),
                    ),
                ])),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.pod.clone()),
                lease_duration_seconds: Some(LEASE_SECONDS),
                renew_time: Some(now()),
                ..Default::default()
            }),
        }
    }

    /// Renews this replica's Lease (creating it first) and returns the live replicas,
    /// sorted, this one included.
    pub async fn renew(&self) -> Result<Vec<String>, kube::Error> {
        let mut wanted = self.lease();
        match self.api.get_opt(&self.pod).await? {
            None => {
                self.api.create(&PostParams::default(), &wanted).await?;
            }
            Some(old) => {
                wanted.metadata.resource_version = old.metadata.resource_version;
                self.api
                    .replace(&self.pod, &PostParams::default(), &wanted)
                    .await?;
            }
        }
        let list = self
            .api
            .list(&ListParams::default().labels(&format!("{FLEET_LABEL}={}", self.fleet)))
            .await?;
        let t = Timestamp::now();
        let mut live: Vec<String> = list
            .items
            .iter()
            .filter(|l| {
                l.metadata.labels.as_ref().and_then(|m| m.get(FLEET_LABEL)) == Some(&self.fleet)
            })
            .filter(|l| {
                let Some(s) = l.spec.as_ref() else {
                    return false;
                };
                let secs = s.lease_duration_seconds.unwrap_or(LEASE_SECONDS);
                s.renew_time
                    .as_ref()
                    .is_some_and(|r| t.duration_since(r.0).as_secs_f64() < f64::from(secs.max(1)))
            })
            .filter_map(|l| l.metadata.name.clone())
            .collect();
        if !live.contains(&self.pod) {
            live.push(self.pod.clone());
        }
        live.sort();
        Ok(live)
    }

    /// Deletes this replica's Lease (at shutdown: its ids move at once).
    pub async fn leave(&self) {
        self.left.store(true, Ordering::SeqCst);
        // Bounded: an unreachable API server must not hold up the shutdown; the Lease expires.
        let params = DeleteParams::default();
        let delete = self.api.delete(&self.pod, &params);
        match tokio::time::timeout(Duration::from_secs(2), delete).await {
            Ok(Ok(_)) => tracing::debug!("refresh Lease deleted"),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "could not delete the refresh Lease; it expires")
            }
            Err(_) => tracing::debug!("deleting the refresh Lease timed out; it expires"),
        }
    }

    /// Renews every [`RENEW`] and keeps `shard` current. When the Leases cannot be read the
    /// replica refreshes everything, and says so once.
    pub fn spawn(self: Arc<Self>, shard: Arc<Shard>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut alone = false;
            while !self.left.load(Ordering::SeqCst) {
                let renewed = tokio::time::timeout(RENEW, self.renew()).await;
                if self.left.load(Ordering::SeqCst) {
                    // A renewal that raced the shutdown put the Lease back.
                    self.leave().await;
                    return;
                }
                match renewed {
                    Ok(Ok(live)) => {
                        if alone {
                            tracing::info!(
                                replicas = live.len(),
                                "refresh Leases readable again; sharing the cloud refresh"
                            );
                            alone = false;
                        }
                        shard.set(Some((self.pod.clone(), live)));
                    }
                    r => {
                        let error = match r {
                            Ok(Err(e)) => e.to_string(),
                            _ => "the API server did not answer".into(),
                        };
                        if !alone {
                            tracing::warn!(%error, "cannot read the refresh Leases; this replica refreshes every load balancer");
                            alone = true;
                        }
                        shard.set(None);
                    }
                }
                tokio::time::sleep(RENEW).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("lbguard-7d9f-{i}")).collect()
    }

    #[test]
    fn ids_spread_evenly_over_the_replicas() {
        let live = replicas(3);
        let mut counts = BTreeMap::new();
        for i in 0..6000 {
            *counts
                .entry(owner(&format!("lb-{i:08x}"), &live).unwrap())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 3);
        for (r, n) in counts {
            assert!((1700..=2300).contains(&n), "{r} owns {n} of 6000");
        }
    }

    #[test]
    fn when_a_replica_leaves_only_its_ids_move() {
        let live = replicas(3);
        let left: Vec<String> = live.iter().filter(|r| *r != &live[1]).cloned().collect();
        let mut moved = 0;
        for i in 0..3000 {
            let id = format!("lb-{i}");
            let before = owner(&id, &live).unwrap();
            let after = owner(&id, &left).unwrap();
            if before != live[1] {
                assert_eq!(before, after, "{id} moved though its owner stayed");
            } else {
                moved += 1;
            }
        }
        assert!(moved > 700, "the leaving replica owned {moved}");
        // The order replicas are listed in does not matter.
        let mut rev = live.clone();
        rev.reverse();
        assert_eq!(owner("lb-1", &live), owner("lb-1", &rev));
        assert_eq!(owner("lb-1", &[]), None);
    }

    #[test]
    fn without_a_fleet_a_replica_owns_everything() {
        let s = Shard::default();
        assert!(s.owns("lb-1") && s.owns("lb-2"));
        s.set(Some(("a".into(), vec!["a".into(), "b".into()])));
        let mine = (0..100).filter(|i| s.owns(&format!("lb-{i}"))).count();
        assert!((25..=75).contains(&mine), "a owns {mine} of 100");
        s.set(None);
        assert!(s.owns("lb-1") && s.owns("lb-2"));
    }

    #[tokio::test]
    async fn replicas_see_each_other_and_ignore_expired_leases() {
        let store = crate::claims::memory::MemoryLeases::new();
        let a = Membership::new(store.client(), "lbguard-system", "pod-a", "lbguard");
        let b = Membership::new(store.client(), "lbguard-system", "pod-b", "lbguard");
        let other = Membership::new(store.client(), "lbguard-system", "pod-x", "another");
        assert_eq!(a.renew().await.unwrap(), vec!["pod-a"]);
        other.renew().await.unwrap();
        assert_eq!(b.renew().await.unwrap(), vec!["pod-a", "pod-b"]);
        // A gone pod's Lease, not renewed for longer than its duration.
        let mut gone = a.lease();
        gone.metadata.name = Some("pod-gone".into());
        gone.spec.as_mut().unwrap().renew_time = Some(MicroTime(
            Timestamp::now() - std::time::Duration::from_secs(120),
        ));
        store.put(gone);
        assert_eq!(a.renew().await.unwrap(), vec!["pod-a", "pod-b"]);
        b.leave().await;
        assert_eq!(a.renew().await.unwrap(), vec!["pod-a"]);
    }

    #[tokio::test]
    async fn leaving_does_not_wait_for_a_hung_api_server() {
        let store = crate::claims::memory::MemoryLeases::new();
        let a = Membership::new(store.client(), "lbguard-system", "pod-a", "lbguard");
        a.renew().await.unwrap();
        store.set_delay(Duration::from_secs(60));
        let t = std::time::Instant::now();
        a.leave().await;
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
}
