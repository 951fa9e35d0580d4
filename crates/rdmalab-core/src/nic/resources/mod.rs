//! The RNIC's own resources: on-chip context caches fetched over PCIe, and
//! the processing units that wait for them (SRNIC §2.2, §3).
//!
//! A commodity RNIC keeps QP contexts (QPC), memory translations (MTT) and
//! prefetched WQEs in a small on-chip SRAM and the rest in host memory. When
//! the QPs in use outgrow it, a packet's context misses, the NIC fetches it
//! over PCIe, and the QP waits a PCIe round trip; the fetch also holds one of
//! a finite pool of processing units, so many misses at once slow every QP.
//! This is the collapse of SRNIC Fig. 2 (CX-6: 97 → 52 Gb/s from 256 to 16K
//! QPs). The model is off unless a scenario sets `nic.resources`, so the
//! ns-3-compatible core stays exact.
//!
//! What is modelled on which side:
//! * Sender: every data packet looks up its QP's context and the MTT entry
//!   of its page; a message's first packet looks up its WQE (prefetched into
//!   the WQE cache when posted, unless evicted since). Misses are fetched one
//!   after another (the WQE holds the address the MTT translates) on one
//!   processing unit, and the QP sends nothing until they are in. Only a
//!   message's first page can stall: later pages are translated ahead of the
//!   data mover's reads (fetched and counted, not waited for).
//! * Receiver and ACK handling: look up the QPC (and the MTT for placement)
//!   in the same caches, and their misses are fetched over PCIe and counted,
//!   but do not delay the packet: the receive pipeline is not a queue here.

pub mod cache;

mod config;

use crate::time::{Duration, Rate, Time};
use cache::{Lookup, SetAssocCache};

/// What a PCIe read was for, so the counters say where the bus went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciePurpose {
    Payload,
    Wqe,
    Qpc,
    Mtt,
    /// Selective repeat's bitmaps and loss metadata onloaded to host memory (SRNIC §4.4.2).
    Bitmap,
}

impl PciePurpose {
    pub const ALL: [PciePurpose; 5] = [
        PciePurpose::Payload,
        PciePurpose::Wqe,
        PciePurpose::Qpc,
        PciePurpose::Mtt,
        PciePurpose::Bitmap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PciePurpose::Payload => "payload",
            PciePurpose::Wqe => "wqe",
            PciePurpose::Qpc => "qpc",
            PciePurpose::Mtt => "mtt",
            PciePurpose::Bitmap => "bitmap",
        }
    }
}

/// One on-chip cache: its size in bytes, the bytes of one entry, and its associativity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    pub bytes: u64,
    pub entry_bytes: u32,
    pub ways: u32,
}

impl CacheSpec {
    pub fn entries(&self) -> u64 {
        self.bytes / self.entry_bytes.max(1) as u64
    }
}

/// `nic.resources`: the caches, the processing units and the PCIe framing.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceConfig {
    /// The preset this came from (`cx6`, `srnic`, or `custom`).
    pub preset: String,
    /// QP contexts, one entry per QP.
    pub qpc: CacheSpec,
    /// Memory translations, one entry per page of a QP's buffer.
    pub mtt: CacheSpec,
    /// Page size the MTT translates (4 KiB: the host's base page).
    pub page_bytes: u64,
    /// Prefetched send WQEs; `None`: no WQE cache (SRNIC's fetch-and-drop).
    pub wqe: Option<CacheSpec>,
    /// Context fetches the NIC can have outstanding at once.
    pub units: u32,
    /// Least time between two WQEs of one QP in the TX pipeline (parsing,
    /// translation setup), overlapped with sending: it caps one QP's message
    /// rate without holding the port. 0: no such limit.
    pub wqe_interval: Duration,
    /// Bytes of framing, header and CRC each PCIe TLP adds (Neugebauer et al.,
    /// SIGCOMM'18: 24 B for a 64-bit-address read completion with ECRC off).
    pub tlp_overhead: u32,
    /// Largest payload of one TLP (the max payload / read completion size; 256 B typical).
    pub tlp_max_payload: u32,
    /// On-chip receiving buffer (SRNIC Table 1: 0.6 MB), for the memory budget only.
    pub rx_buffer_bytes: u64,
    /// Registered memory the MTT must translate in all, for the memory budget
    /// (SRNIC Table 1: 4 GB of regions at 4 KB pages, 8 B entries = 8 MB).
    pub registered_bytes: u64,
}

