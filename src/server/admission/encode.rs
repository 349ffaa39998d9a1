//! The answer as JSON: the AdmissionReview the API server reads back.

use std::fmt::Write;

use axum::Json;
use axum::response::{IntoResponse, Response};
use kube::core::admission::AdmissionResponse;
use kube::core::response::StatusSummary;
use serde_json::{Value, json};

use crate::server::json_text::push as string;

/// The AdmissionReview as the HTTP response: `encode_review`'s JSON, byte for byte, written
/// without building its `Value` tree (an allocation per key, and the keys sorted into maps)
/// for the answers without a patch, nearly all of them.
pub(super) fn review_response(response: AdmissionResponse) -> Response {
    let plain = response.patch.is_none()
        && response.result.metadata.is_none()
        && response.result.details.is_none();
    if !plain {
        return Json(encode_review(response)).into_response();
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        plain_review(&response),
    )
        .into_response()
}

/// An AdmissionReview without a patch, its keys in the order of `encode_review`'s `Value`
/// (sorted, as serde_json's maps keep them), each skipped where kube's types skip it. Written
/// by hand: serde_json escapes strings a byte at a time, and a denial's message and warnings
/// are most of the answer (BENCHMARKS.md, #41, tenth pass).
fn plain_review(r: &AdmissionResponse) -> String {
    let warnings = r.warnings.as_deref();
    let mut annotations: Vec<(&str, &str)> = r
        .audit_annotations
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    annotations.sort_unstable();
    // Sized for the answer up front: growing it while writing a denial's message and
    // warnings reallocated it four times (BENCHMARKS.md, #41).
    let text = r.result.message.len()
        + warnings
            .into_iter()
            .flatten()
            .map(String::len)
            .sum::<usize>()
        + annotations
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let mut out = String::with_capacity(256 + text + text / 8);
    out.push_str("{\"apiVersion\":");
    string(&mut out, &r.types.api_version);
    out.push_str(",\"kind\":");
    string(&mut out, &r.types.kind);
    out.push_str(",\"response\":{\"allowed\":");
    out.push_str(if r.allowed { "true" } else { "false" });
    if !annotations.is_empty() {
        out.push_str(",\"auditAnnotations\":{");
        for (i, (k, v)) in annotations.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(&mut out, k);
            out.push(':');
            string(&mut out, v);
        }
        out.push('}');
    }
    out.push_str(",\"status\":{");
    let mut first = true;
    let mut key = |out: &mut String, name: &str| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
    };
    if r.result.code != 0 {
        key(&mut out, "code");
        let _ = write!(out, "{}", r.result.code); // a String takes every write
    }
    if !r.result.message.is_empty() {
        key(&mut out, "message");
        string(&mut out, &r.result.message);
    }
    if !r.result.reason.is_empty() {
        key(&mut out, "reason");
        string(&mut out, &r.result.reason);
    }
    if let Some(status) = r.result.status {
        key(&mut out, "status");
        out.push_str(match status {
            StatusSummary::Success => "\"Success\"",
            StatusSummary::Failure => "\"Failure\"",
        });
    }
    out.push_str("},\"uid\":");
    string(&mut out, &r.uid);
    if let Some(warnings) = warnings {
        out.push_str(",\"warnings\":[");
        for (i, w) in warnings.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(&mut out, w);
        }
        out.push(']');
    }
    out.push_str("}}");
    out
}

/// The AdmissionReview JSON. kube serializes `patch` (Go `[]byte`) as an array of numbers
/// (kube-rs issue 1781); the API server requires base64, so it is encoded here.
pub fn encode_review(mut response: AdmissionResponse) -> Value {
    use base64::Engine;
    let patch = response.patch.take();
    let mut review = serde_json::to_value(response.into_review()).unwrap_or_else(|e| {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "response": {"allowed": false, "status": {"code": 500, "message": format!("lbguard: cannot encode response: {e}")}}})
    });
    if let (Some(p), Some(r)) = (
        patch,
        review.get_mut("response").and_then(Value::as_object_mut),
    ) {
        r.insert(
            "patch".into(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(p)),
        );
    }
    review
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod encode_tests;
