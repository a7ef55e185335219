//! Readable actions for counterexamples, the CLI and Explorer: thread, channel, Flink method.

use crate::action::Action;
use crate::model::RecoveryModel;

/// "netty-client remote#1 onBuffer", "task checkpointStarted(cp 1) on local#0".
pub fn action(m: &RecoveryModel, a: &Action) -> String {
    let thread = m.thread(a);
    let method = match a {
        Action::InsertRecoveryCheckpointBarrier { cp, .. } => {
            format!("insertRecoveryCheckpointBarrierIfInRecovery({cp})")
        }
        Action::CheckpointStarted { cp, .. } => format!("checkpointStarted({cp})"),
        Action::EmitCheckpointBarrier { cp, .. } => format!("emitCheckpointBarrier({cp})"),
        Action::NotifyBufferAvailable { n, .. } => format!("notifyBufferAvailable({n})"),
        Action::Recycle { buffer, .. } => format!("recycle({buffer})"),
        Action::ReturnFloatingBuffer { buffer, .. } => format!("recycleFloatingBuffer({buffer})"),
        other => other.method().to_string(),
    };
    match a.channel() {
        Some(c) => format!("{thread:<12} {:<9} {method}", m.channel_name(c)),
        None => format!("{thread:<12} {:<9} {method}", "gate"),
    }
}
