//! `cdr check` of the task-level model: the `task` preset passes, each task-level variant
//! exits 1 naming its property, and mixing the two models' presets and variants is a usage
//! error.

use recovery_model::task_level::variant::TASK_VARIANTS;
use std::process::{Command, Output};

fn cdr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(args)
        .output()
        .expect("cdr runs")
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
    assert!(props.len() >= 7);
    for p in props {
        assert!(p["status"] == "holds" || p["status"] == "example_found", "{p}");
    }
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
        assert!(text.contains(&format!("reproduce: cdr check --preset task --variant {}", info.name)));
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
    let dir = std::env::temp_dir().join(format!("cdr-task-conform-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
