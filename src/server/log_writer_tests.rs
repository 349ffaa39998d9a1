use std::io::Write;
use std::sync::{Arc, Mutex};

use super::*;

/// A sink that records each write call, so batching is visible.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<Vec<u8>>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().push(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn every_line_arrives_in_order_and_the_guard_writes_what_waits() {
    let sink = Sink::default();
    let (writer, guard) = spawn(sink.clone()).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let mut w = writer.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    w.write_all(format!("{t} {i}\n").as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    drop(guard);
    let all: Vec<u8> = sink.0.lock().unwrap().concat();
    let text = String::from_utf8(all).unwrap();
    let mut next = [0usize; 4];
    for line in text.lines() {
        let (t, i) = line.split_once(' ').unwrap();
        let (t, i): (usize, usize) = (t.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next[t], "thread {t}'s lines out of order or lost");
        next[t] += 1;
    }
    assert_eq!(next, [2000; 4]);
}

#[test]
fn lines_logged_together_are_written_together() {
    let sink = Sink::default();
    let (mut writer, guard) = spawn(sink.clone()).unwrap();
    for i in 0..500 {
        writer.write_all(format!("line {i}\n").as_bytes()).unwrap();
    }
    drop(guard);
    let writes = sink.0.lock().unwrap().len();
    // Lines logged back to back share writes (a few, even on a loaded machine), not one each.
    assert!(writes < 50, "{writes} writes for 500 lines");
}

#[test]
fn a_line_is_written_without_the_guard_being_dropped() {
    let sink = Sink::default();
    let (mut writer, _guard) = spawn(sink.clone()).unwrap();
    writer.write_all(b"alone\n").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sink.0.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the line was never written"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(sink.0.lock().unwrap().concat(), b"alone\n");
}

#[test]
fn a_full_buffer_makes_the_logger_wait_and_loses_nothing() {
    /// A sink that blocks until released, so the buffer fills up.
    struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>, Sink);
    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (open, cv) = &*self.0;
            let mut o = open.lock().unwrap();
            while !*o {
                o = cv.wait(o).unwrap();
            }
            self.1.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let sink = Sink::default();
    let (mut writer, guard) = spawn(Gate(gate.clone(), sink.clone())).unwrap();
    let line = vec![b'x'; 64 * 1024];
    // Before the gate opens the writer holds one batch (at most the bound and a line, if it
    // was scheduled late) and the buffer the bound and a line: three times the bound cannot
    // all get past.
    let lines = 3 * FULL / line.len();
    let logger = std::thread::spawn(move || {
        for _ in 0..lines {
            writer.write_all(&line).unwrap();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let waited = !logger.is_finished();
    // Opened before anything is asserted: a failed assertion would otherwise wait forever
    // in the guard's drop for a writer stuck at the gate.
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    logger.join().unwrap();
    drop(guard);
    assert!(waited, "the logger went past a full buffer");
    let total: usize = sink.0.lock().unwrap().iter().map(Vec::len).sum();
    assert_eq!(total, 3 * FULL);
}
