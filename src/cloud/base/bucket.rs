//! The token bucket every call to the cloud takes from: `qps` tokens a second, as many in a
//! burst (at least one). An admission that finds no token fails at once ("rate limit")
//! instead of waiting out its budget; the background refresh waits, and leaves half the
//! burst to admissions.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Bucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    pub fn new(qps: f64, now: Instant) -> Self {
        let qps = qps.max(0.01);
        let burst = qps.max(1.0);
        Self {
            qps,
            burst,
            state: Mutex::new((burst, now)),
        }
    }

    /// Takes a token when there is one above `reserve`; else how long until there is.
    fn take_at(&self, now: Instant, reserve: f64) -> Result<(), Duration> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(s.1).as_secs_f64();
        s.0 = (s.0 + elapsed * self.qps).min(self.burst);
        s.1 = s.1.max(now);
        if s.0 >= 1.0 + reserve {
            s.0 -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 + reserve - s.0) / self.qps))
    }

    /// An admission's token: now or never.
    pub fn try_take(&self, now: Instant) -> bool {
        self.take_at(now, 0.0).is_ok()
    }

    /// A background token, leaving half the burst to admissions.
    pub fn try_take_background(&self, now: Instant) -> Result<(), Duration> {
        self.take_at(now, (self.burst / 2.0).floor())
    }

    /// Waits for a token until `until`; false when none comes by then.
    pub async fn take_until(&self, until: Instant) -> bool {
        loop {
            match self.take_at(Instant::now(), 0.0) {
                Ok(()) => return true,
                Err(wait) if Instant::now() + wait > until => return false,
                Err(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// Waits for a background token.
    pub async fn take_background(&self) {
        while let Err(wait) = self.try_take_background(Instant::now()) {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admissions_take_at_once_or_not_at_all() {
        let t0 = Instant::now();
        let b = Bucket::new(2.0, t0);
        assert!(b.try_take(t0) && b.try_take(t0), "a burst of two");
        assert!(!b.try_take(t0), "none left");
        assert!(!b.try_take(t0 + Duration::from_millis(400)));
        assert!(
            b.try_take(t0 + Duration::from_millis(900)),
            "one more after 0.5 s"
        );
        // Shared by five replicas: 0.4 qps, one token, the next 2.5 s later.
        let b = Bucket::new(2.0 / 5.0, t0);
        assert!(b.try_take(t0));
        assert!(!b.try_take(t0 + Duration::from_millis(2400)));
        assert!(b.try_take(t0 + Duration::from_millis(2600)));
    }

    #[test]
    fn the_background_leaves_half_the_burst_to_admissions() {
        let t0 = Instant::now();
        let b = Bucket::new(4.0, t0);
        assert!(b.try_take_background(t0).is_ok());
        assert!(b.try_take_background(t0).is_ok());
        let wait = b.try_take_background(t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(250));
        assert!(
            b.try_take(t0) && b.try_take(t0),
            "admissions use the reserve"
        );
        assert!(!b.try_take(t0));
    }
}
