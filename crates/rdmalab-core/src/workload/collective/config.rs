//! The keys of a `workload.collective[]` entry, declared once, and their
//! reading: what `validate` checks and the reference docs show.

use super::part;
use super::{Algorithm, CollectiveSpec, Op, Schedule};
use crate::config::{Allowed, Key, Obj, Reader, Rule, REQUIRED};
use crate::nic::qp::Verb;
use crate::time::Duration;
use crate::workload::QpOwner;
use serde_json::Value;

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
    allowed: Allowed::Custom("≥ ranks × channels bytes (a tree: 2 × channels; a pipeline: channels)"),
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
    allowed: Allowed::Int {
        min: 1,
        max: 100_000,
    },
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

pub const ALGORITHM: Key = Key {
    name: "algorithm",
    unit: "string",
    default: "ring",
    allowed: Allowed::OneOf(&["ring", "tree"]),
    rule: Rule::OnlyWith {
        key: "op",
        values: &["all-reduce"],
    },
    meaning: "How the all-reduce moves its data, as NCCL_ALGO names it. `ring`: 2(n−1) steps round the ring. `tree`: NCCL's double binary tree (NCCL 2.4; Sanders et al., Parallel Computing 2009): two binary trees, the second mirrored (n even) or shifted by one (n odd), each reducing half of `bytes` up to its root and broadcasting it back down, in `chunk` rounds that pipeline; O(log n) steps of latency, each rank sending about 2 × `bytes`. rdmalab choice for the default: `ring`, NCCL's choice for large buffers.",
};

pub const AFTER: Key = Key {
    name: "after",
    unit: "string",
    default: "none",
    allowed: Allowed::Custom("the `name` of another entry, with as many iterations"),
    rule: Rule::None,
    meaning: "Interleave with that entry, iteration by iteration, on the hosts both have: this entry's iteration i starts on a host when the other's iteration i is done there, and the other's iteration i+1 when this one's iteration i is (a data-parallel all-reduce after each pipeline flush, and the next pipeline iteration after it). With groups, every group of either entry. Circles are refused.",
};

/// The keys of a `workload.collective[]` entry, in the order the docs list them.
pub const KEYS: &[Key] = &[
    NAME,
    OP,
    ALGORITHM,
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
    AFTER,
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
    let name =
        r.string(o, NAME.name, Some(""))
            .map(|n| if n.is_empty() { path.to_string() } else { n });
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
    let after = match o.get(AFTER.name) {
        None => Some(None),
        Some(Value::String(a)) => Some(Some(a.clone())),
        Some(v) => {
            r.err(
                o.key(AFTER.name),
                crate::config::show(v),
                "must be the `name` of another entry",
            );
            None
        }
    };
    let algorithm = r.key_choice(o, &ALGORITHM).map(|a| match a.as_str() {
        "tree" => Algorithm::Tree,
        _ => Algorithm::Ring,
    });
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
    let blocks = match (op, algorithm) {
        (Op::Pipeline, _) => 1,
        // A tree moves two halves, each whole down its tree.
        (Op::AllReduce, Some(Algorithm::Tree)) => 2,
        _ => n as u64,
    };
    let share = bytes / blocks / channels as u64;
    if share == 0 {
        r.err(
            o.key(BYTES.name),
            format!("`{bytes}B`"),
            format!("must be at least {} bytes ({}channels), so every step of every channel moves a byte", blocks * channels as u64, match blocks { 1 => "", 2 => "2 halves × ", _ => "ranks × " }),
        );
        return None;
    }
    if let Some(c) = chunk {
        let largest = part(part(bytes, blocks, 0), channels as u64, 0);
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
        algorithm: algorithm?,
        after: after?,
    })
}

/// Key `k`: one duration for every rank, or a list of one per rank (a
/// refusal names the item, `compute[3]`). `default` when not given.
fn durations(
    r: &mut Reader,
    o: &Obj,
    k: &Key,
    n: usize,
    default: Option<Duration>,
) -> Option<Vec<Duration>> {
    let Some(Value::Array(list)) = o.get(k.name) else {
        return r.duration(o, k.name, default).map(|d| vec![d; n]);
    };
    if list.len() != n {
        r.err(
            o.key(k.name),
            format!("a list of {}", list.len()),
            format!(
                "has one duration per rank: {n} for the {n} hosts, or give one duration for all"
            ),
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
