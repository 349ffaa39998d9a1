//! What Huawei's STS, IAM, metadata service and pod identity agent answer: the credential (in
//! any of the shapes the SDK's `StsAccessor._process_credential` reads) or an error, mapped to
//! the transport's outcomes.

use std::time::SystemTime;

use serde_json::Value;

use crate::cloud::auth::creds::Creds;
use crate::cloud::base::fact::text;
use crate::cloud::base::http::Answer;
use crate::cloud::base::outcome::{CloudError, describe};

/// An error message from the endpoint is cut here (it is shown to users and in metrics logs).
const MESSAGE_CHARS: usize = 200;
/// The gateway's "too many requests".
const THROTTLED: &[&str] = &["APIGW.0308"];
/// The gateway's "no such API": a wrong endpoint, not a refusal.
const NO_API: &str = "APIGW.0101";

/// The credential in a successful answer, and when it expires.
pub fn credential(answer: &Answer) -> Result<(Creds, SystemTime), CloudError> {
    let body = json(answer)?;
    let map = if body["credential"].is_object() {
        &body["credential"]
    } else if body["credentials"].is_object() {
        &body["credentials"]
    } else {
        &body
    };
    let field = |keys: &[&str]| Some(text(map, keys)).filter(|v| !v.is_empty());
    let (Some(access), Some(secret)) = (
        field(&["access", "accessKeyId", "access_key_id"]),
        field(&["secret", "secretAccessKey", "secret_access_key"]),
    ) else {
        return Err(not_the_service(format!(
            "HTTP {}: the answer holds no access key and secret",
            answer.status
        )));
    };
    let expiry = field(&["expires_at", "expiration"]).ok_or_else(|| {
        not_the_service(format!(
            "HTTP {}: the answer does not say when the credential expires",
            answer.status
        ))
    })?;
    let expires = expiry
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(SystemTime::from)
        .map_err(|e| {
            not_the_service(format!("the expiry \"{}\" is not a time: {e}", cut(expiry)))
        })?;
    let creds = Creds {
        access_key_id: access.to_string(),
        access_key_secret: secret.to_string(),
        security_token: field(&["securitytoken", "securityToken", "security_token"])
            .map(str::to_string),
        project_id: None,
    };
    Ok((creds, expires))
}

/// The JSON body of a successful answer, or the error it is.
pub fn json(answer: &Answer) -> Result<Value, CloudError> {
    if !(200..300).contains(&answer.status) {
        return Err(failure(answer));
    }
    serde_json::from_slice(&answer.body).map_err(|_| {
        not_the_service(format!(
            "HTTP {} with a body that is not JSON",
            answer.status
        ))
    })
}

/// An error answer: IAM's `{"error": {"code", "message", "title"}}`, the gateway's and STS's
/// `{"error_code", "error_msg"}`, or plain text (the metadata service). A bad or expired token
/// is refused with 400, 401 or 403.
pub fn failure(answer: &Answer) -> CloudError {
    let status = answer.status;
    let (code, message) = match serde_json::from_slice::<Value>(&answer.body) {
        Ok(body) => {
            let err = if body["error"].is_object() {
                &body["error"]
            } else {
                &body
            };
            // IAM's code is the HTTP status again: its title says more.
            let code = text(err, &["error_code", "title"]).to_string();
            let message = text(err, &["error_msg", "message"]).to_string();
            (code, message)
        }
        Err(_) => (String::new(), plain(&answer.body)),
    };
    let what = describe(status, &code, &cut(&message));
    match status {
        429 => CloudError::Throttled(what),
        _ if THROTTLED.contains(&code.as_str()) => CloudError::Throttled(what),
        _ if code == NO_API => not_the_service(what),
        400..=403 => CloudError::Auth(what),
        s if s >= 500 => CloudError::Server(what),
        404 if !code.is_empty() => CloudError::Other(what),
        _ => not_the_service(what),
    }
}

/// An answer that is not the identity service's (a proxy's page, a wrong path).
fn not_the_service(what: String) -> CloudError {
    CloudError::Other(format!(
        "{what}: not an answer of Huawei Cloud's identity service; check its endpoint"
    ))
}

