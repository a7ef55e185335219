//! [`TaskModel`]: the task level's transition system. `enabled_actions` lists what each thread
//! may do next; `next` runs one step. `tooling/task_level/model.rs` makes it a stateright
//! `Model`.

use super::action::TaskAction;
use super::config::TaskShape;
use super::mailbox_processor as mailbox;
use super::state::{Callback, Cause, DefaultAction, ExecutionState, Mail, TaskState};
use super::stream_input_processor as processor;
use super::stream_task;
use super::task;
use super::variant::TaskVariant;

/// The task level of a preset's shapes, with one fix possibly switched off.
#[derive(Clone, Debug)]
pub struct TaskModel {
    /// The task shapes; each is an initial state.
    pub shapes: Vec<TaskShape>,
    /// Which fix is off.
    pub variant: TaskVariant,
}

impl TaskModel {
    /// A model of `shapes` with `variant`.
    pub fn new(shapes: Vec<TaskShape>, variant: TaskVariant) -> Self {
        assert!(shapes.len() < u8::MAX as usize);
        TaskModel { shapes, variant }
    }

    /// The shape of `s`.
    pub fn shape(&self, s: &TaskState) -> &TaskShape {
        &self.shapes[s.shape as usize]
    }

    /// Whether no thread can move.
    pub fn is_terminal(&self, s: &TaskState) -> bool {
        let mut a = Vec::new();
        self.enabled_actions(s, &mut a);
        a.is_empty()
    }

    /// Whether the environment may still inject a failure: the shape allows one, none was
    /// injected yet, and the task has not released its resources.
    fn may_fail(&self, s: &TaskState) -> bool {
        self.shape(s).failures && s.injected.is_none() && !s.released
    }

    /// Whether no thread of the task can move: nothing but the JobManager's cancel could
    /// change the state. A task that waits for a cancel to end it has hung.
    pub fn is_stuck(&self, s: &TaskState) -> bool {
        let mut a = Vec::new();
        self.enabled_actions(s, &mut a);
        a.iter().all(|a| *a == TaskAction::CancelExecution)
    }

    fn mailbox_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        if s.invoke_ended() && !s.released {
            out.push(TaskAction::ReleaseResources);
        }
        if !mailbox::is_loop_running(s) || s.busy_spin {
            return;
        }
        if let Some(&mail) = s.mailbox.first() {
            out.push(TaskAction::ProcessMail { mail });
            if self.may_fail(s) {
                match mail {
                    Mail::RequestPartitions(gate) => out.push(TaskAction::RequestPartitionsThrows { gate }),
                    Mail::RequestPartitionsWithRecovery => {
                        for gate in 0..s.gates.len() as u8 {
                            out.push(TaskAction::RequestPartitionsThrows { gate });
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        if s.default_action != DefaultAction::Running {
            return; // blocked on the mailbox
        }
        let readable = processor::next_readable(self.shape(s), s);
        if readable.is_empty() {
            out.push(TaskAction::ProcessInputNothingToRead);
        }
        for (gate, channel) in readable {
            out.push(TaskAction::ProcessInput { gate, channel });
        }
    }

    fn io_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        let shape = self.shape(s);
        let gates = shape.gates.len() as u8;
        if !stream_task::io_may_run(shape, s) {
            return;
        }
        let fail = self.may_fail(s);
        if s.io_pc >= 2 * gates {
            out.push(TaskAction::DrainGate {
                gate: s.io_pc - 2 * gates,
            });
        } else if s.io_pc < gates {
            let gate = s.io_pc;
            out.push(TaskAction::ReadInputData { gate });
            if fail {
                out.push(TaskAction::ReadInputDataThrows { gate });
            }
        } else {
            let gate = s.io_pc - gates;
            out.push(TaskAction::FinishReadRecoveredState { gate });
            if fail {
                out.push(TaskAction::FinishReadRecoveredStateThrows { gate });
            }
        }
    }

    fn canceler_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        if self.shape(s).failures && !s.cancel_requested && s.execution_state == ExecutionState::Running && !s.released
        {
            out.push(TaskAction::CancelExecution);
        }
        if s.cancel_invokable_pending {
            out.push(TaskAction::CancelInvokable);
        }
    }

    fn coordinator_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        if stream_task::can_trigger_checkpoint(self.shape(s), s) {
            out.push(TaskAction::TriggerCheckpoint);
        }
    }

    fn completion_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        let shape = self.shape(s);
        if !shape.is_checkpointing_during_recovery_enabled() {
            if self.variant == TaskVariant::ConvertAllGatesTogether {
                if !s.gates.is_empty() && s.all_state_consumed() && !s.gates[0].consumed_callback_run {
                    out.push(TaskAction::OnAllGatesStateConsumed);
                }
            } else {
                for (g, gate) in s.gates.iter().enumerate() {
                    if gate.state_consumed() && !gate.consumed_callback_run {
                        out.push(TaskAction::OnGateStateConsumed { gate: g as u8 });
                    }
                }
            }
        }
        if stream_task::can_complete_recovery(shape, s) {
            out.push(TaskAction::CompleteRecovery);
        }
        if stream_task::can_complete_all_state_consumed(shape, s) {
            out.push(TaskAction::CompleteAllStateConsumed);
        }
        if s.suspend_callback == Callback::Pending {
            out.push(TaskAction::RunSuspendCallback);
        }
        if s.resume_callback == Callback::Pending {
            out.push(TaskAction::RunResumeCallback);
        }
        if s.default_action == DefaultAction::AwaitingInput && processor::is_available(shape, s) {
            out.push(TaskAction::OnInputAvailable);
        }
    }
}

