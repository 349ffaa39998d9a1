//! What evaluating a request gives: each finding with its action and, when an
//! `LBGuardException` lets it through, that exception.

use serde::Serialize;

use crate::vocab::action::Action;
use crate::vocab::exceptions::{Exception, KIND, format_time};

/// The exception that covers a finding, as reports and messages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    pub namespace: String,
    pub name: String,
    pub reason: String,
    pub expires: String,
}

impl Applied {
    /// How `e` shows where it lets a finding through.
    pub fn of(e: &Exception) -> Self {
        Self {
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            reason: e.spec.reason.trim().to_string(),
            expires: e
                .expires()
                .map_or_else(|| e.spec.expires.clone(), format_time),
        }
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// `allowed by LBGuardException shop/x until 2026-12-09T00:00:00Z, reason: the reason`.
    pub fn describe(&self) -> String {
        format!(
            "allowed by {KIND} {} until {}, reason: {}",
            self.key(),
            self.expires,
            self.reason
        )
    }
}

/// Which action a finding takes: deny or warn (`off` findings are dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: &'static str,
    pub action: Action,
    pub field: String,
    /// `[rule-id] ...`, one line, as users see it.
    pub message: String,
    /// Found in the load balancer inventory's facts, which an exported policy cannot read.
    #[serde(skip)]
    pub inventory: bool,
    /// The other Service the finding names (namespace/name), if any.
    #[serde(skip)]
    pub peer: Option<String>,
    /// The `LBGuardException` that lets this finding through: it neither denies nor fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<Applied>,
}

impl Violation {
    /// Denies the request: a deny finding no exception covers.
    pub fn denies(&self) -> bool {
        self.action == Action::Deny && self.exception.is_none()
    }

    /// The line a user sees for it as a warning.
    pub fn warning(&self) -> String {
        match &self.exception {
            Some(e) => format!("{} ({})", self.message, e.describe()),
            None => self.message.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
    /// Warnings that are not rule findings (exemptions, provider ambiguity).
    pub notes: Vec<String>,
    /// Set when the request was exempt and not checked; says why.
    pub exempt: Option<String>,
    /// With `exempt`: the Service is served by another load balancer implementation, so it
    /// is not lbguard's at all (no report entry either).
    pub foreign: bool,
    /// Rules whose findings the inventory's facts cleared (the controller sends nothing
    /// there): an exported policy, which cannot read the inventory, still reports them.
    pub cleared: Vec<&'static str>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        !self.violations.iter().any(Violation::denies)
    }

    pub fn denials(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| v.denies())
    }

    /// Every line a user should see as `Warning:`.
    pub fn warnings(&self) -> Vec<String> {
        self.notes
            .iter()
            .cloned()
            .chain(
                self.violations
                    .iter()
                    .filter(|v| v.action == Action::Warn || v.exception.is_some())
                    .map(Violation::warning),
            )
            .collect()
    }

    /// Denial text for `status.message`: every denial, joined.
    pub fn denial_message(&self) -> Option<String> {
        let msgs: Vec<&str> = self.denials().map(|v| v.message.as_str()).collect();
        (!msgs.is_empty()).then(|| msgs.join("; "))
    }

    pub fn rule_ids(&self) -> Vec<&'static str> {
        self.violations.iter().map(|v| v.rule).collect()
    }
}
