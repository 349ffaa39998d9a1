use rstest::rstest;

use super::target::renewable;
use super::*;

const OIDC: &[(&str, &str)] = &[
    (
        "HUAWEICLOUD_OIDC_PROVIDER_URN",
        "iam::acct:identity-provider:cce",
    ),
    ("HUAWEICLOUD_OIDC_AGENCY_URN", "iam::acct:agency:lbguard"),
    (
        "HUAWEICLOUD_OIDC_TOKEN_FILE",
        "/var/run/secrets/tokens/oidc-token",
    ),
];
const FEDERATED: &[(&str, &str)] = &[
    ("HUAWEICLOUD_SDK_IDP_ID", "cce-idp"),
    (
        "HUAWEICLOUD_SDK_ID_TOKEN_FILE",
        "/var/run/secrets/tokens/id-token",
    ),
];
const KEY: &[(&str, &str)] = &[
    ("HUAWEICLOUD_SDK_AK", "HWAKIDEXAMPLE"),
    ("HUAWEICLOUD_SDK_SK", "hw-secret-never-shown"),
];
const POD: &[(&str, &str)] = &[
    (
        "HC_CONTAINER_CREDENTIALS_FULL_URI",
        "http://169.254.170.2/v1/credential",
    ),
    (
        "HC_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "/var/run/secrets/pod-identity/token",
    ),
];
const PROJECT: &[(&str, &str)] = &[("HUAWEICLOUD_SDK_PROJECT_ID", "p-1")];

