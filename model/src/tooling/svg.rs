//! A picture of one state for stateright's Explorer and the docs: the threads and checkpoints
//! on top, the properties this state violates in a red banner, then one card per channel with
//! its queue (recovered data, recovery barriers, the sentinel, live data, the priority head),
//! the stash, the flags, the `BufferManager` (exclusive, floating, the notification gate),
//! credit (unannounced, `AddCredit` in flight, the producer's) and what each checkpoint
//! persisted.
//!
//! Only Explorer and the CLI call this, once per displayed state, never the checker. Elements
//! use the model's short names (`r0` recovered, `d1` live data, `e0` event, `barrier1`,
//! `RCB1`, `EOR`, `x0` exclusive and `f0` floating buffers) and one colour per kind.

use crate::action::Action;
use crate::config::ChannelKind;
use crate::model::RecoveryModel;
use crate::properties::{PropertyId, expected_persisted};
use crate::state::LocalBufferPool;
use crate::state::{Channel, Entry, NetBuf, Payload, State};
use crate::tooling::format;
use stateright::Expectation;
use std::fmt::Write;

const WIDTH: f32 = 980.0;
const ROW: f32 = 26.0;
const LABEL_X: f32 = 24.0;
const CHIPS_X: f32 = 130.0;
const CHAR_W: f32 = 7.3;

/// How a chip is drawn: fill, stroke, text colour.
#[derive(Clone, Copy)]
enum Look {
    Recovered,
    RecoveryBarrier,
    Sentinel,
    Data,
    Event,
    Barrier,
    Exclusive,
    Floating,
}

impl Look {
    fn of(p: Payload) -> Look {
        match p {
            Payload::Recovered(_) => Look::Recovered,
            Payload::RecoveryBarrier(_) => Look::RecoveryBarrier,
            Payload::EndOfRecovery => Look::Sentinel,
            Payload::Data(_) => Look::Data,
            Payload::Event(_) | Payload::EndOfOutput(_) => Look::Event,
            Payload::Barrier(_) | Payload::Announcement(_) => Look::Barrier,
            Payload::AlignedBarrier(_) | Payload::BacklogAnnouncement => Look::Event,
        }
    }

    fn of_buffer(b: NetBuf) -> Look {
        match b {
            NetBuf::Exclusive(_) => Look::Exclusive,
            NetBuf::Floating(_) => Look::Floating,
        }
    }

    fn colours(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Look::Recovered => ("#cfe2ff", "#3d6fd1", "#102a5c"),
            Look::RecoveryBarrier => ("#ffe08a", "#b58100", "#4a3500"),
            Look::Sentinel => ("#6f42c1", "#44237f", "#ffffff"),
            Look::Data => ("#c9efc4", "#3f8f36", "#173d12"),
            Look::Event => ("#bfeee8", "#2a8f84", "#0f3a35"),
            Look::Barrier => ("#f7c6c6", "#c0392b", "#5c1010"),
            Look::Exclusive => ("#e4e7eb", "#6c757d", "#212529"),
            Look::Floating => ("#fde2c8", "#c86f16", "#4d2a05"),
        }
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG being written, top to bottom.
struct Canvas {
    body: String,
    y: f32,
}

impl Canvas {
    fn text(&mut self, x: f32, y: f32, class: &str, s: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.0}" y="{y:.0}" class="{class}">{}</text>"#,
            esc(s)
        );
    }

    /// A chip at (x, y) (top left); returns its width. `strong` draws a thick red border
    /// (priority elements).
    fn chip(&mut self, x: f32, y: f32, label: &str, look: Look, strong: bool) -> f32 {
        let w = label.chars().count() as f32 * CHAR_W + 12.0;
        let (fill, stroke, ink) = look.colours();
        let (stroke, sw) = if strong { ("#d00000", 3.0) } else { (stroke, 1.2) };
        let _ = write!(
            self.body,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="19" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/><text x="{:.1}" y="{:.1}" class="cdr-chip" style="fill:{ink}">{}</text>"#,
            y - 14.0,
            x + 6.0,
            y,
            esc(label)
        );
        w
    }

    /// A labelled row of chips; `(label, look, strong)` each; `empty` is written when there
    /// are none. Returns the x after the last chip.
    fn chips(&mut self, x: f32, y: f32, items: &[(String, Look, bool)], empty: &str) -> f32 {
        if items.is_empty() {
            self.text(x, y, "cdr-dim", empty);
            return x + empty.len() as f32 * CHAR_W + 8.0;
        }
        let mut x = x;
        for (label, look, strong) in items {
            x += self.chip(x, y, label, *look, *strong) + 4.0;
        }
        x + 4.0
    }

    /// Like [`Canvas::text`]; returns the x after the text.
    fn text_w(&mut self, x: f32, y: f32, class: &str, s: &str) -> f32 {
        self.text(x, y, class, s);
        x + s.chars().count() as f32 * CHAR_W
    }

    fn label(&mut self, s: &str) {
        let y = self.y;
        self.text(LABEL_X, y, "cdr-label", s);
    }
}

