//! Readable actions for counterexamples, the CLI and Explorer: thread, channel, Flink method;
//! [`Step`]s that say what one action changed; the state as paragraphs.

use crate::action::{Action, Thread};
use crate::model::RecoveryModel;
use crate::state::LocalBufferPool;
use crate::state::{
    Announce, Channel, CheckpointStatus, Delivered, Entry, Failure, NetBuf, Payload, RESUME_CONSUMPTION, RecyclerPc,
    State, TaskPc,
};
use std::fmt::Write;

/// "netty-client remote#1 onBuffer", "task checkpointStarted(cp 1) on local#0".
pub fn action(m: &RecoveryModel, a: &Action) -> String {
    let thread = m.thread(a);
    let method = method_call(a);
    match a.channel() {
        Some(c) => format!("{thread:<12} {:<9} {method}", m.channel_name(c)),
        None => format!("{thread:<12} {:<9} {method}", "gate"),
    }
}

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
    if ch.error || ch.producer.released {
        let failed = if ch.error {
            "connection failed"
        } else {
            "subpartition released"
        };
        let _ = writeln!(out, "  upstream failed: {failed}");
    }
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
    let remote = cfg.kind == crate::config::ChannelKind::Remote;
    if remote || cfg.exclusive > 0 {
        let names = |v: &[crate::state::NetBuf]| v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" ");
        let _ = writeln!(
            out,
            "  bufferManager exclusive [{}] floating [{}] pool [{}] notifyAvailable={} held [{}]",
            names(&ch.bm.exclusive),
            names(&ch.bm.floating),
            names(&s.pool_of(c).available),
            ch.bm.notify_available,
            names(&ch.held)
        );
    }
    if remote {
        let _ = writeln!(
            out,
            "  credit: unannounced={} to server [{}] producer={:?}{} wire={}",
            ch.unannounced_credit,
            ch.add_credit_in_flight
                .iter()
                .map(|&k| client_message(k))
                .collect::<Vec<_>>()
                .join(" "),
            ch.producer.reader_credit,
            if ch.producer.blocked {
                " (subpartition blocked)"
            } else {
                ""
            },
            ch.producer
                .wire
                .iter()
                .map(|w| w.payload.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let spilled = ch.ghost_spilled.iter().map(|(cp, p)| format!("cp{cp}:{p}(spill)"));
    let persisted: Vec<String> = ch
        .ghost_persisted
        .iter()
        .map(|(cp, p)| format!("cp{cp}:{p}"))
        .chain(spilled)
        .collect();
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

// --- steps: what one action did, for step tables, Mermaid diagrams and Explorer ---

/// One step of a path as a person reads it: which thread, which call (with the element it
/// handles), and what changed in the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The thread that runs the action.
    pub thread: Thread,
    /// The channel it touches ("remote#1", or "gate" for gate-wide actions).
    pub channel: String,
    /// The Flink call with its argument: "onBuffer(e0)", "recycle(x0)".
    pub call: String,
    /// What changed, one short phrase each: "stash +e0", "unannounced credit 0 -> 1".
    pub changes: Vec<String>,
}

impl std::fmt::Display for Step {
    /// "remote#1 netty-client onBuffer(e0) -> stash +e0".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.channel, self.thread, self.call)?;
        if !self.changes.is_empty() {
            write!(f, " -> {}", self.changes.join(", "))?;
        }
        Ok(())
    }
}

/// A recovery sequence number as Flink engineers read it: "MIN", "MIN+1", or the number.
pub fn seq(q: i32) -> String {
    match q.checked_sub(i32::MIN) {
        Some(0) => "MIN".to_string(),
        Some(k) if k < 1 << 16 => format!("MIN+{k}"),
        _ => q.to_string(),
    }
}

/// The call `a` makes in `last`, with the element or amount it handles.
pub fn call(last: &State, a: &Action) -> String {
    let head = |v: Option<String>| v.map_or_else(String::new, |p| format!("({p})"));
    match *a {
        Action::OnRecoveredStateBuffer { channel } => {
            format!(
                "onRecoveredStateBuffer({})",
                Payload::Recovered(last.ch(channel).ghost_pushed)
            )
        }
        Action::SendBuffer { channel } => format!(
            "sendBuffer{}",
            head(last.ch(channel).producer.subpartition.first().map(|p| p.to_string()))
        ),
        Action::OnBuffer { channel } => format!(
            "onBuffer{}",
            head(last.ch(channel).producer.wire.first().map(|w| w.payload.to_string()))
        ),
        Action::OnAddCredit { channel } => format!(
            "addCredit{}",
            head(last.ch(channel).add_credit_in_flight.first().map(|k| k.to_string()))
        ),
        Action::SendResumeConsumption { .. } => "ResumeConsumption".to_string(),
        Action::OnResumeConsumption { .. } => "resumeConsumption".to_string(),
        Action::AbortPendingCheckpoint { cp } => format!("abortPendingCheckpoint({cp})"),
        Action::RequestBufferBlocking { channel } => format!(
            "requestBufferBlocking for {}",
            Payload::Recovered(last.ch(channel).ghost_pushed)
        ),
        Action::SendAddCredit { channel } => format!("AddCredit({})", last.ch(channel).unannounced_credit),
        _ => method_call(a),
    }
}

/// The Flink method with the arguments the action itself carries.
fn method_call(a: &Action) -> String {
    match *a {
        Action::InsertRecoveryCheckpointBarrier { cp, .. } => {
            format!("insertRecoveryCheckpointBarrierIfInRecovery({cp})")
        }
        Action::CheckpointStarted { cp, .. } => format!("checkpointStarted({cp})"),
        Action::EmitCheckpointBarrier { cp, .. } => format!("emitCheckpointBarrier({cp})"),
        Action::EmitTimeoutableCheckpointBarrier { cp, .. } => format!("add(aligned{cp})"),
        Action::AlignedCheckpointTimeout { cp } => format!("alignedCheckpointTimeout({cp})"),
        Action::ClearPendingPriorityEvent { .. } => {
            "pullPriorityFromSubpartitionView: hasPendingPriorityEvent = false".into()
        }
        Action::NotifyBufferAvailable { n, .. } => format!("notifyBufferAvailable({n})"),
        Action::Recycle { buffer, .. } => format!("recycle({buffer})"),
        Action::ReturnFloatingBuffer { buffer, .. } => format!("recycleFloatingBuffer({buffer})"),
        other => other.method().to_string(),
    }
}

/// What running `a` in `last` does: the thread, the call, and the changes it makes. `a` must be
/// enabled in `last`.
pub fn step(m: &RecoveryModel, last: &State, a: &Action) -> Step {
    use stateright::Model;
    let next = m.next_state(last, *a).expect("the model changes state on every action");
    step_to(m, last, a, &next)
}

/// [`step`] when the next state is already known.
pub fn step_to(m: &RecoveryModel, last: &State, a: &Action, next: &State) -> Step {
    Step {
        thread: m.thread(a),
        channel: a.channel().map_or_else(|| "gate".to_string(), |c| m.channel_name(c)),
        call: call(last, a),
        changes: changes(m, last, next, a.channel()),
    }
}

/// Every step of `actions` from the initial state, with the state after the last one.
pub fn steps(m: &RecoveryModel, actions: &[Action]) -> (Vec<Step>, State) {
    use stateright::Model;
    let mut s = m.init_states().remove(0);
    let mut out = Vec::with_capacity(actions.len());
    for a in actions {
        let next = m.next_state(&s, *a).expect("path steps are enabled");
        out.push(step_to(m, &s, a, &next));
        s = next;
    }
    (out, s)
}

/// Explorer's text for a step: what changed, then the next state channel by channel.
pub fn step_outcome(m: &RecoveryModel, last: &State, a: &Action) -> Option<String> {
    use stateright::Model;
    let next = m.next_state(last, *a)?;
    let st = step_to(m, last, a, &next);
    let mut out = format!("{} {} {}\n", st.channel, st.thread, st.call);
    for c in &st.changes {
        let _ = writeln!(out, "  {c}");
    }
    out.push('\n');
    out.push_str(&state(m, &next));
    Some(out)
}

/// The whole state as paragraphs: threads, checkpoints, then every channel.
pub fn state(m: &RecoveryModel, s: &State) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "task {}  io {}", task_pc(m, s.task), io_pc(m, s));
    for p in pending(m, s) {
        let _ = writeln!(out, "pending: {p}");
    }
    if let Some((c, v)) = s.violation {
        let _ = writeln!(out, "ASSERTION on {}: {v:?}", m.channel_name(c));
    }
    let _ = writeln!(out, "checkpoints {}", checkpoints(s));
    if s.alignment.is_some() {
        let _ = writeln!(out, "barrier handler {}", alignment(m, s.alignment.as_ref()));
    }
    if m.models_gate_queue() {
        let _ = writeln!(out, "gate queue {}", gate_queue(m, s));
    }
    if s.closed {
        let _ = writeln!(out, "gate closed, LocalBufferPool destroyed");
    }
    for c in 0..s.channels.len() as u8 {
        out.push_str(&channel(m, s, c));
    }
    out
}