fn selected(source: CredentialSource, sets: &[&[(&str, &str)]]) -> Result<String, String> {
    let vars: Vec<(String, String)> = sets
        .iter()
        .flat_map(|s| s.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let env = move |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let cfg = CredentialsConfig {
        source,
        ..Default::default()
    };
    select(&cfg, &env)
        .map(|s| format!("{s:?}"))
        .map_err(|e| e.to_string())
}

use CredentialSource::{Auto, Metadata as Md, Oidc as Od, PodIdentity, Static};

/// The SDK's chain: OIDC, then the environment (IdP before key), then metadata, then pod.
#[rstest]
#[case::oidc_first(Auto, &[OIDC, FEDERATED, KEY, POD, PROJECT], "assume-with-oidc")]
#[case::idp_before_the_key(Auto, &[FEDERATED, KEY, POD, PROJECT], "federated OIDC")]
#[case::the_key(Auto, &[KEY, POD, PROJECT], "Static(Creds(HWAK")]
#[case::half_a_key_is_none(Auto, &[&KEY[..1], PROJECT], "ECS metadata")]
#[case::metadata_then_pod(Auto, &[POD, PROJECT], "ECS metadata (the agency's security key at http://169.254.169.254), then Huawei Cloud CCE pod identity")]
#[case::metadata_alone(Auto, &[PROJECT], "ECS metadata")]
#[case::oidc_without_a_token_moves_on(Auto, &[&OIDC[..2], KEY, PROJECT], "Static(")]
#[case::an_inline_token(Auto, &[&OIDC[..2], &[("HUAWEICLOUD_OIDC_ID_TOKEN", "eyJinline")], PROJECT], "assume-with-oidc")]
#[case::static_only(Static, &[OIDC, KEY, PROJECT], "Static(")]
#[case::oidc_named(Od, &[KEY, OIDC, PROJECT], "assume-with-oidc")]
#[case::oidc_named_takes_the_idp(Od, &[KEY, FEDERATED, PROJECT], "federated OIDC")]
#[case::pod_named(PodIdentity, &[OIDC, POD, PROJECT], "CCE pod identity (at http://169.254.170.2/v1/credential)")]
#[case::metadata_named(Md, &[OIDC, KEY, POD, PROJECT], "ECS metadata")]
#[case::static_ignores_a_bad_sts(Static, &[KEY, PROJECT, &[("HUAWEICLOUD_SDK_STS_ENDPOINT", "sts.local")]], "Static(")]
#[case::pod_ignores_a_bad_duration(PodIdentity, &[OIDC, POD, PROJECT, &[("HUAWEICLOUD_OIDC_DURATION_SECONDS", "1h")]], "pod identity")]
fn the_sdk_order(
    #[case] source: CredentialSource,
    #[case] sets: &[&[(&str, &str)]],
    #[case] picked: &str,
) {
    let got = selected(source, sets).unwrap();
    assert!(got.contains(picked), "{got}");
}

#[rstest]
#[case::oidc_named_without_it(Od, &[KEY, PROJECT], "HUAWEICLOUD_OIDC_PROVIDER_URN")]
#[case::pod_named_without_it(PodIdentity, &[KEY, PROJECT], "HC_CONTAINER_CREDENTIALS_FULL_URI")]
#[case::no_project(Od, &[OIDC], "HUAWEICLOUD_SDK_PROJECT_ID")]
#[case::nothing_at_all(Auto, &[], "no Huawei Cloud credentials: set HUAWEICLOUD_OIDC_PROVIDER_URN")]
#[case::nothing_but_a_pod(Auto, &[POD], "set HUAWEICLOUD_SDK_PROJECT_ID (the project")]
#[case::static_needs_a_project(Static, &[KEY], "project id")]
#[case::sts_not_https(Auto, &[OIDC, PROJECT, &[("HUAWEICLOUD_SDK_STS_ENDPOINT", "http://sts.local")]], "not an https URL")]
#[case::iam_not_https(Auto, &[FEDERATED, PROJECT, &[("HUAWEICLOUD_SDK_IAM_ENDPOINT", "iam.local")]], "not an https URL")]
#[case::bad_duration(Auto, &[OIDC, PROJECT, &[("HUAWEICLOUD_OIDC_DURATION_SECONDS", "1h")]], "not a number")]
#[case::oidc_named_with_a_bad_sts(Od, &[OIDC, PROJECT, &[("HUAWEICLOUD_SDK_STS_ENDPOINT", "sts.local")]], "not an https URL")]
#[case::bad_pod_uri(PodIdentity, &[PROJECT, &[("HC_CONTAINER_CREDENTIALS_FULL_URI", "/relative"), ("HC_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/t")]], "not an absolute URL")]
fn refused(#[case] source: CredentialSource, #[case] sets: &[&[(&str, &str)]], #[case] says: &str) {
    let e = selected(source, sets).unwrap_err();
    assert!(e.contains(says), "{e}");
}

#[test]
fn the_config_endpoint_wins_over_the_variable() {
    let vars = [
        OIDC,
        PROJECT,
        &[("HUAWEICLOUD_SDK_STS_ENDPOINT", "https://sts.env.example")],
    ];
    let env = |n: &str| {
        vars.iter()
            .flat_map(|s| s.iter())
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.to_string())
    };
    let cfg = CredentialsConfig {
        sts_endpoint: Some("https://sts.config.example/".into()),
        ..Default::default()
    };
    let got = format!("{:?}", select(&cfg, &env).unwrap());
    assert!(got.contains("at https://sts.config.example for"), "{got}");
    let got = format!("{:?}", select(&CredentialsConfig::default(), &env).unwrap());
    assert!(got.contains("at https://sts.env.example for"), "{got}");
}

#[test]
fn nothing_secret_reaches_debug_or_describe() {
    let inline = [("HUAWEICLOUD_OIDC_ID_TOKEN", "eyJsecret-jwt")];
    for sets in [
        &[&OIDC[..2], &inline[..], KEY, PROJECT][..],
        &[KEY, PROJECT][..],
        &[FEDERATED, PROJECT][..],
        &[POD, PROJECT][..],
    ] {
        let shown = selected(Auto, sets).unwrap();
        for secret in ["eyJsecret-jwt", "hw-secret-never-shown", "HWAKIDEXAMPLE"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}

#[test]
fn renewed_forty_minutes_early_or_half_way_through_a_shorter_life() {
    let c = Creds {
        access_key_id: "A".into(),
        access_key_secret: "S".into(),
        security_token: None,
        project_id: None,
    };
    let now = std::time::SystemTime::now();
    let hour = renewable(c.clone(), now + Duration::from_secs(3600));
    let at = hour
        .renew_at
        .unwrap()
        .duration_since(now)
        .unwrap()
        .as_secs();
    assert!((1199..=1200).contains(&at), "{at}");
    let short = renewable(c, now + Duration::from_secs(900));
    let at = short
        .renew_at
        .unwrap()
        .duration_since(now)
        .unwrap()
        .as_secs();
    assert!((449..=450).contains(&at), "{at}");
}
