//! `lbguard check`: the webhook's engine over manifests, in the API server's order
//! (defaults first, then validation of the defaulted object).

use std::collections::HashMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use serde::Serialize;
use serde_json::Value;

use super::positions::{self, Doc, Seg};
use crate::cluster::ClusterState;
use crate::config::Config;
use crate::engine::{Input, Inventory, Operation, UserInfo, Verdict, Versions, evaluate, mutate};
use crate::inventory::Snapshot;
use crate::rules::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `file:line:col: deny [rule] message`, the compiler style editors jump to.
    Text,
    /// One JSON document: each object's verdict, violations, defaults (a JSON Patch) and
    /// warnings, then a summary.
    Json,
    /// SARIF 2.1.0, for code scanning in pull requests.
    Sarif,
    /// JUnit XML, for CI systems that show test reports.
    Junit,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub settings: super::ConfigArgs,
    /// Live objects: a Service here with the same namespace/name is checked as an UPDATE.
    #[arg(long = "old", value_name = "FILE")]
    pub old: Vec<PathBuf>,
    /// How to print the findings.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
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
    pub cloud_timeout: Option<std::time::Duration>,
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
    /// YAML or JSON manifests (multi-document, `kind: List`), directories, or `-` for stdin.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// One Service found in the input, with where it came from.
#[derive(Debug)]
pub struct Found {
    pub origin: String,
    pub service: Service,
    /// The file it came from, as named on the command line.
    pub file: String,
    /// Where its document's fields are.
    pub doc: Arc<Doc>,
    /// Its path in the document (`items[2]` in a List).
    pub base: Vec<Seg>,
}

/// Everything read from a set of files.
#[derive(Debug, Default)]
pub struct Loaded {
    pub services: Vec<Found>,
    /// Objects of other kinds, with where they came from.
    pub others: Vec<(String, Value)>,
    pub skipped: usize,
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Violation<'a> {
    rule: &'a str,
    action: Action,
    message: &'a str,
    field: &'a str,
    line: usize,
    column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<&'a crate::engine::exceptions::Applied>,
}

#[derive(Debug, Serialize)]
struct ResultJson<'a> {
    namespace: String,
    name: String,
    operation: &'static str,
    allowed: bool,
    violations: Vec<Violation<'a>>,
    defaults: Value,
    warnings: Vec<String>,
    file: &'a str,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    checked: usize,
    skipped: usize,
    /// Services another load balancer implementation serves: not lbguard's.
    foreign: usize,
    denied: usize,
    warned: usize,
    /// Findings an `--exceptions` object let through.
    exempted: usize,
}

fn read_source(path: &Path) -> Result<String, String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("<stdin>: {e}"))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Files named directly, and the .yaml/.yml/.json files under directories, sorted.
fn expand(paths: &[PathBuf], errors: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            let mut found = Vec::new();
            while let Some(dir) = stack.pop() {
                match std::fs::read_dir(&dir) {
                    Ok(entries) => {
                        for e in entries.flatten() {
                            let path = e.path();
                            if path.is_dir() {
                                stack.push(path);
                            } else if path
                                .extension()
                                .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                            {
                                found.push(path);
                            }
                        }
                    }
                    Err(e) => errors.push(format!("{}: {e}", dir.display())),
                }
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Parses one Kubernetes object as a Service, naming the field that is wrong.
pub fn parse_service(value: Value) -> Result<Service, String> {
    let svc: Service = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })?;
    if svc.metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err("Service has no metadata.name".into());
    }
    Ok(svc)
}

/// Where a document came from, for findings' positions.
struct Place<'a> {
    file: &'a str,
    doc: &'a Arc<Doc>,
    base: Vec<Seg>,
}

fn collect(value: Value, origin: &str, place: Place, loaded: &mut Loaded, depth: usize) {
    let kind = value.get("kind").and_then(Value::as_str).map(str::to_owned);
    match kind.as_deref() {
        Some("List") | Some("ServiceList") if depth == 0 => match value.get("items").cloned() {
            Some(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    let mut base = place.base.clone();
                    base.extend([Seg::Key("items".into()), Seg::Index(i)]);
                    let inner = Place {
                        file: place.file,
                        doc: place.doc,
                        base,
                    };
                    collect(
                        item,
                        &format!("{origin} item {}", i + 1),
                        inner,
                        loaded,
                        depth + 1,
                    );
                }
            }
            Some(Value::Null) | None => {}
            Some(_) => loaded
                .errors
                .push(format!("{origin}: List items is not an array")),
        },
        Some("Service") => match parse_service(value) {
            Ok(service) => loaded.services.push(Found {
                origin: origin.to_string(),
                service,
                file: place.file.to_string(),
                doc: Arc::clone(place.doc),
                base: place.base,
            }),
            Err(e) => loaded.errors.push(format!("{origin}: {e}")),
        },
        Some(_) => {
            loaded.others.push((origin.to_string(), value));
            loaded.skipped += 1;
        }
        None => loaded.skipped += 1,
    }
}