/// Bytes of one QP context in SRNIC's design (Table 1: 210 B, 2.0 MB for 10K QPs).
pub const SRNIC_QPC_BYTES: u32 = 210;
/// Bytes of a ConnectX-5 QP context as SRNIC cites it (§2.2: ~375 B).
pub const CX_QPC_BYTES: u32 = 375;
/// Bytes of one MTT entry (SRNIC §3.2.1).
pub const MTT_ENTRY_BYTES: u32 = 8;

impl ResourceConfig {
    /// A ConnectX-6-like NIC. Sources and fits:
    /// * QPC entry 375 B (SRNIC §2.2, CX-5). The QPC cache holds 256
    ///   contexts: *fitted*, so the collapse starts past 256 QPs as in SRNIC
    ///   Fig. 2; the 2 MB SRAM it sits in is shared with other ICM contexts
    ///   whose split the vendor does not publish.
    /// * MTT cache 2048 entries (16 KiB) and WQE cache 1024 WQEs (64 KiB):
    ///   assumed sizes (not published), which set where the decline steepens.
    /// * 160 ns between one QP's WQEs: *fitted* to CX-6's 6.3 Mrps on one
    ///   QP (SRNIC §6.2).
    /// * 30 processing units: *fitted*, so that 512 B SENDs over 16K QPs
    ///   (every packet missing QPC, WQE and MTT) keep 54 % of the 256-QP
    ///   throughput, as CX-6's 52 of 97 Gb/s in SRNIC Fig. 2.
    /// * 8-way caches: a common SRAM cache organisation (assumed).
    pub fn cx6() -> Self {
        ResourceConfig {
            preset: "cx6".into(),
            qpc: CacheSpec {
                bytes: 256 * CX_QPC_BYTES as u64,
                entry_bytes: CX_QPC_BYTES,
                ways: 8,
            },
            mtt: CacheSpec {
                bytes: 2048 * MTT_ENTRY_BYTES as u64,
                entry_bytes: MTT_ENTRY_BYTES,
                ways: 8,
            },
            page_bytes: 4096,
            wqe: Some(CacheSpec {
                bytes: 1024 * crate::nic::WQE_BYTES,
                entry_bytes: crate::nic::WQE_BYTES as u32,
                ways: 8,
            }),
            units: 30,
            wqe_interval: Duration::from_ns(160),
            tlp_overhead: 24,
            tlp_max_payload: 256,
            rx_buffer_bytes: 629_146,
            registered_bytes: 4 << 30,
        }
    }

    /// SRNIC's prototype (Table 1/2): a 10K-entry QPC table on chip (210 B
    /// each, conflict-free: fully associative), a 1.2 MB MTT cache, no WQE
    /// cache (the cache-free scheduler fetches and drops), 0.6 MB receive buffer;
    /// no WQE interval (its turns bound the message rate).
    pub fn srnic() -> Self {
        ResourceConfig {
            preset: "srnic".into(),
            qpc: CacheSpec {
                bytes: 10240 * SRNIC_QPC_BYTES as u64,
                entry_bytes: SRNIC_QPC_BYTES,
                ways: 10240,
            },
            mtt: CacheSpec {
                bytes: 1_258_291,
                entry_bytes: MTT_ENTRY_BYTES,
                ways: 8,
            },
            page_bytes: 4096,
            wqe: None,
            units: 16,
            wqe_interval: Duration::ZERO,
            tlp_overhead: 24,
            tlp_max_payload: 256,
            rx_buffer_bytes: 629_146,
            registered_bytes: 4 << 30,
        }
    }

    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "cx6" => Some(Self::cx6()),
            "srnic" => Some(Self::srnic()),
            _ => None,
        }
    }

    pub const PRESETS: &'static [&'static str] = &["cx6", "srnic"];

    /// The page of a QP's buffer that a message's `index`-th packet lies on
    /// (perftest's buffers: every message starts at offset 0 of its QP's region).
    #[inline]
    pub fn page_of(&self, index: u32, mtu: u32) -> u64 {
        index as u64 * mtu as u64 / self.page_bytes
    }

    /// Bytes a PCIe read of `bytes` occupies the link for: the data plus one
    /// TLP's overhead per `tlp_max_payload` bytes (at least one TLP).
    pub fn on_bus(&self, bytes: u64) -> u64 {
        let tlps = bytes.div_ceil(self.tlp_max_payload as u64).max(1);
        bytes + tlps * self.tlp_overhead as u64
    }
}

