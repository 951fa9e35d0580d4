//! Flows that wait for other flows' data: the dependency graph behind
//! collectives (`workload.collective`).
//!
//! A node is a flow to start or a gate (a rank's compute phase). It waits
//! for a number of events — a predecessor flow's last byte arriving at its
//! receiver, or a gate firing — and acts `gap` after the last of them: a
//! flow node posts its flow, a gate tells its own successors. Arrival at the
//! receiver, not the sender's completion, is what a collective's next step
//! waits for (NCCL's receiver polls for the data, not for the sender's ACK).
//!
//! [`FlowGraph`] is the static graph the scenario builds; [`GraphRun`] is
//! its state in a run: what each node still waits for, the QP each shared
//! connection got, and when each flow was posted and arrived.

use crate::time::{Duration, Time};

/// No node, slot or flow.
pub const NONE: u32 = u32::MAX;

/// One node of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// How many arrivals or gates it waits for (0: it starts at its flow's `start`).
    pub waits: u32,
    /// From the last of them to its action: a compute phase (a gate) or a
    /// per-step overhead (a flow).
    pub gap: Duration,
    /// The flow it posts, or [`NONE`] for a gate.
    pub flow: u32,
    /// Nodes told when this flow has arrived, or when this gate fires.
    pub then: Vec<u32>,
}

/// One instance of a collective: iteration `iteration` of collective `collective`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub collective: u32,
    pub iteration: u32,
    /// Its flows (every one must arrive for it to finish).
    pub flows: u32,
    /// Its compute phases that are part of it (a pipeline's forward and
    /// backward passes; a collective's compute comes before it and is not).
    pub gates: u32,
    /// Per rank: the gate everything the rank does in it waits for, and the
    /// nodes (arrivals, passes) that mark the rank done with it; what other
    /// entries wait on and for (`after`).
    pub launch: Vec<u32>,
    pub done: Vec<Vec<u32>>,
}

/// The static graph: nodes, and per flow its node, its shared QP and its instance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowGraph {
    pub nodes: Vec<Node>,
    /// Per flow of the workload: its node ([`NONE`]: it waits for nothing and wakes nothing).
    pub flow_node: Vec<u32>,
    /// Per flow: the connection it posts on ([`NONE`]: a QP of its own).
    /// Flows of one slot share one QP, created by the first of them, as a
    /// collective library keeps its connections between steps and iterations.
    pub flow_slot: Vec<u32>,
    pub slots: u32,
    /// Per flow: its [`Instance`] ([`NONE`]: none).
    pub flow_instance: Vec<u32>,
    pub instances: Vec<Instance>,
    /// Per node: the instance and rank whose compute it is, for gates that
    /// are part of an instance ([`NONE`]: not one).
    pub node_owner: Vec<(u32, u32)>,
    /// Gates that wait for nothing, with the time they start counting their
    /// gap from (a first iteration's compute phases, from the job's start).
    pub roots: Vec<(u32, Duration)>,
    /// Per flow: the ranks (indices in its collective) that send and
    /// receive it, for the per-rank timeline ([`NONE`]: no collective's).
    pub flow_ranks: Vec<(u32, u32)>,
}

impl FlowGraph {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Grow the per-flow tables to `flows` entries (flows outside the graph).
    pub fn cover(&mut self, flows: usize) {
        self.flow_node.resize(flows, NONE);
        self.flow_slot.resize(flows, NONE);
        self.flow_instance.resize(flows, NONE);
        self.flow_ranks.resize(flows, (NONE, NONE));
    }

    /// A node for flow `f` waiting for `waits` events, acting `gap` after them.
    pub fn flow_node(&mut self, f: u32, waits: u32, gap: Duration) -> u32 {
        let n = self.nodes.len() as u32;
        self.nodes.push(Node {
            waits,
            gap,
            flow: f,
            then: Vec::new(),
        });
        self.node_owner.push((NONE, NONE));
        self.cover(f as usize + 1);
        self.flow_node[f as usize] = n;
        n
    }

