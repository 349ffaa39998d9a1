//! Huawei Cloud's credential providers, in huaweicloudsdkcore's default chain
//! (`CredentialProviderChain`): OIDC at IAM's STS, then the environment (an IdP token before an
//! access key), then the ECS metadata service, then CCE pod identity. The SDK's profile file
//! (`~/.huaweicloud/credentials`) is not read: a pod has none.
//!
//! The ELB API's path names the project: issued credentials carry the project id from
//! `LBGUARD_CLOUD_PROJECT_ID` or `HUAWEICLOUD_SDK_PROJECT_ID`, which must be set. (The SDK can
//! look it up in IAM for a region instead; lbguard knows its region only once the nodes are
//! read, and a wrong guess among several projects would read another project's load balancers.)

mod answer;
mod federated;
mod metadata;
mod oidc;
mod pod;
mod target;

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;

use super::issuer::{Ctx, Env, Issued, Issuer, Selected, var};
use crate::cloud::auth::creds::{Creds, CredsError};
use crate::cloud::base::outcome::CloudError;
use crate::vocab::config::{CredentialSource, CredentialsConfig};
use crate::vocab::provider::Provider;

pub use federated::Federated;
pub use metadata::Metadata;
pub use oidc::Oidc;
pub use pod::Pod;
pub use target::RENEW_BEFORE;

/// Where the project id of issued credentials comes from, in this order.
pub const PROJECT_VARS: [&str; 2] = ["LBGUARD_CLOUD_PROJECT_ID", "HUAWEICLOUD_SDK_PROJECT_ID"];

pub fn select(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
    // A source named in the config reads only its own variables.
    match cfg.source {
        CredentialSource::Auto => auto(cfg, env),
        CredentialSource::Static => static_key(env),
        CredentialSource::Metadata => with_project(Box::new(Metadata::new(cfg)), env),
        CredentialSource::PodIdentity => match Pod::from_env(env)? {
            Some(p) => with_project(Box::new(p), env),
            None => Err(CredsError::Missing(format!(
                "inventory.cloud.credentials.source podIdentity: set {} and {} (CCE's pod identity webhook does)",
                pod::FULL_URI,
                pod::TOKEN_FILE
            ))),
        },
        CredentialSource::Oidc => match oidc_or_federated(cfg, env)? {
            Some(issuer) => with_project(issuer, env),
            None => Err(CredsError::Missing(format!(
                "inventory.cloud.credentials.source oidc: set {}, {} and {} (or {}), or {} and {}",
                oidc::PROVIDER_URN,
                oidc::AGENCY_URN,
                oidc::TOKEN_FILE,
                oidc::ID_TOKEN,
                federated::IDP_ID,
                federated::ID_TOKEN_FILE
            ))),
        },
    }
}

/// The SDK's default chain.
fn auto(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
    if let Some(issuer) = oidc_or_federated(cfg, env)? {
        return with_project(issuer, env);
    }
    if has_access_key(env) {
        return static_key(env);
    }
    // The SDK asks the metadata service next, and CCE pod identity when that fails.
    let metadata = Metadata::new(cfg);
    let chain: Box<dyn Issuer> = match Pod::from_env(env)? {
        Some(pod) => Box::new(MetadataThenPod {
            metadata,
            pod,
            chosen: Mutex::new(None),
        }),
        None => Box::new(metadata),
    };
    with_project(chain, env).map_err(|_| {
        CredsError::Missing(format!(
            "no Huawei Cloud credentials: set {} and {} ({} or {}), or {} and {}, or an access key ({} and {}); for the ECS metadata service or CCE pod identity, set {} (the project of the region)",
            oidc::PROVIDER_URN,
            oidc::AGENCY_URN,
            oidc::TOKEN_FILE,
            oidc::ID_TOKEN,
            federated::IDP_ID,
            federated::ID_TOKEN_FILE,
            "HUAWEICLOUD_SDK_AK",
            "HUAWEICLOUD_SDK_SK",
            PROJECT_VARS[1],
        ))
    })
}

