//! CCE pod identity (huaweicloudsdkcore's `PodIdentityCredentialProvider` and
//! `PodIdentityAccessor`): the agent at `HC_CONTAINER_CREDENTIALS_FULL_URI` is asked with
//! `POST {}` and the token file's content as the `Authorization` header.

use futures::future::BoxFuture;

use super::answer;
use super::target::{Target, renewable};
use crate::cloud::auth::creds::CredsError;
use crate::cloud::auth::identity::issuer::{Ctx, Env, Issued, Issuer, read_token, var};
use crate::cloud::auth::sign::Req;
use crate::cloud::base::outcome::CloudError;

pub const FULL_URI: &str = "HC_CONTAINER_CREDENTIALS_FULL_URI";
pub const TOKEN_FILE: &str = "HC_CONTAINER_AUTHORIZATION_TOKEN_FILE";

pub struct Pod {
    agent: Target,
    token_file: String,
}

impl Pod {
    /// `None` unless both variables are set, as CCE's pod identity webhook sets them.
    pub fn from_env(env: Env<'_>) -> Result<Option<Self>, CredsError> {
        let (Some(uri), Some(token_file)) = (var(env, FULL_URI), var(env, TOKEN_FILE)) else {
            return Ok(None);
        };
        Ok(Some(Self {
            agent: Target::parse(&uri, FULL_URI)?,
            token_file,
        }))
    }
}

impl Issuer for Pod {
    fn describe(&self) -> String {
        format!(
            "Huawei Cloud CCE pod identity (at {}{})",
            self.agent.base, self.agent.path
        )
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let token = read_token(&self.token_file)?;
            let req = Req {
                method: "POST",
                host: self.agent.host.clone(),
                path: if self.agent.path.is_empty() {
                    "/".into()
                } else {
                    self.agent.path.clone()
                },
                headers: vec![
                    ("Authorization".into(), token.clone()),
                    ("Content-Type".into(), "application/json".into()),
                ],
                body: b"{}".to_vec(),
                ..Default::default()
            };
            let hide = |e| answer::hide(e, &[&token]);
            let got = ctx
                .http
                .send(&self.agent.base, &req, ctx.budget)
                .await
                .map_err(hide)?;
            let (creds, expires) = answer::credential(&got).map_err(hide)?;
            Ok(renewable(creds, expires))
        })
    }
}
