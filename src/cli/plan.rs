//! `lbguard plan`: what the cloud controller will do to the cloud for each Service, printed
//! like `terraform plan` (`+` create, `~` change, `-` delete, `!` take over or orphan, `#`
//! what stays, is misread or is not known), or as JSON. Defaults are applied first, as the
//! API server stores the object. Exit 0, 3 when a plan deletes, takes over, orphans or
//! converts something (so a pipeline can require a review), 2 on errors.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

use crate::config::Config;
use crate::engine::{
    Ctx, EmptyCluster, Input, Inventory, Operation, UserInfo, Versions, evaluate, mutate, not_ours,
    providers,
};
use crate::plan::{Action, Counts, Plan};

/// The exit code of a plan that needs a review.
pub const DESTRUCTIVE: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `+ ~ - ! #` lines per Service, then a summary line, as `terraform plan` prints.
    Text,
    /// One JSON document: each Service's plans and their steps, then a summary.
    Json,
}

#[derive(Debug, Args)]
#[command(
    mut_arg("inventory", |a| a.help("Load balancer inventory (YAML; overrides the config's inventory.path): the listeners and their owners the plan compares with")),
    mut_arg("inventory_cloud", |a| a.help("Ask the cloud's API about the load balancers the Services use (inventory.cloud)")),
)]
pub struct PlanArgs {
    #[command(flatten)]
    pub settings: super::settings::ConfigArgs,
    /// Live objects: a Service here with the same namespace/name is planned as an update.
    #[arg(long = "old", value_name = "FILE")]
    pub old: Vec<PathBuf>,
    /// How to print the plans.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    #[command(flatten)]
    pub facts: super::facts::InventoryArgs,
    /// Skip the mutating defaults.
    #[arg(long)]
    pub no_defaults: bool,
    /// YAML or JSON manifests (multi-document, `kind: List`), directories, or `-` for stdin.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// One Service's plans.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Planned {
    file: String,
    namespace: String,
    name: String,
    operation: &'static str,
    /// Rules that would deny the request: the controller would then not see it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    denied_by: Vec<&'static str>,
    /// False when the update changes nothing the controller reads.
    asks: bool,
    plans: Vec<Plan>,
    destructive: bool,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    services: usize,
    destructive: usize,
    skipped: usize,
    #[serde(flatten)]
    counts: Counts,
}

pub fn run(args: PlanArgs) -> ExitCode {
    let mut config = match args.facts.config(&args.settings) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lbguard plan: {e}");
            return ExitCode::from(2);
        }
    };
    let versions = Versions::from_config(&config);
    let loaded = super::read::load(&args.files);
    let (old, mut errors) = super::read::Live::load(&args.old);
    errors.extend(loaded.errors);
    // The load balancers of the Services and of their live objects, named or recorded.
    let ids = |cloud: &crate::cloud::Cloud| {
        let cat = crate::providers::catalog(cloud.provider());
        let mut ids: Vec<String> = Vec::new();
        for f in &loaded.services {
            let live = old.of(&f.service);
            for s in std::iter::once(&f.service).chain(live) {
                ids.extend(cloud.named_id(Some(s)));
                if let Some(l) = cat
                    .lb_id_label
                    .and_then(|l| crate::engine::Svc::new(s).label(l))
                {
                    ids.push(l.to_string());
                }
            }
        }
        ids
    };
    let facts = match args.facts.read(&mut config, ids) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("lbguard plan: {e}");
            return ExitCode::from(2);
        }
    };
    // A plan made without a load balancer's facts is incomplete: an error, not "none".
    for (id, cause) in facts.unanswered() {
        errors.push(format!(
            "{id}: lbguard could not read it from the cloud's API: {cause}; the plan above is made without its facts"
        ));
    }
    let inventory = facts.inventory();
    let mut planned = Vec::new();
    let mut skipped = 0;
    for found in loaded.services {
        let live = old.of(&found.service).cloned();
        match plan_one(
            found.service,
            live,
            &config,
            &versions,
            &inventory,
            !args.no_defaults,
        ) {
            Ok(Some(mut p)) => {
                p.file = found.origin;
                planned.push(p);
            }
            Ok(None) => skipped += 1,
            Err(e) => errors.push(format!("{}: {e}", found.origin)),
        }
    }
    let mut summary = Summary {
        services: planned.len(),
        destructive: planned.iter().filter(|p| p.destructive).count(),
        skipped,
        ..Summary::default()
    };
    for p in planned.iter().flat_map(|p| &p.plans) {
        let c = p.counts();
        summary.counts.add += c.add;
        summary.counts.change += c.change;
        summary.counts.destroy += c.destroy;
        summary.counts.take_over += c.take_over;
        summary.counts.orphan += c.orphan;
        summary.counts.notes += c.notes;
    }
    match args.output {
        Output::Json => {
            outln!(
                "{:#}",
                serde_json::json!({"services": planned, "summary": summary})
            )
        }
        Output::Text => print_text(&planned, &summary, std::io::stdout().is_terminal()),
    }
    for e in &errors {
        eprintln!("lbguard plan: {e}");
    }
    if !errors.is_empty() {
        ExitCode::from(2)
    } else if summary.destructive > 0 {
        ExitCode::from(DESTRUCTIVE)
    } else {
        ExitCode::SUCCESS
    }
}

