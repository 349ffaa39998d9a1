//! Alibaba Cloud's credential providers, in `alibabacloud-credentials`' default order
//! ([`Chain`]): an access key in the environment, RRSA (a ServiceAccount token exchanged at
//! STS), then the ECS instance's RAM role at 100.100.100.200.

use std::time::Duration;

use super::alibaba_rrsa::Rrsa;
use super::answer::{endpoint, flag, session_name};
use super::chain::Chain;
use super::imds::{Flavor, Imds};
use super::issuer::{Env, Issuer, Selected, var};
use crate::cloud::auth::creds::CredsError;
use crate::vocab::config::CredentialsConfig;
use crate::vocab::provider::Provider;

pub const ROLE_ARN: &str = "ALIBABA_CLOUD_ROLE_ARN";
pub const PROVIDER_ARN: &str = "ALIBABA_CLOUD_OIDC_PROVIDER_ARN";
pub const TOKEN_FILE: &str = "ALIBABA_CLOUD_OIDC_TOKEN_FILE";
pub const SESSION_NAME: &str = "ALIBABA_CLOUD_ROLE_SESSION_NAME";
pub const STS_ENDPOINT: &str = "ALIBABA_CLOUD_STS_ENDPOINT";
pub const STS_REGION: &str = "ALIBABA_CLOUD_STS_REGION";
pub const VPC_ENDPOINT: &str = "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED";
pub const ECS_ROLE: &str = "ALIBABA_CLOUD_ECS_METADATA";
pub const ECS_DISABLED: &str = "ALIBABA_CLOUD_ECS_METADATA_DISABLED";
pub const IMDSV1_DISABLED: &str = "ALIBABA_CLOUD_IMDSV1_DISABLED";

pub const METADATA: &str = "http://100.100.100.200";

static ECS: Flavor = Flavor {
    name: "Alibaba Cloud ECS RAM role",
    token_path: "/latest/api/token",
    ttl_header: "X-aliyun-ecs-metadata-token-ttl-seconds",
    token_header: "X-aliyun-ecs-metadata-token",
    roles_path: "/latest/meta-data/ram/security-credentials/",
    roles_query: &[],
    creds_path: "/latest/meta-data/ram/security-credentials/",
    fields: [
        "AccessKeyId",
        "AccessKeySecret",
        "SecurityToken",
        "Expiration",
    ],
    code_success: true,
    margin: Duration::from_secs(15 * 60),
};

pub fn select(cfg: &CredentialsConfig, env: Env<'_>) -> Result<Selected, CredsError> {
    Chain {
        provider: Provider::Alibaba,
        cloud: "Alibaba Cloud",
        key_vars: "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (or LBGUARD_CLOUD_ACCESS_KEY_ID and LBGUARD_CLOUD_ACCESS_KEY_SECRET, or inventory.cloud.credentialsDir)",
        sts: rrsa(cfg, env).map(|r| r.map(|r| Box::new(r) as Box<dyn Issuer>)),
        sts_vars: &[ROLE_ARN, PROVIDER_ARN, TOKEN_FILE],
        ecs_role: ECS_ROLE,
        ecs_disabled: ECS_DISABLED,
        ecs: ecs(cfg, env),
    }
    .select(cfg, env)
}

