//! CTyun: the ELB API (`/v4/elb/show-loadbalancer`, `/v4/elb/list-listener`, and for the
//! refresh's batches `/v4/elb/list-loadbalancer`), EOP signed.
//!
//! Mapping: `resourceType` external/internal is the address type, `vpcID` the VPC. CTyun's
//! CCM is not published and its documentation (seed 000) names no tag or name it puts on the
//! load balancers and listeners it creates, so `createdBy` stays unknown and every listener
//! counts as external. A Service's own listeners are still told apart: see
//! `rules::listeners` (the ports the Service already had on the same load balancer).
//!
//! Errors come as `statusCode` 900 with an `errorCode`, often inside an HTTP 200.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::cloud::auth::sign;
use crate::cloud::base::fact::Fact;
use crate::cloud::base::fact::text;
use crate::cloud::base::outcome::{CloudError, Reply, by_status, describe};
use crate::cloud::base::paging::Pager;
use crate::cloud::base::request::Req;
use crate::cloud::client::{Client, Round};
use crate::cloud::transport::Call;
use crate::vocab::lb::LoadBalancer;
use crate::vocab::lb::{AddressType, LbKind};
use crate::vocab::provider::Provider;

/// CTyun's ELB API is served from one global endpoint for every region.
const PUBLIC: &str = "https://ctelb-global.ctapi.ctyun.cn";

/// "No such load balancer", as CTyun's own Terraform provider names it. No public table
/// lists CTyun's codes, so a single look-up confirms any error it cannot place with the list
/// filtered by the id: see [`fetch`].
const NOT_FOUND: &[&str] = &["Openapi.LoadBalancer.NotFound"];
/// Rate limits: no public source names CTyun's codes; these are the gateway's likely
/// spellings, and an HTTP 429 is a rate limit whatever its code.
const THROTTLED: &[&str] = &[
    "Openapi.Throttling",
    "Openapi.FlowControl",
    "Elb.Throttling",
];
/// Credentials and permissions: IAM's CTIAM_0005 and CTIAM_1044 (CTyun's Terraform
/// provider), and the gateway's signature and key codes (any 401 or 403 is one too).
const AUTH: &[&str] = &[
    "CTIAM_0005",
    "CTIAM_1044",
    "Openapi.Signature.Invalid",
    "Openapi.Signature.Expired",
    "Openapi.AccessKey.Invalid",
    "Openapi.AccessKey.NotFound",
    "Openapi.Authentication.Failed",
    "Openapi.Permission.Denied",
];

/// Maps one answer.
pub(crate) fn classify(status: u16, body: &Value) -> Reply {
    let ok = body["statusCode"].as_i64() == Some(800) || body["statusCode"].as_str() == Some("800");
    if status < 300 && ok {
        return Reply::Ok(body.clone());
    }
    let code = text(body, &["errorCode", "error"]);
    let message = text(body, &["message", "description"]);
    if NOT_FOUND.contains(&code) {
        return Reply::NotFound;
    }
    let what = describe(status, code, message);
    Reply::Fail(if THROTTLED.contains(&code) {
        CloudError::Throttled(what)
    } else if AUTH.contains(&code) {
        CloudError::Auth(what)
    } else if status < 300 {
        // statusCode 900 in an HTTP 200: an error all the same.
        CloudError::Other(what)
    } else {
        by_status(status, code, message)
    })
}

async fn get(
    call: &Call<'_>,
    operation: &'static str,
    path: &str,
    query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    let req = Req {
        method: "GET",
        path: path.into(),
        query,
        ..Default::default()
    };
    call.request(operation, || PUBLIC.into(), req, sign::ctyun, classify)
        .await
}

/// The kind of `id` for batching, and how many ids one `list-loadbalancer` call takes
/// (`iDs`, comma-separated; 20 keeps the URL short). The list is not paged, so an id
/// missing from its answer is asked for alone: a list cut short costs calls, never a fact.
pub(crate) fn batch(_id: &str) -> (&'static str, usize) {
    ("elb", 20)
}

/// The load balancer a `show-loadbalancer` or `list-loadbalancer` item describes.
fn from_attrs(id: &str, attrs: &Value) -> LoadBalancer {
    let mut lb = LoadBalancer::new(id, Provider::Ctyun);
    lb.kind = Some(LbKind::Elb);
    lb.address_type = match attrs["resourceType"].as_str() {
        Some("external") => Some(AddressType::Internet),
        Some("internal") => Some(AddressType::Intranet),
        _ => None,
    };
    lb.vpc_id = crate::cloud::base::fact::non_empty(&attrs["vpcID"]);
    lb
}