/// The gate's `inputChannelsWithData`, head first, priority entries marked `!`.
pub fn gate_queue(m: &RecoveryModel, s: &State) -> String {
    let names: Vec<String> = s
        .gate
        .channels
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mark = if i < s.gate.num_priority as usize { "!" } else { "" };
            format!("{}{mark}", m.channel_name(*c))
        })
        .collect();
    format!("[{}]", names.join(" "))
}

/// What the task thread does next, in Flink's words.
pub fn task_pc(m: &RecoveryModel, pc: TaskPc) -> String {
    match pc {
        TaskPc::Idle => "idle (polls the gate)".to_string(),
        TaskPc::Trigger { cp, channel, inserted } => format!(
            "triggering cp{cp}: next {} on {}",
            if inserted {
                "checkpointStarted"
            } else {
                "insertRecoveryCheckpointBarrier"
            },
            m.channel_name(channel)
        ),
        TaskPc::Consume { channel } => format!("next onRecoveredStateConsumed on {}", m.channel_name(channel)),
        TaskPc::EnableNotify { channel } => format!("next enableNotify on {}", m.channel_name(channel)),
        TaskPc::EnableNotifyRest { channel, avail } => {
            format!(
                "inside a split enableNotify on {} (counted {avail})",
                m.channel_name(channel)
            )
        }
        TaskPc::AwaitUpstreamReady { channel } => {
            format!("BLOCKED on upstreamReady of {}", m.channel_name(channel))
        }
        TaskPc::ClearPendingPriority { channel, cp, .. } => format!(
            "polled barrier{cp} from the view of {}: next hasPendingPriorityEvent = false",
            m.channel_name(channel)
        ),
        TaskPc::RereadPendingPriority { channel, payload, .. } => format!(
            "polled {payload} from {}: next re-reads hasPendingPriorityEvent",
            m.channel_name(channel)
        ),
        TaskPc::Failed { channel, cause } => {
            let what = match cause {
                Failure::Transport => "the connection's error (checkError)",
                Failure::PartitionReleased => "CancelTaskException: the subpartition was released",
                Failure::NoPriorityEvent => "IllegalStateException: no priority event in the released view",
                Failure::AnnouncedBarrierNotFound => {
                    return format!(
                        "FAILED: convertToPriorityEvent on {} threw NoSuchElementException (the announced barrier is not in receivedBuffers)",
                        m.channel_name(channel)
                    );
                }
            };
            format!("FAILED: getNextBuffer on {} threw {what}", m.channel_name(channel))
        }
    }
}

