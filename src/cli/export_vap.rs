//! `lbguard export-vap`: the stateless rules as ValidatingAdmissionPolicies and bindings, and
//! the config's defaults as a MutatingAdmissionPolicy and its binding.

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::config::Config;
use crate::engine::Versions;
use crate::vap::apply::ANNOTATIONS_LIMIT;
use crate::vap::mutating::{self, Api, Mutating};
use crate::vap::{Export, export, objects};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The config, versions and providers are written into the policies.
    #[command(flatten)]
    pub settings: super::settings::ConfigArgs,
    /// Only these rule ids (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub rules: Vec<String>,
    /// How to print the policies and bindings.
    #[arg(long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
    /// Say which rules are exported and why the others are not, instead of the policies.
    #[arg(long)]
    pub list: bool,
    /// Print only the exported rule ids, comma separated (for webhook.skipExportedRules).
    #[arg(long, conflicts_with = "list")]
    pub ids: bool,
    /// Which API the config's defaults are exported with, as a MutatingAdmissionPolicy.
    #[arg(long, value_enum, default_value_t = MutatingApi::Auto)]
    pub mutating: MutatingApi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MutatingApi {
    /// v1 for Kubernetes 1.36+ or an unknown version, v1beta1 for 1.34-1.35, none before.
    Auto,
    /// admissionregistration.k8s.io/v1 (Kubernetes 1.36+).
    V1,
    /// admissionregistration.k8s.io/v1beta1 (Kubernetes 1.34-1.35, beta API enabled).
    V1beta1,
    /// No MutatingAdmissionPolicy: the webhook keeps every default.
    Off,
}

