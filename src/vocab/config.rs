//! lbguard's configuration file, as plain data: every key optional, unknown keys rejected
//! by name. Rule ids are checked against the registry by `engine::parse_config`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::duration::{MAX_DURATION, parse_duration};
use super::provider::Provider;
use super::rule::Action;
use super::version::KubeVersion;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("config file {path} is invalid:\n  - {}", problems.join("\n  - "))]
    Invalid { path: String, problems: Vec<String> },
}

/// Which provider's rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum ProviderChoice {
    /// Every provider whose annotations appear on the Service.
    #[default]
    Auto,
    #[serde(untagged)]
    Fixed(Provider),
}

impl std::str::FromStr for ProviderChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        s.parse::<Provider>().map(Self::Fixed).map_err(|_| {
            format!(
                "unknown provider \"{s}\" (expected ctyun, alibaba, huawei, volcengine or auto)"
            )
        })
    }
}

/// Read through `FromStr`, so a typo in the file gets the flag's message.
impl TryFrom<String> for ProviderChoice {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    pub provider: ProviderChoice,
    pub cluster: ClusterConfig,
    pub ccm: CcmConfig,
    pub quotas: Quotas,
    /// Rule id to action (`engine::parse_config` checks the ids).
    pub rules: BTreeMap<String, Action>,
    pub exemptions: Exemptions,
    /// `LBGuardException` objects: how far ahead they may expire, which rules they may not
    /// cover.
    pub exceptions: super::exceptions::ExceptionsConfig,
    pub deletion_protection: DeletionProtection,
    pub defaults: Defaults,
    pub inventory: InventoryConfig,
    pub audit: AuditConfig,
    /// Listener claims in the API server (the cross-replica lock of `listener-port-unique`).
    pub claims: ClaimsConfig,
    /// Where the audit's results go besides `/report` and the metric.
    pub reports: ReportsConfig,
    /// Annotation names (without the provider prefix) to accept besides lbguard's catalog,
    /// for `unknown-annotation`.
    pub known_annotations: BTreeMap<Provider, Vec<String>>,
    /// `spec.loadBalancerClass` values a controller of the provider serves besides the
    /// built-in ones (ACK's `alibabacloud.com/nlb`), and which one.
    pub load_balancer_classes: super::route::Classes,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct AuditConfig {
    /// How often every cached LoadBalancer Service is re-checked; 0 turns audit off.
    pub interval: Seconds,
    /// Also record a Kubernetes Event on each offending Service.
    pub events: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            interval: Seconds(std::time::Duration::from_secs(300)),
            events: false,
        }
    }
}

/// Policy reports: the audit's results as the Policy Working Group's reports, one per
/// namespace with LoadBalancer Services.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ReportsConfig {
    pub api: ReportsApi,
}

/// Which report API the audit writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportsApi {
    /// `openreports.io/v1alpha1` Report if installed, else `wgpolicyk8s.io/v1alpha2`
    /// PolicyReport if installed, else none; re-checked every audit round.
    #[default]
    Auto,
    Openreports,
    Wgpolicyk8s,
    Off,
}

/// Listener claims: one Lease per (load balancer, protocol family, port) in lbguard's
/// namespace. Only taken by `serve` with a cluster; `check` and `--standalone` never do.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimsConfig {
    pub enabled: bool,
    /// Where the Leases live; default: `POD_NAMESPACE`, then the client's namespace.
    pub namespace: Option<String>,
    /// Time budget for taking an admission's claims (well inside the webhook timeout).
    pub timeout: Seconds,
    /// What an admission gets when the claims cannot be recorded in time.
    pub on_error: OnClaimError,
    /// How long a claim whose Service the cluster does not show is kept before another
    /// Service may take it over.
    pub grace: Seconds,
    /// How often stale claims are collected.
    pub gc_interval: Seconds,
}

impl Default for ClaimsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            namespace: None,
            timeout: Seconds(std::time::Duration::from_secs(2)),
            on_error: OnClaimError::Deny,
            grace: Seconds(std::time::Duration::from_secs(60)),
            gc_interval: Seconds(std::time::Duration::from_secs(60)),
        }
    }
}

