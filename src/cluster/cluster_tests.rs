use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::ClusterView;
use crate::providers::Provider::{Alibaba, Ctyun, Huawei};
use crate::providers::catalog;
use crate::testkit::{cfg, lb};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn users(state: &ClusterState, p: Provider, id: &str) -> Vec<String> {
    let mut out = Vec::new();
    state.lb_users(p, id, &mut out);
    let mut keys: Vec<String> = out.iter().map(LbUser::key).collect();
    keys.sort();
    keys
}

#[test]
fn apply_update_delete_and_relist_keep_the_index_right() {
    let state = ClusterState::new(cfg("").provider);
    let a = lb().named("shop", "a").pa(Ctyun, "id", "lb-1").build();
    let b = lb().named("shop", "b").pa(Ctyun, "id", "lb-1").build();
    state.apply_service(&a);
    state.apply_service(&b);
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a", "shop/b"]);
    // b moves to another LB: the index follows.
    let b2 = lb().named("shop", "b").pa(Ctyun, "id", "lb-2").build();
    state.apply_service(&b2);
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a"]);
    assert_eq!(users(&state, Ctyun, "lb-2"), ["shop/b"]);
    // a stops being a LoadBalancer: it leaves the index.
    state.apply_service(
        &lb()
            .named("shop", "a")
            .pa(Ctyun, "id", "lb-1")
            .type_("ClusterIP")
            .build(),
    );
    assert!(users(&state, Ctyun, "lb-1").is_empty());
    state.delete_service(&b2);
    assert!(users(&state, Ctyun, "lb-2").is_empty());
    assert_eq!(state.service_count(), 0);
    // A relist replaces everything.
    state.apply_service(&a);
    state.replace_services([&b]);
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/b"]);
    assert_eq!(state.service_count(), 1);
}

#[test]
fn projection_keeps_only_what_rules_read() {
    let mut s = lb()
        .named("shop", "a")
        .pa(Alibaba, "id", "lb-1")
        .ann("kubectl.kubernetes.io/last-applied-configuration", "{huge}")
        .etp("Local")
        .build();
    s.metadata.managed_fields = Some(vec![Default::default()]);
    let p = SvcProj::from_service(&s, "shop".into(), "a".into());
    assert_eq!(p.annotations.len(), 1);
    let back = p.to_service();
    assert_eq!(
        Svc::new(&back).annotation(&catalog(Alibaba).key("id")),
        Some("lb-1")
    );
    assert_eq!(Svc::new(&back).traffic_policy(), Some("Local"));
    assert!(back.metadata.managed_fields.is_none());
}

#[test]
fn tcp_and_udp_on_one_port_do_not_clash() {
    let state = ClusterState::new(cfg("").provider);
    state.apply_service(
        &lb()
            .named("shop", "tcp")
            .only_port(53, "TCP")
            .pa(Ctyun, "id", "lb-1")
            .build(),
    );
    let udp = lb()
        .named("shop", "udp")
        .only_port(53, "UDP")
        .pa(Ctyun, "id", "lb-1")
        .build();
    assert!(state.reserve(Svc::new(&udp), RESERVATION_TTL, &[]).is_ok());
    let tcp2 = lb()
        .named("shop", "tcp2")
        .only_port(53, "TCP")
        .pa(Ctyun, "id", "lb-1")
        .build();
    let e = state
        .reserve(Svc::new(&tcp2), RESERVATION_TTL, &[])
        .unwrap_err();
    assert_eq!(
        e,
        ["port 53/TCP on load balancer \"lb-1\" is held by shop/tcp"]
    );
}