/// Hits and misses of one cache, and PCIe reads by purpose, per NIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceCounters {
    pub qpc: (u64, u64),
    pub mtt: (u64, u64),
    pub wqe: (u64, u64),
    /// Bytes on the bus (TLP overhead included) and read requests, by [`PciePurpose`].
    pub pcie_bytes: [u64; 5],
    pub pcie_requests: [u64; 5],
    /// Time QPs spent waiting for context fetches (sum over stalls).
    pub stall_ps: u64,
    /// Context fetches that had to wait for a free processing unit.
    pub unit_waits: u64,
}

/// The state of one NIC's resources.
pub struct NicResources {
    pub qpc: SetAssocCache,
    pub mtt: SetAssocCache,
    pub wqe: Option<SetAssocCache>,
    /// When each processing unit is free again.
    units_free_at: Vec<Time>,
    pub pcie_bytes: [u64; 5],
    pub pcie_requests: [u64; 5],
    pub stall_ps: u64,
    pub unit_waits: u64,
}

fn cache_of(spec: &CacheSpec) -> SetAssocCache {
    SetAssocCache::new(spec.entries().min(u32::MAX as u64) as u32, spec.ways)
}

/// Key of a QP's MTT entry for `page`: perftest-style, each QP reuses one
/// buffer, so a message's byte `o` lies on page `o / page_bytes` of its QP's region.
#[inline]
pub fn mtt_key(qp: u32, page: u64) -> u64 {
    ((qp as u64) << 32) | (page & 0xffff_ffff)
}

/// Key of a QP's WQE by its message index (posted since the QP was created).
#[inline]
pub fn wqe_key(qp: u32, msg: u64) -> u64 {
    ((qp as u64) << 32) | (msg & 0xffff_ffff)
}

impl NicResources {
    pub fn new(cfg: &ResourceConfig) -> Self {
        NicResources {
            qpc: cache_of(&cfg.qpc),
            mtt: cache_of(&cfg.mtt),
            wqe: cfg.wqe.as_ref().map(cache_of),
            units_free_at: vec![Time::ZERO; cfg.units.max(1) as usize],
            pcie_bytes: [0; 5],
            pcie_requests: [0; 5],
            stall_ps: 0,
            unit_waits: 0,
        }
    }

    pub fn counters(&self) -> ResourceCounters {
        let hm = |c: &SetAssocCache| (c.hits, c.misses);
        ResourceCounters {
            qpc: hm(&self.qpc),
            mtt: hm(&self.mtt),
            wqe: self.wqe.as_ref().map_or((0, 0), hm),
            pcie_bytes: self.pcie_bytes,
            pcie_requests: self.pcie_requests,
            stall_ps: self.stall_ps,
            unit_waits: self.unit_waits,
        }
    }

    /// Count a PCIe read of `bus_bytes` (overhead included) for `purpose`.
    #[inline]
    pub fn count(&mut self, purpose: PciePurpose, bus_bytes: u64) {
        self.pcie_bytes[purpose as usize] += bus_bytes;
        self.pcie_requests[purpose as usize] += 1;
    }

