//! The ECS agency's temporary security key from the instance metadata service
//! (huaweicloudsdkcore's `MetadataAccessor`): a metadata token first
//! (`PUT /meta-data/latest/api/token`), then `GET /openstack/latest/securitykey` with it. A
//! service without tokens (404, 405 or 503 to the first) is asked without one.

use std::time::Instant;

use futures::future::BoxFuture;

use super::answer;
use super::target::{Target, renewable};
use crate::cloud::auth::identity::issuer::{Ctx, Issued, Issuer};
use crate::cloud::auth::sign::Req;
use crate::cloud::base::outcome::CloudError;
use crate::vocab::config::CredentialsConfig;

/// The SDK's (fixed) metadata service; `inventory.cloud.credentials.metadataEndpoint` replaces it.
pub const DEFAULT_METADATA: &str = "http://169.254.169.254";
const TOKEN_PATH: &str = "/meta-data/latest/api/token";
const KEY_PATH: &str = "/openstack/latest/securitykey";
/// The SDK asks for a token living 6 hours.
const TOKEN_TTL: &str = "21600";
/// The metadata service's answer when the ECS has no agency: no token helps then.
const NO_AGENCY: &str = "Please configure Cloud Service Agency first";

pub struct Metadata {
    base: String,
}

impl Metadata {
    pub fn new(cfg: &CredentialsConfig) -> Self {
        let base = cfg
            .metadata_endpoint
            .as_deref()
            .map(|u| u.trim().trim_end_matches('/'))
            .unwrap_or(DEFAULT_METADATA);
        Self {
            base: base.to_string(),
        }
    }

    fn host(&self) -> String {
        Target::parse(&self.base, "metadataEndpoint")
            .map(|t| t.host)
            .unwrap_or_default()
    }

    /// A token, `None` when the service has none to give (404, 405, 503), unless `needed`.
    async fn token(
        &self,
        ctx: &Ctx<'_>,
        budget: std::time::Duration,
        needed: bool,
    ) -> Result<Option<String>, CloudError> {
        let req = Req {
            method: "PUT",
            host: self.host(),
            path: TOKEN_PATH.into(),
            headers: vec![("X-Metadata-Token-Ttl-Seconds".into(), TOKEN_TTL.into())],
            ..Default::default()
        };
        let got = ctx.http.send(&self.base, &req, budget).await?;
        match got.status {
            200 => Ok(Some(String::from_utf8_lossy(&got.body).trim().to_string())),
            404 | 405 | 503 if !needed => Ok(None),
            _ => Err(answer::failure(&got)),
        }
    }

    async fn key(
        &self,
        ctx: &Ctx<'_>,
        budget: std::time::Duration,
        token: Option<&str>,
    ) -> Result<crate::cloud::base::http::Answer, CloudError> {
        let req = Req {
            method: "GET",
            host: self.host(),
            path: KEY_PATH.into(),
            headers: token
                .map(|t| vec![("X-Metadata-Token".into(), t.to_string())])
                .unwrap_or_default(),
            ..Default::default()
        };
        ctx.http.send(&self.base, &req, budget).await
    }
}

impl Issuer for Metadata {
    fn describe(&self) -> String {
        format!(
            "Huawei Cloud ECS metadata (the agency's security key at {})",
            self.base
        )
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let started = Instant::now();
            let left = || ctx.budget.saturating_sub(started.elapsed());
            let token = self.token(ctx, left(), false).await?;
            let mut got = self.key(ctx, left(), token.as_deref()).await?;
            if got.status == 401
                && token.is_none()
                && !String::from_utf8_lossy(&got.body).contains(NO_AGENCY)
            {
                let token = self.token(ctx, left(), true).await?;
                got = self.key(ctx, left(), token.as_deref()).await?;
            }
            let (creds, expires) = answer::credential(&got)?;
            Ok(renewable(creds, expires))
        })
    }
}
