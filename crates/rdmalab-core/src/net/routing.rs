//! Shortest-path routing with ECMP.
//!
//! For every switch the table holds all egress ports on a shortest path
//! towards each destination *ToR* (a switch that hosts attach to), not each
//! destination host: a host has one link, so every shortest path to it runs
//! through its ToR, and the ToR's equal-cost ports towards the host are the
//! one port facing it. Routing memory therefore grows with switches × ToRs
//! (a k = 64 fat tree: 5,120 × 2,048) instead of switches × hosts (× 32
//! more), and entries whose port lists are equal share one copy. Hosts never
//! forward. A switch picks among equal-cost ports by hashing the flow's
//! 5-tuple (including the UDP source port) with its own seed, so two switches
//! make independent choices and a sender can steer a QP onto another path by
//! changing its source port.
//!
//! [`EcmpHash::Ns3Hpcc`] instead picks exactly the port the ns-3 HPCC
//! simulator's switch picks, so a run of its input files puts every flow on
//! the same path as ns-3 does and per-flow results can be compared.

use crate::rng::stable_hash;

/// How a switch hashes a packet onto one of its equal-cost ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcmpHash {
    /// rdmalab's own: a 64-bit mix of (src, dst, UDP source port) under a
    /// per-switch seed drawn from the run's seed.
    #[default]
    Rdmalab,
    /// The ns-3 HPCC simulator's `SwitchNode::GetOutDev`: MurmurHash3
    /// (x86, 32-bit) of (sip, dip, sport | dport << 16) seeded with the
    /// switch's node id, over next hops in the order its `third.cc` installs
    /// them (see [`Routing::build`]).
    Ns3Hpcc,
}

/// The UDP ports of a packet as it travels (an ACK's are its flow's, swapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L4Ports {
    pub sport: u16,
    pub dport: u16,
}

impl L4Ports {
    /// A RoCEv2 packet's ports: this source port, destination port 4791.
    pub fn rocev2(sport: u16) -> Self {
        L4Ports {
            sport,
            dport: crate::packet::wire::ROCEV2_UDP_PORT,
        }
    }
}

/// Adjacency as seen by routing: for each node, its (port, peer node) pairs.
pub type Adjacency = Vec<Vec<(u32, u32)>>;

/// Where a host joins the fabric: its ToR and the ToR's port facing it.
#[derive(Clone, Copy, Debug)]
struct HostAttach {
    /// Index of the host's switch among ToRs, or `u32::MAX` if the host's
    /// only peer is not a switch (no switch can reach it).
    tor: u32,
    /// The ToR's egress port towards the host: its only equal-cost port.
    port: u32,
}

/// A run of `ports`: one (switch, destination ToR) entry's equal-cost ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PortRange {
    start: u32,
    len: u32,
}

pub struct Routing {
    /// node id → host index, or `u32::MAX` for a switch.
    host_index: Vec<u32>,
    /// node id → switch index, or `u32::MAX` for a host.
    switch_index: Vec<u32>,
    /// host index → its ToR and the ToR's port to it.
    attach: Vec<HostAttach>,
    /// ToR index → switch index.
    tor_switch: Vec<u32>,
    n_tors: usize,
    /// (switch index × n_tors + ToR index) → range in `ports`.
    ranges: Vec<PortRange>,
    ports: Vec<u32>,
    seeds: Vec<u64>,
    hash: EcmpHash,
    /// switch index → node id (ns-3 seeds a switch's hash with its node id).
    switch_node: Vec<u32>,
}

/// Scratch state of one table build, kept across destination ToRs.
struct TableBuilder<'a> {
    ranges: &'a mut [PortRange],
    ports: &'a mut Vec<u32>,
    n_tors: usize,
}

