//! lbguard's configuration file, as plain data: every key optional, unknown keys rejected
//! by name. Rule ids are checked against the registry by `engine::parse_config`; reading
//! the file is in `load`, what serde cannot check in `validate`.

mod error;
mod load;
mod validate;

pub use error::ConfigError;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::action::Action;
use super::duration::{MAX_DURATION, parse_duration};
use super::provider::Provider;

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
    pub exceptions: crate::vocab::exceptions::ExceptionsConfig,
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
    pub load_balancer_classes: crate::vocab::controller::Classes,
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
    /// Volcengine `-weight` injected when `-server-group-id` is set without a weight.
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
    /// The action in force for a rule: config override or the rule's default.
    pub fn action_for(&self, id: &str, default: Action) -> Action {
        self.rules.get(id).copied().unwrap_or(default)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
