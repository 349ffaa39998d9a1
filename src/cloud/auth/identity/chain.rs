//! The chain Alibaba Cloud's and Volcengine's SDKs share: an access key in the environment,
//! then a ServiceAccount token exchanged at STS, then the instance's role. Their profile
//! files have no place in a pod and are skipped. The metadata service is asked only when told
//! to (a role name, a metadata endpoint or `source: metadata`): off the cloud's instances,
//! every admission would otherwise wait on an address nobody answers.

use super::answer::flag;
use super::imds::Imds;
use super::issuer::{Env, Issuer, Selected, var};
use crate::cloud::auth::creds::{Creds, CredsError};
use crate::vocab::config::{CredentialSource, CredentialsConfig};
use crate::vocab::provider::Provider;

pub struct Chain {
    pub provider: Provider,
    /// For messages: "Alibaba Cloud".
    pub cloud: &'static str,
    /// What the access key is set with, for the message when nothing is.
    pub key_vars: &'static str,
    /// The STS provider when all its variables are set, and those variables.
    pub sts: Option<Result<Box<dyn Issuer>, CredsError>>,
    pub sts_vars: &'static [&'static str],
    /// The instance's role: its name's variable, the switch that turns it off, the provider.
    pub ecs_role: &'static str,
    pub ecs_disabled: &'static str,
    pub ecs: Imds,
}

impl Chain {
    pub fn select(self, cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
        let ecs_off = flag(env, self.ecs_disabled);
        match cfg.source {
            CredentialSource::Static => Creds::from_env(self.provider, env).map(Selected::Static),
            CredentialSource::Oidc => match self.sts {
                Some(sts) => sts.map(Selected::Issuer),
                None => Err(self.sts_unset(env)),
            },
            CredentialSource::Metadata if ecs_off => Err(CredsError::Missing(format!(
                "inventory.cloud.credentials.source is metadata, but {} is true",
                self.ecs_disabled
            ))),
            CredentialSource::Metadata => Ok(Selected::Issuer(Box::new(self.ecs))),
            CredentialSource::PodIdentity => Err(CredsError::Missing(format!(
                "{} has no pod identity source; use oidc",
                self.cloud
            ))),
            CredentialSource::Auto => {
                if let Ok(creds) = Creds::from_env(self.provider, env) {
                    return Ok(Selected::Static(creds));
                }
                if let Some(sts) = self.sts {
                    return sts.map(Selected::Issuer);
                }
                let told = var(env, self.ecs_role).is_some() || cfg.metadata_endpoint.is_some();
                if told && !ecs_off {
                    return Ok(Selected::Issuer(Box::new(self.ecs)));
                }
                Err(CredsError::Missing(format!(
                    "no {} credentials: set {}, {}, or the instance's role in {} (or inventory.cloud.credentials.source: metadata)",
                    self.cloud,
                    self.key_vars,
                    self.sts_vars.join(" and "),
                    self.ecs_role
                )))
            }
        }
    }

    fn sts_unset(&self, env: Env<'_>) -> CredsError {
        let unset: Vec<&str> = self
            .sts_vars
            .iter()
            .copied()
            .filter(|n| var(env, n).is_none())
            .collect();
        CredsError::Missing(format!(
            "inventory.cloud.credentials.source is oidc, but {} {} not set",
            unset.join(", "),
            if unset.len() == 1 { "is" } else { "are" }
        ))
    }
}

/// What `select` makes of `source`, an STS endpoint in the config and `vars`: the choice's
/// `Debug`, or `error: ` and why (the cloud tests' tables read it).
#[cfg(test)]
pub fn picked(
    select: fn(&CredentialsConfig, Env<'_>) -> Result<Selected, CredsError>,
    source: CredentialSource,
    sts: Option<&str>,
    vars: &[(&str, &str)],
) -> String {
    let vars: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cfg = CredentialsConfig {
        source,
        sts_endpoint: sts.map(str::to_string),
        ..Default::default()
    };
    match select(&cfg, &|n| vars.get(n).cloned()) {
        Ok(s) => format!("{s:?}"),
        Err(e) => format!("error: {e}").replace("cloud credentials: ", ""),
    }
}
