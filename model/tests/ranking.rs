//! The ranking function (`progress::rank`) that makes the liveness verdicts sound without a
//! second search: every edge of every preset small enough for `cargo test`, and of every
//! bug-zoo variant on its preset, increases it, and the depth-first search agrees that the
//! graph is acyclic. `ci` is covered by `cdr check`, which reports how acyclicity was decided.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::PRESETS;
use recovery_model::tooling::check::graph_is_acyclic;
use recovery_model::tooling::progress::non_increasing_edges;
use recovery_model::{RecoveryModel, Variant};

fn assert_ranked(m: &RecoveryModel, what: &str) {
    let edges = non_increasing_edges(m);
    let listing: Vec<String> = (edges.iter())
        .map(|(kind, (n, (s, a, t)))| {
            let changes = recovery_model::tooling::format::changes(m, s, t, None);
            format!("{kind}: {n} edges, first {a:?}: {changes:?}")
        })
        .collect();
    assert!(
        edges.is_empty(),
        "{what}: edges that do not increase the rank:\n{}",
        listing.join("\n")
    );
}

#[test]
fn every_edge_of_the_small_presets_increases_the_rank_and_the_search_agrees() {
    for p in PRESETS.iter().filter(|p| !["ci", "wide", "deep"].contains(&p.name)) {
        let m = RecoveryModel::new((p.config)(), Variant::Fixed);
        assert_ranked(&m, p.name);
        assert!(graph_is_acyclic(&m), "{}", p.name);
    }
}

#[test]
fn every_edge_of_every_bug_zoo_variant_increases_the_rank() {
    for v in VARIANTS {
        let p = recovery_model::presets::find_preset(v.preset).unwrap();
        assert_ranked(&RecoveryModel::new((p.config)(), v.variant), v.name);
    }
}
