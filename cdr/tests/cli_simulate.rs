//! `cdr simulate` from the outside: exit codes, the JSON shape, the trace it writes.

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

#[test]
fn a_variant_fails_with_a_shrunk_replayable_counterexample_and_the_fixed_model_passes() {
    let dir = std::env::temp_dir().join(format!("cdr-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("cex.json");
    let (code, out, err) = cdr(&[
        "simulate",
        "--variant",
        "stash-replayed-at-head",
        "--walks",
        "600",
        "--seed",
        "1",
        "--trace-out",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("VIOLATED (walk"), "{out}");
    assert!(
        out.contains("reproduce: cdr simulate --preset tiny --variant stash-replayed-at-head --seed 1"),
        "{out}"
    );
    // The fix is in impl/, so the bug's counterexample diverges there.
    let (code, _, err) = cdr(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");

    let (code, out, err) = cdr(&["simulate", "--preset", "tiny", "--walks", "200", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in ["seed", "walks", "steps", "distinct_states", "seconds", "properties"] {
        assert!(v.get(key).is_some(), "{key} missing");
    }
    assert_eq!(v["walks"], 200);
}

#[test]
fn bad_arguments_exit_two_before_any_walk() {
    for args in [
        vec!["simulate", "--walks", "0"],
        vec!["simulate", "--steps", "0"],
        vec!["simulate", "--preset", "nope"],
        vec!["simulate", "--variant", "nope"],
        vec!["simulate", "--threads", "0"],
        vec!["simulate", "--trace-out", "/nonexistent-dir/t.json"],
    ] {
        let (code, _, err) = cdr(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error"), "{args:?}: {err}");
    }
}
