//! The attributes a cloud controller fixes when it creates a load balancer, as data:
//! `lb-attributes-immutable` protects them on an update (`immutable`), and ACK's
//! controllers compare them with the load balancer a Service reuses (`reuse`).

/// The attributes `lb-attributes-immutable` protects, with the CCM's default.
/// An attribute the controller fixes when it creates the load balancer.
pub(super) struct Fixed {
    pub(super) suffix: &'static str,
    /// What the controller assumes when the annotation is absent.
    pub(super) default: Option<&'static str>,
    /// The CLB controller's error when it changes (CCE: what its table says, `fixed_why`);
    /// `None`: not compared.
    pub(super) clb: Option<&'static str>,
    /// ACK NLB: the error when it changes (compared in any case), or `None`.
    pub(super) nlb: Option<&'static str>,
}

pub(super) const fn fixed(
    suffix: &'static str,
    default: Option<&'static str>,
    clb: &'static str,
) -> Fixed {
    Fixed {
        suffix,
        default,
        clb: Some(clb),
        nlb: None,
    }
}

/// kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/
/// loadbalancer.go:128-154 and nlbv2/loadbalancer.go:187-206, 209-228.
pub(super) static ALIBABA_FIXED: &[Fixed] = &[
    // An NLB's address type changes in place: `plan-convert` warns.
    fixed(
        "address-type",
        Some("internet"),
        "alicloud: can not change LoadBalancer AddressType once created. delete and retry",
    ),
    fixed(
        "master-zoneid",
        None,
        "alicloud: can not change LoadBalancer master zone id once created",
    ),
    fixed(
        "slave-zoneid",
        None,
        "alicloud: can not change LoadBalancer slave zone id once created",
    ),
    Fixed {
        nlb: Some("AddressIpVersion cannot be changed"),
        ..fixed(
            "ip-version",
            Some("ipv4"),
            "alicloud: can not change LoadBalancer AddressIPVersion once created",
        )
    },
    Fixed {
        nlb: Some("ResourceGroupId cannot be changed"),
        ..fixed(
            "resource-group-id",
            None,
            "alicloud: can not change ResourceGroupId once created",
        )
    },
    fixed(
        "network-type",
        None,
        "alicloud: can not change LoadBalancer network type once created",
    ),
    fixed(
        "ip",
        None,
        "alicloud: can not change LoadBalancer address once created",
    ),
    // NLB zone-maps change in place (`plan-convert`); CLB has no such annotation.
];
