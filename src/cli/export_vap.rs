//! `lbguard export-vap`: the stateless rules as ValidatingAdmissionPolicies and bindings.

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::config::Config;
use crate::engine::Versions;
use crate::vap::{Export, export, objects};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The config, versions and providers are written into the policies.
    #[command(flatten)]
    pub settings: super::ConfigArgs,
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

/// The `--list` table: every rule, exported or not, and why.
pub fn list(e: &Export) -> String {
    let mut rows: Vec<(&str, String)> = e
        .exported
        .iter()
        .map(|x| (x.rule.id, format!("exported ({})", x.action.as_str())))
        .collect();
    rows.extend(
        e.skipped
            .iter()
            .map(|(id, why)| (*id, format!("not exported: {why}"))),
    );
    let order: Vec<&str> = crate::rules::registry().iter().map(|r| r.id).collect();
    rows.sort_by_key(|(id, _)| order.iter().position(|o| o == id));
    rows.iter()
        .map(|(id, what)| format!("{id:<34} {what}\n"))
        .collect()
}

/// The policies as YAML documents or a JSON List.
pub fn render(e: &Export, format: Format) -> Result<String, String> {
    let objs = objects(e);
    match format {
        Format::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objs});
            serde_json::to_string_pretty(&list)
                .map(|s| s + "\n")
                .map_err(|e| e.to_string())
        }
        Format::Yaml => {
            let mut out = String::from(
                "# lbguard export-vap: one ValidatingAdmissionPolicy and binding per rule (a deny rule that also warns adds one named -advice, bound with Warn).\n",
            );
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
    if args.list {
        out!("{}", list(&e));
        return ExitCode::SUCCESS;
    }
    if args.ids {
        let ids: Vec<&str> = e.exported.iter().map(|x| x.rule.id).collect();
        outln!("{}", ids.join(","));
        return ExitCode::SUCCESS;
    }
    match render(&e, args.output) {
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
