//! Shortest-path routing with ECMP.
//!
//! For every (switch, destination host) the table holds all egress ports on a
//! shortest path; hosts never forward. A switch picks among equal-cost ports
//! by hashing the flow's 5-tuple (including the UDP source port) with its own
//! seed, so two switches make independent choices and a sender can steer a
//! QP onto another path by changing its source port.

use crate::rng::stable_hash;

/// Adjacency as seen by routing: for each node, its (port, peer node) pairs.
pub type Adjacency = Vec<Vec<(u32, u32)>>;

pub struct Routing {
    /// node id → host index, or `u32::MAX` for a switch.
    host_index: Vec<u32>,
    /// node id → switch index, or `u32::MAX` for a host.
    switch_index: Vec<u32>,
    n_hosts: usize,
    /// (switch index × n_hosts + host index) → range in `ports`.
    ranges: Vec<(u32, u32)>,
    ports: Vec<u32>,
    seeds: Vec<u64>,
}

impl Routing {
    /// Build tables by one breadth-first search per destination host.
    pub fn build(adj: &Adjacency, is_host: &[bool], master_seed: u64) -> Self {
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
        let n_hosts = hosts.len();
        let mut ranges = vec![(0u32, 0u32); n_switches as usize * n_hosts];
        let mut ports = Vec::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        for (hi, &h) in hosts.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[h as usize] = 0;
            queue.clear();
            queue.push_back(h);
            while let Some(u) = queue.pop_front() {
                // Hosts other than the destination are not transit nodes.
                if u != h && is_host[u as usize] {
                    continue;
                }
                for &(_, v) in &adj[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for s in 0..n {
                if is_host[s] || dist[s] == u32::MAX {
                    continue;
                }
                let start = ports.len() as u32;
                for &(port, v) in &adj[s] {
                    let via_ok = v == h || !is_host[v as usize];
                    if via_ok && dist[v as usize] != u32::MAX && dist[v as usize] + 1 == dist[s] {
                        ports.push(port);
                    }
                }
                let si = switch_index[s] as usize;
                ranges[si * n_hosts + hi] = (start, ports.len() as u32 - start);
            }
        }
        let seeds = (0..n_switches).map(|s| stable_hash(format!("{master_seed}/ecmp/{s}").as_bytes())).collect();
        Routing { host_index, switch_index, n_hosts, ranges, ports, seeds }
    }

    pub fn host_index(&self, node: u32) -> u32 {
        self.host_index[node as usize]
    }

    /// Equal-cost egress ports at switch `node` towards host `dst`.
    pub fn next_hops(&self, node: u32, dst: u32) -> &[u32] {
        let si = self.switch_index[node as usize] as usize;
        let hi = self.host_index[dst as usize] as usize;
        let (s, l) = self.ranges[si * self.n_hosts + hi];
        &self.ports[s as usize..(s + l) as usize]
    }

    /// The egress port switch `node` uses for a packet of the given 5-tuple.
    #[inline]
    pub fn select(&self, node: u32, src: u32, dst: u32, udp_sport: u16) -> Option<u32> {
        let hops = self.next_hops(node, dst);
        match hops.len() {
            0 => None,
            1 => Some(hops[0]),
            n => {
                let seed = self.seeds[self.switch_index[node as usize] as usize];
                let h = ecmp_hash(seed, src, dst, udp_sport);
                Some(hops[(h % n as u64) as usize])
            }
        }
    }
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
        let r = Routing::build(&adj, &is_host, 1);
        assert_eq!(r.next_hops(2, 1).len(), 2);
        assert_eq!(r.next_hops(5, 1).len(), 1);
        assert_eq!(r.next_hops(3, 0).len(), 1);
    }

    #[test]
    fn source_port_steers_the_path() {
        let (adj, is_host) = diamond();
        let r = Routing::build(&adj, &is_host, 1);
        let chosen: std::collections::BTreeSet<u32> =
            (0..64u16).map(|sp| r.select(2, 0, 1, 10000 + sp).unwrap()).collect();
        assert_eq!(chosen.len(), 2, "64 source ports should use both paths");
    }
}