/// OIDC at the STS, else federated OIDC through IAM: the first providers of the SDK's chain.
fn oidc_or_federated(
    cfg: &CredentialsConfig,
    env: Env<'_>,
) -> Result<Option<Box<dyn Issuer>>, CredsError> {
    if let Some(o) = Oidc::from_env(cfg, env)? {
        return Ok(Some(Box::new(o)));
    }
    Ok(Federated::from_env(cfg, env)?.map(|f| Box::new(f) as Box<dyn Issuer>))
}

fn static_key(env: Env<'_>) -> Result<Selected, CredsError> {
    Creds::from_env(Provider::Huawei, env).map(Selected::Static)
}

/// The SDK's environment provider takes an access key only when both halves are set.
fn has_access_key(env: Env<'_>) -> bool {
    let any = |names: &[&str]| names.iter().any(|n| var(env, n).is_some());
    any(&["LBGUARD_CLOUD_ACCESS_KEY_ID", "HUAWEICLOUD_SDK_AK"])
        && any(&["LBGUARD_CLOUD_ACCESS_KEY_SECRET", "HUAWEICLOUD_SDK_SK"])
}

fn with_project(inner: Box<dyn Issuer>, env: Env<'_>) -> Result<Selected, CredsError> {
    let project = PROJECT_VARS
        .iter()
        .find_map(|n| var(env, n))
        .ok_or_else(|| {
            CredsError::Missing(format!(
                "Huawei's ELB API needs the project id of the region: set {} (or {})",
                PROJECT_VARS[1], PROJECT_VARS[0]
            ))
        })?;
    Ok(Selected::Issuer(Box::new(WithProject { inner, project })))
}

/// Adds the configured project id to what an issuer hands out.
struct WithProject {
    inner: Box<dyn Issuer>,
    project: String,
}

impl Issuer for WithProject {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let mut issued = self.inner.issue(ctx).await?;
            issued.creds.project_id = Some(self.project.clone());
            Ok(issued)
        })
    }
}

/// The metadata service, or pod identity when it fails; the first that works is kept, as the
/// SDK's chain keeps the provider that first gave credentials.
struct MetadataThenPod {
    metadata: Metadata,
    pod: Pod,
    chosen: Mutex<Option<bool>>,
}

/// How long the metadata service may take before pod identity is asked (the SDK's timeout).
const METADATA_FIRST: Duration = Duration::from_secs(3);

impl Issuer for MetadataThenPod {
    fn describe(&self) -> String {
        let chosen = *self.chosen.lock().unwrap_or_else(|p| p.into_inner());
        match chosen {
            Some(true) => self.metadata.describe(),
            Some(false) => self.pod.describe(),
            None => format!("{}, then {}", self.metadata.describe(), self.pod.describe()),
        }
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            let chosen = *self.chosen.lock().unwrap_or_else(|p| p.into_inner());
            match chosen {
                Some(true) => return self.metadata.issue(ctx).await,
                Some(false) => return self.pod.issue(ctx).await,
                None => {}
            }
            let first = Ctx {
                http: ctx.http,
                budget: (ctx.budget / 2).min(METADATA_FIRST),
            };
            let started = std::time::Instant::now();
            let md = match tokio::time::timeout(first.budget, self.metadata.issue(&first)).await {
                Ok(Ok(issued)) => {
                    self.keep(true);
                    return Ok(issued);
                }
                Ok(Err(e)) => e,
                Err(_) => CloudError::Timeout(first.budget.as_millis()),
            };
            let rest = Ctx {
                http: ctx.http,
                budget: ctx.budget.saturating_sub(started.elapsed()),
            };
            match self.pod.issue(&rest).await {
                Ok(issued) => {
                    self.keep(false);
                    Ok(issued)
                }
                Err(pod) => Err(CloudError::Credentials(format!(
                    "the metadata service: {md}; pod identity: {pod}"
                ))),
            }
        })
    }
}

impl MetadataThenPod {
    fn keep(&self, metadata: bool) {
        *self.chosen.lock().unwrap_or_else(|p| p.into_inner()) = Some(metadata);
    }
}

#[cfg(test)]
mod tests;
