//! Thread-safe Rust implementations of Flink's recoverable input channels (FLINK-38544,
//! "checkpointing during recovery of unaligned checkpoint state", PR apache/flink#28659).
//!
//! One module per Flink class, in snake_case, with Flink's method names. Every component offers
//! a cheap read-only `snapshot()` taken under its lock, returning plain serde structs that a
//! conformance suite can diff against a model. See `docs/impl.md` for the threads, the locks,
//! what each lock guards and the lock order.
#![deny(missing_docs)]

pub mod buffer_and_availability;
pub mod buffer_manager;
pub mod buffer_pool;
pub(crate) mod buffer_recycler;
pub mod channel_state_persister;
pub mod checkpointable_input;
pub mod completable_future;
pub mod credit_based_sequence_numbering_view_reader;
pub mod error;
pub mod event_log;
pub mod executor;
pub mod fetched_channel_state_drainer;
pub mod flink_fixes;
pub mod ids;
pub mod input_channel_info;
pub mod input_channels_with_data;
pub mod input_gate;
pub mod local_input_channel;
pub mod mailbox_processor;
pub mod netty_message;
pub mod network_buffer;
pub mod pause_point;
pub mod prioritized_deque;
pub mod recoverable_input_channel;
pub mod recovered_input_channel;
pub mod recovery_checkpoint_trigger;
pub mod remote_input_channel;
pub mod result_subpartition;
pub mod single_checkpoint_barrier_handler;
pub mod single_input_gate;
pub mod stream_input_processor;
pub mod stream_task;
pub(crate) mod sync;
pub mod task;
pub mod upstream_recovery_tracker;

pub use error::{ChannelError, DeclineReason, Result};
pub use flink_fixes::FlinkFixes;
pub use ids::{BufferId, CheckpointId};
pub use input_channel_info::InputChannelInfo;
pub use network_buffer::{BufferKind, BufferSnapshot, DataType, NetworkBuffer};
pub use recoverable_input_channel::RecoverableInputChannel;
