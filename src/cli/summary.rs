//! The counts a `check` run ends with, and which inventory rules it could not run.

use std::fmt::Write as _;

use serde::Serialize;

#[derive(Debug, Default, Serialize)]
pub(super) struct Summary {
    pub(super) checked: usize,
    pub(super) skipped: usize,
    /// Documents that are not Kubernetes objects (a list, a scalar, a mapping without
    /// `kind`), skipped with a note.
    pub(super) ignored: usize,
    /// Services another load balancer implementation serves: not lbguard's.
    pub(super) foreign: usize,
    pub(super) denied: usize,
    pub(super) warned: usize,
    /// Findings an `--exceptions` object let through.
    pub(super) exempted: usize,
    /// Services that reuse a load balancer, checked without an inventory: the inventory
    /// rules could not run for them.
    #[serde(skip)]
    pub(super) no_inventory: usize,
    /// Their providers: only those providers' inventory rules are named.
    #[serde(skip)]
    pub(super) no_inventory_providers: std::collections::BTreeSet<crate::vocab::provider::Provider>,
}

impl Summary {
    /// The counts, as the text output's last lines say them.
    pub(super) fn sentence(&self) -> String {
        let mut out = format!(
            "{} Service(s) checked: {} denied, {} allowed with warnings; {} other object(s) skipped",
            self.checked, self.denied, self.warned, self.skipped
        );
        if self.ignored > 0 {
            let _ = write!(
                out,
                "; {} document(s) that are not Kubernetes objects skipped",
                self.ignored
            );
        }
        if self.foreign > 0 {
            let _ = write!(
                out,
                "; {} Service(s) of another load balancer implementation skipped",
                self.foreign
            );
        }
        out
    }

    /// Which inventory rules did not run, for the providers of the Services that reuse a load
    /// balancer, if any did not. `lb-exists` is apart: a file cannot say a load balancer is
    /// missing, only the cloud's API can.
    pub(super) fn no_inventory_note(&self) -> Option<String> {
        if self.no_inventory == 0 {
            return None;
        }
        let (exists, facts): (Vec<&str>, Vec<&str>) = crate::rules::registry()
            .iter()
            .filter(|r| matches!(r.class, crate::rules::Class::Inventory))
            .filter(|r| {
                r.providers
                    .iter()
                    .any(|p| self.no_inventory_providers.contains(p))
            })
            .map(|r| r.id)
            .partition(|id| *id == "lb-exists");
        let mut line = format!(
            "{} Service(s) reuse a load balancer, but no inventory was given:",
            self.no_inventory
        );
        if !facts.is_empty() {
            line.push_str(&format!(
                " {} did not run (--inventory FILE or --inventory-cloud)",
                facts.join(", ")
            ));
        }
        if !exists.is_empty() {
            line.push_str(if facts.is_empty() { " " } else { "; " });
            line.push_str("lb-exists did not run (--inventory-cloud: only the cloud can say a load balancer does not exist)");
        }
        Some(line)
    }
}
