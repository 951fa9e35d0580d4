//! Collectives as flows with dependencies (`workload.collective[]`): ring
//! all-reduce, reduce-scatter and all-gather, and all-to-all, over a list of
//! hosts (the ranks), repeated for a number of iterations with a compute
//! phase per rank before each.
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

use super::graph::{FlowGraph, Instance};
use super::{FlowSpec, QpOwner};
use crate::config::{Allowed, Key, Obj, Reader, Rule, REQUIRED};
use crate::nic::qp::Verb;
use crate::rng::RngStream;
use crate::time::Duration;
use serde_json::Value;

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
}

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

pub const OP: Key = Key {
    name: "op",
    unit: "string",
    default: REQUIRED,
    allowed: Allowed::OneOf(Op::NAMES),
    rule: Rule::None,
    meaning: "What the ranks compute. `all-reduce`: a ring of 2(n−1) steps (reduce-scatter then all-gather), each moving `bytes`/n; `reduce-scatter`, `all-gather`: n−1 such steps; `all-to-all`: every rank sends `bytes`/n to every other at once (MoE dispatch); `pipeline`: the hosts are pipeline stages, and each microbatch's forward pass sends `bytes` of activations to the next stage and its backward pass as many bytes of gradients to the one before (point-to-point send/recv). Ring order is the order of `hosts`.",
};
pub const HOSTS: Key = Key {
    name: "hosts",
    unit: "list of hosts",
    default: REQUIRED,
    allowed: Allowed::Custom("at least two hosts, each once; a list of such groups, all the same size; or `all`"),
    rule: Rule::None,
    meaning: "The ranks, in ring order: rank i sends to rank i+1 (the last to the first). A list of groups runs the same collective in each group side by side, named `NAME/0`, `NAME/1`, ... (tensor- or data-parallel groups: `[[h0, h1], [h2, h3]]`). `all`: every host of the topology, in node order.",
};
pub const BYTES: Key = Key {
    name: "bytes",
    unit: "size",
    default: REQUIRED,
    allowed: Allowed::Custom("≥ ranks × channels bytes"),
    rule: Rule::None,
    meaning: "nccl-tests' size: the buffer of an all-reduce, the output of an all-gather, the input of a reduce-scatter, each rank's send buffer of an all-to-all. Split into n blocks (the first `bytes` mod n one byte larger), each block over the channels the same way.",
};
pub const CHANNELS: Key = Key {
    name: "channels",
    unit: "integer",
    default: "1",
    allowed: Allowed::Int { min: 1, max: 64 },
    rule: Rule::None,
    meaning: "Independent rings (NCCL channels), each over its share of every block, on a QP of its own per peer. rdmalab choice for the default: one; NCCL picks 2–32 by topology.",
};
pub const CHUNK: Key = Key {
    name: "chunk",
    unit: "size",
    default: "none",
    allowed: Allowed::Custom("≥ 1B, large enough to leave every round a byte"),
    rule: Rule::OnlyWith {
        key: "op",
        values: Op::BLOCKS,
    },
    meaning: "Most bytes one step moves at a time: a channel's share of a block goes through the ring in rounds of at most this, which pipeline (round j's step k waits for round j's step k−1 from the rank before, not for other rounds). NCCL's Simple protocol moves 512 KiB slots (its NCCL_BUFFSIZE of 4 MiB over NCCL_STEPS = 8 slots). `none`: one round, each step a whole block (store and forward per step).",
};
pub const ITERATIONS: Key = Key {
    name: "iterations",
    unit: "integer",
    default: "1",
    allowed: Allowed::Int { min: 1, max: 100_000 },
    rule: Rule::None,
    meaning: "Times the job computes and then runs the collective. Iteration i+1 starts on a rank when the data of iteration i has all arrived there.",
};
pub const COMPUTE: Key = Key {
    name: "compute",
    unit: "duration, or list of durations",
    default: "0s",
    allowed: Allowed::Custom("≥ 0; a list has one per rank"),
    rule: Rule::None,
    meaning: "Each rank's compute phase (forward and backward pass) before each iteration's collective: one duration for every rank, or one per rank in `hosts` order (a straggler is a rank with a longer one). For a `pipeline`: each stage's forward pass of one microbatch.",
};
pub const JITTER: Key = Key {
    name: "jitter",
    unit: "number",
    default: "0",
    allowed: Allowed::Number {
        min: 0.0,
        max: 1.0,
        min_open: false,
    },
    rule: Rule::None,
    meaning: "Each compute phase is drawn uniformly from compute × [1 − jitter, 1 + jitter], from the run's seed (stream `collective/<index>`). rdmalab choice.",
};
pub const STEP_OVERHEAD: Key = Key {
    name: "step_overhead",
    unit: "duration",
    default: "0s",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::OnlyWith {
        key: "op",
        values: Op::BLOCKS,
    },
    meaning: "Time from a step's data arriving to the next step being posted (the reduction kernel and the proxy thread's turn). rdmalab choice for the default: none, an ideal library. For scale: NCCL's tuning model (src/graph/tuning.cc, `hwLat`) charges 6.6 µs per ring step over the network for its Simple protocol (9.6 µs in older releases), the network's own latency included, which rdmalab simulates.",
};
pub const START: Key = Key {
    name: "start",
    unit: "duration",
    default: "0s",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "When the first iteration's compute phases start.",
};
pub const VERB: Key = Key {
    name: "verb",
    unit: "string",
    default: "write",
    allowed: Allowed::OneOf(&["write", "send"]),
    rule: Rule::None,
    meaning: "The verb of every step (NCCL's IB transport WRITEs).",
};
pub const NAME: Key = Key {
    name: "name",
    unit: "string",
    default: "\"\"",
    allowed: Allowed::Custom("a string without commas, double quotes or line breaks"),
    rule: Rule::None,
    meaning: "Its name in the `collectives` tables. Empty means the entry's key path (e.g. `workload.collective[0]`).",
};
pub const TENANT: Key = Key {
    name: "tenant",
    unit: "string",
    default: "none",
    allowed: Allowed::Custom("a name in `workload.tenants`"),
    rule: Rule::None,
    meaning: "The tenant of every rank's QPs (`none`: each host's own, from `workload.tenants`).",
};

