//! The bug zoo: every variant's fix switched off is found again, by the property its row
//! names, with a shortest counterexample that is snapshotted; and with the fix on, the same
//! presets satisfy every property.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::find_preset;
use recovery_model::tooling::check::{Status, check, shortest_counterexample};
use recovery_model::tooling::format::counterexample;
use recovery_model::{RecoveryModel, Variant};

#[test]
fn every_variant_is_found_by_its_property_with_a_shortest_counterexample() {
    assert!(VARIANTS.len() >= 10);
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bug-zoo.md")).unwrap();
    for info in VARIANTS {
        let cfg = (find_preset(info.preset).expect("preset exists").config)();
        let model = RecoveryModel::new(cfg, info.variant);
        let trace = shortest_counterexample(&model, info.property)
            .unwrap_or_else(|| panic!("{}: {} not violated on {}", info.name, info.property, info.preset));
        // docs/bug-zoo.md's table gives each row's preset, property and length.
        let row = format!("| `{}` | {} | {} |", info.preset, info.property, trace.len());
        assert!(
            docs.lines()
                .any(|l| l.starts_with(&format!("| [{}](#", info.name)) && l.ends_with(&row)),
            "docs/bug-zoo.md's row for {} should end `{row}`",
            info.name
        );
        let text = format!(
            "variant {} on preset {}\nbug: {}\nviolates: {}\n\n{}",
            info.name,
            info.preset,
            info.bug,
            info.property,
            counterexample(&model, &trace)
        );
        insta::assert_snapshot!(info.name, text);
    }
}

#[test]
fn bug_zoo_presets_hold_with_every_fix_in_place() {
    let mut presets: Vec<&str> = VARIANTS.iter().map(|v| v.preset).filter(|p| *p != "tiny").collect();
    presets.sort();
    presets.dedup();
    for name in presets {
        let p = find_preset(name).unwrap();
        let report = check(
            RecoveryModel::new((p.config)(), Variant::Fixed),
            name,
            p.unreachable,
            1,
            false,
        );
        for r in &report.properties {
            assert!(!r.fails(), "{name}: {} is {:?}: {:#?}", r.name, r.status, r.trace);
            if r.status == Status::ExampleMissing {
                assert!(r.unreachable_by_design, "{name}: {}", r.name);
            }
        }
    }
}
