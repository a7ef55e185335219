//! `cdr check` of the task-level model: the `task` preset passes, each task-level variant
//! exits 1 naming its property, and mixing the two models' presets and variants is a usage
//! error.

use recovery_model::task_level::bug_zoo::TASK_VARIANTS;
use recovery_model::task_level::properties::TaskPropertyId;
use recovery_model::tooling::check::expectation_name;
use std::process::{Command, Output};

fn cdr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(args)
        .output()
        .expect("cdr runs")
}

/// An empty scratch directory of this test process; the test removes it.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cdr-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_of_the_task_preset_passes_with_every_verdict() {
    let out = cdr(&["check", "--preset", "task", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["model"], "task-level");
    assert_eq!(v["acyclic"], true);
    let props = v["properties"].as_array().unwrap();
    // One verdict per property, in table order, under the name and expectation the key has.
    let listed: Vec<(TaskPropertyId, &str)> = (props.iter())
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            let id = TaskPropertyId::from_name(name).unwrap_or_else(|| panic!("no task property is named {name}"));
            (id, p["expectation"].as_str().unwrap())
        })
        .collect();
    let want: Vec<(TaskPropertyId, &str)> = (TaskPropertyId::ALL.iter())
        .map(|&p| (p, expectation_name(&p.expectation())))
        .collect();
    assert_eq!(listed, want);
    // A sometimes property the preset cannot reach by design is reported as such, and nothing
    // else is missing.
    for p in props {
        let by_design = p["status"] == "example_missing" && p["unreachable_by_design"] == true;
        assert!(
            p["status"] == "holds" || p["status"] == "example_found" || by_design,
            "{p}"
        );
    }
    let missing: Vec<&str> = (props.iter())
        .filter(|p| p["status"] == "example_missing")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        missing,
        ["a checkpoint puts a recovery barrier into a channel in recovery"]
    );
}

#[test]
fn each_task_variant_exits_one_naming_its_property() {
    for info in TASK_VARIANTS {
        let out = cdr(&["check", "--variant", info.name]);
        assert_eq!(out.status.code(), Some(1), "{}", info.name);
        let text = stdout(&out);
        assert!(
            text.contains(&format!("shortest counterexample of \"{}\"", info.property)),
            "{}: {text}",
            info.name
        );
        let reproduce = format!("reproduce: cdr check --preset {} --variant {}", info.preset, info.name);
        assert!(text.contains(&reproduce), "{}: {text}", info.name);
    }
}