impl TableBuilder<'_> {
    /// Install `list` as switch `si`'s ports towards ToR `ti`. Builds go ToR
    /// by ToR, so the entry towards ToR `ti - 1` is complete: when the lists
    /// are equal (a fat tree's uplinks serve every remote pod) the entry
    /// shares its copy, which keeps `ports` near the number of distinct sets.
    fn install(&mut self, si: usize, ti: usize, list: &[u32]) {
        let at = si * self.n_tors + ti;
        if ti > 0 {
            let prev = self.ranges[at - 1];
            let s = prev.start as usize;
            if &self.ports[s..s + prev.len as usize] == list {
                self.ranges[at] = prev;
                return;
            }
        }
        let start = u32::try_from(self.ports.len()).expect("routing ports fit u32 indices");
        self.ports.extend_from_slice(list);
        self.ranges[at] = PortRange {
            start,
            len: list.len() as u32,
        };
    }
}

impl Routing {
    /// Build tables by one breadth-first search per destination ToR.
    ///
    /// A host has exactly one link (World refuses more), so its shortest
    /// paths from any other switch are those to its ToR plus that link: the
    /// search from the ToR finds the same ports, in the same order, as one
    /// from the host would.
    ///
    /// With [`EcmpHash::Ns3Hpcc`] a switch's equal-cost ports towards a host
    /// are in the order ns-3's `third.cc` pushes them: in the order its
    /// breadth-first search from that host dequeues the next hops, visiting a
    /// node's neighbours in the order of its `std::map<Ptr<Node>, ..>`, i.e.
    /// by address. Switches there are large (~2 MB) objects that glibc maps
    /// top-down, hosts small heap objects below them: hosts in increasing id,
    /// then switches in decreasing id (measured on the 320-host fat tree; the
    /// order is the allocator's, so another platform may differ). Parallel
    /// links count once, through the last one listed, as its map keeps.
    pub fn build(adj: &Adjacency, is_host: &[bool], master_seed: u64, hash: EcmpHash) -> Self {
        let n = adj.len();
        let mut host_index = vec![u32::MAX; n];
        let mut switch_index = vec![u32::MAX; n];
        let mut hosts = Vec::new();
        let mut n_switches = 0u32;
        for i in 0..n {
            if is_host[i] {
                host_index[i] = hosts.len() as u32;
                hosts.push(i as u32);
            } else {
                switch_index[i] = n_switches;
                n_switches += 1;
            }
        }
        let switch_node: Vec<u32> = (0..n as u32).filter(|&i| !is_host[i as usize]).collect();
        // ToRs in switch order; each host's ToR and the ToR's port to it.
        let mut tor_of_switch = vec![u32::MAX; n_switches as usize];
        let mut tor_switch = Vec::new();
        let mut attach = vec![
            HostAttach {
                tor: u32::MAX,
                port: u32::MAX,
            };
            hosts.len()
        ];
        for (si, &s) in switch_node.iter().enumerate() {
            for &(port, v) in &adj[s as usize] {
                if !is_host[v as usize] {
                    continue;
                }
                assert_eq!(
                    adj[v as usize].len(),
                    1,
                    "routing: host node {v} has several links; rdmalab models one NIC port per host"
                );
                if tor_of_switch[si] == u32::MAX {
                    tor_of_switch[si] = tor_switch.len() as u32;
                    tor_switch.push(si as u32);
                }
                attach[host_index[v as usize] as usize] = HostAttach {
                    tor: tor_of_switch[si],
                    port,
                };
            }
        }
        let n_tors = tor_switch.len();
        let mut ranges = vec![PortRange::default(); n_switches as usize * n_tors];
        let mut ports = Vec::new();
        let mut tables = TableBuilder {
            ranges: &mut ranges,
            ports: &mut ports,
            n_tors,
        };
        let tor_nodes: Vec<u32> = tor_switch
            .iter()
            .map(|&si| switch_node[si as usize])
            .collect();
        match hash {
            EcmpHash::Rdmalab => {
                Self::build_port_order(adj, is_host, &tor_nodes, &switch_node, &mut tables)
            }
            EcmpHash::Ns3Hpcc => Self::build_ns3_order(
                adj,
                is_host,
                &tor_nodes,
                &switch_index,
                n_switches as usize,
                &mut tables,
            ),
        }
        ports.shrink_to_fit();
        let seeds = (0..n_switches)
            .map(|s| stable_hash(format!("{master_seed}/ecmp/{s}").as_bytes()))
            .collect();
        Routing {
            host_index,
            switch_index,
            attach,
            tor_switch,
            n_tors,
            ranges,
            ports,
            seeds,
            hash,
            switch_node,
        }
    }

