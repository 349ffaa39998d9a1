//! Volcengine's credential providers, in `volcengine-python-sdk`'s default order ([`Chain`]):
//! an access key in the environment, OIDC (a ServiceAccount token exchanged at STS), then the
//! ECS instance's role at 100.96.0.96.

use std::time::Duration;

use super::answer::{endpoint, session_name};
use super::chain::Chain;
use super::imds::{Flavor, Imds};
use super::issuer::{Env, Issuer, Selected, var};
use super::volcengine_oidc::Oidc;
use crate::cloud::auth::creds::CredsError;
use crate::vocab::config::CredentialsConfig;
use crate::vocab::provider::Provider;

pub const ROLE_TRN: &str = "VOLCENGINE_OIDC_ROLE_TRN";
pub const TOKEN_FILE: &str = "VOLCENGINE_OIDC_TOKEN_FILE";
pub const SESSION_NAME: &str = "VOLCENGINE_OIDC_ROLE_SESSION_NAME";
pub const STS_ENDPOINT: &str = "VOLCENGINE_OIDC_STS_ENDPOINT";
pub const ECS_ROLE: &str = "VOLCENGINE_ECS_METADATA";
pub const ECS_DISABLED: &str = "VOLCENGINE_ECS_METADATA_DISABLED";

pub const METADATA: &str = "http://100.96.0.96";
const STS: &str = "https://sts.volcengineapi.com";

static ECS: Flavor = Flavor {
    name: "Volcengine ECS role",
    token_path: "/latest/api/token",
    ttl_header: "X-volc-ecs-metadata-token-ttl-seconds",
    token_header: "X-volc-ecs-metadata-token",
    roles_path: "/volcstack/latest/iam/security_credentials",
    roles_query: &[("type", "user"), ("format", "json")],
    creds_path: "/volcstack/latest/iam/security_credentials/",
    fields: [
        "AccessKeyId",
        "SecretAccessKey",
        "SessionToken",
        "ExpiredTime",
    ],
    code_success: false,
    margin: Duration::from_secs(300),
};

pub fn select(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
    Chain {
        provider: Provider::Volcengine,
        cloud: "Volcengine",
        key_vars: "VOLCENGINE_ACCESS_KEY and VOLCENGINE_SECRET_KEY (or LBGUARD_CLOUD_ACCESS_KEY_ID and LBGUARD_CLOUD_ACCESS_KEY_SECRET, or inventory.cloud.credentialsDir)",
        sts: oidc(cfg, env).map(|o| o.map(|o| Box::new(o) as Box<dyn Issuer>)),
        sts_vars: &[ROLE_TRN, TOKEN_FILE],
        ecs_role: ECS_ROLE,
        ecs_disabled: ECS_DISABLED,
        ecs: ecs(cfg, env),
    }
    .select(cfg, env)
}

/// OIDC when both its variables are set (`None` when either is missing).
fn oidc(cfg: &CredentialsConfig, env: Env<'_>) -> Option<Result<Oidc, CredsError>> {
    let (Some(role_trn), Some(token_file)) = (var(env, ROLE_TRN), var(env, TOKEN_FILE)) else {
        return None;
    };
    let endpoint = endpoint(cfg.sts_endpoint.as_deref(), env, STS_ENDPOINT, STS);
    if !endpoint.starts_with("https://") {
        return Some(Err(CredsError::Missing(format!(
            "{STS_ENDPOINT}: \"{endpoint}\" is not an https URL"
        ))));
    }
    Some(Ok(Oidc {
        role_trn,
        token_file,
        session_name: var(env, SESSION_NAME).unwrap_or_else(session_name),
        endpoint,
    }))
}

fn ecs(cfg: &CredentialsConfig, env: Env<'_>) -> Imds {
    Imds {
        flavor: &ECS,
        base: endpoint(cfg.metadata_endpoint.as_deref(), &|_| None, "", METADATA),
        role: var(env, ECS_ROLE),
        token_required: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::config::CredentialSource;

    fn pick(source: CredentialSource, sts: Option<&str>, vars: &[(&str, &str)]) -> String {
        super::super::chain::picked(select, source, sts, vars)
    }

    const AK: [(&str, &str); 2] = [
        ("VOLCENGINE_ACCESS_KEY", "AKLTkey"),
        ("VOLCENGINE_SECRET_KEY", "hush-secret"),
    ];
    const OIDC: [(&str, &str); 2] = [
        (ROLE_TRN, "trn:iam::2100:role/lbguard"),
        (TOKEN_FILE, "/var/run/secrets/tokens/token"),
    ];

    #[test]
    fn the_sdk_order_an_access_key_then_oidc_then_the_ecs_role() {
        let both: Vec<_> = AK.iter().chain(OIDC.iter()).copied().collect();
        let env_endpoint: Vec<_> = OIDC
            .iter()
            .copied()
            .chain([(STS_ENDPOINT, "sts.example:8443")])
            .collect();
        let ecs_role = [(ECS_ROLE, "EcsRole")];
        let ecs_off = [(ECS_ROLE, "EcsRole"), (ECS_DISABLED, "true")];
        use CredentialSource::*;
        for (name, source, sts, vars, want) in [
            ("key first", Auto, None, &both[..], "Static(Creds(AKLT…"),
            (
                "oidc",
                Auto,
                None,
                &OIDC[..],
                "Volcengine OIDC (AssumeRoleWithOIDC for trn:iam::2100:role/lbguard at https://sts.volcengineapi.com)",
            ),
            (
                "env endpoint",
                Auto,
                None,
                &env_endpoint[..],
                "at https://sts.example:8443)",
            ),
            (
                "config endpoint wins",
                Auto,
                Some("https://cfg.example"),
                &env_endpoint[..],
                "at https://cfg.example)",
            ),
            (
                "ecs role named",
                Auto,
                None,
                &ecs_role[..],
                "ECS role EcsRole (metadata at http://100.96.0.96)",
            ),
            (
                "ecs disabled",
                Auto,
                None,
                &ecs_off[..],
                "error: no Volcengine credentials",
            ),
            (
                "nothing",
                Auto,
                None,
                &[][..],
                "error: no Volcengine credentials",
            ),
            (
                "half oidc",
                Auto,
                None,
                &OIDC[..1],
                "error: no Volcengine credentials",
            ),
            (
                "oidc forced past a key",
                Oidc,
                None,
                &both[..],
                "Volcengine OIDC (",
            ),
            (
                "oidc missing",
                Oidc,
                None,
                &OIDC[..1],
                "VOLCENGINE_OIDC_TOKEN_FILE is not set",
            ),
            ("static", Static, None, &both[..], "Static("),
            (
                "metadata discovers the role",
                Metadata,
                None,
                &AK[..],
                "ECS role (metadata at",
            ),
            (
                "metadata disabled",
                Metadata,
                None,
                &ecs_off[..],
                "error: inventory.cloud.credentials.source is metadata",
            ),
            (
                "no pod identity",
                PodIdentity,
                None,
                &[][..],
                "error: Volcengine has no pod identity",
            ),
        ] {
            let got = pick(source, sts, vars);
            assert!(got.contains(want), "{name}: {got}");
            assert!(
                !got.contains("hush") && !got.contains("AKLTkey"),
                "{name}: {got}"
            );
        }
    }
}
