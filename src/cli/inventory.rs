//! `lbguard inventory dump`: what the cloud says of load balancers, through the client
//! `check --inventory-cloud` uses (`facts`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::facts::{cloud, fetch};
use crate::config::ProviderChoice;
use crate::inventory::InventoryFile;

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
    use crate::inventory::{Attachment, Listener, LoadBalancer, Snapshot};
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
