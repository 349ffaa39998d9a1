//! One run of `check` in each output format, to stdout (`--output`) and to files
//! (`--report FORMAT=FILE`): every format from the same run, so they agree.

use std::path::PathBuf;

use super::output::Output;
use super::print::Paint;
pub(super) use super::run::Run;

/// `--report` values: `FORMAT=FILE`.
pub fn report_spec(s: &str) -> Result<(Output, PathBuf), String> {
    use clap::ValueEnum;
    let (format, file) = s
        .split_once('=')
        .ok_or("expected FORMAT=FILE (for example sarif=lbguard.sarif)")?;
    let format = Output::from_str(format, true).map_err(|_| {
        let names: Vec<String> = Output::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
            .collect();
        format!("unknown format {format:?}; one of {}", names.join(", "))
    })?;
    if file.is_empty() || file == "-" {
        return Err("give a file (stdout is --output's)".into());
    }
    Ok((format, PathBuf::from(file)))
}

pub(super) fn render(format: Output, run: &Run, paint: Paint) -> String {
    match format {
        Output::Text => super::print::text(run, paint),
        Output::Json => super::print::json(run),
        Output::Sarif => format!("{:#}\n", super::report::sarif(run)),
        Output::Junit => super::report::junit(run),
        Output::Github => super::github::commands(run),
        Output::Markdown => super::github::markdown(run),
    }
}

/// Writes each `--report`; a report that cannot be written is an error.
pub(super) fn write_reports(reports: &[(Output, PathBuf)], run: &Run) -> Vec<String> {
    let mut errors = Vec::new();
    for (format, file) in reports {
        let text = render(*format, run, Paint(false));
        if let Err(e) = std::fs::write(file, text) {
            errors.push(format!("cannot write the report {}: {e}", file.display()));
        }
    }
    errors
}
