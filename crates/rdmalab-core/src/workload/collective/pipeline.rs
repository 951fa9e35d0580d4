//! Pipeline parallelism: stages that run one pass at a time, sending
//! activations forward and gradients back.

use super::{jittered, part, CollectiveSpec};
use crate::rng::RngStream;
use crate::time::Duration;
use crate::workload::graph::{FlowGraph, Instance};
use crate::workload::FlowSpec;

/// The order a pipeline stage runs its forward (F) and backward (B) passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Every forward, then every backward (GPipe, Huang et al., NeurIPS'19).
    GPipe,
    /// One forward, one backward after a warm-up (PipeDream-Flush, as
    /// Megatron-LM runs it: Narayanan et al., SC'21 §2.2).
    OneFOneB,
}

impl Schedule {
    /// Stage `s` of `p`'s passes over `m` microbatches: (backward?, microbatch).
    pub fn order(self, s: usize, p: usize, m: usize) -> Vec<(bool, usize)> {
        match self {
            Schedule::GPipe => (0..m)
                .map(|j| (false, j))
                .chain((0..m).map(|j| (true, j)))
                .collect(),
            Schedule::OneFOneB => {
                let warm = (p - s - 1).min(m);
                let mut out: Vec<(bool, usize)> = (0..warm).map(|j| (false, j)).collect();
                for i in 0..m - warm {
                    out.push((false, warm + i));
                    out.push((true, i));
                }
                out.extend((m - warm..m).map(|j| (true, j)));
                out
            }
        }
    }
}

/// A pipeline: each stage's passes are gates run one after another in the
/// schedule's order; a forward pass on stage s > 0 also waits for its
/// microbatch's activations from s − 1, a backward pass on s < p − 1 for
/// its gradients from s + 1; each pass then sends its output on, on a QP
/// per direction and channel kept for the whole job.
pub(super) fn expand(
    c: &CollectiveSpec,
    index: u32,
    seed: u64,
    flows: &mut Vec<FlowSpec>,
    g: &mut FlowGraph,
) {
    let (p, m, ch_n) = (c.ranks.len(), c.microbatches as usize, c.channels as u64);
    let mut rng = RngStream::new(seed, &format!("collective/{index}"));
    let slot0 = g.slots;
    g.slots += 2 * p as u32 * c.channels;
    // Forward connections first (stage s to s + 1), then backward (s to s − 1).
    let slot = |s: usize, back: bool, ch: u64| {
        slot0 + ((back as u64 * p as u64 + s as u64) * ch_n + ch) as u32
    };
    let orders: Vec<Vec<(bool, usize)>> = (0..p).map(|s| c.schedule.order(s, p, m)).collect();
    // Each stage's last pass so far: the next one waits for it.
    let mut last: Vec<Option<u32>> = vec![None; p];
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
        // Every pass's gate first (its inputs are other stages' flows, made below).
        let mut pass = vec![vec![[0u32; 2]; m]; p];
        let mut launch = Vec::with_capacity(p);
        for s in 0..p {
            for (k, &(back, j)) in orders[s].iter().enumerate() {
                let input = if back { s + 1 < p } else { s > 0 };
                let waits = u32::from(last[s].is_some()) + if input { c.channels } else { 0 };
                let length = if back { c.backward[s] } else { c.compute[s] };
                let gate =
                    g.owned_gate(waits, jittered(length, c.jitter, &mut rng), inst, s as u32);
                match last[s] {
                    Some(prev) => g.edge(prev, gate),
                    None if waits == 0 => g.roots.push((gate, c.start)),
                    None => {}
                }
                last[s] = Some(gate);
                pass[s][j][back as usize] = gate;
                if k == 0 {
                    launch.push(gate);
                }
            }
        }
        // A stage starts with its first pass and is done with its last.
        let i = &mut g.instances[inst as usize];
        i.launch = launch;
        i.done = last.iter().map(|l| l.iter().copied().collect()).collect();
        // Each pass's output, to the stage that waits for it.
        for s in 0..p {
            for &(back, j) in &orders[s] {
                let to = match back {
                    false if s + 1 < p => s + 1,
                    true if s > 0 => s - 1,
                    _ => continue,
                };
                for ch in 0..ch_n {
                    let f = flows.len() as u32;
                    flows.push(FlowSpec {
                        src: c.ranks[s],
                        dst: c.ranks[to],
                        verb: c.verb,
                        bytes: part(c.bytes, ch_n, ch),
                        start: c.start,
                        dport: 100,
                        owner: c.owners[s],
                        piece: false,
                        after: None,
                    });
                    let node = g.flow_node(f, 1, Duration::ZERO);
                    g.flow_slot[f as usize] = slot(s, back, ch);
                    g.flow_instance[f as usize] = inst;
                    g.flow_ranks[f as usize] = (s as u32, to as u32);
                    g.edge(pass[s][j][back as usize], node);
                    g.edge(node, pass[to][j][back as usize]);
                    g.instances[inst as usize].flows += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_spec::spec;
    use super::super::{expand, Op};
    use super::*;

    #[test]
    fn one_f_one_b_warms_up_by_stage_and_runs_every_pass_once() {
        let (p, m) = (4, 6);
        for s in 0..p {
            let o = Schedule::OneFOneB.order(s, p, m);
            assert_eq!(o.len(), 2 * m);
            let warm = o.iter().take_while(|x| !x.0).count();
            // Warm-up forwards, then the first backward right after one more forward.
            assert_eq!(warm, (p - s - 1).min(m) + 1, "stage {s}");
            for j in 0..m {
                let f = o.iter().position(|&x| x == (false, j)).unwrap();
                let b = o.iter().position(|&x| x == (true, j)).unwrap();
                assert!(f < b, "stage {s}: F{j} before B{j}");
            }
        }
        assert_eq!(
            Schedule::GPipe.order(0, 2, 2),
            vec![(false, 0), (false, 1), (true, 0), (true, 1)]
        );
    }

    #[test]
    fn a_pipeline_sends_activations_forward_and_gradients_back() {
        let (p, m) = (3, 4);
        let mut s = spec(Op::Pipeline, p, 1000);
        s.iterations = 1;
        let mut flows = Vec::new();
        let mut g = FlowGraph::default();
        expand(&s, 0, 1, &mut flows, &mut g);
        // (p − 1) links each way, m microbatches, 2 channels.
        assert_eq!(flows.len(), 2 * (p - 1) * m * 2);
        assert_eq!(
            flows.iter().map(|f| f.bytes).sum::<u64>(),
            2 * (p as u64 - 1) * m as u64 * 1000
        );
        assert!(flows.iter().all(|f| f.src.abs_diff(f.dst) == 1));
        assert_eq!(g.instances[0].gates as usize, 2 * m * p);
        assert_eq!(
            g.roots.len(),
            1,
            "only stage 0's first forward waits for nothing"
        );
        assert_eq!(g.cycle(), None);
    }
}
