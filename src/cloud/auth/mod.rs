//! Signing and credentials: how each cloud wants a request signed (`sign`) and words its
//! answers (`replies`), the access key (`creds`), the short-lived credentials of each cloud's
//! identity services (`identity`, the chain), and the store that holds and renews them
//! (`store`). Above `base`, below the transport.

pub mod creds;
pub mod identity;
pub mod replies;
pub mod sign;
pub mod store;
