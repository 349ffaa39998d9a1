//! The rows of `data/<provider>-api.yaml`: what they say, and reading them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use crate::vocab::provider::Provider;

/// One cloud's rows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApiTable {
    pub provider: Provider,
    /// When the sources were read.
    pub taken: String,
    /// The controller commit that `code` lines are under.
    pub code_base: Option<String>,
    /// Source key -> the API reference page, SDK model or controller file.
    pub sources: BTreeMap<String, Source>,
    /// A value of only white space reads as unset in `when`, `required` and `together`
    /// (Volcengine: its controller's docs say an empty value is unset).
    #[serde(default)]
    pub blank_unset: bool,
    /// The Service is the NLB side's when this annotation starts with this prefix (Volcengine:
    /// an `nlb-` id); ACK's side is the controller that takes the Service.
    pub nlb_when: Option<Prefix>,
    /// How the controller gives each Service port its listener protocol.
    #[serde(default)]
    pub listeners: Reading,
    pub calls: Vec<Call>,
}

/// One entry of a table's `sources`: its whole text (the pages, tables, API calls and SDK
/// models, with their lines), or `{title, text}` when the text is too long for a message:
/// messages then cite the title, and the data keeps the text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Source {
    Text(String),
    Titled(Titled),
}

/// A source with a short title for messages.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Titled {
    pub title: String,
    pub text: String,
}

impl Source {
    /// What messages cite: the title, or the text when it has none.
    pub fn title(&self) -> &str {
        match self {
            Source::Text(t) => t,
            Source::Titled(t) => &t.title,
        }
    }
}

/// A controller's reading of a Service's listeners (see `check::listeners`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reading {
    /// ACK's `protocol-port`: the first `proto:port` entry naming the port.
    #[default]
    ProtocolPort,
    /// CCE's `elb.protocol-port` (`huawei::listener_protocols`).
    Cce,
}

/// An annotation that starts with `prefix`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Prefix {
    pub annotation: String,
    pub prefix: String,
}

impl ApiTable {
    /// The value reads as unset (absent is passed as "").
    pub fn unset(&self, value: &str) -> bool {
        if self.blank_unset {
            value.trim().is_empty()
        } else {
            value.is_empty()
        }
    }
}

/// Which of a provider's controllers makes a call (ACK: CLB or NLB; Volcengine: a CLB, or the
/// NLB an `nlb-` id names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Clb,
    Nlb,
}

/// One API operation the controller makes, and the parameters it fills from annotations.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Call {
    pub call: String,
    /// Other operations that send the same parameters (the update of what `call` creates).
    #[serde(default)]
    pub also: Vec<String>,
    pub source: String,
    pub controller: Option<Side>,
    /// Made once per listener of these protocols (lower case); absent: once per Service.
    pub protocols: Option<Vec<String>>,
    /// Made only when all of these hold.
    #[serde(default)]
    pub when: Vec<Cond>,
    #[serde(default)]
    pub code: Vec<String>,
    #[serde(default)]
    pub params: Vec<Param>,
    #[serde(default)]
    pub together: Vec<Together>,
}

/// A condition on an annotation: present (not empty) and, with `in`, one of these values.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cond {
    pub annotation: String,
    /// The annotation is a JSON object and the condition is on this string field of it.
    pub field: Option<String>,
    #[serde(default, rename = "in")]
    pub one_of: Vec<String>,
    /// Compare `in` and `notIn` in any case (the controller's `strings.EqualFold`).
    #[serde(default)]
    pub fold: bool,
    /// Holds when the annotation is absent, empty or none of these.
    #[serde(default)]
    pub not_in: Vec<String>,
    /// `false`: the annotation is absent or empty.
    pub present: Option<bool>,
    /// `true`: the annotation is on the Service, even empty; `false`: it is not (unlike
    /// `present: false`, an empty value counts as there).
    pub exists: Option<bool>,
    /// The annotation is a `proto:port` list (CCE's `elb.protocol-port`) and one of its
    /// entries names one of these protocols (exact case, as written, trimmed), whether or not
    /// a Service port has it.
    #[serde(default)]
    pub entry: Vec<String>,
    /// With `entry`: that entry's port is this number (as `protocol_entries` reads it).
    pub port: Option<i32>,
    /// The value is read trimmed: one of only white space reads as unset.
    #[serde(default)]
    pub trim: bool,
}

impl Cond {
    /// An `entry` condition in words: "an http or https entry on port 21".
    pub fn entry_words(&self) -> String {
        let on = self.port.map_or(String::new(), |p| format!(" on port {p}"));
        format!("an {} entry{on}", self.entry.join(" or "))
    }
}

