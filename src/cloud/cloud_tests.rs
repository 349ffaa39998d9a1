use super::*;

#[tokio::test]
async fn the_bucket_gives_qps_tokens_and_refuses_past_the_deadline() {
    // A slow bucket (a token every 10 s), so a stalled test host cannot refill it.
    let b = Bucket::new(0.1);
    let far = Some(Instant::now() + Duration::from_secs(60));
    assert!(b.take(far).await, "a burst of one");
    let soon = Instant::now() + Duration::from_millis(100);
    assert!(!b.take(Some(soon)).await, "no second token within 100 ms");
    let b = Bucket::new(2.0);
    assert!(b.take(far).await && b.take(far).await);
    let start = Instant::now();
    assert!(b.take(far).await);
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    // The background leaves half the burst to admissions.
    let b = Bucket::new(4.0);
    assert!(b.take(None).await && b.take(None).await);
    let start = Instant::now();
    assert!(
        b.take(None).await,
        "waits for a third token above the reserve"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    let now = Some(Instant::now() + Duration::from_millis(1));
    assert!(b.take(now).await, "admissions use the reserve");
    // Five replicas sharing 2 qps: one token at first, the next 2.5 s later.
    let shared = Bucket::new(2.0 / 5.0);
    assert!(shared.take(None).await);
    let start = Instant::now();
    assert!(shared.take(None).await);
    assert!(
        start.elapsed() >= Duration::from_millis(2400),
        "{:?}",
        start.elapsed()
    );
}

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
    }
}

#[test]
fn the_file_overrides_the_cloud_and_errors_are_unavailable() {
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
    ]);
    let v = View::fixed(Provider::Alibaba, "cn-beijing", Some(Arc::new(file)), facts);
    assert_eq!(
        v.get(Provider::Alibaba, "lb-1").unwrap().vpc_id.as_deref(),
        Some("vpc-file")
    );
    assert_eq!(
        v.get(Provider::Alibaba, "lb-2").unwrap().vpc_id.as_deref(),
        Some("vpc-cloud")
    );
    assert_eq!(
        v.lookup(Provider::Alibaba, "lb-3"),
        Lookup::NotFound {
            region: "cn-beijing"
        }
    );
    assert_eq!(
        v.lookup(Provider::Alibaba, "lb-4"),
        Lookup::Unavailable("HTTP 503 ServiceUnavailable")
    );
    assert_eq!(v.lookup(Provider::Alibaba, "lb-5"), Lookup::Unknown);
    assert_eq!(v.lookup(Provider::Ctyun, "lb-2"), Lookup::Unknown);
}

#[test]
fn status_errors_are_classified() {
    assert!(matches!(
        status_error(429, "x", ""),
        CloudError::Throttled(_)
    ));
    assert!(matches!(status_error(403, "x", ""), CloudError::Auth(_)));
    assert!(matches!(status_error(502, "x", ""), CloudError::Server(_)));
    assert!(matches!(status_error(400, "x", "m"), CloudError::Other(m) if m == "HTTP 400 x: m"));
}

#[test]
fn a_missing_key_is_not_a_missing_load_balancer() {
    assert!(load_balancer_missing(404, ""));
    assert!(load_balancer_missing(400, "InvalidLoadBalancer.NotFound"));
    assert!(load_balancer_missing(200, "Elb.LoadBalancer.NotFound"));
    assert!(!load_balancer_missing(404, "InvalidAccessKey.NotFound"));
    assert!(!load_balancer_missing(400, "InvalidAccessKeyId.NotFound"));
    assert!(!load_balancer_missing(400, "InvalidSecurityToken.NotFound"));
    assert!(!load_balancer_missing(500, "InternalError"));
    assert!(about_credentials("SignatureDoesNotMatch"));
    assert!(!about_credentials("Throttling.User"));
}