    /// Take the processing unit that frees first; returns when the fetch may start.
    pub fn take_unit(&mut self, now: Time) -> (usize, Time) {
        let (i, &free) = self
            .units_free_at
            .iter()
            .enumerate()
            .min_by_key(|(i, t)| (**t, *i))
            .expect("at least one unit");
        if free > now {
            self.unit_waits += 1;
        }
        (i, free.max(now))
    }

    pub fn release_unit_at(&mut self, unit: usize, at: Time) {
        self.units_free_at[unit] = at;
    }

    /// Prefetch a posted WQE into the WQE cache (a doorbell's read; counted
    /// as neither hit nor miss).
    pub fn prefetch_wqe(&mut self, key: u64) {
        if let Some(c) = &mut self.wqe {
            let (h, m) = (c.hits, c.misses);
            c.access(key);
            (c.hits, c.misses) = (h, m);
        }
    }
}

/// A read over the host PCIe link issued at `at` (which may be later than
/// `now`, when it waits for a processing unit or an earlier fetch): its
/// bytes take their share of the link's bandwidth from `now` on, so a
/// future request never holds the link idle, and its data is back one
/// latency after both it is issued and its bytes are through.
/// Returns (link free again at, data back at).
#[inline]
pub fn pcie_read(
    link_free_at: Time,
    now: Time,
    at: Time,
    bandwidth: Rate,
    latency: Duration,
    bus_bytes: u64,
) -> (Time, Time) {
    let through = link_free_at.max(now) + bandwidth.serialization(bus_bytes);
    (
        through,
        through.max(at + bandwidth.serialization(bus_bytes)) + latency,
    )
}

/// Whether a lookup needs a fetch.
#[inline]
pub fn missed(l: Lookup) -> bool {
    matches!(l, Lookup::Miss { .. })
}

/// One row of the on-chip memory budget (SRNIC Table 1), in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRow {
    pub structure: &'static str,
    pub category: &'static str,
    /// What a conceptual lossy RNIC needs for `qps` QPs.
    pub typical_bytes: u64,
    /// What this configuration keeps on chip.
    pub on_chip_bytes: u64,
    pub how: &'static str,
}

