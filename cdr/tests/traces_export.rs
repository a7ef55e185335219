//! `cdr traces`: the corpus as JSON Lines of replayable traces, and as ITF read back by an
//! independent reader (the `itf` crate).

use conformance::trace::Trace;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::process::Command;

fn cdr(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(args)
        .output()
        .expect("cdr runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cdr-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[derive(Debug, Deserialize)]
struct ItfState {
    action_taken: ItfAction,
    observation: ItfObservation,
    channels: Vec<ItfChannel>,
    gate: ItfGate,
}

#[derive(Debug, Deserialize)]
struct ItfAction {
    name: String,
}

#[derive(Debug, Deserialize)]
struct ItfObservation {
    kind: String,
}

#[derive(Debug, Deserialize)]
struct ItfChannel {
    kind: String,
    released: bool,
    recovery_seq: i64,
    queue: Vec<ItfElement>,
    persisted: BTreeMap<i64, Vec<String>>,
    subpartition: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ItfElement {
    item: String,
}

#[derive(Debug, Deserialize)]
struct ItfGate {
    queue: Vec<i64>,
    priority: i64,
    state_consumed: bool,
}

#[test]
fn itf_traces_read_back_with_the_itf_crate_match_the_json_traces() {
    let (jsonl, itf_path) = (temp("walks.jsonl"), temp("walks.itf.jsonl"));
    for (path, format) in [(&jsonl, "jsonl"), (&itf_path, "itf")] {
        let (code, err) = cdr(&[
            "traces",
            "--preset",
            "late",
            "--random",
            "12",
            "--seed",
            "5",
            "--format",
            format,
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let traces: Vec<Trace> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| Trace::from_json(l).expect("a valid trace"))
        .collect();
    let itfs: Vec<itf::Trace<ItfState>> = std::fs::read_to_string(&itf_path)
        .unwrap()
        .lines()
        .map(|l| itf::trace_from_str(l).expect("a valid ITF trace"))
        .collect();
    assert_eq!(traces.len(), 12);
    assert_eq!(itfs.len(), 12);
    let mut compared = 0;
    for (t, i) in traces.iter().zip(&itfs) {
        assert_eq!(i.vars.len(), 7);
        assert_eq!(i.states.len(), t.steps.len() + 1, "the initial state comes first");
        let init = &i.states[0].value;
        assert_eq!(
            (init.action_taken.name.as_str(), init.observation.kind.as_str()),
            ("init", "none")
        );
        for (step, state) in t.steps.iter().zip(&i.states[1..]) {
            let s = &state.value;
            let action = serde_json::to_value(step.action).unwrap();
            assert_eq!(s.action_taken.name, action["action"].as_str().unwrap());
            let observation = serde_json::to_value(&step.observation).unwrap();
            assert_eq!(s.observation.kind, observation["kind"].as_str().unwrap());
            assert_eq!(
                s.gate.queue,
                step.snapshot.gate.queue.iter().map(|c| *c as i64).collect::<Vec<_>>()
            );
            assert_eq!(s.gate.priority, step.snapshot.gate.priority as i64);
            assert_eq!(s.gate.state_consumed, step.snapshot.gate.state_consumed);
            for (c, v) in s.channels.iter().zip(&step.snapshot.channels) {
                assert_eq!(c.kind, serde_json::to_value(v.kind).unwrap().as_str().unwrap());
                assert_eq!(c.released, v.released);
                assert_eq!(c.recovery_seq, v.recovery_seq as i64);
                let queue: Vec<String> = v.queue.iter().map(|e| e.item.to_string()).collect();
                assert_eq!(c.queue.iter().map(|e| e.item.clone()).collect::<Vec<_>>(), queue);
                let sub: Vec<String> = v.subpartition.iter().map(ToString::to_string).collect();
                assert_eq!(c.subpartition, sub);
                let persisted: BTreeMap<i64, Vec<String>> = v
                    .persisted
                    .iter()
                    .map(|(k, items)| (*k as i64, items.iter().map(ToString::to_string).collect()))
                    .collect();
                assert_eq!(c.persisted, persisted);
            }
            compared += 1;
        }
    }
    assert!(compared > 50, "{compared} states compared");
}

#[test]
fn the_edge_corpus_holds_one_replayable_trace_per_cover_trace() {
    let out = temp("local-buffers.jsonl");
    let (code, err) = cdr(&["traces", "--preset", "local-buffers", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let m = recovery_model::RecoveryModel::new(
        recovery_model::preset("local-buffers").unwrap(),
        recovery_model::Variant::Fixed,
    );
    let graph = conformance::generate::Graph::explore(&m);
    assert_eq!(text.lines().count(), graph.edge_cover().count());
    for line in text.lines().step_by(97) {
        let trace = Trace::from_json(line).expect("valid");
        let mut driver = conformance::impl_driver::ImplDriver::new(&m.cfg);
        conformance::replay::replay(&trace, &mut driver).expect("replays on impl/");
    }
    let (code, err) = cdr(&["traces", "--preset", "tiny", "--out", "/nonexistent-dir/t.jsonl"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot write"), "{err}");
}

/// Keywords of the languages whose readers take ITF traces: Python (itf-py turns records into
/// named tuples), Rust (the `itf` crate, serde fields) and Quint (records and state variables).
const KEYWORDS: &[&str] = &[
    // Python
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "match", "case", // Rust
    "const", "crate", "enum", "extern", "false", "fn", "impl", "let", "loop", "mod", "move", "mut", "pub", "ref",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "dyn", "box", "do",
    "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "become", "abstract", "gen",
    // Quint
    "module", "export", "var", "val", "pure", "action", "run", "temporal", "nondet", "assume", "Set", "List", "Bool",
    "Int", "Str", "Nat", "iff", "implies", "all", "any",
];

/// Every variable and record field of an exported ITF trace is an identifier of Python, Rust
/// and Quint: no keyword, nothing but letters, digits and `_`. (`#meta`, `#bigint` and `#map`
/// are ITF's own.) Across presets whose snapshots hold every field: both channel kinds,
/// floating buffers, faults.
#[test]
fn itf_names_are_identifiers_in_python_rust_and_quint() {
    fn walk(v: &serde_json::Value, names: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, x) in map {
                    if !k.starts_with('#') {
                        names.insert(k.clone());
                    }
                    if k != "#meta" {
                        walk(x, names);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|x| walk(x, names)),
            _ => {}
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for preset in ["ci", "faults", "migration"] {
        let path = temp(&format!("{preset}.itf.jsonl"));
        let (code, err) = cdr(&[
            "traces",
            "--preset",
            preset,
            "--random",
            "30",
            "--seed",
            "3",
            "--format",
            "itf",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let trace: serde_json::Value = serde_json::from_str(line).unwrap();
            walk(&trace["states"], &mut names);
            for var in trace["vars"].as_array().unwrap() {
                names.insert(var.as_str().unwrap().to_string());
            }
        }
    }
    assert!(
        names.contains("global_pool") && names.contains("action_taken"),
        "{names:?}"
    );
    for name in &names {
        assert!(!KEYWORDS.contains(&name.as_str()), "`{name}` is a keyword");
        assert!(
            name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "`{name}` is not an identifier"
        );
    }
}
