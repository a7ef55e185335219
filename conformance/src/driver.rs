//! The [`Driver`] trait: something that performs the model's actions one at a time and shows
//! what a caller sees and an abstract snapshot. [`ModelDriver`] is the model itself behind this
//! interface (it must reproduce its own recorded observations);
//! [`ImplDriver`](crate::impl_driver::ImplDriver) drives `recovery-impl`.

use crate::observation::{Observation, Snapshot};
use crate::projection::{model_observation, model_snapshot};
use recovery_model::{Action, RecoveryModel, State};
use stateright::Model;
use std::fmt;

/// Why a driver could not answer a step. Neither is a divergence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverError {
    /// The driver cannot realise this step (or configuration): coverage lost, not a finding.
    Unsupported {
        /// Why, in the driver's words.
        reason: String,
    },
    /// The harness failed: a call that neither returned nor parked before the watchdog, a
    /// driver process that died or broke the protocol. The run stops (exit 2).
    Harness {
        /// What happened, with every thread's position where known.
        message: String,
    },
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Unsupported { reason } => write!(f, "unsupported: {reason}"),
            DriverError::Harness { message } => write!(f, "harness error: {message}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// A [`DriverError::Harness`] with `message`.
pub(crate) fn harness(message: impl Into<String>) -> DriverError {
    DriverError::Harness {
        message: message.into(),
    }
}

/// A system that replays model actions.
///
/// A driver starts in the state that corresponds to the model's initial state; `reset` brings
/// it back there. Implement it for another implementation by mapping each [`Action`] to the
/// calls its threads make (docs/conformance.md shows how), or answer the driver protocol from
/// another process (docs/driver-protocol.md).
pub trait Driver {
    /// A short name for reports (`model`, `impl`, `flink-2.3.0`).
    fn name(&self) -> &str;
    /// Back to the initial state.
    fn reset(&mut self) -> Result<(), DriverError>;
    /// Performs one action and returns what a caller sees.
    fn apply(&mut self, action: &Action) -> Result<Observation, DriverError>;
    /// The abstract state now.
    fn snapshot(&mut self) -> Result<Snapshot, DriverError>;
    /// Snapshot fields this driver cannot read, as JSON Pointers with `*` for any index or key
    /// (docs/driver-protocol.md). They are left out of the comparison on both sides.
    fn unobserved(&self) -> &[String] {
        &[]
    }
    /// Told the calls [`lockstep`](crate::replay::lockstep) is about to make for one trace (a
    /// reset, then each action, with a snapshot after each step from `snapshots_from` on), a
    /// driver in another process may send them all at once instead of waiting for each answer.
    /// Returns whether it did; the calls then read the answers in order. Default: no.
    fn send_ahead(&mut self, _actions: &[Action], _snapshots_from: usize) -> Result<bool, DriverError> {
        Ok(false)
    }
    /// Drops whatever was sent ahead and not yet answered, leaving the driver ready for a
    /// `reset`: after a trace stopped early, the steps sent ahead of where it stopped are void.
    fn discard_sent_ahead(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
}

/// The model as a driver: `next_state` and the projections of [`crate::projection`].
#[derive(Clone, Debug)]
pub struct ModelDriver {
    model: RecoveryModel,
    state: State,
}

impl ModelDriver {
    /// A driver at the initial state of `model`.
    pub fn new(model: RecoveryModel) -> Self {
        let state = model.init_states().remove(0);
        ModelDriver { model, state }
    }

    /// The model.
    pub fn model(&self) -> &RecoveryModel {
        &self.model
    }

    /// The current state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Performs `action` and returns the observation the model predicts (the model never fails
    /// as a driver: an action it does not enable is `unperformable`).
    pub fn step(&mut self, action: &Action) -> Observation {
        if !self.enabled().contains(action) {
            return Observation::Unperformable {
                reason: format!("{action:?} is not enabled in the model"),
            };
        }
        let Some(next) = self.model.next_state(&self.state, *action) else {
            return Observation::Unperformable {
                reason: format!("{action:?} has no successor in the model"),
            };
        };
        let observation = model_observation(&self.model, &self.state, action, &next);
        self.state = next;
        observation
    }

    /// The snapshot the model predicts now.
    pub fn predicted_snapshot(&self) -> Snapshot {
        model_snapshot(&self.model, &self.state)
    }

    /// Back to the initial state.
    pub fn restart(&mut self) {
        self.state = self.model.init_states().remove(0);
    }

    /// The actions enabled now, in the model's order (Explorer indices).
    pub fn enabled(&self) -> Vec<Action> {
        let mut out = Vec::new();
        self.model.actions(&self.state, &mut out);
        out
    }
}

impl Driver for ModelDriver {
    fn name(&self) -> &str {
        "model"
    }

    fn reset(&mut self) -> Result<(), DriverError> {
        self.state = self.model.init_states().remove(0);
        Ok(())
    }

    fn apply(&mut self, action: &Action) -> Result<Observation, DriverError> {
        Ok(self.step(action))
    }

    fn snapshot(&mut self) -> Result<Snapshot, DriverError> {
        Ok(self.predicted_snapshot())
    }
}
