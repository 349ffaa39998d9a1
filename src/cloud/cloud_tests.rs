use super::*;
use crate::vocab::ctx::{Inventory, Lookup};
use crate::vocab::lb::LoadBalancer;

fn lb(id: &str) -> LoadBalancer {
    LoadBalancer {
        id: id.into(),
        provider: Provider::Alibaba,
        kind: None,
        address_type: None,
        vpc_id: Some("vpc-cloud".into()),
        created_by: None,
        listeners: Vec::new(),
        attached_from: Vec::new(),
        flavors: Vec::new(),
        ..crate::inventory::LoadBalancer::new("", Provider::Alibaba)
    }
}

#[test]
fn the_view_says_what_the_cloud_said_and_the_file_wins_in_the_inventory() {
    let file = Snapshot::parse(
        "loadBalancers:\n  - {id: lb-1, provider: alibaba, vpcId: vpc-file}\n",
        "f.yaml",
    )
    .unwrap();
    let facts = HashMap::from([
        ("lb-1".to_string(), Ok(Arc::new(Fact::Found(lb("lb-1"))))),
        ("lb-2".to_string(), Ok(Arc::new(Fact::Found(lb("lb-2"))))),
        ("lb-3".to_string(), Ok(Arc::new(Fact::NotFound))),
        (
            "lb-4".to_string(),
            Err("HTTP 503 ServiceUnavailable".to_string()),
        ),
        ("a/b".to_string(), Ok(Arc::new(Fact::Invalid))),
    ]);
    let v = View::fixed(Provider::Alibaba, "cn-beijing", None, facts);
    let inv = crate::inventory::choose(Some(&v), Some(&file));
    assert_eq!(
        inv.get(Provider::Alibaba, "lb-1")
            .unwrap()
            .vpc_id
            .as_deref(),
        Some("vpc-file")
    );
    assert_eq!(
        v.get(Provider::Alibaba, "lb-1").unwrap().vpc_id.as_deref(),
        Some("vpc-cloud"),
        "the view itself holds only the cloud's facts"
    );
    assert_eq!(
        inv.get(Provider::Alibaba, "lb-2")
            .unwrap()
            .vpc_id
            .as_deref(),
        Some("vpc-cloud")
    );
    assert_eq!(
        inv.lookup(Provider::Alibaba, "lb-3"),
        Lookup::NotFound {
            region: "cn-beijing"
        }
    );
    assert_eq!(
        inv.lookup(Provider::Alibaba, "lb-4"),
        Lookup::Unavailable("HTTP 503 ServiceUnavailable")
    );
    assert_eq!(inv.lookup(Provider::Alibaba, "a/b"), Lookup::Invalid);
    assert_eq!(inv.lookup(Provider::Alibaba, "lb-5"), Lookup::Unknown);
    assert_eq!(inv.lookup(Provider::Ctyun, "lb-2"), Lookup::Unknown);
}

#[test]
fn ids_of_impossible_shape_are_refused() {
    for ok in [
        "lb-2ze7abc",
        "nlb-x.y",
        "1f0d2a3c-aaaa-bbbb-cccc-0123456789ab",
        "elb_1",
    ] {
        assert!(valid_id(ok), "{ok}");
    }
    let long = "a".repeat(129);
    for bad in [
        "",
        "a/b",
        "lb 1",
        "lb-1?x",
        "../x",
        "lb-%2F",
        long.as_str(),
        "负载",
    ] {
        assert!(!valid_id(bad), "{bad}");
    }
}
