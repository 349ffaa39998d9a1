//! Alibaba Cloud: CLB through the SLB API (2014-05-15) and NLB through the NLB API
//! (2022-04-30), RPC style, ACS3-HMAC-SHA256 signed.
//!
//! Mapping, with the sources in kubernetes/cloud-provider-alibaba-cloud:
//! - `createdBy`: the tag `kubernetes.do.not.delete` marks a load balancer the CCM created
//!   (`pkg/controller/helper/service_utils.go` TAGKEY), `ack.aliyun.com` the cluster's API
//!   server load balancer. The controllers refuse to reuse either, whatever other tags it
//!   carries (`clbv1/model_applier.go:497-504`, `nlbv2/model_applier.go:598-605`), so a
//!   `kubernetes.reused.by.user` tag beside them changes nothing; without them it is a user's.
//! - what the controllers compare with a reused one: resource group, zones, ip-version,
//!   network type and address (CLB: its IP; NLB: its DNS name); a CLB's `InstanceChargeType`
//!   (`chargeType`), which the CLB controller keeps or changes (`clbv1/loadbalancer.go:451-491`);
//!   a value other than PayBySpec or PayByCLCU (or none, as the international site may answer)
//!   is not known; its `LoadBalancerSpec` (`spec`, as written), which the controller compares
//!   with the Service's spec (`clbv1/loadbalancer.go:479-489`).
//! - listener owners: the CCM names its CLB listeners `k8s/{port}/{service}/{namespace}/{cluster id}`
//!   (`pkg/model/load_balancer.go` ListenerNamedKey) and its NLB listeners
//!   `k8s.{port}.{protocol}.{service}.{namespace}.{cluster id}` (`pkg/model/nlb/nlb.go`), in the
//!   listener's description. Another cluster's id (`cluster.id` set) makes it an
//!   `attachedFrom` entry; without `cluster.id` every such listener counts as this cluster's.
//! - NLB `serverGroups`: every server group in the NLB's VPC (ListServerGroups by `VpcId`),
//!   the ones a listener of it can use: the controller makes its own there
//!   (`nlbv2/model_applier.go:336-337`) and looks a reused id up by id
//!   (`pkg/provider/alibaba/nlb/servergroup.go:150-175`).

use futures::future::BoxFuture;
use serde_json::Value;

use crate::cloud::auth::replies::alibaba::classify;
use crate::cloud::auth::sign;
use crate::cloud::base::fact::{Fact, non_empty};
use crate::cloud::base::outcome::CloudError;
use crate::cloud::base::paging::Pager;
use crate::cloud::base::request::Req;
use crate::cloud::client::{Client, Groups, Round};
use crate::cloud::transport::Call;
use crate::vocab::lb::{
    AddressType, Attachment, ChargeType, CreatedBy, LbKind, LoadBalancer, ServerGroup,
};
use crate::vocab::provider::Provider;

const SLB_VERSION: &str = "2014-05-15";
const NLB_VERSION: &str = "2022-04-30";

/// The kind of `id` for batching, and how many ids one list call takes (the SDKs' request
/// models: `DescribeLoadBalancers` up to 10 CLB ids, comma separated; NLB `ListLoadBalancers`
/// up to 20 `LoadBalancerIds`).
pub(crate) fn batch(id: &str) -> (&'static str, usize) {
    if id.starts_with("nlb-") {
        ("nlb", 20)
    } else {
        ("clb", 10)
    }
}