/// One parameter, the annotation it comes from and the API's limits on it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Param {
    pub name: String,
    pub from: String,
    /// The annotation is a JSON object and the parameter is this field of it: a string (a
    /// number too with `range`; a list of strings with `array`), JSON `null` reads as absent.
    pub field: Option<String>,
    /// With `field`: the field is a JSON array of strings, each an item.
    #[serde(default)]
    pub array: bool,
    /// With `field`: the annotation is a JSON array of objects (one object reads as a
    /// one-entry array), and the field is read in each.
    #[serde(default)]
    pub entries: bool,
    /// The rule whose findings the row's value limits are (absent: the provider's value rule).
    pub rule: Option<String>,
    /// Who sets the limit, in messages (absent: "the API"; "CCE" where CCE's own table is
    /// narrower than the API and the row follows it).
    pub by: Option<String>,
    #[serde(default)]
    pub code: Vec<String>,
    /// Overrides the call's source.
    pub source: Option<String>,
    /// Narrows the call's protocols for this row.
    pub protocols: Option<Vec<String>>,
    #[serde(default)]
    pub when: Vec<Cond>,
    /// Besides `when`: one of these lists holds (all of its conditions), an either-or.
    #[serde(default)]
    pub when_any: Vec<Vec<Cond>>,
    /// The API takes no value here: any whole number (`-?[0-9]{1,18}`) is refused (once the
    /// annotation table's own format takes it, as every row); the string says why and what to do.
    pub none: Option<String>,
    /// The value is a list split on this (by the controller or by the API's own syntax).
    pub split: Option<String>,
    #[serde(default)]
    pub trim: bool,
    /// With `split`: each item is this part of it (`[":", 0]`: the zone of `zone:vsw`).
    pub part: Option<(String, usize)>,
    /// With `part`: the controller skips an entry with nothing before the first separator (a
    /// tag without a key), so it is not checked.
    #[serde(default)]
    pub skip_empty_key: bool,
    /// The API needs it: with the call made and the annotation absent, it is refused
    /// (`dependent-annotations`); with `field`: the object lacks the field (the row's rule).
    #[serde(default)]
    pub required: bool,
    /// With `required`: the annotation that, set instead, keeps the controller from making
    /// the call (the other fix a message offers).
    pub instead: Option<String>,
    /// Characters, inclusive.
    pub length: Option<(usize, usize)>,
    /// Matched against the whole value (anchored).
    pub pattern: Option<String>,
    /// The pattern in words.
    pub describe: Option<String>,
    #[serde(default)]
    pub not: Vec<String>,
    /// Refused when the item starts with one of these (reserved prefixes).
    #[serde(default)]
    pub not_prefix: Vec<String>,
    /// Refused when the item contains one of these.
    #[serde(default)]
    pub not_contains: Vec<String>,
    #[serde(rename = "enum")]
    pub values: Option<Vec<String>>,
    #[serde(default)]
    pub fold: bool,
    /// A whole number as Go's strconv.Atoi reads it, inclusive.
    pub range: Option<(i64, i64)>,
    /// With `field` and `range`: only a JSON number, not a string of digits (a field CCE's
    /// tables type as Integer and every example writes as a number).
    #[serde(default)]
    pub json_number: bool,
    /// Numbers allowed outside `range`.
    #[serde(default, rename = "also")]
    pub also_numbers: Vec<i64>,
    /// The controller sends nothing for a value that reads as 0 (`if v != 0`): still refused
    /// as a typo, and the message says so instead of naming the API.
    #[serde(default)]
    pub zero_unsent: bool,
    /// The controller keeps the number as a Go `int32(...)`: `range` holds the 32-bit number
    /// it sends (`"4294967306"` is sent as 10).
    #[serde(default)]
    pub int32: bool,
    /// With `split`: how many items.
    pub count: Option<(usize, usize)>,
    #[serde(default)]
    pub distinct: bool,
    /// With `split`: the most items named once, those in `onceNot` aside, that the API takes
    /// (tags the controller keeps one per key: the items named once are a lower bound of what
    /// it sends, which the exported policy can count as the webhook does).
    pub once_max: Option<usize>,
    /// With `onceMax`: items not counted (the controller's own tags, counted in `onceMax`).
    #[serde(default)]
    pub once_not: Vec<String>,
    /// A value that passes.
    pub example: String,
    /// Where sources disagree: which one this row follows and why.
    pub reading: Option<String>,
    #[serde(skip)]
    regex: Option<Regex>,
}

