//! The SCR control framework: where a control loop runs and what it costs.
//!
//! Between the NIC raising an event and its effect on the data path sit:
//!
//! 1. **Event queues** — one pending entry per (QP, event type). While an
//!    entry waits, later events of the same type are folded into it by its
//!    [`Coalesce`] strategy (hardware coalescing while the trigger is in
//!    flight; software coalescing while it waits for a busy thread).
//! 2. **Trigger** — after the placement's trigger latency the entry is handed
//!    to the thread its QP is steered to (QP id modulo the pool size, so one
//!    QP per thread up to the pool size, several beyond it).
//! 3. **Threads** — a fixed pool, run to completion, no preemption; each
//!    entry costs the placement's processing time. A busy thread makes
//!    entries wait (and coalesce).
//! 4. **Install** — the actions take effect after the install latency. The
//!    control-loop delay of each action is measured from the generation of
//!    the oldest signal folded into the entry to that moment.
//!
//! At the `asic` placement none of this is in the way: events are handled
//! immediately, as in a NIC with hard-wired congestion control.

use crate::control::compute::{self, CoreMemory, Purpose};
use crate::control::{Actions, CcEvent};
use crate::packet::{IntHop, MAX_INT_HOPS};
use crate::time::{Duration, Time};
use std::collections::VecDeque;

/// Event types that get their own queue per QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventType {
    Tx = 0,
    Ack = 1,
    Nack = 2,
    Cnp = 3,
    Timer = 4,
    Timeout = 5,
    Rtt = 6,
    Rx = 7,
    Peer = 8,
    Hint = 9,
    Host = 10,
}

pub const EVENT_TYPES: usize = 11;

impl EventType {
    pub fn of(ev: &CcEvent) -> EventType {
        match ev {
            CcEvent::Tx { .. } => EventType::Tx,
            CcEvent::Ack { .. } => EventType::Ack,
            CcEvent::Nack { .. } => EventType::Nack,
            CcEvent::Cnp => EventType::Cnp,
            CcEvent::Timer { .. } => EventType::Timer,
            CcEvent::Timeout => EventType::Timeout,
            CcEvent::Rtt { .. } => EventType::Rtt,
            CcEvent::Rx { .. } => EventType::Rx,
            CcEvent::Peer { .. } => EventType::Peer,
            CcEvent::Hint { .. } => EventType::Hint,
            CcEvent::Host { .. } => EventType::Host,
        }
    }
    pub fn name(self) -> &'static str {
        [
            "TX", "ACK", "NACK", "CNP", "TIMER", "TIMEOUT", "RTT", "RX", "PEER", "HINT", "HOST",
        ][self as usize]
    }
}

/// How a waiting entry absorbs a new event of its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coalesce {
    /// Sum bytes and packets (TX), acknowledged bytes (ACK); keep the first
    /// timestamp and count the events (DOCA PCC's `num_coalesced`). The newest
    /// RTT, ACK position, hop count and INT records are kept; ECE is or-ed.
    Accumulate,
    /// Replace the entry's event with the newest one (keeping the count).
    KeepLatest,
    /// Keep the entry's event, count the newcomer.
    KeepOldest,
}

impl Coalesce {
    pub fn parse(s: &str) -> Option<Coalesce> {
        match s {
            "accumulate" => Some(Coalesce::Accumulate),
            "keep-latest" => Some(Coalesce::KeepLatest),
            "keep-oldest" => Some(Coalesce::KeepOldest),
            _ => None,
        }
    }
}

/// Where a control loop runs and what each step costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub name: String,
    /// From a signal's generation to a thread being handed its entry.
    pub trigger_latency: Duration,
    /// Thread time per processed entry (cycles ÷ clock, plus state access).
    pub processing: Duration,
    /// Extra thread time to load the flow's state (memory or cache miss).
    pub state_access: Duration,
    /// From the end of processing to the new rate or window acting on the data path.
    pub install_latency: Duration,
    /// Processing threads of each NIC (every NIC has its own control cores);
    /// 0 means one per QP end (no contention, as in an ASIC).
    pub threads: u32,
    /// Entries keep absorbing events after the trigger while they wait for a
    /// thread (software coalescing); without it each trigger is final and
    /// later events start a new entry.
    pub software_coalescing: bool,
    /// Strategy per event type.
    pub coalesce: [Coalesce; EVENT_TYPES],
    /// Receive-side (RX) events exist here. Commodity NICs and the BlueField-3
    /// DPA do not expose them; SwCC's RX core and a host stack see every packet.
    pub rx_events: bool,
    /// A user-defined coalescing rule for TX events: hold an entry until this
    /// many bytes have accumulated, then trigger it (0: trigger at once).
    pub tx_batch_bytes: u64,
    /// Processing as cycles and memory accesses instead of the flat
    /// `processing` (`control.compute`).
    pub compute: Option<compute::ComputeModel>,
    /// Threads per purpose instead of one pool of `threads` (`control.pools`).
    pub pools: Option<compute::Pools>,
    /// The send budget of threads for probes and peer messages (`control.raw_eth`).
    pub raw_eth: Option<compute::RawEth>,
}

