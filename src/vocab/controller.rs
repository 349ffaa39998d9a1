//! A provider's controllers, and the classes an operator maps to them: plain data the
//! config holds and the routing reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The controller of a provider that reconciles a Service, and so the vocabulary its
/// annotations are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Controller {
    /// The provider's default controller: ACK's CLB, CTyun's, CCE's and VKE's.
    Default,
    /// ACK's NLB controller (`nlbv2`).
    Nlb,
}

impl Controller {
    pub fn as_str(self) -> &'static str {
        match self {
            Controller::Default => "default",
            Controller::Nlb => "nlb",
        }
    }
}

/// Classes an operator runs besides the built-in ones: `loadBalancerClasses` in the config,
/// class name to the controller that takes it (for the configured provider, or each
/// provider under `auto`).
pub type Classes = BTreeMap<String, Controller>;
