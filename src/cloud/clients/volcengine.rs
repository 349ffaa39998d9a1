//! Volcengine: CLB and NLB through the CLB OpenAPI (version 2020-04-01:
//! DescribeLoadBalancerAttributes, DescribeListeners, DescribeNetworkLoadBalancerAttributes,
//! DescribeNLBListeners; the refresh lists many with DescribeLoadBalancers and
//! DescribeNetworkLoadBalancers, and a region's listeners with the listener lists without a
//! load balancer), HMAC-SHA256 (V4) signed for service `clb`.
//!
//! Mapping: CLB `Type` public/private and an NLB zone's `Ipv4EipId` give the address type, `VpcId` the
//! VPC. Volcengine's CCM is not published and its documentation (seed 004) names no tag it
//! puts on the load balancers it creates, so `createdBy` stays unknown; listeners count as
//! external (on Volcengine Services share listeners the user made, seed 004).

use std::collections::HashMap;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::cloud::auth::replies::volcengine::classify;
use crate::cloud::auth::sign;
use crate::cloud::base::fact::{Fact, non_empty};
use crate::cloud::base::outcome::CloudError;
use crate::cloud::base::paging::Pager;
use crate::cloud::base::request::Req;
use crate::cloud::client::{ByLoadBalancer, Client, Round};
use crate::cloud::transport::Call;
use crate::vocab::lb::{AddressType, LbKind, Listener, LoadBalancer};
use crate::vocab::provider::Provider;

const VERSION: &str = "2020-04-01";
const SERVICE: &str = "clb";
async fn action(
    call: &Call<'_>,
    action: &'static str,
    mut query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    query.push(("Action".into(), action.into()));
    query.push(("Version".into(), VERSION.into()));
    let req = Req {
        method: "GET",
        path: "/".into(),
        query,
        ..Default::default()
    };
    call.request(
        action,
        || format!("https://clb.{}.volcengineapi.com", call.region),
        req,
        |r, c, s| sign::volcengine(r, c, s, call.region, SERVICE),
        classify,
    )
    .await
}

/// The kind of `id` for batching, and how many ids one list call takes
/// (`DescribeLoadBalancers` and `DescribeNetworkLoadBalancers` take `LoadBalancerIds.N`; 20
/// keeps the URL short). Their listener lists take one load balancer or none (the region).
pub(crate) fn batch(id: &str) -> (&'static str, usize) {
    if id.starts_with("nlb-") {
        ("nlb", 20)
    } else {
        ("clb", 20)
    }
}

/// The load balancer an attribute answer or a list item describes (listeners aside).
fn from_attrs(id: &str, nlb: bool, attrs: &Value) -> LoadBalancer {
    let address_type = if nlb {
        let public = attrs["ZoneMappings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|z| {
                ["Ipv4EipId", "Ipv6EipId"]
                    .iter()
                    .any(|f| z[*f].as_str().is_some_and(|e| !e.is_empty()))
            });
        Some(if public {
            AddressType::Internet
        } else {
            AddressType::Intranet
        })
    } else {
        match attrs["Type"].as_str() {
            Some("public") => Some(AddressType::Internet),
            Some("private") => Some(AddressType::Intranet),
            _ => None,
        }
    };
    let mut lb = LoadBalancer::new(id, Provider::Volcengine);
    lb.kind = Some(if nlb { LbKind::Nlb } else { LbKind::Clb });
    lb.address_type = address_type;
    lb.vpc_id = non_empty(&attrs["VpcId"]);
    lb
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let nlb = id.starts_with("nlb-");
    let attrs_action = if nlb {
        "DescribeNetworkLoadBalancerAttributes"
    } else {
        "DescribeLoadBalancerAttributes"
    };
    let query = vec![("LoadBalancerId".to_string(), id.to_string())];
    // An empty list filtered by the id is the answer that says "gone" (one more call, and
    // rate-limit token); a list that names it gives the fact. A list that fails decides
    // nothing: the attribute call's error stands (its "not found" code alone is not enough).
    let unplaced = match action(call, attrs_action, query).await {
        Ok(Some(attrs)) => Ok(attrs),
        Ok(None) => Err(None),
        Err(e @ CloudError::Other(_)) => Err(Some(e)),
        Err(e) => return Err(e),
    };
    let attrs = match unplaced {
        Ok(attrs) => attrs,
        Err(first) => {
            return match fetch_many(call, &[id.to_string()], &Round::default()).await {
                Ok(mut listed) => Ok(listed.pop().map_or(Fact::NotFound, Fact::Found)),
                Err(e) => Err(first.unwrap_or(e)),
            };
        }
    };
    let mut lb = from_attrs(id, nlb, &attrs);
    listeners(call, nlb, &mut lb).await?;
    Ok(Fact::Found(lb))
}