fn entry_chip(e: &Entry, strong: bool) -> (String, Look, bool) {
    let label = match e.buffer {
        Some(b) => format!("{}@{b}", e.payload),
        None => e.payload.to_string(),
    };
    (label, Look::of(e.payload), strong)
}

fn buffer_chips(v: &[NetBuf]) -> Vec<(String, Look, bool)> {
    v.iter().map(|b| (b.to_string(), Look::of_buffer(*b), false)).collect()
}

fn payload_chips(v: impl IntoIterator<Item = Payload>) -> Vec<(String, Look, bool)> {
    v.into_iter().map(|p| (p.to_string(), Look::of(p), false)).collect()
}

/// The properties `s` violates: `always` ones that are false, and `eventually` ones that are
/// false in a state with no way forward.
pub fn violated(m: &RecoveryModel, s: &State) -> Vec<PropertyId> {
    let mut terminal = None;
    PropertyId::ALL
        .iter()
        .copied()
        .filter(|p| match p.expectation() {
            Expectation::Always => !p.predicate()(m, s),
            Expectation::Eventually => !p.predicate()(m, s) && *terminal.get_or_insert_with(|| m.is_terminal(s)),
            Expectation::Sometimes => false,
        })
        .collect()
}

/// A line of the Explorer's picture of an initial state, with an optional link: a
/// counterexample `cdr explore` found, or how to get every verdict.
pub type ExplorerNote = (String, Option<String>);

/// The SVG of `state`.
pub fn state(model: &RecoveryModel, state: &State) -> Option<String> {
    state_after(model, state, None, &[])
}

/// The SVG of a path's last state, with the step that led to it; an initial state shows
/// `notes`.
pub fn of_path(model: &RecoveryModel, path: stateright::Path<State, Action>, notes: &[ExplorerNote]) -> Option<String> {
    // Each entry is a state and the action that leaves it: the second last holds the step
    // that led to the state shown.
    let mut states = path.into_vec();
    let (last, _) = states.pop()?;
    let step = states.pop().and_then(|(before, a)| a.map(|a| (before, a)));
    state_after(model, &last, step.as_ref().map(|(before, a)| (before, a)), notes)
}

/// The SVG of `state`, reached from `before` by `step` when given: the step and what it
/// changed are shown under the header, and the cards of the channels it changed are framed in
/// blue; without a step (an initial state), `notes` are shown there.
pub fn state_after(
    model: &RecoveryModel,
    state: &State,
    step: Option<(&State, &Action)>,
    notes: &[ExplorerNote],
) -> Option<String> {
    let mut cv = Canvas {
        body: String::new(),
        y: 0.0,
    };
    header(&mut cv, model, state);
    let changed: Vec<bool> = (0..state.channels.len())
        .map(|c| step.is_some_and(|(before, _)| before.channels[c] != state.channels[c]))
        .collect();
    if let Some((before, a)) = step {
        last_step(&mut cv, model, before, a, state);
    } else {
        show_notes(&mut cv, notes);
    }
    banner(&mut cv, model, state);
    for c in 0..state.channels.len() as u8 {
        channel_card(&mut cv, model, state, c, changed[c as usize]);
    }
    legend(&mut cv);
    let h = cv.y + 8.0;
    Some(format!(
        concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="cdr-state" data-view="recovery-state" "#,
            r#"width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" style="max-width:100%;height:auto">"#,
            "<style>",
            ".cdr-state text{{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#212529;white-space:pre}}",
            ".cdr-state .cdr-title{{font-size:14px;font-weight:bold}}",
            ".cdr-state .cdr-label{{fill:#495057;font-weight:bold}}",
            ".cdr-state .cdr-dim{{fill:#868e96}}",
            ".cdr-state .cdr-bad{{fill:#b00020;font-weight:bold}}",
            ".cdr-state .cdr-good{{fill:#2b8a3e}}",
            ".cdr-state .cdr-chip{{font-size:12px}}",
            ".cdr-state .cdr-note{{fill:#1864ab}}",
            ".cdr-state a .cdr-note{{text-decoration:underline}}",
            "</style>",
            r##"<rect x="0" y="0" width="{w:.0}" height="{h:.0}" fill="#ffffff"/>"##,
            "{body}</svg>"
        ),
        w = WIDTH,
        h = h,
        body = cv.body
    ))
}