/// Reads every document of every file; errors name the file and the document.
pub fn load(paths: &[PathBuf]) -> Loaded {
    let mut loaded = Loaded::default();
    let files = expand(paths, &mut loaded.errors);
    for path in files {
        let name = if path == Path::new("-") {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let text = match read_source(&path) {
            Ok(t) => t,
            Err(e) => {
                loaded.errors.push(e);
                continue;
            }
        };
        // Empty documents are skipped (not counted); a syntax error ends the stream.
        let places = positions::index(&text);
        for (i, doc) in crate::yaml::documents(&text).into_iter().enumerate() {
            let origin = format!("{name} document {}", i + 1);
            let at = Arc::new(places.get(i).cloned().unwrap_or_default());
            let place = Place {
                file: &name,
                doc: &at,
                base: Vec::new(),
            };
            match doc {
                Ok(v @ Value::Object(_)) => collect(v, &origin, place, &mut loaded, 0),
                Ok(_) => loaded.errors.push(format!(
                    "{origin}: not a Kubernetes object (expected a mapping)"
                )),
                Err(e) => loaded.errors.push(format!("{origin}: not valid YAML: {e}")),
            }
        }
    }
    loaded
}

/// Feeds live objects into the cluster view, as the watches would; returns the errors.
pub fn feed_cluster(cluster: &ClusterState, loaded: Loaded) -> Vec<String> {
    let mut errors = loaded.errors;
    for f in &loaded.services {
        cluster.apply_service(&f.service);
    }
    for (origin, value) in loaded.others {
        match value.get("kind").and_then(Value::as_str) {
            Some("Node") => match serde_path_to_error::deserialize::<_, Node>(value) {
                Ok(n) => cluster.apply_node(&n),
                Err(e) => errors.push(format!("{origin}: {}: {}", e.path(), e.inner())),
            },
            Some("Ingress") => match serde_path_to_error::deserialize::<_, Ingress>(value) {
                Ok(i) => cluster.apply_ingress(&i),
                Err(e) => errors.push(format!("{origin}: {}: {}", e.path(), e.inner())),
            },
            _ => {}
        }
    }
    errors
}

fn key_of(s: &Service) -> (String, String) {
    (
        s.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        s.metadata.name.clone().unwrap_or_default(),
    )
}

/// The result of checking one Service, shared by the text and JSON printers.
pub struct Checked {
    pub origin: String,
    /// The file, the document's field positions and the object's path in it.
    pub file: String,
    pub doc: Arc<Doc>,
    pub base: Vec<Seg>,
    pub input: Input,
    pub patch: json_patch::Patch,
    pub applied: Vec<crate::engine::AppliedDefault>,
    pub verdict: Verdict,
}

impl Checked {
    /// Line and column of the field a finding names (or of its nearest parent in the file).
    pub fn locate(&self, v: &crate::engine::Violation) -> (usize, usize) {
        self.doc.locate(&self.base, &v.field)
    }
}

/// Defaults then validation, the API server's order.
pub fn check_one(
    service: Service,
    old: Option<Service>,
    config: &Config,
    versions: &Versions,
    cluster: &ClusterState,
    inventory: &dyn Inventory,
    defaults: bool,
    exceptions: &[crate::engine::exceptions::Exception],
) -> Result<Checked, String> {
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
    let labels = input
        .object
        .as_ref()
        .and_then(|s| s.metadata.labels.clone())
        .unwrap_or_default();
    crate::engine::exceptions::apply(
        &mut verdict,
        &crate::engine::exceptions::Subject {
            namespace: &input.namespace,
            name: &input.name,
            labels: &labels,
        },
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

fn build_config(args: &CheckArgs) -> Result<Config, String> {
    let mut config = args.settings.config()?;
    // The inventory path is checked when it is loaded.
    if let Some(i) = &args.inventory {
        config.inventory.path = Some(i.display().to_string());
    }
    Ok(config)
}

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

pub fn run(args: CheckArgs) -> ExitCode {
    let config = match build_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lbguard check: {e}");
            return ExitCode::from(2);
        }
    };
    let versions = Versions::from_config(&config);
    let mut inventory = match &config.inventory.path {
        None => None,
        Some(p) => match Snapshot::load(Path::new(p)) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("lbguard check: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut config = config;
    let loaded = load(&args.files);
    let view = if args.inventory_cloud {
        let cloud = match super::inventory::cloud(&mut config, args.region.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("lbguard check: {e}");
                return ExitCode::from(2);
            }
        };
        let mut ids: Vec<String> = loaded
            .services
            .iter()
            .filter_map(|f| cloud.named_id(Some(&f.service)))
            .collect();
        ids.sort();
        ids.dedup();
        let budget = args
            .cloud_timeout
            .unwrap_or(config.inventory.cloud.timeout.0);
        match super::inventory::fetch(&cloud, &ids, inventory.take().map(Arc::new), budget) {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("lbguard check: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    let file = view.as_ref().and_then(|v| v.file_arc());
    let inventory = crate::inventory::choose(
        view.as_ref()
            .map(|v| v as &dyn crate::vocab::ctx::Inventory),
        file.as_deref().or(inventory.as_ref()),
    );
    let inventory = &inventory;
    let old_loaded = load(&args.old);
    let mut errors = old_loaded.errors;
    let old: HashMap<(String, String), Service> = old_loaded
        .services
        .into_iter()
        .map(|f| (key_of(&f.service), f.service))
        .collect();
    let cluster = ClusterState::new(crate::vocab::route::Scope::of(&config));
    errors.extend(feed_cluster(&cluster, load(&args.cluster_state)));
    errors.extend(loaded.errors);
    let granted = super::exceptions::read(&args.exceptions, &config, std::time::SystemTime::now());
    errors.extend(granted.errors);
    for n in &granted.notes {
        eprintln!("lbguard check: {n}");
    }

    let mut results = Vec::new();
    for found in loaded.services {
        let live = old.get(&key_of(&found.service)).cloned();
        match check_one(
            found.service,
            live,
            &config,
            &versions,
            &cluster,
            inventory,
            !args.no_defaults,
            &granted.exceptions,
        ) {
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
        eprintln!(
            "lbguard check: {}/{} ({}) skipped: {}",
            c.input.namespace,
            c.input.name,
            c.origin,
            c.verdict.exempt.as_deref().unwrap_or_default()
        );
    }
    let summary = Summary {
        checked: results.len(),
        skipped: loaded.skipped,
        foreign: foreign.len(),
        denied: results.iter().filter(|c| !c.verdict.allowed()).count(),
        warned: results
            .iter()
            .filter(|c| c.verdict.allowed() && !c.verdict.warnings().is_empty())
            .count(),
        exempted: results
            .iter()
            .flat_map(|c| &c.verdict.violations)
            .filter(|v| v.exception.is_some())
            .count(),
    };
    match args.output {
        Output::Json => print_json(&results, &summary),
        Output::Text => print_text(&results, &summary, Paint(std::io::stdout().is_terminal())),
        Output::Sarif => outln!("{:#}", super::report::sarif(&results)),
        Output::Junit => out!("{}", super::report::junit(&results)),
    }
    for e in &errors {
        eprintln!("lbguard check: {e}");
    }
    if !errors.is_empty() {
        ExitCode::from(2)
    } else if summary.denied > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_json(results: &[Checked], summary: &Summary) {
    let items: Vec<ResultJson> = results
        .iter()
        .map(|c| ResultJson {
            namespace: c.input.namespace.clone(),
            name: c.input.name.clone(),
            operation: c.input.operation.as_str(),
            allowed: c.verdict.allowed(),
            violations: c
                .verdict
                .violations
                .iter()
                .map(|v| {
                    let (line, column) = c.locate(v);
                    Violation {
                        rule: v.rule,
                        action: v.action,
                        message: &v.message,
                        field: &v.field,
                        line,
                        column,
                        exception: v.exception.as_ref(),
                    }
                })
                .collect(),
            defaults: serde_json::to_value(&c.patch).unwrap_or(Value::Array(vec![])),
            // What `kubectl apply` prints: the mutating webhook's lines, then the validating's.
            warnings: c
                .applied
                .iter()
                .map(|d| d.warning())
                .chain(c.verdict.notes.iter().cloned())
                .collect(),
            file: &c.origin,
        })
        .collect();
    let doc = serde_json::json!({ "results": items, "summary": summary });
    outln!("{doc:#}");
}

fn print_text(results: &[Checked], summary: &Summary, paint: Paint) {
    for c in results {
        let head = if c.verdict.allowed() {
            paint.wrap("32", "ALLOWED")
        } else {
            paint.wrap("31;1", "DENIED ")
        };
        outln!(
            "{head} {}/{} ({}) {}",
            c.input.namespace,
            c.input.name,
            c.input.operation.as_str(),
            c.origin
        );
        for d in &c.applied {
            outln!(
                "  {} {} = \"{}\" ({})",
                paint.wrap("36", "default"),
                d.field,
                d.value,
                d.reason
            );
        }
        for n in &c.verdict.notes {
            outln!("  {} {n}", paint.wrap("33", "note   "));
        }
        for v in &c.verdict.violations {
            let tag = match v.action {
                _ if v.exception.is_some() => paint.wrap("36", "exempt"),
                Action::Deny => paint.wrap("31", "deny"),
                _ => paint.wrap("33", "warn"),
            };
            let (line, col) = c.locate(v);
            outln!("{}:{line}:{col}: {tag} {}", c.file, v.warning());
        }
    }
    outln!(
        "{} Service(s) checked: {} denied, {} allowed with warnings; {} other object(s) skipped{}",
        summary.checked,
        summary.denied,
        summary.warned,
        summary.skipped,
        match summary.foreign {
            0 => String::new(),
            n => format!("; {n} Service(s) of another load balancer implementation skipped"),
        }
    );
    if summary.exempted > 0 {
        outln!(
            "{} finding(s) let through by LBGuardExceptions",
            summary.exempted
        );
    }
}

fn cloud_budget(s: &str) -> Result<std::time::Duration, String> {
    match crate::vocab::duration::parse_duration(s)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}