/// Where the IO thread's drainer is.
pub fn io_pc(m: &RecoveryModel, s: &State) -> String {
    let total: usize = if matches!(
        m.cfg.delivery,
        crate::config::Delivery::Drainer | crate::config::Delivery::Legacy | crate::config::Delivery::Migration
    ) {
        m.cfg.channels.iter().map(|c| c.recovered as usize + 1).sum()
    } else {
        0
    };
    if total == 0 {
        "not used".to_string()
    } else if s.io_pc as usize >= total {
        "done".to_string()
    } else if let Some((_, buffer)) = s.io_buffer {
        format!("step {} of {total}, filling {buffer}", s.io_pc + 1)
    } else {
        format!("step {} of {total}", s.io_pc + 1)
    }
}

/// Credit announcements computed under a lock and not yet made, and the recycler's hand-back.
pub fn pending(m: &RecoveryModel, s: &State) -> Vec<String> {
    let ann = |who: &str, a: Announce| format!("{who} notifyBufferAvailable({}) on {}", a.n, m.channel_name(a.channel));
    let mut out = Vec::new();
    out.extend(s.task_announce.map(|a| ann("task", a)));
    out.extend(s.client_backlog.map(|b| {
        format!(
            "netty-client onSenderBacklog({}) on {}",
            b.backlog,
            m.channel_name(b.channel)
        )
    }));
    out.extend(s.client_announce.map(|a| ann("netty-client", a)));
    match s.recycler {
        RecyclerPc::Idle => {}
        RecyclerPc::Announce(a) => out.push(ann("recycler", a)),
        RecyclerPc::ReturnFloating { channel, buffer } => out.push(format!(
            "recycler returns {buffer} of {} to the LocalBufferPool",
            m.channel_name(channel)
        )),
    }
    out
}

