//! Trace sources: the reachable graph of a configuration and an edge-complete set of traces
//! over it, and random walks.
//!
//! Edge-complete generation (as MongoDB generated its tests from TLA+): every edge
//! (state, action) of the reachable graph is taken by at least one trace. A trace reaches an
//! uncovered edge's source along the BFS tree, takes the edge, then keeps taking uncovered edges
//! greedily until it reaches a state without one, so that one reset of the implementation
//! covers as many edges as it can.

use recovery_model::{Action, RecoveryModel, State};
use stateright::Model;
use std::collections::HashMap;

/// A state's fingerprint (the model's own: optimised even in a debug build of this crate).
pub fn fingerprint(s: &State) -> u64 {
    recovery_model::tooling::fingerprint::state_fingerprint(s)
}

const NONE: u32 = u32::MAX;

/// The reachable state graph of a model, in compressed form: states are numbered in BFS order
/// (the initial states first) and each state's out-edges are stored contiguously.
pub struct Graph<A = Action> {
    /// Out-edges of state `i` are `edge_start[i]..edge_start[i + 1]`.
    edge_start: Vec<u32>,
    /// The action of each edge.
    edge_action: Vec<A>,
    /// The target state of each edge.
    edge_target: Vec<u32>,
    /// The BFS-tree edge into each state (NONE for the initial state).
    parent: Vec<u32>,
    /// Method names of the action kinds that occur on some edge.
    pub kinds: Vec<&'static str>,
}

impl Graph {
    /// Explores every state reachable from the initial state (breadth first).
    pub fn explore(model: &RecoveryModel) -> Graph {
        Graph::explore_model(model, fingerprint, Action::method)
    }
}

impl<A: Copy> Graph<A> {
    /// Explores every state reachable from `model`'s initial states (breadth first), naming
    /// states by `fingerprint` and action kinds by `kind`.
    pub fn explore_model<M: Model<Action = A>>(
        model: &M,
        fingerprint: impl Fn(&M::State) -> u64,
        kind: impl Fn(&A) -> &'static str,
    ) -> Graph<A> {
        let mut ids: HashMap<u64, u32> = HashMap::new();
        let mut queue = std::collections::VecDeque::new();
        let mut parent = Vec::new();
        for init in model.init_states() {
            let n = ids.len() as u32;
            if let std::collections::hash_map::Entry::Vacant(e) = ids.entry(fingerprint(&init)) {
                e.insert(n);
                parent.push(NONE);
                queue.push_back(init);
            }
        }
        let (mut edge_start, mut edge_action, mut edge_target) = (vec![0u32], Vec::new(), Vec::new());
        let mut kinds = std::collections::BTreeSet::new();
        let mut actions = Vec::new();
        while let Some(s) = queue.pop_front() {
            actions.clear();
            model.actions(&s, &mut actions);
            for a in actions.drain(..) {
                let Some(next) = model.next_state(&s, a) else { continue };
                let fp = fingerprint(&next);
                let n = ids.len() as u32;
                let target = *ids.entry(fp).or_insert_with(|| {
                    parent.push(edge_action.len() as u32);
                    queue.push_back(next);
                    n
                });
                kinds.insert(kind(&a));
                edge_action.push(a);
                edge_target.push(target);
            }
            edge_start.push(edge_action.len() as u32);
        }
        Graph {
            edge_start,
            edge_action,
            edge_target,
            parent,
            kinds: kinds.into_iter().collect(),
        }
    }

    /// Number of states.
    pub fn states(&self) -> usize {
        self.parent.len()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.edge_action.len()
    }

    fn source_of(&self, edge: u32) -> u32 {
        // The source is the state whose range holds the edge.
        (self.edge_start.partition_point(|&start| start <= edge) - 1) as u32
    }

    /// The BFS-tree path of actions from an initial state to state `s`, and that initial state.
    fn tree_path(&self, mut s: u32) -> (Vec<u32>, u32) {
        let mut edges = Vec::new();
        while self.parent[s as usize] != NONE {
            let e = self.parent[s as usize];
            edges.push(e);
            s = self.source_of(e);
        }
        edges.reverse();
        (edges, s)
    }

