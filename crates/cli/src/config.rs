//! `ctxgraph.toml`: the settings of `ctxgraph serve` from a file, under the command line and the
//! environment (a flag or variable given wins over the file, the file over the defaults).
//!
//! ```toml
//! [serve]
//! data = "/var/lib/ctxgraph"
//! addr = "127.0.0.1:8377"
//! max_question_chars = 4096
//! max_question_words = 256
//! request_timeout = 30      # seconds
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

/// The file read when `--config` is not given, from the working directory, when it exists.
pub(crate) const DEFAULT_CONFIG: &str = "ctxgraph.toml";

/// A configuration file. Unknown tables and keys are refused: a misspelt key would otherwise be
/// silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Settings of `ctxgraph serve`.
    #[serde(default)]
    pub(crate) serve: ServeConfig,
}

/// The `[serve]` table: each key is the flag of the same name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeConfig {
    pub(crate) data: Option<PathBuf>,
    pub(crate) addr: Option<String>,
    pub(crate) max_question_chars: Option<usize>,
    pub(crate) max_question_words: Option<usize>,
    pub(crate) request_timeout: Option<u64>,
    pub(crate) no_auto_link: Option<bool>,
    pub(crate) read_nice: Option<u8>,
    pub(crate) readers: Option<u16>,
}

impl Config {
    /// The file `explicit` names (it must exist), else `ctxgraph.toml` in the working directory
    /// when it exists, else no settings.
    pub(crate) fn load(explicit: Option<&Path>) -> anyhow::Result<Config> {
        let path = explicit.unwrap_or(Path::new(DEFAULT_CONFIG));
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if explicit.is_none() && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config::default());
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("reading the configuration {}", path.display()));
            }
        };
        let config: Config = toml::from_str(&text)
            .with_context(|| format!("reading the configuration {}", path.display()))?;
        for (key, value) in [
            ("max_question_chars", config.serve.max_question_chars.map(|v| v as u64)),
            ("max_question_words", config.serve.max_question_words.map(|v| v as u64)),
            ("request_timeout", config.serve.request_timeout),
        ] {
            anyhow::ensure!(
                value != Some(0),
                "{}: serve.{key} must be at least 1 (value: 0)",
                path.display()
            );
        }
        let most = ctxgraph_server::MAX_READERS;
        if let Some(n) = config.serve.readers.filter(|n| !(1..=most).contains(&usize::from(*n))) {
            anyhow::bail!("{}: serve.readers must be 1 to {most} (value: {n})", path.display());
        }
        if let Some(nice) = config.serve.read_nice.filter(|n| *n > 19) {
            anyhow::bail!("{}: serve.read_nice must be 0 to 19 (value: {nice})", path.display());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn a_file_is_read_and_a_misspelt_key_refused() {
        let dir = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[serve]\naddr = \"127.0.0.1:0\"\nrequest_timeout = 5\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let c = Config::load(Some(&path)).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.serve.addr.as_deref(), Some("127.0.0.1:0"));
        assert_eq!(c.serve.request_timeout, Some(5));
        std::fs::write(&path, "[serve]\nadress = \"x\"\n").unwrap_or_else(|e| panic!("{e}"));
        let err = format!("{:#}", Config::load(Some(&path)).err().unwrap_or_else(|| panic!()));
        assert!(err.contains("unknown field `adress`"), "{err}");
        std::fs::write(&path, "[serve]\nrequest_timeout = 0\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(Config::load(Some(&path)).is_err());
        std::fs::write(&path, "[serve]\nread_nice = 0\n").unwrap_or_else(|e| panic!("{e}"));
        let c = Config::load(Some(&path)).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.serve.read_nice, Some(0));
        std::fs::write(&path, "[serve]\nread_nice = 20\n").unwrap_or_else(|e| panic!("{e}"));
        let err = format!("{:#}", Config::load(Some(&path)).err().unwrap_or_else(|| panic!()));
        assert!(err.contains("serve.read_nice must be 0 to 19 (value: 20)"), "{err}");
        std::fs::write(&path, "[serve]\nreaders = 3\n").unwrap_or_else(|e| panic!("{e}"));
        let c = Config::load(Some(&path)).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.serve.readers, Some(3));
        std::fs::write(&path, "[serve]\nreaders = 0\n").unwrap_or_else(|e| panic!("{e}"));
        let err = format!("{:#}", Config::load(Some(&path)).err().unwrap_or_else(|| panic!()));
        assert!(err.contains("serve.readers must be 1 to 64 (value: 0)"), "{err}");
        assert!(Config::load(Some(&dir.path().join("missing.toml"))).is_err());
    }
}
