//! The `tiny` preset checked exhaustively: every property's verdict is asserted.

use recovery_model::check::{Status, check};
use recovery_model::{RecoveryModel, Variant, preset};

#[test]
fn tiny_preset_satisfies_every_property() {
    let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let report = check(model, "tiny", &[], 1, true);
    for p in &report.properties {
        println!("{:<45} {:?} {:?}", p.name, p.status, p.trace);
    }
    println!("unique states: {} depth {}", report.unique_states, report.max_depth);
    assert_eq!(report.acyclic, Some(true));
    for p in &report.properties {
        let expected = if p.expectation == "sometimes" {
            Status::ExampleFound
        } else {
            Status::Holds
        };
        assert_eq!(p.status, expected, "{}: {:#?}", p.name, p.trace);
    }
}
