//! The load balancer facts a command reads (`check`, `plan`, `inventory dump`): the inventory
//! file (`--inventory`, or the config's inventory.path) and, with `--inventory-cloud`, the
//! cloud's API through the webhook's own client, credentials from
//! `inventory.cloud.credentialsDir` or the environment.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::cloud::{Cloud, View};
use crate::config::{Config, ProviderChoice};
use crate::engine::Inventory;
use crate::inventory::Snapshot;
use crate::vocab::ctx::Lookup;

/// Where the facts come from. The help is `check`'s; `plan` words two of them for itself.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Load balancer inventory (YAML; overrides the config's inventory.path).
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Also ask the cloud's API about the load balancers the manifests name
    /// (inventory.cloud; credentials from inventory.cloud.credentialsDir or the environment).
    #[arg(long)]
    pub inventory_cloud: bool,
    /// The cloud region for --inventory-cloud (overrides inventory.cloud.region).
    #[arg(long, requires = "inventory_cloud")]
    pub region: Option<String>,
    /// How long --inventory-cloud waits for the cloud, all load balancers together
    /// (default: inventory.cloud.timeout; raise it for CI). What the cloud cannot answer in
    /// time follows inventory.cloud.onError.
    #[arg(long, value_name = "DURATION", requires = "inventory_cloud", value_parser = cloud_budget)]
    pub cloud_timeout: Option<Duration>,
}

fn cloud_budget(s: &str) -> Result<Duration, String> {
    match crate::vocab::duration::parse_duration(s)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}

impl InventoryArgs {
    /// The config file and its flags, then `--inventory` over inventory.path (the file is
    /// checked when it is loaded).
    pub fn config(&self, settings: &super::settings::ConfigArgs) -> Result<Config, String> {
        let mut config = settings.config()?;
        if let Some(i) = &self.inventory {
            config.inventory.path = Some(i.display().to_string());
        }
        Ok(config)
    }

    /// Loads the inventory file, then, with `--inventory-cloud`, asks the cloud about the
    /// ids `ids` picks with its client (the config's inventory.cloud is switched on), all
    /// within `--cloud-timeout` (default: inventory.cloud.timeout).
    pub fn read(
        &self,
        config: &mut Config,
        ids: impl FnOnce(&Cloud) -> Vec<String>,
    ) -> Result<Facts, String> {
        let file = match &config.inventory.path {
            None => None,
            Some(p) => Some(Arc::new(
                Snapshot::load(Path::new(p)).map_err(|e| e.to_string())?,
            )),
        };
        if !self.inventory_cloud {
            return Ok(Facts { file, view: None });
        }
        let cloud = cloud(config, self.region.as_deref())?;
        let mut ids = ids(&cloud);
        ids.sort();
        ids.dedup();
        let budget = self
            .cloud_timeout
            .unwrap_or(config.inventory.cloud.timeout.0);
        let view = fetch(&cloud, &ids, file.clone(), budget)?;
        Ok(Facts {
            file,
            view: Some(view),
        })
    }
}

/// What the file and the cloud said.
pub struct Facts {
    file: Option<Arc<Snapshot>>,
    view: Option<View>,
}

impl Facts {
    /// The one inventory of the run: the file first, then the cloud.
    pub fn inventory(&self) -> crate::inventory::Layered<'_> {
        crate::inventory::choose(
            self.view.as_ref().map(|v| v as &dyn Inventory),
            self.file.as_deref(),
        )
    }

    /// The ids the cloud was asked about and did not answer, each with the cause.
    pub fn unanswered(&self) -> Vec<(String, String)> {
        let Some(view) = &self.view else {
            return Vec::new();
        };
        view.answers()
            .into_iter()
            .filter_map(|(id, _)| match view.lookup(view.provider, id) {
                Lookup::Unavailable(cause) => Some((id.to_string(), cause.to_string())),
                _ => None,
            })
            .collect()
    }
}

/// The cloud client for the CLI: the config's `inventory.cloud`, switched on.
pub fn cloud(config: &mut Config, region: Option<&str>) -> Result<Arc<Cloud>, String> {
    let ProviderChoice::Fixed(provider) = config.provider else {
        return Err("the cloud source needs a provider: --provider ctyun|alibaba|huawei|volcengine (or provider: in the config)".into());
    };
    let cfg = &mut config.inventory.cloud;
    cfg.enabled = true;
    if let Some(r) = region {
        cfg.region = Some(r.to_string());
    }
    if cfg.region.is_none() {
        return Err("the cloud source needs a region: --region or inventory.cloud.region".into());
    }
    let dir = cfg.credentials_dir.as_deref().map(Path::new);
    let creds = crate::cloud::creds::CredStore::configured(provider, dir, &cfg.credentials, &|n| {
        std::env::var(n).ok()
    })
    .map_err(|e| e.to_string())?;
    let proxy = crate::cloud::proxy::Proxy::from_env(&|n| std::env::var(n).ok())
        .map_err(|e| e.to_string())?;
    let roots = crate::cloud::http::with_ca_file(&[], cfg.ca_file.as_deref())
        .map_err(|e| format!("{e:#}"))?;
    let http = crate::cloud::http::Http::with_proxy(&roots, proxy).map_err(|e| format!("{e:#}"))?;
    Cloud::with_http(
        provider,
        cfg,
        config.cluster.id.clone(),
        creds,
        http,
        Default::default(),
        1,
        Arc::new(std::time::Instant::now),
    )
    .map_err(|e| format!("{e:#}"))
}

/// Asks the cloud about every id at once, within `budget` (nothing runs on after it).
pub fn fetch(
    cloud: &Arc<Cloud>,
    ids: &[String],
    file: Option<Arc<Snapshot>>,
    budget: Duration,
) -> Result<View, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let view = runtime.block_on(cloud.view_all(ids, file, budget));
    // The calls still running are cut off here, not waited for.
    runtime.shutdown_background();
    Ok(view)
}
