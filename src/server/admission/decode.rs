//! Reading an AdmissionReview. Requests are read through a borrowed envelope instead of
//! kube's `AdmissionRequest<Service>`, which deserializes every managedFields entry into a
//! `serde_json::Value` tree: that cost lbguard 44% of its throughput against a bare TLS
//! baseline (BENCHMARKS.md).

use k8s_openapi::api::core::v1::Service;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The parts of an AdmissionReview lbguard reads. Objects stay raw JSON until needed, so a
/// request costs one pass over the body and no `serde_json::Value` tree.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    api_version: Option<Value>,
    kind: Option<Value>,
    #[serde(borrow)]
    request: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct Gvk {
    #[serde(default)]
    pub(super) group: String,
    #[serde(default)]
    pub(super) kind: String,
}

#[derive(Deserialize, Default)]
pub(super) struct RawUser {
    pub(super) username: Option<String>,
    pub(super) groups: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReviewRequest<'a> {
    #[serde(default)]
    pub(super) uid: Option<String>,
    pub(super) kind: Gvk,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    pub(super) operation: String,
    #[serde(default)]
    pub(super) user_info: RawUser,
    #[serde(borrow, default)]
    pub(super) object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) old_object: Option<&'a RawValue>,
    #[serde(default)]
    pub(super) dry_run: Option<bool>,
}

#[derive(Deserialize)]
struct UidOnly {
    uid: Option<String>,
}

/// The ObjectMeta fields rules read; managedFields and the rest are skipped unparsed.
#[derive(Deserialize)]
struct SlimMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    annotations: Option<std::collections::BTreeMap<String, String>>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    finalizers: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct SlimService {
    metadata: SlimMeta,
    spec: Option<k8s_openapi::api::core::v1::ServiceSpec>,
}

pub(super) fn service(raw: Option<&RawValue>, which: &str) -> Result<Option<Service>, String> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok(None);
    };
    // The plain parse first; the path-tracking one (which allocates per key) only to word
    // the error of a Service that does not parse.
    let slim: SlimService = match serde_json::from_str(raw.get()) {
        Ok(s) => s,
        Err(plain) => {
            let mut de = serde_json::Deserializer::from_str(raw.get());
            return Err(
                match serde_path_to_error::deserialize::<_, SlimService>(&mut de) {
                    Err(e) => format!(
                        "cannot read the Service in the request: request.{which}.{}: {}",
                        e.path(),
                        e.inner()
                    ),
                    Ok(_) => {
                        format!("cannot read the Service in the request: request.{which}: {plain}")
                    }
                },
            );
        }
    };
    Ok(Some(slim.into_service()))
}

impl SlimService {
    fn into_service(self) -> Service {
        let m = self.metadata;
        Service {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                annotations: m.annotations,
                labels: m.labels,
                finalizers: m.finalizers,
                ..Default::default()
            },
            spec: self.spec,
            status: None,
        }
    }
}

/// A well-formed review read in one pass: envelope and request together, the objects left
/// raw. Anything else goes the careful way (`read_request_slowly`) for a precise error.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FastEnvelope<'a> {
    #[serde(borrow)]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    request: ReviewRequest<'a>,
}

/// A Service review read in one pass, its objects parsed where they stand (reading them as raw
/// JSON first and parsing them after scanned each twice). Only for a well-formed review of a
/// core Service; `None` sends any other through `read_request`, which answers it the same
/// way it answers every review.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServiceEnvelope<'a> {
    #[serde(borrow)]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    request: ServiceReview,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ServiceReview {
    #[serde(default)]
    pub(super) uid: Option<String>,
    kind: Gvk,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    pub(super) operation: String,
    #[serde(default)]
    pub(super) user_info: RawUser,
    #[serde(default)]
    object: Option<SlimService>,
    #[serde(default)]
    old_object: Option<SlimService>,
    #[serde(default)]
    pub(super) dry_run: Option<bool>,
}

impl ServiceReview {
    /// The objects, as `service` reads them.
    pub(super) fn objects(&mut self) -> (Option<Service>, Option<Service>) {
        (
            self.object.take().map(SlimService::into_service),
            self.old_object.take().map(SlimService::into_service),
        )
    }
}

/// The uid and the request of a well-formed Service review, read in one pass.
pub(super) fn read_service_review(bytes: &[u8]) -> Option<(String, ServiceReview)> {
    // The body's UTF-8 checked once, here, rather than string by string as a parse from
    // bytes does (some 300 strings a review: 15,000 instructions). A body that is not UTF-8
    // is parsed from bytes as before (which skips the check in the parts it ignores), so
    // the same bodies pass and fail.
    let env = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str::<ServiceEnvelope>(text),
        Err(_) => serde_json::from_slice::<ServiceEnvelope>(bytes),
    }
    .ok()?;
    if env.kind != "AdmissionReview"
        || env.api_version != "admission.k8s.io/v1"
        || !env.request.kind.group.is_empty()
        || env.request.kind.kind != "Service"
    {
        return None;
    }
    let uid = env.request.uid.clone().filter(|u| !u.is_empty())?;
    Some((uid, env.request))
}

/// Why a review cannot be evaluated: the request's uid when it can be read, and the message.
type Unreadable = (Option<String>, String);

/// The request and its uid, or why the review cannot be evaluated.
pub(super) fn read_request(bytes: &[u8]) -> Result<(String, ReviewRequest<'_>), Unreadable> {
    if let Ok(env) = serde_json::from_slice::<FastEnvelope>(bytes)
        && env.kind == "AdmissionReview"
        && env.api_version == "admission.k8s.io/v1"
        && let Some(uid) = env.request.uid.clone().filter(|u| !u.is_empty())
    {
        return Ok((uid, env.request));
    }
    read_request_slowly(bytes)
}

fn read_request_slowly(bytes: &[u8]) -> Result<(String, ReviewRequest<'_>), Unreadable> {
    let env: Envelope =
        serde_json::from_slice(bytes).map_err(|e| (None, format!("body is not JSON: {e}")))?;
    // The uid alone is dug out when the request does not parse, so even a broken request
    // gets an answer it can be matched to.
    let parsed = env
        .request
        .map(|r| serde_json::from_str::<ReviewRequest>(r.get()));
    let uid = match &parsed {
        Some(Ok(r)) => r.uid.clone(),
        _ => env
            .request
            .and_then(|r| serde_json::from_str::<UidOnly>(r.get()).ok())
            .and_then(|u| u.uid),
    }
    .filter(|u| !u.is_empty());
    let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or("").to_string();
    let (api_version, kind) = (text(&env.api_version), text(&env.kind));
    if kind != "AdmissionReview" || api_version != "admission.k8s.io/v1" {
        return Err((
            uid,
            format!(
                "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {api_version:?} kind {kind:?}"
            ),
        ));
    }
    if !env
        .request
        .is_some_and(|r| r.get().trim_start().starts_with('{'))
    {
        return Err((None, "AdmissionReview has no request".into()));
    }
    let Some(uid) = uid else {
        return Err((None, "AdmissionReview request has no uid".into()));
    };
    match parsed {
        Some(Ok(r)) => Ok((uid, r)),
        Some(Err(e)) => Err((Some(uid), format!("cannot read the request: {e}"))),
        None => Err((None, "AdmissionReview has no request".into())),
    }
}