/// Many load balancers of one kind (see [`batch`]) in two paged lists: the load balancers,
/// then their listeners. Only the ones the cloud listed are returned.
pub(crate) async fn fetch_many(
    call: &Call<'_>,
    ids: &[String],
    round: &Round,
) -> Result<Vec<LoadBalancer>, CloudError> {
    let nlb = ids.iter().all(|id| id.starts_with("nlb-"));
    let mut lbs = Vec::new();
    let what = format!("{} load balancers from {}", ids.len(), ids[0]);
    if nlb {
        let query = indexed("LoadBalancerIds", ids);
        pages(
            call,
            Api::Nlb("ListLoadBalancers"),
            query,
            what.clone(),
            |page| {
                for a in page["LoadBalancers"].as_array().into_iter().flatten() {
                    if let Some(id) = listed(a, ids) {
                        lbs.push(new_lb(id, LbKind::Nlb, a));
                    }
                }
            },
        )
        .await?;
    } else {
        let mut pager = Pager::new(what.clone());
        let mut read = 0;
        for number in 1.. {
            let query = vec![
                ("LoadBalancerId".to_string(), ids.join(",")),
                ("PageNumber".to_string(), number.to_string()),
                ("PageSize".to_string(), "100".to_string()),
            ];
            let Some(page) = rpc(call, "slb", SLB_VERSION, "DescribeLoadBalancers", query).await?
            else {
                return Err(pager.vanished());
            };
            let list = page["LoadBalancers"]["LoadBalancer"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for a in &list {
                if let Some(id) = listed(a, ids) {
                    lbs.push(new_lb(id, LbKind::Clb, a));
                }
            }
            read += list.len() as u64;
            let more = !list.is_empty() && read < page["TotalCount"].as_u64().unwrap_or(0);
            let next = if more {
                (number + 1).to_string()
            } else {
                String::new()
            };
            if pager.next(&next)?.is_none() {
                break;
            }
        }
    }
    if lbs.is_empty() {
        return Ok(lbs);
    }
    let found: Vec<String> = lbs.iter().map(|lb| lb.id.clone()).collect();
    let (api, key) = if nlb {
        (Api::Nlb("ListListeners"), "LoadBalancerIds")
    } else {
        (Api::Slb("DescribeLoadBalancerListeners"), "LoadBalancerId")
    };
    let what = format!("listeners of {what}");
    pages(call, api, indexed(key, &found), what, |page| {
        for l in page["Listeners"].as_array().into_iter().flatten() {
            let Some(lb) = lbs
                .iter_mut()
                .find(|lb| l["LoadBalancerId"].as_str() == Some(lb.id.as_str()))
            else {
                continue;
            };
            let (description, parse): (&str, OwnerParser) = if nlb {
                (
                    l["ListenerDescription"].as_str().unwrap_or_default(),
                    nlb_owner,
                )
            } else {
                (l["Description"].as_str().unwrap_or_default(), clb_owner)
            };
            listener(
                lb,
                &l["ListenerPort"],
                &l["ListenerProtocol"],
                description,
                parse,
                call.cluster_id(),
            );
        }
    })
    .await?;
    if nlb {
        // One list per VPC a round, shared by the NLBs in it (and by their facts in memory).
        let mut vpcs: Vec<String> = lbs.iter().filter_map(|lb| lb.vpc_id.clone()).collect();
        vpcs.sort();
        vpcs.dedup();
        for vpc in vpcs {
            let groups = match round.groups(&vpc) {
                Some(groups) => groups,
                None => {
                    let groups = server_groups(call, &vpc).await?;
                    round.keep_groups(&vpc, groups.clone());
                    groups
                }
            };
            for lb in lbs
                .iter_mut()
                .filter(|lb| lb.vpc_id.as_deref() == Some(&vpc))
            {
                lb.server_groups = groups.clone();
            }
        }
    }
    Ok(lbs)
}

/// Every server group in `vpc`, paged; `None` (not known) when the list cannot be read to its
/// end (a page "not found", too many pages, a page token twice): a call that fails is an
/// error, never "none".
async fn server_groups(call: &Call<'_>, vpc: &str) -> Result<Groups, CloudError> {
    let mut groups = Vec::new();
    let query = vec![("VpcId".to_string(), vpc.to_string())];
    let what = format!("server groups of {vpc}");
    let read = pages(call, Api::Nlb("ListServerGroups"), query, what, |page| {
        for g in page["ServerGroups"].as_array().into_iter().flatten() {
            if let Some(id) = non_empty(&g["ServerGroupId"]) {
                let kind = non_empty(&g["ServerGroupType"]).unwrap_or_default();
                groups.push(ServerGroup { id, kind });
            }
        }
    })
    .await;
    match read {
        Ok(()) => Ok(Some(groups.into())),
        Err(CloudError::Incomplete(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An API that pages with `MaxResults` and `NextToken`.
#[derive(Clone, Copy)]
enum Api {
    Nlb(&'static str),
    Slb(&'static str),
}

/// Follows `NextToken` to the list's end, each page handed to `each`. A page answering "not
/// found", a repeated token or too many pages is `CloudError::Incomplete`, never a cut list.
async fn pages(
    call: &Call<'_>,
    api: Api,
    query: Vec<(String, String)>,
    what: String,
    mut each: impl FnMut(&Value),
) -> Result<(), CloudError> {
    let (product, version, action) = match api {
        Api::Nlb(a) => ("nlb", NLB_VERSION, a),
        Api::Slb(a) => ("slb", SLB_VERSION, a),
    };
    let mut pager = Pager::new(what);
    let mut token: Option<String> = None;
    loop {
        let mut q = query.clone();
        q.push(("MaxResults".into(), "100".into()));
        if let Some(t) = token.take() {
            q.push(("NextToken".into(), t));
        }
        let Some(page) = rpc(call, product, version, action, q).await? else {
            return Err(pager.vanished());
        };
        each(&page);
        token = pager.next(page["NextToken"].as_str().unwrap_or_default())?;
        if token.is_none() {
            return Ok(());
        }
    }
}

/// `Key.1`, `Key.2`, …: a list parameter of an RPC action.
fn indexed(key: &str, ids: &[String]) -> Vec<(String, String)> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| (format!("{key}.{}", i + 1), id.clone()))
        .collect()
}

/// The id of a listed load balancer, when it is one of those asked for.
fn listed<'a>(item: &Value, ids: &'a [String]) -> Option<&'a str> {
    let id = item["LoadBalancerId"].as_str()?;
    ids.iter().find(|i| *i == id).map(String::as_str)
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    if id.starts_with("nlb-") {
        nlb(call, id).await
    } else {
        clb(call, id).await
    }
}

/// One RPC action; `None` when the load balancer does not exist.
async fn rpc(
    call: &Call<'_>,
    product: &str,
    version: &'static str,
    action: &'static str,
    mut query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    query.push(("RegionId".into(), call.region.to_string()));
    let req = Req {
        method: "POST",
        path: "/".into(),
        query,
        ..Default::default()
    };
    call.request(
        action,
        || format!("https://{product}.{}.aliyuncs.com", call.region),
        req,
        |r, c, s| sign::alibaba(r, c, s, action, version),
        classify,
    )
    .await
}

fn tags(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let k = t["TagKey"].as_str().or(t["Key"].as_str())?;
            let v = t["TagValue"].as_str().or(t["Value"].as_str()).unwrap_or("");
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

fn created_by(tags: &[(String, String)]) -> CreatedBy {
    let has = |key: &str| tags.iter().any(|(k, _)| k == key);
    if has("kubernetes.do.not.delete") {
        CreatedBy::Ccm
    } else if has("ack.aliyun.com") {
        CreatedBy::Apiserver
    } else {
        CreatedBy::User
    }
}

fn address_type(v: &Value) -> Option<AddressType> {
    match v.as_str()?.to_ascii_lowercase().as_str() {
        "internet" => Some(AddressType::Internet),
        "intranet" => Some(AddressType::Intranet),
        _ => None,
    }
}

/// The owner of a listener the CCM named, and the attachment when it is another cluster's.
fn owner(
    service: &str,
    namespace: &str,
    cluster: &str,
    own: Option<&str>,
) -> (String, Option<Attachment>) {
    match own {
        Some(me) if me != cluster => (
            format!("{namespace}/{service} (cluster {cluster})"),
            Some(Attachment {
                cluster: cluster.into(),
                namespace: namespace.into(),
                name: service.into(),
            }),
        ),
        _ => (format!("{namespace}/{service}"), None),
    }
}

/// `k8s/{port}/{service}/{namespace}/{cluster}`
fn clb_owner(description: &str, own: Option<&str>) -> Option<(String, Option<Attachment>)> {
    let parts: Vec<&str> = description.split('/').collect();
    match parts.as_slice() {
        ["k8s", port, svc, ns, cid] if port.parse::<u32>().is_ok() => {
            Some(owner(svc, ns, cid, own))
        }
        _ => None,
    }
}

/// `k8s.{port}.{protocol}.{service}.{namespace}.{cluster}` (`{start}_{end}` for a range).
fn nlb_owner(description: &str, own: Option<&str>) -> Option<(String, Option<Attachment>)> {
    let parts: Vec<&str> = description.split('.').collect();
    match parts.as_slice() {
        ["k8s", _port, _proto, svc, ns, cid] => Some(owner(svc, ns, cid, own)),
        _ => None,
    }
}

/// Reads a listener description: the owner, and the attachment of another cluster's.
type OwnerParser = fn(&str, Option<&str>) -> Option<(String, Option<Attachment>)>;

fn listener(
    lb: &mut LoadBalancer,
    port: &Value,
    protocol: &Value,
    description: &str,
    parse: OwnerParser,
    own: Option<&str>,
) {
    let (owner, attached) = parse(description, own).unwrap_or(("external".into(), None));
    let Some(l) = crate::cloud::base::fact::listener(port, protocol, owner) else {
        return;
    };
    if let Some(a) = attached
        && !lb.attached_from.contains(&a)
    {
        lb.attached_from.push(a);
    }
    lb.listeners.push(l);
}

fn new_lb(id: &str, kind: LbKind, attrs: &Value) -> LoadBalancer {
    let tags = tags(if attrs["Tags"].is_array() {
        &attrs["Tags"]
    } else {
        &attrs["Tags"]["Tag"]
    });
    let mut lb = LoadBalancer::new(id, Provider::Alibaba);
    lb.kind = Some(kind);
    lb.address_type = address_type(&attrs["AddressType"]);
    lb.vpc_id = non_empty(&attrs["VpcId"]);
    lb.created_by = Some(created_by(&tags));
    lb.resource_group_id = non_empty(&attrs["ResourceGroupId"]);
    match kind {
        LbKind::Nlb => {
            lb.ip_version = non_empty(&attrs["AddressIpVersion"]);
            lb.address = non_empty(&attrs["DNSName"]);
        }
        _ => {
            lb.master_zone_id = non_empty(&attrs["MasterZoneId"]);
            lb.slave_zone_id = non_empty(&attrs["SlaveZoneId"]);
            lb.ip_version = non_empty(&attrs["AddressIPVersion"]);
            lb.network_type = non_empty(&attrs["NetworkType"]);
            lb.address = non_empty(&attrs["Address"]);
            lb.charge_type = attrs["InstanceChargeType"]
                .as_str()
                .and_then(ChargeType::parse);
            lb.spec = non_empty(&attrs["LoadBalancerSpec"]);
        }
    }
    lb
}

async fn clb(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let query = vec![("LoadBalancerId".into(), id.to_string())];
    let Some(attrs) = rpc(
        call,
        "slb",
        SLB_VERSION,
        "DescribeLoadBalancerAttribute",
        query,
    )
    .await?
    else {
        return Ok(Fact::NotFound);
    };
    let mut lb = new_lb(id, LbKind::Clb, &attrs);
    for l in attrs["ListenerPortsAndProtocol"]["ListenerPortAndProtocol"]
        .as_array()
        .into_iter()
        .flatten()
    {
        listener(
            &mut lb,
            &l["ListenerPort"],
            &l["ListenerProtocol"],
            l["Description"].as_str().unwrap_or_default(),
            clb_owner,
            call.cluster_id(),
        );
    }
    Ok(Fact::Found(lb))
}

async fn nlb(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let query = vec![("LoadBalancerId".into(), id.to_string())];
    let Some(attrs) = rpc(call, "nlb", NLB_VERSION, "GetLoadBalancerAttribute", query).await?
    else {
        return Ok(Fact::NotFound);
    };
    let mut lb = new_lb(id, LbKind::Nlb, &attrs);
    let query = vec![("LoadBalancerIds.1".to_string(), id.to_string())];
    pages(
        call,
        Api::Nlb("ListListeners"),
        query,
        format!("listeners of {id}"),
        |page| {
            for l in page["Listeners"].as_array().into_iter().flatten() {
                listener(
                    &mut lb,
                    &l["ListenerPort"],
                    &l["ListenerProtocol"],
                    l["ListenerDescription"].as_str().unwrap_or_default(),
                    nlb_owner,
                    call.cluster_id(),
                );
            }
        },
    )
    .await?;
    if let Some(vpc) = lb.vpc_id.clone() {
        lb.server_groups = server_groups(call, &vpc).await?;
    }
    Ok(Fact::Found(lb))
}

/// Alibaba's client for the layers above.
pub(crate) struct Alibaba;

impl Client for Alibaba {
    fn batch(&self, id: &str) -> (&'static str, usize) {
        batch(id)
    }

    fn fetch<'a>(
        &'a self,
        call: &'a Call<'a>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Fact, CloudError>> {
        Box::pin(fetch(call, id))
    }

    fn fetch_many<'a>(
        &'a self,
        call: &'a Call<'a>,
        ids: &'a [String],
        round: &'a Round,
    ) -> BoxFuture<'a, Result<Vec<LoadBalancer>, CloudError>> {
        Box::pin(fetch_many(call, ids, round))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// InstanceChargeType as the SLB API answers it; anything else (or nothing, as the
    /// international site may answer) is not known.
    #[rstest::rstest]
    #[case::spec(serde_json::json!("PayBySpec"), Some(ChargeType::PayBySpec))]
    #[case::lcu(serde_json::json!("PayByCLCU"), Some(ChargeType::PayByClcu))]
    #[case::other_case(serde_json::json!("paybyspec"), None)]
    #[case::empty(serde_json::json!(""), None)]
    #[case::absent(Value::Null, None)]
    fn clb_charge_type(#[case] v: Value, #[case] want: Option<ChargeType>) {
        let attrs = serde_json::json!({"InstanceChargeType": v});
        assert_eq!(new_lb("lb-1", LbKind::Clb, &attrs).charge_type, want);
        assert_eq!(new_lb("nlb-1", LbKind::Nlb, &attrs).charge_type, None);
    }

    /// LoadBalancerSpec as the SLB API answers it, kept as written (the controller compares
    /// it exactly); none or empty is not known.
    #[rstest::rstest]
    #[case::spec(serde_json::json!("slb.s2.small"), Some("slb.s2.small"))]
    #[case::beyond_the_api_list(serde_json::json!("slb.s3.xlarge"), Some("slb.s3.xlarge"))]
    #[case::empty(serde_json::json!(""), None)]
    #[case::absent(Value::Null, None)]
    fn clb_spec(#[case] v: Value, #[case] want: Option<&str>) {
        let attrs = serde_json::json!({"LoadBalancerSpec": v});
        assert_eq!(new_lb("lb-1", LbKind::Clb, &attrs).spec.as_deref(), want);
        assert_eq!(new_lb("nlb-1", LbKind::Nlb, &attrs).spec, None);
    }

    #[test]
    fn creators_follow_the_ccm_tags() {
        assert_eq!(
            created_by(&t(&[
                ("kubernetes.do.not.delete", "a1b2"),
                ("ack.aliyun.com", "c1")
            ])),
            CreatedBy::Ccm
        );
        assert_eq!(
            created_by(&t(&[("ack.aliyun.com", "c1")])),
            CreatedBy::Apiserver
        );
        assert_eq!(
            created_by(&t(&[
                ("ack.aliyun.com", "c1"),
                ("kubernetes.reused.by.user", "true")
            ])),
            CreatedBy::Apiserver
        );
        // The controllers refuse these whatever else is tagged (model_applier.go:497-504).
        assert_eq!(
            created_by(&t(&[
                ("kubernetes.do.not.delete", "a1b2"),
                ("kubernetes.reused.by.user", "true")
            ])),
            CreatedBy::Ccm
        );
        assert_eq!(
            created_by(&t(&[("kubernetes.reused.by.user", "true")])),
            CreatedBy::User
        );
        assert_eq!(created_by(&t(&[("team", "web")])), CreatedBy::User);
    }

    #[test]
    fn listener_names_give_owners_and_other_clusters() {
        assert_eq!(
            clb_owner("k8s/80/web/shop/c1", Some("c1")),
            Some(("shop/web".into(), None))
        );
        let (o, a) = clb_owner("k8s/80/web/shop/c2", Some("c1")).unwrap();
        assert_eq!(o, "shop/web (cluster c2)");
        assert_eq!(a.unwrap().cluster, "c2");
        assert_eq!(clb_owner("k8s/80/web/shop/c2", None).unwrap().0, "shop/web");
        assert_eq!(clb_owner("my listener", None), None);
        assert_eq!(clb_owner("k8s/x/web/shop/c1", None), None);
        assert_eq!(
            nlb_owner("k8s.443.TCP.web.shop.c2", Some("c1")).unwrap().0,
            "shop/web (cluster c2)"
        );
        assert_eq!(nlb_owner("k8s.443.TCP.web", None), None);
    }
}
