//! Collectives as flows with dependencies (`workload.collective[]`): ring
//! all-reduce, reduce-scatter and all-gather, all-to-all ([`ring`]), the
//! double binary tree all-reduce ([`tree`]), and pipeline-parallel stages
//! ([`pipeline`]), over a list of hosts (the
//! ranks), repeated for a number of iterations with compute phases.
//! `config` declares and reads the keys.
//!
//! A ring step is one message from a rank to the next; step k of a rank is
//! posted when step k−1 of the rank before it has arrived (its last byte at
//! the receiver), `step_overhead` later. NCCL's structure is kept where it
//! moves time: `channels` independent rings, each over its share of the
//! buffer on its own QP; `chunk`, the bytes a step moves at a time, so a
//! large buffer flows through the ring in rounds that pipeline; connections
//! kept from step to step and iteration to iteration (one QP per rank,
//! channel and peer), so congestion control state carries over as in a
//! real job. An iteration's compute phase on a rank starts when the
//! previous iteration's last data has arrived at that rank, so a slow rank
//! holds up everyone after it in the ring (a straggler).
//!
//! Sizes are nccl-tests' (NVIDIA nccl-tests, doc/PERFORMANCE.md): `bytes`
//! is the buffer of an all-reduce, the output of an all-gather, the input
//! of a reduce-scatter and each rank's send buffer of an all-to-all; the
//! bus bandwidth is the algorithm bandwidth (`bytes` / time) times
//! 2(n−1)/n (all-reduce) or (n−1)/n (the others).

mod config;
mod pipeline;
mod ring;
mod tree;

pub use config::KEYS;
pub(crate) use config::{read, AFTER, HOSTS};
pub use pipeline::Schedule;

use super::graph::FlowGraph;
use super::{FlowSpec, QpOwner};
use crate::nic::qp::Verb;
use crate::rng::RngStream;
use crate::time::Duration;

/// What a collective computes, which fixes its steps and its bus bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    Pipeline,
}

impl Op {
    pub const NAMES: &'static [&'static str] = &[
        "all-reduce",
        "reduce-scatter",
        "all-gather",
        "all-to-all",
        "pipeline",
    ];
    /// The ops whose data moves in steps of blocks (what `chunk` cuts).
    const BLOCKS: &'static [&'static str] =
        &["all-reduce", "reduce-scatter", "all-gather", "all-to-all"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    fn parse(s: &str) -> Option<Op> {
        [
            Op::AllReduce,
            Op::ReduceScatter,
            Op::AllGather,
            Op::AllToAll,
            Op::Pipeline,
        ]
        .into_iter()
        .find(|o| o.name() == s)
    }

    /// Ring steps over `n` ranks (an all-to-all is one step to every peer).
    pub fn steps(self, n: usize) -> usize {
        match self {
            Op::AllReduce => 2 * (n - 1),
            Op::ReduceScatter | Op::AllGather => n - 1,
            Op::AllToAll | Op::Pipeline => 1,
        }
    }

    /// nccl-tests' bus bandwidth over algorithm bandwidth for `n` ranks
    /// (`None`: a pipeline, whose time is mostly compute).
    pub fn bus_factor(self, n: usize) -> Option<f64> {
        let n = n as f64;
        match self {
            Op::AllReduce => Some(2.0 * (n - 1.0) / n),
            Op::Pipeline => None,
            _ => Some((n - 1.0) / n),
        }
    }
}

/// One `workload.collective[]` entry, read.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveSpec {
    /// Its name in the `collectives` tables (`workload.collective[i]` if none).
    pub name: String,
    pub op: Op,
    /// The ranks' hosts (node ids), in ring order.
    pub ranks: Vec<u32>,
    /// Each rank's tenant and address, as its flows own them.
    pub owners: Vec<QpOwner>,
    pub bytes: u64,
    pub channels: u32,
    pub chunk: Option<u64>,
    pub iterations: u32,
    /// Each rank's compute phase before each iteration.
    pub compute: Vec<Duration>,
    pub jitter: f64,
    pub step_overhead: Duration,
    pub start: Duration,
    pub verb: Verb,
    /// A pipeline's microbatches per iteration, its schedule, and each
    /// stage's backward pass per microbatch.
    pub microbatches: u32,
    pub schedule: Schedule,
    pub backward: Vec<Duration>,
    /// How an all-reduce moves its data (NCCL_ALGO).
    pub algorithm: Algorithm,
    /// The entry it interleaves with, iteration by iteration (`after`).
    pub after: Option<String>,
}

/// An all-reduce's algorithm, as NCCL_ALGO names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Ring,
    /// The double binary tree ([`tree`]).
    Tree,
}

/// Rounds a channel's share of `most` bytes (its largest block) takes.
fn rounds(most: u64, chunk: Option<u64>) -> u64 {
    chunk.map_or(1, |c| most.div_ceil(c.max(1)))
}

/// `total` split into `parts` near-equal parts: part `i`.
fn part(total: u64, parts: u64, i: u64) -> u64 {
    total / parts + u64::from(i < total % parts)
}

/// Collective `c` (the `index`-th) as flows appended to `flows`, with its
/// nodes, connections and instances in `g`.
pub fn expand(
    c: &CollectiveSpec,
    index: u32,
    seed: u64,
    flows: &mut Vec<FlowSpec>,
    g: &mut FlowGraph,
) {
    match (c.op, c.algorithm) {
        (Op::Pipeline, _) => pipeline::expand(c, index, seed, flows, g),
        (Op::AllReduce, Algorithm::Tree) => tree::expand(c, index, seed, flows, g),
        _ => ring::expand(c, index, seed, flows, g),
    }
}

/// `d` scaled by a uniform draw from [1 − jitter, 1 + jitter].
fn jittered(d: Duration, jitter: f64, rng: &mut RngStream) -> Duration {
    if jitter == 0.0 || d.ps() == 0 {
        return d;
    }
    let x = 1.0 + jitter * (2.0 * rng.next_f64() - 1.0);
    Duration((d.ps() as f64 * x).round() as u64)
}

#[cfg(test)]
pub(super) mod test_spec {
    use super::*;

    pub(in crate::workload) fn spec(op: Op, n: usize, bytes: u64) -> CollectiveSpec {
        CollectiveSpec {
            name: "c".into(),
            op,
            ranks: (0..n as u32).collect(),
            owners: vec![QpOwner::default(); n],
            bytes,
            channels: 2,
            chunk: Some(1000),
            iterations: 2,
            compute: vec![Duration(7); n],
            jitter: 0.0,
            step_overhead: Duration(3),
            start: Duration::ZERO,
            verb: Verb::Write,
            microbatches: 4,
            schedule: Schedule::OneFOneB,
            backward: vec![Duration(14); n],
            algorithm: Algorithm::Ring,
            after: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_bandwidth_factors_are_nccl_tests() {
        assert_eq!(Op::AllReduce.bus_factor(8), Some(1.75));
        assert_eq!(Op::AllGather.bus_factor(8), Some(0.875));
        assert_eq!(Op::AllToAll.bus_factor(4), Some(0.75));
        assert_eq!(Op::Pipeline.bus_factor(4), None);
    }
}