#[test]
fn reservation_holds_until_the_watch_shows_the_service_or_it_expires() {
    let state = ClusterState::new(cfg("").provider);
    let a = lb().named("shop", "a").pa(Ctyun, "id", "lb-1").build();
    state.reserve(Svc::new(&a), RESERVATION_TTL, &[]).unwrap();
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a"]);
    // Re-admitting the same Service is not a conflict with itself.
    state.reserve(Svc::new(&a), RESERVATION_TTL, &[]).unwrap();
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a"]);
    // The watch shows it: the reservation gives way to the real entry (still one user).
    state.apply_service(&a);
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a"]);
    // An expired reservation holds nothing.
    let b = lb().named("shop", "b").pa(Ctyun, "id", "lb-2").build();
    state
        .reserve(Svc::new(&b), Duration::from_millis(0), &[])
        .unwrap();
    std::thread::sleep(Duration::from_millis(2));
    assert!(users(&state, Ctyun, "lb-2").is_empty());
    let c = lb().named("shop", "c").pa(Ctyun, "id", "lb-2").build();
    state.reserve(Svc::new(&c), RESERVATION_TTL, &[]).unwrap();
}

#[test]
fn a_repeated_admission_keeps_its_hold_a_changed_one_moves_it() {
    let state = ClusterState::new(cfg("").provider);
    let svc = |name: &str, port: i32| {
        lb().named("shop", name)
            .only_port(port, "TCP")
            .pa(Ctyun, "id", "lb-1")
            .build()
    };
    let (a, b) = (svc("a", 80), svc("b", 80));
    state.reserve(Svc::new(&a), RESERVATION_TTL, &[]).unwrap();
    // The same admission again: the hold stands, still one user, still exclusive.
    state.reserve(Svc::new(&a), RESERVATION_TTL, &[]).unwrap();
    assert_eq!(users(&state, Ctyun, "lb-1"), ["shop/a"]);
    assert!(state.reserve(Svc::new(&b), RESERVATION_TTL, &[]).is_err());
    // a moves to port 81: its hold moves with it, and 80 is free for b.
    state
        .reserve(Svc::new(&svc("a", 81)), RESERVATION_TTL, &[])
        .unwrap();
    state.reserve(Svc::new(&b), RESERVATION_TTL, &[]).unwrap();
    // A Service the watch shows on 81 since: the repeated admission of a now clashes.
    state.apply_service(&svc("d", 81));
    let e = state
        .reserve(Svc::new(&svc("a", 81)), RESERVATION_TTL, &[])
        .unwrap_err();
    assert_eq!(
        e,
        ["port 81/TCP on load balancer \"lb-1\" is held by shop/d"]
    );
}

#[test]
fn two_concurrent_admissions_for_one_port_one_wins() {
    for _ in 0..50 {
        let state = Arc::new(ClusterState::new(cfg("").provider));
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let (state, barrier) = (Arc::clone(&state), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let s = lb().named("shop", name).pa(Alibaba, "id", "lb-1").build();
                    barrier.wait();
                    state.reserve(Svc::new(&s), RESERVATION_TTL, &[]).is_ok()
                })
            })
            .collect();
        let wins: usize = handles
            .into_iter()
            .map(|h| usize::from(h.join().unwrap()))
            .sum();
        assert_eq!(wins, 1);
    }
}

#[test]
fn skip_managed_listener_services_share_ports() {
    let state = ClusterState::new(cfg("").provider);
    let skip = |n: &str| {
        lb().named("shop", n)
            .pa(Huawei, "id", "elb-1")
            .pa(Huawei, "skip-managed-listener", "true")
            .build()
    };
    state
        .reserve(Svc::new(&skip("a")), RESERVATION_TTL, &[])
        .unwrap();
    state
        .reserve(Svc::new(&skip("b")), RESERVATION_TTL, &[])
        .unwrap();
    let managed = lb().named("shop", "c").pa(Huawei, "id", "elb-1").build();
    assert!(
        state
            .reserve(Svc::new(&managed), RESERVATION_TTL, &[])
            .is_err()
    );
}

