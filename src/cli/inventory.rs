//! `lbguard inventory dump` and the cloud source of `lbguard check --inventory-cloud`: the
//! same client as the webhook, credentials from `inventory.cloud.credentialsDir` or the
//! environment.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cloud::{Cloud, View};
use crate::config::{Config, ProviderChoice};
use crate::inventory::{InventoryFile, Snapshot};

/// How long the CLI waits for the cloud, all ids together.
const CLI_BUDGET: Duration = Duration::from_secs(30);

#[derive(Debug, Subcommand)]
pub enum InventoryCommand {
    /// Print what the cloud says of load balancers, in the inventory file's format (to
    /// review it, or freeze it as a file).
    Dump(DumpArgs),
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// lbguard config file (YAML): its provider and inventory.cloud.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// ctyun, alibaba, huawei or volcengine (overrides the config).
    #[arg(long)]
    pub provider: Option<crate::vocab::provider::Provider>,
    /// The cloud region (overrides inventory.cloud.region).
    #[arg(long)]
    pub region: Option<String>,
    /// A load balancer id to read (repeat for more).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Manifests whose Services name the load balancers to read.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
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
    let dir = cfg.credentials_dir.as_deref().map(std::path::Path::new);
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

/// The inventory file `dump` prints.
fn render(file: &InventoryFile) -> Result<String, String> {
    serde_saphyr::to_string(file).map_err(|e| format!("cannot write YAML: {e}"))
}

pub fn run(cmd: InventoryCommand) -> ExitCode {
    match cmd {
        InventoryCommand::Dump(args) => dump(args),
    }
}

fn dump(args: DumpArgs) -> ExitCode {
    let fail = |e: String| {
        eprintln!("lbguard inventory dump: {e}");
        ExitCode::from(2)
    };
    let settings = super::settings::ConfigArgs {
        config: args.config.clone(),
        provider: args.provider.map(ProviderChoice::Fixed),
        cluster_version: None,
        ccm_version: None,
    };
    let mut config = match settings.config() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let cloud = match cloud(&mut config, args.region.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let mut ids = args.ids.clone();
    let loaded = super::read::load(&args.files);
    for found in &loaded.services {
        if let Some(id) = cloud.named_id(Some(&found.service)) {
            ids.push(id);
        }
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return fail("no load balancer ids: give --id or manifests whose Services name one".into());
    }
    let view = match fetch(&cloud, &ids, None, CLI_BUDGET) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let mut file = InventoryFile::default();
    let mut problems = loaded.errors;
    for (id, answer) in view.answers() {
        match answer {
            Ok(Some(lb)) => file.load_balancers.push(lb.clone()),
            Ok(None) => problems.push(format!(
                "{id}: no such load balancer in region {}",
                cloud.region().unwrap_or_default()
            )),
            Err(e) => problems.push(format!("{id}: {e}")),
        }
    }
    match render(&file) {
        Ok(text) => out!("{text}"),
        Err(e) => return fail(e),
    }
    for p in &problems {
        eprintln!("lbguard inventory dump: {p}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{Attachment, Listener, LoadBalancer};
    use crate::vocab::ctx::Inventory;
    use crate::vocab::provider::Provider;

    /// What `dump` writes is a file the loader reads back as it was, owners of every form
    /// included (another cluster's listener as the Alibaba CCM's listener names give it).
    #[test]
    fn dump_output_loads_back_unchanged() {
        let mut lb = LoadBalancer::new("lb-2ze123", Provider::Alibaba);
        for (port, owner) in [
            (80, "external"),
            (443, "shop/web"),
            (8080, "shop/web (cluster c-other9999)"),
        ] {
            lb.listeners.push(Listener {
                port,
                protocol: "TCP".into(),
                owner: owner.into(),
            });
        }
        lb.attached_from.push(Attachment {
            cluster: "c-other9999".into(),
            namespace: "shop".into(),
            name: "web".into(),
        });
        let file = InventoryFile {
            load_balancers: vec![lb.clone()],
        };
        let text = render(&file).unwrap();
        let back = Snapshot::parse(&text, "dump.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.get(Provider::Alibaba, "lb-2ze123"), Some(&lb));
    }
}
