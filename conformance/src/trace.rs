//! The trace format: a versioned JSON file naming the model, its configuration and variant, the
//! model's actions, and per step the observation and abstract snapshot the model predicts.
//!
//! A trace converts to and from a stateright [`Path`]; its action indices form the Explorer
//! link (`#/steps/` + `path.encode(model)`). Reading a trace of another format version, of
//! another model, with an unknown preset or variant, or with an action that is not enabled,
//! fails with a [`TraceError`], never a panic.

use crate::driver::ModelDriver;
use crate::observation::{Observation, Snapshot};
use recovery_model::state::NetBuf;
use recovery_model::{Action, ModelConfig, RecoveryModel, State, Variant, preset};
use serde::{Deserialize, Serialize};
use stateright::{Model, Path};

/// The version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 5;

/// The model every trace is of.
pub const MODEL_NAME: &str = "channel-recovery";

/// One step: the action and what the model predicts after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The model action, as the model's `Action` serializes.
    pub action: Action,
    /// What a caller sees.
    pub observation: Observation,
    /// The abstract state after the step.
    pub snapshot: Snapshot,
}

/// A trace file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// [`MODEL_NAME`].
    pub model: String,
    /// The preset the configuration came from, if any (a label; `config` is authoritative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The full configuration; if absent, the preset's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ModelConfig>,
    /// The variant (kebab-case; `fixed` is the protocol as merged).
    pub variant: String,
    /// The seed of the walk that produced it, if random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Why this trace exists (a regression, a counterexample, an edge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Explorer fragment opening the last state: `#/steps/0/3/1/...`.
    pub explorer: String,
    /// The steps.
    pub steps: Vec<Step>,
}

/// Why a trace cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// Not JSON, or not shaped like a trace.
    #[error("not a valid trace: {0}")]
    Malformed(String),
    /// Written by another version of this format.
    #[error("trace format version {found} is not supported (this build reads version {expected})")]
    WrongVersion {
        /// What the file says.
        found: String,
        /// [`FORMAT_VERSION`].
        expected: u32,
    },
    /// A trace of another model.
    #[error("trace is of model `{found}`, not `{MODEL_NAME}`")]
    WrongModel {
        /// What the file says.
        found: String,
    },
    /// Neither a configuration nor a known preset.
    #[error("unknown preset `{0}` and no config in the trace")]
    UnknownPreset(String),
    /// The configuration is outside the model's bounds.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// Not a variant of the model.
    #[error("unknown variant `{0}`")]
    UnknownVariant(String),
    /// An action the model does not allow at that point.
    #[error("step {step}: {action} is not enabled; enabled are: {enabled}")]
    NotEnabled {
        /// 1-based step number.
        step: usize,
        /// The action, readable.
        action: String,
        /// The enabled actions, readable.
        enabled: String,
    },
    /// An index in an action that the configuration does not have (a channel, a checkpoint,
    /// a buffer).
    #[error("step {step}: {field} {value} is out of range ({limit})")]
    BadIndex {
        /// 1-based step number.
        step: usize,
        /// Which field of the action.
        field: &'static str,
        /// What the file says.
        value: u32,
        /// What the configuration allows, in words.
        limit: String,
    },
    /// The file is larger than a trace can sensibly be.
    #[error("{path} is more than {max} bytes ({size} read); traces larger than {max} bytes are refused")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size, or what was read of it before the limit (a pipe or a device has no size).
        size: u64,
        /// [`MAX_TRACE_BYTES`].
        max: u64,
    },
    /// The file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// The largest trace file `Trace::read` accepts. A trace is one path of the model: even the
/// largest presets' longest paths are a few hundred steps (a few MB of JSON).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// The text of a trace file, at most [`MAX_TRACE_BYTES`]. The limit holds for what is read, not
/// for the size the file system reports: a pipe or a device (`/dev/urandom`) reports none, and
/// is read up to one byte past the limit.
pub fn read_trace_text(path: &std::path::Path) -> Result<String, TraceError> {
    crate::bounded::read_file(path, MAX_TRACE_BYTES).map_err(|e| match e {
        crate::bounded::FileError::TooLarge { path, read, max } => TraceError::TooLarge { path, size: read, max },
        e => TraceError::Io(e.to_string()),
    })
}

