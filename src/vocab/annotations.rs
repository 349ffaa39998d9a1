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
    /// A whole number as Go's `strconv.Atoi` reads it (a sign allowed, no spaces), in
    /// `[min, max]`.
    Atoi(Vec<i64>),
    /// As `Atoi`, then kept as a Go `int32(...)`: the range holds the 32-bit number the
    /// controller sends (`"4294967306"` is sent as 10).
    Atoi32(Vec<i64>),
    /// One of these, in any case (the controller compares with Go's `strings.EqualFold`).
    EnumFold(Vec<String>),
    /// A JSON object.
    Json,
    /// A JSON object, or an array of objects (one per port).
    JsonObjects,
    /// Comma-separated tokens.
    Tokens,
    /// Comma-separated ids, at most `max` of them; with `empty`, the empty value passes
    /// too (where the reference gives it a meaning).
    Ids {
        max: usize,
        #[serde(default)]
        empty: bool,
    },
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

fn in_range(n: i64, range: &[i64]) -> Result<(), String> {
    match (range.first(), range.get(1)) {
        (Some(min), _) if n < *min => Err("it is below the minimum".into()),
        (_, Some(max)) if n > *max => Err("it is above the maximum".into()),
        _ => Ok(()),
    }
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
                Some(n) => in_range(n, range),
            },
            Format::Atoi(range) => match super::go::atoi(value) {
                Err(e) => Err(format!(
                    "it is not a whole number as the controller's Go parser reads it ({e})"
                )),
                Ok(n) => in_range(n, range),
            },
            Format::Atoi32(range) => match super::go::atoi(value) {
                Err(e) => Err(format!(
                    "it is not a whole number as the controller's Go parser reads it ({e})"
                )),
                Ok(n) if i64::from(n as i32) == n => in_range(n, range),
                Ok(n) => in_range(i64::from(n as i32), range).map_err(|why| {
                    format!(
                        "the controller keeps it as a 32-bit number (Go int32) and sends {}: {}",
                        n as i32,
                        why.trim_start_matches("it is ")
                    )
                }),
            },
            Format::EnumFold(_) => {
                if self.values().any(|a| a.eq_ignore_ascii_case(value)) {
                    Ok(())
                } else {
                    fail("it is not one of the allowed values")
                }
            }
            Format::Json => match serde_json::from_str::<serde_json::Value>(value) {
                Ok(serde_json::Value::Object(_)) => Ok(()),
                Ok(_) => fail("it is JSON but not an object"),
                Err(e) => Err(format!("it is not valid JSON ({e})")),
            },
            Format::JsonObjects => match serde_json::from_str::<serde_json::Value>(value) {
                Ok(serde_json::Value::Object(_)) => Ok(()),
                Ok(serde_json::Value::Array(a)) if a.iter().all(|e| e.is_object()) => Ok(()),
                Ok(_) => fail("it is JSON but neither an object nor an array of objects"),
                Err(e) => Err(format!("it is not valid JSON ({e})")),
            },
            Format::Tokens => {
                if value.split(',').all(|t| is_token(t.trim())) {
                    Ok(())
                } else {
                    fail("an entry is empty")
                }
            }
            Format::Ids { empty: true, .. } if value.is_empty() => Ok(()),
            Format::Ids { max, .. } => {
                let n = value.split(',').count();
                if !value.split(',').all(|t| is_token(t.trim())) {
                    fail("an entry is empty or contains white space")
                } else if n > *max {
                    Err(format!("it lists {n} ids, more than {max}"))
                } else {
                    Ok(())
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
            Format::Enum(v) | Format::EnumFold(v) => v.as_slice(),
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
            Format::EnumFold(_) => {
                let list: Vec<String> = self.values().map(|v| format!("\"{v}\"")).collect();
                format!("one of {} (any case)", list.join(", "))
            }
            Format::Int(r) | Format::Atoi(r) | Format::Atoi32(r) => match (r.first(), r.get(1)) {
                (Some(min), Some(max)) => format!("a whole number from {min} to {max}"),
                (Some(min), None) => format!("a whole number of at least {min}"),
                _ => "a whole number".into(),
            },
            Format::Json => "a JSON object".into(),
            Format::JsonObjects => "a JSON object, or an array of objects".into(),
            Format::Tokens => "ids separated by commas".into(),
            Format::Ids { max, empty } => format!(
                "at most {max} ids separated by commas{}",
                if *empty { ", or empty" } else { "" }
            ),
            Format::KeyValues => "key=value pairs separated by commas".into(),
        }
    }

    /// A value that fits.
    pub fn example(&self) -> String {
        match self {
            Format::String | Format::Token => "\"abc-123\"".into(),
            Format::Bool | Format::OnOff | Format::Enum(_) | Format::EnumFold(_) => {
                format!("\"{}\"", self.values().next().unwrap_or_default())
            }
            Format::Int(r) | Format::Atoi(r) | Format::Atoi32(r) => {
                format!("\"{}\"", r.first().copied().unwrap_or(0))
            }
            Format::Json => "'{\"key\": \"value\"}'".into(),
            Format::JsonObjects => "'[{\"key\": \"value\"}]'".into(),
            Format::Tokens => "\"id-1,id-2\"".into(),
            Format::Ids { max: 0..=1, .. } => "\"id-1\"".into(),
            Format::Ids { .. } => "\"id-1,id-2\"".into(),
            Format::KeyValues => "\"k1=v1,k2=v2\"".into(),
        }
    }

    /// A value the cloud controller cannot parse (`None` for free text).
    pub fn counterexample(&self) -> Option<String> {
        match self {
            Format::String => None,
            Format::Token | Format::Tokens | Format::Ids { .. } => Some("a b".into()),
            Format::Bool | Format::OnOff | Format::Enum(_) | Format::EnumFold(_) => {
                Some("not-a-value".into())
            }
            Format::Int(_) | Format::Atoi(_) | Format::Atoi32(_) => Some("1.5".into()),
            Format::Json | Format::JsonObjects => Some("{not json".into()),
            Format::KeyValues => Some("novalue".into()),
        }
    }
}

