//! The `cdr` command line: exit codes, JSON shapes, and clear errors on bad input.

use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::expectation_name;
use std::process::{Command, Output};

fn cdr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(args)
        .output()
        .expect("cdr runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn check_of_tiny_prints_every_verdict_as_json_and_exits_zero() {
    let out = cdr(&["check", "--preset", "tiny", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    for key in [
        "model",
        "preset",
        "variant",
        "states",
        "unique_states",
        "max_depth",
        "seconds",
        "properties",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["preset"], "tiny");
    assert_eq!(v["variant"], "fixed");
    let props = v["properties"].as_array().unwrap();
    // Every property, in order, under its name and with its expectation.
    let listed: Vec<(PropertyId, &str)> = (props.iter())
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            let id = PropertyId::from_name(name).unwrap_or_else(|| panic!("no property is named {name}"));
            (id, p["expectation"].as_str().unwrap())
        })
        .collect();
    let want: Vec<(PropertyId, &str)> = (PropertyId::ALL.iter())
        .map(|&p| (p, expectation_name(&p.expectation())))
        .collect();
    assert_eq!(listed, want);
    for p in props {
        let status = p["status"].as_str().unwrap();
        assert!(
            [
                "holds",
                "violated",
                "example_found",
                "example_missing",
                "example_missing_by_design"
            ]
            .contains(&status)
        );
        assert_ne!(status, "violated", "{}", p["name"]);
        // tiny declares its unreachable examples: none is reported as really missing.
        assert_ne!(status, "example_missing", "{}", p["name"]);
        assert_eq!(
            status == "example_missing_by_design",
            p["unreachable_by_design"] == true
        );
    }
}

#[test]
fn check_of_a_variant_exits_one_with_its_property_violated() {
    let out = cdr(&[
        "check",
        "--variant",
        "recovery-sequence-from-zero",
        "--json",
        "--no-acyclic",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["preset"], "tiny", "a variant checks its own preset by default");
    let props = v["properties"].as_array().unwrap();
    let p = props.iter().find(|p| p["name"] == "recovery sequence numbers").unwrap();
    assert_eq!(p["status"], "violated");
    assert_eq!(
        p["trace"].as_array().unwrap().len(),
        2,
        "the shortest counterexample has two steps"
    );
}

#[test]
fn unknown_preset_variant_or_config_is_a_usage_error() {
    for args in [
        &["check", "--preset", "nope"][..],
        &["check", "--variant", "nope"],
        &["check", "--config", "/nonexistent/config.json"],
        &["check", "--threads", "many"],
        &["frobnicate"],
    ] {
        let out = cdr(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} explains itself on stderr");
    }
    let out = cdr(&["check", "--preset", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("known presets: tiny"));
}

#[test]
fn malformed_config_file_is_rejected_with_its_reason() {
    let dir = std::env::temp_dir().join(format!("cdr-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"channels": [], "checkpoints": 1, "surprise": true}"#).unwrap();
    let out = cdr(&["check", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("surprise"));
    let empty = dir.join("empty.json");
    std::fs::write(&empty, r#"{"channels": [], "checkpoints": 1}"#).unwrap();
    let out = cdr(&["check", "--config", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least one channel"));
}

#[test]
fn variants_json_lists_name_bug_property_and_preset() {
    let out = cdr(&["variants", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    let rows = v.as_array().unwrap();
    assert!(rows.len() >= 10);
    for r in rows {
        for key in ["name", "bug", "property", "preset"] {
            assert!(r[key].is_string(), "{key} in {r}");
        }
    }
}

/// `cdr ARGS`: its exit code and stdout.
fn run(args: &[&str]) -> (i32, String) {
    let out = cdr(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

// `--flink-fix`: a finding's preset fails as Flink is only in what it declares, passes with its
// fix, and says so in the report, the JSON and the command that reproduces it.

#[test]
fn a_finding_s_preset_passes_with_its_fix_and_the_report_names_the_fix() {
    let (code, out) = run(&["check", "--preset", "drain-wakeup", "--threads", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("VIOLATED (by design"), "{out}");
    assert!(out.lines().next().unwrap().ends_with("variant fixed"), "{out}");

    let (code, out) = run(&[
        "check",
        "--preset",
        "drain-wakeup",
        "--flink-fix",
        "wake-on-refused-buffer",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("VIOLATED"), "{out}");
    assert!(
        out.lines()
            .next()
            .unwrap()
            .ends_with("findings' fixes: wake-on-refused-buffer"),
        "{out}"
    );

    let (code, out) = run(&["check", "--preset", "drain-wakeup", "--flink-fix", "all", "--json"]);
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["flink_fixes"].as_array().map(Vec::len), Some(4), "{out}");
}

#[test]
fn a_fix_of_another_finding_leaves_the_preset_s_violation_by_design() {
    let (code, out) = run(&[
        "check",
        "--preset",
        "drain-wakeup",
        "--flink-fix",
        "priority-from-view-head",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("recovery completes unless released            VIOLATED (by design"),
        "{out}"
    );
}

#[test]
fn a_fixed_configuration_s_counterexample_reproduces_with_its_fixes() {
    // tiny with every fix still has nothing to show: a variant under the fixes fails, and the
    // command it prints carries them.
    let (code, out) = run(&[
        "check",
        "--variant",
        "enable-notify-flag-before-count",
        "--flink-fix",
        "all",
        "--threads",
        "1",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("reproduce:") && l.ends_with("--flink-fix all")),
        "{out}"
    );
}

/// `--por`: the report says the counts are the reduced graph's, and a finding's preset fails
/// as it does without it, on the same property.
#[test]
fn check_with_por_says_so_and_keeps_the_verdicts() {
    let full = cdr(&["check", "--preset", "drain-wakeup", "--json"]);
    let reduced = cdr(&["check", "--preset", "drain-wakeup", "--json", "--por"]);
    assert_eq!(full.status.code(), reduced.status.code());
    let (full, reduced) = (json(&full), json(&reduced));
    assert_eq!(full["partial_order_reduction"], false);
    assert_eq!(reduced["partial_order_reduction"], true);
    let status = |v: &serde_json::Value| -> Vec<String> {
        (v["properties"].as_array().unwrap().iter())
            .map(|p| p["status"].to_string())
            .collect()
    };
    assert_eq!(status(&full), status(&reduced));
    let text = String::from_utf8_lossy(&cdr(&["check", "--preset", "drain-wakeup", "--por"]).stdout).to_string();
    assert!(
        text.contains("partial-order reduction: the counts are the reduced graph's"),
        "{text}"
    );
}
