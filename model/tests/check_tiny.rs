//! The `tiny` preset checked exhaustively: every property's verdict is asserted, and the state
//! graph is acyclic so that the `eventually` verdicts are sound.

use recovery_model::check::{Status, check};
use recovery_model::config::find_preset;
use recovery_model::{RecoveryModel, Variant};

#[test]
fn tiny_preset_satisfies_every_property() {
    let p = find_preset("tiny").unwrap();
    let report = check(
        RecoveryModel::new((p.config)(), Variant::Fixed),
        "tiny",
        p.unreachable,
        1,
        true,
    );
    assert_eq!(report.acyclic, Some(true));
    // A change detector: a model change that alters the reachable graph shows up here.
    assert_eq!(report.unique_states, 44524);
    for r in &report.properties {
        let expected = match r.expectation {
            "sometimes" if p.unreachable.contains(&r.name) => Status::ExampleMissing,
            "sometimes" => Status::ExampleFound,
            _ => Status::Holds,
        };
        assert_eq!(r.status, expected, "{}: {:#?}", r.name, r.trace);
    }
}
