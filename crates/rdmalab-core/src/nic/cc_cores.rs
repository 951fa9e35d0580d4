//! The memory behind SwCC's on-path CC cores (`control.on_path.memory`):
//! where a core finds the QP context of the packet it processes, and what
//! that costs it. SwCC (ATC'25) §4.2.2 and Fig. 11 compare two designs:
//!
//! * `naive`: a data cache of `line`-byte lines (128 KB, 4-way, 64 B in the
//!   paper). The core loads the context with load/store instructions
//!   (`access_cycles` when every line hits); each line that misses stalls
//!   the core for one off-chip access (`dram`).
//! * `qp-aware`: a QP context table of whole contexts (`entry` bytes per
//!   slot, 128 B; 128 KB, 4-way: 1K QPs). Hardware writes the context into
//!   the core's CSRs before it runs, so reading it costs `access_cycles`
//!   (one cycle per CSR read). A context that is not in the table is
//!   fetched from on-NIC DRAM; with the QPN `hint`, the fetch starts when
//!   the packet enters the pipeline, `rx_lead` (RX parser, connection table
//!   and packet filter: ~60 ns) or `tx_lead` (the WQ handler slicing the
//!   message) before the core needs it, so the core waits only for what the
//!   lead did not cover.
//!
//! The model charges this access time to the core on every event, on top of
//! the algorithm's own cycles (`cycles_per_packet`).
//!
//! It also names the on-path data paths that the SwCC paper compares
//! (`PRESETS`): SwCC's cores, a ConnectX-5's processing units, Soft-RoCE's
//! host threads.

use super::resources::cache::{Lookup, SetAssocCache};
use crate::time::Duration;

/// How the CC cores reach QP contexts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    Naive,
    QpAware { hint: bool },
}

/// `control.on_path.memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextMemoryConfig {
    pub kind: MemoryKind,
    /// On-chip bytes: the naive cache or the QP context table.
    pub table_bytes: u64,
    pub ways: u32,
    /// Bytes of one QP's context (a table slot).
    pub entry_bytes: u64,
    /// Cache line of the naive cache.
    pub line_bytes: u64,
    /// One off-chip (on-NIC DRAM) access.
    pub dram: Duration,
    /// Core time to read (and write back) a context that is on chip.
    pub access: Duration,
    /// How long before the core needs it a hinted prefetch starts.
    pub tx_lead: Duration,
    pub rx_lead: Duration,
}

/// One NIC's CC-core memory, and what its accesses cost.
pub struct ContextMemory {
    cfg: ContextMemoryConfig,
    cache: SetAssocCache,
    /// Events that read a context, and those that found any of it off chip.
    pub accesses: u64,
    pub misses: u64,
    /// Core time spent reaching contexts (access and stalls).
    pub access_ps: u64,
}

impl ContextMemory {
    pub fn new(cfg: ContextMemoryConfig) -> Self {
        let unit = match cfg.kind {
            MemoryKind::Naive => cfg.line_bytes,
            MemoryKind::QpAware { .. } => cfg.entry_bytes,
        }
        .max(1);
        // The scenario refuses a table of more slots than this holds.
        let entries = u32::try_from((cfg.table_bytes / unit).max(1))
            .expect("control.on_path.memory.table: at most u32::MAX lines or contexts");
        ContextMemory {
            cfg,
            cache: SetAssocCache::new_indexed(entries, cfg.ways),
            accesses: 0,
            misses: 0,
            access_ps: 0,
        }
    }

    /// The core reaches QP `qpn`'s context for an event on the TX or RX
    /// side, after the event `queued` for the core (time a hinted prefetch
    /// also had): the core time it costs.
    pub fn access(&mut self, qpn: u32, rx: bool, queued: Duration) -> Duration {
        let c = self.cfg;
        let mut missed = 0u64;
        let cost = match c.kind {
            MemoryKind::Naive => {
                // The context's lines, one after another; contexts lie one
                // after another in memory, so the key is the line's address / line size.
                // The scenario keeps `lines` within u32, so the keys fit u64.
                let lines = c.entry_bytes.div_ceil(c.line_bytes.max(1));
                missed = self.read_lines(qpn as u64 * lines, lines);
                c.access + Duration(c.dram.ps() * missed)
            }
            MemoryKind::QpAware { hint } => {
                if let Lookup::Miss { .. } = self.cache.access(qpn as u64) {
                    missed = 1;
                }
                let lead = if !hint {
                    Duration::ZERO
                } else if rx {
                    c.rx_lead + queued
                } else {
                    c.tx_lead + queued
                };
                let stall = if missed == 1 {
                    Duration(c.dram.ps().saturating_sub(lead.ps()))
                } else {
                    Duration::ZERO
                };
                c.access + stall
            }
        };
        self.accesses += 1;
        self.misses += (missed > 0) as u64;
        self.access_ps += cost.ps();
        cost
    }

