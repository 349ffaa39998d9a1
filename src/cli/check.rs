//! `lbguard check`: the webhook's engine over manifests, in the API server's order
//! (defaults first, then validation of the defaulted object). `read` reads the manifests,
//! `print` and `report` write the findings.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use k8s_openapi::api::core::v1::Service;

use super::checked::Checked;
pub use super::output::Output;
use super::print::Paint;
pub use super::read::{Found, Loaded, feed_cluster, load, parse_service};
use super::read::{Live, NonObjects, Reading, load_with};
use super::render::{Run, render, write_reports};
use super::summary::Summary;
use crate::cluster::ClusterState;
use crate::config::Config;
use crate::engine::{Input, Inventory, Operation, UserInfo, Versions, evaluate, mutate};

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub settings: super::settings::ConfigArgs,
    /// Live objects: a Service here with the same namespace/name is checked as an UPDATE.
    #[arg(long = "old", value_name = "FILE")]
    pub old: Vec<PathBuf>,
    /// How to print the findings.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    #[command(flatten)]
    pub facts: super::facts::InventoryArgs,
    /// Existing objects (Services, Nodes, Ingresses; `kubectl get svc,nodes,ingresses -A -o
    /// yaml`) for the cluster rules.
    #[arg(long = "cluster-state", value_name = "FILE")]
    pub cluster_state: Vec<PathBuf>,
    /// Skip the mutating defaults.
    #[arg(long)]
    pub no_defaults: bool,
    /// LBGuardException manifests (files or directories) to apply: a finding one covers is
    /// reported as exempted (SARIF: suppressed) and does not fail the run.
    #[arg(long = "exceptions", value_name = "PATH")]
    pub exceptions: Vec<PathBuf>,
    /// Also write the findings as FORMAT (one of --output's) to FILE, from the same run;
    /// repeatable.
    #[arg(long = "report", value_name = "FORMAT=FILE", value_parser = super::render::report_spec)]
    pub reports: Vec<(Output, PathBuf)>,
    /// Leave out the files and directories this glob matches (`charts/**`,
    /// `**/templates/**`), as named or below the directory argument; repeatable.
    #[arg(long = "exclude", value_name = "GLOB", value_parser = super::exclude::pattern)]
    pub exclude: Vec<glob::Pattern>,
    /// A document that is not a Kubernetes object (a list, a scalar, a mapping without
    /// kind) is an error, not skipped with a note.
    #[arg(long)]
    pub strict: bool,
    /// YAML or JSON manifests (multi-document, `kind: List`), directories, or `-` for stdin.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// What every Service of one run is checked against.
pub struct Against<'a> {
    pub config: &'a Config,
    pub versions: &'a Versions,
    pub cluster: &'a ClusterState,
    pub inventory: &'a dyn Inventory,
    /// Apply the mutating defaults first.
    pub defaults: bool,
    pub exceptions: &'a crate::engine::exceptions::ExceptionSet,
}

/// Defaults then validation, the API server's order.
pub fn check_one(
    service: Service,
    old: Option<Service>,
    against: &Against,
) -> Result<Checked, String> {
    let Against {
        config,
        versions,
        cluster,
        inventory,
        defaults,
        exceptions,
    } = *against;
    let op = if old.is_some() {
        Operation::Update
    } else {
        Operation::Create
    };
    let user = UserInfo {
        username: "lbguard-check".into(),
        groups: vec![],
    };
    let mut input = Input::new(op, Some(service), old, user).map_err(|e| e.to_string())?;
    let (mut patch, mut applied) = (json_patch::Patch(vec![]), vec![]);
    if defaults
        && let Some(m) = mutate(&input, config, versions, inventory)
        && m.changed()
    {
        let before = serde_json::to_value(input.object.as_ref()).map_err(|e| e.to_string())?;
        let after = serde_json::to_value(&m.desired).map_err(|e| e.to_string())?;
        patch = json_patch::diff(&before, &after);
        applied = m.applied;
        input.object = Some(m.desired);
    }
    let mut verdict = evaluate(&input, config, versions, cluster, inventory);
    crate::engine::exceptions::apply(
        &mut verdict,
        &crate::engine::exceptions::Subject::of(&input),
        exceptions,
        config,
        std::time::SystemTime::now(),
    );
    // Later files see this one, as a cluster would after admitting it.
    if verdict.allowed()
        && let Some(s) = &input.object
    {
        cluster.apply_service(s);
    }
    Ok(Checked {
        origin: String::new(),
        file: String::new(),
        doc: Arc::default(),
        base: Vec::new(),
        input,
        patch,
        applied,
        verdict,
    })
}

