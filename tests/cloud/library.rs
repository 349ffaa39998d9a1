//! The cloud source as a library, driven by hand: batches, CTyun's lists, unplaced errors decided by the list, Volcengine's region-wide listener lists.

use super::*;

/// A cloud source for `provider` driven by hand (no server, no refresh task).
pub(super) fn library_cloud(
    provider: Provider,
    mock: &Mock,
    creds: &std::path::Path,
    extra: &str,
) -> std::sync::Arc<lbguard::cloud::Cloud> {
    metered_cloud(provider, mock, creds, extra).0
}

/// A cloud source in the library, and the metrics it counts into.
fn metered_cloud(
    provider: Provider,
    mock: &Mock,
    creds: &std::path::Path,
    extra: &str,
) -> (
    std::sync::Arc<lbguard::cloud::Cloud>,
    lbguard::cloud::CloudMetrics,
) {
    let cfg =
        lbguard::engine::parse_config(&cloud_config(provider, mock, creds, extra), "t").unwrap();
    let metrics = lbguard::cloud::CloudMetrics::default();
    let cloud = lbguard::cloud::Cloud::new(
        provider,
        &cfg.inventory.cloud,
        cfg.cluster.id.clone(),
        lbguard::cloud::creds::CredStore::load(provider, Some(creds)).unwrap(),
        mock.ca_pem.as_bytes(),
        metrics.clone(),
        1,
    )
    .unwrap();
    (cloud, metrics)
}

/// How many calls to `provider`'s `op` the mock's `calls` answer counts.
pub(super) fn calls_to(calls: &Value, provider: impl std::fmt::Display, op: &str) -> u64 {
    calls["byOperation"][format!("{provider}/{op}")]
        .as_u64()
        .unwrap_or(0)
}

/// How many requests `metrics` counted for `operation` with `result`.
fn counted(
    metrics: &lbguard::cloud::CloudMetrics,
    provider: &'static str,
    operation: &'static str,
    result: &'static str,
) -> u64 {
    metrics
        .requests
        .get_or_create(&lbguard::cloud::ApiLabels {
            provider,
            operation,
            result,
        })
        .get()
}