    /// Read the `n` consecutive lines from key `first` through the naive
    /// cache; returns how many missed. The cache is indexed (set = key mod
    /// sets), so any `cap` = sets × ways consecutive lines fill each set with
    /// exactly `ways` of them. Hence, when `n` ≥ 2 × `cap`: after the first
    /// `cap` lines every set holds only lines of this context, so every later
    /// line misses (each is new), and the cache ends holding the last `cap`
    /// lines in the order read. Reading the first `cap`, counting the middle
    /// `n` − 2 × `cap` as misses and reading the last `cap` gives the same
    /// misses and the same cache (contents and recency) as reading all `n`,
    /// at a cost bounded by the cache's size instead of the context's.
    fn read_lines(&mut self, first: u64, n: u64) -> u64 {
        let mut missed = 0;
        let mut read = |cache: &mut SetAssocCache, from: u64, to: u64| {
            for key in from..to {
                if let Lookup::Miss { .. } = cache.access(key) {
                    missed += 1;
                }
            }
        };
        let cap = self.cache.capacity();
        if n < 2 * cap {
            read(&mut self.cache, first, first + n);
        } else {
            read(&mut self.cache, first, first + cap);
            let middle = n - 2 * cap;
            self.cache.count_misses(middle);
            read(&mut self.cache, first + n - cap, first + n);
            missed += middle;
        }
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kind: MemoryKind) -> ContextMemoryConfig {
        ContextMemoryConfig {
            kind,
            table_bytes: 128 * 1024,
            ways: 4,
            entry_bytes: 128,
            line_bytes: 64,
            dram: Duration::from_ns(100),
            access: Duration::from_ns(32),
            tx_lead: Duration::from_ns(40),
            rx_lead: Duration::from_ns(60),
        }
    }

    #[test]
    fn a_resident_context_costs_its_access_only() {
        for kind in [MemoryKind::Naive, MemoryKind::QpAware { hint: false }] {
            let mut m = ContextMemory::new(cfg(kind));
            m.access(7, true, Duration::ZERO);
            assert_eq!(
                m.access(7, true, Duration::ZERO),
                Duration::from_ns(32),
                "{kind:?}"
            );
            assert_eq!((m.accesses, m.misses), (2, 1));
        }
    }

    #[test]
    fn misses_stall_per_line_naive_and_per_context_minus_the_lead_with_a_hint() {
        // Naive: two 64 B lines of a 128 B context, both off chip.
        assert_eq!(
            ContextMemory::new(cfg(MemoryKind::Naive)).access(1, true, Duration::ZERO),
            Duration::from_ns(232)
        );
        // QP-aware without the hint: one DRAM access for the whole context.
        assert_eq!(
            ContextMemory::new(cfg(MemoryKind::QpAware { hint: false })).access(
                1,
                true,
                Duration::ZERO
            ),
            Duration::from_ns(132)
        );
        // With the hint the RX pipeline's 60 ns hide part of it; the TX side's 40 ns less.
        let mut m = ContextMemory::new(cfg(MemoryKind::QpAware { hint: true }));
        assert_eq!(m.access(1, true, Duration::ZERO), Duration::from_ns(72));
        assert_eq!(m.access(2, false, Duration::ZERO), Duration::from_ns(92));
        // An event that queued 50 ns for its core had its context prefetched by then.
        assert_eq!(
            m.access(3, true, Duration::from_ns(50)),
            Duration::from_ns(32)
        );
    }