fn header(cv: &mut Canvas, m: &RecoveryModel, s: &State) {
    cv.y = 22.0;
    let title = format!(
        "variant {} · {} channel{} · {} checkpoint{}",
        m.variant.name(),
        s.channels.len(),
        if s.channels.len() == 1 { "" } else { "s" },
        m.cfg.checkpoints,
        if m.cfg.checkpoints == 1 { "" } else { "s" }
    );
    cv.text(12.0, cv.y, "cdr-title", &title);
    cv.y += 20.0;
    let threads = format!(
        "task: {}  ·  io: {}  ·  partitions requested: {}",
        format::task_pc(m, s.task),
        format::io_pc(m, s),
        if s.partitions_requested { "yes" } else { "no" }
    );
    let class = if matches!(s.task, crate::state::TaskPc::AwaitUpstreamReady { .. }) {
        "cdr-bad"
    } else {
        ""
    };
    cv.text(12.0, cv.y, class, &threads);
    for p in format::pending(m, s) {
        cv.y += 17.0;
        cv.text(12.0, cv.y, "", &format!("pending after lock: {p}"));
    }
    cv.y += 17.0;
    cv.text(
        12.0,
        cv.y,
        "",
        &format!(
            "checkpoints: {}   gate queue: {}",
            format::checkpoints(s),
            format::gate_queue(m, s)
        ),
    );
    cv.y += 12.0;
}

fn banner(cv: &mut Canvas, m: &RecoveryModel, s: &State) {
    let mut lines: Vec<String> = violated(m, s).iter().map(|p| format!("violated: {p}")).collect();
    if let Some((c, v)) = s.violation {
        lines.push(format!("assertion failed on {}: {v:?}", m.channel_name(c)));
    }
    if lines.is_empty() {
        cv.y += 16.0;
        cv.text(12.0, cv.y, "cdr-good", "no property is violated in this state");
        cv.y += 10.0;
        return;
    }
    let h = 10.0 + 18.0 * lines.len() as f32;
    let _ = write!(
        cv.body,
        r##"<rect x="8" y="{:.0}" width="{:.0}" height="{h:.0}" rx="5" fill="#ffe3e3" stroke="#b00020" stroke-width="2"/>"##,
        cv.y + 4.0,
        WIDTH - 16.0
    );
    for l in &lines {
        cv.y += 18.0;
        let _ = write!(
            cv.body,
            r#"<text x="20" y="{:.0}" class="cdr-bad cdr-violated">{}</text>"#,
            cv.y + 4.0,
            esc(l)
        );
    }
    cv.y += 16.0;
}

