//! Values as the clouds' Go controllers parse them: `strconv.Atoi` (a sign and digits, no
//! spaces, the range of a 64-bit int) and `strconv.Quote`, for quoting the errors they give.

/// Go's `strconv.Atoi` on a 64-bit build, with Go's error text.
pub fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            quote(s)
        ));
    }
    // Rust's parser takes the same sign and digits and fails only past the i64 range.
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", quote(s)))
}

/// Go's `strconv.Quote`: double quotes, Go's escapes for what is not printable.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() || c == '\u{feff}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `fmt` `%+v` of a `[]string`: `[a b]`.
pub fn slice(items: &[&str]) -> String {
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // Go 1.25: strconv.Atoi and its errors, as `go doc strconv` and the language spec give them.
    #[rstest]
    #[case("30", Ok(30))]
    #[case("+30", Ok(30))]
    #[case("-5", Ok(-5))]
    #[case("007", Ok(7))]
    #[case("9223372036854775807", Ok(i64::MAX))]
    #[case(" 30", Err("strconv.Atoi: parsing \" 30\": invalid syntax"))]
    #[case("30 ", Err("strconv.Atoi: parsing \"30 \": invalid syntax"))]
    #[case("", Err("strconv.Atoi: parsing \"\": invalid syntax"))]
    #[case("+", Err("strconv.Atoi: parsing \"+\": invalid syntax"))]
    #[case("1_000", Err("strconv.Atoi: parsing \"1_000\": invalid syntax"))]
    #[case("1.5", Err("strconv.Atoi: parsing \"1.5\": invalid syntax"))]
    #[case("0x10", Err("strconv.Atoi: parsing \"0x10\": invalid syntax"))]
    #[case("٣", Err("strconv.Atoi: parsing \"٣\": invalid syntax"))]
    #[case(
        "9223372036854775808",
        Err("strconv.Atoi: parsing \"9223372036854775808\": value out of range")
    )]
    fn atoi_is_gos(#[case] s: &str, #[case] want: Result<i64, &str>) {
        assert_eq!(atoi(s), want.map_err(String::from));
    }

    #[test]
    fn quote_escapes_as_go_does() {
        assert_eq!(quote("a\"b\\c\n\t"), r#""a\"b\\c\n\t""#);
        assert_eq!(quote("\u{1}"), r#""\x01""#);
        assert_eq!(quote("杭州"), "\"杭州\"");
        assert_eq!(slice(&["https443"]), "[https443]");
    }
}
