//! Rows whose parameter is a field of an annotation's JSON (`field`): the objects read (one,
//! or with `entries` each entry of an array), the field's JSON type, and the messages.

use serde_json::{Map, Value};

use super::model::Param;
use crate::vocab::annotations::parse_int;

/// What a message says about the call, built by `check` for the row.
pub struct Words<'w> {
    pub controller: &'w str,
    pub calls: &'w str,
    pub ports: &'w str,
    pub refuser: &'w str,
    pub source: &'w str,
    /// The row's conditions on fields of the same object (` with "type": "public"`).
    pub given: &'w str,
}

impl Words<'_> {
    /// How the controller sends the field and who refuses it `how` (" without it", or ""),
    /// with the source: the part the missing-field and wrong-field messages share.
    fn sent_as(&self, param: &Param, how: &str) -> String {
        format!(
            "the {} controller sends it as {} of {}{}, which {} refuses{how} ({})",
            self.controller, param.name, self.calls, self.ports, self.refuser, self.source
        )
    }
}

/// A field of the JSON object an annotation holds (`None`: not an object, or the field is
/// absent or JSON `null`).
pub fn json_field(value: &str, field: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(value) {
        Ok(Value::Object(mut o)) => o.remove(field).filter(|v| !v.is_null()),
        _ => None,
    }
}

/// The objects a row reads in an annotation's JSON, each with the words that place it in a
/// message: the object itself, or with `entries` each object of an array ("entry 2: "; one
/// object is a one-entry array). A value that is neither is read by no row.
fn objects(param: &Param, value: &str) -> Vec<(String, Map<String, Value>)> {
    match serde_json::from_str::<Value>(value) {
        Ok(Value::Object(o)) if param.entries => vec![("entry 1: ".into(), o)],
        Ok(Value::Object(o)) => vec![(String::new(), o)],
        Ok(Value::Array(a)) if param.entries => a
            .into_iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Value::Object(o) => Some((format!("entry {}: ", i + 1), o)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The findings of a `field` row on annotation `key` holding `value`.
pub fn problems(param: &Param, key: &str, value: &str, w: &Words) -> Vec<String> {
    let Some(field) = &param.field else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (at, o) in objects(param, value) {
        match o.get(field).filter(|v| !v.is_null()) {
            None if param.required => out.push(format!(
                "{key}: {at}\"{field}\" is required{} ({}): {}; add it, e.g. \"{field}\": {}",
                w.given,
                limit(param),
                w.sent_as(param, " without it"),
                example_json(param)
            )),
            None => {}
            Some(v) => {
                let Some(mut why) = field_error(param, v) else {
                    continue;
                };
                // A length or type error alone does not say which characters.
                if let Some(d) = param
                    .describe
                    .as_ref()
                    .filter(|d| !why.contains(d.as_str()))
                {
                    why = format!("{why}; allowed: {d}");
                }
                out.push(format!(
                    "{key}: {at}\"{field}\" is {v}: {why}; {}; write e.g. \"{field}\": {}",
                    w.sent_as(param, ""),
                    example_json(param)
                ));
            }
        }
    }
    out
}

/// The row's limit in words, for a field that is missing.
fn limit(param: &Param) -> String {
    match param.range {
        Some((min, max)) => format!("a whole number from {min} to {max}"),
        None => param.allowed(),
    }
}

/// The row's example as the JSON of its field: a number for `range`, a list for `array`.
fn example_json(param: &Param) -> String {
    if param.range.is_some() && parse_int(&param.example).is_some() {
        param.example.clone()
    } else if param.array {
        serde_json::json!([param.example]).to_string()
    } else {
        Value::String(param.example.clone()).to_string()
    }
}

/// Why a JSON field's value is refused: its type, then the row's limits on its items. A
/// number row takes a JSON whole number or a string of digits (CCE's examples write
/// `"delay":"5"`; with `jsonNumber` only the number); the others a JSON string, or with
/// `array` a list of strings.
fn field_error(param: &Param, v: &Value) -> Option<String> {
    let items: Vec<String> = match v {
        Value::String(_) if param.range.is_some() && param.json_number => {
            return Some("a string, not a JSON number".into());
        }
        Value::String(s) if param.range.is_some() => match parse_int(s) {
            Some(n) => vec![n.to_string()],
            None => return Some("not a whole number".into()),
        },
        Value::Number(n) if param.range.is_some() => match n.as_i64() {
            Some(n) => vec![n.to_string()],
            None => return Some("not a whole number".into()),
        },
        _ if param.range.is_some() => return Some("not a whole number".into()),
        Value::Array(a) if param.array => {
            let strings: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            match strings {
                Some(s) => s,
                None => return Some("an entry is not a string".into()),
            }
        }
        _ if param.array => return Some("not a list of strings".into()),
        Value::String(s) => vec![s.clone()],
        _ => return Some("not a string".into()),
    };
    if let Some((min, max)) = param.count
        && (items.len() < min || items.len() > max)
    {
        return Some(format!(
            "{} entries, {} takes {min} to {max}",
            items.len(),
            param.by()
        ));
    }
    let list = param.array;
    items.iter().find_map(|i| {
        param
            .item_error(i)
            .map(|e| if list { format!("entry {e}") } else { e })
    })
}
