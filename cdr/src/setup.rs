//! What `check` and `explore` run on: a preset or a config file, and a variant. One place turns
//! the command-line choice into a model and into the command line that reproduces it.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::config::FlinkFix;
use recovery_model::presets::{find_preset, preset_names};
use recovery_model::properties::PropertyId;
use recovery_model::{ModelConfig, RecoveryModel, Variant};
use stateright::Expectation;
use std::path::{Path, PathBuf};

/// A configuration chosen on the command line, ready to check or explore.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The preset name, or the config file's path, for reports.
    pub label: String,
    /// The preset, when the configuration is one.
    pub preset: Option<&'static str>,
    /// The config file, when the configuration came from one.
    pub config_file: Option<PathBuf>,
    /// The model of that configuration and variant.
    pub model: RecoveryModel,
    /// `sometimes` properties this configuration cannot reach by design.
    pub unreachable: Vec<PropertyId>,
}

/// A config file: a bare `ModelConfig`, or `{"config": ModelConfig, "unreachable": [...]}`
/// (the shape of an entry of `cdr presets --json`), whose `unreachable` names the `sometimes`
/// properties the configuration cannot reach by design.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ConfigFile {
    Declared(DeclaredConfig),
    Bare(ModelConfig),
}

#[derive(serde::Deserialize)]
struct DeclaredConfig {
    config: ModelConfig,
    #[serde(default)]
    unreachable: Vec<String>,
    // The other fields of a `presets --json` entry are labels.
    #[serde(default)]
    #[allow(dead_code)]
    name: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    summary: Option<String>,
}

/// The `sometimes` property named `name`, listing the valid names when it is not one.
fn sometimes_property(name: &str) -> Result<PropertyId, String> {
    PropertyId::from_name(name)
        .filter(|p| p.expectation() == Expectation::Sometimes)
        .ok_or_else(|| {
            let known: Vec<&str> = PropertyId::with_expectation(Expectation::Sometimes)
                .map(PropertyId::name)
                .collect();
            format!("`{name}` is not a sometimes property; they are: {}", known.join(", "))
        })
}

/// The largest config file `--config` reads. A configuration is a few channels with a few
/// upstream elements each, a few hundred bytes of JSON; one a thousand times larger would have
/// a state space far beyond any check, so a larger file is a wrong file (`/dev/zero`, a log).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn read_config(path: &Path) -> Result<(ModelConfig, Vec<PropertyId>), String> {
    let text = conformance::bounded::read_file(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        conformance::bounded::FileError::TooLarge { .. } => {
            format!("{e}; config files larger than {MAX_CONFIG_BYTES} bytes are refused")
        }
        e => e.to_string(),
    })?;
    // Parsed as a bare config first, so that its field errors are the ones reported.
    if let Ok(cfg) = serde_json::from_str::<ModelConfig>(&text) {
        return Ok((cfg, Vec::new()));
    }
    match serde_json::from_str::<ConfigFile>(&text) {
        Ok(ConfigFile::Declared(d)) => {
            let unreachable = d
                .unreachable
                .iter()
                .map(|n| sometimes_property(n))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: unreachable: {e}", path.display()))?;
            Ok((d.config, unreachable))
        }
        Ok(ConfigFile::Bare(cfg)) => Ok((cfg, Vec::new())),
        Err(_) => {
            let e = serde_json::from_str::<ModelConfig>(&text).expect_err("not a bare config");
            Err(format!("{} is not a valid ModelConfig: {e}", path.display()))
        }
    }
}

/// Parses a kebab-case variant name, listing the known ones when it is not one.
pub fn parse_variant(name: &str) -> Result<Variant, String> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        format!("unknown variant `{name}`; known variants: fixed, {}", known.join(", "))
    })
}

/// The configuration to run: `config` if given, else `preset`, else the variant's bug-zoo
/// preset, else `ci`. Errors are usage errors, worded for the command line.
pub fn load(preset: Option<&str>, config: Option<&Path>, variant: &str) -> Result<Setup, String> {
    let variant = parse_variant(variant)?;
    let (label, preset, config_file, cfg, unreachable) = match config {
        Some(path) => {
            let (cfg, unreachable) = read_config(path)?;
            (
                path.display().to_string(),
                None,
                Some(path.to_path_buf()),
                cfg,
                unreachable,
            )
        }
        None => {
            let name = match (preset, variant.info()) {
                (Some(p), _) => p,
                (None, Some(info)) => info.preset,
                (None, None) => "ci",
            };
            let p = find_preset(name)
                .ok_or_else(|| format!("unknown preset `{name}`; known presets: {}", preset_names().join(", ")))?;
            (
                name.to_string(),
                Some(p.name),
                None,
                (p.config)(),
                p.unreachable.to_vec(),
            )
        }
    };
    cfg.validate().map_err(|e| format!("{label}: {e}"))?;
    Ok(Setup {
        label,
        preset,
        config_file,
        model: RecoveryModel::new(cfg, variant),
        unreachable,
    })
}

/// The fixes named by `--flink-fix` (each a fix's name, or `all`), in docs/findings.md's order.
pub fn parse_fixes(names: &[String]) -> Result<Vec<FlinkFix>, String> {
    let mut fixes = Vec::new();
    for name in names {
        if name == "all" {
            fixes.extend(FlinkFix::ALL);
        } else {
            fixes.push(FlinkFix::parse(name)?);
        }
    }
    fixes.sort();
    fixes.dedup();
    Ok(fixes)
}

impl Setup {
    /// This setup with `fixes` added to its configuration's (`--flink-fix`).
    pub fn with_fixes(mut self, fixes: &[FlinkFix]) -> Result<Setup, String> {
        if fixes.is_empty() {
            return Ok(self);
        }
        let mut cfg = self.model.cfg.clone();
        cfg.flink_fixes.extend_from_slice(fixes);
        cfg.flink_fixes.sort();
        cfg.flink_fixes.dedup();
        cfg.validate().map_err(|e| format!("{}: {e}", self.label))?;
        self.model = RecoveryModel::new(cfg, self.model.variant);
        Ok(self)
    }

    /// `cdr SUBCOMMAND --preset P --variant V` (or `--config FILE`): the command that runs
    /// this configuration again.
    pub fn command(&self, subcommand: &str) -> String {
        let mut cmd = format!("cdr {subcommand}");
        match (&self.config_file, self.preset) {
            (Some(file), _) => cmd.push_str(&format!(" --config {}", file.display())),
            (None, Some(p)) => cmd.push_str(&format!(" --preset {p}")),
            (None, None) => {}
        }
        if self.model.variant != Variant::Fixed {
            cmd.push_str(&format!(" --variant {}", self.model.variant.name()));
        }
        // A config file carries its own fixes.
        if self.config_file.is_none() {
            if self.model.cfg.flink_fixes == FlinkFix::ALL {
                cmd.push_str(" --flink-fix all");
            } else {
                for f in &self.model.cfg.flink_fixes {
                    cmd.push_str(&format!(" --flink-fix {}", f.name()));
                }
            }
        }
        cmd
    }
}