    /// A gate waiting for `waits` events, firing `gap` after them.
    pub fn gate(&mut self, waits: u32, gap: Duration) -> u32 {
        self.nodes.push(Node {
            waits,
            gap,
            flow: NONE,
            then: Vec::new(),
        });
        self.node_owner.push((NONE, NONE));
        self.nodes.len() as u32 - 1
    }

    /// A gate that is rank `rank`'s compute inside instance `inst`.
    pub fn owned_gate(&mut self, waits: u32, gap: Duration, inst: u32, rank: u32) -> u32 {
        let n = self.gate(waits, gap);
        self.node_owner[n as usize] = (inst, rank);
        self.instances[inst as usize].gates += 1;
        n
    }

    /// `to` waits for `from` (a flow's arrival or a gate's firing).
    pub fn edge(&mut self, from: u32, to: u32) {
        self.nodes[from as usize].then.push(to);
    }

    /// Gate `gate` also waits for every node of `done` (it no longer
    /// starts on its own, if it did).
    pub fn wait_for(&mut self, gate: u32, done: &[u32]) {
        for &d in done {
            self.edge(d, gate);
        }
        self.nodes[gate as usize].waits += done.len() as u32;
        if !done.is_empty() {
            self.roots.retain(|&(n, _)| n != gate);
        }
    }

    /// The flows were reordered: flow `old` is now `renumber[old]`.
    pub fn renumber(&mut self, renumber: &[u32]) {
        if self.is_empty() {
            return;
        }
        self.cover(renumber.len());
        let mut node = vec![NONE; renumber.len()];
        let mut slot = vec![NONE; renumber.len()];
        let mut inst = vec![NONE; renumber.len()];
        let mut rank = vec![(NONE, NONE); renumber.len()];
        for (old, &new) in renumber.iter().enumerate() {
            node[new as usize] = self.flow_node[old];
            slot[new as usize] = self.flow_slot[old];
            inst[new as usize] = self.flow_instance[old];
            rank[new as usize] = self.flow_ranks[old];
        }
        for n in &mut self.nodes {
            if n.flow != NONE {
                n.flow = renumber[n.flow as usize];
            }
        }
        (
            self.flow_node,
            self.flow_slot,
            self.flow_instance,
            self.flow_ranks,
        ) = (node, slot, inst, rank);
    }

    /// Whether flow `f` starts at its own `start` (it waits for nothing).
    pub fn starts_free(&self, f: u32) -> bool {
        match self.flow_node.get(f as usize) {
            Some(&n) if n != NONE => self.nodes[n as usize].waits == 0,
            _ => true,
        }
    }

    /// A node that waits for itself through a cycle would never act: the
    /// nodes on some cycle, if there is one (Kahn's algorithm).
    pub fn cycle(&self) -> Option<Vec<u32>> {
        let mut indeg = vec![0u32; self.nodes.len()];
        for n in &self.nodes {
            for &t in &n.then {
                indeg[t as usize] += 1;
            }
        }
        let mut ready: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&i| indeg[i as usize] == 0)
            .collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &t in &self.nodes[i as usize].then {
                indeg[t as usize] -= 1;
                if indeg[t as usize] == 0 {
                    ready.push(t);
                }
            }
        }
        (seen < self.nodes.len()).then(|| {
            (0..self.nodes.len() as u32)
                .filter(|&i| indeg[i as usize] > 0)
                .collect()
        })
    }
}

/// When an instance's flows were posted and arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceRun {
    /// Its first message posted, or its first compute phase started.
    pub first_post: Time,
    /// Its last byte arrived, or its last compute phase ended.
    pub last_arrival: Time,
    pub arrived: u32,
    /// Its compute phases ended.
    pub fired: u32,
}

/// The graph's state during a run.
#[derive(Clone, Debug)]
pub struct GraphRun {
    waits: Vec<u32>,
    slot_qp: Vec<u32>,
    /// Per flow: when it was posted and when its last byte arrived (`NEVER`: not yet).
    pub posted: Vec<Time>,
    pub arrived: Vec<Time>,
    /// Per node: when an instance's gate fired (`NEVER`: not yet, or not one).
    pub fired: Vec<Time>,
    /// Instances' gates not fired yet: the run is not over while a pass
    /// that ends a pipeline still computes, though every flow is done.
    pub gates_open: u64,
    pub instances: Vec<InstanceRun>,
}

