//! Flink's `StreamInputProcessor`s as the task level drives them: `StreamOneInputProcessor` for
//! one gate, `StreamMultipleInputProcessor` with its `MultipleInputSelectionHandler` for several,
//! and a source's, which has no input.
//!
//! `processInput` reads one element and says what follows (`DataInputStatus`); the task suspends
//! its default action on NOTHING_AVAILABLE until `getAvailableFuture()` completes.

use serde::{Deserialize, Serialize};

use crate::completable_future::CompletableFuture;
use crate::error::Result;
use crate::input_gate::{IndexedInputGate, InputElement};
use crate::sync::{Arc, Mutex};

/// `DataInputStatus`, the part the task level sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataInputStatus {
    /// More is available at once.
    MoreAvailable,
    /// Nothing now; the availability future says when.
    NothingAvailable,
    /// Every input has ended.
    EndOfInput,
}

/// What the operator selects (`InputSelectable.nextSelection()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputSelection {
    /// `InputSelection.ALL`.
    All,
    /// Input 0 only until it ends, then all: a hash join's build side.
    FirstUntilEnd,
}

/// A task's input processor.
pub trait StreamInputProcessor: Send + Sync {
    /// `processInput()`: the element read, if any, and the status after it.
    fn process_input(&self) -> Result<(Option<InputElement>, DataInputStatus)>;
    /// `getAvailableFuture()`: done when `process_input` can make progress.
    fn get_available_future(&self) -> CompletableFuture;
    /// `isAvailable()`: `getAvailableFuture().isDone()`.
    fn is_available(&self) -> bool {
        self.get_available_future().is_done()
    }
}

/// The processor for `gates` with the operator's `selection`: none for a source, one input or
/// several.
pub fn create(gates: Vec<Arc<dyn IndexedInputGate>>, selection: InputSelection) -> Box<dyn StreamInputProcessor> {
    match gates.len() {
        0 => Box::new(SourceInputProcessor),
        1 => Box::new(StreamOneInputProcessor {
            gate: gates.into_iter().next().expect("one gate"),
        }),
        _ => Box::new(StreamMultipleInputProcessor::new(gates, selection)),
    }
}

/// A source's: no input, so END_OF_INPUT at once.
#[derive(Debug)]
pub struct SourceInputProcessor;

impl StreamInputProcessor for SourceInputProcessor {
    fn process_input(&self) -> Result<(Option<InputElement>, DataInputStatus)> {
        Ok((None, DataInputStatus::EndOfInput))
    }

    fn get_available_future(&self) -> CompletableFuture {
        CompletableFuture::completed()
    }
}

/// `StreamOneInputProcessor` over a `StreamTaskNetworkInput` of one gate.
pub struct StreamOneInputProcessor {
    gate: Arc<dyn IndexedInputGate>,
}

/// `StreamTaskNetworkInput.emitNext`: one element of `gate`, then the input's status.
fn emit_next(gate: &dyn IndexedInputGate) -> Result<(Option<InputElement>, DataInputStatus)> {
    let element = gate.poll_next()?;
    let status = if gate.is_finished() {
        DataInputStatus::EndOfInput
    } else if gate.get_available_future().is_done() {
        DataInputStatus::MoreAvailable
    } else {
        DataInputStatus::NothingAvailable
    };
    Ok((element, status))
}

impl StreamInputProcessor for StreamOneInputProcessor {
    fn process_input(&self) -> Result<(Option<InputElement>, DataInputStatus)> {
        emit_next(&*self.gate)
    }

    fn get_available_future(&self) -> CompletableFuture {
        if self.gate.is_finished() {
            return CompletableFuture::completed();
        }
        self.gate.get_available_future()
    }
}

#[derive(Debug)]
struct SelectionState {
    /// `lastReadInputIndex`: 1 at construction, as in Flink.
    last_read_input_index: usize,
    /// Inputs that reached END_OF_INPUT (`MultipleInputSelectionHandler.allSelectedMask`
    /// bookkeeping).
    finished: Vec<bool>,
}

/// `StreamMultipleInputProcessor` with its `MultipleInputSelectionHandler`.
pub struct StreamMultipleInputProcessor {
    gates: Vec<Arc<dyn IndexedInputGate>>,
    selection: InputSelection,
    state: Mutex<SelectionState>,
}

impl StreamMultipleInputProcessor {
    /// A processor over `gates`, input `i` being `gates[i]`.
    pub fn new(gates: Vec<Arc<dyn IndexedInputGate>>, selection: InputSelection) -> Self {
        let finished = vec![false; gates.len()];
        StreamMultipleInputProcessor {
            gates,
            selection,
            state: Mutex::new(SelectionState {
                last_read_input_index: 1,
                finished,
            }),
        }
    }

    /// `inputSelection.isInputSelected(i)`, after `nextSelection()`.
    fn is_selected(&self, state: &SelectionState, input: usize) -> bool {
        self.selection == InputSelection::All || state.finished[0] || input == 0
    }

    /// Selected, unfinished inputs whose gate has something now.
    fn available_inputs(&self, state: &SelectionState) -> Vec<usize> {
        (0..self.gates.len())
            .filter(|&i| !state.finished[i] && self.is_selected(state, i))
            .filter(|&i| self.gates[i].get_available_future().is_done())
            .collect()
    }

    /// `InputSelection.fairSelectNextIndex`: the next available selected input after the one
    /// read last, wrapping around.
    fn select_next_reading_input_index(&self, state: &SelectionState) -> Option<usize> {
        let available = self.available_inputs(state);
        available
            .iter()
            .find(|&&i| i > state.last_read_input_index)
            .or_else(|| available.first())
            .copied()
    }

    fn all_finished(state: &SelectionState) -> bool {
        state.finished.iter().all(|f| *f)
    }
}

impl StreamInputProcessor for StreamMultipleInputProcessor {
    fn process_input(&self) -> Result<(Option<InputElement>, DataInputStatus)> {
        let mut state = self.state.lock();
        let Some(input) = self.select_next_reading_input_index(&state) else {
            // Nothing selectable. Once every input has finished this is END_OF_INPUT, not
            // NOTHING_AVAILABLE: the availability future is done then, and the task would
            // retry at once, forever.
            let status = match Self::all_finished(&state) {
                true => DataInputStatus::EndOfInput,
                false => DataInputStatus::NothingAvailable,
            };
            return Ok((None, status));
        };
        state.last_read_input_index = input;
        let gate = Arc::clone(&self.gates[input]);
        drop(state);
        let (element, input_status) = emit_next(&*gate)?;
        // updateStatusAndSelection: END_OF_INPUT of one input ends it (`endInput`) and the
        // operator's next selection takes effect.
        let mut state = self.state.lock();
        if input_status == DataInputStatus::EndOfInput {
            state.finished[input] = true;
        }
        let status = if Self::all_finished(&state) {
            DataInputStatus::EndOfInput
        } else if !self.available_inputs(&state).is_empty() {
            DataInputStatus::MoreAvailable
        } else {
            DataInputStatus::NothingAvailable
        };
        Ok((element, status))
    }

    fn get_available_future(&self) -> CompletableFuture {
        let state = self.state.lock();
        if Self::all_finished(&state) || !self.available_inputs(&state).is_empty() {
            return CompletableFuture::completed();
        }
        // MultipleFuturesAvailabilityHelper: any selected input's future.
        let futures: Vec<CompletableFuture> = (0..self.gates.len())
            .filter(|&i| !state.finished[i] && self.is_selected(&state, i))
            .map(|i| self.gates[i].get_available_future())
            .collect();
        CompletableFuture::any_of(&futures)
    }
}
