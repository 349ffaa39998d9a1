//! How Alibaba Cloud's APIs answer (`Code` and `Message`), for its load balancer APIs and
//! its STS alike.

use serde_json::Value;

use crate::cloud::base::fact::text;
use crate::cloud::base::outcome::{CloudError, Reply, by_status, describe};

const NOT_FOUND: &[&str] = &[
    "InvalidLoadBalancerId.NotFound",
    "ResourceNotFound.loadBalancer",
    "ResourceNotFound.LoadBalancer",
];
/// The common auth codes, and NLB's `Forbidden.NoPermission` (GetLoadBalancerAttribute's
/// documented errors).
const AUTH: &[&str] = &[
    "InvalidAccessKeyId.NotFound",
    "InvalidAccessKeyId.Inactive",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "IncompleteSignature",
    "InvalidSecurityToken.Expired",
    "InvalidSecurityToken.Malformed",
    "InvalidSecurityToken.MismatchWithAccessKey",
    "Forbidden.RAM",
    "Forbidden.AccessKeyDisabled",
    "NoPermission",
    "Forbidden.NoPermission",
    "Forbidden",
];

/// Maps one answer: errors are `Code` and `Message`, throttling and credential errors
/// often in an HTTP 400.
pub fn classify(status: u16, body: &Value) -> Reply {
    if status < 300 {
        return Reply::Ok(body.clone());
    }
    let code = text(body, &["Code"]);
    let message = text(body, &["Message"]);
    if NOT_FOUND.contains(&code) {
        return Reply::NotFound;
    }
    let what = describe(status, code, message);
    Reply::Fail(if code.starts_with("Throttling") {
        CloudError::Throttled(what)
    } else if AUTH.contains(&code) {
        CloudError::Auth(what)
    } else {
        by_status(status, code, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_documented_codes_are_not_found_and_400s_are_classified() {
        use serde_json::json;
        let err = |code: &str| json!({"Code": code, "Message": "m", "RequestId": "r"});
        assert_eq!(
            classify(404, &err("InvalidLoadBalancerId.NotFound")),
            Reply::NotFound
        );
        assert!(matches!(
            classify(400, &err("Throttling.User")),
            Reply::Fail(CloudError::Throttled(_))
        ));
        assert!(matches!(
            classify(400, &err("SignatureDoesNotMatch")),
            Reply::Fail(CloudError::Auth(_))
        ));
        // The common code for an unknown key comes as a 404: still no "not found".
        assert!(matches!(
            classify(404, &err("InvalidAccessKeyId.NotFound")),
            Reply::Fail(CloudError::Auth(_))
        ));
        assert!(matches!(
            classify(400, &err("Forbidden.NoPermission")),
            Reply::Fail(CloudError::Auth(_))
        ));
        assert_eq!(
            classify(404, &err("ResourceNotFound.loadBalancer")),
            Reply::NotFound
        );
        // An invalid page token is not a credentials problem.
        assert!(matches!(
            classify(400, &err("IllegalParam.NextToken")),
            Reply::Fail(CloudError::Other(_))
        ));
        assert!(matches!(
            classify(404, &err("InvalidAction.NotFound")),
            Reply::Fail(CloudError::Other(_))
        ));
    }
}