    /// Traces covering every edge: see the module documentation.
    pub fn edge_cover(&self) -> EdgeCover<'_, A> {
        EdgeCover {
            graph: self,
            covered: vec![false; self.edges()],
            next_edge: 0,
        }
    }
}

/// One generated trace: its actions, and how many of them (a prefix) only lead to the first
/// uncovered edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverTrace<A = Action> {
    /// The initial state it starts from (its index among the model's initial states).
    pub init: u32,
    /// The actions.
    pub actions: Vec<A>,
    /// Steps before the first newly covered edge.
    pub prefix: usize,
    /// Edges this trace covers for the first time.
    pub new_edges: usize,
    /// The steps (0-based) that take an edge for the first time.
    pub new_at: Vec<u32>,
    /// The state each step reaches.
    pub states: Vec<u32>,
}

/// Iterator over an edge-complete set of traces.
pub struct EdgeCover<'a, A = Action> {
    graph: &'a Graph<A>,
    covered: Vec<bool>,
    next_edge: usize,
}

impl<A: Copy> Iterator for EdgeCover<'_, A> {
    type Item = CoverTrace<A>;

    fn next(&mut self) -> Option<CoverTrace<A>> {
        let g = self.graph;
        while self.next_edge < g.edges() && self.covered[self.next_edge] {
            self.next_edge += 1;
        }
        if self.next_edge == g.edges() {
            return None;
        }
        let first = self.next_edge as u32;
        let (mut edges, init) = g.tree_path(g.source_of(first));
        let prefix = edges
            .iter()
            .position(|e| !self.covered[*e as usize])
            .unwrap_or(edges.len());
        edges.push(first);
        let mut at = g.edge_target[first as usize];
        loop {
            let (start, end) = (g.edge_start[at as usize], g.edge_start[at as usize + 1]);
            match (start..end).find(|e| !self.covered[*e as usize] && *e != first) {
                Some(e) => {
                    edges.push(e);
                    at = g.edge_target[e as usize];
                }
                _ => break,
            }
        }
        let mut new_at = Vec::new();
        for (i, e) in edges.iter().enumerate() {
            if !std::mem::replace(&mut self.covered[*e as usize], true) {
                new_at.push(i as u32);
            }
        }
        Some(CoverTrace {
            init,
            actions: edges.iter().map(|e| g.edge_action[*e as usize]).collect(),
            prefix,
            new_edges: new_at.len(),
            new_at,
            states: edges.iter().map(|e| g.edge_target[*e as usize]).collect(),
        })
    }
}

/// The seeded generator of random walks, shared with the model's simulation.
pub use recovery_model::tooling::simulate::SplitMix64;

/// A random walk from the initial state until no action is enabled (the graph is acyclic) or
/// `max_steps` steps; also returns the fingerprints of the states visited.
pub fn random_walk(model: &RecoveryModel, rng: &mut SplitMix64, max_steps: usize) -> (Vec<Action>, Vec<u64>) {
    let mut state = model.init_states().remove(0);
    let mut visited = vec![fingerprint(&state)];
    let mut walk = Vec::new();
    let mut actions = Vec::new();
    while walk.len() < max_steps {
        actions.clear();
        model.actions(&state, &mut actions);
        if actions.is_empty() {
            break;
        }
        let a = actions[rng.below(actions.len())];
        let Some(next) = model.next_state(&state, a) else { break };
        walk.push(a);
        state = next;
        visited.push(fingerprint(&state));
    }
    (walk, visited)
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery_model::{Variant, preset};

    #[test]
    fn edge_cover_takes_every_edge_of_the_tiny_graph() {
        let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
        let g = Graph::explore(&model);
        let traces: Vec<CoverTrace> = g.edge_cover().collect();
        assert_eq!(traces.iter().map(|t| t.new_edges).sum::<usize>(), g.edges());
        let mut seen = std::collections::HashSet::new();
        for t in &traces {
            let mut s = model.init_states().remove(0);
            for a in &t.actions {
                let next = model.next_state(&s, *a).expect("enabled");
                seen.insert((fingerprint(&s), *a));
                s = next;
            }
        }
        assert_eq!(seen.len(), g.edges(), "every edge is taken by some trace");
    }
}
