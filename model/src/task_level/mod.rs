//! The task level: a second stateright model, of `StreamTask`'s channel-state recovery as the
//! FLINK-38544 series stages it (apache/flink#28659 to #28663), above the channels.
//!
//! Modelled: `StreamTask.restoreStateAndGates` with the flag
//! (`execution.checkpointing.during-recovery.enabled`) off and on, and its empty-gates
//! short-circuit; flag on, the chain's stages (the NOT_READY mail, the fetch, the
//! `requestPartitions(true)` mail, the drainer's install mail, the drain, `completeAll`, the NO_OP
//! mail) and the recovery trigger they set; `restoreInternal`'s check after the restore loop;
//! `MailboxProcessor` (the default action `processInput`, `suspendDefaultAction`, `suspend()`,
//! control mails); `StreamTask.processInput` with the defer-finish rule;
//! `StreamMultipleInputProcessor` with `MultipleInputSelectionHandler` and an operator reading
//! input 0 exclusively until it ends; `SingleInputGate.requestPartitions(needsRecovery)` and each
//! gate's state-consumed future; one checkpoint reaching the task once it is RUNNING, started by
//! the unaligned or the aligned barrier handler.
//!
//! Threads: the mailbox thread, the channel-IO executor, future completions (whose dependent
//! actions run as separate steps that may lag behind the completing step), the canceler and
//! the checkpoint coordinator.
//!
//! Abstracted: a channel is its remaining recovered buffers, whether its recovered state was
//! consumed (the end-of-state marker polled), its remaining live records and
//! `EndOfPartition`. The channel protocol under that (credit, sentinels, barriers) is the
//! channel model's subject. Live data is all produced (a blocking exchange); buffers for the
//! IO thread are unbounded. A checkpoint is one step: whether it finds what it needs.

pub mod action;
pub mod bug_zoo;
pub mod config;
pub mod input_gate;
pub mod mailbox_processor;
pub mod model;
pub mod presets;
pub mod properties;
pub mod state;
pub mod stream_input_processor;
pub mod stream_task;
pub mod task;
pub mod variant;

pub use action::{TaskAction, TaskThread};
pub use config::TaskShape;
pub use model::TaskModel;
pub use presets::{TASK_PRESETS, TaskPreset, find_task_preset};
pub use state::TaskState;
pub use variant::TaskVariant;