#[test]
fn nodes_and_ingresses() {
    use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};
    let state = ClusterState::new(cfg("").provider);
    let node = Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        status: Some(NodeStatus {
            addresses: Some(vec![NodeAddress {
                address: "10.0.0.5".into(),
                type_: "InternalIP".into(),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    state.apply_node(&node);
    assert_eq!(state.node_with_ip("10.0.0.5").as_deref(), Some("n1"));
    state.delete_node(&node);
    assert!(state.node_with_ip("10.0.0.5").is_none());

    let ing = Ingress {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            annotations: Some(
                [
                    ("kubernetes.io/elb.id".to_string(), "elb-1".to_string()),
                    ("kubernetes.io/elb.port".to_string(), "8080".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    state.apply_ingress(&ing);
    let mut out = Vec::new();
    state.ingresses_on("elb-1", &mut out);
    assert_eq!(
        out,
        [IngressUse {
            namespace: "shop".into(),
            name: "web".into(),
            ports: vec![8080]
        }]
    );
    state.replace_ingresses([]);
    out.clear();
    state.ingresses_on("elb-1", &mut out);
    assert!(out.is_empty());
}

#[test]
fn health_tracks_sync_and_breakage() {
    let state = ClusterState::new(cfg("").provider);
    assert!(state.synced());
    state.expect("services");
    assert!(!state.synced());
    state.mark_synced("services");
    assert!(state.synced());
    assert!(state.stale_for().is_none());
    state.mark_broken();
    assert!(state.stale_for().is_some());
    state.mark_healthy();
    assert!(state.stale_for().is_none());
}

#[test]
fn an_update_tolerates_clashes_its_live_object_already_had() {
    let state = ClusterState::new(cfg("").provider);
    let a = lb().named("shop", "a").pa(Ctyun, "id", "lb-1").build();
    let b = lb().named("shop", "b").pa(Ctyun, "id", "lb-1").build();
    state.apply_service(&a);
    state.apply_service(&b);
    // b is updated (a label, say): its clash with a predates the update.
    let tolerate = state.clashes(Svc::new(&b));
    assert_eq!(
        tolerate,
        ["port 80/TCP on load balancer \"lb-1\" is held by shop/a"]
    );
    assert!(
        state
            .reserve(Svc::new(&b), RESERVATION_TTL, &tolerate)
            .is_ok()
    );
    // A new Service gets no such pass.
    let c = lb().named("shop", "c").pa(Ctyun, "id", "lb-1").build();
    assert!(state.reserve(Svc::new(&c), RESERVATION_TTL, &[]).is_err());
}

#[test]
fn the_region_is_the_one_most_nodes_are_labelled_with() {
    let state = ClusterState::new(cfg("").provider);
    assert_eq!(state.region(), None);
    let node = |name: &str, region: Option<&str>| Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: region
                .map(|r| [("topology.kubernetes.io/region".to_string(), r.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    state.apply_node(&node("n1", Some("cn-beijing")));
    state.apply_node(&node("n2", Some("cn-beijing")));
    state.apply_node(&node("n3", Some("cn-hangzhou")));
    state.apply_node(&node("n4", None));
    assert_eq!(state.region().as_deref(), Some("cn-beijing"));
    state.delete_node(&node("n1", None));
    state.apply_node(&node("n2", None));
    assert_eq!(state.region().as_deref(), Some("cn-hangzhou"));
}

#[test]
fn load_balancer_ids_named_by_cached_services() {
    let config = cfg("provider: alibaba\n");
    let svc = |name: &str, id: &str| {
        crate::testkit::lb()
            .named("shop", name)
            .pa(Alibaba, "id", id)
            .build()
    };
    let state = crate::testkit::cluster_with(
        &config,
        &[svc("a", "lb-1"), svc("b", "lb-2"), svc("c", "lb-1")],
    );
    let ids = state.lb_ids(Alibaba);
    assert_eq!(ids.len(), 2);
    assert!(ids.contains("lb-1") && ids.contains("lb-2"));
    assert!(state.lb_ids(Ctyun).is_empty());
}