impl Placement {
    fn preset(
        name: &str,
        trigger_ns: u64,
        processing_ns: u64,
        state_ns: u64,
        install_ns: u64,
        threads: u32,
    ) -> Placement {
        Placement {
            name: name.into(),
            trigger_latency: Duration::from_ns(trigger_ns),
            processing: Duration::from_ns(processing_ns),
            state_access: Duration::from_ns(state_ns),
            install_latency: Duration::from_ns(install_ns),
            threads,
            software_coalescing: true,
            coalesce: [Coalesce::Accumulate; EVENT_TYPES],
            rx_events: false,
            tx_batch_bytes: 0,
            compute: None,
            pools: None,
            raw_eth: None,
        }
    }

    /// Hard-wired in the NIC ASIC: effectively immediate, one engine per QP.
    pub fn asic() -> Placement {
        Self::preset("asic", 0, 0, 0, 0, 0)
    }

    /// NVIDIA BlueField-3 DPA as measured by SCR (NSDI'25, §7 and Fig. 22):
    /// event trigger up to 7 µs, a Swift update about 4 µs, installing a rate
    /// up to 6 µs; 16 cores × 16 hardware threads.
    pub fn dpa() -> Placement {
        Self::preset("dpa", 7_000, 4_000, 0, 6_000, 256)
    }

    /// SwCC (ATC'25): per-packet CC on one TX and one RX RISC-V core at
    /// 250 MHz, with QP-aware prefetch. Table 1 gives 3.3 µs of control-loop
    /// RTT against 3.1 µs for the ASIC, so the cores add about 0.2 µs; split
    /// here as 50 ns trigger, 100 ns processing (25 cycles at 250 MHz) and
    /// 50 ns install (rdmalab's split of the measured total).
    pub fn swcc() -> Placement {
        let mut p = Self::preset("swcc", 50, 100, 0, 50, 2);
        // Per packet: every event is processed on its own.
        p.software_coalescing = false;
        p.rx_events = true;
        p
    }

    /// The host CPU, Soft-RoCE-like: SwCC's Table 1 measures a 23 µs control
    /// loop against 3.1 µs for the ASIC, i.e. about 20 µs added: split here
    /// as 8 µs trigger (PCIe, interrupt, softirq), 4 µs processing and 8 µs to
    /// install the rate over PCIe (rdmalab's split of the measured total); one core.
    pub fn host_cpu() -> Placement {
        let mut p = Self::preset("host-cpu", 8_000, 4_000, 0, 8_000, 1);
        p.rx_events = true;
        p
    }

    pub fn by_name(name: &str) -> Option<Placement> {
        match name {
            "asic" => Some(Self::asic()),
            "dpa" => Some(Self::dpa()),
            "swcc" => Some(Self::swcc()),
            "host-cpu" => Some(Self::host_cpu()),
            _ => None,
        }
    }

    pub const NAMES: &'static [&'static str] = &["asic", "dpa", "swcc", "host-cpu"];

    /// True when events bypass queues, threads and latencies entirely.
    pub fn is_immediate(&self) -> bool {
        self.trigger_latency == Duration::ZERO
            && self.tx_batch_bytes == 0
            && self.processing == Duration::ZERO
            && self.state_access == Duration::ZERO
            && self.install_latency == Duration::ZERO
            && self.threads == 0
            && self.compute.is_none()
            && self.pools.is_none()
            && self.raw_eth.is_none()
    }

    /// Control threads of each NIC (0: one per QP end, as in an ASIC).
    pub fn threads_per_nic(&self) -> u32 {
        self.pools.map_or(self.threads, |p| p.total())
    }
}

