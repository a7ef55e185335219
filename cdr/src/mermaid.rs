//! A counterexample as a Mermaid sequence diagram: one lifeline per thread, an arrow where one
//! thread hands something to another (a `BufferResponse`, an `AddCredit`, a recovered buffer, a
//! credit notification), a note where a thread works on its own. Every message starts with its
//! step number, so the diagram and the step table read side by side.

use recovery_model::tooling::format::{self, Step};
use recovery_model::{Action, ChannelKind, RecoveryModel, Thread};
use std::fmt::Write;

/// Lifelines, left to right in the direction data flows.
const LIFELINES: &[(Thread, &str, &str)] = &[
    (Thread::Coordinator, "Coordinator", "checkpoint coordinator"),
    (Thread::Producer, "Producer", "producer task"),
    (Thread::NettyServer, "Server", "netty server"),
    (Thread::NettyClient, "Client", "netty client"),
    (Thread::Io, "IO", "IO thread"),
    (Thread::Task, "Task", "task thread"),
    (Thread::Recycler, "Recycler", "recycler"),
    (Thread::Canceler, "Canceler", "canceler"),
];

fn id(t: Thread) -> &'static str {
    LIFELINES
        .iter()
        .find(|(x, _, _)| *x == t)
        .map_or("Task", |(_, id, _)| id)
}

/// The thread an action hands its result to, if another one.
fn recipient(m: &RecoveryModel, a: &Action) -> Option<Thread> {
    let to = match a {
        Action::OnRecoveredStateBuffer { .. } | Action::FinishRecoveredBufferDelivery { .. } => Thread::Task,
        Action::SendBuffer { .. } | Action::NotifyBufferAvailable { .. } => Thread::NettyClient,
        Action::OnBuffer { .. } => Thread::Task,
        Action::SendAddCredit { .. } | Action::SendResumeConsumption { .. } | Action::RequestPartitions => {
            Thread::NettyServer
        }
        Action::AbortPendingCheckpoint { .. } => Thread::Producer,
        Action::EmitCheckpointBarrier { channel, .. } => match m.cfg.channels[*channel as usize].kind {
            ChannelKind::Remote => Thread::NettyServer,
            ChannelKind::Local => Thread::Task,
        },
        _ => return None,
    };
    (to != m.thread(a)).then_some(to)
}

/// Text Mermaid shows as is: `#` (which would cut the text short), `;`, `<` and `>` as entity
/// codes, arrows as arrows.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.replace("->", "→").chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            c => out.push(c),
        }
    }
    out
}

fn message(i: usize, s: &Step) -> String {
    let mut text = esc(&format!("{}. {} {}", i + 1, s.channel, s.call));
    let shown: Vec<String> = s.changes.iter().take(3).map(|c| esc(c)).collect();
    if !shown.is_empty() {
        text.push_str("<br/>");
        text.push_str(&shown.join("<br/>"));
    }
    if s.changes.len() > 3 {
        let _ = write!(text, "<br/>(+{} more)", s.changes.len() - 3);
    }
    text
}

/// The sequence diagram of `actions`; `violated` names the property the last state breaks.
pub fn sequence_diagram(m: &RecoveryModel, actions: &[Action], violated: Option<&str>) -> String {
    let (steps, _) = format::steps(m, actions);
    let mut used: Vec<Thread> = vec![
        Thread::Io,
        Thread::Task,
        Thread::NettyClient,
        Thread::NettyServer,
        Thread::Recycler,
    ];
    for a in actions {
        used.push(m.thread(a));
        used.extend(recipient(m, a));
    }
    let mut out = String::from("sequenceDiagram\n");
    let lifelines: Vec<_> = LIFELINES.iter().filter(|(t, _, _)| used.contains(t)).collect();
    for (_, id, name) in &lifelines {
        let _ = writeln!(out, "    participant {id} as {name}");
    }
    for (i, (a, s)) in actions.iter().zip(&steps).enumerate() {
        let from = id(s.thread);
        match recipient(m, a) {
            Some(to) => {
                let _ = writeln!(out, "    {from}->>{}: {}", id(to), message(i, s));
            }
            None => {
                let _ = writeln!(out, "    Note over {from}: {}", message(i, s));
            }
        }
    }
    if let Some(p) = violated {
        let first = lifelines.first().map_or("Task", |l| l.1);
        let last = lifelines.last().map_or("Task", |l| l.1);
        let _ = writeln!(out, "    Note over {first},{last}: violated: {}", esc(p));
    }
    out
}

/// The diagram as a file's content: fenced for Markdown when `path` ends in `.md`.
pub fn file_content(diagram: &str, path: &std::path::Path) -> String {
    if path.extension().is_some_and(|e| e == "md") {
        format!("```mermaid\n{diagram}```\n")
    } else {
        diagram.to_string()
    }
}

