//! `cdr conform` and `cdr replay` from the outside: exit codes, the JSON shape, trace files.

use conformance::trace::Trace;
use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::shortest_counterexample;
use recovery_model::{RecoveryModel, Variant, preset};
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

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cdr-conform-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn conform_json_has_every_field_and_exits_zero_without_divergence() {
    let (code, out, err) = cdr(&["conform", "--preset", "tiny", "--random", "20", "--seed", "7", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "traces",
        "steps",
        "steps_per_second",
        "states_covered",
        "states_total",
        "edges_covered",
        "edges_total",
        "action_kinds_covered",
        "action_kinds_total",
        "action_kinds_unreachable",
        "action_kinds_missed",
        "divergences",
    ] {
        assert!(v.get(key).is_some(), "{key} missing: {out}");
    }
    // tiny has no conversion, no release and no floating buffer to hand back.
    let unreachable = v["action_kinds_unreachable"].as_array().unwrap();
    assert!(
        unreachable.contains(&serde_json::json!("convertRecoveredInputChannels")),
        "{out}"
    );
    assert_eq!(v["traces"], 20);
    assert_eq!(v["divergences"], 0);
}

#[test]
fn conform_with_bad_input_exits_two() {
    assert_eq!(cdr(&["conform", "--preset", "nope"]).0, 2);
    assert_eq!(cdr(&["conform", "--preset", "tiny", "--random", "0"]).0, 2);
    assert_eq!(cdr(&["conform", "--edges", "--random", "3"]).0, 2);
}

#[test]
fn replay_of_a_fixed_model_trace_passes_and_of_a_bug_trace_diverges() {
    let fixed = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let buggy = RecoveryModel::new(preset("tiny").unwrap(), Variant::NoEventStash);
    let actions = shortest_counterexample(&buggy, PropertyId::RecoveredDataPrecedesLiveData).unwrap();

    let good = temp("good.json");
    Trace::record(&fixed, Some("tiny"), &actions[..3])
        .unwrap()
        .write(&good)
        .unwrap();
    let (code, out, err) = cdr(&["replay", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("PASSED"), "{out}");

    let bad = temp("bug.json");
    Trace::record(&buggy, Some("tiny"), &actions)
        .unwrap()
        .write(&bad)
        .unwrap();
    let (code, _, err) = cdr(&["replay", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("DIVERGENCE") && err.contains("--- model\n+++ impl"),
        "{err}"
    );
}

#[test]
fn replay_of_a_file_that_is_not_a_trace_exits_two() {
    let path = temp("garbage.json");
    std::fs::write(&path, "{\"format_version\": 9, \"model\": \"channel-recovery\"}").unwrap();
    let (code, _, err) = cdr(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("version 9 is not supported"), "{err}");
    assert_eq!(cdr(&["replay", "/no/such/trace.json"]).0, 2);
}

#[test]
fn a_silent_driver_process_is_a_harness_error_not_a_divergence() {
    // A wrapper script whose real driver (here `sleep`) is its child, as a JVM behind `sh`.
    let script = temp("silent-driver.sh");
    let pid_file = temp("silent-driver.pid");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nread line\necho '{{\"reply\":\"hello\",\"name\":\"silent\",\"protocol\":1,\"actions\":[\"requestPartitions\"],\"features\":[\"delivery:no-recovery\",\"kind:local\",\"kind:remote\",\"release\"]}}'\nread line\necho '{{\"reply\":\"ready\"}}'\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {}\nwait\n",
            pid_file.display()
        ),
    )
    .unwrap();
    let cmd = format!("sh {}", script.display());
    let (code, _, err) = cdr(&[
        "conform",
        "--preset",
        "no-recovery",
        "--jobs",
        "1",
        "--watchdog",
        "1",
        "--driver-cmd",
        &cmd,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("harness error") && err.contains("watchdog"), "{err}");
    assert!(!err.contains("DIVERGENCE"), "{err}");
    // The stopped driver's children went with it: its whole process group was killed.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    let gone = (0..100).any(|_| {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        // Gone, or a zombie waiting for init to reap it.
        let alive = state.split_whitespace().nth(2).is_some_and(|s| s != "Z");
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        !alive
    });
    assert!(gone, "the driver's child {} outlived it", pid.trim());
}

#[test]
fn a_driver_of_another_protocol_version_or_without_a_feature_is_refused_before_any_step() {
    let script = temp("old-driver.sh");
    std::fs::write(
        &script,
        // It closes its stdin and lingers, so that cdr's goodbye meets a pipe without a reader
        // (EPIPE), as it does whenever a driver leaves first.
        "#!/bin/sh\nread line\necho '{\"reply\":\"hello\",\"name\":\"old\",\"protocol\":0,\"actions\":[],\"features\":[]}'\nexec 0<&-\nsleep 1\n",
    )
    .unwrap();
    let (code, _, err) = cdr(&[
        "conform",
        "--preset",
        "tiny",
        "--driver-cmd",
        &format!("sh {}", script.display()),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("protocol 0"), "{err}");
    let (code, _, err) = cdr(&["conform", "--preset", "tiny", "--driver-cmd", "/nonexistent/driver"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot start"), "{err}");
}

#[test]
fn require_complete_passes_a_full_run_and_shards_must_be_k_of_n() {
    let (code, _, err) = cdr(&["conform", "--preset", "tiny", "--shard", "3/300", "--require-complete"]);
    assert_eq!(code, 0, "{err}");
    for bad in ["0/3", "4/3", "x", "1/0"] {
        let (code, _, err) = cdr(&["conform", "--preset", "tiny", "--shard", bad]);
        assert_eq!(code, 2, "--shard {bad}: {err}");
    }
}

#[test]
fn conform_replays_a_config_file_with_check_s_validation() {
    // A preset's entry of `presets --json` is a config file; replaying it is replaying the preset.
    let (_, presets, _) = cdr(&["presets", "--json"]);
    let presets: serde_json::Value = serde_json::from_str(&presets).unwrap();
    let entry = presets
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "local-buffers")
        .unwrap();
    let file = temp("local-buffers.json");
    std::fs::write(&file, entry.to_string()).unwrap();
    let file = file.to_str().unwrap();
    let (code, out, err) = cdr(&["conform", "--config", file, "--edges", "--require-complete", "--json"]);
    assert_eq!(code, 0, "{err}");
    let by_config: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (code, out, err) = cdr(&["conform", "--preset", "local-buffers", "--edges", "--json"]);
    assert_eq!(code, 0, "{err}");
    let by_preset: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "traces",
        "steps",
        "edges_covered",
        "edges_total",
        "action_kinds_covered",
    ] {
        assert_eq!(by_config[key], by_preset[key], "{key}");
    }

    // A config that check refuses, conform refuses the same way, before any trace.
    let bad = temp("no-channels.json");
    std::fs::write(&bad, r#"{"channels": [], "checkpoints": 1}"#).unwrap();
    let (code, _, err) = cdr(&["conform", "--config", bad.to_str().unwrap()]);
    let (check_code, _, check_err) = cdr(&["check", "--config", bad.to_str().unwrap()]);
    assert_eq!((code, check_code), (2, 2), "{err}");
    assert_eq!(err.lines().next(), check_err.lines().next());
    let (code, _, err) = cdr(&["conform", "--config", file, "--preset", "tiny"]);
    assert_eq!(code, 2, "{err}");
}