impl MutatingApi {
    fn choose(self, versions: &Versions) -> Result<Api, String> {
        match self {
            MutatingApi::Auto => Api::for_cluster(versions),
            MutatingApi::V1 => Ok(Api::V1),
            MutatingApi::V1beta1 => Ok(Api::V1beta1),
            MutatingApi::Off => Err("--mutating off".into()),
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// YAML documents separated by `---`, for `kubectl apply -f -`.
    Yaml,
    /// One JSON `List` of the objects.
    Json,
}

fn config(args: &ExportArgs) -> Result<Config, String> {
    let config = args.settings.config()?;
    for id in &args.rules {
        if crate::rules::find(id).is_none() {
            return Err(format!(
                "--rules: unknown rule id \"{id}\" (run `lbguard rules` for the list)"
            ));
        }
    }
    Ok(config)
}

/// What `--list` says of the sizes it prints and of CEL cost.
const SIZES_AND_COST: &str = "
kubectl apply: the largest annotations of the rule's policies (the -advice ones too; for a rule split
into several policies, which is the largest) once client-side `kubectl apply` adds its copy of the
object (kubectl.kubernetes.io/last-applied-configuration); the API server takes at most 256 KiB.
CEL cost: the API server estimates none for ValidatingAdmissionPolicies (it compiles them untyped and
refuses none for cost); it counts each request's actual cost and fails a policy past 1,000,000 for
one expression or 10,000,000 for the policy (failurePolicy Fail then denies the request).
BENCHMARKS.md gives what these policies cost the API server per request.
";

/// The `--list` table: every rule, exported or not, and why; then every default.
pub fn list(e: &Export, m: &Mutating) -> String {
    let mut rows: Vec<(&str, String)> = e
        .exported
        .iter()
        .map(|x| {
            let (largest, size) = x.largest();
            let over = if size > ANNOTATIONS_LIMIT {
                ": too big for client-side apply, use kubectl apply --server-side"
            } else {
                ""
            };
            // A split rule names its policies (the -advice ones aside) and its largest.
            let names: Vec<&str> = x
                .policies
                .iter()
                .map(|b| b.name())
                .filter(|n| !n.ends_with("-advice"))
                .collect();
            let single = names.len() == 1 && names[0] == format!("lbguard-{}", x.rule.id);
            let (split, of) = if !single {
                (format!(" as {}", names.join(", ")), format!(" ({largest})"))
            } else {
                (String::new(), String::new())
            };
            (
                x.rule.id,
                format!(
                    "exported ({}{split}); kubectl apply: {:.1} of 256 KiB{of}{over}",
                    x.action.as_str(),
                    size as f64 / 1024.0
                ),
            )
        })
        .collect();
    rows.extend(
        e.skipped
            .iter()
            .map(|(id, why)| (*id, format!("not exported: {why}"))),
    );
    let order: Vec<&str> = crate::rules::registry().iter().map(|r| r.id).collect();
    rows.sort_by_key(|(id, _)| order.iter().position(|o| o == id));
    let mut out: String = rows
        .iter()
        .map(|(id, what)| format!("{id:<34} {what}\n"))
        .collect();
    out.push_str(SIZES_AND_COST);
    out.push_str("\nDefaults (the mutating webhook's):\n");
    let api = m.objects.first().and_then(|p| p["apiVersion"].as_str());
    for r in &m.rows {
        let what = match (&r.state, api) {
            (Ok(()), Some(api)) => format!(
                "exported (MutatingAdmissionPolicy {}, {api})",
                mutating::NAME
            ),
            (Ok(()), None) => "exported".into(),
            (Err(why), _) if why == mutating::INVENTORY => why.clone(),
            (Err(why), _) => format!("not exported: {why}"),
        };
        out.push_str(&format!("{:<34} {what}\n", r.name));
    }
    out
}

/// The policies as YAML documents or a JSON List.
pub fn render(e: &Export, m: &Mutating, format: Format) -> Result<String, String> {
    let mut objs = objects(e);
    objs.extend(m.objects.iter().cloned());
    match format {
        Format::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objs});
            serde_json::to_string_pretty(&list)
                .map(|s| s + "\n")
                .map_err(|e| e.to_string())
        }
        Format::Yaml => {
            let mut out = String::from(
                "# lbguard export-vap: one ValidatingAdmissionPolicy and binding per rule (a deny rule that also warns adds one named -advice, bound with Warn; a rule too big for one is split per provider and part, named after them).\n",
            );
            if !m.objects.is_empty() {
                out.push_str("# The config's defaults: the MutatingAdmissionPolicy lbguard-defaults and its binding, last (chart: vap.defaults=true).\n");
            }
            for o in &objs {
                out.push_str("---\n");
                out.push_str(&serde_saphyr::to_string(o).map_err(|e| e.to_string())?);
            }
            Ok(out)
        }
    }
}

pub fn run(args: ExportArgs) -> ExitCode {
    let config = match config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lbguard export-vap: {e}");
            return ExitCode::from(2);
        }
    };
    let versions = Versions::from_config(&config);
    let only = (!args.rules.is_empty()).then_some(args.rules.as_slice());
    let e = export(&config, &versions, only);
    let m = mutating::export(&config, &versions, args.mutating.choose(&versions));
    if args.list {
        out!("{}", list(&e, &m));
        return ExitCode::SUCCESS;
    }
    if args.ids {
        let ids: Vec<&str> = e.exported.iter().map(|x| x.rule.id).collect();
        outln!("{}", ids.join(","));
        return ExitCode::SUCCESS;
    }
    for x in &e.exported {
        let (name, size) = x.largest();
        if size > ANNOTATIONS_LIMIT {
            eprintln!(
                "lbguard export-vap: warning: {name} (rule {}) is {:.1} KiB once client-side `kubectl apply` adds its copy, over the API server's 256 KiB for annotations: apply it with `kubectl apply --server-side`",
                x.rule.id,
                size as f64 / 1024.0
            );
        }
    }
    match render(&e, &m, args.output) {
        Ok(s) => {
            out!("{s}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("lbguard export-vap: {err}");
            ExitCode::FAILURE
        }
    }
}
