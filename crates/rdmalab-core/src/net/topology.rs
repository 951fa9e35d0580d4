//! Topologies: which nodes exist and which links join them.
//!
//! A [`Topology`] is a plain description (no runtime state). Builders make the
//! standard shapes; [`Topology::from_hpcc_file`] reads the ns-3 HPCC simulator's
//! topology format. Host and switch names (`h0`, `s3`, ...) are what scenarios
//! refer to.

use crate::time::{Duration, Rate};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

/// A full-duplex point-to-point link.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: u32,
    pub b: u32,
    pub rate: Rate,
    pub delay: Duration,
    /// Probability that a frame is lost on this link (each direction independently).
    pub loss: f64,
    /// Intervals during which the link is down: frames sent then are lost.
    pub down: Vec<(Duration, Duration)>,
}

#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
}

/// Link parameters used by the builders.
#[derive(Clone, Copy, Debug)]
pub struct LinkParams {
    pub rate: Rate,
    pub delay: Duration,
}

/// Every tier name [`Topology::tier`] gives.
pub const TIERS: [&str; 7] = ["host", "edge", "agg", "core", "leaf", "spine", "switch"];

/// The most nodes a topology may have (each costs a name, ports and queues).
pub const MAX_NODES: u64 = 1_000_000;
/// The most links a topology may have.
pub const MAX_LINKS: u64 = 10_000_000;
/// The most (switch, destination ToR) routing entries. Routing keeps one
/// 8-byte port range per pair (the port lists behind them are shared), so
/// this bounds the tables near 800 MB; a k = 64 fat tree has 10.5M.
pub const MAX_ROUTE_ENTRIES: u64 = 100_000_000;

/// Refuse a topology too large to build, from its counts alone (before
/// anything is allocated): why, with the allowed bound. `tors` counts the
/// switches hosts attach to (routing keeps an entry per switch and ToR).
pub fn check_size(hosts: u64, switches: u64, tors: u64, links: u64) -> Result<(), String> {
    let nodes = hosts + switches;
    if nodes > MAX_NODES {
        return Err(format!(
            "gives {nodes} nodes ({hosts} hosts, {switches} switches); allowed: at most {MAX_NODES}"
        ));
    }
    if links > MAX_LINKS {
        return Err(format!("gives {links} links; allowed: at most {MAX_LINKS}"));
    }
    let routes = tors.saturating_mul(switches);
    if routes > MAX_ROUTE_ENTRIES {
        return Err(format!(
            "gives {switches} switches x {tors} ToRs (switches with hosts) = {routes} routing entries (about {} MB); allowed: at most {MAX_ROUTE_ENTRIES} (fewer switches, or hosts on fewer of them)",
            routes * 8 / 1_000_000
        ));
    }
    Ok(())
}

/// Switches that have at least one host on a link: the ToRs routing keeps
/// entries for.
fn count_tors(nodes: &[NodeSpec], links: &[LinkSpec]) -> u64 {
    let mut tor = vec![false; nodes.len()];
    for l in links {
        for (a, b) in [(l.a, l.b), (l.b, l.a)] {
            if nodes[a as usize].kind == NodeKind::Switch
                && nodes[b as usize].kind == NodeKind::Host
            {
                tor[a as usize] = true;
            }
        }
    }
    tor.iter().filter(|&&t| t).count() as u64
}

impl Topology {
    pub fn add_node(&mut self, name: String, kind: NodeKind) -> u32 {
        self.nodes.push(NodeSpec { name, kind });
        (self.nodes.len() - 1) as u32
    }

    pub fn add_link(&mut self, a: u32, b: u32, p: LinkParams) {
        self.links.push(LinkSpec {
            a,
            b,
            rate: p.rate,
            delay: p.delay,
            loss: 0.0,
            down: Vec::new(),
        });
    }

