//! Huawei Cloud: ELB v3 (`/v3/{project}/elb/loadbalancers/{id}`, `/v3/{project}/elb/listeners`),
//! and the shared ELB's v2 API for an id v3 does not know. SDK-HMAC-SHA256 signed.
//!
//! Mapping, with the sources in kubernetes-sigs/cloud-provider-huaweicloud:
//! - `kind`: v3's `guaranteed` (true: dedicated); an id only v2 knows is a shared ELB.
//! - `flavors`: `l4_flavor_id` and `l7_flavor_id` set (dedicated ELBs).
//! - `addressType`: internet when an EIP or public IP is bound.
//! - `createdBy`: the CCM names the load balancers it creates `k8s_service_{cluster}_{ns}_{name}`
//!   and describes them "Created by the ELB service(...)" (`pkg/cloudprovider/huaweicloud/
//!   dedicatedloadbalancer.go` and `sharedloadbalancer.go`, `GetLoadBalancerName` and
//!   `createLoadbalancer`); anything else is the user's.
//! - listener owners: the CCM's listener names (`{service}_{protocol}_{port}`, or the
//!   Service's UID, `elb.go` `GetListenerName`) carry no namespace, so every listener counts
//!   as external; a Service's own listeners are told apart by `rules::listeners`.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::cloud::auth::sign;
use crate::cloud::base::fact::text;
use crate::cloud::base::fact::{Fact, non_empty};
use crate::cloud::base::outcome::{CloudError, Reply, by_status, describe};
use crate::cloud::base::paging::Pager;
use crate::cloud::base::request::Req;
use crate::cloud::client::{Client, Round};
use crate::cloud::transport::Call;
use crate::vocab::lb::{AddressType, CreatedBy, LbKind, LoadBalancer};
use crate::vocab::provider::Provider;

/// API Gateway's throttling code (429), also spelled without the W by some services.
const THROTTLED: &[&str] = &["APIGW.0308", "APIG.0308"];
/// The documented "no such load balancer" (ELB's error-code table): ELB.8904 "%s %s could
/// not be found" (v3; only the load balancer is looked up by id here), ELB.1002 and ELB.1003,
/// and the shared ELB's ELB.9800. ELB.1101 is "the EIP already exists", not a missing one.
const NOT_FOUND: &[&str] = &["ELB.8904", "ELB.1002", "ELB.1003", "ELB.9800"];
/// ELB's 403 "the resource cannot be found": neither a refusal nor the documented answer
/// for a missing load balancer, so it is an error under `onError`.
const AMBIGUOUS: &[&str] = &["ELB.8903"];
/// Credential and permission codes: API Gateway's (its error-code table) and ELB's own
/// token and policy codes.
const AUTH: &[&str] = &[
    "APIGW.0301",
    "APIGW.0302",
    "APIGW.0303",
    "APIGW.0304",
    "APIGW.0305",
    "APIGW.0306",
    "APIGW.0307",
    "APIGW.0310",
    "APIGW.0311",
    "APIGW.0401",
    "APIGW.0402",
    "APIGW.0801",
    "APIGW.0802",
    "ELB.1102",
    "ELB.1103",
    "ELB.1104",
    "ELB.1105",
    "ELB.1109",
    "ELB.9802",
    "ELB.9803",
    "ELB.9804",
    "SYS.0401",
    "SYS.0403",
];
/// The gateway's "no such API": a wrong endpoint or path, not a missing ELB.
const NO_API: &str = "APIGW.0101";

/// Maps one answer: errors are `error_code` and `error_msg` (or under `error`).
pub(crate) fn classify(status: u16, body: &Value) -> Reply {
    if status < 300 {
        return Reply::Ok(body.clone());
    }
    let err = if body["error"].is_object() {
        &body["error"]
    } else {
        body
    };
    let code = text(err, &["error_code", "code"]);
    let message = text(err, &["error_msg", "message"]);
    if NOT_FOUND.contains(&code) {
        return Reply::NotFound;
    }
    let what = describe(status, code, message);
    Reply::Fail(if THROTTLED.contains(&code) {
        CloudError::Throttled(what)
    } else if code == NO_API {
        CloudError::BadEndpoint(what)
    } else if AUTH.contains(&code) {
        CloudError::Auth(what)
    } else if AMBIGUOUS.contains(&code) {
        CloudError::Other(what)
    } else {
        by_status(status, code, message)
    })
}

async fn get(
    call: &Call<'_>,
    operation: &'static str,
    path: String,
    query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    let req = Req {
        method: "GET",
        path,
        query,
        ..Default::default()
    };
    call.request(
        operation,
        || format!("https://elb.{}.myhuaweicloud.com", call.region),
        req,
        sign::huawei,
        classify,
    )
    .await
}

fn project(call: &Call<'_>) -> Result<String, CloudError> {
    call.creds
        .project_id
        .clone()
        .ok_or_else(|| CloudError::Other("the credentials have no projectId".into()))
}

