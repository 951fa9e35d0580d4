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
            // The switches next to a placed node: one level up.
            let mut level: Vec<(u32, Vec<usize>)> = Vec::new();
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
                if count.iter().any(|&c| c > 0) {
                    level.push((v, count));
                }
            }
            if level.is_empty() {
                break;
            }
            // Each goes where most of its neighbours are, the clearest
            // majorities first, ties to the partition with fewer switches
            // so far; and no partition takes more than its share of a level.
            // Placing in node order instead gave, on the 320-host ns-3
            // fabric (racks split inside a pod), one partition 12 of 20
            // aggregation switches and then, by majority, all 16 core
            // switches: 34 % more events on its thread.
            let cap = level.len().div_ceil(parts);
            let margin = |c: &[usize]| {
                let mut s = c.to_vec();
                s.sort_unstable_by(|a, b| b.cmp(a));
                s[0] - s.get(1).copied().unwrap_or(0)
            };
            level.sort_by_key(|(v, c)| (std::cmp::Reverse(margin(c)), *v));
            let mut taken = vec![0usize; parts];
            for (v, count) in level {
                let p = (0..parts)
                    .filter(|&p| taken[p] < cap)
                    .min_by_key(|&p| (std::cmp::Reverse(count[p]), placed_above[p], p))
                    .expect("a level fits its caps");
                taken[p] += 1;
                placed_above[p] += 1;
                node_part[v as usize] = p as u16;
            }
        }
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
    fn racks_split_inside_a_pod_still_leave_the_switches_above_balanced() {
        // The HPCC paper's 320-host fabric: 5 pods of 4 racks and 4
        // aggregation switches, 16 core switches each on one aggregation
        // switch per pod. Two partitions split the middle pod's racks.
        let link = LinkParams {
            rate: Rate::gbps(100),
            delay: Duration::from_us(1),
        };
        let mut t = Topology::default();
        let tors: Vec<u32> = (0..20)
            .map(|i| t.add_node(format!("tor{i}"), NodeKind::Switch))
            .collect();
        let aggs: Vec<u32> = (0..20)
            .map(|i| t.add_node(format!("agg{i}"), NodeKind::Switch))
            .collect();
        let cores: Vec<u32> = (0..16)
            .map(|i| t.add_node(format!("core{i}"), NodeKind::Switch))
            .collect();
        for (r, &tor) in tors.iter().enumerate() {
            for j in 0..2 {
                let h = t.add_node(format!("h{r}-{j}"), NodeKind::Host);
                t.add_link(h, tor, link);
            }
            let pod = r / 4;
            for a in 0..4 {
                t.add_link(tor, aggs[pod * 4 + a], link);
            }
        }
        for (c, &core) in cores.iter().enumerate() {
            for pod in 0..5 {
                t.add_link(aggs[pod * 4 + c / 4], core, link);
            }
        }
        let p = Partitioning::new(&t, 2).unwrap();
        let count = |nodes: &[u32], k: u16| {
            nodes
                .iter()
                .filter(|&&v| p.node_part[v as usize] == k)
                .count()
        };
        assert_eq!((count(&tors, 0), count(&tors, 1)), (10, 10));
        assert_eq!((count(&aggs, 0), count(&aggs, 1)), (10, 10));
        assert_eq!((count(&cores, 0), count(&cores, 1)), (8, 8));
        // Whole pods keep their aggregation switches.
        assert!(aggs[..8].iter().all(|&a| p.node_part[a as usize] == 0));
        assert!(aggs[12..].iter().all(|&a| p.node_part[a as usize] == 1));
    }

    #[test]
    fn no_partition_takes_more_than_its_share_of_a_level() {
        // Three leaves split 2 : 1; every spine has more neighbours in the
        // first partition, but the spines are shared out 2 : 2.
        let link = LinkParams {
            rate: Rate::gbps(100),
            delay: Duration::from_us(1),
        };
        let t = Topology::leaf_spine(3, 4, 2, 1, link, link);
        let p = Partitioning::new(&t, 2).unwrap();
        let spines: Vec<usize> = (0..t.nodes.len())
            .filter(|&v| t.nodes[v].kind == NodeKind::Switch && t.nodes[v].name.contains("spine"))
            .collect();
        assert_eq!(spines.len(), 4);
        let in_first = spines.iter().filter(|&&v| p.node_part[v] == 0).count();
        assert_eq!(in_first, 2);
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
