//! Ring collectives and all-to-all: blocks that move step by step.

use super::{jittered, part, rounds, CollectiveSpec, Op};
use crate::rng::RngStream;
use crate::time::Duration;
use crate::workload::graph::{FlowGraph, Instance};
use crate::workload::FlowSpec;

/// A ring collective (all-reduce, reduce-scatter, all-gather) or an
/// all-to-all: every step of every rank, channel and round, each waiting
/// for its rank's compute and, after the first, for its data.
pub(super) fn expand(
    c: &CollectiveSpec,
    index: u32,
    seed: u64,
    flows: &mut Vec<FlowSpec>,
    g: &mut FlowGraph,
) {
    let n = c.ranks.len();
    let ch_n = c.channels as u64;
    let mut rng = RngStream::new(seed, &format!("collective/{index}"));
    let slot0 = g.slots;
    let ring = c.op != Op::AllToAll;
    // One connection per (rank, peer, channel): to the next rank on a ring, to every peer otherwise.
    let slot = |r: usize, peer: usize, ch: u64| -> u32 {
        let peer_i = if ring { 0 } else { peer };
        let per_rank = if ring { 1 } else { n };
        slot0 + ((r * per_rank + peer_i) as u64 * ch_n + ch) as u32
    };
    g.slots += (n * if ring { 1 } else { n }) as u32 * c.channels;
    let block = |q: usize| part(c.bytes, n as u64, q as u64);
    let most = part(block(0), ch_n, 0);
    let rounds = rounds(most, c.chunk);
    let steps = c.op.steps(n);
    // The flows each rank received in the previous iteration's last step.
    let mut prev_in: Vec<Vec<u32>> = vec![Vec::new(); n];
    for it in 0..c.iterations {
        let inst = g.instances.len() as u32;
        g.instances.push(Instance {
            collective: index,
            iteration: it,
            flows: 0,
            gates: 0,
            launch: Vec::new(),
            done: Vec::new(),
        });
        let compute: Vec<Duration> = c
            .compute
            .iter()
            .map(|&d| jittered(d, c.jitter, &mut rng))
            .collect();
        // Rank r's compute phase: from the start, or from when its last data
        // of the previous iteration is in. Its steps wait for it to end.
        let gates: Vec<u32> = (0..n)
            .map(|r| {
                let gate = g.gate(prev_in[r].len() as u32, compute[r]);
                for &f in &prev_in[r] {
                    let from = g.flow_node[f as usize];
                    g.edge(from, gate);
                }
                if it == 0 {
                    g.roots.push((gate, c.start));
                }
                gate
            })
            .collect();
        let mut this_in: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut add = |flows: &mut Vec<FlowSpec>,
                       g: &mut FlowGraph,
                       r: usize,
                       to: usize,
                       bytes: u64,
                       k: usize,
                       conn: u32,
                       pred: Option<u32>|
         -> u32 {
            let f = flows.len() as u32;
            flows.push(FlowSpec {
                src: c.ranks[r],
                dst: c.ranks[to],
                verb: c.verb,
                bytes,
                start: c.start,
                dport: 100,
                owner: c.owners[r],
                piece: false,
                after: None,
            });
            // Every step waits for its rank's compute phase; a later step
            // also for the previous step's data from the rank before.
            let node = match pred {
                None => g.flow_node(f, 1, Duration::ZERO),
                Some(_) => g.flow_node(f, 2, c.step_overhead),
            };
            g.flow_slot[f as usize] = conn;
            g.flow_instance[f as usize] = inst;
            g.flow_ranks[f as usize] = (r as u32, to as u32);
            g.edge(gates[r], node);
            if let Some(p) = pred {
                g.edge(g.flow_node[p as usize], node);
            }
            g.instances[inst as usize].flows += 1;
            if k + 1 == steps {
                this_in[to].push(f);
            }
            f
        };
        for ch in 0..ch_n {
            for round in 0..rounds {
                let piece = |q: usize| part(part(block(q), ch_n, ch), rounds, round);
                if !ring {
                    for r in 0..n {
                        for p in (1..n).map(|d| (r + d) % n) {
                            add(flows, g, r, p, piece(p), 0, slot(r, p, ch), None);
                        }
                    }
                    continue;
                }
                // The flow each rank sent in the previous step of this round and channel.
                let mut last: Vec<u32> = Vec::new();
                for k in 0..steps {
                    let mut sent = Vec::with_capacity(n);
                    for r in 0..n {
                        let to = (r + 1) % n;
                        let pred = last.get((r + n - 1) % n).copied();
                        let f = add(
                            flows,
                            g,
                            r,
                            to,
                            piece(block_sent(c.op, n, r, k)),
                            k,
                            slot(r, to, ch),
                            pred,
                        );
                        sent.push(f);
                    }
                    last = sent;
                }
            }
        }
        let i = &mut g.instances[inst as usize];
        i.launch = gates;
        i.done = this_in
            .iter()
            .map(|fs| fs.iter().map(|&f| g.flow_node[f as usize]).collect())
            .collect();
        prev_in = this_in;
    }
}

