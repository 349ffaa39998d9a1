//! The log's timestamps, as tracing-subscriber's `SystemTime` writes them
//! (`2026-12-04T21:49:13.105218Z`), with the date and time of day worked out once a second
//! per thread: the calendar arithmetic and its `write!`s took almost a third of the CPU time
//! of a denial's decision line (BENCHMARKS.md, #41, twelfth pass).

use std::cell::RefCell;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// UTC with microseconds; the same text as `tracing_subscriber::fmt::time::SystemTime`.
#[derive(Clone, Copy, Debug, Default)]
pub struct UtcMicros;

thread_local! {
    /// The last second this thread wrote, and its text up to the seconds.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

impl FormatTime for UtcMicros {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) else {
            return tracing_subscriber::fmt::time::SystemTime.format_time(w);
        };
        let secs = since.as_secs();
        let written = SECOND.with_borrow_mut(|(at, text)| {
            if *at != secs {
                text.clear();
                *at = if seconds(text, secs) { secs } else { u64::MAX };
            }
            (*at == secs).then(|| w.write_str(text))
        });
        match written {
            Some(r) => r?,
            // Beyond the years `time` takes (past 9999): the stock formatter's own text.
            None => return tracing_subscriber::fmt::time::SystemTime.format_time(w),
        }
        let fraction = fraction(since.subsec_micros());
        w.write_str(std::str::from_utf8(&fraction).map_err(|_| fmt::Error)?)
    }
}

/// `2026-12-04T21:49:13` for `secs` after the epoch; false past what `time` represents.
fn seconds(out: &mut String, secs: u64) -> bool {
    let Ok(Ok(t)) = i64::try_from(secs).map(time::OffsetDateTime::from_unix_timestamp) else {
        return false;
    };
    out.push_str(&crate::vocab::timestamp::civil(t, "-", ":"));
    true
}

/// `.105218Z`: six digits, as the stock formatter pads them.
fn fraction(micros: u32) -> [u8; 8] {
    let mut out = *b".000000Z";
    let mut rest = micros % 1_000_000;
    for d in out[1..7].iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, micros: u32) -> String {
        let mut s = String::new();
        assert!(seconds(&mut s, secs));
        s + std::str::from_utf8(&fraction(micros)).unwrap()
    }

    #[test]
    fn instants_read_as_the_calendar_has_them() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        // A leap day, the last microsecond of a second, a date this year.
        assert_eq!(at(951_868_799, 999_999), "2000-02-29T23:59:59.999999Z");
        assert_eq!(at(1_796_420_953, 105_218), "2026-12-04T21:49:13.105218Z");
        assert_eq!(at(253_402_300_799, 7), "9999-12-31T23:59:59.000007Z");
        assert!(!seconds(&mut String::new(), 253_402_300_800));
    }

    fn now(timer: &impl FormatTime) -> String {
        let mut s = String::new();
        timer.format_time(&mut Writer::new(&mut s)).unwrap();
        s
    }

    #[test]
    fn the_text_is_the_stock_timers() {
        // Same second and shape as tracing-subscriber's (the microseconds differ by the
        // time between the two calls); retried if a second ends in between.
        for _ in 0..100 {
            let (before, ours, after) = (
                now(&tracing_subscriber::fmt::time::SystemTime),
                now(&UtcMicros),
                now(&tracing_subscriber::fmt::time::SystemTime),
            );
            if before[..19] != after[..19] {
                continue;
            }
            assert_eq!(ours.len(), before.len(), "{ours} {before}");
            assert_eq!(ours[..20], before[..20], "{ours} {before}");
            assert!(ours[20..26].bytes().all(|b| b.is_ascii_digit()), "{ours}");
            assert!(before[20..26] <= ours[20..26] && ours[20..26] <= after[20..26]);
            assert!(ours.ends_with('Z'));
            // The second's text is cached: a second call in the same second reads the same.
            let again = now(&UtcMicros);
            if again[..19] == ours[..19] {
                assert_eq!(again.len(), ours.len());
            }
            return;
        }
        panic!("no two calls fell in one second");
    }
}
