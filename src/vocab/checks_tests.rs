use rstest::rstest;

use super::{first_naming_port, is_port_text};

#[rstest]
#[case("443", 443, true)]
#[case("0443", 443, false)]
#[case("+443", 443, false)]
#[case(" 443", 443, false)]
#[case("443 ", 443, false)]
#[case("", 443, false)]
#[case("44", 443, false)]
#[case("4430", 443, false)]
#[case("-1", -1, true)]
#[case("2147483647", i32::MAX, true)]
#[case("-2147483648", i32::MIN, true)]
fn a_port_is_its_decimal_text(#[case] text: &str, #[case] port: i32, #[case] same: bool) {
    assert_eq!(is_port_text(text, port), same);
    // The text `to_string` writes, which the controllers compare.
    assert_eq!(text == port.to_string(), same);
}

#[rstest]
#[case("https:443,http:80", 80, Some("http"))]
#[case("https:443,http:80", 443, Some("https"))]
#[case("https:443,http:443", 443, Some("https"))]
#[case("vsp-1:443:extra", 443, Some("vsp-1"))]
#[case("https:0443", 443, None)]
#[case("443", 443, None)]
#[case("", 443, None)]
#[case("https:443", 80, None)]
#[case(":443", 443, Some(""))]
fn the_first_entry_naming_the_port(
    #[case] list: &str,
    #[case] port: i32,
    #[case] first: Option<&str>,
) {
    assert_eq!(first_naming_port(list, port), first);
    // As the controllers' `split(",")`, `split(":")` and `parts[1] == port` read it.
    let by_split = list
        .split(',')
        .map(|e| e.split(':').collect::<Vec<_>>())
        .find(|p| p.len() >= 2 && p[1] == port.to_string())
        .map(|p| p[0]);
    assert_eq!(by_split, first);
}
