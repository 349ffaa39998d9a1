//! The shared vocabulary the engine, the rules and the providers all speak: providers and
//! their catalogs, rules and findings, the request context, versions, load balancers and the
//! config. It imports nothing else of the crate, so the arrows run one way:
//! edges (server, cli, cluster, claims, inventory store) → engine → rules → providers → vocab.

pub mod action;
pub mod annotations;
pub mod catalog;
pub mod cel;
pub mod checks;
pub mod config;
pub mod controller;
pub mod ctx;
pub mod duration;
pub mod exceptions;
pub mod go;
pub mod input;
pub mod labels;
pub mod lb;
pub mod plan;
pub mod provider;
pub mod route;
pub mod rule;
pub mod service;
pub mod timestamp;
pub mod version;
pub mod yaml;