/// The barrier handler's aligned checkpoint: its announcements and timer.
pub fn alignment(m: &RecoveryModel, a: Option<&crate::state::Alignment>) -> String {
    let Some(a) = a else {
        return "idle".to_string();
    };
    let announced: Vec<String> = a
        .announced
        .iter()
        .map(|&(c, q)| format!("{}@{}", m.channel_name(c), seq(q)))
        .collect();
    let timer = if a.timer {
        "timer registered"
    } else if a.timed_out {
        "timed out"
    } else {
        "no timer"
    };
    format!("cp{} announced [{}] {timer}", a.cp, announced.join(" "))
}

/// "cp1 completed, cp2 triggered".
pub fn checkpoints(s: &State) -> String {
    let v: Vec<String> = s
        .checkpoints
        .iter()
        .enumerate()
        .map(|(i, st)| format!("cp{} {}", i + 1, checkpoint_status(*st)))
        .collect();
    if v.is_empty() { "none".to_string() } else { v.join(", ") }
}

/// A checkpoint's status in a few words.
pub fn checkpoint_status(st: CheckpointStatus) -> &'static str {
    match st {
        CheckpointStatus::NotTriggered => "not triggered",
        CheckpointStatus::Triggered => "triggered",
        CheckpointStatus::Completed => "completed",
        CheckpointStatus::DeclinedMissingBarrier => "declined (missing recovery barrier)",
        CheckpointStatus::DeclinedLaterBarrier => "declined (later recovery barrier)",
        CheckpointStatus::Subsumed => "subsumed",
    }
}

/// `+a -b` between two lists, as multisets, in the order of each list.
fn list_diff<T: PartialEq + std::fmt::Display>(before: &[T], after: &[T]) -> (Vec<String>, Vec<String>) {
    let mut rest: Vec<&T> = after.iter().collect();
    let mut removed = Vec::new();
    for b in before {
        match rest.iter().position(|a| *a == b) {
            Some(i) => {
                rest.remove(i);
            }
            None => removed.push(b.to_string()),
        }
    }
    (rest.iter().map(|a| a.to_string()).collect(), removed)
}

fn diff_into<T: PartialEq + std::fmt::Display>(out: &mut Vec<String>, what: &str, before: &[T], after: &[T]) {
    if before == after {
        return;
    }
    let (added, removed) = list_diff(before, after);
    let mut parts = Vec::new();
    parts.extend(added.iter().map(|a| format!("+{a}")));
    parts.extend(removed.iter().map(|r| format!("-{r}")));
    if parts.is_empty() {
        let now: Vec<String> = after.iter().map(|a| a.to_string()).collect();
        out.push(format!("{what} reordered to [{}]", now.join(" ")));
    } else {
        out.push(format!("{what} {}", parts.join(" ")));
    }
}

fn flag(out: &mut Vec<String>, name: &str, before: bool, after: bool) {
    if before != after {
        out.push(format!("{name} {before} -> {after}"));
    }
}

fn entry_name(e: &Entry) -> String {
    match e.buffer {
        Some(b) => format!("{}@{b}", e.payload),
        None => e.payload.to_string(),
    }
}

fn delivered_name(d: &Delivered) -> String {
    format!("{} (seq {})", d.payload, seq(d.seq))
}

