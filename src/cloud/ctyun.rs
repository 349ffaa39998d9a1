//! CTyun: the ELB API (`/v4/elb/show-loadbalancer`, `/v4/elb/list-listener`), EOP signed.
//!
//! Mapping: `resourceType` external/internal is the address type, `vpcID` the VPC. CTyun's
//! CCM is not published and its documentation (seed 000) names no tag or name it puts on the
//! load balancers and listeners it creates, so `createdBy` stays unknown and every listener
//! counts as external. A Service's own listeners are still told apart: see
//! `rules::listeners` (the ports the Service already had on the same load balancer).
//!
//! Errors come as `statusCode` 900 with an `errorCode`, often inside an HTTP 200.

use serde_json::Value;

use super::outcome::{CloudError, Reply, by_status, describe};
use super::paging::Pager;
use super::sign::{self, Req};
use super::transport::{Call, text};
use super::{Fact, LoadBalancer};
use crate::vocab::lb::{AddressType, LbKind};
use crate::vocab::provider::Provider;

/// CTyun's ELB API is served from one global endpoint for every region.
const PUBLIC: &str = "https://ctelb-global.ctapi.ctyun.cn";

/// The documented "no such load balancer".
const NOT_FOUND: &[&str] = &["Elb.LoadBalancer.NotFound", "Elb.Elb.NotFound"];
const THROTTLED: &[&str] = &[
    "Openapi.Throttling",
    "Openapi.FlowControl",
    "Elb.Throttling",
];
const AUTH: &[&str] = &[
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
        return Err(CloudError::Other(format!(
            "the API answered for \"{id}\" without the load balancer"
        )));
    };
    let mut lb = LoadBalancer::new(id, Provider::Ctyun);
    lb.kind = Some(LbKind::Elb);
    lb.address_type = match attrs["resourceType"].as_str() {
        Some("external") => Some(AddressType::Internet),
        Some("internal") => Some(AddressType::Intranet),
        _ => None,
    };
    lb.vpc_id = super::non_empty(&attrs["vpcID"]);
    // One page: list-listener answers every listener of a load balancer at once.
    let pager = Pager::new(format!("listeners of {id}"));
    let query = vec![
        ("regionID".to_string(), call.region.to_string()),
        ("loadBalancerID".to_string(), id.to_string()),
    ];
    let Some(listed) = get(call, "ListListener", "/v4/elb/list-listener", query).await? else {
        return Err(pager.vanished());
    };
    for l in listed["returnObj"].as_array().into_iter().flatten() {
        lb.listeners.extend(super::listener(
            &l["protocolPort"],
            &l["protocol"],
            "external".into(),
        ));
    }
    Ok(Fact::Found(lb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_documented_code_is_not_found() {
        let err = |code: &str| json!({"statusCode": 900, "errorCode": code, "message": "m"});
        assert_eq!(
            classify(200, &err("Elb.LoadBalancer.NotFound")),
            Reply::NotFound
        );
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