/// The notes for an initial state's picture, a line each, linked where they have a link.
fn show_notes(cv: &mut Canvas, notes: &[ExplorerNote]) {
    for (text, link) in notes {
        cv.y += 17.0;
        let line = format!(r#"<text x="12" y="{:.0}" class="cdr-note">{}</text>"#, cv.y, esc(text));
        match link {
            Some(href) => {
                let _ = write!(cv.body, r#"<a href="{}" target="_top">{line}</a>"#, esc(href));
            }
            None => cv.body.push_str(&line),
        }
    }
    if !notes.is_empty() {
        cv.y += 6.0;
    }
}

/// The step that led here, and what it changed (as the step tables print it).
fn last_step(cv: &mut Canvas, m: &RecoveryModel, before: &State, a: &Action, after: &State) {
    const MAX_LINES: usize = 6;
    let step = format::step_to(m, before, a, after);
    let mut lines = vec![format!("last step: {} {} {}", step.thread, step.channel, step.call)];
    let n = step.changes.len();
    lines.extend(step.changes.into_iter().take(MAX_LINES).map(|c| format!("  {c}")));
    if n > MAX_LINES {
        lines.push(format!("  (+{} more)", n - MAX_LINES));
    }
    let h = 10.0 + 17.0 * lines.len() as f32;
    let _ = write!(
        cv.body,
        r##"<rect x="8" y="{:.0}" width="{:.0}" height="{h:.0}" rx="5" fill="#e7f5ff" stroke="#1c7ed6" stroke-width="1.5"/>"##,
        cv.y + 4.0,
        WIDTH - 16.0
    );
    for (i, l) in lines.iter().enumerate() {
        cv.y += 17.0;
        let class = if i == 0 {
            "cdr-label cdr-last-step"
        } else {
            "cdr-last-step"
        };
        let _ = write!(
            cv.body,
            r#"<text x="20" y="{:.0}" class="{class}">{}</text>"#,
            cv.y + 4.0,
            esc(l)
        );
    }
    cv.y += 14.0;
}

fn channel_card(cv: &mut Canvas, m: &RecoveryModel, s: &State, c: u8, changed: bool) {
    let ch = s.ch(c);
    let remote = m.cfg.channels[c as usize].kind == ChannelKind::Remote;
    let top = cv.y + 8.0;
    let start = cv.body.len();
    cv.y = top + 22.0;
    let mut x = 20.0 + cv_title(cv, &m.channel_name(c));
    for (on, name) in [
        (ch.in_recovery, "inRecovery"),
        (ch.upstream_ready, "upstreamReady"),
        (ch.state_consumed, "stateConsumed"),
        (ch.released, "released"),
    ] {
        let label = format!("{name}={on}");
        let class = if on && name == "inRecovery" { "cdr-bad" } else { "" };
        let y = cv.y;
        cv.text(x, y, class, &label);
        x += label.len() as f32 * CHAR_W + 14.0;
    }
    queue_rows(cv, ch, remote);
    upstream_row(cv, ch, remote);
    delivered_row(cv, ch);
    if remote {
        buffer_row(cv, ch, s.pool_of(c));
        credit_row(cv, s, c);
    }
    persisted_rows(cv, m, s, c);
    cv.y += 12.0;
    // A card the last step changed has a blue frame, as the last-step box.
    let (stroke, width) = if changed { ("#1c7ed6", 2.5) } else { ("#adb5bd", 1.0) };
    let frame = format!(
        r##"<rect x="8" y="{top:.0}" width="{:.0}" height="{:.0}" rx="6" fill="#f8f9fa" stroke="{stroke}" stroke-width="{width}"/>"##,
        WIDTH - 16.0,
        cv.y - top
    );
    cv.body.insert_str(start, &frame);
}

fn cv_title(cv: &mut Canvas, name: &str) -> f32 {
    let y = cv.y;
    cv.text(20.0, y, "cdr-title", name);
    name.len() as f32 * 8.6 + 20.0
}

fn queue_rows(cv: &mut Canvas, ch: &Channel, remote: bool) {
    cv.y += ROW;
    cv.label(if remote { "queue" } else { "recovered" });
    let p = ch.priority_len as usize;
    let items: Vec<_> = ch.queue.iter().enumerate().map(|(i, e)| entry_chip(e, i < p)).collect();
    let y = cv.y;
    cv.chips(CHIPS_X, y, &items, "(empty)");
    if remote {
        cv.y += ROW;
        cv.label("stash");
        let items: Vec<_> = ch.stash.iter().map(|e| entry_chip(e, false)).collect();
        let y = cv.y;
        cv.chips(CHIPS_X, y, &items, "(empty)");
    }
}

fn upstream_row(cv: &mut Canvas, ch: &Channel, remote: bool) {
    cv.y += ROW;
    let y = cv.y;
    if remote {
        cv.label("upstream");
        let title = if ch.producer.blocked { "blocked" } else { "subpartition" };
        cv.text(CHIPS_X, y, "cdr-dim", title);
        let x = cv.chips(
            CHIPS_X + 100.0,
            y,
            &payload_chips(ch.producer.subpartition.iter().copied()),
            "(empty)",
        );
        cv.text(x + 6.0, y, "cdr-dim", "wire ->");
        cv.chips(
            x + 70.0,
            y,
            &payload_chips(ch.producer.wire.iter().map(|w| w.payload)),
            "(empty)",
        );
    } else {
        cv.label("view");
        let x = cv.chips(
            CHIPS_X,
            y,
            &payload_chips(ch.producer.subpartition.iter().copied()),
            "(empty)",
        );
        let mut notes = Vec::new();
        if ch.producer.blocked {
            notes.push("blocked");
        }
        if ch.pending_priority {
            notes.push("hasPendingPriorityEvent");
        }
        if !notes.is_empty() {
            cv.text(x + 6.0, y, "", &notes.join("  "));
        }
    }
}

fn delivered_row(cv: &mut Canvas, ch: &Channel) {
    cv.y += ROW;
    cv.label("operator got");
    let items: Vec<_> = ch
        .ghost_delivered
        .iter()
        .map(|d| {
            (
                format!("{} {}", d.payload, format::seq(d.seq)),
                Look::of(d.payload),
                false,
            )
        })
        .collect();
    let y = cv.y;
    cv.chips(CHIPS_X, y, &items, "(nothing yet)");
}

fn buffer_row(cv: &mut Canvas, ch: &Channel, pool: &LocalBufferPool) {
    cv.y += ROW;
    cv.label("buffers");
    let y = cv.y;
    let mut x = CHIPS_X;
    let (gate, class) = if ch.bm.notify_available {
        ("notify gate OPEN", "cdr-good")
    } else {
        ("notify gate CLOSED", "cdr-bad")
    };
    cv.text(x, y, class, gate);
    x += gate.len() as f32 * CHAR_W + 14.0;
    for (name, v) in [
        ("exclusive", &ch.bm.exclusive),
        ("floating", &ch.bm.floating),
        ("pool", &pool.available),
        ("held", &ch.held),
        ("global", &ch.global_pool),
    ] {
        if v.is_empty() && matches!(name, "global" | "pool") {
            continue;
        }
        cv.text(x, y, "cdr-dim", name);
        x = cv.chips(x + name.len() as f32 * CHAR_W + 6.0, y, &buffer_chips(v), "-") + 6.0;
    }
    if ch.bm.waiting_for_floating {
        cv.text(x, y, "cdr-dim", "waitingForFloating");
    }
}

fn credit_row(cv: &mut Canvas, s: &State, c: u8) {
    cv.y += ROW;
    cv.label("credit");
    let ch = s.ch(c);
    let mut parts = vec![format!("unannounced {}", ch.unannounced_credit)];
    if ch.add_credit_queued {
        parts.push("AddCredit write queued".to_string());
    }
    let flight: Vec<String> = ch
        .add_credit_in_flight
        .iter()
        .map(|k| format!("AddCredit({k})"))
        .collect();
    if !flight.is_empty() {
        parts.push(format!("in flight {}", flight.join(" ")));
    }
    parts.push(match ch.producer.reader_credit {
        Some(k) => format!("producer {k}"),
        None => "no view reader".to_string(),
    });
    let mut pending = 0u32;
    let mut by = Vec::new();
    for (who, a) in [
        ("task", s.task_announce),
        ("netty-client", s.client_announce),
        (
            "recycler",
            match s.recycler {
                crate::state::RecyclerPc::Announce(a) => Some(a),
                _ => None,
            },
        ),
    ] {
        if let Some(a) = a.filter(|a| a.channel == c) {
            pending += a.n as u32;
            by.push(format!("{who} +{}", a.n));
        }
    }
    if !by.is_empty() {
        parts.push(format!("to announce: {}", by.join(", ")));
    }
    // What credit conservation adds up, against the buffers that can hold arriving data.
    let on_wire = ch.producer.wire.iter().filter(|w| w.payload.is_data()).count() as u32;
    let total = ch.unannounced_credit as u32
        + pending
        + ch.add_credit_in_flight.iter().map(|&k| k as u32).sum::<u32>()
        + ch.producer.reader_credit.unwrap_or(0) as u32
        + on_wire;
    let available = ch.bm.available() as u32;
    let in_recovery = ch.in_recovery && !ch.released;
    let y = cv.y;
    let x = cv.text_w(
        CHIPS_X,
        y,
        if in_recovery && total > 0 { "cdr-bad" } else { "" },
        &parts.join("  ·  "),
    );
    let bad = !ch.released && total > available;
    let sum = format!("= credit {total} {} buffers {available}", if bad { ">" } else { "<=" });
    cv.text(x + 12.0, y, if bad { "cdr-bad" } else { "cdr-dim" }, &sum);
}

fn persisted_rows(cv: &mut Canvas, m: &RecoveryModel, s: &State, c: u8) {
    let ch = s.ch(c);
    cv.y += ROW;
    cv.label("persisted");
    let y = cv.y;
    let status = format!(
        "persister {:?} (last barrier {})",
        ch.persister.status, ch.persister.last_seen_barrier
    );
    cv.text(CHIPS_X, y, "cdr-dim", &status);
    let inexact = violated(m, s).contains(&PropertyId::PersistedContentIsExact);
    for cp in 1..=m.cfg.checkpoints {
        cv.y += ROW;
        let y = cv.y;
        cv.text(CHIPS_X, y, "", &format!("cp{cp}"));
        let got = ch.persisted(cp);
        let x = cv.chips(CHIPS_X + 40.0, y, &payload_chips(got.iter().copied()), "(nothing)");
        if inexact && let Some(mut want) = expected_persisted(ch, cp, m.cfg.channels[c as usize].recovered) {
            let mut got = got;
            got.sort();
            want.sort();
            if got != want {
                cv.text(x + 6.0, y, "cdr-bad", "expected");
                cv.chips(x + 80.0, y, &payload_chips(want), "(nothing)");
            }
        }
    }
}

fn legend(cv: &mut Canvas) {
    cv.y += 26.0;
    let y = cv.y;
    let mut x = 12.0;
    for (label, look) in [
        ("r0 recovered", Look::Recovered),
        ("RCB1 recovery barrier", Look::RecoveryBarrier),
        ("EOR sentinel", Look::Sentinel),
        ("d1 live data", Look::Data),
        ("e0 event", Look::Event),
        ("barrier1", Look::Barrier),
        ("x0 exclusive", Look::Exclusive),
        ("f0 floating", Look::Floating),
    ] {
        x += cv.chip(x, y, label, look, false) + 6.0;
    }
    cv.y += 20.0;
    let y = cv.y;
    cv.text(
        12.0,
        y,
        "cdr-dim",
        "queues: head on the left, priority elements with a red border; r0@x0 = r0 held in network buffer x0",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;
    use crate::variant::Variant;
    use stateright::Model;

    #[test]
    fn initial_state_picture_shows_every_channel_and_no_violation() {
        let m = RecoveryModel::new(preset("ci").unwrap(), Variant::Fixed);
        let s = m.init_states().remove(0);
        let svg = state(&m, &s).unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        for name in ["local#0", "remote#1", "notify gate CLOSED", "no property is violated"] {
            assert!(svg.contains(name), "{name} missing");
        }
        assert_eq!(svg.matches('<').count(), svg.matches('>').count());
    }

    #[test]
    fn the_explorer_picture_names_the_last_step_and_frames_the_channels_it_changed() {
        let m = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
        let s0 = m.init_states().remove(0);
        let a = Action::SendBuffer { channel: 1 };
        let request = Action::RequestPartitions;
        let s1 = m.next_state(&s0, request).unwrap();
        let s2 = m.next_state(&s1, a).unwrap();
        let path = stateright::Path::from_actions(&m, s0.clone(), [&request, &a]).expect("a path");
        let svg = m.as_svg(path).unwrap();
        assert!(
            svg.contains("last step: netty-server remote#1 sendBuffer(eoo0)"),
            "{svg}"
        );
        assert!(svg.contains("wire +eoo0"), "{svg}");
        assert!(svg.contains("subpartition blocked false -&gt; true"), "{svg}");
        assert!(svg.contains(">blocked</text>"), "{svg}");
        // remote#1's card changed, local#0's did not: one blue frame.
        assert_eq!(
            svg.matches(r##"stroke="#1c7ed6" stroke-width="2.5""##).count(),
            1,
            "{svg}"
        );
        assert_eq!(state_after(&m, &s2, Some((&s1, &a)), &[]), Some(svg));
        // Without a step (the initial state), no last-step box.
        assert!(!state(&m, &s0).unwrap().contains("last step:"));
    }

    #[test]
    fn the_initial_state_picture_shows_the_explorer_notes_linked() {
        let m = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
        let notes = vec![
            (
                "counterexample for \"x\" (3 steps)".to_string(),
                Some("#/steps/0/1/2".to_string()),
            ),
            ("plain note".to_string(), None),
        ];
        let s0 = m.init_states().remove(0);
        let svg = state_after(&m, &s0, None, &notes).unwrap();
        assert!(
            svg.contains(r##"<a href="#/steps/0/1/2" target="_top"><text"##),
            "{svg}"
        );
        assert!(
            svg.contains("counterexample for &quot;x&quot; (3 steps)</text></a>"),
            "{svg}"
        );
        assert!(svg.contains(">plain note</text>"), "{svg}");
        let a = Action::RequestPartitions;
        let s1 = m.next_state(&s0, a).unwrap();
        assert!(
            !state_after(&m, &s1, Some((&s0, &a)), &notes)
                .unwrap()
                .contains("plain note")
        );
    }
}