    /// Every shortest-path next hop, in each switch's port order.
    fn build_port_order(
        adj: &Adjacency,
        is_host: &[bool],
        tors: &[u32],
        switch_node: &[u32],
        tables: &mut TableBuilder,
    ) {
        let n = adj.len();
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        let mut list = Vec::new();
        for (ti, &t) in tors.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[t as usize] = 0;
            queue.clear();
            queue.push_back(t);
            while let Some(u) = queue.pop_front() {
                // Hosts are not transit nodes.
                if is_host[u as usize] {
                    continue;
                }
                for &(_, v) in &adj[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for (si, &s) in switch_node.iter().enumerate() {
                // The ToR itself reaches its hosts through `HostAttach`.
                if s == t || dist[s as usize] == u32::MAX {
                    continue;
                }
                list.clear();
                for &(port, v) in &adj[s as usize] {
                    if !is_host[v as usize]
                        && dist[v as usize] != u32::MAX
                        && dist[v as usize] + 1 == dist[s as usize]
                    {
                        list.push(port);
                    }
                }
                tables.install(si, ti, &list);
            }
        }
    }

    /// Next hops in ns-3 `third.cc`'s order (see [`Routing::build`]).
    fn build_ns3_order(
        adj: &Adjacency,
        is_host: &[bool],
        tors: &[u32],
        switch_index: &[u32],
        n_switches: usize,
        tables: &mut TableBuilder,
    ) {
        let n = adj.len();
        // ns-3's map key of a node: hosts by increasing id, then switches by decreasing id.
        let key = |v: u32| {
            if is_host[v as usize] {
                (false, v as i64)
            } else {
                (true, -(v as i64))
            }
        };
        // Each node's neighbours in ns-3's map order, with the port its map keeps.
        let neighbours: Vec<Vec<(u32, u32)>> = (0..n)
            .map(|u| {
                let mut by_peer: std::collections::BTreeMap<(bool, i64), (u32, u32)> =
                    Default::default();
                for &(port, v) in &adj[u] {
                    by_peer.insert(key(v), (port, v)); // the last parallel link wins
                }
                by_peer.into_values().collect()
            })
            .collect();
        let mut hops: Vec<Vec<u32>> = vec![Vec::new(); n_switches];
        let mut dist = vec![u32::MAX; n];
        let mut queue = Vec::new();
        for (ti, &t) in tors.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            hops.iter_mut().for_each(|v| v.clear());
            dist[t as usize] = 0;
            queue.clear();
            queue.push(t);
            let mut i = 0;
            while i < queue.len() {
                let u = queue[i];
                i += 1;
                for &(_, v) in &neighbours[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        if !is_host[v as usize] {
                            queue.push(v);
                        }
                    }
                    if dist[u as usize] + 1 == dist[v as usize] && !is_host[v as usize] {
                        // v forwards towards t through u: its port to u.
                        let nv = &neighbours[v as usize];
                        let at = nv
                            .binary_search_by_key(&key(u), |x| key(x.1))
                            .expect("links are symmetric");
                        hops[switch_index[v as usize] as usize].push(nv[at].0);
                    }
                }
            }
            for (si, list) in hops.iter().enumerate() {
                tables.install(si, ti, list);
            }
        }
    }

    pub fn host_index(&self, node: u32) -> u32 {
        self.host_index[node as usize]
    }

    /// Equal-cost egress ports at switch `node` towards host `dst`.
    #[inline]
    pub fn next_hops(&self, node: u32, dst: u32) -> &[u32] {
        let si = self.switch_index[node as usize];
        let a = &self.attach[self.host_index[dst as usize] as usize];
        if a.tor == u32::MAX {
            return &[];
        }
        if self.tor_switch[a.tor as usize] == si {
            return std::slice::from_ref(&a.port);
        }
        let r = self.ranges[si as usize * self.n_tors + a.tor as usize];
        &self.ports[r.start as usize..(r.start + r.len) as usize]
    }

    /// Port-list entries the tables hold (switches × ToRs) and distinct
    /// ports stored behind them: what routing costs in memory.
    pub fn table_size(&self) -> (usize, usize) {
        (self.ranges.len(), self.ports.len())
    }

    pub fn hash(&self) -> EcmpHash {
        self.hash
    }

    /// The egress port switch `node` uses for a packet from host `src` to
    /// host `dst` with these UDP ports (rdmalab's hash reads only the source
    /// port; RoCEv2's destination port is fixed).
    #[inline]
    pub fn select(&self, node: u32, src: u32, dst: u32, l4: L4Ports) -> Option<u32> {
        let hops = self.next_hops(node, dst);
        match hops.len() {
            0 => None,
            1 => Some(hops[0]),
            n => {
                let si = self.switch_index[node as usize] as usize;
                let h = match self.hash {
                    EcmpHash::Rdmalab => ecmp_hash(self.seeds[si], src, dst, l4.sport),
                    EcmpHash::Ns3Hpcc => {
                        let key = [
                            ns3_ip(src),
                            ns3_ip(dst),
                            l4.sport as u32 | (l4.dport as u32) << 16,
                        ];
                        murmur3_x86_32(&key, self.switch_node[si]) as u64
                    }
                };
                Some(hops[(h % n as u64) as usize])
            }
        }
    }
}

