//! The findings' fixes (docs/findings.md): each preset whose configuration declares a defect of
//! Flink (`violated_by_config`) is checked twice, as Flink is and with every fix on. With the
//! fixes nothing is declared, so every property must hold there: a property the findings
//! excused catches again whatever else breaks in the code they touch. Each fix alone restores
//! exactly its own finding's properties.

use recovery_model::config::FlinkFix;
use recovery_model::presets::{PRESETS, find_preset};
use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::{Status, check};
use recovery_model::{ModelConfig, RecoveryModel, Variant};

/// The presets whose configuration declares a Flink defect, with the fix that removes it.
const FINDINGS: &[(&str, FlinkFix)] = &[
    ("priority-race", FlinkFix::PriorityFromViewHead),
    ("drain-wakeup", FlinkFix::WakeOnRefusedBuffer),
    ("late-floating-credit", FlinkFix::AnnounceUnderQueueLock),
    ("migration", FlinkFix::PersistOnlyUpstreamData),
];

/// Checks `cfg` and returns the properties it violates (by design or not), asserting that the
/// graph is acyclic (the `eventually` verdicts are sound) and that every expected example is found.
fn violated(name: &str, cfg: ModelConfig) -> Vec<PropertyId> {
    let unreachable = find_preset(name).unwrap().unreachable;
    let report = check(RecoveryModel::new(cfg, Variant::Fixed), name, unreachable, 1, true);
    assert_eq!(report.acyclic, Some(true), "{name}");
    let mut out = Vec::new();
    for r in &report.properties {
        match r.status {
            Status::Violated => out.push(PropertyId::from_name(r.name).expect("a property's own name")),
            Status::ExampleMissing => assert!(r.as_expected(), "{name}: the example of {} is missing", r.name),
            Status::Holds | Status::ExampleFound => {}
        }
    }
    out
}

#[test]
fn every_preset_that_declares_a_flink_defect_is_one_of_the_findings() {
    let declared: Vec<&str> = PRESETS
        .iter()
        .filter(|p| !(p.config)().violated_by_config().is_empty())
        .map(|p| p.name)
        .collect();
    let mut findings: Vec<&str> = FINDINGS.iter().map(|(n, _)| *n).collect();
    findings.sort();
    let mut declared = declared;
    declared.sort();
    assert_eq!(declared, findings);
    for p in PRESETS {
        assert!(
            (p.config)().with_every_fix().violated_by_config().is_empty(),
            "{}: a defect declared with every fix on",
            p.name
        );
    }
}

#[test]
fn with_its_fix_each_finding_s_preset_satisfies_every_property() {
    for &(name, fix) in FINDINGS {
        let cfg = (find_preset(name).unwrap().config)();
        // As Flink is: the finding fails, and only properties its configuration declares (a
        // declaration may name more than this preset reaches).
        let declared = cfg.violated_by_config();
        let mut found = violated(name, cfg.clone());
        found.sort();
        assert!(!found.is_empty(), "{name}: the finding is not found");
        assert!(
            found.iter().all(|p| declared.contains(p)),
            "{name}: {found:?} beyond {declared:?}"
        );
        // The fix alone restores them all, and breaks nothing else.
        let mut fixed = cfg.clone();
        fixed.flink_fixes = vec![fix];
        assert!(fixed.violated_by_config().is_empty(), "{name}");
        assert_eq!(violated(name, fixed), [], "{name} with {}", fix.name());
        // Every other fix alone leaves the finding in place (migration, the largest, is left
        // out: a minute in a debug build).
        for other in FlinkFix::ALL.into_iter().filter(|f| *f != fix && name != "migration") {
            let mut cfg = cfg.clone();
            cfg.flink_fixes = vec![other];
            let mut still = violated(name, cfg);
            still.sort();
            assert_eq!(still, found, "{name} with only {}", other.name());
        }
    }
}

#[test]
fn the_fixes_are_named_as_on_the_command_line() {
    for f in FlinkFix::ALL {
        assert_eq!(FlinkFix::parse(f.name()), Ok(f));
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, format!("\"{}\"", f.name()));
    }
    let e = FlinkFix::parse("fixed").unwrap_err();
    assert!(e.contains("priority-from-view-head"), "{e}");
}

#[test]
fn ci_checks_and_replays_every_finding_s_preset_with_the_fixes() {
    let run = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../.ci/run")).unwrap();
    let line = run
        .lines()
        .find_map(|l| l.strip_prefix("FINDING_PRESETS="))
        .expect(".ci/run names FINDING_PRESETS");
    let listed: Vec<&str> = line.trim_matches('"').split_whitespace().collect();
    let findings: Vec<&str> = FINDINGS.iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, findings);
}
