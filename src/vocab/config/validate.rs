//! What serde cannot check in a config: versions, ranges, timeouts that must fit inside the
//! webhook's, and the credential sources each provider offers.

use super::{CCM_VERSION_AUTO, Config, CredentialSource, ProviderChoice};
use crate::vocab::provider::Provider;
use crate::vocab::version::KubeVersion;

impl Config {
    /// Everything wrong with the config that serde cannot see.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = crate::vocab::route::problems(
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
}
