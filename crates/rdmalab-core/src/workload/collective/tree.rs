//! NCCL's double binary tree all-reduce (NCCL 2.4, after Sanders, Speck
//! and Träff, "Two-tree algorithms for full bandwidth broadcast, reduction
//! and scan", Parallel Computing 35(12), 2009): two binary trees over the
//! ranks each reduce half of the buffer up to their root and broadcast it
//! back down, in chunks that pipeline. The second tree is the first
//! mirrored (n even) or shifted by one rank (n odd), so a rank that is
//! interior in one tree is a leaf in the other: every rank sends about 2S,
//! as in a ring, in O(log n) steps of latency instead of 2(n − 1).

use super::{jittered, part, rounds, CollectiveSpec};
use crate::rng::RngStream;
use crate::time::Duration;
use crate::workload::graph::{FlowGraph, Instance};
use crate::workload::FlowSpec;

/// Rank `r`'s parent and children in NCCL's binary tree over `n` ranks,
/// rooted at 0, whose other ranks form an in-order tree by their lowest
/// set bit: a rank with lowest bit b has children r ± b/2 and its parent
/// at r with b cleared and 2b set (or b cleared, past the end).
fn btree(n: usize, r: usize) -> (Option<usize>, Vec<usize>) {
    let mut bit = 1;
    while bit < n && bit & r == 0 {
        bit <<= 1;
    }
    if r == 0 {
        // The root has one child: the top of the in-order tree.
        return (None, if n > 1 { vec![bit >> 1] } else { vec![] });
    }
    let mut up = (r ^ bit) | (bit << 1);
    if up >= n {
        up = r ^ bit;
    }
    let mut children = Vec::new();
    let mut low = bit >> 1;
    if low > 0 {
        children.push(r - low);
        while low > 0 && r + low >= n {
            low >>= 1;
        }
        if low > 0 {
            children.push(r + low);
        }
    }
    (Some(up), children)
}

/// Rank `r`'s parent and children in tree `t` (0 or 1) of the double tree.
pub(super) fn dtree(n: usize, r: usize, t: usize) -> (Option<usize>, Vec<usize>) {
    if t == 0 {
        return btree(n, r);
    }
    // Relabel, build, and map back: mirror for even n, shift by one for odd.
    let (to, from): (Box<dyn Fn(usize) -> usize>, Box<dyn Fn(usize) -> usize>) = if n % 2 == 0 {
        (Box::new(move |x| n - 1 - x), Box::new(move |x| n - 1 - x))
    } else {
        (
            Box::new(move |x| (x + n - 1) % n),
            Box::new(move |x| (x + 1) % n),
        )
    };
    let (up, down) = btree(n, to(r));
    (up.map(&from), down.into_iter().map(&from).collect())
}

