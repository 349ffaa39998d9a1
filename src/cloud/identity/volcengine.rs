//! Volcengine's credential providers, in its SDK's default order.

use super::{Env, Selected};
use crate::cloud::creds::{Creds, CredsError};
use crate::vocab::config::{CredentialSource, CredentialsConfig};
use crate::vocab::provider::Provider;

pub fn select(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
    match cfg.source {
        CredentialSource::Auto | CredentialSource::Static => {
            Creds::from_env(Provider::Volcengine, env).map(Selected::Static)
        }
        other => Err(CredsError::Missing(format!(
            "inventory.cloud.credentials.source {} is not built yet",
            other.as_str()
        ))),
    }
}
