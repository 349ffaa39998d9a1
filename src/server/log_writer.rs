//! The log's writer thread: lines are appended to a shared buffer and written out in batches.
//!
//! A request never waits on the pipe or file behind stderr, and never wakes a thread per line:
//! the first line after a write wakes the writer, which then gathers lines for up to `TICK`
//! (or until `EARLY` bytes wait) and writes them in one call. Under load that is one wake-up
//! and one write per tick instead of a channel hand-off, a wake-up and often a write per
//! decision line (with every denial logged, those cost a quarter of the throughput).
//! Nothing is dropped: when `FULL` bytes wait, loggers wait for the writer.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the writer gathers lines after the first one.
const TICK: Duration = Duration::from_millis(20);
/// Pending bytes that end the gathering early.
const EARLY: usize = 256 * 1024;
/// Pending bytes at which loggers wait for the writer (the buffer's bound).
const FULL: usize = 8 * 1024 * 1024;

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// The writer waits here for lines (or for `EARLY`, or the close).
    lines: Condvar,
    /// Loggers wait here while the buffer is full.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock leaves whole lines behind (appends are one copy).
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append(&self, line: &[u8]) {
        let mut pending = self.lock();
        while pending.bytes.len() >= FULL && !pending.closed {
            pending = self
                .room
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let before = pending.bytes.len();
        pending.bytes.extend_from_slice(line);
        let after = pending.bytes.len();
        drop(pending);
        if before == 0 || (before < EARLY && after >= EARLY) {
            self.lines.notify_one();
        }
    }
}

/// Where tracing-subscriber writes each formatted line (one `write_all` per line).
#[derive(Clone)]
pub struct LogWriter {
    shared: Arc<Shared>,
}

/// Flushes and stops the writer thread when dropped.
pub struct LogGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// The writer thread, writing to `out`.
pub fn spawn(out: impl Write + Send + 'static) -> std::io::Result<(LogWriter, LogGuard)> {
    let shared = Arc::new(Shared::default());
    let theirs = shared.clone();
    let thread = std::thread::Builder::new()
        .name("lbguard-log".into())
        .spawn(move || write_batches(&theirs, out))?;
    Ok((
        LogWriter {
            shared: shared.clone(),
        },
        LogGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

fn write_batches(shared: &Shared, mut out: impl Write) {
    let mut batch = Vec::new();
    loop {
        let mut pending = shared.lock();
        while pending.bytes.is_empty() && !pending.closed {
            pending = shared
                .lines
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if !pending.closed {
            pending = shared
                .lines
                .wait_timeout_while(pending, TICK, |p| p.bytes.len() < EARLY && !p.closed)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        std::mem::swap(&mut batch, &mut pending.bytes);
        let last = pending.closed;
        drop(pending);
        shared.room.notify_all();
        // Nowhere to report a failed write to stderr; the next batch tries again.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        if batch.capacity() > EARLY * 2 {
            batch.shrink_to(EARLY * 2);
        }
        if last {
            return;
        }
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.shared.append(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.lines.notify_one();
        self.shared.room.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
#[path = "log_writer_tests.rs"]
mod tests;
