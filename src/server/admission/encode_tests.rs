//! `review_response` writes what `encode_review`'s `Value` gives, byte for byte.

use super::super::answer::{allowed, refuse};
use super::{encode_review, review_response};
use kube::core::admission::AdmissionResponse;

async fn both(response: AdmissionResponse) -> (String, String) {
    let want = serde_json::to_string(&encode_review(response.clone())).unwrap();
    let r = review_response(response);
    assert_eq!(r.headers()["content-type"], "application/json");
    let got = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    (String::from_utf8(got.to_vec()).unwrap(), want)
}

fn denied() -> AdmissionResponse {
    let mut r = allowed("uid-\"1\"\n\u{e9}".into()).deny("[a] no; [b] \"quoted\"\tand\\ more");
    r.result.code = 403;
    r.result.reason = "Forbidden".into();
    for (k, v) in [("denied-by", "a,b"), ("exempt", "x"), ("default-0", "k=v")] {
        r.audit_annotations.insert(k.into(), v.into());
    }
    r.warnings = Some(vec!["[c] a warning".into(), "lbguard: note \u{1}".into()]);
    r
}

#[tokio::test]
async fn plain_answers_match_the_value_encoding() {
    let refused = refuse(Some("u-2"), "cannot read the request".into())
        .ok()
        .unwrap()
        .response;
    let mut no_warnings = allowed("u-3".into());
    no_warnings.warnings = Some(vec![]);
    for response in [allowed("u-1".into()), denied(), refused, no_warnings] {
        let (got, want) = both(response).await;
        assert_eq!(got, want);
    }
}

#[tokio::test]
async fn a_patch_still_goes_the_value_way() {
    let patch: json_patch::Patch =
        serde_json::from_str(r#"[{"op":"add","path":"/metadata/annotations/a","value":"b"}]"#)
            .unwrap();
    let response = allowed("u-4".into()).with_patch(patch).unwrap();
    let (got, want) = both(response).await;
    assert_eq!(got, want);
    assert!(got.contains("\"patchType\":\"JSONPatch\""), "{got}");
}

mod any {
    use super::super::{encode_review, plain_review};
    use super::allowed;
    use kube::core::response::StatusSummary;
    use proptest::prelude::*;

    proptest! {
        // Any text, any code, summary, annotations and warnings: the same bytes as the
        // `Value` way.
        #[test]
        fn plain_answers_match_the_value_encoding(
            uid in any::<String>(),
            is_allowed in any::<bool>(),
            code in any::<u16>(),
            message in any::<String>(),
            reason in "[ -~\\n\"\\\\é]{0,12}",
            summary in proptest::option::of(any::<bool>()),
            annotations in proptest::collection::hash_map(any::<String>(), any::<String>(), 0..4),
            warnings in proptest::option::of(proptest::collection::vec(any::<String>(), 0..3)),
        ) {
            let mut r = allowed(uid);
            r.allowed = is_allowed;
            r.result.code = code;
            r.result.message = message;
            r.result.reason = reason;
            r.result.status = summary.map(|s| if s { StatusSummary::Success } else { StatusSummary::Failure });
            r.audit_annotations = annotations;
            r.warnings = warnings;
            let want = serde_json::to_string(&encode_review(r.clone())).unwrap();
            prop_assert_eq!(plain_review(&r), want);
        }
    }
}