/// A short text body as it is, or nothing (an HTML page says nothing useful).
fn plain(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = s.trim();
    if s.starts_with('<') || s.chars().any(|c| c.is_control() && c != '\n') {
        String::new()
    } else {
        s.replace('\n', " ")
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() > MESSAGE_CHARS {
        s.chars().take(MESSAGE_CHARS).collect::<String>() + "…"
    } else {
        s.to_string()
    }
}

/// The error without the tokens sent (a service may quote what it refuses).
pub fn hide(e: CloudError, sent: &[&str]) -> CloudError {
    e.map_text(|m| {
        sent.iter()
            .filter(|t| !t.is_empty())
            .fold(m.to_string(), |m, t| m.replace(t, "***"))
    })
}

/// A successful answer's header, or the error of its absence.
pub fn header(answer: &Answer, name: &str) -> Result<String, CloudError> {
    answer
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            not_the_service(format!(
                "HTTP {}: the answer has no {name} header",
                answer.status
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            content_type: "application/json".into(),
            body: body.to_string().into(),
            headers: Default::default(),
        }
    }

    #[rstest]
    #[case::iam_securitytokens(
        r#"{"credential":{"access":"A","secret":"S","securitytoken":"T","expires_at":"2030-01-02T03:04:05.000000Z"}}"#
    )]
    #[case::sts_v5(
        r#"{"credentials":{"access_key_id":"A","secret_access_key":"S","security_token":"T","expiration":"2030-01-02T03:04:05Z"}}"#
    )]
    #[case::flat_camel(
        r#"{"accessKeyId":"A","secretAccessKey":"S","securityToken":"T","expiration":"2030-01-02T03:04:05.123Z"}"#
    )]
    fn credential_shapes(#[case] body: &str) {
        let (c, expires) = credential(&answer(200, body)).unwrap();
        assert_eq!(
            (
                c.access_key_id.as_str(),
                c.access_key_secret.as_str(),
                c.security_token.as_deref()
            ),
            ("A", "S", Some("T"))
        );
        let secs = expires
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(secs, 1_893_553_445);
    }

    #[rstest]
    #[case::no_secret(
        r#"{"credential":{"access":"A","expires_at":"2030-01-02T03:04:05Z"}}"#,
        "no access key"
    )]
    #[case::no_expiry(r#"{"credential":{"access":"A","secret":"S"}}"#, "expires")]
    #[case::bad_expiry(
        r#"{"credential":{"access":"A","secret":"S","expires_at":"soon"}}"#,
        "not a time"
    )]
    #[case::not_json("<html>ok</html>", "not JSON")]
    fn a_bad_credential_is_not_the_service(#[case] body: &str, #[case] says: &str) {
        let e = credential(&answer(200, body)).unwrap_err();
        assert!(
            e.to_string()
                .contains("not an answer of Huawei Cloud's identity service"),
            "{e}"
        );
        assert!(e.to_string().contains(says), "{e}");
    }

    #[rstest]
    #[case::gateway_throttle(
        400,
        r#"{"error_code":"APIGW.0308","error_msg":"throttled"}"#,
        "throttled"
    )]
    #[case::too_many(429, r#"{"error_code":"IAM.0001","error_msg":"x"}"#, "throttled")]
    #[case::iam_bad_token(
        401,
        r#"{"error":{"code":401,"message":"The token is invalid","title":"Unauthorized"}}"#,
        "auth_error"
    )]
    #[case::sts_bad_token(
        400,
        r#"{"error_code":"STS.0102","error_msg":"invalid id_token"}"#,
        "auth_error"
    )]
    #[case::forbidden(
        403,
        r#"{"error_code":"STS.0001","error_msg":"no trust"}"#,
        "auth_error"
    )]
    #[case::server(503, r#"{"error_code":"STS.0500","error_msg":"busy"}"#, "server_error")]
    #[case::no_api(
        404,
        r#"{"error_code":"APIGW.0101","error_msg":"The API does not exist"}"#,
        "error"
    )]
    #[case::no_idp(
        404,
        r#"{"error":{"code":404,"message":"Could not find identity provider","title":"Not Found"}}"#,
        "error"
    )]
    #[case::html(502, "<html>bad gateway</html>", "server_error")]
    #[case::html_404(404, "<html>nginx</html>", "error")]
    #[case::metadata_text(401, "Please configure Cloud Service Agency first", "auth_error")]
    fn failures(#[case] status: u16, #[case] body: &str, #[case] label: &str) {
        let e = failure(&answer(status, body));
        assert_eq!(e.label(), label, "{e}");
    }

    #[test]
    fn a_quoted_token_is_hidden() {
        let e = failure(&answer(
            400,
            r#"{"error_code":"STS.0102","error_msg":"the id_token eyJ.tok.en is invalid"}"#,
        ));
        let e = hide(e, &["eyJ.tok.en", ""]);
        assert_eq!(e.to_string().matches("***").count(), 1, "{e}");
        assert!(!e.to_string().contains("eyJ.tok.en"), "{e}");
    }

    #[test]
    fn a_long_message_is_cut() {
        let long = "x".repeat(5000);
        let e = failure(&answer(
            400,
            &format!(r#"{{"error_code":"E","error_msg":"{long}"}}"#),
        ));
        assert!(e.to_string().len() < 400, "{e}");
        let e = failure(&answer(
            404,
            r#"{"error":{"code":404,"message":"Could not find identity provider","title":"Not Found"}}"#,
        ));
        assert_eq!(
            e.to_string(),
            "HTTP 404 Not Found: Could not find identity provider"
        );
        let e = failure(&answer(401, "Please configure Cloud Service Agency first"));
        assert!(e.to_string().contains("Cloud Service Agency"), "{e}");
    }
}
