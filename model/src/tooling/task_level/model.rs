//! The task level as stateright's `Model`: [`TaskModel`]'s own initial states, actions and
//! step, with its properties.

use crate::task_level::action::TaskAction;
use crate::task_level::model::TaskModel;
use crate::task_level::properties::TaskPropertyId;
use crate::task_level::state::TaskState;
use stateright::{Model, Property};

impl Model for TaskModel {
    type State = TaskState;
    type Action = TaskAction;

    fn init_states(&self) -> Vec<TaskState> {
        self.initial_states()
    }

    fn actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        self.enabled_actions(s, out);
    }

    fn next_state(&self, s: &TaskState, a: TaskAction) -> Option<TaskState> {
        Some(self.next(s, a))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        TaskPropertyId::ALL.iter().map(|p| p.property()).collect()
    }
}