/// RRSA when all three of its variables are set (`None` when one is not).
fn rrsa(cfg: &CredentialsConfig, env: Env<'_>) -> Option<Result<Rrsa, CredsError>> {
    let (role, provider, file) = (
        var(env, ROLE_ARN),
        var(env, PROVIDER_ARN),
        var(env, TOKEN_FILE),
    );
    let (Some(role_arn), Some(provider_arn), Some(token_file)) = (role, provider, file) else {
        return None;
    };
    let prefix = if flag(env, VPC_ENDPOINT) {
        "sts-vpc"
    } else {
        "sts"
    };
    let default = match var(env, STS_REGION) {
        Some(region) => format!("https://{prefix}.{region}.aliyuncs.com"),
        None => "https://sts.aliyuncs.com".to_string(),
    };
    let endpoint = endpoint(cfg.sts_endpoint.as_deref(), env, STS_ENDPOINT, &default);
    if !endpoint.starts_with("https://") {
        return Some(Err(CredsError::Missing(format!(
            "{STS_ENDPOINT}: \"{endpoint}\" is not an https URL"
        ))));
    }
    Some(Ok(Rrsa {
        role_arn,
        provider_arn,
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
        token_required: flag(env, IMDSV1_DISABLED),
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
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAIkey"),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "hush-secret"),
    ];
    const RRSA: [(&str, &str); 3] = [
        (ROLE_ARN, "acs:ram::1:role/lbguard"),
        (PROVIDER_ARN, "acs:ram::1:oidc-provider/ack-rrsa-c1"),
        (TOKEN_FILE, "/var/run/secrets/tokens/oidc-token"),
    ];

    #[test]
    fn the_sdk_order_an_access_key_then_rrsa_then_the_ecs_role() {
        let both: Vec<_> = AK.iter().chain(RRSA.iter()).copied().collect();
        let rrsa_vpc: Vec<_> = RRSA
            .iter()
            .copied()
            .chain([(STS_REGION, "cn-hangzhou"), (VPC_ENDPOINT, "true")])
            .collect();
        let rrsa_env_endpoint: Vec<_> = RRSA
            .iter()
            .copied()
            .chain([(STS_ENDPOINT, "sts.example:8443"), (STS_REGION, "x")])
            .collect();
        let ecs_role = [(ECS_ROLE, "EcsRole")];
        let ecs_off = [(ECS_ROLE, "EcsRole"), (ECS_DISABLED, "true")];
        let half_rrsa = &RRSA[..2];
        use CredentialSource::*;
        for (name, source, sts, vars, want) in [
            ("key first", Auto, None, &both[..], "Static(Creds(LTAI…"),
            (
                "rrsa",
                Auto,
                None,
                &RRSA[..],
                "RRSA (AssumeRoleWithOIDC for acs:ram::1:role/lbguard at https://sts.aliyuncs.com)",
            ),
            (
                "rrsa region vpc",
                Auto,
                None,
                &rrsa_vpc[..],
                "at https://sts-vpc.cn-hangzhou.aliyuncs.com)",
            ),
            (
                "rrsa env endpoint",
                Auto,
                None,
                &rrsa_env_endpoint[..],
                "at https://sts.example:8443)",
            ),
            (
                "config endpoint wins",
                Auto,
                Some("https://cfg.example"),
                &rrsa_env_endpoint[..],
                "at https://cfg.example)",
            ),
            (
                "ecs role named",
                Auto,
                None,
                &ecs_role[..],
                "ECS RAM role EcsRole (metadata at http://100.100.100.200)",
            ),
            (
                "ecs disabled",
                Auto,
                None,
                &ecs_off[..],
                "error: no Alibaba Cloud credentials",
            ),
            (
                "nothing",
                Auto,
                None,
                &[][..],
                "error: no Alibaba Cloud credentials",
            ),
            (
                "half rrsa",
                Auto,
                None,
                half_rrsa,
                "error: no Alibaba Cloud credentials",
            ),
            ("oidc forced past a key", Oidc, None, &both[..], "RRSA ("),
            (
                "oidc missing",
                Oidc,
                None,
                half_rrsa,
                "ALIBABA_CLOUD_OIDC_TOKEN_FILE is not set",
            ),
            ("static", Static, None, &both[..], "Static("),
            (
                "metadata discovers the role",
                Metadata,
                None,
                &AK[..],
                "ECS RAM role (metadata at",
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
                "error: Alibaba Cloud has no pod identity",
            ),
        ] {
            let got = pick(source, sts, vars);
            assert!(got.contains(want), "{name}: {got}");
            assert!(
                !got.contains("hush") && !got.contains("LTAIkey"),
                "{name}: {got}"
            );
        }
    }

    #[test]
    fn the_role_session_name_and_imdsv1() {
        let vars: std::collections::HashMap<&str, &str> = RRSA
            .iter()
            .copied()
            .chain([(SESSION_NAME, "my-session")])
            .collect();
        let r = rrsa(&CredentialsConfig::default(), &|n| {
            vars.get(n).map(|v| v.to_string())
        })
        .unwrap()
        .unwrap();
        assert_eq!(r.session_name, "my-session");
        let r = rrsa(&CredentialsConfig::default(), &|n| {
            RRSA.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
        .unwrap()
        .unwrap();
        assert!(r.session_name.starts_with("lbguard-"), "{}", r.session_name);
        let cfg = CredentialsConfig {
            metadata_endpoint: Some("http://127.0.0.1:1/".into()),
            ..Default::default()
        };
        let e = ecs(&cfg, &|n| (n == IMDSV1_DISABLED).then(|| "TRUE".into()));
        assert!(e.token_required && e.role.is_none());
        assert_eq!(e.base, "http://127.0.0.1:1");
        assert!(!ecs(&cfg, &|_| None).token_required);
    }
}
