//! What a rule's findings do: the action a rule defaults to and the config sets.

use serde::{Deserialize, Serialize};

/// What a rule's findings do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Deny,
    Warn,
    Off,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "deny",
            Action::Warn => "warn",
            Action::Off => "off",
        }
    }
}