/// What an admission that needs claims gets when the API server cannot record them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnClaimError {
    /// Deny; the message says the request can be retried.
    #[default]
    Deny,
    /// Allow with a warning (the cross-replica guarantee is lost for this admission).
    Allow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    #[default]
    Standard,
    Turbo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyMode {
    #[default]
    Iptables,
    Ipvs,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterConfig {
    /// Overrides the API server's `/version` (e.g. CCE's `v1.29.15-r90`).
    pub version: Option<String>,
    /// The cluster's id at the cloud (ACK's `c…`, CCE's cluster id): tells this cluster's
    /// listeners on a shared load balancer from another cluster's (inventory.cloud).
    pub id: Option<String>,
    pub flavor: Flavor,
    pub proxy_mode: ProxyMode,
    pub vpc_id: Option<String>,
    /// How long the watch may be broken before cluster rules follow `onStale`.
    pub stale_after: Option<Seconds>,
    pub on_stale: OnStale,
}

/// A duration in config: `90s`, `5m`, `500ms` or plain seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Seconds(pub std::time::Duration);

impl From<Seconds> for std::time::Duration {
    fn from(s: Seconds) -> Self {
        s.0
    }
}

impl From<Seconds> for String {
    fn from(s: Seconds) -> Self {
        format!("{}ms", s.0.as_millis())
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration like 90s or 5m, or whole seconds")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Seconds, E> {
                let d = std::time::Duration::from_secs(n);
                if d <= MAX_DURATION {
                    Ok(Seconds(d))
                } else {
                    Err(E::custom(format!("{n} seconds is longer than a year")))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Seconds, E> {
                u64::try_from(n)
                    .map_err(|_| E::custom(format!("{n} is not a whole number of seconds")))
                    .and_then(|n| self.visit_u64(n))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Seconds, E> {
                Err(E::custom(format!("{n} is not a whole number of seconds")))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Seconds, E> {
                parse_duration(s).map(Seconds).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// What cluster rules do while the cache is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnStale {
    /// Skip the cluster rules (with a warning).
    #[default]
    Allow,
    /// Deny what the cluster rules would check.
    Deny,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CcmConfig {
    /// The cloud controller's version, or `auto`: read from its workload's image tag.
    pub version: Option<String>,
    /// Where `version: auto` finds the controller, per provider (see `workload_for`).
    pub workloads: BTreeMap<Provider, CcmWorkload>,
    /// Users allowed to touch what the CCM owns (finalizers, system annotations).
    pub users: Vec<String>,
    pub groups: Vec<String>,
    /// Finalizers protected in addition to the providers' own.
    pub finalizers: Vec<String>,
}

/// `ccm.version` value that reads the version from the cluster.
pub const CCM_VERSION_AUTO: &str = "auto";

/// The Deployment or DaemonSet that runs a cloud controller.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CcmWorkload {
    pub namespace: String,
    pub name: String,
    /// `Deployment` or `DaemonSet`; unset tries a Deployment, then a DaemonSet.
    pub kind: Option<WorkloadKind>,
    /// The container whose image tag is the version; unset: the one whose name or image
    /// says controller-manager, else the first.
    pub container: Option<String>,
}

impl Default for CcmWorkload {
    fn default() -> Self {
        Self {
            namespace: "kube-system".into(),
            name: "cloud-controller-manager".into(),
            kind: None,
            container: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum WorkloadKind {
    Deployment,
    DaemonSet,
}

impl CcmConfig {
    pub fn auto(&self) -> bool {
        self.version.as_deref() == Some(CCM_VERSION_AUTO)
    }

    /// Where the provider's controller runs in the cluster, if anywhere. Huawei CCE runs it
    /// in the managed control plane (its annotations are gated by the cluster version), so it
    /// has none unless configured; the others default to kube-system/cloud-controller-manager.
    pub fn workload_for(&self, p: Provider) -> Option<CcmWorkload> {
        match self.workloads.get(&p) {
            Some(w) => Some(w.clone()),
            None if p == Provider::Huawei => None,
            None => Some(CcmWorkload::default()),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Quotas {
    pub listeners_per_load_balancer: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            listeners_per_load_balancer: 50,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Exemptions {
    pub namespaces: Vec<String>,
    pub users: Vec<String>,
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct DeletionProtection {
    /// Annotation whose value `"true"` protects a Service from DELETE.
    pub annotation: Option<String>,
    /// Label whose value `"true"` protects a Service from DELETE.
    pub label: Option<String>,
}

impl Default for DeletionProtection {
    fn default() -> Self {
        Self {
            annotation: Some("lbguard.io/deletion-protection".into()),
            label: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    pub enabled: bool,
    /// Volcengine `-weight` injected when `-id` is set without a weight.
    pub volcengine_weight: Option<u8>,
    /// Huawei `kubernetes.io/elb.class` injected when an ELB is given without a class.
    pub huawei_elb_class: Option<String>,
    /// CTyun `-ip-mode: proxy` for `externalTrafficPolicy: Local` on Kubernetes 1.30+.
    pub ctyun_ip_mode_proxy: bool,
    /// `externalTrafficPolicy: Cluster` on CCE Turbo clusters when the Service sets none.
    pub huawei_turbo_cluster_policy: bool,
    /// Extra annotation defaults for every LoadBalancer Service.
    pub annotations: BTreeMap<String, String>,
    /// The API server applies the defaults above as the MutatingAdmissionPolicy of
    /// `lbguard export-vap`; the webhook then applies only the inventory's, so none runs twice.
    pub exported: bool,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            enabled: true,
            volcengine_weight: None,
            huawei_elb_class: None,
            ctyun_ip_mode_proxy: false,
            huawei_turbo_cluster_policy: true,
            annotations: BTreeMap::new(),
            exported: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct InventoryConfig {
    /// The file; its entries override the cloud's for the same id.
    pub path: Option<String>,
    pub unknown_load_balancer: Action,
    /// The clouds' own load balancer APIs.
    pub cloud: CloudConfig,
}

impl Default for InventoryConfig {
    fn default() -> Self {
        Self {
            path: None,
            unknown_load_balancer: Action::Warn,
            cloud: CloudConfig::default(),
        }
    }
}

/// `inventory.cloud`: load balancer facts read from the provider's API, cached.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CloudConfig {
    pub enabled: bool,
    /// Default: the nodes' `topology.kubernetes.io/region` label.
    pub region: Option<String>,
    /// An https URL that replaces the provider's public endpoint (a private endpoint, a proxy).
    pub endpoint: Option<String>,
    /// A directory with the files `accessKeyId`, `accessKeySecret` and, optionally,
    /// `securityToken` (and `projectId` on Huawei). Default: the environment.
    pub credentials_dir: Option<String>,
    /// How often every load balancer a Service names is read again.
    pub refresh: Seconds,
    /// The budget of one admission's look-up of a load balancer not yet cached.
    pub timeout: Seconds,
    /// Requests per second to the cloud, all replicas together (each takes its share:
    /// `LBGUARD_REPLICAS`, which the chart sets, says how many there are).
    pub qps: u32,
    pub on_error: OnCloudError,
    /// Load balancers cached at most (least recently used out first).
    pub cache_size: u32,
    /// Where the credentials come from when `credentialsDir` is not set.
    pub credentials: CredentialsConfig,
    /// A PEM file of CA certificates trusted for the cloud's APIs (load balancers, STS, IAM)
    /// besides the system's: the CA of a private endpoint. Read at start.
    pub ca_file: Option<String>,
}

/// `inventory.cloud.credentials`: which of the cloud SDK's credential providers lbguard uses.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CredentialsConfig {
    pub source: CredentialSource,
    /// Replaces the STS endpoint the SDK would use (its environment variable wins otherwise).
    pub sts_endpoint: Option<String>,
    /// Replaces Huawei's IAM endpoint (federated OIDC, the project id).
    pub iam_endpoint: Option<String>,
    /// Replaces the instance metadata service (`http://100.100.100.200` on Alibaba,
    /// `http://169.254.169.254` on Huawei, `http://100.96.0.96` on Volcengine).
    pub metadata_endpoint: Option<String>,
}

/// `auto` is the cloud SDK's own default chain; the others pick one provider of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CredentialSource {
    #[default]
    Auto,
    /// An access key: `credentialsDir`, or the environment.
    Static,
    /// A ServiceAccount token exchanged at the cloud's STS (RRSA, Huawei OIDC, Volcengine OIDC).
    Oidc,
    /// CCE pod identity.
    PodIdentity,
    /// The instance's role, from the metadata service.
    Metadata,
}

impl CredentialSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialSource::Auto => "auto",
            CredentialSource::Static => "static",
            CredentialSource::Oidc => "oidc",
            CredentialSource::PodIdentity => "podIdentity",
            CredentialSource::Metadata => "metadata",
        }
    }
}

impl Default for CloudConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            region: None,
            endpoint: None,
            credentials_dir: None,
            refresh: Seconds(std::time::Duration::from_secs(300)),
            timeout: Seconds(std::time::Duration::from_millis(1500)),
            qps: 5,
            on_error: OnCloudError::Warn,
            cache_size: 10_000,
            credentials: CredentialsConfig::default(),
            ca_file: None,
        }
    }
}

/// What an admission gets when the cloud cannot say in time what a load balancer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnCloudError {
    Deny,
    /// Admit with a warning that names the load balancer and the cause.
    #[default]
    Warn,
    /// Admit silently.
    Allow,
}

impl OnCloudError {
    pub fn action(self) -> Action {
        match self {
            OnCloudError::Deny => Action::Deny,
            OnCloudError::Warn => Action::Warn,
            OnCloudError::Allow => Action::Off,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OnCloudError::Deny => "deny",
            OnCloudError::Warn => "warn",
            OnCloudError::Allow => "allow",
        }
    }
}

impl Config {
    /// The text of a config file.
    pub fn read(path: &Path) -> Result<String, ConfigError> {
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })
    }

    /// Parses and checks a config, listing every problem at once (rule ids aside: see
    /// `engine::parse_config`).
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let config = Self::from_yaml(text, path)?;
        let problems = config.problems();
        config.unless(problems, path)
    }

    /// The config, or every problem found in it.
    pub fn unless(self, problems: Vec<String>, path: &str) -> Result<Self, ConfigError> {
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(ConfigError::Invalid {
                path: path.to_string(),
                problems,
            })
        }
    }

    /// Parses a config without checking what serde cannot see.
    pub fn from_yaml(text: &str, path: &str) -> Result<Self, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        super::yaml::from_str(text).map_err(|message| ConfigError::Parse {
            path: path.to_string(),
            message,
        })
    }

    /// Everything wrong with the config that serde cannot see.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = super::route::problems(
            &self.load_balancer_classes,
            match self.provider {
                ProviderChoice::Fixed(p) => Some(p),
                ProviderChoice::Auto => None,
            },
        );
        problems.extend(self.exceptions.problems());
        if let Some(v) = &self.cluster.version
            && let Err(e) = v.parse::<KubeVersion>()
        {
            problems.push(format!("cluster.version: {e}"));
        }
        if let Some(v) = &self.ccm.version
            && v != CCM_VERSION_AUTO
            && let Err(e) = v.parse::<KubeVersion>()
        {
            problems.push(format!(
                "ccm.version: {e} (or \"auto\" to read it from the cluster)"
            ));
        }
        if let Some(w) = self.defaults.volcengine_weight
            && w > 100
        {
            problems.push(format!("defaults.volcengineWeight: {w} is outside 0..100"));
        }
        if let Some(c) = &self.defaults.huawei_elb_class
            && c != "union"
            && c != "performance"
        {
            problems.push(format!(
                "defaults.huaweiElbClass: \"{c}\" is not one of union, performance"
            ));
        }
        if self.claims.timeout.0.is_zero() {
            problems.push("claims.timeout: must be more than 0".into());
        }
        if self.claims.timeout.0 >= std::time::Duration::from_secs(10) {
            problems.push(format!(
                "claims.timeout: {} ms leaves no room inside the webhook timeout (at most 30 s, 5 s in the chart); use a few seconds",
                self.claims.timeout.0.as_millis()
            ));
        }
        let cloud = &self.inventory.cloud;
        if cloud.timeout.0.is_zero() {
            problems.push("inventory.cloud.timeout: must be more than 0".into());
        }
        if cloud.timeout.0 >= std::time::Duration::from_secs(10) {
            problems.push(format!(
                "inventory.cloud.timeout: {} ms leaves no room inside the webhook timeout (at most 30 s, 5 s in the chart); use about a second",
                cloud.timeout.0.as_millis()
            ));
        }
        // The API server's default timeoutSeconds (the chart checks its own, 5 s, at install).
        let webhook = std::time::Duration::from_secs(10);
        let claims = if self.claims.enabled {
            self.claims.timeout.0
        } else {
            std::time::Duration::ZERO
        };
        if cloud.enabled
            && cloud.timeout.0 < webhook
            && claims < webhook
            && cloud.timeout.0 + claims + std::time::Duration::from_secs(1) > webhook
        {
            problems.push(format!(
                "inventory.cloud.timeout ({} ms) + claims.timeout ({} ms) + 1 s of margin does not fit in the webhook's timeoutSeconds (10 s by default, 5 s in the chart): an admission would time out at the API server instead of getting inventory.cloud.onError; lower the timeouts",
                cloud.timeout.0.as_millis(),
                claims.as_millis()
            ));
        }
        if cloud.refresh.0 < std::time::Duration::from_secs(1) {
            problems.push("inventory.cloud.refresh: must be at least 1s".into());
        }
        if cloud.cache_size == 0 {
            problems.push("inventory.cloud.cacheSize: must be at least 1".into());
        }
        if cloud.qps == 0 {
            problems.push("inventory.cloud.qps: must be at least 1".into());
        }
        let source = cloud.credentials.source;
        if cloud.credentials_dir.is_some()
            && !matches!(source, CredentialSource::Auto | CredentialSource::Static)
        {
            problems.push(format!(
                "inventory.cloud.credentialsDir holds an access key, but inventory.cloud.credentials.source is {}: unset one of them",
                source.as_str()
            ));
        }
        let offered: &[CredentialSource] = match self.provider {
            ProviderChoice::Fixed(Provider::Ctyun) => &[CredentialSource::Static],
            ProviderChoice::Fixed(Provider::Huawei) => &[
                CredentialSource::Static,
                CredentialSource::Oidc,
                CredentialSource::PodIdentity,
                CredentialSource::Metadata,
            ],
            _ => &[
                CredentialSource::Static,
                CredentialSource::Oidc,
                CredentialSource::Metadata,
            ],
        };
        if source != CredentialSource::Auto && !offered.contains(&source) {
            let names: Vec<&str> = offered.iter().map(|s| s.as_str()).collect();
            problems.push(format!(
                "inventory.cloud.credentials.source: {} is not offered by this provider's SDK; use auto or one of {}",
                source.as_str(),
                names.join(", ")
            ));
        }
        for (key, url) in [
            ("stsEndpoint", &cloud.credentials.sts_endpoint),
            ("iamEndpoint", &cloud.credentials.iam_endpoint),
        ] {
            if let Some(u) = url
                && !(u.starts_with("https://") && u.len() > "https://".len())
            {
                problems.push(format!(
                    "inventory.cloud.credentials.{key}: \"{u}\" is not an https URL"
                ));
            }
        }
        if let Some(u) = &cloud.credentials.metadata_endpoint
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            problems.push(format!(
                "inventory.cloud.credentials.metadataEndpoint: \"{u}\" is not an http(s) URL"
            ));
        }
        if cloud
            .ca_file
            .as_deref()
            .is_some_and(|f| f.trim().is_empty())
        {
            problems.push(
                "inventory.cloud.caFile: empty; name a PEM file of CA certificates, or leave it out"
                    .into(),
            );
        }
        if let Some(e) = &cloud.endpoint
            && !(e.starts_with("https://") && e.len() > "https://".len())
        {
            problems.push(format!(
                "inventory.cloud.endpoint: \"{e}\" is not an https URL"
            ));
        }
        if cloud.enabled && matches!(self.provider, ProviderChoice::Auto) {
            problems.push("inventory.cloud.enabled: needs a fixed provider (provider: ctyun, alibaba, huawei or volcengine), not auto: lbguard must know which cloud to ask".into());
        }
        if self.quotas.listeners_per_load_balancer == 0 {
            problems.push("quotas.listenersPerLoadBalancer: must be at least 1".into());
        }
        problems
    }

    /// The action in force for a rule: config override or the rule's default.
    pub fn action_for(&self, id: &str, default: Action) -> Action {
        self.rules.get(id).copied().unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_example_parses() {
        let text = r#"
provider: auto
cluster:
  version: v1.31.4
  flavor: standard
  proxyMode: iptables
  vpcId: vpc-123
ccm:
  version: v1.45.1
  users: [system:serviceaccount:kube-system:cloud-controller-manager]
  groups: []
quotas:
  listenersPerLoadBalancer: 50
rules:
  in-cluster-access-advice: off
exemptions:
  namespaces: [kube-system]
  users: []
  groups: []
deletionProtection:
  annotation: lbguard.io/deletion-protection
defaults:
  enabled: true
  volcengineWeight: null
  huaweiElbClass: null
  ctyunIpModeProxy: false
  annotations: {}
inventory:
  path: null
  unknownLoadBalancer: warn
  cloud:
    enabled: false
    region: null
    endpoint: null
    credentialsDir: null
    refresh: 5m
    timeout: 1500ms
    qps: 5
    onError: warn
"#;
        let c = Config::parse(text, "t.yaml").unwrap();
        assert_eq!(c.provider, ProviderChoice::Auto);
        assert_eq!(c.rules["in-cluster-access-advice"], Action::Off);
        assert_eq!(c.cluster.proxy_mode, ProxyMode::Iptables);
    }

    #[test]
    fn fixed_provider_parses() {
        let c = Config::parse("provider: huawei\n", "t").unwrap();
        assert_eq!(c.provider, ProviderChoice::Fixed(Provider::Huawei));
    }

    #[test]
    fn unknown_key_is_named() {
        let e = Config::parse("cluster:\n  flavour: turbo\n", "t.yaml").unwrap_err();
        assert!(e.to_string().contains("flavour"), "{e}");
    }

    #[test]
    fn claims_defaults_and_overrides() {
        let c = Config::default();
        assert!(c.claims.enabled);
        assert_eq!(c.claims.timeout.0, std::time::Duration::from_secs(2));
        assert_eq!(c.claims.grace.0, std::time::Duration::from_secs(60));
        assert_eq!(c.claims.on_error, OnClaimError::Deny);
        let c = Config::parse(
            "claims:\n  onError: allow\n  timeout: 500ms\n  namespace: guard\n",
            "t",
        )
        .unwrap();
        assert_eq!(c.claims.on_error, OnClaimError::Allow);
        assert_eq!(c.claims.timeout.0, std::time::Duration::from_millis(500));
        assert_eq!(c.claims.namespace.as_deref(), Some("guard"));
        let e = Config::parse("claims:\n  timeout: 30s\n", "t").unwrap_err();
        assert!(e.to_string().contains("claims.timeout"), "{e}");
        assert!(Config::parse("claims:\n  onError: maybe\n", "t").is_err());
    }

    #[test]
    fn cloud_defaults_and_problems() {
        let c = Config::default().inventory.cloud;
        assert!(!c.enabled);
        assert_eq!(c.refresh.0, std::time::Duration::from_secs(300));
        assert_eq!(c.timeout.0, std::time::Duration::from_millis(1500));
        assert_eq!((c.qps, c.on_error), (5, OnCloudError::Warn));
        for (text, want) in [
            (
                "inventory:\n  cloud:\n    timeout: 0s\n",
                "inventory.cloud.timeout",
            ),
            ("inventory:\n  cloud:\n    qps: 0\n", "inventory.cloud.qps"),
            (
                "inventory:\n  cloud:\n    refresh: 500ms\n",
                "inventory.cloud.refresh",
            ),
            (
                "inventory:\n  cloud:\n    endpoint: http://x\n",
                "inventory.cloud.endpoint",
            ),
            (
                "inventory:\n  cloud:\n    enabled: true\n",
                "fixed provider",
            ),
        ] {
            let e = Config::parse(text, "t").unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(Config::parse("inventory:\n  cloud:\n    onError: maybe\n", "t").is_err());
        let e = Config::parse(
            "provider: alibaba\nclaims:\n  timeout: 4s\ninventory:\n  cloud:\n    enabled: true\n    timeout: 6s\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("does not fit in the webhook's timeoutSeconds"),
            "{e}"
        );
        assert!(
            Config::parse(
                "provider: alibaba\ninventory:\n  cloud:\n    enabled: true\n    cacheSize: 0\n",
                "t"
            )
            .is_err()
        );
        let c = Config::parse(
            "provider: alibaba\ninventory:\n  cloud:\n    enabled: true\n    onError: deny\n",
            "t",
        )
        .unwrap();
        assert_eq!(c.inventory.cloud.on_error.action(), Action::Deny);
    }

    #[test]
    fn bad_action_is_rejected() {
        assert!(Config::parse("rules:\n  lb-id-immutable: maybe\n", "t").is_err());
    }
}