/// Annotations that must go with another one's value in the same call, or must not.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Together {
    #[serde(rename = "if")]
    pub when: Cond,
    /// Annotations that must be present (not empty), or conditions that must hold (an
    /// `entry` of `elb.protocol-port`, a `trim`med value).
    #[serde(default)]
    pub need: Vec<Need>,
    /// Conditions that must not hold with `if` (the controller takes one or the other): one
    /// finding on `if`'s annotation per condition that holds. Messages quote a value only
    /// where the condition names values (`in`), so the update ratchet keeps a finding however
    /// the other values change.
    #[serde(default)]
    pub excludes: Vec<Cond>,
    /// One of `need` suffices (a finding when none is set).
    #[serde(default)]
    pub any: bool,
    /// Who refuses the call without them, in messages (absent: the cloud's API).
    pub by: Option<String>,
    /// With `excludes`: what to do, in messages (absent: remove one of them, or give the
    /// other another value).
    pub fix: Option<String>,
    /// The parameters they become, for the message.
    pub params: String,
    pub source: Option<String>,
    #[serde(default)]
    pub code: Vec<String>,
    pub reading: Option<String>,
}

/// What a `together` row needs: an annotation set (its name), or a condition that holds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Need {
    Set(String),
    Holds(Cond),
}

impl Need {
    /// The annotation it is on.
    pub fn annotation(&self) -> &str {
        match self {
            Need::Set(n) => n,
            Need::Holds(c) => &c.annotation,
        }
    }

    /// In a message (the webhook's and the exported policy's): the annotation's key, with an
    /// `entry` condition's words ("kubernetes.io/elb.protocol-port with an http or https
    /// entry").
    pub fn words(&self, cat: &crate::vocab::catalog::Catalog) -> String {
        match self {
            Need::Holds(c) if !c.entry.is_empty() => {
                format!("{} with {}", cat.key(&c.annotation), c.entry_words())
            }
            _ => cat.key(self.annotation()),
        }
    }
}

impl Param {
    /// Whether `rule` reports the row's value limits: its own `rule`, else the provider's value
    /// rule (`annotation-format` on ACK, `annotation-value-format` elsewhere).
    pub fn owned_by(&self, rule: &str) -> bool {
        match &self.rule {
            Some(r) => r == rule,
            None => matches!(rule, "annotation-format" | "annotation-value-format"),
        }
    }

    /// Whether `rule` reports anything of this row: its value (`owned_by`), or, for
    /// `dependent-annotations`, a required parameter left unset.
    pub fn reported_by(&self, rule: &str) -> bool {
        self.owned_by(rule)
            || (rule == "dependent-annotations" && self.required && self.field.is_none())
    }

    /// Who sets the limit, in messages.
    pub fn by(&self) -> &str {
        self.by.as_deref().unwrap_or("the API")
    }

    /// Why one item (the whole value, or one entry of a list) is refused.
    pub fn item_error(&self, item: &str) -> Option<String> {
        if self.not.iter().any(|n| n == item) {
            return Some(format!("\"{item}\" is refused"));
        }
        if let Some(p) = self
            .not_prefix
            .iter()
            .find(|p| item.starts_with(p.as_str()))
        {
            return Some(format!(
                "\"{item}\" starts with \"{p}\", which {} reserves",
                self.by()
            ));
        }
        if let Some(c) = self.not_contains.iter().find(|c| item.contains(c.as_str())) {
            return Some(format!(
                "\"{item}\" contains \"{c}\", which {} refuses",
                self.by()
            ));
        }
        if let Some((min, max)) = self.length {
            let n = item.chars().count();
            if n < min || n > max {
                return Some(format!(
                    "{n} characters, {} takes {min} to {max}",
                    self.by()
                ));
            }
        }
        if let Some((min, max)) = self.range {
            return match crate::vocab::go::atoi(item) {
                Ok(v) => {
                    let sent = self.sent(v);
                    if (min..=max).contains(&sent) || self.also_numbers.contains(&sent) {
                        None
                    } else if sent != v {
                        Some(format!(
                            "the controller keeps it as a 32-bit number (Go int32) and sends {sent}, which is outside {}",
                            self.range_words()
                        ))
                    } else {
                        Some(format!("{v} is outside {}", self.range_words()))
                    }
                }
                Err(_) => Some(format!("\"{item}\" is not a whole number")),
            };
        }
        let in_enum = self.values.as_ref().map(|vs| {
            vs.iter().any(|v| {
                if self.fold {
                    v.eq_ignore_ascii_case(item)
                } else {
                    v == item
                }
            })
        });
        let matches = self.regex.as_ref().map(|r| r.is_match(item));
        let ok = match (in_enum, matches) {
            (None, None) => true,
            (Some(e), None) => e,
            (None, Some(m)) => m,
            (Some(e), Some(m)) => e || m,
        };
        (!ok).then(|| format!("\"{item}\" is not {}", self.allowed()))
    }

