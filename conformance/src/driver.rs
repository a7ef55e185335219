//! The [`Driver`] trait: something that performs the model's actions one at a time and shows
//! what a caller sees and an abstract snapshot. [`ModelDriver`] is the model itself behind this
//! interface (it must reproduce its own recorded observations);
//! [`ImplDriver`](crate::impl_driver::ImplDriver) drives `recovery-impl`.

use crate::observation::{Observation, Snapshot};
use crate::projection::{model_observation, model_snapshot};
use recovery_model::{Action, RecoveryModel, State};
use stateright::Model;

/// A system that replays model actions.
///
/// A driver starts in the state that corresponds to the model's initial state; `reset` brings
/// it back there. Implement it for another implementation by mapping each [`Action`] to the
/// calls its threads make (docs/conformance.md shows how).
pub trait Driver {
    /// A short name for reports (`model`, `impl`).
    fn name(&self) -> &str;
    /// Back to the initial state.
    fn reset(&mut self);
    /// Performs one action and returns what a caller sees.
    fn apply(&mut self, action: &Action) -> Observation;
    /// The abstract state now.
    fn snapshot(&mut self) -> Snapshot;
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

    fn reset(&mut self) {
        self.state = self.model.init_states().remove(0);
    }

    fn apply(&mut self, action: &Action) -> Observation {
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

    fn snapshot(&mut self) -> Snapshot {
        model_snapshot(&self.model, &self.state)
    }
}
