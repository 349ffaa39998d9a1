//! The admission server over real TLS, fed AdmissionReviews as a kube-apiserver sends them.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use base64::Engine;
use common::{Start, TestServer, fixture, set_annotations};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ALI: &str = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-";
const VOLC: &str = "service.beta.kubernetes.io/volcengine-loadbalancer-";

fn key(prefix: &str, suffix: &str) -> String {
    format!("{prefix}{suffix}")
}

mod refusals;
mod review;
mod serving;
