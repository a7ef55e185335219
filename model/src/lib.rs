//! A stateright model of Apache Flink's input-channel recovery protocol: FLINK-38544,
//! "checkpointing during recovery of unaligned checkpoint state" (apache/flink#28651, #28652,
//! #28659).
//!
//! Modelled classes: `LocalInputChannel`, `RemoteInputChannel` (with its recovery event stash),
//! `RecoverableInputChannel`, `BufferManager` (notification gate, `enableNotify`),
//! `ChannelStatePersister`, `CreditBasedSequenceNumberingViewReader` (zero initial credit
//! when `needsRecovery`), the subpartition and the Netty wire, `RecoveredInputChannel` (its
//! conversion, and the flag-off path that polls it), and the task thread's gate and checkpoint barrier handling.
//!
//! Granularity: one action per critical section of the Java code, plus one per call made
//! after releasing a lock (credit announcements), so threads interleave where Flink's can.
//! Abstracted: buffer contents (ids only), byte sizes, the checkpoint coordinator (a checkpoint
//! is triggered by its first barrier at the task), timers and errors other than the protocol's.
//! Bounds come from [`ModelConfig`]; see docs/model.md.

pub mod action;
pub mod buffer_manager;
pub mod bug_zoo;
pub mod config;
pub mod expectations;
pub mod footprint;
pub mod guard;
pub mod local_buffer_pool;
pub mod local_input_channel;
pub mod model;
pub mod presets;
pub mod producer;
pub mod properties;
pub mod property_table;
pub mod recoverable_input_channel;
pub mod recovered_input_channel;
pub mod remote_input_channel;
pub mod sequential_channel_state_reader;
pub mod single_input_gate;
pub mod state;
pub mod task;
pub mod task_level;
pub mod tooling;
pub mod variant;

pub use action::{Action, Thread};
pub use config::{ChannelConfig, ChannelKind, Delivery, ModelConfig, Upstream};
pub use model::RecoveryModel;
pub use presets::{PRESETS, preset};
pub use state::State;
pub use variant::Variant;
