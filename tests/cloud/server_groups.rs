//! ACK NLB server groups in the cloud source: read by VPC with ListServerGroups, a failed
//! list an error.

use super::library::{calls_to, library_cloud};
use super::*;

/// ACK NLB: one look-up reads the NLB's VPC's server groups (ListServerGroups, checked
/// against the NLB SDK's models); a list that fails fails the look-up, never "none" or
/// "not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nlb_look_up_reads_its_vpcs_server_groups_and_a_failed_list_is_an_error() {
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let file = Snapshot::parse(INV, "inv.yaml").unwrap();
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let soon = || Duration::from_secs(5);
    let cloud = library_cloud(Provider::Alibaba, &mock, creds.path(), "    qps: 1000\n");
    let got = cloud.get("nlb-other-vpc", soon(), false).await;
    let Ok(lbguard::cloud::Fact::Found(got)) = got.as_deref() else {
        panic!("{got:?}");
    };
    let want = file.get(Provider::Alibaba, "nlb-other-vpc").unwrap();
    assert_eq!(got.server_groups, want.server_groups);
    assert_eq!(got.server_groups.as_ref().map(|g| g.len()), Some(2));
    let calls = mock.control("calls", json!({})).await;
    assert_eq!(
        calls_to(&calls, Provider::Alibaba, "ListServerGroups"),
        1,
        "{calls}"
    );
    mock.fault(Some("serverGroupsFail"), 0.0).await;
    let cloud = library_cloud(Provider::Alibaba, &mock, creds.path(), "    qps: 1000\n");
    match cloud.get("nlb-other-vpc", soon(), false).await.as_deref() {
        Err(e) => assert!(e.to_string().contains("ServiceUnavailable"), "{e}"),
        other => panic!("a failed server group list: {other:?}"),
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}

/// A server group made after the NLB's facts were cached: an admission that names it asks
/// the cloud again once the cached list is older than a fresh "not found" may be (15 s), and
/// a list that has it is used as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_group_the_cached_list_lacks_is_asked_again_once_not_fresh() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let Some(mock) = Mock::start(INV).await else {
        return;
    };
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let cfg = lbguard::engine::parse_config(
        &cloud_config(
            Provider::Alibaba,
            &mock,
            creds.path(),
            "    qps: 1000\n    refresh: 600s\n",
        ),
        "t",
    )
    .unwrap();
    let (base, offset) = (std::time::Instant::now(), Arc::new(AtomicU64::new(0)));
    let o = Arc::clone(&offset);
    let clock: lbguard::cloud::Clock =
        Arc::new(move || base + Duration::from_secs(o.load(Ordering::SeqCst)));
    let cloud = lbguard::cloud::Cloud::with_clock(
        Provider::Alibaba,
        &cfg.inventory.cloud,
        None,
        lbguard::cloud::creds::CredStore::load(Provider::Alibaba, Some(creds.path())).unwrap(),
        mock.ca_pem.as_bytes(),
        Default::default(),
        1,
        clock,
    )
    .unwrap();
    let soon = Duration::from_secs(5);
    let groups = |f: &lbguard::cloud::Fact| match f {
        lbguard::cloud::Fact::Found(lb) => lb
            .server_groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|g| g.id.clone())
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let id = "nlb-other-vpc";
    let first = cloud.get(id, soon, false).await.unwrap();
    assert_eq!(groups(&first), ["sgp-web", "sgp-ips"]);
    // The user makes sgp-new at the cloud.
    let with_new = INV.replace(
        "{id: sgp-ips, type: Ip}]",
        "{id: sgp-ips, type: Ip}, {id: sgp-new, type: Ip}]",
    );
    assert_ne!(with_new, INV);
    mock.load(&with_new).await;
    let need = ["sgp-new".to_string()];
    // Fresh: the cached list is used.
    let fact = cloud.get_needing(id, &need, soon, false).await.unwrap();
    assert!(!groups(&fact).contains(&"sgp-new".to_string()));
    // A list that has every named group is used however old.
    offset.store(60, Ordering::SeqCst);
    let have = ["sgp-web".to_string()];
    let fact = cloud.get_needing(id, &have, soon, false).await.unwrap();
    assert!(!groups(&fact).contains(&"sgp-new".to_string()));
    // Older than 15 s and lacking the named group: asked again.
    let fact = cloud.get_needing(id, &need, soon, false).await.unwrap();
    assert!(groups(&fact).contains(&"sgp-new".to_string()), "{fact:?}");
    mock.assert_clean().await;
}