    /// The number the controller sends for `v` (its Go `int32` with `int32`).
    pub fn sent(&self, v: i64) -> i64 {
        if self.int32 { i64::from(v as i32) } else { v }
    }

    fn range_words(&self) -> String {
        let (min, max) = self.range.unwrap_or_default();
        let mut s = format!("{min} to {max}");
        for a in &self.also_numbers {
            s.push_str(&format!(" or {a}"));
        }
        s
    }

    /// What the API takes, in words.
    pub fn allowed(&self) -> String {
        let mut parts = Vec::new();
        if let Some(vs) = &self.values {
            let case = if self.fold { " (any case)" } else { "" };
            parts.push(format!("one of {}{case}", vs.join(", ")));
        }
        if let Some(d) = &self.describe {
            parts.push(d.clone());
        }
        if parts.is_empty() {
            parts.push(format!("like \"{}\"", self.example));
        }
        parts.join(", or ")
    }

    /// How many items are named once and not in `onceNot` (see `onceMax`).
    pub fn once(&self, items: &[&str]) -> usize {
        items
            .iter()
            .filter(|i| items.iter().filter(|j| j == i).count() == 1)
            .filter(|i| !self.once_not.iter().any(|n| n == *i))
            .count()
    }

    /// The items of a value as the controller sends them.
    pub fn items<'v>(&self, value: &'v str) -> Vec<&'v str> {
        let Some(sep) = &self.split else {
            return vec![value];
        };
        value
            .split(sep.as_str())
            .map(|i| if self.trim { i.trim() } else { i })
            .filter(|i| match &self.part {
                Some((p, _)) if self.skip_empty_key => !i.is_empty() && !i.starts_with(p.as_str()),
                _ => true,
            })
            .map(|i| match &self.part {
                Some((p, n)) => i.split(p.as_str()).nth(*n).unwrap_or(""),
                None => i,
            })
            .collect()
    }
}

fn parse(p: Provider, text: &str) -> ApiTable {
    // Embedded and parsed by the tests, so a failure is a build bug.
    let mut t: ApiTable = crate::vocab::yaml::from_str(text)
        .unwrap_or_else(|e| panic!("providers/data/{p}-api.yaml is invalid: {e}"));
    assert_eq!(
        t.provider, p,
        "providers/data/{p}-api.yaml names another provider"
    );
    for call in &mut t.calls {
        for row in &call.together {
            assert!(
                !row.need.is_empty() || !row.excludes.is_empty(),
                "{p}-api.yaml {}: a together row with neither need nor excludes",
                call.call
            );
        }
        for param in &mut call.params {
            assert!(
                param.once_max.is_none() || param.split.is_some(),
                "{p}-api.yaml {}.{}: onceMax without split",
                call.call,
                param.name
            );
            param.regex = param.pattern.as_ref().map(|s| {
                Regex::new(&format!("^(?:{s})$")).unwrap_or_else(|e| {
                    panic!("{p}-api.yaml {}.{}: pattern: {e}", call.call, param.name)
                })
            });
        }
    }
    t
}

static ALIBABA: LazyLock<ApiTable> =
    LazyLock::new(|| parse(Provider::Alibaba, include_str!("../data/alibaba-api.yaml")));

static HUAWEI: LazyLock<ApiTable> =
    LazyLock::new(|| parse(Provider::Huawei, include_str!("../data/huawei-api.yaml")));

static VOLCENGINE: LazyLock<ApiTable> = LazyLock::new(|| {
    parse(
        Provider::Volcengine,
        include_str!("../data/volcengine-api.yaml"),
    )
});

/// A provider's API rows (none for a cloud without a file: CTyun, whose controller is not
/// public and whose annotation reference, as far as any copy reaches, names no API parameter;
/// docs/src/providers/ctyun.md says what was searched).
pub fn table(p: Provider) -> Option<&'static ApiTable> {
    match p {
        Provider::Alibaba => Some(&ALIBABA),
        Provider::Huawei => Some(&HUAWEI),
        Provider::Volcengine => Some(&VOLCENGINE),
        _ => None,
    }
}
