//! The HTTPS admission server's surface: `state` holds the shared app state, `routes` the
//! admission router with health and readiness, the admission port's service around it and
//! the metrics router. `listen` runs the TLS accept loop, `process` starts the `serve`
//! process, `tasks` runs its background work and `command` is the `serve` command around
//! them.

pub mod admission;
pub mod command;
pub mod devcert;
pub mod events;
pub mod json_text;
pub mod listen;
pub mod log_json;
pub mod log_time;
pub mod log_writer;
pub mod metrics;
pub mod metrics_auth;
pub mod process;
pub mod routes;
pub mod state;
pub mod tasks;
pub mod tls;

pub use crate::vocab::duration::parse_duration;
pub use command::{LogFormat, ServeArgs, init_logging, run};
pub use listen::{Listen, MAX_HEADER_BYTES, serve_tls};
pub use process::{Running, ServerOptions, claims_namespace, start};
pub use routes::{AdmissionService, admission_service, metrics_router, router};
pub use state::{
    App, AppState, BODY_LIMIT, LogDecisions, MAX_CONNECTIONS, MAX_INFLIGHT, REQUEST_TIMEOUT,
    close_if_draining,
};
