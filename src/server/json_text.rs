//! JSON string literals, escaped as serde_json escapes them, scanned eight bytes at a time.
//! A denial's message, warnings and decision line are mostly text with nothing to escape;
//! serde_json's byte-by-byte loop and the log's own took some 18,000 instructions of a
//! denial (BENCHMARKS.md, #41, tenth pass).

use std::fmt::{self, Write};

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of each byte of `w` below `n` (n ≤ 128). The lowest marked byte (in
/// little-endian order) is always right; bytes after it may be marked by its borrow.
const fn below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * n as u64) & !w & HIGHS
}

/// The bytes of `w` JSON escapes (control characters, the quote, the backslash), marked as
/// `below` does.
const fn marks(w: u64) -> u64 {
    below(w, 0x20) | below(w ^ (ONES * b'"' as u64), 1) | below(w ^ (ONES * b'\\' as u64), 1)
}

const fn escaped(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The first byte from `i` on that JSON escapes.
fn next_escape(bytes: &[u8], mut i: usize) -> Option<usize> {
    while let Some(word) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let m = marks(u64::from_le_bytes(*word));
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let rest = bytes.get(i..)?;
    rest.iter().position(|&b| escaped(b)).map(|p| i + p)
}

/// Writes `s` as a JSON string literal, quotes included.
fn write(out: &mut impl Write, s: &str) -> fmt::Result {
    out.write_char('"')?;
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(i) = next_escape(bytes, start) {
        // Only ASCII bytes are escaped, so `i` is a character boundary.
        out.write_str(&s[start..i])?;
        match bytes[i] {
            b'"' => out.write_str("\\\""),
            b'\\' => out.write_str("\\\\"),
            b'\n' => out.write_str("\\n"),
            b'\r' => out.write_str("\\r"),
            b'\t' => out.write_str("\\t"),
            0x08 => out.write_str("\\b"),
            0x0c => out.write_str("\\f"),
            b => write!(out, "\\u{b:04x}"),
        }?;
        start = i + 1;
    }
    out.write_str(&s[start..])?;
    out.write_char('"')
}

/// Appends `s` as a JSON string literal to `out`.
pub fn push(out: &mut String, s: &str) {
    // Writing to a String cannot fail.
    let _ = write(out, s);
}

#[cfg(test)]
mod tests {
    use super::push;
    use proptest::prelude::*;

    fn ours(s: &str) -> String {
        let mut out = String::new();
        push(&mut out, s);
        out
    }

    #[test]
    fn every_byte_that_needs_it_is_escaped_as_serde_json_does() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            for s in [
                format!("{c}"),
                format!("abcdefg{c}"),
                format!("abcdefgh{c}ijklmnop"),
                format!("{c}{c}{c}{c}{c}{c}{c}{c}{c}"),
                format!("é{c}ü 日本{c}"),
            ] {
                assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
            }
        }
    }

    #[test]
    fn an_escape_at_any_place_of_a_word_is_found() {
        for len in 0..24 {
            for at in 0..len {
                for c in ['"', '\\', '\u{1}', '\u{1f}', ' ', '\u{7f}', 'é'] {
                    let s: String = (0..len).map(|i| if i == at { c } else { 'a' }).collect();
                    assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                    let s = s.replace('a', "\"");
                    assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_reads_as_serde_jsons(s in any::<String>()) {
            prop_assert_eq!(ours(&s), serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn ascii_with_escapes_reads_as_serde_jsons(s in "[ -~\\x00-\\x1f\"\\\\é]{0,80}") {
            prop_assert_eq!(ours(&s), serde_json::to_string(&s).unwrap());
        }
    }
}
