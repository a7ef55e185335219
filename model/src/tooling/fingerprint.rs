//! States' fingerprints for the searches: foldhash rather than SipHash, as they hash every
//! edge's target, with a fixed seed so that every run and every thread agrees.

use crate::state::State;
use std::hash::{BuildHasher, Hash};

/// The fingerprint of any model's state (the task level's too).
pub fn fingerprint<S: Hash>(s: &S) -> u64 {
    foldhash::quality::FixedState::with_seed(0x5eed).hash_one(s)
}

/// The fingerprint of a channel-model state, for other crates' searches. Not generic, so it is
/// compiled here, optimised, whatever the caller's build.
pub fn state_fingerprint(s: &State) -> u64 {
    fingerprint(s)
}
