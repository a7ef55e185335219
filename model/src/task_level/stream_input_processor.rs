//! The task's input processor: `StreamOneInputProcessor` for one gate,
//! `StreamMultipleInputProcessor` with its `MultipleInputSelectionHandler` for two, and the
//! source's input for none.

use super::config::{Selection, TaskShape};
use super::input_gate::{self, Element};
use super::state::TaskState;
use super::variant::TaskVariant;

/// `DataInputStatus` as the task sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputStatus {
    /// More is available at once.
    MoreAvailable,
    /// Nothing now; the availability future says when.
    NothingAvailable,
    /// Every input has ended.
    EndOfInput,
}

/// `inputSelection.isInputSelected(g)`: the operator reads input 0 exclusively until it ends
/// when its selection says so.
pub fn is_selected(shape: &TaskShape, s: &TaskState, g: u8) -> bool {
    !shape.multiple_inputs() || shape.selection == Selection::All || s.gates[0].finished || g == 0
}

/// The channels of selected, unfinished inputs with something to hand out.
pub fn readable(shape: &TaskShape, s: &TaskState) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    for (g, gate) in s.gates.iter().enumerate() {
        let g = g as u8;
        if gate.finished || !is_selected(shape, s, g) {
            continue;
        }
        for c in 0..gate.channels.len() as u8 {
            if input_gate::next_element(shape, gate, c).is_some() {
                out.push((g, c));
            }
        }
    }
    out
}

/// The input `processInput` reads next: `InputSelection.fairSelectNextIndex` over the
/// selected inputs with data, starting after the last one read and wrapping around.
pub fn select_next_reading_input_index(shape: &TaskShape, s: &TaskState) -> Option<u8> {
    let mut with_data: Vec<u8> = readable(shape, s).into_iter().map(|(g, _)| g).collect();
    with_data.dedup();
    with_data
        .iter()
        .find(|&&g| g > s.last_read_input_index)
        .or_else(|| with_data.first())
        .copied()
}

/// The channels `processInput` may read now: those of the input the fair selection picks.
/// Which of its channels comes first is the gate's queue, whose order depends on when data
/// arrived: any channel with data may come next.
pub fn next_readable(shape: &TaskShape, s: &TaskState) -> Vec<(u8, u8)> {
    let Some(next) = select_next_reading_input_index(shape, s) else {
        return Vec::new();
    };
    readable(shape, s).into_iter().filter(|&(g, _)| g == next).collect()
}

/// `getAvailableFuture().isDone()`. Multiple inputs: AVAILABLE if a selected input is
/// available or all inputs are finished (`StreamMultipleInputProcessor.getAvailableFuture`).
pub fn is_available(shape: &TaskShape, s: &TaskState) -> bool {
    s.all_inputs_finished() || !readable(shape, s).is_empty()
}

/// `processInput()` reading channel `c` of input `g`: the input's status, then (multiple
/// inputs) `MultipleInputSelectionHandler.updateStatus`.
pub fn process_input(shape: &TaskShape, s: &mut TaskState, g: u8, c: u8) -> (Element, InputStatus) {
    let (element, gate_finished) = input_gate::poll_next(shape, s, g, c);
    s.last_read_input_index = g;
    if gate_finished {
        // END_OF_INPUT of this input: `endMainOperatorInput`, `nextSelection()`.
        s.gates[g as usize].finished = true;
    }
    let status = if s.all_inputs_finished() {
        InputStatus::EndOfInput
    } else if is_available(shape, s) {
        InputStatus::MoreAvailable
    } else {
        InputStatus::NothingAvailable
    };
    (element, status)
}

/// `processInput()` with no selectable input that has data. A source (no gates) has ended; a
/// one-input processor keeps returning END_OF_INPUT once finished. The multiple-input
/// processor returns END_OF_INPUT when every input has finished (the hotfix), and
/// NOTHING_AVAILABLE before it (variant B1).
pub fn process_input_nothing_to_read(shape: &TaskShape, variant: TaskVariant, s: &TaskState) -> InputStatus {
    debug_assert!(readable(shape, s).is_empty());
    if !s.all_inputs_finished() {
        return InputStatus::NothingAvailable;
    }
    if shape.multiple_inputs() && variant == TaskVariant::MultiInputNothingAvailableWhenFinished {
        return InputStatus::NothingAvailable;
    }
    InputStatus::EndOfInput
}
