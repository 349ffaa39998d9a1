//! One run of `check`, as every output format reads it.

use super::checked::Checked;
use super::summary::Summary;

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