/// 45 NLBs (`nlb-bulk-0` to `-44`) in one VPC with a server group each, a cloud reading them,
/// and their ids; the credentials directory lives as long as the last value.
async fn bulk_nlbs(
    mock: &Mock,
) -> (
    std::sync::Arc<lbguard::cloud::Cloud>,
    std::collections::HashSet<String>,
    tempfile::TempDir,
) {
    mock.control(
        "bulk",
        json!({"provider": "alibaba", "count": 45, "kind": "nlb", "vpcs": 1, "serverGroups": 1}),
    )
    .await;
    let creds = creds_dir(Provider::Alibaba, AK, SK);
    let cloud = library_cloud(Provider::Alibaba, mock, creds.path(), "    qps: 1000\n");
    let named = (0..45).map(|i| format!("nlb-bulk-{i}")).collect();
    (cloud, named, creds)
}

/// A background round over 45 NLBs in one VPC (three batches of 20): the VPC's server groups
/// are listed once for the round, not once a batch, and every NLB's fact holds the one list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_lists_a_vpcs_server_groups_once_and_its_nlbs_share_them() {
    let Some(mock) = Mock::start("loadBalancers: []").await else {
        return;
    };
    let (cloud, named, _creds) = bulk_nlbs(&mock).await;
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    let count = |op: &str| calls_to(&calls, Provider::Alibaba, op);
    assert_eq!(count("ListLoadBalancers"), 3, "{calls}");
    assert_eq!(count("ListServerGroups"), 1, "{calls}");
    let soon = Duration::from_secs(5);
    let mut lists = Vec::new();
    for id in ["nlb-bulk-0", "nlb-bulk-21", "nlb-bulk-44"] {
        match cloud.get(id, soon, false).await.as_deref() {
            Ok(lbguard::cloud::Fact::Found(lb)) => lists.push(lb.server_groups.clone().unwrap()),
            other => panic!("{id}: {other:?}"),
        }
    }
    assert_eq!(lists[0].len(), 45);
    assert!(lists.iter().all(|l| std::sync::Arc::ptr_eq(l, &lists[0])));
    // Served from the round's facts: no call since.
    let calls = mock.control("calls", json!({})).await;
    assert_eq!(
        calls_to(&calls, Provider::Alibaba, "ListServerGroups"),
        1,
        "{calls}"
    );
    mock.assert_clean().await;
}

/// A round whose `ListServerGroups` fails (503) caches nothing for its NLBs: the failure is
/// not kept as the VPC's list for later batches, and no NLB's fact says "no server groups".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_whose_server_group_list_fails_keeps_no_fact() {
    let Some(mock) = Mock::start("loadBalancers: []").await else {
        return;
    };
    let (cloud, named, _creds) = bulk_nlbs(&mock).await;
    mock.fault(Some("serverGroupsFail"), 0.0).await;
    mock.control("reset", json!({})).await;
    cloud.refresh_round(&named).await;
    let calls = mock.control("calls", json!({})).await;
    // Every batch asks again: a failed list is never shared as the VPC's.
    assert!(
        calls_to(&calls, Provider::Alibaba, "ListServerGroups") >= 3,
        "{calls}"
    );
    match cloud
        .get("nlb-bulk-21", Duration::from_secs(5), false)
        .await
        .as_deref()
    {
        Err(e) => assert!(e.to_string().contains("ServiceUnavailable"), "{e}"),
        other => panic!("a failed server group list: {other:?}"),
    }
    mock.fault(None, 0.0).await;
    mock.assert_clean().await;
}
