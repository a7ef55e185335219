//! `--flink-fix` from the outside: a finding's preset fails as Flink is only in what it declares,
//! passes with its fix, and says so in the report, the JSON and the command that reproduces it.

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
fn a_finding_s_preset_passes_with_its_fix_and_the_report_names_the_fix() {
    let (code, out, _) = cdr(&["check", "--preset", "drain-wakeup", "--threads", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("VIOLATED (by design"), "{out}");
    assert!(out.lines().next().unwrap().ends_with("variant fixed"), "{out}");

    let (code, out, _) = cdr(&[
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

    let (code, out, _) = cdr(&["check", "--preset", "drain-wakeup", "--flink-fix", "all", "--json"]);
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["flink_fixes"].as_array().map(Vec::len), Some(4), "{out}");
}

#[test]
fn a_fix_of_another_finding_leaves_the_preset_s_violation_by_design() {
    let (code, out, _) = cdr(&[
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
    let (code, out, _) = cdr(&[
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
