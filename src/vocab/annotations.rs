//! Annotation references as data: the value formats a cloud controller parses, the first
//! versions that read each annotation, and where each fact comes from.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::provider::Provider;
use super::version::{KubeVersion, VersionOf};

/// What a value must look like for the cloud controller to parse it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Format {
    /// Free text: nothing to check.
    #[default]
    String,
    /// A resource id or name: not empty, no white space.
    Token,
    /// `"true"` or `"false"`.
    Bool,
    /// `"on"` or `"off"`.
    OnOff,
    /// One of these, exact case.
    Enum(Vec<String>),
    /// A whole number in `[min, max]`; `[min]` has no upper bound.
    Int(Vec<i64>),
    /// A JSON object.
    Json,
    /// Comma-separated tokens.
    Tokens,
    /// `key=value` pairs, comma separated.
    KeyValues,
}

/// A whole number as the cloud controllers parse one (`strconv.Atoi`-like: optional minus,
/// ASCII digits, no spaces or plus sign).
pub fn parse_int(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

fn is_token(v: &str) -> bool {
    !v.is_empty() && !v.chars().any(char::is_whitespace)
}

impl Format {
    /// Why `value` does not fit, if it does not.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let fail = |why: &str| Err(why.to_string());
        match self {
            Format::String => Ok(()),
            Format::Token if value.is_empty() => fail("it is empty"),
            Format::Token if !is_token(value) => fail("it contains white space"),
            Format::Token => Ok(()),
            Format::Bool | Format::OnOff | Format::Enum(_) => {
                // On every admission: compares in place, no list is built.
                if self.values().any(|a| a == value) {
                    Ok(())
                } else if self.values().any(|a| a.eq_ignore_ascii_case(value.trim())) {
                    fail("values are case sensitive and exact")
                } else {
                    fail("it is not one of the allowed values")
                }
            }
            Format::Int(range) => match parse_int(value) {
                None => fail("it is not a whole number"),
                Some(n) if range.first().is_some_and(|min| n < *min) => {
                    fail("it is below the minimum")
                }
                Some(n) if range.get(1).is_some_and(|max| n > *max) => {
                    fail("it is above the maximum")
                }
                Some(_) => Ok(()),
            },
            Format::Json => match serde_json::from_str::<serde_json::Value>(value) {
                Ok(serde_json::Value::Object(_)) => Ok(()),
                Ok(_) => fail("it is JSON but not an object"),
                Err(e) => Err(format!("it is not valid JSON ({e})")),
            },
            Format::Tokens => {
                if value.split(',').all(|t| is_token(t.trim())) {
                    Ok(())
                } else {
                    fail("an entry is empty")
                }
            }
            Format::KeyValues => {
                let bad = value
                    .split(',')
                    .find(|kv| kv.split_once('=').is_none_or(|(k, _)| !is_token(k.trim())));
                match bad {
                    None => Ok(()),
                    Some(e) => Err(format!("entry \"{e}\" is not key=value")),
                }
            }
        }
    }

    /// The values an enumeration allows (none for other formats).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        let fixed: &[&str] = match self {
            Format::Bool => &["true", "false"],
            Format::OnOff => &["on", "off"],
            _ => &[],
        };
        let listed = match self {
            Format::Enum(v) => v.as_slice(),
            _ => &[],
        };
        fixed
            .iter()
            .copied()
            .chain(listed.iter().map(String::as_str))
    }

    /// `values` as owned strings.
    pub fn allowed(&self) -> Vec<String> {
        self.values().map(String::from).collect()
    }

    /// What the value must be, for messages.
    pub fn expected(&self) -> String {
        match self {
            Format::String => "any text".into(),
            Format::Token => "an id or name without spaces".into(),
            Format::Bool | Format::OnOff | Format::Enum(_) => {
                let list: Vec<String> = self.values().map(|v| format!("\"{v}\"")).collect();
                format!("one of {} (exact case)", list.join(", "))
            }
            Format::Int(r) => match (r.first(), r.get(1)) {
                (Some(min), Some(max)) => format!("a whole number from {min} to {max}"),
                (Some(min), None) => format!("a whole number of at least {min}"),
                _ => "a whole number".into(),
            },
            Format::Json => "a JSON object".into(),
            Format::Tokens => "ids separated by commas".into(),
            Format::KeyValues => "key=value pairs separated by commas".into(),
        }
    }

    /// A value that fits.
    pub fn example(&self) -> String {
        match self {
            Format::String | Format::Token => "\"abc-123\"".into(),
            Format::Bool | Format::OnOff | Format::Enum(_) => {
                format!("\"{}\"", self.values().next().unwrap_or_default())
            }
            Format::Int(r) => format!("\"{}\"", r.first().copied().unwrap_or(0)),
            Format::Json => "'{\"key\": \"value\"}'".into(),
            Format::Tokens => "\"id-1,id-2\"".into(),
            Format::KeyValues => "\"k1=v1,k2=v2\"".into(),
        }
    }

    /// A value the cloud controller cannot parse (`None` for free text).
    pub fn counterexample(&self) -> Option<String> {
        match self {
            Format::String => None,
            Format::Token | Format::Tokens => Some("a b".into()),
            Format::Bool | Format::OnOff | Format::Enum(_) => Some("not-a-value".into()),
            Format::Int(_) => Some("1.5".into()),
            Format::Json => Some("{not json".into()),
            Format::KeyValues => Some("novalue".into()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// The annotation key without the provider prefix.
    pub name: String,
    #[serde(default)]
    pub format: Format,
    /// The rule that checks the format, when it is not `annotation-value-format`.
    pub rule: Option<String>,
    pub default: Option<String>,
    /// First versions that read the annotation, at most one per minor line.
    #[serde(default, deserialize_with = "versions")]
    pub since: Vec<KubeVersion>,
    /// The rule that gates the version, when it is not `annotation-ccm-version`.
    pub version_rule: Option<String>,
    /// A key of the table's `sources`.
    pub source: String,
}

fn versions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<KubeVersion>, D::Error> {
    let raw = Vec::<String>::deserialize(d)?;
    raw.iter()
        .map(|v| v.parse().map_err(serde::de::Error::custom))
        .collect()
}

impl Entry {
    /// Whether a controller (or cluster) at `v` reads this annotation. Each `since` is the
    /// first release of its minor line; a minor line newer than all of them has it.
    pub fn supported_at(&self, v: &KubeVersion) -> bool {
        if self.since.is_empty() {
            return true;
        }
        match self
            .since
            .iter()
            .find(|s| s.major == v.major && s.minor == v.minor)
        {
            Some(first) => v >= first,
            None => self.since.iter().all(|s| v > s),
        }
    }

    /// `since` as people write it: "v1.9.3" or "v1.29.15-r90, v1.30.14-r90 or a newer minor".
    pub fn since_text(&self) -> String {
        let list: Vec<String> = self.since.iter().map(ToString::to_string).collect();
        match list.len() {
            0 => String::new(),
            1 => list[0].clone(),
            _ => format!("{} or a newer minor", list.join(", ")),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Table {
    pub provider: Provider,
    pub prefix: String,
    /// When the references were read.
    pub taken: String,
    pub version_of: VersionOf,
    pub sources: BTreeMap<String, String>,
    pub annotations: Vec<Entry>,
    /// Name to position in `annotations`, built by `indexed`.
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl Table {
    /// Builds the name index; call once after deserializing.
    pub fn indexed(mut self) -> Self {
        self.index = (self.annotations.iter().enumerate())
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        self
    }

    /// Looked up on every admission, for every provider annotation.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|i| &self.annotations[*i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.annotations.iter().map(|e| e.name.as_str())
    }

    /// Where an entry's facts come from (the URL or document the source key names).
    pub fn source_of<'a>(&'a self, e: &'a Entry) -> &'a str {
        self.sources
            .get(&e.source)
            .map_or(&e.source, String::as_str)
    }
}