pub fn run(args: CheckArgs) -> ExitCode {
    let mut config = match args.facts.config(&args.settings) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lbguard check: {e}");
            return ExitCode::from(2);
        }
    };
    let versions = Versions::from_config(&config);
    let reading = Reading {
        non_objects: if args.strict {
            NonObjects::Error
        } else {
            NonObjects::Note
        },
        exclude: super::exclude::Exclude::new(args.exclude.clone()),
    };
    let loaded = load_with(&args.files, &reading);
    let ids = |cloud: &crate::cloud::Cloud| {
        loaded
            .services
            .iter()
            .filter_map(|f| cloud.named_id(Some(&f.service)))
            .collect()
    };
    let facts = match args.facts.read(&mut config, ids) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("lbguard check: {e}");
            return ExitCode::from(2);
        }
    };
    let inventory = &facts.inventory();
    let (old, mut errors) = Live::load(&args.old);
    let cluster = ClusterState::new(crate::vocab::route::Scope::of(&config));
    errors.extend(feed_cluster(&cluster, load(&args.cluster_state)));
    errors.extend(loaded.errors);
    let mut notes = loaded.notes;
    let granted = super::exceptions::read(&args.exceptions, &config, std::time::SystemTime::now());
    errors.extend(granted.errors);
    notes.extend(granted.notes);

    let against = Against {
        config: &config,
        versions: &versions,
        cluster: &cluster,
        inventory,
        defaults: !args.no_defaults,
        exceptions: &granted.exceptions,
    };
    let mut results = Vec::new();
    for found in loaded.services {
        let live = old.of(&found.service).cloned();
        match check_one(found.service, live, &against) {
            Ok(mut c) => {
                c.origin = found.origin;
                c.file = found.file;
                c.doc = found.doc;
                c.base = found.base;
                results.push(c);
            }
            Err(e) => errors.push(format!("{}: {e}", found.origin)),
        }
    }

    // Services no controller of the provider serves are not checked; each is named once.
    let (foreign, results): (Vec<Checked>, Vec<Checked>) =
        results.into_iter().partition(|c| c.verdict.foreign);
    for c in &foreign {
        notes.push(format!(
            "{}/{} ({}) skipped: {}",
            c.input.namespace,
            c.input.name,
            c.origin,
            c.verdict.exempt.as_deref().unwrap_or_default()
        ));
    }
    for n in &notes {
        eprintln!("lbguard check: {n}");
    }
    // Services that reuse a load balancer, checked without an inventory, and their providers.
    let mut blind_providers = std::collections::BTreeSet::new();
    let blind: Vec<bool> = results
        .iter()
        .map(|c| {
            let Some(s) = c.input.object.as_ref().filter(|_| !inventory.configured()) else {
                return false;
            };
            let uses = crate::cluster::lb_uses(cluster.scope(), crate::engine::Svc::new(s));
            blind_providers.extend(uses.iter().map(|(p, _, _)| *p));
            !uses.is_empty()
        })
        .collect();
    let summary = Summary {
        checked: results.len(),
        skipped: loaded.skipped,
        ignored: loaded.ignored,
        foreign: foreign.len(),
        denied: results.iter().filter(|c| !c.verdict.allowed()).count(),
        // As the audit counts: findings an exception covers are not warnings.
        warned: results
            .iter()
            .filter(|c| {
                c.verdict.allowed()
                    && (!c.verdict.notes.is_empty()
                        || c.verdict.violations.iter().any(|v| v.exception.is_none()))
            })
            .count(),
        exempted: results
            .iter()
            .flat_map(|c| &c.verdict.violations)
            .filter(|v| v.exception.is_some())
            .count(),
        no_inventory: blind.iter().filter(|b| **b).count(),
        no_inventory_providers: blind_providers,
    };
    let run = Run {
        results: &results,
        summary: &summary,
        errors: &errors,
        notes: &notes,
        blind: &blind,
    };
    let paint = Paint(args.output == Output::Text && std::io::stdout().is_terminal());
    out!("{}", render(args.output, &run, paint));
    let unwritten = write_reports(&args.reports, &run);
    for e in errors.iter().chain(&unwritten) {
        eprintln!("lbguard check: {e}");
    }
    if !errors.is_empty() || !unwritten.is_empty() {
        ExitCode::from(2)
    } else if summary.denied > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
