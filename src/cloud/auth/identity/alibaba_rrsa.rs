//! Alibaba Cloud RRSA: the pod's ServiceAccount token (the file ack-pod-identity-webhook
//! mounts) exchanged at STS `AssumeRoleWithOIDC` (2015-04-01) for the role's credentials,
//! the request `alibabacloud-credentials`' `OIDCRoleArnCredentialsProvider` sends.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::answer::{self, send};
use super::issuer::{Ctx, Issued, Issuer, read_token};
use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::sign::Req;
use crate::cloud::base::outcome::{CloudError, Reply, by_status, describe};

/// The SDK asks for an hour and renews 15 minutes before expiry.
const DURATION_SECONDS: u32 = 3600;
const MARGIN: Duration = Duration::from_secs(15 * 60);

pub struct Rrsa {
    pub role_arn: String,
    pub provider_arn: String,
    pub token_file: String,
    pub session_name: String,
    /// `https://sts.aliyuncs.com`, or the region's, VPC or configured endpoint.
    pub endpoint: String,
}

impl Rrsa {
    async fn exchange(&self, ctx: &Ctx<'_>) -> Result<Issued, CloudError> {
        let deadline = Instant::now() + ctx.budget;
        let token = read_token(&self.token_file)?;
        let timestamp = time::OffsetDateTime::now_utc();
        let query = [
            ("Action", "AssumeRoleWithOIDC".to_string()),
            ("Format", "JSON".into()),
            ("Version", "2015-04-01".into()),
            ("DurationSeconds", DURATION_SECONDS.to_string()),
            ("RoleArn", self.role_arn.clone()),
            ("OIDCProviderArn", self.provider_arn.clone()),
            ("OIDCToken", token.clone()),
            ("RoleSessionName", self.session_name.clone()),
            (
                "Timestamp",
                format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                    timestamp.year(),
                    u8::from(timestamp.month()),
                    timestamp.day(),
                    timestamp.hour(),
                    timestamp.minute(),
                    timestamp.second()
                ),
            ),
        ];
        let req = Req {
            method: "GET",
            path: "/".into(),
            query: query.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            headers: vec![("Accept".into(), "application/json".into())],
            ..Default::default()
        };
        let a = send(ctx.http, &self.endpoint, &req, deadline).await?;
        let what = "AssumeRoleWithOIDC";
        let v = answer::json(&a, what)?;
        if a.status != 200 {
            return Err(sts_error(a.status, &v, &token));
        }
        let c = &v["Credentials"];
        let creds = Creds {
            access_key_id: answer::field(c, "AccessKeyId", what)?.to_string(),
            access_key_secret: answer::field(c, "AccessKeySecret", what)?.to_string(),
            security_token: Some(answer::field(c, "SecurityToken", what)?.to_string()),
            project_id: None,
        };
        let expires = answer::expiry(answer::field(c, "Expiration", what)?, what)?;
        Ok(answer::issued(creds, expires, MARGIN))
    }
}

/// STS's error answer (`Code`, `Message`): throttling and a refused token or role have
/// their own codes, often in an HTTP 400.
fn sts_error(status: u16, v: &serde_json::Value, token: &str) -> CloudError {
    let code = v["Code"].as_str().unwrap_or_default();
    let message = answer::scrub(v["Message"].as_str().unwrap_or_default(), &[token]);
    let what = describe(status, code, &message);
    if code.starts_with("AuthenticationFail")
        || code.starts_with("InvalidParameter.OIDC")
        || code.starts_with("EntityNotExist")
        || code.starts_with("NoPermission")
        || code.starts_with("InvalidSecurityToken")
    {
        return CloudError::Auth(what);
    }
    match crate::cloud::auth::replies::alibaba::classify(status, v) {
        Reply::Fail(CloudError::Throttled(_)) => CloudError::Throttled(what),
        Reply::Fail(CloudError::Auth(_)) => CloudError::Auth(what),
        _ => by_status(status, code, &message),
    }
}

impl Issuer for Rrsa {
    fn describe(&self) -> String {
        format!(
            "RRSA (AssumeRoleWithOIDC for {} at {})",
            self.role_arn, self.endpoint
        )
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(self.exchange(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sts_errors_keep_their_kind_and_never_the_token() {
        let e = sts_error(
            400,
            &json!({"Code": "Throttling.User", "Message": "flow control"}),
            "tok",
        );
        assert!(matches!(e, CloudError::Throttled(_)), "{e:?}");
        let e = sts_error(
            400,
            &json!({"Code": "AuthenticationFail.OIDCToken.Expired", "Message": "the token eyJhbGciOi is expired"}),
            "eyJhbGciOi",
        );
        assert!(
            matches!(&e, CloudError::Auth(m) if m.contains("Expired") && !m.contains("eyJ")),
            "{e:?}"
        );
        let e = sts_error(
            503,
            &json!({"Code": "ServiceUnavailable", "Message": ""}),
            "t",
        );
        assert!(matches!(e, CloudError::Server(_)), "{e:?}");
        let e = sts_error(404, &json!({"Code": "InvalidLoadBalancerId.NotFound"}), "t");
        assert!(matches!(e, CloudError::Other(_)), "{e:?}");
    }
}
