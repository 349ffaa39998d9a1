//! Admission of `LBGuardException` objects: one the config would not honour (an unknown or
//! non-exemptable rule, no reason, an expiry past the cap) is denied with every problem.

use serde_json::Value;
use serde_json::value::RawValue;

use super::answer::{Answer, allowed};
use crate::engine::exceptions::{Exception, problems};
use crate::server::state::AppState;

/// An `LBGuardException` request, read.
pub(super) struct Review {
    pub uid: String,
    pub operation: &'static str,
    pub namespace: String,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
}

impl Review {
    pub fn new(
        uid: String,
        operation: &str,
        namespace: Option<String>,
        object: Option<&RawValue>,
        old_object: Option<&RawValue>,
    ) -> Self {
        let value = |r: Option<&RawValue>| {
            r.filter(|r| r.get() != "null")
                .and_then(|r| serde_json::from_str(r.get()).ok())
        };
        Self {
            uid,
            operation: match operation {
                "CREATE" => "CREATE",
                "UPDATE" => "UPDATE",
                "DELETE" => "DELETE",
                _ => "OTHER",
            },
            namespace: namespace.unwrap_or_default(),
            object: value(object),
            old_object: value(old_object),
        }
    }
}

/// Checks a created or changed exception against the config, as of now.
pub(super) fn review(app: &AppState, r: Review) -> Answer {
    let mut response = allowed(r.uid.clone());
    let mut name = String::new();
    let checked = matches!(r.operation, "CREATE" | "UPDATE")
        // Only a changed spec is checked again: labels or finalizers on an expired
        // exception can still be edited, and it can still be deleted.
        && r.object.as_ref().map(|o| &o["spec"]) != r.old_object.as_ref().map(|o| &o["spec"]);
    if checked && let Some(obj) = &r.object {
        let mut obj = obj.clone();
        // The request's namespace when the object omits it (the API server fills it in).
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
            && m.get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            m.insert("namespace".into(), Value::String(r.namespace.clone()));
        }
        // The cap counts from creationTimestamp (kept on UPDATE), so an edit cannot stretch it.
        let found = match Exception::from_value(&obj) {
            Some(Ok(e)) => {
                name = e.name.clone();
                problems(&e, &app.config, std::time::SystemTime::now())
            }
            Some(Err(e)) => vec![e],
            None => vec!["not an lbguard.io/v1alpha1 LBGuardException".into()],
        };
        if !found.is_empty() {
            response = response.deny(format!(
                "lbguard: LBGuardException {}/{name} is not valid: {}",
                r.namespace,
                found.join("; ")
            ));
            response.result.code = 422;
            response.result.reason = "Invalid".into();
        }
    }
    Answer {
        response,
        operation: r.operation,
        rules: vec![],
        namespace: r.namespace,
        name,
        labels: Default::default(),
        dry_run: false,
        claims: vec![],
    }
}