    pub fn hosts(&self) -> impl Iterator<Item = u32> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Host)
            .map(|(i, _)| i as u32)
    }

    pub fn host_count(&self) -> usize {
        self.hosts().count()
    }

    pub fn find(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
    }

    /// The tier of a node, for scenarios that set links and switches by tier:
    /// `host`; `edge`, `agg`, `core` in a fat tree; `leaf`, `spine` in a
    /// leaf–spine; `switch` elsewhere (single switch, dumbbell, ns-3 files).
    /// Read off the builders' names, so it costs nothing to keep.
    pub fn tier(&self, node: u32) -> &'static str {
        let n = &self.nodes[node as usize];
        if n.kind == NodeKind::Host {
            return "host";
        }
        let prefix = n
            .name
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '_');
        TIERS
            .iter()
            .copied()
            .find(|&t| t != "host" && t != "switch" && t == prefix)
            .unwrap_or("switch")
    }

    /// The tiers present, in [`TIERS`] order.
    pub fn tiers(&self) -> Vec<&'static str> {
        let mut seen = [false; TIERS.len()];
        for i in 0..self.nodes.len() {
            let t = self.tier(i as u32);
            seen[TIERS.iter().position(|&x| x == t).expect("a tier")] = true;
        }
        TIERS
            .iter()
            .zip(seen)
            .filter(|(_, s)| *s)
            .map(|(t, _)| *t)
            .collect()
    }

    /// `n` hosts on one switch.
    pub fn single_switch(n: u32, host: LinkParams) -> Self {
        let mut t = Topology::default();
        let hosts: Vec<u32> = (0..n)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let s = t.add_node("s0".into(), NodeKind::Switch);
        for h in hosts {
            t.add_link(h, s, host);
        }
        t
    }

    /// Two switches joined by one bottleneck link; `left` hosts on s0, `right` on s1.
    /// Hosts are numbered left first.
    pub fn dumbbell(left: u32, right: u32, host: LinkParams, bottleneck: LinkParams) -> Self {
        let mut t = Topology::default();
        let l: Vec<u32> = (0..left)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let r: Vec<u32> = (0..right)
            .map(|i| t.add_node(format!("h{}", left + i), NodeKind::Host))
            .collect();
        let s0 = t.add_node("s0".into(), NodeKind::Switch);
        let s1 = t.add_node("s1".into(), NodeKind::Switch);
        for h in l {
            t.add_link(h, s0, host);
        }
        for h in r {
            t.add_link(h, s1, host);
        }
        t.add_link(s0, s1, bottleneck);
        t
    }

    /// Two-tier Clos: every leaf connects to every spine with `uplinks_per_spine` links.
    /// Oversubscription = (hosts_per_leaf × host rate) / (spines × uplinks × fabric rate).
    pub fn leaf_spine(
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        uplinks_per_spine: u32,
        host: LinkParams,
        fabric: LinkParams,
    ) -> Self {
        let mut t = Topology::default();
        let mut host_ids = Vec::new();
        for i in 0..leaves * hosts_per_leaf {
            host_ids.push(t.add_node(format!("h{i}"), NodeKind::Host));
        }
        let leaf: Vec<u32> = (0..leaves)
            .map(|i| t.add_node(format!("leaf{i}"), NodeKind::Switch))
            .collect();
        let spine: Vec<u32> = (0..spines)
            .map(|i| t.add_node(format!("spine{i}"), NodeKind::Switch))
            .collect();
        for (i, h) in host_ids.iter().enumerate() {
            t.add_link(*h, leaf[i / hosts_per_leaf as usize], host);
        }
        for &l in &leaf {
            for &s in &spine {
                for _ in 0..uplinks_per_spine {
                    t.add_link(l, s, fabric);
                }
            }
        }
        t
    }

    /// A rail-optimised fabric, as AI clusters build them (NVIDIA DGX
    /// SuperPOD): `servers` servers with `rails` NICs each (one per GPU),
    /// named `h{server·rails + rail}`; NIC r of every server in a group of
    /// `servers_per_leaf` connects to that group's rail-r leaf
    /// `leaf{r}_{group}`; every leaf connects to every spine `uplinks`
    /// times. Same-rail traffic within a group turns at its leaf; anything
    /// else crosses a spine (no NVLink between a server's NICs here).
    pub fn rail_optimized(
        servers: u32,
        rails: u32,
        servers_per_leaf: u32,
        spines: u32,
        uplinks: u32,
        host: LinkParams,
        fabric: LinkParams,
    ) -> Self {
        let mut t = Topology::default();
        let hosts: Vec<u32> = (0..servers * rails)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let groups = servers.div_ceil(servers_per_leaf);
        let mut leaf = Vec::new();
        for g in 0..groups {
            for r in 0..rails {
                leaf.push(t.add_node(format!("leaf{r}_{g}"), NodeKind::Switch));
            }
        }
        let spine: Vec<u32> = (0..spines)
            .map(|i| t.add_node(format!("spine{i}"), NodeKind::Switch))
            .collect();
        for (i, &h) in hosts.iter().enumerate() {
            let (server, rail) = (i as u32 / rails, i as u32 % rails);
            t.add_link(h, leaf[((server / servers_per_leaf) * rails + rail) as usize], host);
        }
        for &l in &leaf {
            for &s in &spine {
                for _ in 0..uplinks {
                    t.add_link(l, s, fabric);
                }
            }
        }
        t
    }

    /// The 3-tier fat-tree of Al-Fares et al. (SIGCOMM'08) for even `k`: k pods of
    /// k/2 edge and k/2 aggregation switches, (k/2)² core switches, k³/4 hosts.
    pub fn fat_tree(k: u32, host: LinkParams, fabric: LinkParams) -> Self {
        Self::fat_tree_pods(k, k, k / 2, host, fabric)
    }

    /// A fat-tree of radix `k` with `pods` pods (k in the full tree; more
    /// give each core switch one port per pod) and `hosts_per_edge` hosts
    /// on each edge switch (k/2 in the full tree).
    /// With more hosts per edge the fabric links must be faster to stay
    /// non-blocking: Snyder et al. (§IV) use k = 8, 4 pods and 16 hosts per
    /// edge at 100 Gb/s with 400 Gb/s fabric links (256 hosts, 16 cores).
    pub fn fat_tree_pods(
        k: u32,
        pods: u32,
        hosts_per_edge: u32,
        host: LinkParams,
        fabric: LinkParams,
    ) -> Self {
        let half = k / 2;
        let mut t = Topology::default();
        let n_hosts = pods * half * hosts_per_edge;
        let hosts: Vec<u32> = (0..n_hosts)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let mut edge = Vec::new();
        let mut agg = Vec::new();
        for p in 0..pods {
            for i in 0..half {
                edge.push(t.add_node(format!("edge{p}_{i}"), NodeKind::Switch));
            }
        }
        for p in 0..pods {
            for i in 0..half {
                agg.push(t.add_node(format!("agg{p}_{i}"), NodeKind::Switch));
            }
        }
        let core: Vec<u32> = (0..half * half)
            .map(|i| t.add_node(format!("core{i}"), NodeKind::Switch))
            .collect();
        for (i, h) in hosts.iter().enumerate() {
            t.add_link(*h, edge[i / hosts_per_edge as usize], host);
        }
        for p in 0..pods {
            for e in 0..half {
                for a in 0..half {
                    t.add_link(
                        edge[(p * half + e) as usize],
                        agg[(p * half + a) as usize],
                        fabric,
                    );
                }
            }
            for a in 0..half {
                for c in 0..half {
                    t.add_link(
                        agg[(p * half + a) as usize],
                        core[(a * half + c) as usize],
                        fabric,
                    );
                }
            }
        }
        t
    }

    /// Parse the ns-3 HPCC simulator's topology format:
    /// `N S L`, then the S switch ids, then L lines `a b rate delay error_rate`.
    /// Lines after the L-th are ignored, as ns-3 does (the shipped files append prose).
    pub fn from_hpcc_file(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let head = lines.next().ok_or("empty topology file")?;
        let nums: Vec<&str> = head.split_whitespace().collect();
        if nums.len() < 3 {
            return Err(format!(
                "first line `{head}` must be `<nodes> <switches> <links>`"
            ));
        }
        // ns-3 reads the file as a stream of numbers: a fourth would be
        // its first switch id, where this line-wise reading would drop it.
        if nums.len() > 3 {
            return Err(format!(
                "first line `{head}` has {} fields; allowed: `<nodes> <switches> <links>`, the switch ids on the lines after it",
                nums.len()
            ));
        }
        let parse_u = |s: &str, what: &str| -> Result<u32, String> {
            s.parse::<u32>()
                .map_err(|_| format!("{what} `{s}` is not a non-negative integer"))
        };
        let n = parse_u(nums[0], "node count")?;
        let s = parse_u(nums[1], "switch count")?;
        let l = parse_u(nums[2], "link count")?;
        if s > n {
            return Err(format!("switch count {s} is above the node count {n}"));
        }
        if s == n {
            return Err(format!(
                "first line `{head}`: {s} of the {n} nodes are switches, so the topology has no hosts; allowed: fewer switches than nodes"
            ));
        }
        // Nodes and links first, before allocating for them; ToRs once the links are read.
        check_size((n - s) as u64, s as u64, 0, l as u64)?;
        let mut is_switch = vec![false; n as usize];
        let mut got = 0;
        while got < s {
            let line = lines
                .next()
                .ok_or(format!("expected {s} switch ids, found {got}"))?;
            for tok in line.split_whitespace() {
                // ns-3 reads exactly S ids: more would be read as a link.
                if got == s {
                    return Err(format!(
                        "switch line `{line}`: more than the {s} switch ids the first line gives"
                    ));
                }
                let id = parse_u(tok, "switch id")?;
                if id >= n {
                    return Err(format!("switch id {id} is not below the node count {n}"));
                }
                // A repeat would leave the topology a switch short of its count.
                if is_switch[id as usize] {
                    return Err(format!(
                        "switch line `{line}`: switch id {id} is listed twice; allowed: each switch once"
                    ));
                }
                is_switch[id as usize] = true;
                got += 1;
            }
        }
        let mut t = Topology::default();
        for (i, sw) in is_switch.iter().enumerate() {
            let kind = if *sw {
                NodeKind::Switch
            } else {
                NodeKind::Host
            };
            let name = if *sw {
                format!("s{i}")
            } else {
                format!("h{i}")
            };
            t.nodes.push(NodeSpec { name, kind });
        }
        for k in 0..l {
            let line = lines
                .next()
                .ok_or(format!("expected {l} link lines, found {k}"))?;
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 4 {
                return Err(format!(
                    "link line {} `{line}` needs `src dst rate delay [error_rate]`",
                    k + 1
                ));
            }
            // A field past the error rate would be dropped unseen.
            if f.len() > 5 {
                return Err(format!(
                    "link line {} `{line}` has {} fields; allowed: `src dst rate delay [error_rate]`",
                    k + 1,
                    f.len()
                ));
            }
            let a = parse_u(f[0], "link endpoint")?;
            let b = parse_u(f[1], "link endpoint")?;
            if a >= n || b >= n {
                return Err(format!(
                    "link line {} `{line}`: node id not below {n}",
                    k + 1
                ));
            }
            let rate = crate::scenario::units::parse_rate(f[2])
                .map_err(|e| format!("link line {} rate: {e}", k + 1))?;
            if rate.bps() == 0 {
                // A frame would take for ever (a division by zero): refused
                // here, as a scenario's `rate: 0Gbps` is.
                return Err(format!(
                    "link line {} `{line}`: rate `{}` is 0 bit/s; allowed: at least 1bps (rates are whole bits per second)",
                    k + 1,
                    f[2]
                ));
            }
            let delay = crate::scenario::units::parse_duration(f[3])
                .map_err(|e| format!("link line {} delay: {e}", k + 1))?;
            let loss = match f.get(4) {
                Some(x) => error_rate(x).ok_or(format!(
                    "link line {} `{line}`: error rate `{x}`; allowed: a number from 0 to 1 (the probability that a frame is lost)",
                    k + 1
                ))?,
                None => 0.0,
            };
            t.links.push(LinkSpec {
                a,
                b,
                rate,
                delay,
                loss,
                down: Vec::new(),
            });
        }
        check_size(
            (n - s) as u64,
            s as u64,
            count_tors(&t.nodes, &t.links),
            l as u64,
        )?;
        Ok(t)
    }

    /// Lines after the links an ns-3 HPCC topology file counts that are
    /// links themselves (`src dst rate delay [error_rate]`). [`Topology::from_hpcc_file`]
    /// reads the counted links only, as ns-3 does, so a link added without
    /// raising the count is not part of the network; the prose the HPCC
    /// repository's files end with is no link. The one place this rule is
    /// written: the scenario check warns with it, and `rdmalab hpcc convert`
    /// (through the Python module's `hpcc_links_past_count`) too. Call it on
    /// text `from_hpcc_file`, or the converter's token reader, accepted: one
    /// link a line, as every ns-3 topology file writes them.
    pub fn hpcc_file_links_past_count(text: &str) -> Option<LinksPastCount> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        let head: Vec<u64> = lines
            .next()?
            .1
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let (s, l) = (*head.get(1)?, *head.get(2)?);
        let mut ids = 0;
        while ids < s {
            ids += lines.next()?.1.split_whitespace().count() as u64;
        }
        let past: Vec<(usize, &str)> = lines
            .skip(l as usize)
            .filter(|(_, line)| {
                let f: Vec<&str> = line.split_whitespace().collect();
                (4..=5).contains(&f.len())
                    && f[0].parse::<u32>().is_ok()
                    && f[1].parse::<u32>().is_ok()
                    && crate::scenario::units::parse_rate(f[2]).is_ok()
            })
            .collect();
        let &(first_line, first) = past.first()?;
        Some(LinksPastCount {
            lines: past.len(),
            first_line,
            first: first.to_string(),
            counted: l,
        })
    }

    /// Ids of nodes with no link at all.
    pub fn isolated(&self) -> Vec<u32> {
        let mut deg = vec![0u32; self.nodes.len()];
        for l in &self.links {
            deg[l.a as usize] += 1;
            deg[l.b as usize] += 1;
        }
        (0..self.nodes.len() as u32)
            .filter(|&i| deg[i as usize] == 0)
            .collect()
    }
}

