//! How Volcengine's OpenAPIs answer (`ResponseMetadata.Error`, in any HTTP status), for its
//! load balancer API and its STS alike.

use serde_json::Value;

use crate::cloud::base::outcome::{CloudError, Reply, by_status, describe};

/// The gateway's common codes (429).
const THROTTLED: &[&str] = &[
    "FlowLimitExceeded",
    "RequestLimitExceeded",
    "AccountFlowLimitExceeded",
    "Throttling",
];
/// The gateway's common credential and permission codes.
const AUTH: &[&str] = &[
    "InvalidAccessKey",
    "SignatureDoesNotMatch",
    "InvalidCredential",
    "InvalidAuthorization",
    "InvalidSecretToken",
    "AccessDenied",
    "InvalidTimestamp",
    "MissingSignature",
    "MissingAuthenticationToken",
    "InvalidClientTokenId",
    "LackPolicy",
    "LackProjectPolicy",
];

/// The gateway's "no such service / action or version" (404): a wrong endpoint, not a missing
/// load balancer.
const NO_API: &[&str] = &["ServiceNotFound", "InvalidActionOrVersion"];

/// Codes read as "no such load balancer" (CLB and NLB). Volcengine publishes none, so a
/// single look-up confirms them (and any other error it cannot place) with the list
/// filtered by the id, as Volcengine's own Terraform provider decides "gone": see `fetch` in `clients::volcengine`.
const NOT_FOUND: &[&str] = &[
    "InvalidLoadBalancer.NotFound",
    "InvalidLoadBalancerId.NotFound",
    "ResourceNotFound.LoadBalancer",
];

/// Maps one answer: errors are `ResponseMetadata.Error`, in any HTTP status.
pub fn classify(status: u16, body: &Value) -> Reply {
    let err = &body["ResponseMetadata"]["Error"];
    let code = err["Code"].as_str().unwrap_or_default();
    if status < 300 && code.is_empty() {
        return Reply::Ok(body["Result"].clone());
    }
    if NOT_FOUND.contains(&code) {
        return Reply::NotFound;
    }
    let message = err["Message"].as_str().unwrap_or_default();
    let what = describe(status, code, message);
    Reply::Fail(if THROTTLED.contains(&code) {
        CloudError::Throttled(what)
    } else if NO_API.contains(&code) {
        CloudError::BadEndpoint(what)
    } else if AUTH.contains(&code) {
        CloudError::Auth(what)
    } else {
        by_status(status.max(400), code, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(code: &str) -> Value {
        json!({"ResponseMetadata": {"RequestId": "r", "Error": {"Code": code, "Message": "m"}}})
    }

    #[test]
    fn only_documented_codes_are_not_found() {
        assert_eq!(
            classify(404, &err("InvalidLoadBalancer.NotFound")),
            Reply::NotFound
        );
        assert!(matches!(
            classify(404, &json!({"message": "404 page not found"})),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(429, &err("FlowLimitExceeded")),
            Reply::Fail(CloudError::Throttled(_))
        ));
        // A wrong endpoint or version: the gateway's 404, never "not found".
        for code in ["InvalidActionOrVersion", "ServiceNotFound"] {
            assert!(
                matches!(
                    classify(404, &err(code)),
                    Reply::Fail(CloudError::BadEndpoint(_))
                ),
                "{code}"
            );
        }
        assert!(matches!(
            classify(429, &err("AccountFlowLimitExceeded")),
            Reply::Fail(CloudError::Throttled(_))
        ));
        for code in [
            "InvalidAccessKey",
            "SignatureDoesNotMatch",
            "AccessDenied",
            "MissingAuthenticationToken",
            "LackPolicy",
        ] {
            assert!(
                matches!(classify(400, &err(code)), Reply::Fail(CloudError::Auth(_))),
                "{code}"
            );
        }
        // A bad page token is not a credentials problem.
        assert!(matches!(
            classify(400, &err("InvalidNextToken.Malformed")),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(200, &json!({"Result": {}})),
            Reply::Ok(_)
        ));
    }
}
