//! Volcengine: CLB and NLB through the CLB OpenAPI (version 2020-04-01:
//! DescribeLoadBalancerAttributes, DescribeListeners, DescribeNetworkLoadBalancerAttributes,
//! DescribeNLBListeners), HMAC-SHA256 (V4) signed for service `clb`.
//!
//! Mapping: CLB `Type` public/private and an NLB zone's `Ipv4EipId` give the address type, `VpcId` the
//! VPC. Volcengine's CCM is not published and its documentation (seed 004) names no tag it
//! puts on the load balancers it creates, so `createdBy` stays unknown; listeners count as
//! external (on Volcengine Services share listeners the user made, seed 004).

use serde_json::Value;

use super::sign::{self, Req};
use super::{Call, CloudError, Fact, non_empty, status_error};
use crate::vocab::lb::{AddressType, LbKind, LoadBalancer};
use crate::vocab::provider::Provider;

const VERSION: &str = "2020-04-01";
const SERVICE: &str = "clb";
const THROTTLED: &[&str] = &["FlowLimitExceeded", "Throttling", "RequestLimitExceeded"];
const AUTH: &[&str] = &[
    "InvalidAccessKey",
    "SignatureDoesNotMatch",
    "InvalidCredential",
    "InvalidAuthorization",
    "InvalidSecretToken",
    "AccessDenied",
    "InvalidTimestamp",
];

/// `None` when the load balancer does not exist.
async fn action(
    call: &Call<'_>,
    action: &'static str,
    mut query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    let (base, host) = call.base(format!("https://clb.{}.volcengineapi.com", call.region))?;
    query.push(("Action".into(), action.into()));
    query.push(("Version".into(), VERSION.into()));
    let mut req = Req {
        method: "GET",
        host,
        path: "/".into(),
        query,
        ..Default::default()
    };
    sign::volcengine(&mut req, &call.creds, &call.stamp(), call.region, SERVICE);
    let answer = call.send(action, &base, &req).await?;
    let body = answer.body()?;
    let err = &body["ResponseMetadata"]["Error"];
    let code = err["Code"].as_str().unwrap_or_default();
    if answer.status < 300 && code.is_empty() {
        return Ok(Some(body["Result"].clone()));
    }
    let message = call.scrub(err["Message"].as_str().unwrap_or_default());
    let what = format!("HTTP {} {code}: {message}", answer.status);
    if THROTTLED.contains(&code) {
        return Err(CloudError::Throttled(what));
    }
    if AUTH.contains(&code) || super::about_credentials(code) {
        return Err(CloudError::Auth(what));
    }
    if super::load_balancer_missing(answer.status, code) {
        return Ok(None);
    }
    Err(status_error(answer.status.max(400), code, &message))
}

/// Listener pages read at most (100 each).
const MAX_PAGES: usize = 10;

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let nlb = id.starts_with("nlb-");
    let by_id = || vec![("LoadBalancerId".to_string(), id.to_string())];
    let attrs_action = if nlb {
        "DescribeNetworkLoadBalancerAttributes"
    } else {
        "DescribeLoadBalancerAttributes"
    };
    let Some(attrs) = action(call, attrs_action, by_id()).await? else {
        return Ok(Fact::NotFound);
    };
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
    let mut token = String::new();
    for page in 1..=MAX_PAGES {
        let mut query = by_id();
        let list_action = if nlb {
            query.push(("MaxResults".into(), "100".into()));
            if !token.is_empty() {
                query.push(("NextToken".into(), token.clone()));
            }
            "DescribeNLBListeners"
        } else {
            query.push(("PageNumber".into(), page.to_string()));
            query.push(("PageSize".into(), "100".into()));
            "DescribeListeners"
        };
        let Some(result) = action(call, list_action, query).await? else {
            return Ok(Fact::NotFound);
        };
        let list = result["Listeners"].as_array().cloned().unwrap_or_default();
        for l in &list {
            lb.listeners.extend(super::listener(
                &l["Port"],
                &l["Protocol"],
                "external".into(),
            ));
        }
        let more = if nlb {
            token = result["NextToken"].as_str().unwrap_or_default().to_string();
            !token.is_empty()
        } else {
            let total = result["TotalCount"].as_u64().unwrap_or(0);
            (page as u64) * 100 < total
        };
        if !more || list.is_empty() {
            break;
        }
    }
    Ok(Fact::Found(lb))
}