/// The line that opens a generated diagram in docs/bug-zoo.md.
#[cfg(test)]
fn bug_zoo_marker(variant: &str) -> String {
    format!("<!-- diagram of {variant}, generated: UPDATE_DOCS=1 cargo test -p cdr bug_zoo -->")
}

/// docs/bug-zoo.md with `diagrams` (variant, diagram) at the end of each variant's section
/// (`## name ...`), replacing the ones there; other text unchanged.
#[cfg(test)]
fn with_bug_zoo_diagrams(doc: &str, diagrams: &[(&str, String)]) -> String {
    // Drop the generated blocks: the marker, the fenced diagram, and the blank line before.
    let mut kept: Vec<&str> = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("<!-- diagram of ") {
            if kept.last() == Some(&"") {
                kept.pop();
            }
            // The fence's opening line differs from "```"; its closing line ends the block.
            lines.by_ref().take_while(|l| *l != "```").count();
            continue;
        }
        kept.push(line);
    }
    let mut out: Vec<String> = Vec::new();
    let mut section: Option<&str> = None;
    let close = |out: &mut Vec<String>, section: Option<&str>| {
        let Some((name, diagram)) = section.and_then(|n| diagrams.iter().find(|(v, _)| *v == n)) else {
            return;
        };
        while out.last().is_some_and(|l| l.is_empty()) {
            out.pop();
        }
        out.push(String::new());
        out.push(bug_zoo_marker(name));
        out.push("```mermaid".to_string());
        out.extend(diagram.lines().map(str::to_string));
        out.push("```".to_string());
        out.push(String::new());
    };
    for line in kept {
        if line.starts_with("## ") || line.starts_with("### ") {
            close(&mut out, section);
            let title = line.trim_start_matches('#').trim_start();
            section = diagrams
                .iter()
                .map(|(v, _)| *v)
                .find(|v| title == *v || title.starts_with(&format!("{v} ")));
        }
        out.push(line.to_string());
    }
    close(&mut out, section);
    let mut text = out.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery_model::bug_zoo::VARIANTS;
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;
    use recovery_model::{Variant, preset};

    /// docs/bug-zoo.md shows each channel variant's shortest counterexample as the diagram
    /// `check --variant NAME --mermaid` draws; `UPDATE_DOCS=1` rewrites them.
    #[test]
    fn bug_zoo_md_draws_each_variant_s_counterexample() {
        let diagrams: Vec<(&str, String)> = VARIANTS
            .iter()
            .map(|row| {
                let m = RecoveryModel::new(preset(row.preset).unwrap(), row.variant);
                let actions = shortest_counterexample(&m, row.property)
                    .unwrap_or_else(|| panic!("{} is found on {}", row.name, row.preset));
                (row.name, sequence_diagram(&m, &actions, Some(row.property.name())))
            })
            .collect();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bug-zoo.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let want = with_bug_zoo_diagrams(&doc, &diagrams);
        if want != doc && std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        assert!(
            want == doc,
            "docs/bug-zoo.md's diagrams are stale: UPDATE_DOCS=1 cargo test -p cdr bug_zoo"
        );
        for row in VARIANTS {
            assert!(doc.contains(&bug_zoo_marker(row.name)), "no diagram of {}", row.name);
        }
        // Idempotent: the generated blocks are recognised and replaced, not added again.
        assert_eq!(with_bug_zoo_diagrams(&want, &diagrams), want);
    }

    #[test]
    fn diagram_has_the_five_lifelines_one_message_per_step_and_the_verdict() {
        let m = RecoveryModel::new(preset("tiny").unwrap(), Variant::EnableNotifyFlagBeforeCount);
        let actions = shortest_counterexample(&m, PropertyId::CreditConservation).unwrap();
        let d = sequence_diagram(&m, &actions, Some(PropertyId::CreditConservation.name()));
        for p in ["IO thread", "task thread", "netty client", "netty server", "recycler"] {
            assert!(d.contains(&format!(" as {p}\n")), "{p} missing:\n{d}");
        }
        let messages = d
            .lines()
            .filter(|l| l.contains("->>") || l.contains("Note over"))
            .count();
        assert_eq!(messages, actions.len() + 1, "{d}");
        assert!(d.contains("Server->>Client: 4. remote#35;1 sendBuffer(eoo0)"), "{d}");
        assert!(d.trim_end().ends_with("violated: credit conservation"));
        assert_eq!(esc("a;b#1 <c> -> d"), "a#59;b#35;1 #lt;c#gt; → d");
    }
}