/// The plans for one Service, or `None` when no controller of the provider takes it.
fn plan_one(
    service: Service,
    old: Option<Service>,
    config: &Config,
    versions: &Versions,
    inventory: &dyn Inventory,
    defaults: bool,
) -> Result<Option<Planned>, String> {
    let op = if old.is_some() {
        Operation::Update
    } else {
        Operation::Create
    };
    let user = UserInfo {
        username: "lbguard-plan".into(),
        groups: vec![],
    };
    let mut input = Input::new(op, Some(service), old, user).map_err(|e| e.to_string())?;
    if defaults
        && let Some(m) = mutate(&input, config, versions, inventory)
        && m.changed()
    {
        input.object = Some(m.desired);
    }
    let ctx = Ctx::new(&input, config, versions, &EmptyCluster, inventory);
    if let Some(why) = not_ours(&ctx) {
        eprintln!(
            "lbguard plan: {}/{} skipped: {why}",
            input.namespace, input.name
        );
        return Ok(None);
    }
    let verdict = evaluate(&input, config, versions, &EmptyCluster, inventory);
    let plans: Vec<Plan> = providers(&ctx)
        .into_iter()
        .map(|p| crate::plan::of(&ctx, crate::providers::catalog(p)).clone())
        .collect();
    Ok(Some(Planned {
        file: String::new(),
        namespace: input.namespace.clone(),
        name: input.name.clone(),
        operation: op.as_str(),
        denied_by: verdict.denials().map(|v| v.rule).collect(),
        asks: crate::plan::relevant(&ctx),
        destructive: crate::plan::relevant(&ctx) && plans.iter().any(Plan::destructive),
        plans,
    }))
}

/// A controller source as the text output shows it: the path under the controller's
/// `pkg/controller/service/`.
fn short(source: &str) -> &str {
    source
        .strip_prefix("kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/")
        .or_else(|| source.strip_prefix("kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/"))
        .unwrap_or(source)
}

fn paint(on: bool, a: Action, s: &str) -> String {
    let code = match a.symbol() {
        '+' => "32",
        '-' => "31",
        '~' => "33",
        '!' => "35",
        _ => "2",
    };
    if on {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

fn print_text(planned: &[Planned], summary: &Summary, color: bool) {
    for p in planned {
        outln!(
            "{}/{} ({}, {})",
            p.namespace,
            p.name,
            p.file,
            p.operation.to_ascii_lowercase()
        );
        if !p.denied_by.is_empty() {
            outln!(
                "  # lbguard denies this request ({}): the controller never sees it; run lbguard check",
                p.denied_by.join(", ")
            );
        }
        if !p.asks {
            outln!(
                "  No changes: the update changes nothing the cloud controller reads (annotations, spec)."
            );
            continue;
        }
        for plan in &p.plans {
            let lb = plan
                .load_balancer
                .as_deref()
                .map(|l| format!(", load balancer {l}"))
                .unwrap_or_default();
            outln!("  {}{lb}", plan.controller);
            if plan.steps.is_empty() {
                outln!("    No changes: the cloud controller makes no call for this request.");
            }
            for s in &plan.steps {
                let head = format!("{} {}", s.action.symbol(), s.subject);
                outln!("    {}", paint(color, s.action, &head));
                if !s.detail.is_empty() {
                    outln!("        {}", s.detail);
                }
                let mut tail = Vec::new();
                if !s.calls.is_empty() {
                    tail.push(s.calls.join(", "));
                }
                tail.push(short(s.source).to_string());
                if let Some(r) = s.rule {
                    tail.push(format!("[{r}]"));
                }
                outln!("        {}", tail.join(" · "));
            }
            for b in &plan.basis {
                outln!("    (assumed: {b})");
            }
        }
    }
    let c = summary.counts;
    outln!(
        "Plan: {} to add, {} to change, {} to destroy, {} to take over, {} to orphan; {} note(s); {} of {} Service(s) need a review{}.",
        c.add,
        c.change,
        c.destroy,
        c.take_over,
        c.orphan,
        c.notes,
        summary.destructive,
        summary.services,
        if summary.skipped > 0 {
            format!(" ({} not lbguard's, skipped)", summary.skipped)
        } else {
            String::new()
        }
    );
}
