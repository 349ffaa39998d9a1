//! CTyun: the ELB API (`/v4/elb/show-loadbalancer`, `/v4/elb/list-listener`), EOP signed.
//!
//! Mapping: `resourceType` external/internal is the address type, `vpcID` the VPC. CTyun's
//! CCM is not published and its documentation (seed 000) names no tag or name it puts on the
//! load balancers and listeners it creates, so `createdBy` stays unknown and every listener
//! counts as external. A Service's own listeners are still told apart: see
//! `rules::listeners` (the ports the Service already had on the same load balancer).

use serde_json::Value;

use super::sign::{self, Req};
use super::{
    Call, CloudError, Fact, about_credentials, listener, load_balancer_missing, non_empty,
    status_error, text,
};
use crate::vocab::lb::{AddressType, LbKind, LoadBalancer};
use crate::vocab::provider::Provider;

/// CTyun's ELB API is served from one global endpoint for every region.
const PUBLIC: &str = "https://ctelb-global.ctapi.ctyun.cn";

/// `None` when the load balancer does not exist.
async fn get(
    call: &Call<'_>,
    operation: &'static str,
    path: &str,
    query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    let (base, host) = call.base(PUBLIC.into())?;
    let mut req = Req {
        method: "GET",
        host,
        path: path.into(),
        query,
        ..Default::default()
    };
    sign::ctyun(&mut req, &call.creds, &call.stamp());
    let answer = call.send(operation, &base, &req).await?;
    let body = answer.body()?;
    let code = text(&body, &["errorCode", "error"]);
    let message = call.scrub(text(&body, &["message", "description"]));
    let ok = body["statusCode"].as_i64() == Some(800) || body["statusCode"].as_str() == Some("800");
    if answer.status < 300 && ok {
        return Ok(Some(body));
    }
    if load_balancer_missing(answer.status, code) {
        return Ok(None);
    }
    let lower = code.to_ascii_lowercase();
    let what = format!("HTTP {} {code}: {message}", answer.status);
    if lower.contains("throttl") || lower.contains("flowcontrol") || lower.contains("ratelimit") {
        return Err(CloudError::Throttled(what));
    }
    if about_credentials(code) {
        return Err(CloudError::Auth(what));
    }
    if answer.status < 300 {
        return Err(CloudError::Other(what));
    }
    Err(status_error(answer.status, code, &message))
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("elbID".to_string(), id.to_string()),
    ];
    let Some(shown) = get(call, "ShowLoadBalancer", "/v4/elb/show-loadbalancer", query).await?
    else {
        return Ok(Fact::NotFound);
    };
    let Some(attrs) = shown["returnObj"].as_array().and_then(|a| a.first()) else {
        return Ok(Fact::NotFound);
    };
    let mut lb = LoadBalancer::new(id, Provider::Ctyun);
    lb.kind = Some(LbKind::Elb);
    lb.address_type = match attrs["resourceType"].as_str() {
        Some("external") => Some(AddressType::Internet),
        Some("internal") => Some(AddressType::Intranet),
        _ => None,
    };
    lb.vpc_id = non_empty(&attrs["vpcID"]);
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("loadBalancerID".to_string(), id.to_string()),
    ];
    let Some(listed) = get(call, "ListListener", "/v4/elb/list-listener", query).await? else {
        return Ok(Fact::NotFound);
    };
    for l in listed["returnObj"].as_array().into_iter().flatten() {
        lb.listeners.extend(listener(
            &l["protocolPort"],
            &l["protocol"],
            "external".into(),
        ));
    }
    Ok(Fact::Found(lb))
}
