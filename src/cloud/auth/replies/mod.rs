//! How a cloud's APIs word their answers (the error shape, its throttling, credential and
//! not-found codes), where its identity service and its load balancer API share them.

pub mod alibaba;
pub mod volcengine;
