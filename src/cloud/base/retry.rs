//! Retrying a call in the background while its error is worth it.

use std::time::Duration;

use super::outcome::CloudError;

/// Up to three tries, with backoff, while the error is worth a retry.
pub(crate) async fn retried<T, F, Fut>(mut f: F) -> Result<T, CloudError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CloudError>>,
{
    let mut backoff = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if !e.transient() || attempt == 2 => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, attempt, "cloud refresh: retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 4;
                attempt += 1;
            }
        }
    }
}
