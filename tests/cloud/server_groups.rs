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
    assert_eq!(got.server_groups.as_ref().map(Vec::len), Some(2));
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
