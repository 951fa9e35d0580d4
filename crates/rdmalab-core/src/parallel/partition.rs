//! Which partition of a parallel run owns each node, and the lookahead that
//! split allows.
//!
//! A partition is a block of top-of-rack switches with their hosts (in host
//! order, so a fat tree's pods stay whole), plus the switches above them that
//! mostly connect to it; a switch that connects to every block equally (a fat
//! tree's core) goes to the block with the fewest such switches so far. Frames
//! cross between partitions only on links, so the shortest such link's delay
//! is how far one partition may run ahead of another.

use crate::net::topology::{NodeKind, Topology};
use crate::time::Duration;

/// The split of a topology's nodes into partitions.
#[derive(Clone, Debug)]
pub struct Partitioning {
    /// Node id → its partition.
    pub node_part: Vec<u16>,
    pub parts: usize,
    /// How far a window may reach: the shortest delay of a link between two
    /// partitions, and at most twice the shortest link delay of all (no flow
    /// can end within one window while its last byte has not left its NIC).
    pub lookahead: Duration,
}

impl Partitioning {
    /// Split `topo` into `parts` partitions, or say why it cannot be.
    pub fn new(topo: &Topology, parts: usize) -> Result<Partitioning, String> {
        let n = topo.nodes.len();
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for l in &topo.links {
            adj[l.a as usize].push(l.b);
            adj[l.b as usize].push(l.a);
        }
        let is_switch = |v: u32| topo.nodes[v as usize].kind == NodeKind::Switch;
        // Top-of-rack switches, in the order of their first host.
        let mut tors: Vec<u32> = Vec::new();
        for h in topo.hosts() {
            let Some(&tor) = adj[h as usize].first() else {
                continue;
            };
            if is_switch(tor) && !tors.contains(&tor) {
                tors.push(tor);
            }
        }
        if tors.len() < parts {
            return Err(format!(
                "threads: {parts} needs at least {parts} top-of-rack switches to split the fabric over; this topology has {}; allowed: 1 to {}",
                tors.len(),
                tors.len().max(1)
            ));
        }
        const NONE: u16 = u16::MAX;
        let mut node_part = vec![NONE; n];
        for (i, &t) in tors.iter().enumerate() {
            node_part[t as usize] = (i * parts / tors.len()) as u16;
        }
        for h in topo.hosts() {
            if let Some(&tor) = adj[h as usize].first() {
                node_part[h as usize] = node_part[tor as usize];
            }
        }
        // Switches above the racks, level by level: each to the partition
        // most of its already placed neighbours are in.
        let mut placed_above = vec![0usize; parts];
        loop {
            let mut level: Vec<(u32, u16)> = Vec::new();
            for v in 0..n as u32 {
                if node_part[v as usize] != NONE || !is_switch(v) {
                    continue;
                }
                let mut count = vec![0usize; parts];
                for &u in &adj[v as usize] {
                    let p = node_part[u as usize];
                    if p != NONE {
                        count[p as usize] += 1;
                    }
                }
                let best = *count.iter().max().expect("parts > 0");
                if best == 0 {
                    continue;
                }
                let p = (0..parts)
                    .filter(|&p| count[p] == best)
                    .min_by_key(|&p| (placed_above[p], p))
                    .expect("one has the most");
                placed_above[p] += 1;
                level.push((v, p as u16));
            }
            if level.is_empty() {
                break;
            }
            for (v, p) in level {
                node_part[v as usize] = p;
            }
        }
        // Nodes connected to nothing placed (an isolated switch) go to the first.
        for p in node_part.iter_mut() {
            if *p == NONE {
                *p = 0;
            }
        }
        let shortest = topo.links.iter().map(|l| l.delay).min();
        let crossing = topo
            .links
            .iter()
            .filter(|l| node_part[l.a as usize] != node_part[l.b as usize])
            .map(|l| l.delay)
            .min();
        let lookahead = match (crossing, shortest) {
            (Some(c), Some(s)) => c.min(Duration(s.ps().saturating_mul(2))),
            _ => Duration(u64::MAX / 4),
        };
        if lookahead == Duration::ZERO {
            return Err(
                "threads: a link between two partitions has zero delay, which leaves a parallel run no lookahead; allowed: threads 1, or links with a delay above 0"
                    .to_string(),
            );
        }
        Ok(Partitioning {
            node_part,
            parts,
            lookahead,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::LinkParams;
    use crate::time::Rate;

    #[test]
    fn a_fat_tree_splits_by_pod_and_shares_the_core() {
        let link = LinkParams {
            rate: Rate::gbps(100),
            delay: Duration::from_us(1),
        };
        let t = Topology::fat_tree(4, link, link);
        let p = Partitioning::new(&t, 2).unwrap();
        let hosts: Vec<u32> = t.hosts().collect();
        // 16 hosts, 4 pods of 4: the first two pods in one partition.
        let of = |h: u32| p.node_part[h as usize];
        assert!(hosts[..8].iter().all(|&h| of(h) == 0));
        assert!(hosts[8..].iter().all(|&h| of(h) == 1));
        let per_part = |k: u16| {
            (0..t.nodes.len())
                .filter(|&v| t.nodes[v].kind == NodeKind::Switch && p.node_part[v] == k)
                .count()
        };
        assert_eq!(per_part(0), per_part(1), "20 switches split evenly");
        assert_eq!(p.lookahead, Duration::from_us(1));
    }

    #[test]
    fn more_partitions_than_racks_is_refused() {
        let link = LinkParams {
            rate: Rate::gbps(100),
            delay: Duration::from_us(1),
        };
        let t = Topology::single_switch(8, link);
        let e = Partitioning::new(&t, 2).unwrap_err();
        assert!(e.contains("threads: 2") && e.contains("has 1"), "{e}");
    }
}