/// Checks every index an action carries against `cfg`, so that no later step (the model's
/// successor function, the readable form of an action) indexes past the configuration.
pub fn check_indices(cfg: &ModelConfig, actions: &[Action]) -> Result<(), TraceError> {
    let channels = cfg.channels.len();
    for (i, a) in actions.iter().enumerate() {
        let bad = |field, value: u32, limit: String| TraceError::BadIndex {
            step: i + 1,
            field,
            value,
            limit,
        };
        let Some(c) = a.channel() else { continue };
        if c as usize >= channels {
            return Err(bad(
                "channel",
                c.into(),
                format!("the configuration has {channels} channels"),
            ));
        }
        let ch = &cfg.channels[c as usize];
        match *a {
            Action::InsertRecoveryCheckpointBarrier { cp, .. }
            | Action::CheckpointStarted { cp, .. }
            | Action::EmitCheckpointBarrier { cp, .. }
                if cp == 0 || cp > cfg.checkpoints =>
            {
                return Err(bad("cp", cp.into(), format!("checkpoints are 1..={}", cfg.checkpoints)));
            }
            Action::Recycle { buffer, .. } | Action::ReturnFloatingBuffer { buffer, .. } => {
                let (id, max, kind) = match buffer {
                    NetBuf::Exclusive(id) => (id, ch.exclusive, "exclusive"),
                    NetBuf::Floating(id) => (id, ch.floating, "floating"),
                };
                if id >= max {
                    return Err(bad(
                        "buffer",
                        id.into(),
                        format!("channel {c} has {max} {kind} buffers"),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `#/steps/` followed by the Explorer's action indices of `actions` from the initial state.
pub fn explorer_fragment(model: &RecoveryModel, actions: &[Action]) -> Result<String, TraceError> {
    Ok(format!("#/steps/{}", to_path(model, actions)?.encode(model)))
}

/// The Explorer page of `actions` on a server at `base` (`http://127.0.0.1:3000/`): the deep
/// link that opens on the path's last state.
pub fn deep_link(model: &RecoveryModel, actions: &[Action], base: &str) -> Result<String, String> {
    let fragment = explorer_fragment(model, actions).map_err(|e| e.to_string())?;
    Ok(format!("{base}{fragment}"))
}

/// The stateright path of `actions`, or the first step that is not enabled.
pub fn to_path(model: &RecoveryModel, actions: &[Action]) -> Result<Path<State, Action>, TraceError> {
    let init = model.init_states().remove(0);
    if let Some(path) = Path::from_actions(model, init.clone(), actions) {
        return Ok(path);
    }
    // Find the step that fails, for the message.
    let mut state = init;
    for (i, a) in actions.iter().enumerate() {
        let mut enabled = Vec::new();
        model.actions(&state, &mut enabled);
        match enabled.contains(a).then(|| model.next_state(&state, *a)).flatten() {
            Some(next) => state = next,
            None => {
                return Err(TraceError::NotEnabled {
                    step: i + 1,
                    action: model.format_action(a).split_whitespace().collect::<Vec<_>>().join(" "),
                    enabled: enabled
                        .iter()
                        .map(|a| model.format_action(a).split_whitespace().collect::<Vec<_>>().join(" "))
                        .collect::<Vec<_>>()
                        .join("; "),
                });
            }
        }
    }
    Err(TraceError::Malformed("stateright rejected the path".into()))
}

impl Trace {
    /// Records what the model predicts along `actions` (which must all be enabled).
    pub fn record(model: &RecoveryModel, preset: Option<&str>, actions: &[Action]) -> Result<Trace, TraceError> {
        let explorer = explorer_fragment(model, actions)?;
        let mut driver = ModelDriver::new(model.clone());
        let steps = actions
            .iter()
            .map(|a| {
                let observation = driver.step(a);
                Step {
                    action: *a,
                    observation,
                    snapshot: driver.predicted_snapshot(),
                }
            })
            .collect();
        Ok(Trace {
            format_version: FORMAT_VERSION,
            model: MODEL_NAME.to_string(),
            preset: preset.map(str::to_string),
            config: Some(model.cfg.clone()),
            variant: model.variant.name().to_string(),
            seed: None,
            reason: None,
            explorer,
            steps,
        })
    }

    /// Records the model's predictions along a stateright path.
    pub fn from_path(
        model: &RecoveryModel,
        preset: Option<&str>,
        path: Path<State, Action>,
    ) -> Result<Trace, TraceError> {
        Trace::record(model, preset, &path.into_actions())
    }

    /// The actions, in order.
    pub fn actions(&self) -> Vec<Action> {
        self.steps.iter().map(|s| s.action).collect()
    }

    /// The model this trace is of (configuration and variant checked).
    pub fn model(&self) -> Result<RecoveryModel, TraceError> {
        let cfg = match (&self.config, &self.preset) {
            (Some(cfg), _) => cfg.clone(),
            (None, Some(name)) => preset(name).ok_or_else(|| TraceError::UnknownPreset(name.clone()))?,
            (None, None) => return Err(TraceError::Malformed("neither `config` nor `preset`".into())),
        };
        cfg.validate().map_err(TraceError::InvalidConfig)?;
        let variant =
            Variant::from_name(&self.variant).ok_or_else(|| TraceError::UnknownVariant(self.variant.clone()))?;
        Ok(RecoveryModel::new(cfg, variant))
    }

    /// The stateright path of this trace (every action enabled).
    pub fn to_path(&self) -> Result<Path<State, Action>, TraceError> {
        let model = self.model()?;
        let actions = self.actions();
        check_indices(&model.cfg, &actions)?;
        to_path(&model, &actions)
    }

    /// Parses and checks a trace: version and model first (so that another version's shape
    /// gives a version error, not a field error), then the shape, then every action.
    pub fn from_json(text: &str) -> Result<Trace, TraceError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| TraceError::Malformed(e.to_string()))?;
        match value.get("format_version") {
            Some(v) if v.as_u64() == Some(FORMAT_VERSION as u64) => {}
            Some(v) => {
                return Err(TraceError::WrongVersion {
                    found: v.to_string(),
                    expected: FORMAT_VERSION,
                });
            }
            None => return Err(TraceError::Malformed("no `format_version`".into())),
        }
        match value.get("model").and_then(|m| m.as_str()) {
            Some(MODEL_NAME) => {}
            other => {
                return Err(TraceError::WrongModel {
                    found: other.map_or_else(|| "(none)".to_string(), str::to_string),
                });
            }
        }
        let trace: Trace = serde_json::from_value(value).map_err(|e| TraceError::Malformed(e.to_string()))?;
        trace.to_path()?;
        Ok(trace)
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace serializes")
    }

    /// Reads and checks a trace file (at most [`MAX_TRACE_BYTES`]).
    pub fn read(path: &std::path::Path) -> Result<Trace, TraceError> {
        Trace::from_json(&read_trace_text(path)?)
    }

    /// Writes the trace as pretty JSON.
    /// Its directory must exist: a mistyped path is an error, not a new directory.
    pub fn write(&self, path: &std::path::Path) -> Result<(), TraceError> {
        std::fs::write(path, self.to_json() + "\n")
            .map_err(|e| TraceError::Io(format!("cannot write {}: {e}", path.display())))
    }
}
