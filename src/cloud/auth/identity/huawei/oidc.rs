//! A ServiceAccount token exchanged at IAM's STS for an agency's temporary credentials
//! (huaweicloudsdkcore's `OidcStsCredentialProvider` and `OidcStsAccessor`):
//! `POST /v5/agencies/assume-with-oidc`, unsigned, the token in the body.

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

pub const PROVIDER_URN: &str = "HUAWEICLOUD_OIDC_PROVIDER_URN";
pub const AGENCY_URN: &str = "HUAWEICLOUD_OIDC_AGENCY_URN";
pub const ID_TOKEN: &str = "HUAWEICLOUD_OIDC_ID_TOKEN";
pub const TOKEN_FILE: &str = "HUAWEICLOUD_OIDC_TOKEN_FILE";
pub const SESSION_NAME: &str = "HUAWEICLOUD_OIDC_SESSION_NAME";
pub const DURATION_SECONDS: &str = "HUAWEICLOUD_OIDC_DURATION_SECONDS";
pub const POLICY: &str = "HUAWEICLOUD_OIDC_POLICY";
pub const POLICY_IDS: &str = "HUAWEICLOUD_OIDC_POLICY_IDS";
pub const STS_ENDPOINT: &str = "HUAWEICLOUD_SDK_STS_ENDPOINT";
/// The SDK's STS endpoint when none is set (`StsHelper.DEFAULT_STS_ENDPOINT`).
pub const DEFAULT_STS: &str = "https://sts.cn-north-4.myhuaweicloud.com";
const PATH: &str = "/v5/agencies/assume-with-oidc";
const DEFAULT_SESSION: &str = "oidc-sts-session";
const DEFAULT_DURATION: u64 = 3600;

/// The token as the SDK takes it: the variable's value before the file's.
enum Token {
    Inline(String),
    File(String),
}

pub struct Oidc {
    sts: Target,
    provider_urn: String,
    agency_urn: String,
    token: Token,
    session_name: String,
    duration_seconds: u64,
    policy: Option<String>,
    policy_ids: Option<Vec<String>>,
}

impl Oidc {
    /// `None` unless the provider, the agency and a token are all set (the SDK's chain then
    /// moves on).
    pub fn from_env(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Option<Self>, CredsError> {
        let token = match (var(env, ID_TOKEN), var(env, TOKEN_FILE)) {
            (Some(t), _) => Token::Inline(t),
            (None, Some(f)) => Token::File(f),
            (None, None) => return Ok(None),
        };
        let (Some(provider_urn), Some(agency_urn)) = (var(env, PROVIDER_URN), var(env, AGENCY_URN))
        else {
            return Ok(None);
        };
        let duration_seconds = match var(env, DURATION_SECONDS) {
            None => DEFAULT_DURATION,
            Some(d) => d.parse().map_err(|_| {
                CredsError::Missing(format!("{DURATION_SECONDS}: \"{d}\" is not a number"))
            })?,
        };
        let url = https_endpoint(cfg.sts_endpoint.as_deref(), env, STS_ENDPOINT, DEFAULT_STS)?;
        let policy_ids = var(env, POLICY_IDS).map(|ids| {
            ids.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        });
        Ok(Some(Self {
            sts: Target::parse(&url, STS_ENDPOINT)?,
            provider_urn,
            agency_urn,
            token,
            session_name: var(env, SESSION_NAME).unwrap_or_else(|| DEFAULT_SESSION.into()),
            duration_seconds,
            policy: var(env, POLICY),
            policy_ids: policy_ids.filter(|ids| !ids.is_empty()),
        }))
    }
}

impl Issuer for Oidc {
    fn describe(&self) -> String {
        format!(
            "Huawei Cloud OIDC (assume-with-oidc at {} for {})",
            self.sts.base, self.agency_urn
        )
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let started = Instant::now();
            let id_token = match &self.token {
                Token::Inline(t) => t.clone(),
                Token::File(f) => read_token(f)?,
            };
            let mut body = json!({
                "provider_urn": self.provider_urn,
                "agency_urn": self.agency_urn,
                "agency_session_name": self.session_name,
                "id_token": id_token,
                "duration_seconds": self.duration_seconds,
            });
            if let Some(p) = &self.policy {
                body["policy"] = json!(p);
            }
            if let Some(ids) = &self.policy_ids {
                body["policy_ids"] = json!(ids);
            }
            let req = Req {
                method: "POST",
                host: self.sts.host.clone(),
                path: format!("{}{PATH}", self.sts.path),
                headers: vec![(
                    "Content-Type".into(),
                    "application/json;charset=UTF-8".into(),
                )],
                body: body.to_string().into_bytes(),
                ..Default::default()
            };
            let budget = ctx.budget.saturating_sub(started.elapsed());
            let hide = |e| answer::hide(e, &[&id_token]);
            let got = ctx
                .http
                .send(&self.sts.base, &req, budget)
                .await
                .map_err(hide)?;
            let (creds, expires) = answer::credential(&got).map_err(hide)?;
            Ok(renewable(creds, expires))
        })
    }
}