/// Many load balancers of one kind in one paged list (`LoadBalancerIds.N`), their listeners
/// from the round's region-wide list where it was read, else each one's own list. Only the
/// ones the cloud listed are returned.
pub(crate) async fn fetch_many(
    call: &Call<'_>,
    ids: &[String],
    round: &Round,
) -> Result<Vec<LoadBalancer>, CloudError> {
    let nlb = ids.iter().all(|id| id.starts_with("nlb-"));
    let query: Vec<(String, String)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (format!("LoadBalancerIds.{}", i + 1), id.clone()))
        .collect();
    let actions = ("DescribeLoadBalancers", "DescribeNetworkLoadBalancers");
    let mut pager = Pager::new(format!("{} load balancers from {}", ids.len(), ids[0]));
    let list = read_list(call, nlb, actions, query, "LoadBalancers", &mut pager).await?;
    let mut lbs = Vec::new();
    for a in &list {
        if let Some(id) = a["LoadBalancerId"]
            .as_str()
            .and_then(|id| ids.iter().find(|i| *i == id))
        {
            lbs.push(from_attrs(id, nlb, a));
        }
    }
    for lb in &mut lbs {
        match round.of(batch(&lb.id).0, &lb.id) {
            Some(read) => lb.listeners = read,
            None => listeners(call, nlb, lb).await?,
        }
    }
    Ok(lbs)
}

/// One load balancer's listeners, page by page.
async fn listeners(call: &Call<'_>, nlb: bool, lb: &mut LoadBalancer) -> Result<(), CloudError> {
    let id = lb.id.clone();
    let pager = Pager::new(format!("listeners of {id}"));
    for (_, l) in list_listeners(call, nlb, Some(&id), pager).await? {
        lb.listeners.push(l);
    }
    Ok(())
}

/// Every listener of the region's CLBs (or NLBs), by load balancer id: the list without a
/// `LoadBalancerId` (optional in both request models), at most `max_pages` pages of 100.
/// A list longer than that, or one that cannot be read to its end, is "incomplete".
pub(crate) async fn region_listeners(
    call: &Call<'_>,
    nlb: bool,
    max_pages: usize,
) -> Result<HashMap<String, Vec<Listener>>, CloudError> {
    let what = if nlb { "NLB" } else { "CLB" };
    let pager = Pager::bounded(
        format!("listeners of the region's {what}s in {max_pages} pages"),
        max_pages,
    );
    let mut by_lb: HashMap<String, Vec<Listener>> = HashMap::new();
    for (id, l) in list_listeners(call, nlb, None, pager).await? {
        by_lb.entry(id).or_default().push(l);
    }
    Ok(by_lb)
}

/// The listeners of `id` (or of the region), page by page, each with its `LoadBalancerId`.
async fn list_listeners(
    call: &Call<'_>,
    nlb: bool,
    id: Option<&str>,
    mut pager: Pager,
) -> Result<Vec<(String, Listener)>, CloudError> {
    let query: Vec<(String, String)> = id
        .map(|id| ("LoadBalancerId".to_string(), id.to_string()))
        .into_iter()
        .collect();
    let actions = ("DescribeListeners", "DescribeNLBListeners");
    let list = read_list(call, nlb, actions, query, "Listeners", &mut pager).await?;
    let mut out = Vec::new();
    for l in &list {
        let owner = match id {
            Some(id) => id.to_string(),
            // Grouped by the listener's own field: one without it belongs to no one
            // known, and dropping it could hide a port in use.
            None => non_empty(&l["LoadBalancerId"])
                .ok_or_else(|| pager.incomplete("a listener without its LoadBalancerId"))?,
        };
        if let Some(l) =
            crate::cloud::base::fact::listener(&l["Port"], &l["Protocol"], "external".into())
        {
            out.push((owner, l));
        }
    }
    Ok(out)
}

/// Every item (`field`) of a list, 100 a page: CLB lists (`actions.0`) by `PageNumber` up
/// to `TotalCount`, NLB lists (`actions.1`) by `NextToken`, through `pager`. A CLB list
/// whose first page shows more pages than the pager allows is incomplete before they are
/// read.
async fn read_list(
    call: &Call<'_>,
    nlb: bool,
    actions: (&'static str, &'static str),
    base: Vec<(String, String)>,
    field: &str,
    pager: &mut Pager,
) -> Result<Vec<Value>, CloudError> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    for page in 1.. {
        let mut query = base.clone();
        let list_action = if nlb {
            query.push(("MaxResults".into(), "100".into()));
            if let Some(t) = &token {
                query.push(("NextToken".into(), t.clone()));
            }
            actions.1
        } else {
            query.push(("PageNumber".into(), page.to_string()));
            query.push(("PageSize".into(), "100".into()));
            actions.0
        };
        let Some(result) = action(call, list_action, query).await? else {
            return Err(pager.vanished());
        };
        let list = result[field].as_array().cloned().unwrap_or_default();
        let got = list.len();
        items.extend(list);
        let read = items.len() as u64;
        let next = if got == 0 {
            String::new()
        } else if nlb {
            result["NextToken"].as_str().unwrap_or_default().to_string()
        } else {
            let total = result["TotalCount"].as_u64().unwrap_or(0);
            // Pages as long as this one: past the bound, stop before reading them.
            if page == 1 && total.div_ceil(read) > pager.max() as u64 {
                return Err(pager.incomplete(&format!("{total} {}", field.to_lowercase())));
            }
            if read < total {
                (page + 1).to_string()
            } else {
                String::new()
            }
        };
        token = pager.next(&next)?;
        if token.is_none() {
            break;
        }
    }
    Ok(items)
}
/// Volcengine's client for the layers above.
pub(crate) struct Volcengine;

impl Client for Volcengine {
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

    fn region_lists(&self) -> bool {
        true
    }

    fn region_listeners<'a>(
        &'a self,
        call: &'a Call<'a>,
        kind: &'static str,
        max_pages: usize,
    ) -> BoxFuture<'a, Result<ByLoadBalancer, CloudError>> {
        Box::pin(region_listeners(call, kind == "nlb", max_pages))
    }
}
