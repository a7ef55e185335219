//! What CI systems read: JUnit XML from `check`, `conform` and `variants --check`, parsed back
//! with an independent XML reader, and the workflow file with both tiers.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::properties::PropertyId;
use recovery_model::task_level::bug_zoo::TASK_VARIANTS;
use std::path::PathBuf;
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

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cdr-ci-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// (tests, failures, skipped) of the one report in `xml`, and the test case names, checking
/// that the totals agree with the cases.
fn junit(xml: &str) -> (usize, usize, usize, Vec<String>) {
    let doc = roxmltree::Document::parse(xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let attr = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<usize>().unwrap();
    let cases: Vec<roxmltree::Node> = root.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let failed = cases
        .iter()
        .filter(|c| c.children().any(|k| k.has_tag_name("failure")))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| c.children().any(|k| k.has_tag_name("skipped")))
        .count();
    assert_eq!(attr(root, "tests"), cases.len());
    assert_eq!(attr(root, "failures"), failed);
    assert_eq!(attr(root, "skipped"), skipped);
    let names = cases.iter().map(|c| c.attribute("name").unwrap().to_string()).collect();
    (cases.len(), failed, skipped, names)
}

#[test]
fn check_writes_one_test_case_per_property_and_fails_the_violated_ones() {
    let path = temp("check.xml");
    let (code, err) = cdr(&[
        "check",
        "--preset",
        "tiny",
        "--variant",
        "stash-replayed-at-head",
        "--no-acyclic",
        "--json",
        "--junit",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let (tests, failures, _, names) = junit(&std::fs::read_to_string(&path).unwrap());
    // One case per property, named as the property is.
    let ids: Vec<PropertyId> = (names.iter())
        .map(|n| PropertyId::from_name(n).unwrap_or_else(|| panic!("no property is named {n}")))
        .collect();
    assert_eq!(ids, PropertyId::ALL);
    assert_eq!(tests, ids.len());
    assert!(failures >= 1);
    assert!(names.iter().any(|n| n == "priority events first"), "{names:?}");
}

#[test]
fn conform_writes_one_test_case_for_its_preset() {
    let path = temp("conform.xml");
    let (code, err) = cdr(&[
        "conform",
        "--preset",
        "tiny",
        "--random",
        "5",
        "--json",
        "--junit",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (tests, failures, _, names) = junit(&std::fs::read_to_string(&path).unwrap());
    assert_eq!((tests, failures), (1, 0));
    assert_eq!(names, vec!["conform tiny"]);
    // One shard of many misses reachable kinds, but a shard is judged by its own share only;
    // a driver that cannot perform a kind fails it.
    let (code, err) = cdr(&[
        "conform",
        "--preset",
        "tiny",
        "--shard",
        "1/500",
        "--json",
        "--require-complete",
        "--junit",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(junit(&std::fs::read_to_string(&path).unwrap()).1, 0);
}

/// Two variants, one of each model (the CI step checks all of them, in release): one passing
/// case each, named after the variant.
#[test]
fn variants_check_writes_one_passing_test_case_per_variant() {
    let path = temp("variants.xml");
    let (channel, task) = (VARIANTS[0].name, TASK_VARIANTS[0].name);
    let only = format!("{channel},{task}");
    let (code, err) = cdr(&[
        "variants",
        "--check",
        "--only",
        &only,
        "--junit",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (tests, failures, _, names) = junit(&std::fs::read_to_string(&path).unwrap());
    assert_eq!((tests, failures), (2, 0));
    assert_eq!(names, [channel, task]);
    let (code, err) = cdr(&["variants", "--check", "--only", "no-such-bug"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown variant `no-such-bug`") && err.contains(channel),
        "{err}"
    );
}

#[test]
fn an_unwritable_junit_path_is_refused_before_the_run() {
    let (code, err) = cdr(&["check", "--preset", "tiny", "--junit", "/nonexistent-dir/x.xml"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot write /nonexistent-dir/x.xml"), "{err}");
}

#[test]
fn the_workflow_runs_the_pr_tier_on_pushes_and_the_full_tier_nightly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(".github/workflows/ci.yml")).unwrap();
    let wf: serde_yaml::Value = serde_yaml::from_str(&text).expect("valid YAML");
    let on = &wf["on"];
    for trigger in ["push", "pull_request", "schedule"] {
        assert!(on.get(trigger).is_some(), "no {trigger} trigger");
    }
    let runs = |job: &str| -> Vec<String> {
        wf["jobs"][job]["steps"]
            .as_sequence()
            .unwrap_or_else(|| panic!("job {job} has steps"))
            .iter()
            .filter_map(|s| s["run"].as_str().map(str::to_string))
            .collect()
    };
    assert!(runs("pr").iter().any(|r| r.trim() == ".ci/run"), "{:?}", runs("pr"));
    assert!(
        runs("full").iter().any(|r| r.trim() == ".ci/run --full"),
        "{:?}",
        runs("full")
    );
    let full_if = wf["jobs"]["full"]["if"].as_str().unwrap();
    assert!(full_if.contains("schedule"), "{full_if}");
    // The script the workflow runs knows both tiers.
    let script = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(script.contains("--full"));
}