/// The ids of `provider` in [`INV`].
fn inv_ids(provider: Provider) -> Vec<String> {
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    INV.lines()
        .filter_map(|l| l.split("id: ").nth(1)?.split(',').next())
        .filter(|id| file.get(provider, id).is_some())
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_reads_many_load_balancers_a_call_and_asks_for_the_unlisted_alone() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    // Listener lists one item a page: the batched lists follow their page tokens and markers.
    mock.control("paging", json!({"size": 1})).await;
    // Two listeners on one ELB: its listener list takes two pages.
    mock.control(
        "listener",
        json!({"id": "elb-1", "port": 9443, "protocol": "TCP"}),
    )
    .await;
    for (provider, batch_ops, single_ops) in [
        (
            Provider::Alibaba,
            &[
                "DescribeLoadBalancers",
                "DescribeLoadBalancerListeners",
                "ListLoadBalancers",
                "ListListeners",
                "ListServerGroups",
            ][..],
            &["DescribeLoadBalancerAttribute", "GetLoadBalancerAttribute"][..],
        ),
        (
            Provider::Huawei,
            &["ListLoadBalancers", "ListListeners"][..],
            &["ShowLoadBalancer"][..],
        ),
        (
            Provider::Volcengine,
            &["DescribeLoadBalancers", "DescribeNetworkLoadBalancers"][..],
            &[
                "DescribeLoadBalancerAttributes",
                "DescribeNetworkLoadBalancerAttributes",
            ][..],
        ),
        (
            Provider::Ctyun,
            &["list-loadbalancer", "list-listener"][..],
            &["show-loadbalancer"][..],
        ),
    ] {
        let creds = creds_dir(provider, AK, SK);
        let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
        let mut named: std::collections::HashSet<String> = inv_ids(provider).into_iter().collect();
        // Not listed by the cloud: asked alone, and only that answer says "not found".
        named.insert("lb-gone".into());
        named.insert("nlb-gone".into());
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, provider, op);
        for op in batch_ops {
            assert!(count(op) >= 1, "{provider}: no {op}: {calls}");
        }
        if provider == Provider::Huawei {
            assert!(
                count("ListListeners") >= 2,
                "the marker is followed: {calls}"
            );
        }
        // Alone: only the ids no list named (the CLB and the NLB that are gone).
        let alone: u64 = single_ops.iter().map(|op| count(op)).sum();
        // Huawei: v3, then v2 (a shared ELB only v2 knows), for each.
        let want_alone = if provider == Provider::Huawei { 4 } else { 2 };
        assert_eq!(alone, want_alone, "{provider}: {calls}");
        for id in inv_ids(provider) {
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| *i == id)
                .unwrap_or_else(|| panic!("{provider} {id}: not refreshed"))
                .1;
            let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
                panic!("{provider} {id}: {fact:?}");
            };
            let mut want = expressible(file.get(provider, &id).unwrap());
            if id == "elb-1" {
                want.listeners.push(lbguard::inventory::Listener {
                    port: 9443,
                    protocol: "TCP".into(),
                    owner: "external".into(),
                });
            }
            assert_eq!(
                sorted(got.clone()),
                sorted(want),
                "{provider} {id}: a batch reads what one call reads"
            );
        }
        for gone in ["lb-gone", "nlb-gone"] {
            let fact = cloud.snapshot().into_iter().find(|(i, _)| i == gone);
            assert!(
                matches!(
                    fact.as_ref().map(|f| f.1.as_ref()),
                    Some(lbguard::cloud::Fact::NotFound)
                ),
                "{provider} {gone}: {fact:?}"
            );
        }
    }
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_listeners_cannot_all_be_read_leaves_no_partial_facts() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    mock.control("paging", json!({"size": 1})).await;
    mock.fault(Some("loop"), 0.0).await;
    let creds = creds_dir(Provider::Huawei, AK, SK);
    let cloud = library_cloud(Provider::Huawei, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = inv_ids(Provider::Huawei).into_iter().collect();
    cloud.refresh_round(&named).await;
    // The batch's listener list repeats its marker: each ELB is then read alone, where the
    // list repeats it again. No ELB is stored with the listeners of the first page only.
    let with_listeners: Vec<String> = cloud
        .snapshot()
        .into_iter()
        .filter(|(_, f)| matches!(f.as_ref(), lbguard::cloud::Fact::Found(lb) if !lb.listeners.is_empty()))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(with_listeners, Vec::<String>::new());
    assert!(
        mock.calls("huawei/ShowLoadBalancer").await >= 1,
        "each ELB asked alone"
    );
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctyun_a_list_that_leaves_ids_out_or_ignores_them_costs_calls_not_facts() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let creds = creds_dir(Provider::Ctyun, AK, SK);
    let mut named: Vec<String> = inv_ids(Provider::Ctyun);
    named.sort();
    named.dedup();
    assert_eq!(named.len(), 4);
    // list-loadbalancer has no paging and no total: a server that cut its answer short
    // could not be told apart. Ids it leaves out are asked alone; an answer that names ids
    // nobody asked about (the filter ignored: the region's list) is not used at all.
    // One load balancer's listeners throttled once: that one is asked alone, the batch and
    // the others' listeners are not read again.
    for (fault, asked, lists, alone) in [
        ("listShort", 4, 1, 3),
        ("ignoreIds", 3, 1, 3),
        ("listenersFailOnce", 4, 1, 1),
    ] {
        mock.fault(Some(fault), 0.0).await;
        let cloud = library_cloud(Provider::Ctyun, &mock, creds.path(), "    qps: 1000\n");
        let named: std::collections::HashSet<String> = named[..asked].iter().cloned().collect();
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, "ctyun", op);
        assert_eq!(count("list-loadbalancer"), lists, "{fault}: {calls}");
        assert_eq!(count("show-loadbalancer"), alone, "{fault}: {calls}");
        let listener_calls = asked as u64 + u64::from(fault == "listenersFailOnce");
        assert_eq!(count("list-listener"), listener_calls, "{fault}: {calls}");
        assert_eq!(cloud.snapshot().len(), asked, "{fault}");
        for id in &named {
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| i == id)
                .unwrap()
                .1;
            let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
                panic!("{fault} {id}: {fact:?}");
            };
            let want = expressible(file.get(Provider::Ctyun, id).unwrap());
            assert_eq!(sorted(got.clone()), sorted(want), "{fault} {id}");
        }
        // A list that ignored its filter once is not asked again: one id at a time.
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let batches = if fault == "ignoreIds" { 0 } else { 1 };
        assert_eq!(
            calls_to(&calls, "ctyun", "list-loadbalancer"),
            batches,
            "{fault}, the next round: {calls}"
        );
    }
    // The region's list past the size lbguard reads (4 MiB): incomplete, each id alone.
    mock.fault(Some("ignoreIds"), 0.0).await;
    mock.control(
        "state",
        json!({"loadBalancers": [], "region": REGION, "projectId": "p-1"}),
    )
    .await;
    mock.control("bulk", json!({"provider": "ctyun", "count": 40000}))
        .await;
    let (cloud, metrics) = metered_cloud(Provider::Ctyun, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> =
        ["lb-bulk-7", "lb-bulk-39999"].map(String::from).into();
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    assert_eq!(mock.calls("ctyun/list-loadbalancer").await, 1);
    assert_eq!(mock.calls("ctyun/show-loadbalancer").await, 2);
    assert!(
        cloud
            .snapshot()
            .iter()
            .all(|(_, f)| matches!(f.as_ref(), lbguard::cloud::Fact::Found(_)))
            && cloud.snapshot().len() == 2
    );
    let incomplete = counted(&metrics, "ctyun", "ListLoadBalancer", "incomplete");
    assert_eq!(incomplete, 1, "the answer too large to read is counted");
    assert_eq!(
        counted(&metrics, "ctyun", "ListListeners", "incomplete"),
        0,
        "and only once"
    );
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// Volcengine publishes no code for a missing load balancer and CTyun no table of codes: a
/// look-up's error they cannot place is checked with the list filtered by the id, and only
/// an empty list says "gone".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unplaced_error_says_gone_only_when_the_list_by_its_id_is_empty() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    for (provider, fault, gone, lists) in [
        // Volcengine: every "not found" is checked.
        (Provider::Volcengine, None, &["clb-gone", "nlb-gone"][..], 1),
        (
            Provider::Volcengine,
            Some("otherNotFound"),
            &["clb-gone", "nlb-gone"][..],
            1,
        ),
        // CTyun: its provider's code is taken as said; another is checked.
        (Provider::Ctyun, None, &["lb-gone"][..], 0),
        (Provider::Ctyun, Some("otherNotFound"), &["lb-gone"][..], 1),
    ] {
        mock.fault(fault, 0.0).await;
        let creds = creds_dir(provider, AK, SK);
        let ids = inv_ids(provider)
            .into_iter()
            .chain(gone.iter().map(|g| g.to_string()));
        // One at a time, each in a cloud of its own: the single look-up is what decides.
        for id in ids {
            let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
            mock.control("reset", json!({})).await;
            cloud
                .refresh_round(&std::collections::HashSet::from([id.clone()]))
                .await;
            let calls = mock.control("calls", json!({})).await;
            let listed: u64 = [
                "DescribeLoadBalancers",
                "DescribeNetworkLoadBalancers",
                "list-loadbalancer",
            ]
            .iter()
            .map(|op| calls_to(&calls, provider, op))
            .sum();
            let fact = cloud
                .snapshot()
                .into_iter()
                .find(|(i, _)| *i == id)
                .unwrap()
                .1;
            if gone.contains(&id.as_str()) {
                assert_eq!(
                    *fact,
                    lbguard::cloud::Fact::NotFound,
                    "{provider} {fault:?} {id}"
                );
                assert_eq!(listed, lists, "{provider} {fault:?} {id}: {calls}");
            } else {
                assert!(
                    matches!(fact.as_ref(), lbguard::cloud::Fact::Found(_)),
                    "{provider} {fault:?} {id}: {fact:?}"
                );
                assert_eq!(listed, 0, "{provider} {fault:?} {id}: {calls}");
            }
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// A look-up whose error lbguard cannot place is decided by the list filtered by the id: an
/// id the list names gets its facts, one it does not name is gone, and a list that ignored
/// its filter (CTyun's is unpaged: perhaps cut short) decides nothing. Huawei: the shared
/// ELB's v2 list, after v2 answers a missing ELB without ELB's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_look_up_with_an_unplaced_error_is_decided_by_the_list_by_its_id() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let soon = || Duration::from_secs(5);
    for (provider, fault, decides) in [
        (Provider::Volcengine, "showFails", true),
        (Provider::Ctyun, "showFails", true),
        (Provider::Ctyun, "showFails+ignoreIds", false),
        // A list that fails decides nothing either.
        (Provider::Ctyun, "showFails+listFails", false),
        (Provider::Volcengine, "showFails+listFails", false),
        // Huawei's shared-ELB API answering a missing one as Neutron does (no ELB code).
        (Provider::Huawei, "neutron404", true),
    ] {
        mock.fault(Some(fault), 0.0).await;
        let creds = creds_dir(provider, AK, SK);
        let mut ids = inv_ids(provider);
        ids.sort();
        ids.dedup();
        for id in ids
            .iter()
            .map(String::as_str)
            .chain(["lb-gone", "nlb-gone"])
        {
            if provider != Provider::Volcengine && id.starts_with("nlb-") {
                continue;
            }
            let cloud = library_cloud(provider, &mock, creds.path(), "    qps: 1000\n");
            let got = cloud.get(id, soon(), false).await;
            let known = file.get(provider, id);
            match (decides, known, got.as_deref()) {
                (true, Some(lb), Ok(lbguard::cloud::Fact::Found(got))) => {
                    assert_eq!(sorted(got.clone()), sorted(expressible(lb)), "{fault} {id}")
                }
                (true, None, Ok(lbguard::cloud::Fact::NotFound)) => {}
                (false, _, Err(e)) => assert!(
                    ["Openapi.Gateway.Unavailable", "OperationDenied.Unknown"]
                        .iter()
                        .any(|code| e.to_string().contains(code)),
                    "{fault} {id}: the look-up's own error stands: {e}"
                ),
                other => panic!("{provider} {fault} {id}: {other:?}"),
            }
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// Volcengine: 40 CLBs (one listener each) and 4 NLBs (two each), all named.
fn volc_region() -> String {
    let mut inv = String::from("loadBalancers:\n");
    for i in 0..40 {
        inv += &format!(
            "  - {{id: clb-r{i}, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1, listeners: [{{port: {}, protocol: TCP, owner: external}}]}}\n",
            1000 + i
        );
    }
    for i in 0..4 {
        inv += &format!(
            "  - {{id: nlb-r{i}, provider: volcengine, kind: nlb, addressType: intranet, vpcId: vpc-1, listeners: [{{port: {}, protocol: TCP, owner: external}}, {{port: {}, protocol: UDP, owner: external}}]}}\n",
            2000 + i,
            3000 + i
        );
    }
    inv
}

/// Every fact of [`volc_region`] as the file says (and as one call per id reads it).
fn assert_volc_region(cloud: &lbguard::cloud::Cloud, inv: &str) {
    let file = Snapshot::parse(inv, "inv.yaml").unwrap();
    let snap = cloud.snapshot();
    assert_eq!(snap.len(), 44, "{snap:?}");
    for (id, fact) in snap {
        let lbguard::cloud::Fact::Found(got) = fact.as_ref() else {
            panic!("{id}: {fact:?}");
        };
        let want = expressible(file.get(Provider::Volcengine, &id).unwrap());
        assert_eq!(sorted(got.clone()), sorted(want), "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcengine_reads_the_regions_listeners_in_a_few_calls_not_one_per_load_balancer() {
    let inv = volc_region();
    let Some(mock) = Mock::start(&inv).await else {
        return;
    };
    let creds = creds_dir(Provider::Volcengine, AK, SK);
    let cloud = library_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = (0..40)
        .map(|i| format!("clb-r{i}"))
        .chain((0..4).map(|i| format!("nlb-r{i}")))
        .collect();
    // Pages of 10: the CLBs' 40 listeners take four pages, the NLBs' 8 one.
    mock.control("paging", json!({"size": 10})).await;
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    let count = |op: &str| calls_to(&calls, "volcengine", op);
    // One list per load balancer made 44 listener calls; the region's lists make 5.
    assert_eq!(count("DescribeListeners"), 4, "{calls}");
    assert_eq!(count("DescribeNLBListeners"), 1, "{calls}");
    // 40 CLBs twenty a call in pages of 10; 4 NLBs in one call.
    assert_eq!(count("DescribeLoadBalancers"), 4, "{calls}");
    assert_eq!(count("DescribeNetworkLoadBalancers"), 1, "{calls}");
    assert_eq!(all_calls(&mock).await, 10, "{calls}");
    assert_volc_region(&cloud, &inv);

    // 21 CLBs: a batch of 20 and one alone, whose listeners the region's list has too.
    let cloud = library_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
    let named: std::collections::HashSet<String> = (0..21).map(|i| format!("clb-r{i}")).collect();
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    assert_eq!(
        calls["byOperation"]["volcengine/DescribeListeners"], 4,
        "{calls}"
    );
    assert_eq!(
        calls["byOperation"]["volcengine/DescribeLoadBalancers"],
        2 + 1,
        "{calls}"
    );
    assert_eq!(all_calls(&mock).await, 7, "{calls}");
    assert_eq!(cloud.snapshot().len(), 21);
    mock.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcengine_region_listener_lists_that_cannot_be_used_fall_back_per_load_balancer() {
    let inv = volc_region();
    let Some(mock) = Mock::start(&inv).await else {
        return;
    };
    let creds = creds_dir(Provider::Volcengine, AK, SK);
    let named: std::collections::HashSet<String> = (0..40)
        .map(|i| format!("clb-r{i}"))
        .chain((0..4).map(|i| format!("nlb-r{i}")))
        .collect();
    type Counted = &'static [(&'static str, &'static str, u64)];
    let cases: [(&str, u64, u64, u64, Counted); 2] = [
        // The NLBs' list repeats its token (two pages); the CLBs' list takes more pages
        // (40, one a page) than the calls it would save (20): one page. No load balancer
        // is stored with the listeners of the pages read before.
        ("loop", 1, 1, 2, &[("ListListeners", "incomplete", 2)]),
        // A policy that grants the listener lists only with a LoadBalancerId: the
        // region-wide lists are refused (AccessDenied, not retried).
        (
            "regionListenersDenied",
            100,
            1,
            1,
            &[
                ("DescribeListeners", "auth_error", 1),
                ("DescribeNLBListeners", "auth_error", 1),
            ],
        ),
    ];
    for (fault, page, clb_region, nlb_region, want) in cases {
        mock.control("paging", json!({"size": page})).await;
        mock.fault(Some(fault), 0.0).await;
        let (cloud, metrics) =
            metered_cloud(Provider::Volcengine, &mock, creds.path(), "    qps: 1000\n");
        mock.control("reset", json!({})).await;
        cloud.refresh_round(&named).await;
        let calls = mock.control("calls", json!({})).await;
        let count = |op: &str| calls_to(&calls, "volcengine", op);
        // The region-wide calls, then one list per load balancer.
        assert_eq!(
            count("DescribeListeners"),
            clb_region + 40,
            "{fault}: {calls}"
        );
        assert_eq!(
            count("DescribeNLBListeners"),
            nlb_region + 4,
            "{fault}: {calls}"
        );
        assert_volc_region(&cloud, &inv);
        for (operation, result, n) in want {
            assert_eq!(
                counted(&metrics, "volcengine", operation, result),
                *n,
                "{fault}: {operation} {result}"
            );
        }
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}
