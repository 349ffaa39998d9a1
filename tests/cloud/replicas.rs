//! Replicas sharing the refresh through their Leases.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_leases_make_the_calls_of_one() {
    use lbguard::cloud::shard::Membership;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.control("bulk", json!({"provider": "alibaba", "count": 60}))
        .await;
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let cfg = lbguard::engine::parse_config(
        &cloud_config(
            Provider::Alibaba,
            &mock,
            creds.path(),
            "    qps: 10000\n    refresh: 60s\n",
        ),
        "t",
    )
    .unwrap();
    let (base, offset) = (Instant::now(), Arc::new(AtomicU64::new(0)));
    let o = Arc::clone(&offset);
    let clock: lbguard::cloud::Clock =
        Arc::new(move || base + Duration::from_secs(o.load(Ordering::SeqCst)));
    let replica = || {
        lbguard::cloud::Cloud::with_clock(
            Provider::Alibaba,
            &cfg.inventory.cloud,
            None,
            lbguard::cloud::creds::CredStore::load(Provider::Alibaba, Some(creds.path())).unwrap(),
            mock.ca_pem.as_bytes(),
            Default::default(),
            2,
            Arc::clone(&clock),
        )
        .unwrap()
    };
    let named: std::collections::HashSet<String> =
        (0..60).map(|i| format!("lb-bulk-{i}")).collect();

    // One replica alone refreshes every load balancer, ten a call (DescribeLoadBalancers
    // takes ten ids, its listener list ten load balancers).
    mock.control("reset", json!({})).await;
    replica().refresh_round(&named).await;
    let one = all_calls(&mock).await;
    assert_eq!(
        one, 12,
        "one replica made {one} calls for 60 load balancers"
    );
    assert_eq!(mock.calls("alibaba/DescribeLoadBalancers").await, 6);
    assert_eq!(mock.calls("alibaba/DescribeLoadBalancerListeners").await, 6);
    // Two calls for every batch of ten (or fewer).
    let batched = |n: usize| 2 * n.div_ceil(10) as u64;

    // Two replicas that see each other's Leases split them.
    mock.control("reset", json!({})).await;
    let leases = lbguard::claims::memory::MemoryLeases::new();
    let ma = Membership::new(leases.client(), "lbguard-system", "lbguard-a", "lbguard");
    let mb = Membership::new(leases.client(), "lbguard-system", "lbguard-b", "lbguard");
    ma.renew().await.unwrap();
    let live = mb.renew().await.unwrap();
    assert_eq!(live, vec!["lbguard-a", "lbguard-b"]);
    let (a, b) = (replica(), replica());
    a.shard().set(Some(("lbguard-a".into(), live.clone())));
    b.shard().set(Some(("lbguard-b".into(), live)));
    // The first round: each reads every load balancer once (the audit needs them all), its
    // own first.
    tokio::join!(a.refresh_round(&named), b.refresh_round(&named));
    assert_eq!(all_calls(&mock).await, 2 * one);
    assert_eq!((a.snapshot().len(), b.snapshot().len()), (60, 60));
    // The next rounds: each its own part, together one replica's calls.
    let at = |secs: u64| offset.store(secs, Ordering::SeqCst);
    at(30);
    let mine_b = named.iter().filter(|id| b.shard().owns(id)).count();
    assert!(
        (15..=45).contains(&mine_b),
        "an uneven split: b owns {mine_b} of 60"
    );
    let mut two = 0;
    let mut foreign = 0;
    for (replica, mine) in [(&a, 60 - mine_b), (&b, mine_b)] {
        mock.control("reset", json!({})).await;
        replica.refresh_round(&named).await;
        let c = mock.control("calls", json!({})).await;
        let asked = c["loadBalancersAsked"].as_u64().unwrap() as usize;
        assert!(asked >= mine, "{asked} asked, {mine} its own");
        assert_eq!(all_calls(&mock).await, batched(asked), "{c}");
        two += batched(asked);
        foreign += asked - mine;
    }
    // Besides its own, each reads a sixth of the others' (for the audit).
    assert!(foreign <= 20, "{foreign} of the others' read in one round");
    assert!(
        two <= one + 6,
        "two replicas, about one replica's calls: {two}"
    );
    // An admission's look-up is one call (DescribeLoadBalancerAttribute).
    let per_id = 1;

    // An admission on b for a load balancer a refreshes: cached while younger than a
    // refresh interval, then asked again (b's copy never grows older than that).
    let theirs = named.iter().find(|id| !b.shard().owns(id)).unwrap();
    let mine = named.iter().find(|id| b.shard().owns(id)).unwrap();
    let soon = || Duration::from_secs(5);
    mock.control("reset", json!({})).await;
    for _ in 0..3 {
        assert!(matches!(
            *b.get(theirs, soon(), false).await.unwrap(),
            lbguard::cloud::Fact::Found(_)
        ));
    }
    assert_eq!(all_calls(&mock).await, 0, "30 s old: still good");
    at(100);
    b.get(theirs, soon(), false).await.unwrap();
    b.get(theirs, soon(), false).await.unwrap();
    assert_eq!(
        all_calls(&mock).await,
        per_id,
        "a copy 70 s old or more is asked again, once"
    );
    // Its own ones the refresh keeps: no call from an admission.
    b.get(mine, soon(), false).await.unwrap();
    assert_eq!(all_calls(&mock).await, per_id);

    // Over six rounds b also reads each of the others' load balancers once for its audit, a
    // sixth of them a round: no round carries them all.
    let theirs_n = 60 - mine_b as u64;
    let mut asked = Vec::new();
    for round in 0..6 {
        at(340 + 60 * round);
        mock.control("reset", json!({})).await;
        b.refresh_round(&named).await;
        let c = mock.control("calls", json!({})).await;
        asked.push(c["loadBalancersAsked"].as_u64().unwrap() - mine_b as u64);
    }
    assert_eq!(
        asked.iter().sum::<u64>(),
        theirs_n,
        "each of theirs once: {asked:?}"
    );
    assert!(
        asked.iter().all(|n| *n < theirs_n / 2),
        "spread over the rounds: {asked:?}"
    );
    mock.assert_clean().await;
}
