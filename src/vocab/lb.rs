//! Load balancers as the inventory describes them, and listener protocol families.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::provider::Provider;

/// What each provider calls its load balancers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LbKind {
    /// CTyun ELB.
    Elb,
    /// Alibaba and Volcengine Classic Load Balancer.
    Clb,
    /// Alibaba and Volcengine Network Load Balancer.
    Nlb,
    /// Huawei shared ELB (`elb.class: union`).
    ElbShared,
    /// Huawei dedicated ELB (`elb.class: performance`).
    ElbDedicated,
}

impl LbKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LbKind::Elb => "elb",
            LbKind::Clb => "clb",
            LbKind::Nlb => "nlb",
            LbKind::ElbShared => "elb-shared",
            LbKind::ElbDedicated => "elb-dedicated",
        }
    }

    /// The kinds a provider's load balancers can have.
    pub fn of(provider: Provider) -> &'static [LbKind] {
        match provider {
            Provider::Ctyun => &[LbKind::Elb],
            Provider::Alibaba | Provider::Volcengine => &[LbKind::Clb, LbKind::Nlb],
            Provider::Huawei => &[LbKind::ElbShared, LbKind::ElbDedicated],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressType {
    Internet,
    Intranet,
}

impl AddressType {
    pub fn as_str(self) -> &'static str {
        match self {
            AddressType::Internet => "internet",
            AddressType::Intranet => "intranet",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CreatedBy {
    User,
    Ccm,
    Apiserver,
    Ingress,
}

impl CreatedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            CreatedBy::User => "user",
            CreatedBy::Ccm => "ccm",
            CreatedBy::Apiserver => "apiserver",
            CreatedBy::Ingress => "ingress",
        }
    }
}

/// An ACK CLB's instance charge type (metering method), as the CLB API answers
/// `InstanceChargeType` in DescribeLoadBalancers and DescribeLoadBalancerAttribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChargeType {
    /// Pay-by-specification: the instance has a spec (`slb.s1.small`...).
    PayBySpec,
    /// Pay-by-LCU: no spec.
    #[serde(rename = "PayByCLCU")]
    PayByClcu,
}

impl ChargeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeType::PayBySpec => "PayBySpec",
            ChargeType::PayByClcu => "PayByCLCU",
        }
    }

    /// The API's spelling (exact); anything else is not known.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "PayBySpec" => Some(ChargeType::PayBySpec),
            "PayByCLCU" => Some(ChargeType::PayByClcu),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Listener {
    pub port: u16,
    /// TCP, UDP, HTTP, HTTPS, TLS or TCPSSL (any case).
    pub protocol: String,
    /// `external`, the `namespace/name` of the Service that owns it, or
    /// `namespace/name (cluster ID)` for another cluster's Service.
    #[serde(default = "external")]
    pub owner: String,
}

fn external() -> String {
    "external".into()
}

/// An ACK NLB server group a listener of the load balancer can use: one in its VPC, as the
/// NLB API's ListServerGroups (2022-04-30) answers `ServerGroupId` and `ServerGroupType`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerGroup {
    /// `sgp-…`.
    pub id: String,
    /// `Instance` or `Ip`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// The server group types the NLB API answers.
pub const SERVER_GROUP_TYPES: &[&str] = &["Instance", "Ip"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Attachment {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadBalancer {
    pub id: String,
    pub provider: Provider,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<LbKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_type: Option<AddressType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<CreatedBy>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<Listener>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attached_from: Vec<Attachment>,
    /// Huawei dedicated ELB flavors present: `l4`, `l7`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors: Vec<String>,
    /// What ACK's controllers compare with a reused load balancer's annotations
    /// (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/
    /// loadbalancer.go:127-154, nlbv2/loadbalancer.go:187-197, */model_applier.go).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_zone_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slave_zone_id: Option<String>,
    /// `ipv4`, `ipv6` (CLB) or `DualStack` (NLB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<String>,
    /// CLB: `classic` or `vpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
    /// The address Services' status names: a CLB's IP, an NLB's DNS name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// ACK CLB: the live instance charge type (absent: not known), which the CLB controller
    /// keeps when the Service gives no `instance-charge-type` and changes when it gives
    /// another (clbv1/loadbalancer.go:451-491).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charge_type: Option<ChargeType>,
    /// ACK CLB: the live instance spec (`LoadBalancerSpec`, e.g. `slb.s2.small`; absent: not
    /// known), which the CLB controller compares, exactly, with `spec` and sends only when
    /// they differ (clbv1/loadbalancer.go:479-489).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// ACK NLB: every server group in the NLB's VPC (absent: not known; `[]`: none), shared
    /// by the facts of the NLBs in that VPC read in one round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_groups: Option<Arc<[ServerGroup]>>,
}

impl LoadBalancer {
    /// A load balancer of which nothing but the id is known yet.
    pub fn new(id: &str, provider: Provider) -> Self {
        Self {
            id: id.into(),
            provider,
            kind: None,
            address_type: None,
            vpc_id: None,
            created_by: None,
            listeners: Vec::new(),
            attached_from: Vec::new(),
            flavors: Vec::new(),
            resource_group_id: None,
            master_zone_id: None,
            slave_zone_id: None,
            ip_version: None,
            network_type: None,
            address: None,
            charge_type: None,
            spec: None,
            server_groups: None,
        }
    }
}

/// Listener port spaces: TCP, HTTP, HTTPS, TLS and TCPSSL (ACK NLB) share one; UDP has its
/// own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Tcp,
    Udp,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Tcp => "TCP",
            Family::Udp => "UDP",
        }
    }
}

pub fn protocol_family(protocol: &str) -> Option<Family> {
    match protocol.to_ascii_uppercase().as_str() {
        "TCP" | "HTTP" | "HTTPS" | "TLS" | "TCPSSL" => Some(Family::Tcp),
        "UDP" => Some(Family::Udp),
        _ => None,
    }
}