impl GraphRun {
    pub fn new(g: &FlowGraph) -> GraphRun {
        GraphRun {
            waits: g.nodes.iter().map(|n| n.waits).collect(),
            slot_qp: vec![NONE; g.slots as usize],
            posted: vec![Time::NEVER; g.flow_node.len()],
            arrived: vec![Time::NEVER; g.flow_node.len()],
            fired: vec![Time::NEVER; g.nodes.len()],
            gates_open: g.instances.iter().map(|i| i.gates as u64).sum(),
            instances: vec![
                InstanceRun {
                    first_post: Time::NEVER,
                    last_arrival: Time::ZERO,
                    arrived: 0,
                    fired: 0,
                };
                g.instances.len()
            ],
        }
    }

    /// One of `node`'s events happened: whether that was the last it waited for.
    pub fn satisfy(&mut self, node: u32) -> bool {
        let w = &mut self.waits[node as usize];
        debug_assert!(*w > 0, "node {node} told more often than it waits");
        *w -= 1;
        *w == 0
    }

    /// The QP of connection `slot`, if a flow has created it.
    pub fn slot_qp(&self, slot: u32) -> Option<u32> {
        self.slot_qp
            .get(slot as usize)
            .copied()
            .filter(|&q| q != NONE)
    }

    pub fn set_slot_qp(&mut self, slot: u32, qp: u32) {
        self.slot_qp[slot as usize] = qp;
    }

    /// Flow `f` of instance `inst` was posted at `now`.
    pub fn note_post(&mut self, f: u32, inst: u32, now: Time) {
        self.posted[f as usize] = now;
        if inst != NONE {
            let i = &mut self.instances[inst as usize];
            i.first_post = i.first_post.min(now);
        }
    }

    /// Gate `node` of instance `inst` fired at `now`, its compute `gap` long.
    pub fn note_fire(&mut self, node: u32, inst: u32, gap: Duration, now: Time) {
        self.fired[node as usize] = now;
        self.gates_open -= 1;
        let i = &mut self.instances[inst as usize];
        i.fired += 1;
        i.first_post = i.first_post.min(Time(now.ps() - gap.ps()));
        i.last_arrival = i.last_arrival.max(now);
    }

    /// Flow `f`'s last byte arrived at `now`; false if it had already.
    pub fn note_arrival(&mut self, f: u32, inst: u32, now: Time) -> bool {
        if self.arrived[f as usize] != Time::NEVER {
            return false;
        }
        self.arrived[f as usize] = now;
        if inst != NONE {
            let i = &mut self.instances[inst as usize];
            i.arrived += 1;
            i.last_arrival = i.last_arrival.max(now);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_moves_every_per_flow_fact_with_its_flow() {
        let mut g = FlowGraph::default();
        let a = g.flow_node(0, 0, Duration::ZERO);
        let b = g.flow_node(1, 1, Duration(5));
        g.edge(a, b);
        g.cover(2);
        g.flow_slot[1] = 7;
        g.renumber(&[1, 0]);
        assert_eq!(g.flow_node, vec![b, a]);
        assert_eq!(g.nodes[b as usize].flow, 0);
        assert_eq!(g.flow_slot, vec![7, NONE]);
        assert!(!g.starts_free(0) && g.starts_free(1));
    }

    #[test]
    fn a_cycle_is_found_and_a_chain_is_not() {
        let mut g = FlowGraph::default();
        let a = g.flow_node(0, 1, Duration::ZERO);
        let b = g.flow_node(1, 1, Duration::ZERO);
        g.edge(a, b);
        assert_eq!(g.cycle(), None);
        g.edge(b, a);
        assert_eq!(g.cycle(), Some(vec![a, b]));
    }

    #[test]
    fn a_node_is_ready_only_at_its_last_event() {
        let mut g = FlowGraph::default();
        let gate = g.gate(2, Duration::ZERO);
        let mut r = GraphRun::new(&g);
        assert!(!r.satisfy(gate));
        assert!(r.satisfy(gate));
    }
}
