//! What `kubectl apply -f -` (client-side) stores of an exported object: the whole object,
//! as JSON, in its `kubectl.kubernetes.io/last-applied-configuration` annotation, and the API
//! server refuses an object whose annotations total more than 256 KiB. kubectl writes that
//! JSON with Go's encoder, which escapes `&`, `<` and `>` (`\u0026`): every `&&` of a CEL
//! expression costs 12 bytes there.

use serde_json::Value;

/// The annotation client-side apply writes.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The API server's limit on all of an object's annotations together (keys and values).
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The annotation's value as kubectl writes it for `obj` (the object without the annotation,
/// compact JSON, HTML characters escaped and a newline at the end, as Go's encoder writes).
pub fn last_applied(obj: &Value) -> String {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        let left = m
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
            .map(|a| {
                a.remove(LAST_APPLIED);
                a.len()
            });
        // kubectl's copy is of the object as given: without annotations if it had none.
        if left == Some(0) {
            m.remove("annotations");
        }
    }
    // `&`, `<` and `>` appear only inside JSON strings: replacing them is exact.
    serde_json::to_string(&o)
        .unwrap_or_default()
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        + "\n"
}

/// The size of `obj`'s annotations once `kubectl apply` added its copy: what the API server
/// compares with `ANNOTATIONS_LIMIT`.
pub fn annotations_size(obj: &Value) -> usize {
    let own: usize = obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, _)| *k != LAST_APPLIED)
                .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                .sum()
        })
        .unwrap_or(0);
    own + LAST_APPLIED.len() + last_applied(obj).len()
}

/// `obj` as `kubectl apply` sends it: with the annotation.
pub fn as_applied(obj: &Value) -> Value {
    let mut o = obj.clone();
    let copy = last_applied(obj);
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        let a = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(a) = a.as_object_mut() {
            a.insert(LAST_APPLIED.into(), Value::String(copy));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_copy_is_the_object_as_go_encodes_it() {
        let o = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"expression": "a && b < c"}});
        let copy = last_applied(&o);
        assert_eq!(
            copy,
            "{\"apiVersion\":\"v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"expression\":\"a \\u0026\\u0026 b \\u003c c\"}}\n"
        );
        let applied = as_applied(&o);
        assert_eq!(applied["metadata"]["annotations"][LAST_APPLIED], copy);
        // Applying again writes the same copy: the annotation is not copied into itself.
        assert_eq!(last_applied(&applied), copy);
        assert_eq!(annotations_size(&o), LAST_APPLIED.len() + copy.len());
        assert_eq!(annotations_size(&applied), annotations_size(&o));
    }
}
