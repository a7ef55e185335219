//! A picture of one state for stateright's Explorer: per channel its queue, stash, flags,
//! buffer manager and credit, and what each checkpoint persisted.

use crate::model::RecoveryModel;
use crate::state::State;

/// The SVG of `state`, or None while the picture is not implemented.
pub fn state(_model: &RecoveryModel, _state: &State) -> Option<String> {
    None
}