/// A double binary tree all-reduce: per iteration, tree, channel and round,
/// each rank sends its partial sum up once its children's have arrived, and
/// the root's result comes down, each rank forwarding it on arrival.
pub(super) fn expand(
    c: &CollectiveSpec,
    index: u32,
    seed: u64,
    flows: &mut Vec<FlowSpec>,
    g: &mut FlowGraph,
) {
    let (n, ch_n) = (c.ranks.len(), c.channels as u64);
    let mut rng = RngStream::new(seed, &format!("collective/{index}"));
    let trees: Vec<Vec<(Option<usize>, Vec<usize>)>> = (0..2)
        .map(|t| (0..n).map(|r| dtree(n, r, t)).collect())
        .collect();
    // Connections per tree and rank: up to the parent, down to each of two children.
    let slot0 = g.slots;
    g.slots += (2 * n * 3) as u32 * c.channels;
    let slot = |t: usize, r: usize, role: usize, ch: u64| {
        slot0 + (((t * n + r) * 3 + role) as u64 * ch_n + ch) as u32
    };
    let rounds = rounds(part(part(c.bytes, 2, 0), ch_n, 0), c.chunk);
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
        let gates: Vec<u32> = (0..n)
            .map(|r| {
                let gap = jittered(c.compute[r], c.jitter, &mut rng);
                let gate = g.gate(prev_in[r].len() as u32, gap);
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
        let send = |flows: &mut Vec<FlowSpec>,
                    g: &mut FlowGraph,
                    r: usize,
                    to: usize,
                    bytes: u64,
                    conn: u32,
                    waits: u32| {
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
            // Waiting for data (more than its rank's compute): the step overhead.
            let gap = if waits > 1 {
                c.step_overhead
            } else {
                Duration::ZERO
            };
            let node = g.flow_node(f, waits, gap);
            g.flow_slot[f as usize] = conn;
            g.flow_instance[f as usize] = inst;
            g.flow_ranks[f as usize] = (r as u32, to as u32);
            g.instances[inst as usize].flows += 1;
            (f, node)
        };
        for (t, tree) in trees.iter().enumerate() {
            for ch in 0..ch_n {
                for round in 0..rounds {
                    let bytes = part(part(part(c.bytes, 2, t as u64), ch_n, ch), rounds, round);
                    // Up: a rank's partial sum, once its children's are in.
                    let mut up = vec![None; n];
                    for (r, (parent, children)) in tree.iter().enumerate() {
                        if let Some(p) = *parent {
                            let waits = 1 + children.len() as u32;
                            up[r] = Some(send(flows, g, r, p, bytes, slot(t, r, 0, ch), waits));
                        }
                    }
                    // Down: the root's result once its children's sums are in;
                    // every other rank forwards what came from its parent.
                    let mut down_in = vec![None; n];
                    let mut down = Vec::new();
                    for (r, (parent, children)) in tree.iter().enumerate() {
                        for (k, &child) in children.iter().enumerate() {
                            let waits = if parent.is_none() {
                                1 + children.len() as u32
                            } else {
                                1
                            };
                            let (f, node) =
                                send(flows, g, r, child, bytes, slot(t, r, 1 + k, ch), waits);
                            down_in[child] = Some((f, node));
                            down.push((r, node));
                        }
                    }
                    for (r, (parent, children)) in tree.iter().enumerate() {
                        if let Some((_, node)) = up[r] {
                            g.edge(gates[r], node);
                            for &child in children {
                                let (_, from) = up[child].expect("a child sends up");
                                g.edge(from, node);
                            }
                        }
                        match (*parent, down_in[r]) {
                            // A rank is done with this piece when the result arrives.
                            (Some(_), Some((f, _))) => this_in[r].push(f),
                            // The root, when its children's sums are in.
                            _ => this_in[r].extend(
                                children
                                    .iter()
                                    .map(|&ch| up[ch].expect("a child sends up").0),
                            ),
                        }
                    }
                    for &(r, node) in &down {
                        match (tree[r].0, down_in[r]) {
                            (Some(_), Some((_, from))) => g.edge(from, node),
                            _ => {
                                g.edge(gates[r], node);
                                for &child in &tree[r].1 {
                                    g.edge(up[child].expect("a child sends up").1, node);
                                }
                            }
                        }
                    }
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

#[cfg(test)]
mod tests {
    use super::super::test_spec::spec;
    use super::super::Op;
    use super::*;

    /// Both trees span the ranks: one root, every other rank one parent
    /// that lists it as a child, at most two children, depth O(log n).
    #[test]
    fn both_trees_are_binary_trees_over_every_rank() {
        for n in 2..70 {
            for t in 0..2 {
                let nodes: Vec<_> = (0..n).map(|r| dtree(n, r, t)).collect();
                assert_eq!(
                    nodes.iter().filter(|x| x.0.is_none()).count(),
                    1,
                    "n {n} tree {t}"
                );
                for (r, (parent, children)) in nodes.iter().enumerate() {
                    assert!(children.len() <= 2);
                    if let Some(p) = parent {
                        assert!(
                            nodes[*p].1.contains(&r),
                            "n {n} tree {t}: {p} does not list {r}"
                        );
                    }
                    for &c in children {
                        assert_eq!(nodes[c].0, Some(r), "n {n} tree {t}: {c}'s parent");
                    }
                }
                // Depth: walk up from every rank.
                let depth = (0..n)
                    .map(|mut r| {
                        let mut d = 0;
                        while let Some(p) = nodes[r].0 {
                            r = p;
                            d += 1;
                            assert!(d <= n, "a cycle");
                        }
                        d
                    })
                    .max()
                    .unwrap();
                assert!(
                    depth <= 2 + (n as f64).log2().ceil() as usize,
                    "n {n}: depth {depth}"
                );
            }
        }
    }

    /// The point of two trees: with n even, no rank is interior in both.
    #[test]
    fn with_an_even_count_no_rank_is_interior_in_both_trees() {
        for n in (4..70).step_by(2) {
            for r in 0..n {
                let inner = (0..2).filter(|&t| dtree(n, r, t).1.len() == 2).count();
                assert!(inner <= 1, "n {n}: rank {r} is interior in both");
            }
        }
    }

    #[test]
    fn every_byte_goes_up_and_comes_down_once_per_edge() {
        let n = 6;
        let mut s = spec(Op::AllReduce, n, 60_001);
        s.iterations = 1;
        let mut flows = Vec::new();
        let mut g = FlowGraph::default();
        expand(&s, 0, 1, &mut flows, &mut g);
        // Each tree has n − 1 edges; each carries its half once up and once down.
        assert_eq!(
            flows.iter().map(|f| f.bytes).sum::<u64>(),
            2 * (n as u64 - 1) * 60_001
        );
        assert_eq!(g.cycle(), None);
        assert!((0..flows.len() as u32).all(|f| !g.starts_free(f)));
    }
}
