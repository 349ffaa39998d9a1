use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use super::JsonLine;

#[derive(Clone)]
struct Fixed;

impl FormatTime for Fixed {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        w.write_str("2026-12-03T20:55:59.085529Z")
    }
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buf {
    type Writer = Buf;
    fn make_writer(&'a self) -> Buf {
        self.clone()
    }
}

#[derive(Debug)]
struct Failure;

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection \"refused\"\n")
    }
}

impl std::error::Error for Failure {}

/// Every kind of field lbguard logs, and the awkward characters, in and out of a span.
fn events() {
    let rules = vec!["lb-id-immutable", "enum-values"];
    tracing::info!(
        uid = %"08355ea0",
        namespace = %"a\"b\\c",
        operation = "UPDATE",
        dry_run = false,
        verdict = "denied",
        rules = ?rules,
        latency_us = 3428u64,
        "admission decision"
    );
    tracing::warn!(error = %Failure, "call failed: \u{1}\u{8}\u{c}\t\r\n\u{1f}\u{7f} 中文 é /");
    let e: &(dyn std::error::Error + 'static) = &Failure;
    tracing::warn!(
        error = e,
        delta = -5i64,
        big = 170141183460469231731687303715884105727i128
    );
    tracing::info!(
        ratio = 1.5f64,
        nan = f64::NAN,
        inf = f64::INFINITY,
        tiny = 1e-300f64
    );
    tracing::error!("message only");
    tracing::info!(target: "kube_runtime::watcher", answer = 42u64, "another crate's event");
    let span = tracing::info_span!("admission", endpoint = "validate", uid = 7u64);
    span.in_scope(|| tracing::info!(verdict = "allowed", "in a span"));
    tracing::info!(parent: &span, verdict = "allowed", "explicit parent");
    tracing::info!(parent: None, verdict = "allowed", "explicit root");
}

fn run(fast: bool) -> String {
    let buf = Buf::default();
    let builder = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_target(false)
        .with_ansi(false)
        .with_timer(Fixed)
        .json()
        .flatten_event(true);
    if fast {
        tracing::subscriber::with_default(
            builder.event_format(JsonLine::new(Fixed)).finish(),
            events,
        );
    } else {
        tracing::subscriber::with_default(builder.finish(), events);
    }
    let out = buf.0.lock().unwrap().clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_line_is_the_stock_formatters_byte_for_byte() {
    let stock = run(false);
    let fast = run(true);
    assert_eq!(stock.lines().count(), 9, "{stock}");
    for (s, f) in stock.lines().zip(fast.lines()) {
        assert_eq!(s, f);
    }
    assert_eq!(stock, fast);
    // The lines are JSON, and the decision line carries its fields.
    let first: serde_json::Value = serde_json::from_str(fast.lines().next().unwrap()).unwrap();
    assert_eq!(first["namespace"], "a\"b\\c");
    assert_eq!(first["latency_us"], 3428);
    assert_eq!(first["rules"], "[\"lb-id-immutable\", \"enum-values\"]");
}

#[test]
fn escaping_matches_serde_json_for_every_control_character() {
    for c in (0u32..0x80).filter_map(char::from_u32) {
        let s = format!("a{c}b");
        let mut ours = String::new();
        super::push(&mut ours, &s);
        assert_eq!(ours, serde_json::to_string(&s).unwrap(), "{c:?}");
    }
}
