//! The `exceptions` benchmark: what N held `LBGuardException`s cost a request with a finding
//! (the look-up the webhook makes) and a watch event (the store's swap), and their memory.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use lbguard::cluster::ClusterState;
use lbguard::cluster::exceptions::ExceptionStore;
use lbguard::config::Config;
use lbguard::engine::exceptions::{Subject, apply};
use lbguard::engine::{EmptyInventory, Input, Operation, UserInfo, Versions, evaluate};
use lbguard::vocab::exceptions::{Exception, format_time};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cache::{percentile, service, status_kib};

#[derive(Debug, Serialize, Deserialize)]
pub struct Row {
    pub exceptions: usize,
    pub namespaces: usize,
    /// `apply` alone: the look-up a request with a finding makes.
    pub apply_p50_us: f64,
    pub apply_p99_us: f64,
    /// `evaluate` and `apply`, as the webhook runs them.
    pub total_p50_us: f64,
    pub total_p99_us: f64,
    /// One watch event: the store swapped for a new snapshot.
    pub swap_ms: f64,
    pub store_rss_mib: f64,
}

/// Exception `i`, in one of `namespaces`, naming two Services for one rule, as operators
/// write them: a reason of a sentence, an expiry a week after its creation.
fn exception(i: usize, namespaces: usize, now: SystemTime, rule: &str) -> Exception {
    let created = now - Duration::from_secs(3600);
    let object = json!({
        "apiVersion": "lbguard.io/v1alpha1", "kind": "LBGuardException",
        "metadata": {
            "name": format!("exc-{i:06}"),
            "namespace": format!("ns-{}", i % namespaces),
            "creationTimestamp": format_time(created),
        },
        "spec": {
            "services": {"names": [format!("svc-{i}"), format!("svc-{i}-canary")]},
            "rules": [rule],
            "reason": "The load balancer was set up by hand before lbguard; migration ticket OPS-1234.",
            "expires": format_time(created + Duration::from_secs(7 * 86400)),
        },
    });
    Exception::from_value(&object)
        .expect("an LBGuardException")
        .expect("a valid one")
}

/// `n` exceptions spread over `namespaces`; the probe's namespace is the last one.
pub fn measure(n: usize, namespaces: usize, requests: usize) -> Row {
    let namespaces = namespaces.max(1);
    let config = Config::default();
    let versions = Versions::from_config(&config);
    let state = ClusterState::new(config.provider);
    let now = SystemTime::now();
    // A Service with a finding: an address type Alibaba does not know.
    let mut probe = service(0);
    probe.metadata.name = Some("probe".into());
    probe.metadata.namespace = Some(format!("ns-{}", namespaces - 1));
    probe.metadata.annotations.get_or_insert_default().insert(
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type".into(),
        "public".into(),
    );
    let input =
        Input::new(Operation::Create, Some(probe), None, UserInfo::default()).expect("input");
    let found = evaluate(&input, &config, &versions, &state, &EmptyInventory);
    let rule = found
        .violations
        .iter()
        .find(|v| v.denies())
        .map(|v| v.rule)
        .expect("the probe is denied");

    let before = status_kib("VmRSS:");
    let mut all = BTreeMap::new();
    for i in 1..n {
        let e = exception(i, namespaces, now, rule);
        all.insert((e.namespace.clone(), e.name.clone()), e);
    }
    // The one that covers the probe, last in the store's order: every other is looked at.
    if n > 0 {
        let mut mine = exception(0, namespaces, now, rule);
        mine.namespace = format!("ns-{}", namespaces - 1);
        mine.name = "zz-probe".into();
        mine.spec.services.names = vec!["probe".into()];
        all.insert((mine.namespace.clone(), mine.name.clone()), mine);
    }
    let store = ExceptionStore::default();
    store.replace(&all);
    let store_rss = status_kib("VmRSS:") - before;

    let swaps = 20;
    let t = Instant::now();
    for _ in 0..swaps {
        store.replace(&all);
    }
    let swap_ms = t.elapsed().as_secs_f64() * 1e3 / swaps as f64;

    let (mut apply_us, mut total_us) = (Vec::new(), Vec::new());
    for _ in 0..requests {
        let t = Instant::now();
        let mut verdict = evaluate(&input, &config, &versions, &state, &EmptyInventory);
        let a = Instant::now();
        let held = store.snapshot();
        apply(
            &mut verdict,
            &Subject::of(&input),
            &held,
            &config,
            SystemTime::now(),
        );
        let done = Instant::now();
        apply_us.push((done - a).as_secs_f64() * 1e6);
        total_us.push((done - t).as_secs_f64() * 1e6);
        assert_eq!(
            verdict.allowed(),
            n > 0,
            "only the exception lets the probe in"
        );
    }
    apply_us.sort_by(f64::total_cmp);
    total_us.sort_by(f64::total_cmp);
    Row {
        exceptions: all.len(),
        namespaces,
        apply_p50_us: percentile(&apply_us, 0.50),
        apply_p99_us: percentile(&apply_us, 0.99),
        total_p50_us: percentile(&total_us, 0.50),
        total_p99_us: percentile(&total_us, 0.99),
        swap_ms,
        store_rss_mib: store_rss / 1024.0,
    }
}

pub fn print(rows: &[Row]) {
    println!(
        "| held exceptions | namespaces | look-up p50 | look-up p99 | engine and look-up p50 | p99 | one watch event | store RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs | {:.2} ms | {:.1} MiB |",
            r.exceptions,
            r.namespaces,
            r.apply_p50_us,
            r.apply_p99_us,
            r.total_p50_us,
            r.total_p99_us,
            r.swap_ms,
            r.store_rss_mib
        );
    }
}