/// Switches of one direction of a flow whose choice is remembered: a 3-tier
/// fat tree's longest path crosses 5; a longer path's further switches are
/// looked up at every packet, as before.
const CACHED_HOPS: usize = 6;

/// The egress ports one direction of a QP (its data, or its ACKs, NACKs and
/// CNPs going back) took at each switch, for one UDP source port.
///
/// ECMP hashes only fields that stay fixed for a QP's direction and source
/// port, so a switch's choice is the same for every packet: resolving it once
/// per flow and switch takes the table lookup and the hash off the per-hop
/// path. A new source port (a sender moving the QP onto another path, or a
/// probe of one) starts the list afresh.
#[derive(Clone, Copy, Debug)]
pub struct PathCache {
    sport: u16,
    len: u8,
    /// (switch node, egress port), in the order the switches were crossed.
    hops: [(u32, u32); CACHED_HOPS],
}

impl Default for PathCache {
    fn default() -> Self {
        PathCache {
            sport: 0,
            len: 0,
            hops: [(u32::MAX, u32::MAX); CACHED_HOPS],
        }
    }
}

impl PathCache {
    /// The port switch `node` chose for this source port, if remembered.
    /// `at` is where along the path the frame should be (the switches it
    /// has crossed before this one): checked first, it spares the search
    /// and its mispredicted exit on nearly every frame.
    #[inline]
    pub fn lookup(&self, sport: u16, node: u32, at: u8) -> Option<u32> {
        if sport != self.sport {
            return None;
        }
        if let Some(h) = self.hops[..self.len as usize].get(at as usize) {
            if h.0 == node {
                return Some(h.1);
            }
        }
        self.hops[..self.len as usize]
            .iter()
            .find(|h| h.0 == node)
            .map(|h| h.1)
    }

    /// Remember that switch `node` sends this source port out of `port`.
    #[inline]
    pub fn remember(&mut self, sport: u16, node: u32, port: u32) {
        if sport != self.sport {
            self.sport = sport;
            self.len = 0;
        }
        if (self.len as usize) < CACHED_HOPS {
            self.hops[self.len as usize] = (node, port);
            self.len += 1;
        }
    }
}

