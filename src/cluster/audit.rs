//! Audit.
