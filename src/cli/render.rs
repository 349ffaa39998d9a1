//! One run of `check` in each output format, to stdout (`--output`) and to files
//! (`--report FORMAT=FILE`): every format from the same run, so they agree.

use std::path::PathBuf;

use super::check::{Checked, Output};
use super::print::{Paint, Summary};

/// Everything a run reports, whatever the format.
pub(super) struct Run<'a> {
    pub(super) results: &'a [Checked],
    pub(super) summary: &'a Summary,
    /// What could not be read or checked: the run fails (exit 2).
    pub(super) errors: &'a [String],
    /// What was skipped, and why.
    pub(super) notes: &'a [String],
    /// Per result: it reuses a load balancer but no inventory was given, so the inventory
    /// rules did not run for it.
    pub(super) blind: &'a [bool],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Error,
    Warning,
    Note,
}

/// A message about the run rather than a finding: an error, a note, or the inventory rules
/// that did not run.
pub(super) struct Notice {
    pub(super) level: Level,
    pub(super) text: String,
}

impl Run<'_> {
    /// The errors, the notes, then which inventory rules did not run.
    pub(super) fn notices(&self) -> Vec<Notice> {
        let errors = self.errors.iter().map(|e| Notice {
            level: Level::Error,
            text: e.clone(),
        });
        let notes = self.notes.iter().map(|n| Notice {
            level: Level::Note,
            text: n.clone(),
        });
        let blind = self.summary.no_inventory_note().map(|text| Notice {
            level: Level::Warning,
            text,
        });
        errors.chain(notes).chain(blind).collect()
    }
}

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