#[test]
fn the_two_models_presets_and_variants_do_not_mix() {
    let out = cdr(&["check", "--preset", "tiny", "--variant", TASK_VARIANTS[0].name]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a task-level preset"));
    let out = cdr(&["check", "--preset", "task", "--variant", "no-event-stash"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a task-level variant"));
    let out = cdr(&["check", "--preset", "task", "--mermaid", "x.md"]);
    assert_eq!(out.status.code(), Some(2));
    let out = cdr(&["check", "--preset", "task", "--por"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--por is not available for the task-level model"));
}

#[test]
fn presets_and_variants_list_the_task_level_too() {
    assert!(stdout(&cdr(&["presets"])).lines().any(|l| l.starts_with("task ")));
    let listed = stdout(&cdr(&["variants"]));
    for info in TASK_VARIANTS {
        assert!(listed.contains(info.name), "{}", info.name);
    }
}

#[test]
fn conform_of_the_task_preset_replays_every_edge_on_impl() {
    let dir = scratch("task-conform");
    let junit = dir.join("task.xml");
    let out = cdr(&[
        "conform",
        "--preset",
        "task",
        "--edges",
        "--require-complete",
        "--json",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("conform task") && !xml.contains("<failure"), "{xml}");
    std::fs::remove_dir_all(&dir).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["edges_replayed"], v["edges"]);
    assert_eq!(v["action_kinds_replayed"], v["action_kinds"]);
    assert!(v["divergence"].is_null());
    let text = stdout(&cdr(&["conform", "--preset", "task", "--random", "20", "--seed", "4"]));
    assert!(
        text.contains("replayed 20 traces") && text.contains("no divergence"),
        "{text}"
    );
}

#[test]
fn conform_of_the_task_level_refuses_what_only_the_channel_level_has() {
    for flag in [&["--driver-cmd", "true"][..], &["--shard", "1/2"]] {
        let mut args = vec!["conform", "--preset", "task"];
        args.extend_from_slice(flag);
        let out = cdr(&args);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not available for the task level"), "{err}");
    }
}

#[test]
fn simulate_sends_the_task_level_to_check() {
    for args in [
        &["simulate", "--preset", "task"][..],
        &["simulate", "--variant", TASK_VARIANTS[0].name],
    ] {
        let out = cdr(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cdr check --preset task"));
    }
}

/// A task-level trace file replays with `cdr replay`: the fixed model's passes, B4's diverges
/// from the fixed implementation, and a file whose predictions are not the model's is refused.
#[test]
fn replay_of_a_task_level_trace_file() {
    use conformance::task_conform::record_trace;
    use recovery_model::task_level::presets::find_task_preset;
    use recovery_model::task_level::properties::TaskPropertyId;
    use recovery_model::task_level::{TaskModel, TaskVariant};
    use stateright::{Checker, Model};

    let dir = scratch("task-replay");
    let shapes = (find_task_preset("task").unwrap().shapes)();
    let b4 = TaskModel::new(shapes.clone(), TaskVariant::SuspendOnEndOfInputDuringRecovery);
    // A path of `model` to its discovery of `property`, and the initial state it starts from.
    let path_to = |model: &TaskModel, property: TaskPropertyId| {
        let checker = model.clone().checker().spawn_bfs().join();
        let path = checker.discovery(property.name()).expect("discovered");
        let actions: Vec<_> = path.clone().into_actions();
        let first = path.into_states().remove(0);
        let init = model.init_states().iter().position(|s| *s == first).unwrap() as u32;
        (init, actions)
    };
    let file = |name: &str, trace: &conformance::task_conform::TaskTrace| {
        let f = dir.join(name);
        std::fs::write(&f, serde_json::to_string(trace).unwrap()).unwrap();
        f
    };
    let (init, actions) = path_to(&b4, TaskPropertyId::RestoreLoopNeverExitsEarly);
    let diverging = file("b4.json", &record_trace(&b4, "task", init, &actions, "B4").unwrap());
    let out = cdr(&["replay", diverging.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("DIVERGENCE"), "{}", stdout(&out));

    let fixed = TaskModel::new(shapes, TaskVariant::Fixed);
    let (init, actions) = path_to(&fixed, TaskPropertyId::EndOfInputDeferred);
    let passing = file(
        "fixed.json",
        &record_trace(&fixed, "task", init, &actions, "defer-finish").unwrap(),
    );
    let out = cdr(&["replay", passing.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("no divergence"));

    let mut tampered = record_trace(&fixed, "task", init, &actions, "tampered").unwrap();
    tampered.steps.last_mut().unwrap().snapshot.recovered ^= true;
    let tampered = file("tampered.json", &tampered);
    let out = cdr(&["replay", tampered.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the model's"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `cdr traces --preset task` writes task-level trace files, one per line, that replay.
#[test]
fn traces_of_the_task_level_are_written_and_replay() {
    let dir = scratch("task-traces");
    let out = dir.join("task.jsonl");
    let run = cdr(&[
        "traces",
        "--preset",
        "task",
        "--random",
        "3",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 3);
    for (i, line) in text.lines().enumerate() {
        let file = dir.join(format!("trace-{i}.json"));
        std::fs::write(&file, line).unwrap();
        let replay = cdr(&["replay", file.to_str().unwrap()]);
        assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    }
    let itf = cdr(&[
        "traces",
        "--preset",
        "task",
        "--format",
        "itf",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(itf.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
