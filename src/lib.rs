//! lbguard: a Kubernetes admission webhook for `type: LoadBalancer` Services.
#![forbid(unsafe_code)]

pub use vocab::{config, yaml};

pub mod claims;
pub mod cli;
pub mod cloud;
pub mod cluster;
pub mod engine;
pub mod inventory;
pub mod plan;
pub mod providers;
pub mod reload;
pub mod rules;
pub mod server;
pub mod vap;
pub mod vocab;

#[cfg(test)]
pub mod testkit;