/// A QP's remembered paths: its data direction and the way back.
#[derive(Clone, Copy, Debug)]
pub struct FlowRoutes {
    /// Packets from the data sender to the receiver (data, READ requests).
    pub forward: PathCache,
    /// Packets from the receiver back to the sender (ACK, NACK, CNP).
    pub reverse: PathCache,
    /// The QP's data sender and receiver (copies of the QP's own): a switch
    /// tells the direction from them without reading the much larger QP.
    pub src_node: u32,
    pub dst_node: u32,
}

impl Default for FlowRoutes {
    /// Between no nodes: every packet is routed afresh.
    fn default() -> Self {
        FlowRoutes::between(u32::MAX, u32::MAX)
    }
}

impl FlowRoutes {
    /// Nothing remembered yet for a QP from `src_node` to `dst_node`.
    pub fn between(src_node: u32, dst_node: u32) -> Self {
        FlowRoutes {
            forward: PathCache::default(),
            reverse: PathCache::default(),
            src_node,
            dst_node,
        }
    }

    /// Forget the remembered paths (the tables changed), keeping the ends.
    pub fn forget_paths(&mut self) {
        *self = FlowRoutes::between(self.src_node, self.dst_node);
    }
}

/// The IPv4 address the ns-3 HPCC simulator gives node `id` (`node_id_to_ip`):
/// its hash input, and the IPs of its FCT file.
pub fn ns3_ip(id: u32) -> u32 {
    0x0b00_0001 + ((id / 256) << 16) + ((id % 256) << 8)
}