/// Link lines after the links an ns-3 HPCC topology file counts
/// ([`Topology::hpcc_file_links_past_count`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinksPastCount {
    /// How many lines after the counted links are links.
    pub lines: usize,
    /// The first one's line number in the text (from 1, blank lines counted).
    pub first_line: usize,
    /// The first one, trimmed.
    pub first: String,
    /// How many links the first line counts.
    pub counted: u64,
}

/// A link line's error rate: the probability that a frame is lost. `5`,
/// `-0.5` and `nan` parse as numbers but are no probability.
fn error_rate(x: &str) -> Option<f64> {
    x.parse::<f64>().ok().filter(|p| (0.0..=1.0).contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(g: u64) -> LinkParams {
        LinkParams {
            rate: Rate::gbps(g),
            delay: Duration::from_us(1),
        }
    }

    #[test]
    fn a_rail_optimised_fabric_puts_each_nic_on_its_rail_leaf() {
        let l = lp(100);
        // 6 servers × 4 rails, 4 servers per leaf group: 2 groups, 8 leaves, 2 spines.
        let t = Topology::rail_optimized(6, 4, 4, 2, 1, l, l);
        assert_eq!(t.hosts().count(), 24);
        assert_eq!(t.nodes.len(), 24 + 8 + 2);
        assert_eq!(t.links.len(), 24 + 8 * 2);
        let peer = |h: u32| {
            let link = t.links.iter().find(|x| x.a == h || x.b == h).unwrap();
            let other = if link.a == h { link.b } else { link.a };
            t.nodes[other as usize].name.clone()
        };
        // Server 5's rail-3 NIC (h23) is in group 1; server 0's rail-0 NIC on leaf0_0.
        assert_eq!(peer(23), "leaf3_1");
        assert_eq!(peer(0), "leaf0_0");
        assert_eq!(peer(6), "leaf2_0");
        assert_eq!(t.tier(24), "leaf");
        assert_eq!(t.tier(33), "spine");
    }

    #[test]
    fn fat_tree_k4_has_16_hosts_and_20_switches() {
        let t = Topology::fat_tree(4, lp(100), lp(100));
        assert_eq!(t.host_count(), 16);
        assert_eq!(t.nodes.len() - 16, 20);
        // k³/4 host links + k·(k/2)² edge-agg + k·(k/2)² agg-core
        assert_eq!(t.links.len(), 16 + 16 + 16);
    }

    #[test]
    fn hpcc_320_host_file_parses() {
        let text = include_str!("../../data/topologies/hpcc-fat-tree-320-hosts.txt");
        let t = Topology::from_hpcc_file(text).unwrap();
        assert_eq!(t.nodes.len(), 376);
        assert_eq!(t.host_count(), 320);
        assert_eq!(t.links.len(), 480);
        assert_eq!(t.links[0].rate, Rate::gbps(100));
        assert_eq!(t.links[479].rate, Rate::gbps(400));
    }

    /// A link line past the count is found, with its line number (blank
    /// lines counted), after switch ids on several lines and links of four
    /// or five fields; the prose ns-3's files end with is no link.
    #[test]
    fn hpcc_file_links_past_the_count_are_found_and_prose_is_not() {
        let links = "0 3 100Gbps 1us 0\n1 3 100Gbps 1us\n2 4 100Gbps 1us 0\n3 4 100Gbps 1us 0\n";
        let prose = "\nFirst line: total node #, switch node #, link #\n";
        let counted = format!("5 2 4\n3\n\n4\n{links}{prose}");
        assert_eq!(Topology::hpcc_file_links_past_count(&counted), None);
        let past = format!("5 2 4\n3\n\n4\n{links}\n3 4 100Gbps 1us\n{prose}0 4 100Gbps 1us 0\n");
        assert_eq!(
            Topology::hpcc_file_links_past_count(&past),
            Some(LinksPastCount {
                lines: 2,
                first_line: 10,
                first: "3 4 100Gbps 1us".into(),
                counted: 4
            })
        );
        // Raising the count reads them: nothing is past it.
        let raised = past.replacen("5 2 4", "5 2 5", 1);
        let got = Topology::hpcc_file_links_past_count(&raised).unwrap();
        assert_eq!((got.lines, got.first_line, got.counted), (1, 13, 5));
        for bad in ["", "x y z\n", "5 2\n3 4\n", "5 2 4\n3\n"] {
            assert_eq!(Topology::hpcc_file_links_past_count(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hpcc_file_errors_name_the_problem() {
        let e = Topology::from_hpcc_file("3 1 1\n5\n0 1 100Gbps 1us 0").unwrap_err();
        assert!(e.contains("switch id 5"), "{e}");
    }

    /// A field past a link's error rate, a switch listed twice or beyond the
    /// count, and a topology of switches only are refused naming the line.
    #[test]
    fn hpcc_file_extra_fields_and_repeated_switches_are_refused() {
        let e =
            Topology::from_hpcc_file("3 1 2\n2\n0 2 100Gbps 1000ns 0 junk\n1 2 100Gbps 1000ns 0\n")
                .unwrap_err();
        assert!(
            e.contains("link line 1 `0 2 100Gbps 1000ns 0 junk` has 6 fields; allowed: `src dst rate delay [error_rate]`"),
            "{e}"
        );
        let e =
            Topology::from_hpcc_file("4 2 2\n2 2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")
                .unwrap_err();
        assert!(
            e.contains("switch line `2 2`: switch id 2 is listed twice; allowed: each switch once"),
            "{e}"
        );
        let e =
            Topology::from_hpcc_file("4 1 2\n2 3\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")
                .unwrap_err();
        assert!(
            e.contains("switch line `2 3`: more than the 1 switch ids the first line gives"),
            "{e}"
        );
        let e =
            Topology::from_hpcc_file("3 3 2\n0 1 2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")
                .unwrap_err();
        assert!(
            e.contains(
                "first line `3 3 2`: 3 of the 3 nodes are switches, so the topology has no hosts"
            ),
            "{e}"
        );
        // ns-3 would take the 4 as the switch id, and 2 as a link's end.
        let e = Topology::from_hpcc_file(
            "5 1 3 4\n2\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n3 4 100Gbps 1000ns 0\n",
        )
        .unwrap_err();
        assert!(
            e.contains("first line `5 1 3 4` has 4 fields; allowed: `<nodes> <switches> <links>`, the switch ids on the lines after it"),
            "{e}"
        );
        // Switch ids may still span lines.
        let t = Topology::from_hpcc_file(
            "5 2 3\n3\n4\n0 3 100Gbps 1000ns\n1 3 100Gbps 1000ns\n3 4 100Gbps 1000ns\n",
        )
        .unwrap();
        assert_eq!(t.host_count(), 3);
    }

    /// A link of 0 bit/s is refused naming the line: it passed validation
    /// and then divided by zero when a flow's path was worked out.
    #[test]
    fn hpcc_file_rates_must_be_above_zero() {
        for bad in ["0Gbps", "0bps", "0.4bps"] {
            let text = format!("3 1 2\n2\n0 2 100Gbps 1us\n1 2 {bad} 1us\n");
            let e = Topology::from_hpcc_file(&text).unwrap_err();
            assert!(
                e.contains(&format!("link line 2 `1 2 {bad} 1us`: rate `{bad}` is 0 bit/s"))
                    && e.contains("allowed: at least 1bps"),
                "{bad}: {e}"
            );
        }
        let t = Topology::from_hpcc_file("3 1 2\n2\n0 2 100Gbps 1us\n1 2 1bps 1us\n").unwrap();
        assert_eq!(t.links[1].rate.bps(), 1);
    }

    /// A link's error rate is a probability: outside 0 to 1, or not a
    /// number at all, it is refused naming the line, not used as a loss.
    #[test]
    fn hpcc_file_error_rates_must_be_probabilities() {
        for bad in ["5", "-0.5", "nan", "inf", "1.0000001", "x"] {
            let text = format!("3 1 2\n2\n0 2 100Gbps 1000ns {bad}\n1 2 100Gbps 1000ns 0\n");
            let e = Topology::from_hpcc_file(&text).unwrap_err();
            assert!(
                e.contains(&format!(
                    "link line 1 `0 2 100Gbps 1000ns {bad}`: error rate `{bad}`"
                )) && e.contains("allowed: a number from 0 to 1"),
                "{bad}: {e}"
            );
        }
        for good in ["0", "1", "0.01", "1e-3"] {
            let text = format!("3 1 2\n2\n0 2 100Gbps 1000ns {good}\n1 2 100Gbps 1000ns 0\n");
            let t = Topology::from_hpcc_file(&text).unwrap();
            assert_eq!(t.links[0].loss, good.parse::<f64>().unwrap());
        }
    }
}