/// White space as Rust's `char::is_whitespace` (Unicode White_Space) sees it, spelled out
/// because RE2's `\s` (Kubernetes' regex engine) is ASCII only.
const WHITE_SPACE: &str = r"[\s\v\x{85}\p{Z}]";

impl Format {
    /// CEL that is true when `v` (a CEL string) has the format; `None` when CEL cannot tell.
    pub fn cel(&self, v: &str) -> Option<String> {
        let f = self;
        let token = |t: &str| {
            format!(
                "({t} != '' && !{t}.matches({}))",
                super::cel::lit(WHITE_SPACE)
            )
        };
        Some(match f {
            Format::String => "true".into(),
            Format::Token => token(v),
            Format::Bool | Format::OnOff | Format::Enum(_) => {
                let values: Vec<&str> = f.values().collect();
                format!("{v} in {}", super::cel::list(&values))
            }
            Format::EnumFold(_) => {
                let values: Vec<String> = f.values().map(|v| v.to_ascii_lowercase()).collect();
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                format!("{v}.lowerAscii() in {}", super::cel::list(&values))
            }
            Format::Int(range) | Format::Atoi(range) | Format::Atoi32(range) => {
                // Int: at most 18 digits (parse_int); Atoi and Atoi32: Go's int64 range.
                let number = if matches!(f, Format::Int(_)) {
                    format!("{v}.matches({})", super::cel::lit("^-?[0-9]{1,18}$"))
                } else {
                    super::cel::atoi_number(v)
                };
                let n = if matches!(f, Format::Atoi32(_)) {
                    super::cel::int32(&format!("int({v})"))
                } else {
                    format!("int({v})")
                };
                let mut out = number;
                if let Some(min) = range.first() {
                    out.push_str(&format!(" && {n} >= {min}"));
                }
                if let Some(max) = range.get(1) {
                    out.push_str(&format!(" && {n} <= {max}"));
                }
                out
            }
            Format::Tokens => format!("{v}.split(',').all(t, {})", token("t.trim()")),
            Format::Ids { max, empty } => format!(
                "{}({v}.split(',').size() <= {max} && {v}.split(',').all(t, {}))",
                if *empty {
                    format!("{v} == '' || ")
                } else {
                    String::new()
                },
                token("t.trim()")
            ),
            Format::KeyValues => format!(
                "{v}.split(',').all(kv, kv.indexOf('=') >= 0 && {})",
                token("kv.substring(0, kv.indexOf('=')).trim()")
            ),
            Format::Json | Format::JsonObjects => return None,
        })
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
    /// A key of the table's `sources`: where the name (and its version) comes from.
    pub source: String,
    /// A key of the table's `sources`: where the format's range or values come from.
    pub range: Option<String>,
    /// The format ACK's NLB controller reads, when it differs (`string`: it does not read it).
    pub nlb_format: Option<Format>,
    /// The error the controller gives for a value it cannot parse: `{value}` is the value,
    /// `{err}` Go's error; `None` when it gives none (it ignores the value, or the cloud's
    /// API refuses it).
    pub error: Option<String>,
    /// The same for the NLB controller.
    pub nlb_error: Option<String>,
    /// Where the controller reads it: paths and lines under the table's `codeBase`.
    #[serde(default)]
    pub code: Vec<String>,
    /// ACK CLB: the listener protocols (lower case) whose API calls the controller puts the
    /// value in; empty: every listener's, or not a listener parameter.
    #[serde(default)]
    pub clb_protocols: Vec<String>,
    /// Where sources disagree: which one lbguard follows, and why.
    pub reading: Option<String>,
    /// A documented name that nothing reads: the name the controller reads instead.
    pub instead: Option<String>,
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
    /// The public controller's code at a pinned commit (`repo@commit:dir/`), which the
    /// entries' `code` lines are under.
    pub code_base: Option<String>,
    pub sources: BTreeMap<String, String>,
    pub annotations: Vec<Entry>,
    /// Name to position in `annotations`, built by `indexed`.
    #[serde(skip)]
    index: HashMap<String, usize>,
    /// Each entry's `letters` and `letter_counts` of its name, built by `indexed`.
    #[serde(skip)]
    letters: Vec<(u64, [u8; 64])>,
}

/// The set of characters in `s`, ASCII letters lower-cased, as bits: a-z, 0-9, `-`, `.`,
/// `/`, `_` each their own, every other character one more. Two strings are at least as many edits
/// apart as either has characters (bits) the other lacks, whatever their order.
pub fn letters(s: &str) -> u64 {
    s.chars().fold(0, |set, c| set | 1 << letter(c))
}

/// A character's bit in `letters`.
pub fn letter(c: char) -> u32 {
    match c.to_ascii_lowercase() {
        c @ 'a'..='z' => c as u32 - 'a' as u32,
        c @ '0'..='9' => 26 + c as u32 - '0' as u32,
        '-' => 36,
        '.' => 37,
        '/' => 38,
        '_' => 39,
        _ => 63,
    }
}

/// How many characters of each `letter` class `s` has (at most 255 counted).
pub fn letter_counts(s: &str) -> [u8; 64] {
    let mut counts = [0u8; 64];
    for c in s.chars() {
        let i = letter(c) as usize;
        counts[i] = counts[i].saturating_add(1);
    }
    counts
}

/// The fewest edits between two strings with these `letters`.
pub fn fewest_edits(a: u64, b: u64) -> u32 {
    (a & !b).count_ones().max((b & !a).count_ones())
}

impl Table {
    /// Builds the name index; call once after deserializing.
    pub fn indexed(mut self) -> Self {
        self.index = (self.annotations.iter().enumerate())
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        self.letters = (self.annotations.iter())
            .map(|e| (letters(&e.name), letter_counts(&e.name)))
            .collect();
        self
    }

