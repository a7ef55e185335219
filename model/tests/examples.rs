//! One frozen path per `sometimes` property on the `ci` preset: the shortest way to reach each
//! interesting situation, so that a model change that moves it shows up in review.

use recovery_model::check::shortest_example;
use recovery_model::config::find_preset;
use recovery_model::format::counterexample;
use recovery_model::properties::PROPERTIES;
use recovery_model::{RecoveryModel, Variant};
use stateright::Expectation;

#[test]
fn every_sometimes_property_has_a_shortest_example_on_ci() {
    let model = RecoveryModel::new((find_preset("ci").unwrap().config)(), Variant::Fixed);
    for (_, name, _) in PROPERTIES.iter().filter(|(e, _, _)| *e == Expectation::Sometimes) {
        let path = shortest_example(&model, name).unwrap_or_else(|| panic!("no example of {name}"));
        let snapshot_name = name.replace(' ', "-");
        insta::assert_snapshot!(
            snapshot_name,
            format!("example of: {name}\n\n{}", counterexample(&model, &path))
        );
    }
}