/// A waiting event: the coalesced event and where its oldest signal came from.
#[derive(Clone, Debug)]
pub struct Entry {
    pub qp: u32,
    pub kind: EventType,
    pub event: CcEvent,
    pub first_signal: Time,
    pub count: u32,
    /// Events folded in before the trigger (hardware) and after it (software).
    pub hw_coalesced: u32,
    pub sw_coalesced: u32,
    pub triggered: bool,
    /// The trigger has been started (a held TX batch has not).
    pub trigger_started: bool,
    /// When the entry reached its thread's ready queue.
    pub triggered_at: Time,
    /// TX bytes folded in, whatever the coalescing strategy keeps (for `tx_batch_bytes`).
    pub batch_bytes: u64,
    pub int: [IntHop; MAX_INT_HOPS],
    pub int_len: u8,
    /// The extensible CC header of the packet behind the event (the latest
    /// one folded in, unless the oldest is kept).
    pub header: [u32; crate::control::MAX_CC_HEADER_WORDS],
    pub header_len: u8,
}

impl Entry {
    /// A new entry for `ev` of QP `qp`, raised at `at`, with the INT records it carries.
    pub fn new(qp: u32, ev: CcEvent, at: Time, int: &[IntHop]) -> Entry {
        let mut e = Entry {
            qp,
            kind: EventType::of(&ev),
            event: ev,
            first_signal: at,
            count: 1,
            hw_coalesced: 0,
            sw_coalesced: 0,
            triggered: false,
            trigger_started: false,
            triggered_at: Time::ZERO,
            batch_bytes: match ev {
                CcEvent::Tx { bytes, .. } => bytes as u64,
                _ => 0,
            },
            int: [IntHop::default(); MAX_INT_HOPS],
            int_len: 0,
            header: [0; crate::control::MAX_CC_HEADER_WORDS],
            header_len: 0,
        };
        e.set_int(int);
        e
    }

    /// Fold `ev` into this entry.
    pub fn set_header(&mut self, words: &[u32]) {
        let n = words.len().min(crate::control::MAX_CC_HEADER_WORDS);
        self.header[..n].copy_from_slice(&words[..n]);
        self.header_len = n as u8;
    }

    pub fn absorb(&mut self, ev: &CcEvent, int: &[IntHop], how: Coalesce) {
        self.count += 1;
        if let CcEvent::Tx { bytes, .. } = ev {
            self.batch_bytes += *bytes as u64;
        }
        if self.triggered {
            self.sw_coalesced += 1;
        } else {
            self.hw_coalesced += 1;
        }
        match how {
            Coalesce::KeepOldest => {}
            Coalesce::KeepLatest => {
                self.event = *ev;
                self.set_int(int);
            }
            Coalesce::Accumulate => {
                self.event = match (self.event, *ev) {
                    (
                        CcEvent::Tx {
                            bytes: b0,
                            packets: p0,
                        },
                        CcEvent::Tx { bytes, packets },
                    ) => CcEvent::Tx {
                        bytes: b0.saturating_add(bytes),
                        packets: p0 + packets,
                    },
                    (
                        CcEvent::Ack {
                            acked_bytes: a0,
                            ece: e0,
                            ..
                        },
                        CcEvent::Ack {
                            acked_bytes,
                            acked_through,
                            rtt,
                            ece,
                            hops,
                        },
                    ) => CcEvent::Ack {
                        acked_bytes: a0 + acked_bytes,
                        acked_through,
                        rtt,
                        ece: e0 || ece,
                        hops,
                    },
                    (
                        CcEvent::Rx {
                            bytes: b0,
                            packets: p0,
                            ce: c0,
                        },
                        CcEvent::Rx { bytes, packets, ce },
                    ) => CcEvent::Rx {
                        bytes: b0.saturating_add(bytes),
                        packets: p0 + packets,
                        ce: c0 || ce,
                    },
                    (_, newer) => newer,
                };
                if !int.is_empty() {
                    self.set_int(int);
                }
            }
        }
    }

    pub fn set_int(&mut self, int: &[IntHop]) {
        let n = int.len().min(MAX_INT_HOPS);
        self.int[..n].copy_from_slice(&int[..n]);
        self.int_len = n as u8;
    }
}

/// Actions waiting for their install latency.
#[derive(Clone, Copy, Debug)]
pub struct PendingInstall {
    pub actions: Actions,
    pub first_signal: Time,
    pub triggered_at: Time,
    pub started_at: Time,
    pub processing: Duration,
    pub kind: EventType,
    pub count: u32,
    pub at_receiver: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Thread {
    pub busy: bool,
    pub ready: VecDeque<u32>,
    pub busy_time: Duration,
    pub processed: u64,
    /// `control.raw_eth`: when the thread has sent the packets it was given.
    pub send_free_at: Time,
}

/// A probe or peer message a control thread sends (`control.raw_eth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadSend {
    Probe {
        sport: u16,
    },
    Oob {
        words: [u32; 4],
        from_receiver: bool,
    },
}

