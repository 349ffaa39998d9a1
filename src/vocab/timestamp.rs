//! A UTC instant's calendar text, as request signatures and the log write it.

/// `2026-12-01T08:00:00` with `date` between the date's fields and `time` between the
/// time of day's (`-` and `:` for RFC 3339; the caller adds any fraction and the `Z`).
pub fn civil(t: time::OffsetDateTime, date: &str, time: &str) -> String {
    format!(
        "{:04}{date}{:02}{date}{:02}T{:02}{time}{:02}{time}{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}
