//! Whether channels configured alike are interchangeable, the precondition of a symmetry
//! reduction (docs/performance.md, "Reductions"). They are not under the drainer: it pushes
//! channel 0's recovered buffers before channel 1's (the fetched state is read in the order it
//! was written), so a state and its mirror image have different futures, and merging them
//! would lose states.

use recovery_model::config::{ModelConfig, Upstream, local};
use recovery_model::presets::preset;
use recovery_model::tooling::fingerprint::state_fingerprint;
use recovery_model::{RecoveryModel, State, Variant};
use stateright::Model;
use std::collections::HashSet;

/// Every reachable state of `cfg`.
fn reachable(cfg: ModelConfig) -> Vec<State> {
    let model = RecoveryModel::new(cfg, Variant::Fixed);
    let mut seen = HashSet::new();
    let mut states = Vec::new();
    let mut frontier = model.init_states();
    let mut actions = Vec::new();
    while let Some(state) = frontier.pop() {
        if !seen.insert(state_fingerprint(&state)) {
            continue;
        }
        actions.clear();
        model.actions(&state, &mut actions);
        frontier.extend(actions.iter().filter_map(|&a| model.next_state(&state, a)));
        states.push(state);
    }
    states
}

#[test]
fn channels_configured_alike_are_not_interchangeable_under_the_drainer() {
    let alike = local(1, &[Upstream::EndOfOutputChannelState]);
    let cfg = ModelConfig {
        channels: vec![alike.clone(), alike],
        checkpoints: 0,
        ..preset("tiny").unwrap()
    };
    let states = reachable(cfg);
    let pushed = |s: &State| (s.channels[0].ghost_pushed, s.channels[1].ghost_pushed);
    assert!(
        states.iter().any(|s| pushed(s) == (1, 0)),
        "channel 0's buffer is pushed first"
    );
    assert!(
        !states.iter().any(|s| pushed(s) == (0, 1)),
        "the mirror image, channel 1's buffer pushed first, is unreachable"
    );
}
