//! [`TaskModel`]: the stateright `Model` of the task level. `actions` lists what each thread
//! may do next; `next_state` runs one step.

use super::action::TaskAction;
use super::config::TaskShape;
use super::mailbox_processor as mailbox;
use super::properties::TaskPropertyId;
use super::state::{Callback, DefaultAction, TaskState};
use super::stream_input_processor as processor;
use super::stream_task as task;
use super::variant::TaskVariant;
use stateright::{Model, Property};

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
        self.actions(s, &mut a);
        a.is_empty()
    }

    fn mailbox_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        if !mailbox::is_loop_running(s) || s.busy_spin {
            return;
        }
        if let Some(&mail) = s.mailbox.first() {
            out.push(TaskAction::ProcessMail { mail });
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
        if s.io_pc >= task::io_program_len(shape) {
            return;
        }
        if s.io_pc < gates {
            out.push(TaskAction::ReadInputData { gate: s.io_pc });
        } else {
            out.push(TaskAction::FinishReadRecoveredState { gate: s.io_pc - gates });
        }
    }

    fn completion_actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        let shape = self.shape(s);
        if !shape.checkpointing_during_recovery {
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
        if task::can_complete_recovery(shape, s) {
            out.push(TaskAction::CompleteRecovery);
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

impl Model for TaskModel {
    type State = TaskState;
    type Action = TaskAction;

    fn init_states(&self) -> Vec<TaskState> {
        self.shapes
            .iter()
            .enumerate()
            .map(|(i, shape)| task::restore_state_and_gates(i as u8, shape))
            .collect()
    }

    fn actions(&self, s: &TaskState, out: &mut Vec<TaskAction>) {
        self.mailbox_actions(s, out);
        self.io_actions(s, out);
        self.completion_actions(s, out);
    }

    fn next_state(&self, s: &TaskState, a: TaskAction) -> Option<TaskState> {
        let shape = self.shape(s);
        let mut n = s.clone();
        match a {
            TaskAction::ReadInputData { gate } => task::read_input_data(&mut n, gate),
            TaskAction::FinishReadRecoveredState { gate } => task::finish_read_recovered_state(shape, &mut n, gate),
            TaskAction::ProcessMail { mail } => {
                debug_assert_eq!(n.mailbox.first(), Some(&mail));
                task::process_mail(shape, &mut n);
            }
            TaskAction::ProcessInput { gate, channel } => {
                let (_, status) = processor::process_input(shape, &mut n, gate, channel);
                task::on_input_status(shape, self.variant, &mut n, status);
            }
            TaskAction::ProcessInputNothingToRead => {
                let status = processor::process_input_nothing_to_read(shape, self.variant, &n);
                task::on_input_status(shape, self.variant, &mut n, status);
            }
            TaskAction::OnGateStateConsumed { gate } => task::on_gate_state_consumed(&mut n, gate),
            TaskAction::OnAllGatesStateConsumed => task::on_all_gates_state_consumed(&mut n),
            TaskAction::CompleteRecovery => task::complete_recovery(&mut n),
            TaskAction::RunSuspendCallback => task::run_suspend_callback(&mut n),
            TaskAction::RunResumeCallback => task::run_resume_callback(&mut n),
            TaskAction::OnInputAvailable => task::on_input_available(&mut n),
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        TaskPropertyId::ALL.iter().map(|p| p.property()).collect()
    }
}