/// One recorded control-loop delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControlDelay {
    /// When the action took effect.
    pub time: Time,
    pub qp: u32,
    pub kind: EventType,
    /// From the oldest coalesced signal to the effect.
    pub delay: Duration,
    /// Events folded into the entry that produced the action.
    pub coalesced: u32,
    /// The delay's parts: to the thread's queue (trigger, and a held TX
    /// batch), waiting for the thread, processing, installing.
    pub trigger: Duration,
    pub wait: Duration,
    pub processing: Duration,
    pub install: Duration,
}

/// Counters of the framework, per event type.
#[derive(Clone, Debug, Default)]
pub struct FrameworkStats {
    /// Events the NIC raised.
    pub raised: [u64; EVENT_TYPES],
    /// Entries processed by threads.
    pub processed: [u64; EVENT_TYPES],
    pub hw_coalesced: [u64; EVENT_TYPES],
    pub sw_coalesced: [u64; EVENT_TYPES],
    /// TX bytes raised, and TX bytes handed to controllers: equal once nothing
    /// waits, unless a `keep-*` coalescing strategy handed over one event of
    /// several folded together.
    pub tx_bytes_raised: u64,
    pub tx_bytes_processed: u64,
    pub actions_installed: u64,
    /// `control.compute`: where processed entries found their flow state.
    pub memory: compute::MemoryCounters,
    /// `control.raw_eth`: probes and peer messages threads have sent, those
    /// dropped at a full thread, and the time the accepted ones wait to be
    /// sent (counted when they are handed over).
    pub raw_eth_sent: u64,
    pub raw_eth_dropped: u64,
    pub raw_eth_wait: Duration,
}

/// State of the framework for one run.
pub struct Framework {
    pub placement: Placement,
    pub entries: Vec<Entry>,
    free: Vec<u32>,
    /// Per QP and event type: the entry that still absorbs events, if any.
    pub open: Vec<[u32; EVENT_TYPES]>,
    pub threads: Vec<Thread>,
    /// Per QP: actions waiting to be installed, in order.
    pub installs: Vec<VecDeque<PendingInstall>>,
    pub stats: FrameworkStats,
    pub delays: Vec<ControlDelay>,
    pub record_delays: bool,
    /// `control.compute`: the caches of each NIC's control cores.
    pub memory: Vec<Option<CoreMemory>>,
    /// `control.raw_eth`: sends queued at threads (QP and what), by slot.
    pub sends: Vec<(u32, ThreadSend)>,
    free_sends: Vec<u32>,
}

pub const NO_ENTRY: u32 = u32::MAX;

impl Framework {
    pub fn new(placement: Placement, record_delays: bool) -> Self {
        let n = placement.threads_per_nic() as usize;
        Framework {
            placement,
            entries: Vec::new(),
            free: Vec::new(),
            open: Vec::new(),
            // Pools grow per NIC as events arrive (NIC i owns threads i·n .. (i+1)·n).
            threads: Vec::with_capacity(n),
            installs: Vec::new(),
            stats: FrameworkStats::default(),
            delays: Vec::new(),
            record_delays,
            memory: Vec::new(),
            sends: Vec::new(),
            free_sends: Vec::new(),
        }
    }

    /// Keep a send until its thread has sent it; returns its slot.
    pub fn queue_send(&mut self, qp: u32, s: ThreadSend) -> u32 {
        if let Some(i) = self.free_sends.pop() {
            self.sends[i as usize] = (qp, s);
            i
        } else {
            self.sends.push((qp, s));
            (self.sends.len() - 1) as u32
        }
    }

    pub fn take_send(&mut self, slot: u32) -> (u32, ThreadSend) {
        self.free_sends.push(slot);
        self.sends[slot as usize]
    }

    pub fn ensure_qp(&mut self, qp: u32) {
        while self.open.len() <= qp as usize {
            self.open.push([NO_ENTRY; EVENT_TYPES]);
            self.installs.push(VecDeque::new());
        }
    }

    /// The thread, within its NIC's threads, that QP `qp`'s events of this
    /// kind are steered to: by QP id within the pool of the event's purpose.
    pub fn thread_of(&self, qp: u32, kind: EventType) -> usize {
        match self.placement.pools {
            Some(p) => p.thread(Purpose::of(kind), qp) as usize,
            None => (qp % self.placement.threads.max(1)) as usize,
        }
    }

