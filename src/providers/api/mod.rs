//! What a cloud controller sends to its cloud's API, and the API's published limits on it:
//! one file per cloud, `providers/data/<provider>-api.yaml`, embedded and parsed once. Each
//! row maps an annotation to the API parameter the controller fills from it, with the limits
//! the API reference publishes and where both facts come from. `check` holds a Service's
//! values to those limits, only for the calls the controller makes for it.

pub mod cel;
mod check;
mod fields;
mod model;
mod provenance;

pub use check::{Listener, cce_listeners, check, listeners, named_nlb};
pub use model::{ApiTable, Call, Cond, Param, Reading, Side, Together, table};

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "ack_tests.rs"]
mod ack_tests;

#[cfg(test)]
#[path = "volcengine_tests.rs"]
mod volcengine_tests;

#[cfg(test)]
#[path = "huawei_tests.rs"]
mod huawei_tests;
