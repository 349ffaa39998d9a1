//! What can go wrong reading a config file.

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("config file {path} is invalid:\n  - {}", problems.join("\n  - "))]
    Invalid { path: String, problems: Vec<String> },
}
