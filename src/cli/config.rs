//! `lbguard config --defaults`: the config every key of which is at its default, as YAML, so
//! the configuration reference's defaults come from the binary instead of being written by hand.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// Print the config with every key at its default value (what an empty file means).
    #[arg(long)]
    pub defaults: bool,
}

/// The defaults as YAML; the same text an empty config file stands for.
pub fn defaults_yaml() -> Result<String, String> {
    // Through a JSON value, so the keys come out in the struct's order, camelCase as read.
    let value =
        serde_json::to_value(crate::config::Config::default()).map_err(|e| e.to_string())?;
    serde_saphyr::to_string(&value).map_err(|e| e.to_string())
}

pub fn run(args: ConfigArgs) -> ExitCode {
    if !args.defaults {
        eprintln!("lbguard config: say what to print (--defaults)");
        return ExitCode::from(2);
    }
    match defaults_yaml() {
        Ok(text) => {
            out!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lbguard config: cannot print the defaults: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::defaults_yaml;

    /// The printed defaults read back as the defaults, and differ from a changed config.
    #[test]
    fn the_defaults_read_back_as_the_defaults() {
        let text = defaults_yaml().unwrap();
        let read = crate::engine::parse_config(&text, "defaults").unwrap();
        let empty = crate::engine::parse_config("", "empty").unwrap();
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&empty).unwrap()
        );
        assert!(text.contains("deletionProtection:"), "{text}");
    }
}