/// Every listener of `lb`. One page: `list-listener` answers every listener of a load
/// balancer at once (its request model has no paging).
async fn read_listeners(call: &Call<'_>, lb: &mut LoadBalancer) -> Result<(), CloudError> {
    let pager = Pager::new(format!("listeners of {}", lb.id));
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("loadBalancerID".to_string(), lb.id.clone()),
    ];
    let Some(listed) = get(call, "ListListener", "/v4/elb/list-listener", query).await? else {
        return Err(pager.vanished());
    };
    for l in listed["returnObj"].as_array().into_iter().flatten() {
        lb.listeners.extend(crate::cloud::base::fact::listener(
            &l["protocolPort"],
            &l["protocol"],
            "external".into(),
        ));
    }
    Ok(())
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("elbID".to_string(), id.to_string()),
    ];
    let shown = match get(call, "ShowLoadBalancer", "/v4/elb/show-loadbalancer", query).await {
        Ok(Some(shown)) => shown,
        Ok(None) => return Ok(Fact::NotFound),
        // An error no table places: the list filtered by the id decides.
        Err(e @ CloudError::Other(_)) => return confirm(call, id, e).await,
        Err(e) => return Err(e),
    };
    let Some(attrs) = shown["returnObj"].as_array().and_then(|a| a.first()) else {
        return Err(CloudError::Other(format!(
            "the API answered for \"{id}\" without the load balancer"
        )));
    };
    let mut lb = from_attrs(id, attrs);
    read_listeners(call, &mut lb).await?;
    Ok(Fact::Found(lb))
}

/// After a look-up's unplaced error `e`: `list-loadbalancer` by the id (one more call, and
/// rate-limit token). An empty answer says "gone"; one that names only the id gives its
/// fact. One that names other load balancers ignored the filter (and, unpaged, may be cut
/// short), and a list that fails decides nothing: `e` stands.
async fn confirm(call: &Call<'_>, id: &str, e: CloudError) -> Result<Fact, CloudError> {
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("iDs".to_string(), id.to_string()),
    ];
    let Ok(Some(listed)) = get(call, "ListLoadBalancer", "/v4/elb/list-loadbalancer", query).await
    else {
        return Err(e);
    };
    let items: Vec<&Value> = listed["returnObj"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    match items.as_slice() {
        [] => Ok(Fact::NotFound),
        [a] if a["iD"].as_str() == Some(id) => {
            let mut lb = from_attrs(id, a);
            read_listeners(call, &mut lb).await?;
            Ok(Fact::Found(lb))
        }
        _ => Err(e),
    }
}

/// The load balancers of `ids` that `list-loadbalancer` lists (one call), each with its
/// listeners (one call each). Ids it does not list are not in the answer.
pub(crate) async fn fetch_many(
    call: &Call<'_>,
    ids: &[String],
) -> Result<Vec<LoadBalancer>, CloudError> {
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("iDs".to_string(), ids.join(",")),
    ];
    let Some(listed) = get(call, "ListLoadBalancer", "/v4/elb/list-loadbalancer", query).await?
    else {
        // "Not found" for a list of ids says nothing of any one of them.
        return Ok(Vec::new());
    };
    let mut lbs = Vec::new();
    for a in listed["returnObj"].as_array().into_iter().flatten() {
        let Some(id) = a["iD"]
            .as_str()
            .and_then(|id| ids.iter().find(|i| *i == id))
        else {
            // A list that names others ignored the filter: the region's list, unpaged and
            // so perhaps cut short. Nothing of it is used; each id is asked alone, now and
            // in later rounds.
            call.channel.lists_ignore_ids("ListLoadBalancer");
            return Ok(Vec::new());
        };
        if !lbs.iter().any(|lb: &LoadBalancer| lb.id == *id) {
            lbs.push(from_attrs(id, a));
        }
    }
    let mut read = Vec::with_capacity(lbs.len());
    for mut lb in lbs {
        match read_listeners(call, &mut lb).await {
            Ok(()) => read.push(lb),
            // Left out of the answer: the refresh asks it alone, with its own retries, and
            // the others' listeners are not read again.
            Err(e)
                if e.transient()
                    || matches!(e, CloudError::Incomplete(_) | CloudError::TooLarge(_)) =>
            {
                tracing::debug!(load_balancer = %lb.id, error = %e, "cloud refresh: listeners read alone");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(read)
}

/// Ctyun's client for the layers above.
pub(crate) struct Ctyun;

impl Client for Ctyun {
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
        _round: &'a Round,
    ) -> BoxFuture<'a, Result<Vec<LoadBalancer>, CloudError>> {
        Box::pin(fetch_many(call, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_documented_code_is_not_found() {
        let err = |code: &str| json!({"statusCode": 900, "errorCode": code, "message": "m"});
        assert_eq!(
            classify(200, &err("Openapi.LoadBalancer.NotFound")),
            Reply::NotFound
        );
        // No source gives this spelling: an error, which a look-up then checks by listing.
        assert!(matches!(
            classify(200, &err("Elb.LoadBalancer.NotFound")),
            Reply::Fail(CloudError::Other(_))
        ));
        // A listener's "not found" is no answer about the load balancer.
        assert!(matches!(
            classify(200, &err("Openapi.Listener.NotFound")),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(200, &err("CTIAM_1044")),
            Reply::Fail(CloudError::Auth(_))
        ));
        assert!(matches!(
            classify(404, &json!({})),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(200, &err("Openapi.Throttling")),
            Reply::Fail(CloudError::Throttled(_))
        ));
        assert!(matches!(
            classify(401, &err("Openapi.Signature.Invalid")),
            Reply::Fail(CloudError::Auth(_))
        ));
        // A bad page token is not a credentials problem.
        assert!(matches!(
            classify(200, &err("Openapi.Parameter.InvalidToken")),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(200, &json!({"statusCode": 800, "returnObj": []})),
            Reply::Ok(_)
        ));
    }
}