    /// The entries with the `letters` and `letter_counts` of their names
    /// (`unknown-annotation`'s suggestion passes over the names too many edits away without
    /// comparing them).
    pub fn with_letters(&self) -> impl Iterator<Item = (&Entry, u64, &[u8; 64])> {
        (self.annotations.iter())
            .zip(&self.letters)
            .map(|(e, (bits, counts))| (e, *bits, counts))
    }

    /// An entry's position in `annotations`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Looked up on every admission, for every provider annotation.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|i| &self.annotations[*i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.annotations.iter().map(|e| e.name.as_str())
    }

    /// Every source of an entry, for `lbguard rules --sources`: the name's, the range's, the
    /// controller's code lines and the reading where they disagree.
    pub fn provenance(&self, e: &Entry) -> Vec<String> {
        let mut out = vec![self.source_of(e).to_string()];
        if let Some(r) = &e.range {
            let r = self.sources.get(r).map_or(r.as_str(), String::as_str);
            if !out.iter().any(|o| o == r) {
                out.push(r.to_string());
            }
        }
        for c in &e.code {
            out.push(format!(
                "{}{c}",
                self.code_base.as_deref().unwrap_or_default()
            ));
        }
        if let Some(r) = &e.reading {
            out.push(format!("reading: {r}"));
        }
        out
    }

    /// The format the given controller reads.
    pub fn format_for(e: &Entry, nlb: bool) -> &Format {
        match (&e.nlb_format, nlb) {
            (Some(f), true) => f,
            _ => &e.format,
        }
    }

    /// Where an entry's facts come from (the URL or document the source key names).
    pub fn source_of<'a>(&'a self, e: &'a Entry) -> &'a str {
        self.sources
            .get(&e.source)
            .map_or(&e.source, String::as_str)
    }
}
