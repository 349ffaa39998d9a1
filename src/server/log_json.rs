//! The JSON log line, written straight to the line's buffer. tracing-subscriber's JSON
//! formatter serializes each field through serde and a `format_args!`: on a denial's
//! decision line that was some 26,000 instructions of the request (BENCHMARKS.md, #41).
//! The line is the same, byte for byte: `{"timestamp":…,"level":…,<fields>}`. Events in a
//! span, and `log` records of other crates, go to the stock formatter, which also writes the
//! spans and normalises `log` metadata.

use std::fmt::{self, Write};

use super::json_text::push;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Json};
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::registry::LookupSpan;

/// lbguard's JSON event format: the stock one's output, without its per-field detours.
pub struct JsonLine<T> {
    timer: T,
    stock: format::Format<Json, T>,
}

impl<T: FormatTime + Clone> JsonLine<T> {
    /// The line `tracing_subscriber::fmt().json().flatten_event(true).with_target(false)`
    /// writes, with `timer`'s timestamps.
    pub fn new(timer: T) -> Self {
        let stock = format::format()
            .json()
            .flatten_event(true)
            .with_target(false)
            .with_timer(timer.clone());
        JsonLine { timer, stock }
    }
}

impl<S, N, T> FormatEvent<S, N> for JsonLine<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    T: FormatTime,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: format::Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let own = event.metadata().target().starts_with("lbguard");
        // The stock formatter's test for a span to write.
        let in_span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .is_some();
        if !own || in_span {
            return self.stock.format_event(ctx, writer, event);
        }
        // The line is built in a String of its own and handed over once: written through
        // the formatter's `dyn Write`, each short field cost some 300 instructions.
        let mut timestamp = String::with_capacity(32);
        self.timer
            .format_time(&mut format::Writer::new(&mut timestamp))?;
        let mut line = String::with_capacity(LINE);
        line.push_str("{\"timestamp\":");
        push(&mut line, &timestamp);
        line.extend([",\"level\":\"", event.metadata().level().as_str(), "\""]);
        event.record(&mut Fields {
            out: &mut line,
            scratch: String::new(),
        });
        line.push_str("}\n");
        writer.write_str(&line)
    }
}

/// A decision line's usual length, so its buffer is allocated once.
const LINE: usize = 512;

/// Writes each field as `,"name":value`, as serde_json writes it. A String takes every
/// write, so nothing here fails.
struct Fields<'a> {
    out: &'a mut String,
    scratch: String,
}

impl Fields<'_> {
    fn key(&mut self, field: &Field) {
        self.out.push(',');
        push(self.out, field.name());
        self.out.push(':');
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.key(field);
        push(self.out, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.key(field);
        self.out.push_str(if value { "true" } else { "false" });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.key(field);
        let _ = write!(self.out, "{value}");
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.key(field);
        let _ = write!(self.out, "{value}");
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.key(field);
        // serde_json's own number, or null for NaN and the infinities.
        match serde_json::to_string(&value) {
            Ok(number) => self.out.push_str(&number),
            Err(_) => self.out.push_str("null"),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.scratch.clear();
        let _ = write!(self.scratch, "{value:?}");
        self.key(field);
        push(self.out, &self.scratch);
    }
}

#[cfg(test)]
#[path = "log_json_tests.rs"]
mod tests;
