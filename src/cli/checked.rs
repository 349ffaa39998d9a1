//! What checking one Service gave, as `check` hands it to the printers and reports.

use std::sync::Arc;

use super::positions::{Doc, Seg};
use crate::engine::{Input, Verdict};

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
