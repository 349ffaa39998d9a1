//! Command-line front ends: `check`, `config`, `export-vap`, `inventory`, `plan`, `rules` and
//! `serve`.

/// `println!` that stops quietly when stdout is gone (`lbguard check ... | head`) instead
/// of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` with the same manners.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

pub mod check;
pub mod checked;
pub mod config;
pub mod exceptions;
pub mod exclude;
pub mod export_vap;
pub mod facts;
pub mod github;
pub mod inventory;
pub mod output;
pub mod plan;
pub mod positions;
mod print;
pub mod read;
pub mod render;
pub mod report;
pub mod rule_table;
pub mod run;
pub mod settings;
pub mod summary;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Both roles, for `lbguard --help` and the image run without a command.
const ROLES: &str = "\
The webhook (what the Helm chart runs):
  lbguard serve --tls-cert FILE --tls-key FILE [--config FILE]
The linter, offline (CI, pre-commit, a laptop):
  lbguard check [--provider P] FILE|DIR...
The image runs in /manifests, as user 65532:
  podman run --rm -v \"$PWD:/manifests:ro\" IMAGE check .";

#[derive(Debug, Parser)]
#[command(
    name = "lbguard",
    version,
    about = "Admission webhook and linter for type: LoadBalancer Services",
    after_help = ROLES,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lint Service manifests offline with the webhook's rules.
    Check(check::CheckArgs),
    /// Run the HTTPS admission webhook.
    Serve(crate::server::ServeArgs),
    /// Print the stateless rules as ValidatingAdmissionPolicies (Kubernetes 1.30+) and the
    /// defaults as a MutatingAdmissionPolicy (1.34+).
    ExportVap(export_vap::ExportArgs),
    /// Print the config's defaults (`--defaults`), as YAML.
    Config(config::ConfigArgs),
    /// What the cloud controller will do to the cloud for each Service, like `terraform plan`
    /// (exit 3 when a plan deletes, takes over, orphans or converts something).
    Plan(plan::PlanArgs),
    /// Load balancer facts from the cloud's API.
    #[command(subcommand)]
    Inventory(inventory::InventoryCommand),
    /// List every rule: id, providers, class, default action.
    Rules {
        /// Print the rules reference's Markdown table.
        #[arg(long)]
        markdown: bool,
        /// Print where each rule comes from: the document, and for the annotation tables'
        /// rows the published range and the controller's code lines (`repo@commit:path:line`).
        #[arg(long)]
        sources: bool,
        /// Only the rules that apply to this provider (ctyun, alibaba, huawei, volcengine).
        #[arg(long)]
        provider: Option<crate::vocab::provider::Provider>,
    },
}

/// An error and its causes on one line, each said once: a message that already quotes its
/// cause (`cannot read X: No such file or directory`) is not followed by it again.
pub fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Config(args) => config::run(args),
        Command::ExportVap(args) => export_vap::run(args),
        Command::Inventory(cmd) => inventory::run(cmd),
        Command::Plan(args) => plan::run(args),
        Command::Serve(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("lbguard serve: cannot start the runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let log = crate::server::init_logging(args.log_format);
            let result = runtime.block_on(crate::server::run(args));
            // Background tasks stop with the runtime before the log's writer thread does: a
            // line one logged after that would be lost, with an error on stderr.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            drop(log);
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("lbguard serve: {}", chain(&e));
                    ExitCode::FAILURE
                }
            }
        }
        Command::Rules {
            markdown,
            sources,
            provider,
        } => {
            if sources && markdown {
                out!("{}", crate::rules::sources_markdown(provider));
            } else if sources {
                // The documents by name, as in the Markdown: bare numbers mean nothing to a reader.
                for (id, source, rows) in crate::rules::sources(provider) {
                    outln!("{id}: {}", crate::rules::readable(source));
                    for (key, from) in rows {
                        outln!("  {key}");
                        for f in from {
                            outln!("    {}", crate::rules::readable(&f));
                        }
                    }
                }
            } else if markdown {
                out!("{}", rule_table::markdown_table_for(provider));
            } else {
                let row = |id: &str, default: &str, class: &str, providers: &str, title: &str| {
                    outln!("{id:<34} {default:<7} {class:<10} {providers:<32} {title}");
                };
                row("RULE", "DEFAULT", "CLASS", "PROVIDERS", "TITLE");
                for r in crate::rules::for_provider(provider) {
                    let providers: Vec<&str> = r.providers.iter().map(|p| p.as_str()).collect();
                    row(
                        r.id,
                        r.default.as_str(),
                        r.class.as_str(),
                        &providers.join(","),
                        r.title,
                    );
                }
            }
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::chain;

    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        let Err(missing) =
            crate::inventory::InventoryStore::load(std::path::Path::new("/no/such/inventory.yaml"))
        else {
            panic!("a missing file is an error");
        };
        let e = anyhow::Error::new(missing).context("loading the load balancer inventory");
        let text = chain(&e);
        assert_eq!(
            text.matches("No such file or directory").count(),
            1,
            "{text}"
        );
        assert!(
            text.starts_with("loading the load balancer inventory: cannot read inventory /no/such/inventory.yaml: "),
            "{text}"
        );
    }
}
