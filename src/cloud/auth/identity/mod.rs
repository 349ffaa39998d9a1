//! Short-lived credentials the way each cloud's SDK gets them in a pod: a ServiceAccount token
//! exchanged at the cloud's STS (OIDC), CCE pod identity, or the instance's role from the
//! metadata service. Each cloud's file holds its providers and its SDK's default order;
//! [`select`] picks one at start, and [`super::store::CredStore`] renews what it issues.

use super::creds::{Creds, CredsError};
use crate::vocab::config::{CredentialSource, CredentialsConfig};
use crate::vocab::provider::Provider;

pub mod alibaba;
pub mod alibaba_rrsa;
pub mod answer;
pub mod chain;
pub mod huawei;
pub mod imds;
pub mod issuer;
pub mod volcengine;
pub mod volcengine_oidc;

pub use issuer::{Ctx, Env, Issued, Issuer, Selected, read_token, var};

/// The provider `source` names, tried in the cloud SDK's order when it is `auto`.
pub fn select(
    provider: Provider,
    cfg: &CredentialsConfig,
    env: Env<'_>,
) -> Result<Selected, CredsError> {
    match provider {
        Provider::Alibaba => alibaba::select(cfg, env),
        Provider::Huawei => huawei::select(cfg, env),
        Provider::Volcengine => volcengine::select(cfg, env),
        Provider::Ctyun => match cfg.source {
            CredentialSource::Auto | CredentialSource::Static => {
                Creds::from_env(provider, env).map(Selected::Static)
            }
            other => Err(CredsError::Missing(format!(
                "CTyun's SDK offers only an access key, not {}",
                other.as_str()
            ))),
        },
    }
}
