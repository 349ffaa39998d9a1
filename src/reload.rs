//! Polling files for changes: the one loop behind certificate and inventory reloads.

use std::fmt::Display;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;

/// Calls `reload` every `every` on a blocking thread; counts swaps and failures, and logs
/// each failure (the caller keeps its last good state).
pub fn spawn_poll<E, F>(
    what: &'static str,
    every: Duration,
    swapped: Counter,
    failed: Counter,
    reload: F,
) where
    E: Display + Send + 'static,
    F: Fn() -> Result<bool, E> + Send + Sync + 'static,
{
    let reload = std::sync::Arc::new(reload);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let f = std::sync::Arc::clone(&reload);
            match tokio::task::spawn_blocking(move || f()).await {
                Ok(Ok(true)) => {
                    swapped.inc();
                    tracing::info!("{what} reloaded");
                }
                Ok(Ok(false)) => {}
                Ok(Err(e)) => {
                    failed.inc();
                    tracing::error!(error = %e, "{what} not reloaded; keeping the last good one");
                }
                Err(e) => tracing::error!(error = %e, "{what} reload task failed"),
            }
        }
    });
}