/// MurmurHash3 (x86, 32-bit) of whole little-endian words, as ns-3 HPCC's
/// `EcmpHash` computes it over its 12-byte key.
pub fn murmur3_x86_32(words: &[u32], seed: u32) -> u32 {
    let mut h = seed;
    for &w in words {
        let mut k = w.wrapping_mul(0xcc9e_2d51);
        k = k.rotate_left(15).wrapping_mul(0x1b87_3593);
        h ^= k;
        h = h.rotate_left(13);
        h = h.wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h ^= (words.len() * 4) as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Hash of (src IP, dst IP, UDP sport, UDP dport 4791, protocol 17) under a
/// per-switch seed. IPs are derived from node ids, so the node ids stand in.
#[inline]
pub fn ecmp_hash(seed: u64, src: u32, dst: u32, sport: u16) -> u64 {
    let proto_dport = (17u64 << 16) | crate::packet::wire::ROCEV2_UDP_PORT as u64;
    let mut x = seed ^ ((src as u64) << 32 | dst as u64);
    x = mix(x);
    x ^= (sport as u64) << 24 | proto_dport;
    mix(x)
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// h0 - s2 = {s3, s4} = s5 - h1: two equal paths.
    fn diamond() -> (Adjacency, Vec<bool>) {
        let mut adj: Adjacency = vec![Vec::new(); 6];
        let mut port = 0;
        let mut link = |a: u32, b: u32, adj: &mut Adjacency| {
            adj[a as usize].push((port, b));
            adj[b as usize].push((port + 1, a));
            port += 2;
        };
        link(0, 2, &mut adj);
        link(2, 3, &mut adj);
        link(2, 4, &mut adj);
        link(3, 5, &mut adj);
        link(4, 5, &mut adj);
        link(5, 1, &mut adj);
        (adj, vec![true, true, false, false, false, false])
    }

    #[test]
    fn both_equal_cost_ports_are_installed() {
        let (adj, is_host) = diamond();
        let r = Routing::build(&adj, &is_host, 1, EcmpHash::Rdmalab);
        assert_eq!(r.next_hops(2, 1).len(), 2);
        assert_eq!(r.next_hops(5, 1).len(), 1);
        assert_eq!(r.next_hops(3, 0).len(), 1);
    }

    #[test]
    fn source_port_steers_the_path() {
        let (adj, is_host) = diamond();
        let r = Routing::build(&adj, &is_host, 1, EcmpHash::Rdmalab);
        let chosen: std::collections::BTreeSet<u32> = (0..64u16)
            .map(|sp| r.select(2, 0, 1, L4Ports::rocev2(10000 + sp)).unwrap())
            .collect();
        assert_eq!(chosen.len(), 2, "64 source ports should use both paths");
    }

    #[test]
    fn a_path_cache_starts_afresh_when_the_source_port_changes() {
        let mut c = PathCache::default();
        assert_eq!(c.lookup(0, 2, 0), None);
        c.remember(10000, 2, 7);
        c.remember(10000, 5, 9);
        assert_eq!(c.lookup(10000, 2, 0), Some(7));
        assert_eq!(c.lookup(10000, 5, 1), Some(9));
        assert_eq!(c.lookup(10001, 2, 0), None);
        c.remember(10001, 2, 4);
        assert_eq!(c.lookup(10000, 5, 1), None);
        assert_eq!(c.lookup(10001, 2, 0), Some(4));
        // A path longer than the cache: the further switches are not kept.
        for node in 10..20 {
            c.remember(10001, node, node + 100);
        }
        assert_eq!(c.lookup(10001, 14, 4), Some(114));
        assert_eq!(c.lookup(10001, 15, 5), None);
    }

    #[test]
    fn a_path_cache_answers_the_same_wherever_the_frame_says_it_is() {
        // The position only says where to look first: a frame that is not
        // where its count says (an echoed count, a rerouted path) is still
        // found, and a switch off the path is still not.
        let mut c = PathCache::default();
        let path = [(3, 30), (8, 80), (4, 40), (9, 90)];
        for (node, port) in path {
            c.remember(7, node, port);
        }
        for at in 0..=u8::MAX {
            for (node, port) in path {
                assert_eq!(c.lookup(7, node, at), Some(port), "at {at}");
            }
            assert_eq!(c.lookup(7, 5, at), None, "at {at}");
            assert_eq!(c.lookup(6, 3, at), None, "at {at}");
        }
    }

    #[test]
    fn murmur3_matches_its_published_test_vectors() {
        // Bytes 21 43 65 87 (the word 0x87654321), from the reference test suite.
        assert_eq!(murmur3_x86_32(&[0x8765_4321], 0), 0xf55b_516b);
        assert_eq!(murmur3_x86_32(&[0x8765_4321], 0x5082_edee), 0x2362_f9de);
        assert_eq!(
            murmur3_x86_32(&[u32::from_le_bytes(*b"test")], 0),
            0xba6b_d213
        );
    }

    #[test]
    fn ns3_order_lists_switch_next_hops_by_decreasing_node_id() {
        let (adj, is_host) = diamond();
        let r = Routing::build(&adj, &is_host, 1, EcmpHash::Ns3Hpcc);
        // s2 reaches h1 through s3 (port 2) and s4 (port 4): s4 first.
        assert_eq!(r.next_hops(2, 1), &[4, 2]);
        assert_eq!(r.next_hops(5, 0), &[9, 7]);
        let rd = Routing::build(&adj, &is_host, 1, EcmpHash::Rdmalab);
        assert_eq!(rd.next_hops(2, 1), &[2, 4], "rdmalab keeps port order");
    }

    #[test]
    fn ns3_hash_picks_by_ip_ports_and_node_id_seed() {
        let (adj, is_host) = diamond();
        let r = Routing::build(&adj, &is_host, 1, EcmpHash::Ns3Hpcc);
        for sport in 10000..10016u16 {
            let l4 = L4Ports { sport, dport: 100 };
            let key = [0x0b00_0001, 0x0b00_0101, sport as u32 | 100 << 16];
            let want = [4, 2][(murmur3_x86_32(&key, 2) % 2) as usize];
            assert_eq!(r.select(2, 0, 1, l4), Some(want));
        }
    }
}