fn created_by(lb: &Value) -> CreatedBy {
    let name = lb["name"].as_str().unwrap_or_default();
    let description = lb["description"].as_str().unwrap_or_default();
    if name.starts_with("k8s_service_") || description.starts_with("Created by the ELB service(") {
        CreatedBy::Ccm
    } else {
        CreatedBy::User
    }
}

/// The listeners of `lbs` (ELB `version`), read page by page with `loadbalancer_id` repeated
/// once per load balancer, as the SDK's `ListListenersRequest` sends its list.
async fn listeners(
    call: &Call<'_>,
    version: &str,
    project: &str,
    lbs: &mut [LoadBalancer],
    what: String,
) -> Result<(), CloudError> {
    let query: Vec<(String, String)> = lbs
        .iter()
        .map(|lb| ("loadbalancer_id".to_string(), lb.id.clone()))
        .collect();
    let path = format!("/{version}/{project}/elb/listeners");
    let list = read_list(call, "ListListeners", path, query, "listeners", what).await?;
    for l in &list {
        // A listener names its load balancers; asked for one, every listener is its.
        let of = |lb: &LoadBalancer| lbs.len() == 1 || lbs_of(l).any(|id| id == lb.id);
        let Some(i) = lbs.iter().position(of) else {
            continue;
        };
        lbs[i].listeners.extend(crate::cloud::base::fact::listener(
            &l["protocol_port"],
            &l["protocol"],
            "external".into(),
        ));
    }
    Ok(())
}

/// Every item (`field`) of a v3 list, 100 a page, following `page_info.next_marker` through
/// a [`Pager`] (`what` names the list in its errors).
async fn read_list(
    call: &Call<'_>,
    operation: &'static str,
    path: String,
    query: Vec<(String, String)>,
    field: &str,
    what: String,
) -> Result<Vec<Value>, CloudError> {
    let mut pager = Pager::new(what);
    let mut marker: Option<String> = None;
    let mut items = Vec::new();
    loop {
        let mut query = query.clone();
        query.push(("limit".to_string(), "100".to_string()));
        if let Some(m) = &marker {
            query.push(("marker".into(), m.clone()));
        }
        let Some(page) = get(call, operation, path.clone(), query).await? else {
            return Err(pager.vanished());
        };
        let list = page[field].as_array().cloned().unwrap_or_default();
        let next = page["page_info"]["next_marker"]
            .as_str()
            .unwrap_or_default();
        marker = pager.next(if list.is_empty() { "" } else { next })?;
        items.extend(list);
        if marker.is_none() {
            return Ok(items);
        }
    }
}