/// What changed on channel `c` between `a` and `b`.
/// What changed on one channel; `pools` are its own `LocalBufferPool` before and after, when it
/// has one (without `shared_pool`).
fn channel_changes(a: &Channel, b: &Channel, pools: Option<(&LocalBufferPool, &LocalBufferPool)>) -> Vec<String> {
    let mut out = Vec::new();
    for d in b.ghost_delivered.iter().skip(a.ghost_delivered.len()) {
        match d.payload {
            Payload::RecoveryBarrier(_) => out.push(format!("network input ignores stale {}", delivered_name(d))),
            _ => out.push(format!("operator gets {}", delivered_name(d))),
        }
    }
    let names = |v: &[Entry]| v.iter().map(entry_name).collect::<Vec<_>>();
    diff_into(&mut out, "queue", &names(&a.queue), &names(&b.queue));
    if a.priority_len != b.priority_len && a.queue.len() == b.queue.len() {
        out.push(format!("priority head {} -> {}", a.priority_len, b.priority_len));
    }
    diff_into(&mut out, "stash", &names(&a.stash), &names(&b.stash));
    flag(&mut out, "inRecovery", a.in_recovery, b.in_recovery);
    flag(&mut out, "upstreamReady", a.upstream_ready, b.upstream_ready);
    flag(&mut out, "released", a.released, b.released);
    flag(&mut out, "stateConsumed", a.state_consumed, b.state_consumed);
    flag(&mut out, "pendingPriorityEvent", a.pending_priority, b.pending_priority);
    if !a.error && b.error {
        out.push("connection failed: cause set".to_string());
    }
    if !a.producer.released && b.producer.released {
        out.push("subpartition released".to_string());
    }
    if a.recovery_seq != b.recovery_seq {
        out.push(format!(
            "recoverySequenceNumber {} -> {}",
            seq(a.recovery_seq),
            seq(b.recovery_seq)
        ));
    }
    if a.persister != b.persister {
        out.push(format!(
            "persister {:?}(cp{}) -> {:?}(cp{})",
            a.persister.status, a.persister.last_seen_barrier, b.persister.status, b.persister.last_seen_barrier
        ));
    }
    for (cp, p) in b.ghost_persisted.iter().skip(a.ghost_persisted.len()) {
        out.push(format!("cp{cp} persists {p}"));
    }
    for (cp, p) in b.ghost_spilled.iter().skip(a.ghost_spilled.len()) {
        out.push(format!("cp{cp} spills {p} (not yet drained)"));
    }
    for i in b.ghost_freed.iter().skip(a.ghost_freed.len()) {
        out.push(format!("{} recycled undelivered", Payload::Recovered(*i)));
    }
    bm_changes(&mut out, a, b, pools);
    credit_changes(&mut out, a, b);
    out
}

fn bm_changes(out: &mut Vec<String>, a: &Channel, b: &Channel, pools: Option<(&LocalBufferPool, &LocalBufferPool)>) {
    diff_into::<NetBuf>(out, "exclusive", &a.bm.exclusive, &b.bm.exclusive);
    diff_into::<NetBuf>(out, "floating", &a.bm.floating, &b.bm.floating);
    if let Some((pa, pb)) = pools {
        diff_into::<NetBuf>(out, "LocalBufferPool", &pa.available, &pb.available);
    }
    diff_into::<NetBuf>(out, "held by operator", &a.held, &b.held);
    diff_into::<NetBuf>(out, "global pool", &a.global_pool, &b.global_pool);
    if a.bm.notify_available != b.bm.notify_available {
        out.push(
            if b.bm.notify_available {
                "notify gate opens"
            } else {
                "notify gate closes"
            }
            .to_string(),
        );
    }
    flag(
        out,
        "waitingForFloating",
        a.bm.waiting_for_floating,
        b.bm.waiting_for_floating,
    );
}

fn credit_changes(out: &mut Vec<String>, a: &Channel, b: &Channel) {
    if a.unannounced_credit != b.unannounced_credit {
        out.push(format!(
            "unannounced credit {} -> {}",
            a.unannounced_credit, b.unannounced_credit
        ));
    }
    if !a.add_credit_queued && b.add_credit_queued {
        out.push("AddCredit write queued".to_string());
    }
    if !a.resume_queued && b.resume_queued {
        out.push("ResumeConsumption write queued".to_string());
    }
    if a.add_credit_in_flight != b.add_credit_in_flight {
        let messages = |v: &[u8]| v.iter().map(|&k| client_message(k)).collect::<Vec<_>>();
        let (added, removed) = list_diff(&messages(&a.add_credit_in_flight), &messages(&b.add_credit_in_flight));
        out.extend(added.iter().map(|m| format!("{m} on the wire")));
        out.extend(removed.iter().map(|m| format!("{m} arrives")));
    }
    if a.bm.required != b.bm.required {
        out.push(format!("numRequiredBuffers {} -> {}", a.bm.required, b.bm.required));
    }
    flag(out, "subpartition blocked", a.producer.blocked, b.producer.blocked);
    match (a.producer.reader_credit, b.producer.reader_credit) {
        (x, y) if x == y => {}
        (None, Some(k)) => out.push(format!("view reader created with credit {k}")),
        (Some(x), Some(y)) => out.push(format!("producer credit {x} -> {y}")),
        (_, None) => out.push("view reader gone".to_string()),
    }
    diff_into(out, "subpartition", &a.producer.subpartition, &b.producer.subpartition);
    let wire = |p: &crate::state::producer::Producer| p.wire.iter().map(|w| w.payload).collect::<Vec<_>>();
    diff_into(out, "wire", &wire(&a.producer), &wire(&b.producer));
}

