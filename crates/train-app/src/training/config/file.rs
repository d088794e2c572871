//! `--config` files and a run's `config.json`: a TOML or JSON table whose keys are the `train`
//! flags' names without `--`, with dashes or underscores (`weight-decay` and `weight_decay` are
//! the same key). The keys of older runs' files are read too (`conv` for `model`, `gat_heads`,
//! `gat_attention_dropout`, `gin_half_safe_lambda`, `artifact_dir`, `linear_io`). A key that is
//! not an option, and two keys that set the same option, are errors naming the keys.

use crate::error::{AppError, Result};
use std::path::Path;

/// Keys of older runs' files and the option each sets now.
const OLDER_KEYS: [(&str, &str); 6] = [
    ("conv", "model"),
    ("gat_heads", "heads"),
    ("gat_attention_dropout", "attention_dropout"),
    ("gin_half_safe_lambda", "gin_lambda"),
    ("artifact_dir", "out"),
    ("linear_io", "architecture"),
];

/// `train` flags that are not training options: they are given on the command line only.
const COMMAND_LINE_ONLY: [&str; 17] = [
    "config",
    "backend",
    "resume",
    "memory_budget",
    "dry_run",
    "devices",
    "parts",
    "partition",
    "partition_cache",
    "boundary_sampling",
    "halo_layout",
    "processes",
    "rank",
    "world",
    "rendezvous",
    "rendezvous_timeout",
    "rank_transport",
];

/// Reads the table of a TOML or JSON config file (by extension) with its keys as the options'
/// names (`keys`: the options, see [`super::config_keys`]): dashes read as underscores, older
/// keys translated. Refuses a key that is not an option and two keys for one option.
pub fn read_table(path: &Path, keys: &[String]) -> Result<serde_json::Value> {
    let mut text = String::new();
    // a regular file of at most 1 MiB (a FIFO or a huge file is refused, not read forever)
    let file = crate::npyio::open_regular(path, "a TOML or JSON config file")?;
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 1 << 20), &mut text)
        .map_err(|e| AppError::io(path, e))?;
    let fmt = |msg: String| AppError::Format { path: path.into(), msg };
    let value: serde_json::Value = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text).map_err(|e| fmt(e.to_string()))?,
        Some("toml") => toml::from_str(&text).map_err(|e| fmt(e.to_string()))?,
        _ => return Err(fmt("config files must end in .toml or .json".into())),
    };
    let serde_json::Value::Object(map) = value else {
        return Err(fmt("expected a table of options".into()));
    };
    normalise(map, keys).map(serde_json::Value::Object).map_err(fmt)
}

/// The table with every key spelled as its option's name; the message of the first key that is
/// not an option or that sets an option set before.
fn normalise(
    map: serde_json::Map<String, serde_json::Value>,
    keys: &[String],
) -> std::result::Result<serde_json::Map<String, serde_json::Value>, String> {
    let mut out = serde_json::Map::new();
    // the key as written in the file, per option
    let mut written: Vec<(String, String)> = Vec::new();
    for (key, mut value) in map {
        let plain = key.replace('-', "_");
        let option = OLDER_KEYS.iter().find(|(old, _)| *old == plain).map_or(plain.as_str(), |(_, new)| new);
        if !keys.iter().any(|k| k == option) {
            let flag = format!("--{}", plain.replace('_', "-"));
            return Err(if COMMAND_LINE_ONLY.contains(&plain.as_str()) {
                format!("`{key}` is not read from config files: give {flag} on the command line")
            } else {
                format!(
                    "`{key}` is not a training option; the keys are the train flags' names without `--`, \
                     with dashes or underscores: {}",
                    keys.join(", ")
                )
            });
        }
        if let Some((_, first)) = written.iter().find(|(o, _)| o == option) {
            return Err(format!("`{first}` and `{key}` both set the option `{option}`: keep one of them"));
        }
        if plain == "linear_io" {
            value = match value.as_bool() {
                Some(true) => "linear-io".into(),
                Some(false) => "classic".into(),
                None => return Err(format!("`{key}` must be true or false (or use `architecture`)")),
            };
        }
        written.push((option.to_string(), key.clone()));
        out.insert(option.to_string(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<String> {
        ["model", "weight_decay", "heads", "architecture", "out"].iter().map(|k| k.to_string()).collect()
    }

    fn table(pairs: &[(&str, serde_json::Value)]) -> serde_json::Map<String, serde_json::Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn dashes_read_as_underscores_and_older_keys_as_their_options() {
        let t = normalise(
            table(&[("weight-decay", 5e-4.into()), ("gat-heads", 8.into()), ("linear_io", true.into())]),
            &keys(),
        )
        .unwrap();
        assert_eq!(t.get("weight_decay"), Some(&serde_json::json!(5e-4)));
        assert_eq!(t.get("heads"), Some(&serde_json::json!(8)));
        assert_eq!(t.get("architecture"), Some(&serde_json::json!("linear-io")));
    }

    #[test]
    fn two_keys_for_one_option_and_unknown_keys_are_refused() {
        let e = normalise(table(&[("conv", "sage".into()), ("model", "gcn".into())]), &keys()).unwrap_err();
        assert!(e.contains("`conv` and `model` both set the option `model`"), "{e}");
        let e = normalise(table(&[("weight-decay", 0.1.into()), ("weight_decay", 0.2.into())]), &keys()).unwrap_err();
        assert!(e.contains("both set the option `weight_decay`"), "{e}");
        let e = normalise(table(&[("weight-decy", 0.1.into())]), &keys()).unwrap_err();
        assert!(e.contains("`weight-decy` is not a training option") && e.contains("weight_decay"), "{e}");
        let e = normalise(table(&[("backend", "cpu".into())]), &keys()).unwrap_err();
        assert!(e.contains("give --backend on the command line"), "{e}");
    }
}
