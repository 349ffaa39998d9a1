//! Reading a config file: the text, the YAML, and every problem found at once.

use std::path::Path;

use super::Config;
use super::error::ConfigError;

impl Config {
    /// The text of a config file.
    pub fn read(path: &Path) -> Result<String, ConfigError> {
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })
    }

    /// Parses and checks a config, listing every problem at once (rule ids aside: see
    /// `engine::parse_config`).
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let config = Self::from_yaml(text, path)?;
        let problems = config.problems();
        config.unless(problems, path)
    }

    /// The config, or every problem found in it.
    pub fn unless(self, problems: Vec<String>, path: &str) -> Result<Self, ConfigError> {
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(ConfigError::Invalid {
                path: path.to_string(),
                problems,
            })
        }
    }

    /// Parses a config without checking what serde cannot see.
    pub fn from_yaml(text: &str, path: &str) -> Result<Self, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        crate::vocab::yaml::from_str(text).map_err(|message| ConfigError::Parse {
            path: path.to_string(),
            message,
        })
    }
}
