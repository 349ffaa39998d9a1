//! Each provider's annotation reference: one YAML file per cloud under `data/`, embedded
//! in the binary and parsed once. The files say where each fact comes from.

use std::sync::LazyLock;

pub use crate::vocab::annotations::{Entry, Format, Table, parse_int};
use crate::vocab::provider::Provider;

fn parse(p: Provider, text: &str) -> Table {
    // The files are part of the binary and tests parse every one, so a failure is a build bug.
    let table: Table = crate::vocab::yaml::from_str(text)
        .unwrap_or_else(|e| panic!("providers/data/{p}.yaml is invalid: {e}"));
    assert_eq!(
        table.provider, p,
        "providers/data/{p}.yaml names another provider"
    );
    table.indexed()
}

pub(crate) static CTYUN: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Ctyun, include_str!("data/ctyun.yaml")));
pub(crate) static ALIBABA: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Alibaba, include_str!("data/alibaba.yaml")));
pub(crate) static HUAWEI: LazyLock<Table> =
    LazyLock::new(|| parse(Provider::Huawei, include_str!("data/huawei.yaml")));
pub(crate) static VOLCENGINE: LazyLock<Table> =
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
                if let Some(r) = &e.range {
                    assert!(t.sources.contains_key(r), "{p} {}: range {r}", e.name);
                }
                assert!(
                    e.code.is_empty() || t.code_base.is_some(),
                    "{p} {}: code lines without the table's codeBase",
                    e.name
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
    // Go int32(...) after strconv.Atoi: the range holds the 32-bit number sent.
    #[case(Format::Atoi32(vec![10, 900]), "900", true)]
    #[case(Format::Atoi32(vec![10, 900]), "901", false)]
    #[case(Format::Atoi32(vec![10, 900]), "4294967306", true)] // sent as 10
    #[case(Format::Atoi32(vec![10, 900]), "4294967305", false)] // sent as 9
    #[case(Format::Atoi32(vec![10, 900]), "-4294967286", true)] // sent as 10
    #[case(Format::Atoi32(vec![10, 900]), "+10", true)]
    #[case(Format::Atoi32(vec![10, 900]), " 10", false)]
    #[case(Format::Json, r#"{"a":1}"#, true)]
    #[case(Format::Json, "[1]", false)]
    #[case(Format::Json, "{", false)]
    #[case(Format::Tokens, "a,b", true)]
    #[case(Format::Tokens, "a,,b", false)]
    #[case(Format::Ids { max: 5, empty: false }, "a,b,c,d,e", true)]
    #[case(Format::Ids { max: 5, empty: false }, "a,b,c,d,e,f", false)]
    #[case(Format::Ids { max: 5, empty: false }, "a, b", true)]
    #[case(Format::Ids { max: 5, empty: false }, "a,,b", false)]
    #[case(Format::Ids { max: 5, empty: false }, "", false)]
    #[case(Format::Ids { max: 5, empty: true }, "", true)]
    #[case(Format::Ids { max: 5, empty: true }, ",", false)]
    #[case(Format::Ids { max: 1, empty: true }, "a,b", false)]
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
            range: None,
            nlb_format: None,
            error: None,
            nlb_error: None,
            code: Vec::new(),
            clb_protocols: Vec::new(),
            reading: None,
            instead: None,
        };
        assert_eq!(e.supported_at(&at.parse().unwrap()), ok);
    }
}
