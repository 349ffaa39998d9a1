//! What the admission edge answers: the endpoint asked, the review with its labels for
//! logs and metrics, or a request refused without one.

use std::fmt::Write;

use kube::core::admission::AdmissionResponse;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Validate,
    Mutate,
}

impl Endpoint {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Endpoint::Validate => "validate",
            Endpoint::Mutate => "mutate",
        }
    }
}

/// What a request turned into: the review to send and labels for logs and metrics.
pub(super) struct Answer {
    pub(super) response: AdmissionResponse,
    pub(super) operation: &'static str,
    pub(super) rules: Vec<&'static str>,
    pub(super) namespace: String,
    pub(super) name: String,
    /// The Service's labels, for exceptions that select by label.
    pub(super) labels: std::collections::BTreeMap<String, String>,
    pub(super) dry_run: bool,
    /// Listener claims to take before the allowed answer goes out.
    pub(super) claims: Vec<crate::claims::ClaimKey>,
}

/// A request that cannot be answered with an AdmissionReview: HTTP 400 with this message.
pub struct Reject(pub(super) String);

/// A review that is not allowed, with the request's uid when it can be read.
pub(super) fn refuse(uid: Option<&str>, message: String) -> Result<Answer, Reject> {
    match uid {
        Some(uid) => {
            let mut response = AdmissionResponse::invalid(format!("lbguard: {message}"));
            response.uid = uid.to_string();
            response.result.code = 400;
            Ok(Answer {
                response,
                operation: "UNKNOWN",
                rules: vec![],
                namespace: String::new(),
                name: String::new(),
                labels: Default::default(),
                dry_run: false,
                claims: vec![],
            })
        }
        None => Err(Reject(message)),
    }
}

/// An allowed response for `uid`, built on kube's type.
pub(super) fn allowed(uid: String) -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid;
    response.allowed = true;
    response.result = Default::default();
    response
}

/// The decision line's `rules`: the same text as `{:?}` of the list (`["a", "b"]`), built
/// without the formatting machinery (Debug escaped every character: 10,000 instructions a
/// denial; a `Display` wrapper still cost 3,000); an id that would need escaping takes
/// Debug's path.
pub(super) fn rule_list(ids: &[&'static str]) -> String {
    let mut out = String::with_capacity(2 + ids.iter().map(|id| id.len() + 4).sum::<usize>());
    out.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            out.extend(["\"", id, "\""]);
        } else {
            // A String takes every write.
            let _ = write!(out, "{id:?}");
        }
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::rule_list;

    #[test]
    fn rule_ids_read_as_the_lists_debug_text() {
        for ids in [
            &[][..],
            &["lb-id-immutable"][..],
            &["lb-id-immutable", "enum-values", "unknown-annotation"][..],
            &["odd \"id\"\n", "é"][..],
        ] {
            assert_eq!(rule_list(ids), format!("{ids:?}"));
        }
    }
}
