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

use crate::state::{Channel, Entry, State, TaskPc};
use std::fmt::Write;

fn entries(es: &[Entry], priority_len: usize) -> String {
    let items: Vec<String> = es
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut s = e.payload.to_string();
            if let Some(b) = e.buffer {
                let _ = write!(s, "@{b}");
            }
            if i < priority_len {
                s.insert(0, '!');
            }
            s
        })
        .collect();
    format!("[{}]", items.join(" "))
}

/// One paragraph about channel `c`: what a Flink engineer would look at in a debugger.
pub fn channel(m: &RecoveryModel, s: &State, c: u8) -> String {
    let ch: &Channel = s.ch(c);
    let mut out = format!(
        "{}: inRecovery={} released={} upstreamReady={} stateConsumed={}\n",
        m.channel_name(c),
        ch.in_recovery,
        ch.released,
        ch.upstream_ready,
        ch.state_consumed
    );
    let _ = writeln!(
        out,
        "  queue {}  stash {}",
        entries(&ch.queue, ch.priority_len as usize),
        entries(&ch.stash, 0)
    );
    let delivered: Vec<String> = ch
        .ghost_delivered
        .iter()
        .map(|d| format!("{}#{}", d.payload, d.seq))
        .collect();
    let _ = writeln!(out, "  delivered [{}]", delivered.join(" "));
    let cfg = &m.cfg.channels[c as usize];
    if cfg.kind == crate::config::ChannelKind::Remote {
        let names = |v: &[crate::state::NetBuf]| v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" ");
        let _ = writeln!(
            out,
            "  bufferManager exclusive [{}] floating [{}] pool [{}] notifyAvailable={} held [{}]",
            names(&ch.bm.exclusive),
            names(&ch.bm.floating),
            names(&ch.bm.pool),
            ch.bm.notify_available,
            names(&ch.held)
        );
        let _ = writeln!(
            out,
            "  credit: unannounced={} addCredit in flight={:?} producer={:?} wire={}",
            ch.unannounced_credit,
            ch.add_credit_in_flight,
            ch.producer.reader_credit,
            ch.producer
                .wire
                .iter()
                .map(|w| w.payload.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let persisted: Vec<String> = ch.ghost_persisted.iter().map(|(cp, p)| format!("cp{cp}:{p}")).collect();
    let _ = writeln!(
        out,
        "  persister {:?} lastSeenBarrier={} persisted [{}]",
        ch.persister.status,
        ch.persister.last_seen_barrier,
        persisted.join(" ")
    );
    out
}

/// A counterexample as a person reads it: numbered steps, then the final state.
pub fn counterexample(m: &RecoveryModel, actions: &[Action]) -> String {
    use stateright::Model;
    let mut s = m.init_states().remove(0);
    let mut out = String::new();
    for (i, a) in actions.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. {}", i + 1, action(m, a));
        s = m.next_state(&s, *a).expect("counterexample steps are enabled");
    }
    let _ = writeln!(out, "\nfinal state:");
    if s.task != TaskPc::Idle {
        let _ = writeln!(out, "task {:?}", s.task);
    }
    if let Some((c, v)) = s.violation {
        let _ = writeln!(out, "violation on {}: {:?}", m.channel_name(c), v);
    }
    let _ = writeln!(out, "checkpoints {:?}", s.checkpoints);
    for c in 0..s.channels.len() as u8 {
        out.push_str(&channel(m, &s, c));
    }
    out
}