pub const MICROBATCHES: Key = Key {
    name: "microbatches",
    unit: "integer",
    default: "1",
    allowed: Allowed::Int { min: 1, max: 100_000 },
    rule: Rule::OnlyWith {
        key: "op",
        values: &["pipeline"],
    },
    meaning: "Microbatches per iteration: each goes forward through every stage and back.",
};
pub const SCHEDULE: Key = Key {
    name: "schedule",
    unit: "string",
    default: "1f1b",
    allowed: Allowed::OneOf(&["1f1b", "gpipe"]),
    rule: Rule::OnlyWith {
        key: "op",
        values: &["pipeline"],
    },
    meaning: "The order each stage runs its passes in; a stage runs one at a time. `gpipe`: every forward, then every backward (Huang et al., NeurIPS'19); `1f1b`: p − s − 1 forwards on stage s, then one forward and one backward in turn, then the remaining backwards (PipeDream-Flush, Megatron-LM's default: Narayanan et al., SC'21). Both flush: iteration i+1 starts on a stage after its last pass of iteration i.",
};
pub const BACKWARD: Key = Key {
    name: "backward",
    unit: "duration, or list of durations",
    default: "none",
    allowed: Allowed::Custom("≥ 0; a list has one per stage"),
    rule: Rule::OnlyWith {
        key: "op",
        values: &["pipeline"],
    },
    meaning: "Each stage's backward pass of one microbatch. `none`: twice its forward (`compute`), the usual estimate (a backward pass computes the gradients of both the activations and the weights: Narayanan et al., SC'21 §3.3).",
};

/// The keys of a `workload.collective[]` entry, in the order the docs list them.
pub const KEYS: &[Key] = &[
    NAME,
    OP,
    HOSTS,
    BYTES,
    CHANNELS,
    CHUNK,
    ITERATIONS,
    COMPUTE,
    JITTER,
    STEP_OVERHEAD,
    START,
    VERB,
    TENANT,
    MICROBATCHES,
    SCHEDULE,
    BACKWARD,
];

