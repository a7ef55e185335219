//! The protocol as stateright's `Model`, for the checker, the simulator and the Explorer:
//! [`RecoveryModel`]'s own initial state, actions and step, with the properties, the words
//! and the pictures of the tooling.

use crate::action::Action;
use crate::model::RecoveryModel;
use crate::properties::{self, PropertyId};
use crate::state::State;
use crate::tooling::format;
use crate::tooling::svg::{self, ExplorerNote};
use stateright::{Model, Property};

impl Model for RecoveryModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.enabled_actions(s, out);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        Some(self.next(last, action))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }

    fn format_action(&self, action: &Action) -> String {
        format::action(self, action)
    }

    fn format_step(&self, last_state: &State, action: Action) -> Option<String> {
        format::step_outcome(self, last_state, &action)
    }

    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        svg::of_path(self, path, &[])
    }
}

/// The model the Explorer serves: the protocol as it is, and the notes its picture of an
/// initial state shows. Its states, actions and paths are the protocol's, so a link into
/// one is a link into the other.
#[derive(Clone, Debug)]
pub struct ExplorerModel {
    /// The protocol.
    pub model: RecoveryModel,
    /// The notes.
    pub notes: Vec<ExplorerNote>,
}

impl AsRef<RecoveryModel> for ExplorerModel {
    fn as_ref(&self) -> &RecoveryModel {
        &self.model
    }
}

impl Model for ExplorerModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.model.init_states()
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.model.enabled_actions(s, out);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        Some(self.model.next(last, action))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        PropertyId::ALL.iter().map(|p| p.property_of()).collect()
    }

    fn format_action(&self, action: &Action) -> String {
        self.model.format_action(action)
    }

    fn format_step(&self, last_state: &State, action: Action) -> Option<String> {
        self.model.format_step(last_state, action)
    }

    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        svg::of_path(&self.model, path, &self.notes)
    }
}