/// A client-to-server message as the wire carries it.
fn client_message(k: u8) -> String {
    if k == RESUME_CONSUMPTION {
        "ResumeConsumption".to_string()
    } else {
        format!("AddCredit({k})")
    }
}

/// What changed between `a` and `b`; changes on a channel other than `own` are prefixed with
/// its name.
pub fn changes(m: &RecoveryModel, a: &State, b: &State, own: Option<u8>) -> Vec<String> {
    let mut out = Vec::new();
    let shared = a.pools.len() != a.channels.len();
    for c in 0..a.channels.len() as u8 {
        let pools = (!shared).then(|| (a.pool_of(c), b.pool_of(c)));
        let ch = channel_changes(a.ch(c), b.ch(c), pools);
        if Some(c) == own {
            out.extend(ch);
        } else {
            out.extend(ch.into_iter().map(|x| format!("{}: {x}", m.channel_name(c))));
        }
    }
    if shared {
        diff_into::<NetBuf>(
            &mut out,
            "gate's LocalBufferPool",
            &a.pools[0].available,
            &b.pools[0].available,
        );
        if a.pools[0].listeners != b.pools[0].listeners {
            let names = |p: &LocalBufferPool| p.listeners.iter().map(|&l| m.channel_name(l)).collect::<Vec<_>>();
            out.push(format!("pool listeners [{}]", names(&b.pools[0]).join(" ")));
        }
    }
    if !a.ghost_lent_across && b.ghost_lent_across {
        out.push("a floating buffer passes to another channel".to_string());
    }
    for (i, (x, y)) in a.checkpoints.iter().zip(&b.checkpoints).enumerate() {
        if x != y {
            out.push(format!("cp{} {}", i + 1, checkpoint_status(*y)));
        }
    }
    if !a.closed && b.closed {
        out.push("gate closed, LocalBufferPool destroyed".to_string());
    }
    if a.alignment != b.alignment {
        out.push(format!(
            "barrier handler {} -> {}",
            alignment(m, a.alignment.as_ref()),
            alignment(m, b.alignment.as_ref())
        ));
    }
    if a.gate != b.gate {
        out.push(format!("gate queue {} -> {}", gate_queue(m, a), gate_queue(m, b)));
    }
    if a.upstream_recovered != b.upstream_recovered {
        let every = (1u8 << b.channels.len()) - 1;
        out.push(if b.upstream_recovered == every {
            "UpstreamRecoveryTracker: every channel's EndOfOutputChannelStateEvent handled, resumeConsumption of every channel".to_string()
        } else {
            format!(
                "UpstreamRecoveryTracker: {} of {} channels' EndOfOutputChannelStateEvent handled",
                b.upstream_recovered.count_ones(),
                b.channels.len()
            )
        });
    }
    if a.aborted != b.aborted {
        out.push("the coordinator may trigger the next checkpoint".to_string());
    }
    if !a.io_waiting && b.io_waiting {
        out.push("the drainer waits in bufferQueue.wait()".to_string());
    }
    if let (None, Some((c, buffer))) = (a.io_buffer, b.io_buffer) {
        out.push(format!("the drainer fills {buffer} for {}", m.channel_name(c)));
    }
    if a.task != b.task && b.task != TaskPc::Idle {
        out.push(format!("task {}", task_pc(m, b.task)));
    }
    let (pa, pb) = (pending(m, a), pending(m, b));
    out.extend(pb.iter().filter(|p| !pa.contains(p)).map(|p| format!("pending: {p}")));
    if a.violation.is_none()
        && let Some((c, v)) = b.violation
    {
        out.push(format!("ASSERTION FAILS on {}: {v:?}", m.channel_name(c)));
    }
    if out.is_empty() {
        out.push("no visible change".to_string());
    }
    out
}

/// `n` with thousands separators, as reports and the docs write counts (`4,236,633`).
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