    /// Thread time to process an entry of `qp` on thread `t` of NIC `nic`:
    /// the flat `processing`, or cycles at the clock plus reaching the
    /// flow's state (`control.compute`); plus `state_access`.
    pub fn processing_cost(&mut self, nic: usize, t: usize, qp: u32) -> Duration {
        let p = &self.placement;
        let Some(c) = p.compute else {
            return p.processing + p.state_access;
        };
        let per_nic = p.threads_per_nic().max(1) as usize;
        if self.memory.len() <= nic {
            self.memory.resize_with(nic + 1, || None);
        }
        let mem = self.memory[nic].get_or_insert_with(|| CoreMemory::new(c, per_nic));
        let before = mem.counters;
        let reach = mem.access(t, qp);
        let after = mem.counters;
        let m = &mut self.stats.memory;
        m.l1_hits += after.l1_hits - before.l1_hits;
        m.l2_hits += after.l2_hits - before.l2_hits;
        m.l3_hits += after.l3_hits - before.l3_hits;
        m.memory_reads += after.memory_reads - before.memory_reads;
        c.compute_time() + reach + self.placement.state_access
    }

    pub fn alloc(&mut self, e: Entry) -> u32 {
        if let Some(i) = self.free.pop() {
            self.entries[i as usize] = e;
            i
        } else {
            self.entries.push(e);
            (self.entries.len() - 1) as u32
        }
    }

    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Entries still waiting (not yet processed) at the end of a run.
    pub fn waiting_entries(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// TX bytes in entries that have not been processed yet.
    pub fn tx_bytes_waiting(&self) -> u64 {
        let mut free = vec![false; self.entries.len()];
        for &f in &self.free {
            free[f as usize] = true;
        }
        self.entries
            .iter()
            .zip(free)
            .filter(|(_, f)| !f)
            .map(|(e, _)| match e.event {
                CcEvent::Tx { bytes, .. } => bytes as u64,
                _ => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ev: CcEvent) -> Entry {
        Entry::new(0, ev, Time(5), &[])
    }

    #[test]
    fn accumulate_sums_tx_bytes_and_keeps_the_first_timestamp() {
        let mut e = entry(CcEvent::Tx {
            bytes: 1000,
            packets: 1,
        });
        e.absorb(
            &CcEvent::Tx {
                bytes: 500,
                packets: 1,
            },
            &[],
            Coalesce::Accumulate,
        );
        e.triggered = true;
        e.absorb(
            &CcEvent::Tx {
                bytes: 24,
                packets: 1,
            },
            &[],
            Coalesce::Accumulate,
        );
        assert_eq!(
            e.event,
            CcEvent::Tx {
                bytes: 1524,
                packets: 3
            }
        );
        assert_eq!((e.count, e.hw_coalesced, e.sw_coalesced), (3, 1, 1));
        assert_eq!(e.first_signal, Time(5));
    }

    #[test]
    fn accumulate_sums_acked_bytes_and_keeps_the_newest_rtt() {
        let a = |b, t, r, ece| CcEvent::Ack {
            acked_bytes: b,
            acked_through: t,
            rtt: Duration(r),
            ece,
            hops: 1,
        };
        let mut e = entry(a(1000, 1000, 7, true));
        e.absorb(&a(1000, 2000, 9, false), &[], Coalesce::Accumulate);
        assert_eq!(e.event, a(2000, 2000, 9, true));
    }

    #[test]
    fn keep_latest_and_keep_oldest() {
        let mut e = entry(CcEvent::Nack { expected_psn: 3 });
        e.absorb(
            &CcEvent::Nack { expected_psn: 7 },
            &[],
            Coalesce::KeepOldest,
        );
        assert_eq!(e.event, CcEvent::Nack { expected_psn: 3 });
        e.absorb(
            &CcEvent::Nack { expected_psn: 9 },
            &[],
            Coalesce::KeepLatest,
        );
        assert_eq!(e.event, CcEvent::Nack { expected_psn: 9 });
        assert_eq!(e.count, 3);
    }

    #[test]
    fn presets_carry_their_measured_totals() {
        let total = |p: Placement| (p.trigger_latency + p.processing + p.install_latency).ps();
        assert_eq!(total(Placement::dpa()), 17_000_000);
        assert_eq!(total(Placement::swcc()), 200_000);
        assert_eq!(total(Placement::host_cpu()), 20_000_000);
        assert!(Placement::asic().is_immediate());
    }
}
