//! `cdr growth` from the outside: bad arguments, the JSON shape, the ends of a dimension (the
//! model's bounds, --max-step, the time budget).

use std::process::Command;

fn cdr(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(args)
        .output()
        .expect("cdr runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn bad_arguments_are_usage_errors() {
    for (args, says) in [
        (&["growth", "--dimension", "bogus"][..], "unknown dimension `bogus`"),
        (&["growth", "--preset", "bogus"][..], "unknown preset `bogus`"),
        (&["growth", "--budget", "0"][..], "--budget"),
        (&["growth", "--max-memory", "lots"][..], "not a size"),
        (&["growth", "--threads", "0"][..], "--threads"),
    ] {
        let (code, _, err) = cdr(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// One local channel's recovered buffers grow from 1 to 8, the model's bound: every step is
/// checked, and the dimension ends at the bound; the table has a row per step.
#[test]
fn a_dimension_ends_at_the_model_s_bound_and_at_max_step() {
    let (code, out, err) = cdr(&[
        "growth",
        "--preset",
        "release-window-local",
        "--dimension",
        "recovered",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 8, "{out}");
    assert_eq!(points[0]["unique_states"], 638, "step 0 is the preset");
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p["step"], i);
        assert_eq!(p["outcome"], "checked");
        assert_eq!(p["passed"], true, "{p}");
        assert!(p["peak_mib"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(points[7]["grown"], "8 recovered per channel");
    assert_eq!(v["ends"][0]["reason"], "bound", "{out}");
    assert!(err.contains("growth: recovered step 7"), "progress on stderr: {err}");

    let (code, out, err) = cdr(&[
        "growth",
        "--preset",
        "release-window-local",
        "--dimension",
        "live,checkpoints",
        "--max-step",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("| dimension | step | grown | unique | generated | × unique | wall s | peak MiB |"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("| live |")).count(), 2, "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("| checkpoints |")).count(),
        2,
        "{out}"
    );
    assert!(out.contains("live: --max-step 1 reached"), "{out}");
}

/// A step still running after the budget is killed and ends its dimension: `tiny` with two
/// checkpoints has millions of states.
#[test]
fn a_step_over_the_budget_is_killed_and_ends_the_dimension() {
    let (code, out, err) = cdr(&[
        "growth",
        "--dimension",
        "checkpoints",
        "--max-step",
        "1",
        "--budget",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let last = v["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"], "over-budget", "{out}");
    assert!(last["wall_seconds"].as_f64().unwrap() >= 1.0, "{last}");
    assert_eq!(last["unique_states"], serde_json::Value::Null);
    assert_eq!(v["ends"][0]["reason"], "budget", "{out}");
}

/// A step that passes the memory budget stops (the check's own --max-memory) and ends its
/// dimension, with the unique states it had reached.
#[test]
fn a_step_over_the_memory_budget_ends_the_dimension() {
    let (code, out, err) = cdr(&[
        "growth",
        "--dimension",
        "checkpoints",
        "--max-step",
        "1",
        "--max-memory",
        "1M",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let last = v["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"], "over-memory", "{out}");
    assert!(last["unique_states_reached"].as_u64().is_some(), "{last}");
    assert_eq!(v["ends"][0]["reason"], "budget", "{out}");
}
