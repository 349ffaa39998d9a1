//! Each provider's annotation reference as data: one YAML file per cloud under `data/`,
//! embedded in the binary and parsed once. The files say where each fact comes from.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

use super::Provider;
use crate::engine::version::KubeVersion;

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
                let allowed = self.allowed();
                if allowed.iter().any(|a| a == value) {
                    Ok(())
                } else if allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim())) {
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

    /// The values an enumeration allows (empty for other formats).
    pub fn allowed(&self) -> Vec<String> {
        match self {
            Format::Bool => vec!["true".into(), "false".into()],
            Format::OnOff => vec!["on".into(), "off".into()],
            Format::Enum(v) => v.clone(),
            _ => Vec::new(),
        }
    }

    /// What the value must be, for messages.
    pub fn expected(&self) -> String {
        match self {
            Format::String => "any text".into(),
            Format::Token => "an id or name without spaces".into(),
            Format::Bool | Format::OnOff | Format::Enum(_) => {
                let list: Vec<String> = self.allowed().iter().map(|v| format!("\"{v}\"")).collect();
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
                format!(
                    "\"{}\"",
                    self.allowed().first().cloned().unwrap_or_default()
                )
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

/// Which version an annotation's `since` is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionOf {
    /// The cloud controller's own version (`ccm.version`).
    Ccm,
    /// The cluster's version: the provider runs its controller in the managed control plane.
    Cluster,
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
}

impl Table {
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.annotations.iter().find(|e| e.name == name)
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

fn parse(p: Provider, text: &str) -> Table {
    // The files are part of the binary and tests parse every one, so a failure is a build bug.
    let table: Table = serde_saphyr::from_str(text)
        .unwrap_or_else(|e| panic!("providers/data/{p}.yaml is invalid: {e}"));
    assert_eq!(
        table.provider, p,
        "providers/data/{p}.yaml names another provider"
    );
    table
}

static CTYUN: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Ctyun, include_str!("data/ctyun.yaml")));
static ALIBABA: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Alibaba, include_str!("data/alibaba.yaml")));
static HUAWEI: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Huawei, include_str!("data/huawei.yaml")));
static VOLCENGINE: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Volcengine, include_str!("data/volcengine.yaml")));

/// The annotation table of a provider.
pub fn table(p: Provider) -> &'static Table {
    match p {
        Provider::Ctyun => &CTYUN,
        Provider::Alibaba => &ALIBABA,
        Provider::Huawei => &HUAWEI,
        Provider::Volcengine => &VOLCENGINE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::catalog;
    use rstest::rstest;

    #[test]
    fn every_table_parses_and_matches_its_catalog() {
        for p in Provider::ALL {
            let t = table(p);
            assert_eq!(t.prefix, catalog(p).prefix, "{p}");
            assert!(!t.annotations.is_empty(), "{p}");
            let mut names: Vec<&str> = t.names().collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{p}: a name is listed twice");
            for e in &t.annotations {
                assert!(
                    t.sources.contains_key(&e.source),
                    "{p} {}: source {}",
                    e.name,
                    e.source
                );
                if let Some(d) = &e.default
                    && e.rule.is_none()
                {
                    assert_eq!(e.format.check(d), Ok(()), "{p} {}: default {d}", e.name);
                }
            }
        }
    }

    #[rstest]
    #[case(Format::Token, "lb-123", true)]
    #[case(Format::Token, "", false)]
    #[case(Format::Token, "lb 123", false)]
    #[case(Format::Bool, "true", true)]
    #[case(Format::Bool, "True", false)]
    #[case(Format::OnOff, "off", true)]
    #[case(Format::OnOff, "yes", false)]
    #[case(Format::Int(vec![1, 300]), "300", true)]
    #[case(Format::Int(vec![1, 300]), "301", false)]
    #[case(Format::Int(vec![1, 300]), "0", false)]
    #[case(Format::Int(vec![1]), "99999", true)]
    #[case(Format::Int(vec![1]), "+5", false)]
    #[case(Format::Int(vec![0]), "99999999999999999999", false)]
    #[case(Format::Json, r#"{"a":1}"#, true)]
    #[case(Format::Json, "[1]", false)]
    #[case(Format::Json, "{", false)]
    #[case(Format::Tokens, "a,b", true)]
    #[case(Format::Tokens, "a,,b", false)]
    #[case(Format::KeyValues, "k=v,k2=", true)]
    #[case(Format::KeyValues, "k", false)]
    #[case(Format::String, "", true)]
    fn formats(#[case] f: Format, #[case] value: &str, #[case] ok: bool) {
        assert_eq!(f.check(value).is_ok(), ok, "{f:?} {value:?}");
        if let Some(bad) = f.counterexample() {
            assert!(f.check(&bad).is_err(), "{f:?} counterexample {bad}");
        }
        assert!(
            f.check(f.example().trim_matches(['"', '\''])).is_ok(),
            "{f:?} example"
        );
    }

    #[rstest]
    #[case(&["v1.9"], "v1.8.9", false)]
    #[case(&["v1.9"], "v1.9.0", true)]
    #[case(&["v1.9"], "v1.31.0", true)]
    #[case(&["v1.29.15-r90", "v1.30.14-r90"], "v1.29.15-r89", false)]
    #[case(&["v1.29.15-r90", "v1.30.14-r90"], "v1.30.14-r90", true)]
    #[case(&["v1.29.15-r90", "v1.30.14-r90"], "v1.28.99", false)]
    #[case(&["v1.29.15-r90", "v1.30.14-r90"], "v1.31.0", true)]
    #[case(&["v1.9.3.164-g2105d2e-aliyun"], "v1.9.3", false)]
    #[case(&["v1.9.3.164-g2105d2e-aliyun"], "v2.0.0", true)]
    fn since_minor_lines(#[case] since: &[&str], #[case] at: &str, #[case] ok: bool) {
        let e = Entry {
            name: "x".into(),
            format: Format::String,
            rule: None,
            default: None,
            since: since.iter().map(|s| s.parse().unwrap()).collect(),
            version_rule: None,
            source: "s".into(),
        };
        assert_eq!(e.supported_at(&at.parse().unwrap()), ok);
    }
}