/// The on-chip memory budget of `qps` QPs, computed as SRNIC Table 1 does.
/// `bdp_packets` sizes selective repeat's per-QP structures (SRNIC/IRN: 500
/// slots for 100 Gb/s × 40 µs), `bdp_bytes` the reordering buffer (0.5 MB).
/// `selective_repeat` says whether the configuration recovers loss that way
/// (its bitmaps onloaded to host memory, its reordering done in place).
pub fn memory_budget(
    cfg: &ResourceConfig,
    qps: u64,
    bdp_packets: u64,
    bdp_bytes: u64,
    selective_repeat: bool,
) -> Vec<BudgetRow> {
    let mtt_full = cfg.registered_bytes / cfg.page_bytes.max(1) * MTT_ENTRY_BYTES as u64;
    let qpc_need = qps * cfg.qpc.entry_bytes as u64;
    // SQ and RQ WQE caches of 8 WQEs per QP each (SRNIC §3.2.1).
    let wqe_need = qps * 8 * crate::nic::WQE_BYTES * 2;
    // Five BDP-sized bitmaps per QP (IRN), the outstanding request table's 24 B entries.
    let bitmap_need = qps * 5 * bdp_packets.div_ceil(8);
    let ort_need = qps * bdp_packets * 24;
    let reorder_need = qps * bdp_bytes;
    let sr = |b: u64| if selective_repeat { b } else { 0 };
    vec![
        BudgetRow {
            structure: "receiving_buffer",
            category: "common",
            typical_bytes: cfg.rx_buffer_bytes,
            on_chip_bytes: cfg.rx_buffer_bytes,
            how: "shared by all QPs",
        },
        BudgetRow {
            structure: "qpc",
            category: "common",
            typical_bytes: qpc_need,
            on_chip_bytes: qpc_need.min(cfg.qpc.bytes),
            how: if qpc_need <= cfg.qpc.bytes {
                "all on chip"
            } else {
                "cache: the rest in host memory"
            },
        },
        BudgetRow {
            structure: "mtt",
            category: "common",
            typical_bytes: mtt_full,
            on_chip_bytes: mtt_full.min(cfg.mtt.bytes),
            how: "cache: the table in host memory",
        },
        BudgetRow {
            structure: "wqe_cache",
            category: "common",
            typical_bytes: wqe_need,
            on_chip_bytes: cfg.wqe.map_or(0, |w| w.bytes.min(wqe_need)),
            how: if cfg.wqe.is_some() {
                "cache"
            } else {
                "cache-free QP scheduler (fetch and drop)"
            },
        },
        BudgetRow {
            structure: "bitmap",
            category: "selective_repeat",
            typical_bytes: sr(bitmap_need),
            on_chip_bytes: 0,
            how: if selective_repeat {
                "onloaded to host memory"
            } else {
                "go-back-N: none"
            },
        },
        BudgetRow {
            structure: "reordering_buffer",
            category: "selective_repeat",
            typical_bytes: sr(reorder_need),
            on_chip_bytes: 0,
            how: if selective_repeat {
                "header extensions: placed in the user buffer"
            } else {
                "go-back-N: none"
            },
        },
        BudgetRow {
            structure: "outstanding_request_table",
            category: "selective_repeat",
            typical_bytes: sr(ort_need),
            on_chip_bytes: 0,
            how: if selective_repeat {
                "header extensions: echoed in responses"
            } else {
                "go-back-N: none"
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlp_overhead_per_max_payload() {
        let c = ResourceConfig::cx6();
        assert_eq!(c.on_bus(64), 64 + 24);
        assert_eq!(c.on_bus(256), 256 + 24);
        assert_eq!(c.on_bus(257), 257 + 48);
        assert_eq!(c.on_bus(0), 24, "a read of nothing still sends one TLP");
    }

    #[test]
    fn table1_for_10k_qps() {
        // SRNIC Table 1: QPC 2.0 MB, MTT 8 MB (cache 1.2 MB), WQE cache 9.8 MB,
        // bitmaps 3.0 MB, reordering buffer 4.9 GB, ORT 114.4 MB.
        let rows = memory_budget(&ResourceConfig::srnic(), 10_000, 500, 512 * 1024, true);
        let get = |s: &str| rows.iter().find(|r| r.structure == s).unwrap().clone();
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        assert!((mib(get("qpc").typical_bytes) - 2.0).abs() < 0.05);
        assert_eq!(get("mtt").typical_bytes, 8 << 20);
        assert_eq!(get("mtt").on_chip_bytes, 1_258_291);
        assert!((mib(get("wqe_cache").typical_bytes) - 9.8).abs() < 0.05);
        assert_eq!(get("wqe_cache").on_chip_bytes, 0);
        assert!((mib(get("bitmap").typical_bytes) - 3.0).abs() < 0.05);
        assert!(
            (get("reordering_buffer").typical_bytes as f64 / (1u64 << 30) as f64 - 4.88).abs()
                < 0.01
        );
        assert!((mib(get("outstanding_request_table").typical_bytes) - 114.4).abs() < 0.1);
        assert_eq!(
            get("qpc").on_chip_bytes,
            get("qpc").typical_bytes,
            "SRNIC keeps 10K contexts on chip"
        );
    }

    #[test]
    fn units_are_taken_earliest_free_first() {
        let mut r = NicResources::new(&ResourceConfig {
            units: 2,
            ..ResourceConfig::cx6()
        });
        let t = Time::ZERO + Duration::from_ns(10);
        let (u0, s0) = r.take_unit(t);
        r.release_unit_at(u0, t + Duration::from_ns(1000));
        let (u1, s1) = r.take_unit(t);
        assert_ne!(u0, u1);
        assert_eq!((s0, s1), (t, t));
        r.release_unit_at(u1, t + Duration::from_ns(500));
        let (u2, s2) = r.take_unit(t);
        assert_eq!(
            (u2, s2),
            (u1, t + Duration::from_ns(500)),
            "a third fetch waits for the unit that frees first"
        );
        assert_eq!(r.unit_waits, 1);
    }
}