    #[test]
    fn the_table_holds_a_thousand_contexts() {
        let mut m = ContextMemory::new(cfg(MemoryKind::QpAware { hint: false }));
        for round in 0..2 {
            for q in 0..900 {
                m.access(q, true, Duration::ZERO);
            }
            if round == 0 {
                assert_eq!(m.misses, 900);
            }
        }
        // 1024 slots indexed by QPN: 900 consecutive QPNs all fit.
        assert_eq!(m.misses, 900);
        // 1025 do not: QPN 1024 shares a set with 0, 256, 512 and 768, and
        // cycling through five in a 4-way set misses every time.
        let mut m = ContextMemory::new(cfg(MemoryKind::QpAware { hint: false }));
        for _ in 0..3 {
            for q in 0..1025 {
                m.access(q, true, Duration::ZERO);
            }
        }
        assert_eq!(m.misses, 1025 + 2 * 5);
    }

    /// A naive context of many lines, read through the shortcut, costs what
    /// reading every line one by one costs, and leaves the cache in the same
    /// state: every access compared with the plain loop, over contexts
    /// shorter than, as long as and far longer than twice the cache.
    #[test]
    fn reading_a_long_context_skips_no_result_of_the_line_by_line_loop() {
        let mut next = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move |below: u64| {
            next = next
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (next >> 33) % below
        };
        // A 64-line cache (16 sets of 4 ways, 4-byte lines) and a 256-byte
        // one of 3 ways (21 sets, 63 lines: sets × ways below the table).
        for (table, ways) in [(256, 4), (256, 3)] {
            for entry in [4, 100, 252, 256, 500, 508, 512, 516, 2000, 40_000] {
                let c = ContextMemoryConfig {
                    kind: MemoryKind::Naive,
                    table_bytes: table,
                    ways,
                    entry_bytes: entry,
                    line_bytes: 4,
                    ..cfg(MemoryKind::Naive)
                };
                let lines = entry.div_ceil(4);
                let mut m = ContextMemory::new(c);
                let mut plain = SetAssocCache::new_indexed((table / 4) as u32, ways);
                for _ in 0..200 {
                    let qpn = random(6) as u32;
                    let mut missed = 0;
                    for l in 0..lines {
                        if let Lookup::Miss { .. } = plain.access(qpn as u64 * lines + l) {
                            missed += 1;
                        }
                    }
                    let want = c.access + Duration(c.dram.ps() * missed);
                    assert_eq!(m.access(qpn, true, Duration::ZERO), want, "entry {entry}");
                    assert_eq!(m.cache.recency(), plain.recency(), "entry {entry}");
                    assert_eq!((m.cache.hits, m.cache.misses), (plain.hits, plain.misses));
                }
            }
        }
    }
}

/// `control.on_path: {preset: NAME, ...}`: the cores of a named data path,
/// as scenario keys that the user's own keys override. Each constant's
/// source is in docs/swcc.md ("Presets").
pub const PRESETS: &[&str] = &["swcc", "connectx-5", "soft-roce"];

pub fn preset(name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match name {
        // SwCC-1 (ATC'25): one TX and one RX RISC-V core at the FPGA's
        // 250 MHz, DCQCN's 60 cycles per event (fitted to Fig. 10's range,
        // 44 to 85), contexts in the QP-aware table with the QPN hint.
        "swcc" => json!({
            "tx_cores": 1, "rx_cores": 1, "clock": "250MHz",
            "cycles_per_packet": 60, "rx_cycles_per_packet": 60,
            "memory": "qp-aware",
        }),
        // RoCE-n (SwCC Fig. 10): a ConnectX-5's 8 processing units, each
        // doing both the TX and the RX work of its QPs; 177 ns per event is
        // fitted so one core pair of SwCC carries 1.3x one PU (paper: 1.1-1.5x).
        "connectx-5" => json!({
            "tx_cores": 8, "shared": true,
            "per_packet": "177ns", "rx_per_packet": "177ns",
        }),
        // Soft-RoCE-24 (SwCC Fig. 10, Table 1): 24 host threads, each
        // sending, receiving and acknowledging its QPs' packets. 7.8 us per
        // packet and 4.19 ns per payload byte are fitted to two of the
        // paper's numbers: a 23 us control loop with 1 KB packets, and
        // 24 Gb/s from 24 threads with 4 KB packets.
        "soft-roce" => json!({
            "tx_cores": 24, "shared": true, "rx_data": true,
            "per_packet": "7.8us", "rx_per_packet": "7.8us", "per_byte": "4.19ns",
        }),
        _ => return None,
    })
}
