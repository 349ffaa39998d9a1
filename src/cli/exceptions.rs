//! `lbguard check --exceptions`: `LBGuardException` manifests read from files, checked as
//! the webhook would admit them, and applied to the findings offline.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::config::Config;
use crate::engine::exceptions::{Exception, format_time, problems};

/// What reading the exception files gave.
#[derive(Default)]
pub struct Read {
    pub exceptions: crate::engine::exceptions::ExceptionSet,
    /// Exceptions that cannot be used: the run fails (exit 2).
    pub errors: Vec<String>,
    /// Expired exceptions: they cover nothing, and the run says so.
    pub notes: Vec<String>,
}

pub fn read(paths: &[PathBuf], config: &Config, now: SystemTime) -> Read {
    let mut out = Read::default();
    if paths.is_empty() {
        return out;
    }
    let loaded = super::read::load(paths);
    let mut valid = Vec::new();
    out.errors.extend(loaded.errors);
    for f in &loaded.services {
        out.errors.push(format!(
            "{}: a Service in an --exceptions file (give manifests as arguments)",
            f.origin
        ));
    }
    for (origin, value) in loaded.others {
        let e = match Exception::from_value(&value) {
            Some(Ok(e)) => e,
            Some(Err(err)) => {
                out.errors.push(format!("{origin}: {err}"));
                continue;
            }
            None => {
                out.errors.push(format!(
                    "{origin}: not an lbguard.io/v1alpha1 LBGuardException"
                ));
                continue;
            }
        };
        if let Some(t) = e.expires().filter(|t| *t <= now) {
            out.notes.push(format!(
                "{origin}: LBGuardException {} expired at {}; it covers nothing",
                e.key(),
                format_time(t)
            ));
            continue;
        }
        let found = problems(&e, config, now);
        if found.is_empty() {
            valid.push(e);
        } else {
            out.errors.push(format!(
                "{origin}: LBGuardException {} is not valid: {}",
                e.key(),
                found.join("; ")
            ));
        }
    }
    out.exceptions = valid.into();
    out
}
