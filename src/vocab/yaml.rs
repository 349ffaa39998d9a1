//! YAML input (config, inventory, manifests) through one parser: serde-saphyr, which kube
//! already brings. Documents become JSON values first, so errors can name the field path.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// YAML 1.2 scalars, as before: `on`, `off`, `yes` and `no` stay strings (a rule action
/// `off`, an annotation value `on`), only `true`/`false` are booleans.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { strict_booleans: true, with_snippet: false }
}

/// One YAML document, deserialized; errors say where (`loadBalancers[2].kind: ...`).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let value: Value = serde_saphyr::from_str_with_options(text, options())
        .map_err(|e| one_line(&e.to_string()))?;
    from_value(value)
}

/// A JSON value into `T`, naming the path of a field that does not fit.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        if at == "." {
            e.inner().to_string()
        } else {
            format!("{at}: {}", e.inner())
        }
    })
}

/// Every document of a YAML stream, empty ones skipped. A syntax error ends the stream.
pub fn documents(text: &str) -> Vec<Result<Value, String>> {
    let mut bytes = text.as_bytes();
    let mut out = Vec::new();
    for doc in serde_saphyr::read_with_options::<_, Value>(&mut bytes, options()) {
        match doc {
            Ok(Value::Null) => {}
            Ok(v) => out.push(Ok(v)),
            Err(e) => {
                out.push(Err(one_line(&e.to_string())));
                break;
            }
        }
    }
    out
}

/// The parser's messages carry a source snippet over several lines; logs and CLI output
/// want the first line, which has the reason and the position.
fn one_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_skip_empty_ones_and_stop_at_a_syntax_error() {
        let docs = documents("a: 1\n---\n---\nb: [2\n---\nc: 3\n");
        assert_eq!(docs.len(), 2, "{docs:?}");
        assert_eq!(docs[0], Ok(serde_json::json!({"a": 1})));
        assert!(docs[1].is_err());
    }

    #[test]
    fn errors_name_the_field() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            items: Vec<u8>,
        }
        let e = from_str::<S>("items: [1, x]\n").unwrap_err();
        assert!(e.starts_with("items[1]:"), "{e}");
        assert!(!from_str::<S>("items: [1\n").unwrap_err().contains('\n'));
    }

    #[test]
    fn on_and_off_stay_strings() {
        let v: Value = from_str("a: off\nb: on\nc: true\nd: \"5\"\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "off", "b": "on", "c": true, "d": "5"})
        );
    }
}
