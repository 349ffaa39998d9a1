//! `annotation-value-format` on Volcengine beyond what a table format says: the CLB API's
//! limits on the name the controller gives a CLB it creates (`-name` becomes CreateLoadBalancer's
//! LoadBalancerName; the controller's table gives the name no limit, so the API refuses a bad
//! one only after the Service is stored). CLB-NAME = https://docs.byteplus.com/api/docs/clb/
//! ModifyLoadBalancerAttributes (API 2020-04-01, LoadBalancerName: "must start with a letter,
//! number, or Chinese character and may contain letters, numbers, Chinese characters, and the
//! following special characters: period ( . ), underscore ( _ ), and hyphen ( - )", "1 to 128
//! characters"); the same parameter of CreateLoadBalancer (SDK volcengine-python-sdk 5.0.54
//! volcenginesdkclb/models/create_load_balancer_request.py `load_balancer_name`, a string).

use std::sync::LazyLock;

use regex::Regex;

use crate::vocab::catalog::{Catalog, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::rule::CelCheck;
use crate::vocab::service::Svc;

/// CLB-NAME: 1-128 characters (the regex counts characters, as CEL's `matches` does), the
/// first a letter, digit or Chinese character (Unicode script Han, which RE2 and Rust's regex
/// both know), the rest those or `.`, `_`, `-`. "Letters" are ASCII letters, as the Chinese
/// page's 字母.
pub const NAME_PATTERN: &str = r"^[A-Za-z0-9\p{Han}][A-Za-z0-9\p{Han}._-]{0,127}$";

const NAME_MAX: usize = 128;

static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(NAME_PATTERN).unwrap_or_else(|e| panic!("NAME_PATTERN: {e}")));

/// What the API takes, for messages.
const NAME_ALLOWED: &str = "the CLB API (CreateLoadBalancer LoadBalancerName) takes 1 to 128 characters: letters, digits, Chinese characters, '.', '_' and '-', starting with a letter, digit or Chinese character";

/// The fix, for messages.
const NAME_FIX: &str =
    "rename it, e.g. \"web-clb\", or remove the annotation to let the controller name the CLB";

static HAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\p{Han}$").unwrap_or_else(|e| panic!("HAN: {e}")));

/// One character as NAME_PATTERN reads it: only used to say which one a refused name holds.
fn name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphanumeric()
        || (!first && matches!(c, '.' | '_' | '-'))
        || HAN.is_match(c.encode_utf8(&mut [0u8; 4]))
}

/// The problems of `value` for annotation `name` (without the prefix) on `svc` that its table
/// format cannot say; none for other annotations. Empty is no name (the controller makes one
/// up: volcengine-cloud-controller-manager docs/zh/usage_zh.md:8), so it passes. With `-id` the
/// controller reuses a load balancer and creates none, so the name reaches no API: not checked.
pub fn value_limits(cat: &Catalog, name: &str, value: &str, svc: Svc) -> Vec<String> {
    if name != "name"
        || value.is_empty()
        || NAME.is_match(value)
        || cat
            .get(svc, "id")
            .is_some_and(|a| !a.value.trim().is_empty())
    {
        return Vec::new();
    }
    let n = value.chars().count();
    let why = if n > NAME_MAX {
        format!("has {n} characters")
    } else {
        match value
            .chars()
            .enumerate()
            .find(|(i, c)| !name_char(*c, *i == 0))
        {
            Some((0, c)) => format!("starts with '{c}'"),
            Some((_, c)) => format!("holds '{c}'"),
            None => "is refused".into(),
        }
    };
    vec![format!(
        "\"{value}\" {why}, but {NAME_ALLOWED} (BytePlus CLB API reference, ModifyLoadBalancerAttributes); {NAME_FIX}"
    )]
}

/// The CEL of `value_limits` (`annotation-value-format`'s exported policy).
pub fn value_limits_cel(cat: &Catalog) -> Vec<CelCheck> {
    let (a, id) = (
        catalog_annotation(cat, "name"),
        catalog_annotation(cat, "id"),
    );
    vec![
        CelCheck::new(
            format!(
                "{} && {} != '' && !{}.matches({}) && !({} && {}.trim() != '')",
                a.present,
                a.value,
                a.value,
                cel::lit(NAME_PATTERN),
                id.present,
                id.value
            ),
            format!(
                "'[annotation-value-format] ' + {} + ' is \"' + {} + '\": {}; {}'",
                a.key,
                a.value,
                NAME_ALLOWED.replace('\'', "\\'"),
                NAME_FIX.replace('\'', "\\'").replace('"', "\\\"")
            ),
        )
        .same_when(a.value),
    ]
}

#[cfg(test)]
#[path = "volcengine_values_tests.rs"]
mod tests;
