use rstest::rstest;

use crate::providers::Provider::Ctyun;
use crate::testkit::{Expect, Expect::*, cfg, create, expect, lb};

#[rstest]
#[case::proxy("proxy", Pass)]
#[case::upper("Proxy", Deny)]
#[case::vip("vip", Deny)]
fn ip_mode_value(#[case] value: &str, #[case] want: Expect) {
    let s = lb().pa(Ctyun, "ip-mode", value);
    expect(
        &create(s),
        &cfg("cluster:\n  version: v1.31.0\n"),
        "ip-mode-value",
        want,
    );
}

#[rstest]
#[case::v1_30(Some("v1.30.0"), Pass)]
#[case::v1_31_cce(Some("v1.31.4-r10"), Pass)]
#[case::v1_29(Some("v1.29.15"), Deny)]
#[case::unknown(None, Warn)]
#[case::unparseable(Some("latest"), Warn)]
fn ip_mode_version(#[case] version: Option<&str>, #[case] want: Expect) {
    let s = lb().pa(Ctyun, "ip-mode", "proxy");
    let mut config = cfg("");
    config.cluster.version = version.map(String::from);
    let v = expect(&create(s), &config, "ip-mode-version", want);
    if want == Warn {
        assert!(v.warnings().join("").contains("cannot tell"));
    }
    if want == Deny {
        assert!(v.denial_message().unwrap().contains("v1.29.15"));
    }
}
