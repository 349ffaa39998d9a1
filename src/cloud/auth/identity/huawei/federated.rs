//! Federated OIDC through IAM (huaweicloudsdkcore's `EnvCredentialProvider` with an IdP, and
//! `FederalAccessor`): the token file is exchanged for an unscoped IAM token
//! (`POST /v3.0/OS-AUTH/id-token/tokens`, the token back in `X-Subject-Token`), and that for
//! temporary credentials (`POST /v3.0/OS-CREDENTIAL/securitytokens`). Neither call is signed.

use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::json;

use super::answer;
use super::target::{Target, https_endpoint, renewable};
use crate::cloud::auth::creds::CredsError;
use crate::cloud::auth::identity::issuer::{Ctx, Env, Issued, Issuer, read_token, var};
use crate::cloud::auth::sign::Req;
use crate::cloud::base::outcome::CloudError;
use crate::vocab::config::CredentialsConfig;

pub const IDP_ID: &str = "HUAWEICLOUD_SDK_IDP_ID";
pub const ID_TOKEN_FILE: &str = "HUAWEICLOUD_SDK_ID_TOKEN_FILE";
pub const IAM_ENDPOINT: &str = "HUAWEICLOUD_SDK_IAM_ENDPOINT";
/// The SDK's IAM endpoint when none is set (`IamHelper.DEFAULT_ENDPOINT`).
pub const DEFAULT_IAM: &str = "https://iam.myhuaweicloud.com";
const TOKENS: &str = "/v3.0/OS-AUTH/id-token/tokens";
const SECURITY_TOKENS: &str = "/v3.0/OS-CREDENTIAL/securitytokens";
/// The SDK asks for 6 hours (`FederalAccessor._DEFAULT_DURATION_SECONDS`).
const DURATION_SECONDS: u64 = 6 * 60 * 60;
const JSON: &str = "application/json;charset=UTF-8";

pub struct Federated {
    iam: Target,
    idp_id: String,
    token_file: String,
}

impl Federated {
    /// `None` unless both the IdP and the token file are set (the SDK then takes an access
    /// key from the environment).
    pub fn from_env(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Option<Self>, CredsError> {
        let (Some(idp_id), Some(token_file)) = (var(env, IDP_ID), var(env, ID_TOKEN_FILE)) else {
            return Ok(None);
        };
        let url = https_endpoint(cfg.iam_endpoint.as_deref(), env, IAM_ENDPOINT, DEFAULT_IAM)?;
        Ok(Some(Self {
            iam: Target::parse(&url, IAM_ENDPOINT)?,
            idp_id,
            token_file,
        }))
    }

    fn post(&self, path: &str, headers: Vec<(String, String)>, body: serde_json::Value) -> Req {
        let mut headers = headers;
        headers.push(("Content-Type".into(), JSON.into()));
        Req {
            method: "POST",
            host: self.iam.host.clone(),
            path: format!("{}{path}", self.iam.path),
            headers,
            body: body.to_string().into_bytes(),
            ..Default::default()
        }
    }
}

impl Issuer for Federated {
    fn describe(&self) -> String {
        format!(
            "Huawei Cloud federated OIDC (IAM at {}, identity provider {})",
            self.iam.base, self.idp_id
        )
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let started = Instant::now();
            let left = || ctx.budget.saturating_sub(started.elapsed());
            let id_token = read_token(&self.token_file)?;
            let req = self.post(
                TOKENS,
                vec![("X-Idp-Id".into(), self.idp_id.clone())],
                json!({"auth": {"id_token": {"id": id_token}}}),
            );
            let hide = |e| answer::hide(e, &[&id_token]);
            let got = ctx
                .http
                .send(&self.iam.base, &req, left())
                .await
                .map_err(hide)?;
            if !(200..300).contains(&got.status) {
                return Err(hide(answer::failure(&got)));
            }
            let unscoped = answer::header(&got, "X-Subject-Token")?;
            let hide = |e| answer::hide(e, &[&id_token, &unscoped]);
            let req = self.post(
                SECURITY_TOKENS,
                Vec::new(),
                json!({"auth": {"identity": {
                    "methods": ["token"],
                    "token": {"id": unscoped, "duration_seconds": DURATION_SECONDS},
                }}}),
            );
            let got = ctx
                .http
                .send(&self.iam.base, &req, left())
                .await
                .map_err(hide)?;
            let (creds, expires) = answer::credential(&got).map_err(hide)?;
            Ok(renewable(creds, expires))
        })
    }
}
