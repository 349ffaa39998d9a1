//! Volcengine OIDC: the pod's ServiceAccount token exchanged at STS `AssumeRoleWithOIDC`
//! (2018-01-01) for the role's credentials, the unsigned request `volcengine-python-sdk`'s
//! `StsOidcCredentialProvider` sends (Action and Version in the query, the rest as a form).

use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::answer::{self, send};
use super::issuer::{Ctx, Issued, Issuer, read_token};
use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::sign::{Req, encode};
use crate::cloud::base::outcome::{CloudError, Reply};

/// The SDK asks for an hour and renews a minute before expiry.
const DURATION_SECONDS: u32 = 3600;
const MARGIN: Duration = Duration::from_secs(60);

pub struct Oidc {
    pub role_trn: String,
    pub token_file: String,
    pub session_name: String,
    /// `https://sts.volcengineapi.com`, or the configured one.
    pub endpoint: String,
}

impl Oidc {
    async fn exchange(&self, ctx: &Ctx<'_>) -> Result<Issued, CloudError> {
        let deadline = Instant::now() + ctx.budget;
        let token = read_token(&self.token_file)?;
        let form = [
            ("DurationSeconds", DURATION_SECONDS.to_string()),
            ("OIDCToken", token.clone()),
            ("RoleSessionName", self.session_name.clone()),
            ("RoleTrn", self.role_trn.clone()),
        ]
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&");
        let req = Req {
            method: "POST",
            path: "/".into(),
            query: vec![
                ("Action".into(), "AssumeRoleWithOIDC".into()),
                ("Version".into(), "2018-01-01".into()),
            ],
            headers: vec![
                ("Accept".into(), "application/json".into()),
                (
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
            ],
            body: form.into_bytes(),
            ..Default::default()
        };
        let a = send(ctx.http, &self.endpoint, &req, deadline).await?;
        let what = "AssumeRoleWithOIDC";
        let v = answer::json(&a, what)?;
        let result = match classify(a.status, &v) {
            Reply::Ok(r) => r,
            Reply::NotFound => return Err(CloudError::Other(format!("{what}: HTTP {}", a.status))),
            Reply::Fail(e) => return Err(e.map_text(|m| answer::scrub(m, &[&token]))),
        };
        let c = &result["Credentials"];
        let creds = Creds {
            access_key_id: answer::field(c, "AccessKeyId", what)?.to_string(),
            access_key_secret: answer::field(c, "SecretAccessKey", what)?.to_string(),
            security_token: Some(answer::field(c, "SessionToken", what)?.to_string()),
            project_id: None,
        };
        let at = c["Expiration"]
            .as_str()
            .or(c["ExpiredTime"].as_str())
            .ok_or_else(|| CloudError::Other(format!("{what}: the answer has no Expiration")))?;
        let expires = answer::expiry(at, what)?;
        Ok(answer::issued(creds, expires, MARGIN))
    }
}

/// STS answers like every Volcengine OpenAPI (`ResponseMetadata.Error`); a refused token or
/// role has its own codes.
fn classify(status: u16, v: &serde_json::Value) -> Reply {
    let code = v["ResponseMetadata"]["Error"]["Code"]
        .as_str()
        .unwrap_or_default();
    match crate::cloud::auth::replies::volcengine::classify(status, v) {
        Reply::Fail(CloudError::Other(m))
            if [
                "InvalidOIDC",
                "OIDC",
                "InvalidRole",
                "NoPermission",
                "InvalidParameter.OIDC",
            ]
            .iter()
            .any(|p| code.starts_with(p)) =>
        {
            Reply::Fail(CloudError::Auth(m))
        }
        r => r,
    }
}

impl Issuer for Oidc {
    fn describe(&self) -> String {
        format!(
            "Volcengine OIDC (AssumeRoleWithOIDC for {} at {})",
            self.role_trn, self.endpoint
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

    fn err(code: &str) -> serde_json::Value {
        json!({"ResponseMetadata": {"Error": {"Code": code, "Message": "m"}}})
    }

    #[test]
    fn sts_errors_keep_their_kind() {
        for (status, code, want) in [
            (429, "FlowLimitExceeded", "throttled"),
            (400, "InvalidOIDCToken", "auth_error"),
            (403, "AccessDenied", "auth_error"),
            (500, "InternalError", "server_error"),
            (400, "SomethingElse", "error"),
        ] {
            match classify(status, &err(code)) {
                Reply::Fail(e) => assert_eq!(e.label(), want, "{code}"),
                other => panic!("{code}: {other:?}"),
            }
        }
        let ok = json!({"ResponseMetadata": {}, "Result": {"Credentials": {}}});
        assert!(matches!(classify(200, &ok), Reply::Ok(_)));
    }
}
