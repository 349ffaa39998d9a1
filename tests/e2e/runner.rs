//! Running named cases one after another, each under a time limit, with a panic caught as a
//! failure: the e2e suite's and the node suite's loop.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::FutureExt;

/// A case: an async fn of the suite's environment.
pub type Case<E> = for<'a> fn(&'a mut E) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// `name => path` pairs as the suite's list of cases.
macro_rules! cases {
    ($($name:literal => $f:path),* $(,)?) => {
        vec![$(($name, (|e| Box::pin($f(e))) as $crate::runner::Case<_>)),*]
    };
}
pub(crate) use cases;

/// Whether `name` is asked for (no filters: every case).
pub fn wanted(name: &str, filters: &[String]) -> bool {
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}

/// Runs `case` within `limit` and prints `test NAME ... ok|FAILED (time)`; true when it passed.
pub async fn run<E>(name: &str, env: &mut E, case: Case<E>, limit: Duration) -> bool {
    let t = Instant::now();
    let outcome = tokio::time::timeout(limit, AssertUnwindSafe(case(env)).catch_unwind()).await;
    let secs = t.elapsed().as_secs_f64();
    match outcome {
        Ok(Ok(())) => {
            println!("test {name} ... ok ({secs:.1}s)");
            true
        }
        other => {
            if other.is_err() {
                eprintln!("{name}: timed out");
            }
            println!("test {name} ... FAILED ({secs:.1}s)");
            false
        }
    }
}