/// The ids of the load balancers a listener belongs to.
fn lbs_of(listener: &Value) -> impl Iterator<Item = &str> {
    listener["loadbalancers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|lb| lb["id"].as_str())
}

/// How many ids one list call takes: the SDK's `ListLoadBalancersRequest.id` is a list sent
/// as repeated `id=`; 20 keeps the URL short.
pub(crate) fn batch(_id: &str) -> (&'static str, usize) {
    ("elb", 20)
}

/// The load balancer an answer of ELB `version` describes.
fn from_attrs(id: &str, version: &str, a: &Value) -> LoadBalancer {
    let dedicated = version == "v3" && a["guaranteed"].as_bool().unwrap_or(true);
    let mut flavors = Vec::new();
    for (field, flavor) in [("l4_flavor_id", "l4"), ("l7_flavor_id", "l7")] {
        if a[field].as_str().is_some_and(|f| !f.is_empty()) {
            flavors.push(flavor.to_string());
        }
    }
    let public = ["eips", "publicips"]
        .iter()
        .any(|f| a[*f].as_array().is_some_and(|l| !l.is_empty()));
    let mut lb = LoadBalancer::new(id, Provider::Huawei);
    lb.kind = Some(if dedicated {
        LbKind::ElbDedicated
    } else {
        LbKind::ElbShared
    });
    lb.address_type = Some(if public {
        AddressType::Internet
    } else {
        AddressType::Intranet
    });
    lb.vpc_id = non_empty(&a["vpc_id"]);
    lb.created_by = Some(created_by(a));
    if dedicated {
        lb.flavors = flavors;
    }
    lb
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let project = project(call)?;
    let path = format!("/v3/{project}/elb/loadbalancers/{}", sign::encode(id));
    let (version, attrs) = match get(call, "ShowLoadBalancer", path, Vec::new()).await? {
        Some(v) => ("v3", v["loadbalancer"].clone()),
        None => {
            let path = format!("/v2/{project}/elb/loadbalancers/{}", sign::encode(id));
            match get(call, "ShowLoadBalancerV2", path, Vec::new()).await {
                Ok(Some(v)) => ("v2", v["loadbalancer"].clone()),
                Ok(None) => return Ok(Fact::NotFound),
                // The shared ELB's API may answer a missing one without ELB's code (Neutron's
                // 404): the v2 list filtered by the id decides, or the error stands.
                Err(e @ CloudError::Other(_)) => match v2_listed(call, &project, id).await {
                    Some(Some(a)) => ("v2", a),
                    Some(None) => return Ok(Fact::NotFound),
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    };
    let mut lbs = [from_attrs(id, version, &attrs)];
    listeners(
        call,
        version,
        &project,
        &mut lbs,
        format!("listeners of {id}"),
    )
    .await?;
    let [lb] = lbs;
    Ok(Fact::Found(lb))
}

/// The shared ELB `id` as the v2 list filtered by it says: `Some(None)` when it lists none,
/// `None` when the list fails or names another (it decides nothing then).
async fn v2_listed(call: &Call<'_>, project: &str, id: &str) -> Option<Option<Value>> {
    let path = format!("/v2/{project}/elb/loadbalancers");
    let query = vec![("id".to_string(), id.to_string())];
    let listed = get(call, "ListLoadBalancersV2", path, query).await.ok()??;
    match listed["loadbalancers"].as_array()?.as_slice() {
        [] => Some(None),
        [a] if a["id"].as_str() == Some(id) => Some(Some(a.clone())),
        _ => None,
    }
}

/// Many ELBs in two paged v3 lists (`id` repeated, then `loadbalancer_id` repeated). A shared
/// ELB only v2 knows is not listed: the caller asks for it alone.
pub(crate) async fn fetch_many(
    call: &Call<'_>,
    ids: &[String],
) -> Result<Vec<LoadBalancer>, CloudError> {
    let project = project(call)?;
    let what = format!("{} load balancers from {}", ids.len(), ids[0]);
    let query: Vec<(String, String)> = ids
        .iter()
        .map(|id| ("id".to_string(), id.clone()))
        .collect();
    let path = format!("/v3/{project}/elb/loadbalancers");
    let list = read_list(
        call,
        "ListLoadBalancers",
        path,
        query,
        "loadbalancers",
        what.clone(),
    )
    .await?;
    let mut lbs = Vec::new();
    for a in &list {
        if let Some(id) = a["id"]
            .as_str()
            .and_then(|id| ids.iter().find(|i| *i == id))
        {
            lbs.push(from_attrs(id, "v3", a));
        }
    }
    if !lbs.is_empty() {
        listeners(
            call,
            "v3",
            &project,
            &mut lbs,
            format!("listeners of {what}"),
        )
        .await?;
    }
    Ok(lbs)
}

/// Huawei's client for the layers above.
pub(crate) struct Huawei;

impl Client for Huawei {
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

    #[test]
    fn only_documented_codes_are_not_found() {
        use serde_json::json;
        let err = |code: &str| json!({"error_code": code, "error_msg": "m", "request_id": "r"});
        assert_eq!(classify(404, &err("ELB.8904")), Reply::NotFound);
        // The gateway's own 404 (a wrong path), or a bare one, is no answer about the ELB.
        assert!(matches!(
            classify(404, &err("APIGW.0101")),
            Reply::Fail(CloudError::BadEndpoint(_))
        ));
        assert!(matches!(
            classify(404, &json!({"error": "no such API"})),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(429, &err("APIGW.0308")),
            Reply::Fail(CloudError::Throttled(_))
        ));
        for code in [
            "APIGW.0301",
            "APIGW.0302",
            "APIGW.0304",
            "APIGW.0307",
            "ELB.1102",
            "ELB.9804",
            "SYS.0403",
        ] {
            assert!(
                matches!(classify(400, &err(code)), Reply::Fail(CloudError::Auth(_))),
                "{code}"
            );
        }
        for (status, code) in [(404, "ELB.1002"), (400, "ELB.1003"), (404, "ELB.9800")] {
            assert_eq!(classify(status, &err(code)), Reply::NotFound, "{code}");
        }
        // "The EIP already exists" and "invalid input" are neither a missing ELB nor a rate
        // limit; a 403 "resource cannot be found" is no refusal of the credentials.
        for (status, code) in [(400, "ELB.1101"), (400, "ELB.8902"), (403, "ELB.8903")] {
            assert!(
                matches!(
                    classify(status, &err(code)),
                    Reply::Fail(CloudError::Other(_))
                ),
                "{code}"
            );
        }
    }

    #[test]
    fn ccm_made_load_balancers_are_told_by_name_or_description() {
        let v = |n: &str, d: &str| serde_json::json!({"name": n, "description": d});
        assert_eq!(
            created_by(&v("k8s_service_c1_shop_web", "")),
            CreatedBy::Ccm
        );
        assert_eq!(
            created_by(&v(
                "x",
                "Created by the ELB service(shop/web) of the k8s cluster(c1)."
            )),
            CreatedBy::Ccm
        );
        assert_eq!(created_by(&v("shop-elb", "ours")), CreatedBy::User);
    }
}