/// Read entry `o` (at `path`), whose hosts and owners the scenario has
/// resolved against the topology and the tenants.
pub(crate) fn read(
    r: &mut Reader,
    o: &Obj,
    path: &str,
    ranks: Vec<u32>,
    owners: Vec<QpOwner>,
) -> Option<CollectiveSpec> {
    let before = r.errs.len();
    let name = r.string(o, NAME.name, Some("")).map(|n| {
        if n.is_empty() {
            path.to_string()
        } else {
            n
        }
    });
    if let Some(n) = &name {
        r.table_name(o.key(NAME.name), n);
    }
    let op = r
        .choice(o, OP.name, Op::NAMES, None)
        .and_then(|s| Op::parse(&s));
    let bytes = r.bytes(o, BYTES.name, None);
    let channels = r.key_int(o, &CHANNELS).map(|c| c as u32);
    let chunk = match o.get(CHUNK.name) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) if s == "none" => Some(None),
        Some(_) => r.bytes(o, CHUNK.name, None).map(Some),
    };
    let iterations = r.key_int(o, &ITERATIONS).map(|i| i as u32);
    let jitter = r.key_number(o, &JITTER);
    let step_overhead = r.key_duration(o, &STEP_OVERHEAD);
    let start = r.key_duration(o, &START);
    let verb = r.key_choice(o, &VERB).map(|v| match v.as_str() {
        "send" => Verb::Send,
        _ => Verb::Write,
    });
    let n = ranks.len();
    r.check_rules(o, KEYS);
    let compute = durations(r, o, &COMPUTE, n, Some(Duration::ZERO));
    let microbatches = r.key_int(o, &MICROBATCHES).map(|m| m as u32);
    let schedule = r.key_choice(o, &SCHEDULE).map(|v| match v.as_str() {
        "gpipe" => Schedule::GPipe,
        _ => Schedule::OneFOneB,
    });
    // A backward pass twice the forward unless given.
    let backward = match (o.get(BACKWARD.name), &compute) {
        (None, Some(c)) => Some(c.iter().map(|d| Duration(2 * d.ps())).collect()),
        (None, None) => None,
        (Some(_), _) => durations(r, o, &BACKWARD, n, None),
    };
    if r.errs.len() != before {
        return None;
    }
    let (op, bytes, channels, chunk) = (op?, bytes?, channels?, chunk?);
    // Every block's share on every channel is at least one byte, and every
    // round's piece too (a pipeline sends `bytes` whole, over the channels).
    let blocks = if op == Op::Pipeline { 1 } else { n as u64 };
    let share = bytes / blocks / channels as u64;
    if share == 0 {
        r.err(
            o.key(BYTES.name),
            format!("`{bytes}B`"),
            format!("must be at least {} bytes ({}channels), so every step of every channel moves a byte", blocks * channels as u64, if blocks > 1 { "ranks × " } else { "" }),
        );
        return None;
    }
    if let Some(c) = chunk {
        let largest = part(part(bytes, n as u64, 0), channels as u64, 0);
        let need = largest.div_ceil(share);
        if c < need {
            r.err(
                o.key(CHUNK.name),
                format!("`{c}B`"),
                format!("leaves a round without data: a channel's share of a block is {share}–{largest}B; allowed: at least {need}B, or `none`"),
            );
            return None;
        }
    }
    Some(CollectiveSpec {
        name: name?,
        op,
        ranks,
        owners,
        bytes,
        channels,
        chunk,
        iterations: iterations?,
        compute: compute?,
        jitter: jitter?,
        step_overhead: step_overhead?,
        start: start?,
        verb: verb?,
        microbatches: microbatches?,
        schedule: schedule?,
        backward: backward?,
    })
}

/// Key `k`: one duration for every rank, or a list of one per rank (a
/// refusal names the item, `compute[3]`). `default` when not given.
fn durations(r: &mut Reader, o: &Obj, k: &Key, n: usize, default: Option<Duration>) -> Option<Vec<Duration>> {
    let Some(Value::Array(list)) = o.get(k.name) else {
        return r.duration(o, k.name, default).map(|d| vec![d; n]);
    };
    if list.len() != n {
        r.err(
            o.key(k.name),
            format!("a list of {}", list.len()),
            format!("has one duration per rank: {n} for the {n} hosts, or give one duration for all"),
        );
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for (i, v) in list.iter().enumerate() {
        // Read as a key of its own, so a refusal names `compute[i]`.
        let item_key = format!("{}[{i}]", k.name);
        let one = serde_json::Map::from_iter([(item_key.clone(), v.clone())]);
        let item = Obj {
            path: o.path.clone(),
            map: &one,
        };
        out.push(r.duration(&item, &item_key, None));
    }
    out.into_iter().collect()
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
    if c.op == Op::Pipeline {
        return expand_pipeline(c, index, seed, flows, g);
    }
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
                        let f = add(flows, g, r, to, piece(block_sent(c.op, n, r, k)), k, slot(r, to, ch), pred);
                        sent.push(f);
                    }
                    last = sent;
                }
            }
        }
        prev_in = this_in;
    }
}