/// The block rank `r` sends at ring step `k`: the reduce-scatter walk
/// ((r − k) mod n), then the all-gather walk of the reduced blocks.
fn block_sent(op: Op, n: usize, r: usize, k: usize) -> usize {
    match op {
        Op::AllReduce if k >= n - 1 => (r + 1 + n - (k - (n - 1)) % n) % n,
        Op::AllGather => (r + n - k % n) % n,
        _ => (r + n - k % n) % n,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_spec::spec;
    use super::*;
    use crate::workload::graph::NONE;

    #[test]
    fn a_ring_all_reduce_moves_2_n_minus_1_blocks_per_rank_and_nothing_is_lost() {
        // Bytes that do not divide: blocks, channels and rounds all have remainders.
        let (n, bytes) = (5, 100_003);
        let mut flows = Vec::new();
        let mut g = FlowGraph::default();
        expand(&spec(Op::AllReduce, n, bytes), 0, 1, &mut flows, &mut g);
        let per_iter: u64 = flows.iter().map(|f| f.bytes).sum::<u64>() / 2;
        // Each block crosses n−1 links reduced and n−1 gathered.
        assert_eq!(per_iter, 2 * (n as u64 - 1) * bytes);
        assert!(flows
            .iter()
            .all(|f| f.bytes > 0 && (f.dst + n as u32 - f.src) % n as u32 == 1));
        assert_eq!(g.cycle(), None);
        // Each rank sends every block once in each phase.
        for r in 0..n {
            let mut rs: Vec<usize> = (0..n - 1)
                .map(|k| block_sent(Op::AllReduce, n, r, k))
                .collect();
            let mut ag: Vec<usize> = (n - 1..2 * n - 2)
                .map(|k| block_sent(Op::AllReduce, n, r, k))
                .collect();
            rs.sort();
            ag.sort();
            assert_eq!(rs.len(), n - 1);
            rs.dedup();
            ag.dedup();
            assert_eq!((rs.len(), ag.len()), (n - 1, n - 1));
        }
    }

    #[test]
    fn every_later_step_waits_for_one_arrival_and_each_iteration_for_a_gate() {
        let n = 4;
        let mut flows = Vec::new();
        let mut g = FlowGraph::default();
        expand(
            &spec(Op::ReduceScatter, n, 80_000),
            0,
            1,
            &mut flows,
            &mut g,
        );
        // Every flow waits: for its rank's compute, and after step 0 for data.
        assert!((0..flows.len() as u32).all(|f| !g.starts_free(f)));
        let waits: Vec<u32> = g
            .nodes
            .iter()
            .filter(|x| x.flow != NONE)
            .map(|x| x.waits)
            .collect();
        let rounds = 80_000 / 4 / 2 / 1000;
        assert_eq!(
            waits.iter().filter(|&&w| w == 1).count(),
            2 * n * 2 * rounds
        );
        assert!(waits.iter().all(|&w| w == 1 || w == 2));
        let gates = g.nodes.iter().filter(|x| x.flow == NONE).count();
        assert_eq!(gates, 2 * n, "one compute gate per rank and iteration");
        assert_eq!(g.roots.len(), n);
        assert!(g
            .nodes
            .iter()
            .filter(|x| x.flow == NONE)
            .all(|x| x.gap == Duration(7)));
    }

    #[test]
    fn all_to_all_sends_a_block_to_every_peer() {
        let n = 4;
        let mut flows = Vec::new();
        let mut g = FlowGraph::default();
        let mut s = spec(Op::AllToAll, n, 4000);
        s.chunk = None;
        s.iterations = 1;
        expand(&s, 0, 1, &mut flows, &mut g);
        assert_eq!(flows.len(), n * (n - 1) * 2);
        assert_eq!(flows.iter().map(|f| f.bytes).sum::<u64>(), 4000 * 3);
        assert!(flows.iter().all(|f| f.src != f.dst));
    }
}
