//! The formats `lbguard check` writes its findings in.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `file:line:col: deny [rule] message`, the compiler style editors jump to.
    Text,
    /// One JSON document: each object's verdict, violations, defaults (a JSON Patch) and
    /// warnings, then a summary.
    Json,
    /// SARIF 2.1.0, for code scanning in pull requests.
    Sarif,
    /// JUnit XML, for CI systems that show test reports.
    Junit,
    /// GitHub Actions workflow commands: an annotation per finding on its file and line.
    Github,
    /// Markdown: the counts and a table of findings (a GitHub job's step summary).
    Markdown,
}