/// A pipeline: each stage's passes are gates run one after another in the
/// schedule's order; a forward pass on stage s > 0 also waits for its
/// microbatch's activations from s − 1, a backward pass on s < p − 1 for
/// its gradients from s + 1; each pass then sends its output on, on a QP
/// per direction and channel kept for the whole job.
fn expand_pipeline(
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
    let slot = |s: usize, back: bool, ch: u64| slot0 + ((back as u64 * p as u64 + s as u64) * ch_n + ch) as u32;
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
        });
        // Every pass's gate first (its inputs are other stages' flows, made below).
        let mut pass = vec![vec![[0u32; 2]; m]; p];
        for s in 0..p {
            for &(back, j) in &orders[s] {
                let input = if back { s + 1 < p } else { s > 0 };
                let waits = u32::from(last[s].is_some()) + if input { c.channels } else { 0 };
                let length = if back { c.backward[s] } else { c.compute[s] };
                let gate = g.owned_gate(waits, jittered(length, c.jitter, &mut rng), inst, s as u32);
                match last[s] {
                    Some(prev) => g.edge(prev, gate),
                    None if waits == 0 => g.roots.push((gate, c.start)),
                    None => {}
                }
                last[s] = Some(gate);
                pass[s][j][back as usize] = gate;
            }
        }
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

/// The block rank `r` sends at ring step `k`: the reduce-scatter walk
/// ((r − k) mod n), then the all-gather walk of the reduced blocks.
fn block_sent(op: Op, n: usize, r: usize, k: usize) -> usize {
    match op {
        Op::AllReduce if k >= n - 1 => (r + 1 + n - (k - (n - 1)) % n) % n,
        Op::AllGather => (r + n - k % n) % n,
        _ => (r + n - k % n) % n,
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
mod tests {
    use super::super::graph::NONE;
    use super::*;

    fn spec(op: Op, n: usize, bytes: u64) -> CollectiveSpec {
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
        }
    }

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
        assert_eq!(Schedule::GPipe.order(0, 2, 2), vec![(false, 0), (false, 1), (true, 0), (true, 1)]);
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
        assert_eq!(flows.iter().map(|f| f.bytes).sum::<u64>(), 2 * (p as u64 - 1) * m as u64 * 1000);
        assert!(flows.iter().all(|f| f.src.abs_diff(f.dst) == 1));
        assert_eq!(g.instances[0].gates as usize, 2 * m * p);
        assert_eq!(g.roots.len(), 1, "only stage 0's first forward waits for nothing");
        assert_eq!(g.cycle(), None);
    }

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
        assert!(flows.iter().all(|f| f.bytes > 0 && (f.dst + n as u32 - f.src) % n as u32 == 1));
        assert_eq!(g.cycle(), None);
        // Each rank sends every block once in each phase.
        for r in 0..n {
            let mut rs: Vec<usize> = (0..n - 1).map(|k| block_sent(Op::AllReduce, n, r, k)).collect();
            let mut ag: Vec<usize> = (n - 1..2 * n - 2).map(|k| block_sent(Op::AllReduce, n, r, k)).collect();
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
        expand(&spec(Op::ReduceScatter, n, 80_000), 0, 1, &mut flows, &mut g);
        // Every flow waits: for its rank's compute, and after step 0 for data.
        assert!((0..flows.len() as u32).all(|f| !g.starts_free(f)));
        let waits: Vec<u32> = g.nodes.iter().filter(|x| x.flow != NONE).map(|x| x.waits).collect();
        let rounds = 80_000 / 4 / 2 / 1000;
        assert_eq!(waits.iter().filter(|&&w| w == 1).count(), 2 * n * 2 * rounds);
        assert!(waits.iter().all(|&w| w == 1 || w == 2));
        let gates = g.nodes.iter().filter(|x| x.flow == NONE).count();
        assert_eq!(gates, 2 * n, "one compute gate per rank and iteration");
        assert_eq!(g.roots.len(), n);
        assert!(g.nodes.iter().filter(|x| x.flow == NONE).all(|x| x.gap == Duration(7)));
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

    #[test]
    fn bus_bandwidth_factors_are_nccl_tests() {
        assert_eq!(Op::AllReduce.bus_factor(8), Some(1.75));
        assert_eq!(Op::AllGather.bus_factor(8), Some(0.875));
        assert_eq!(Op::AllToAll.bus_factor(4), Some(0.75));
        assert_eq!(Op::Pipeline.bus_factor(4), None);
    }
}
