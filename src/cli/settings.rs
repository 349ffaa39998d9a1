//! The settings `check`, `export-vap` and `inventory` share: a config file and the flags
//! that override it.

/// The settings `check` and `export-vap` share: a config file and the flags that override it.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// lbguard config file (YAML).
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// ctyun, alibaba, huawei, volcengine or auto (overrides the config).
    #[arg(long)]
    pub provider: Option<crate::config::ProviderChoice>,
    /// The cluster's Kubernetes version, e.g. v1.31.4 or v1.29.15-r90 (overrides the config).
    #[arg(long)]
    pub cluster_version: Option<String>,
    /// The cloud controller's version, e.g. v2.10.0 (overrides the config; `auto` needs a
    /// cluster, so offline it means unknown).
    #[arg(long)]
    pub ccm_version: Option<String>,
}

impl ConfigArgs {
    /// The file (or the defaults), then the flags, checked as a whole so a bad flag is
    /// reported like a bad key.
    pub fn config(&self) -> Result<crate::config::Config, String> {
        use crate::config::Config;
        let mut config = match &self.config {
            Some(p) => Config::read(p)
                .and_then(|text| Config::from_yaml(&text, &p.display().to_string()))
                .map_err(|e| e.to_string())?,
            None => Config::default(),
        };
        if let Some(p) = self.provider {
            config.provider = p;
        }
        if let Some(v) = &self.cluster_version {
            config.cluster.version = Some(v.clone());
        }
        if let Some(v) = &self.ccm_version {
            config.ccm.version = Some(v.clone());
        }
        let problems = crate::engine::config_problems(&config);
        if !problems.is_empty() {
            return Err(format!(
                "invalid settings:\n  - {}",
                problems.join("\n  - ")
            ));
        }
        Ok(config)
    }
}
