//! Every bug-zoo variant's Explorer deep link opens on the state its property complains about:
//! the shortest counterexample rebuilds as a stateright `Path`, its encoded action indices lead
//! Explorer's way (init index, then the index of each action among those enabled) to the same
//! last state, and the picture of that state names the violated property.

use conformance::trace::deep_link;
use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::find_preset;
use recovery_model::tooling::check::shortest_counterexample;
use recovery_model::tooling::svg;
use recovery_model::{RecoveryModel, State};
use stateright::{Model, Path};

/// What Explorer does with `#/steps/I/A1/A2/...`: the init state at I, then the A-th enabled
/// action each step.
fn follow(model: &RecoveryModel, encoded: &str) -> State {
    let mut indices = encoded.split('/').map(|i| i.parse::<usize>().expect("numeric index"));
    let mut state = model.init_states().remove(indices.next().expect("init index"));
    for i in indices {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        state = model
            .next_state(&state, actions[i])
            .expect("the action changes the state");
    }
    state
}

#[test]
fn every_variants_deep_link_opens_on_the_last_state_of_its_counterexample() {
    for info in VARIANTS {
        let model = RecoveryModel::new((find_preset(info.preset).unwrap().config)(), info.variant);
        let actions = shortest_counterexample(&model, info.property).unwrap();
        let init = model.init_states().remove(0);
        let path = Path::from_actions(&model, init, &actions).expect("every step is enabled");
        let encoded = path.encode(&model);
        assert_eq!(encoded.split('/').count(), actions.len() + 1, "{}", info.name);
        let last = follow(&model, &encoded);
        assert_eq!(&last, path.last_state(), "{}: the link leads elsewhere", info.name);
        assert_eq!(
            deep_link(&model, &actions, "http://127.0.0.1:3000/").unwrap(),
            format!("http://127.0.0.1:3000/#/steps/{encoded}"),
        );
        assert!(
            svg::violated(&model, &last).contains(&info.property),
            "{}: the last state does not violate {}",
            info.name,
            info.property
        );
        let picture = svg::state(&model, &last).expect("a picture");
        assert!(
            picture.contains(&format!("violated: {}", info.property)),
            "{}: the picture does not name {}",
            info.name,
            info.property
        );
    }
}