/// The task level's transition system: its initial states, enabled actions and step.
impl TaskModel {
    /// One initial state per shape.
    pub fn initial_states(&self) -> Vec<TaskState> {
        self.shapes
            .iter()
            .enumerate()
            .map(|(i, shape)| stream_task::restore_state_and_gates(i as u8, shape))
            .collect()
    }

    /// What each thread may do next.
    pub fn enabled_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        self.mailbox_actions(s, out);
        self.io_actions(s, out);
        self.completion_actions(s, out);
        self.canceler_actions(s, out);
        self.coordinator_actions(s, out);
    }

    /// The state `a` leads to from `s`.
    pub fn next(&self, s: &TaskState, a: TaskAction) -> TaskState {
        let (shape, v) = (self.shape(s), self.variant);
        let mut n = s.clone();
        match a {
            TaskAction::ReadInputData { gate } => stream_task::read_input_data(shape, v, &mut n, gate),
            TaskAction::FinishReadRecoveredState { gate } => {
                stream_task::finish_read_recovered_state(shape, v, &mut n, gate)
            }
            TaskAction::ProcessMail { mail } => {
                debug_assert_eq!(n.mailbox.first(), Some(&mail));
                stream_task::process_mail(shape, v, &mut n);
            }
            TaskAction::ProcessInput { gate, channel } => {
                let (_, status) = processor::process_input(shape, &mut n, gate, channel);
                stream_task::on_input_status(shape, v, &mut n, status);
            }
            TaskAction::ProcessInputNothingToRead => {
                let status = processor::process_input_nothing_to_read(shape, v, &n);
                stream_task::on_input_status(shape, v, &mut n, status);
            }
            TaskAction::OnGateStateConsumed { gate } => stream_task::on_gate_state_consumed(&mut n, gate),
            TaskAction::OnAllGatesStateConsumed => stream_task::on_all_gates_state_consumed(&mut n),
            TaskAction::DrainGate { gate } => stream_task::drain(shape, v, &mut n, gate),
            TaskAction::CompleteRecovery => stream_task::complete_recovery_step(shape, &mut n),
            TaskAction::CompleteAllStateConsumed => stream_task::complete_all_state_consumed(&mut n),
            TaskAction::TriggerCheckpoint => stream_task::trigger_checkpoint(&mut n),
            TaskAction::RunSuspendCallback => stream_task::run_suspend_callback(&mut n),
            TaskAction::RunResumeCallback => stream_task::run_resume_callback(&mut n),
            TaskAction::OnInputAvailable => stream_task::on_input_available(&mut n),
            TaskAction::ReadInputDataThrows { gate } => {
                stream_task::inject_read_failure(shape, v, &mut n, Cause::ReadInputData(gate))
            }
            TaskAction::FinishReadRecoveredStateThrows { gate } => {
                stream_task::inject_read_failure(shape, v, &mut n, Cause::FinishReadRecoveredState(gate))
            }
            TaskAction::RequestPartitionsThrows { gate } => stream_task::request_partitions_throws(shape, &mut n, gate),
            TaskAction::CancelExecution => task::cancel_execution(&mut n),
            TaskAction::CancelInvokable => stream_task::cancel(&mut n),
            TaskAction::ReleaseResources => task::release_resources(v, &mut n),
        }
        n
    }
}
