//! Durations as flags and config keys write them.

use std::time::Duration;

/// `500ms`, `10s`, `5m` or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration like 500ms, 10s or 5m"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        _ => return Err(format!("\"{s}\": unknown unit \"{unit}\" (use ms, s or m)")),
    };
    // Timers add durations to "now": an absurd one would overflow the clock.
    if d > MAX_DURATION {
        return Err(format!("\"{s}\" is longer than a year"));
    }
    Ok(d)
}

/// The longest duration a flag or config key takes.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("1h").is_err());
        assert!(parse_duration("18446744073709551615m").is_err());
        assert!(parse_duration("366000000s").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
