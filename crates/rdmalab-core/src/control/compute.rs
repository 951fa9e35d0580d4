//! What a control thread's work costs on a programmable NIC core, and what
//! the core can send: SCR's BlueField-3 DPA as a computer rather than a flat
//! delay.
//!
//! * **Cycles at a clock.** Each processed entry costs the algorithm's
//!   cycles per event divided by the core clock (`control.compute`).
//! * **The flow's state in a memory hierarchy.** The controller touches
//!   `state_bytes` of per-flow state per event. Its lines are looked up in
//!   the thread's private L1, then the NIC's shared L2 and L3, then the
//!   DPA's memory; each level is an LRU cache (SCR Table 1's sizes), and a
//!   line that missed is filled into every level above. A thread that serves
//!   more flows than its 1 KiB L1 holds pays for it on every event.
//! * **Thread pools per purpose** (`control.pools`): in-band fabric events,
//!   out-of-band telemetry (RTT probes), peer messages and host reports each
//!   go to their own pool, so one kind cannot starve another (SCR §4.3.3).
//! * **A raw-Ethernet send budget** (`control.raw_eth`): probes and peer
//!   messages leave through the threads of their pool, each sending at most
//!   `pps` packets per second (SCR §3.3: about 1.8 Mpps per thread). A
//!   thread with `backlog` packets waiting drops or delays the next.

use crate::control::framework::EventType;
use crate::nic::resources::cache::{Lookup, SetAssocCache};
use crate::time::{Duration, Time};

/// Cycles, clock and memory of the control cores (`control.compute`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeModel {
    /// Core clock, Hz.
    pub clock_hz: f64,
    /// Core cycles per processed entry (the algorithm's own code).
    pub cycles: u64,
    /// Per-flow state an event reads and writes, bytes.
    pub state_bytes: u32,
    /// Cache line, bytes.
    pub line_bytes: u32,
    /// Private L1 data cache of each thread, bytes.
    pub l1_bytes: u64,
    /// L2 and L3 shared by a NIC's threads, bytes.
    pub l2_bytes: u64,
    pub l3_bytes: u64,
    /// Time of one line access that hits in each level, and off chip.
    pub l1_hit: Duration,
    pub l2_hit: Duration,
    pub l3_hit: Duration,
    pub memory: Duration,
}

/// SCR's clock for DPA cycle counts: "the DPA system clock runs at 505 MHz" (§6.1).
pub const DPA_CLOCK_HZ: f64 = 505e6;

impl ComputeModel {
    /// BlueField-3's DPA (SCR Table 1: 1 KB L1d per thread, 1.5 MB L2,
    /// 3 MB L3) running an algorithm of `cycles` per event over
    /// `state_bytes` of flow state. The hit times are rdmalab's
    /// assumptions (SCR Fig. 2b plots them without numbers in the text): 1
    /// cycle for L1, 10 for L2, 25 for L3 at 505 MHz, and 300 ns off chip
    /// (SCR §2: "single access to DDR memory (hundreds of ns)").
    pub fn bluefield3(cycles: u64, state_bytes: u32) -> Self {
        let cycle = |n: u64| Duration((n as f64 * 1e12 / DPA_CLOCK_HZ).round() as u64);
        ComputeModel {
            clock_hz: DPA_CLOCK_HZ,
            cycles,
            state_bytes,
            line_bytes: 64,
            l1_bytes: 1024,
            l2_bytes: 1536 * 1024,
            l3_bytes: 3 * 1024 * 1024,
            l1_hit: cycle(1),
            l2_hit: cycle(10),
            l3_hit: cycle(25),
            memory: Duration::from_ns(300),
        }
    }

    /// Core time for the algorithm's cycles alone.
    pub fn compute_time(&self) -> Duration {
        Duration((self.cycles as f64 * 1e12 / self.clock_hz).round() as u64)
    }

    /// Lines of a cache of `bytes`; the scenario refuses more than u32 holds.
    fn lines(&self, bytes: u64) -> u32 {
        u32::try_from((bytes / self.line_bytes.max(1) as u64).max(1))
            .expect("control.compute: a cache of at most u32::MAX lines")
    }

    /// Lines of state one event touches.
    fn state_lines(&self) -> u64 {
        (self.state_bytes as u64).div_ceil(self.line_bytes.max(1) as u64)
    }
}

/// Where one event's state lines were found (for the run's counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryCounters {
    pub l1_hits: u64,
    pub l2_hits: u64,
    pub l3_hits: u64,
    pub memory_reads: u64,
}

/// The caches of one NIC's control cores.
pub struct CoreMemory {
    model: ComputeModel,
    /// One L1 per thread of the NIC.
    l1: Vec<SetAssocCache>,
    l2: SetAssocCache,
    l3: SetAssocCache,
    pub counters: MemoryCounters,
}

impl CoreMemory {
    pub fn new(model: ComputeModel, threads: usize) -> Self {
        let l1 = model.lines(model.l1_bytes);
        CoreMemory {
            model,
            l1: (0..threads.max(1))
                .map(|_| SetAssocCache::new(l1, l1))
                .collect(),
            l2: SetAssocCache::new(model.lines(model.l2_bytes), 16),
            l3: SetAssocCache::new(model.lines(model.l3_bytes), 16),
            counters: MemoryCounters::default(),
        }
    }

    /// Thread `thread` (index within the NIC) processes an event of `qp`:
    /// the time its state lines take to reach, filling the caches.
    pub fn access(&mut self, thread: usize, qp: u32) -> Duration {
        let m = self.model;
        let mut t = Duration::ZERO;
        let i = thread % self.l1.len();
        for line in 0..m.state_lines() {
            let key = (qp as u64) << 20 | line;
            let l1 = &mut self.l1[i];
            if l1.access(key) == Lookup::Hit {
                self.counters.l1_hits += 1;
                t = t + m.l1_hit;
            } else if self.l2.access(key) == Lookup::Hit {
                self.counters.l2_hits += 1;
                t = t + m.l2_hit;
            } else if self.l3.access(key) == Lookup::Hit {
                self.counters.l3_hits += 1;
                t = t + m.l3_hit;
            } else {
                self.counters.memory_reads += 1;
                t = t + m.memory;
            }
        }
        t
    }
}

/// The purpose a thread pool serves (SCR §4.3.3: separate pools per purpose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// In-band fabric events: TX, ACK, NACK, CNP, RX, timers.
    Fabric = 0,
    /// Out-of-band fabric signals: RTT probe answers.
    Telemetry = 1,
    /// Messages from the peer.
    Peer = 2,
    /// Host-domain reports and application hints.
    Host = 3,
}

impl Purpose {
    pub const NAMES: [&'static str; 4] = ["fabric", "telemetry", "peer", "host"];

    pub fn of(kind: EventType) -> Purpose {
        match kind {
            EventType::Rtt => Purpose::Telemetry,
            EventType::Peer => Purpose::Peer,
            EventType::Host | EventType::Hint => Purpose::Host,
            _ => Purpose::Fabric,
        }
    }
}

/// Threads per purpose on each NIC (`control.pools`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pools(pub [u32; 4]);

impl Pools {
    /// SCR §4.3.3: 64 threads for in-band fabric signals, 16 for
    /// out-of-band fabric and peer signals; the host pool's 16 is rdmalab's
    /// choice (the paper does not size it).
    pub const SCR: Pools = Pools([64, 16, 16, 16]);

    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }

    /// The thread (within a NIC) that `qp`'s events of this purpose go to.
    pub fn thread(&self, purpose: Purpose, qp: u32) -> u32 {
        let p = purpose as usize;
        let offset: u32 = self.0[..p].iter().sum();
        offset + qp % self.0[p].max(1)
    }
}

/// What a thread does with a packet to send when its queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Drop,
    Delay,
}

/// The raw-Ethernet send budget of control threads (`control.raw_eth`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawEth {
    /// Packets per second one thread sends.
    pub pps: f64,
    /// Packets that may wait at a thread; the next one overflows.
    pub backlog: u32,
    pub overflow: Overflow,
}

impl RawEth {
    /// SCR §3.3, Fig. 2c: "for a single thread, it achieves packet rates of
    /// about 1.8 Mpps"; a 64-packet queue that delays is rdmalab's choice.
    pub const BLUEFIELD3: RawEth = RawEth {
        pps: 1.8e6,
        backlog: 64,
        overflow: Overflow::Delay,
    };

    /// Thread time to send one packet.
    pub fn per_packet(&self) -> Duration {
        Duration((1e12 / self.pps).round() as u64)
    }

    /// A thread whose sends are busy until `free_at` is given a packet at
    /// `now`: when the packet leaves (also when the thread is free again),
    /// or `Err(Drop)` if its queue is full and it is dropped.
    pub fn schedule(&self, free_at: Time, now: Time) -> Result<Time, Overflow> {
        let per = self.per_packet();
        let start = free_at.max(now);
        let waiting = (start - now).ps() / per.ps().max(1);
        if waiting >= self.backlog as u64 && self.overflow == Overflow::Drop {
            return Err(Overflow::Drop);
        }
        Ok(start + per)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_that_fits_l1_hits_and_a_crowded_thread_misses() {
        let m = ComputeModel::bluefield3(100, 64);
        let mut mem = CoreMemory::new(m, 1);
        assert_eq!(mem.access(0, 7), m.memory, "first touch comes from memory");
        assert_eq!(mem.access(0, 7), m.l1_hit);
        // 17 flows of one line each overflow a 16-line L1: round robin over
        // them always misses L1 and hits L2.
        for q in 0..17 {
            mem.access(0, q);
        }
        for q in 0..17 {
            assert_eq!(mem.access(0, q), m.l2_hit, "flow {q}");
        }
    }

    #[test]
    fn pools_steer_by_purpose_then_qp() {
        let p = Pools::SCR;
        assert_eq!(p.thread(Purpose::Fabric, 70), 6);
        assert_eq!(p.thread(Purpose::Telemetry, 3), 64 + 3);
        assert_eq!(p.thread(Purpose::Peer, 17), 80 + 1);
        assert_eq!(p.thread(Purpose::Host, 0), 96);
        assert_eq!(p.total(), 112);
    }

    #[test]
    fn a_full_send_queue_drops_or_delays() {
        let mut r = RawEth {
            backlog: 2,
            ..RawEth::BLUEFIELD3
        };
        let per = r.per_packet();
        assert_eq!(per, Duration(555_556));
        let now = Time(1_000_000);
        let a = r.schedule(Time::ZERO, now).unwrap();
        assert_eq!(a, now + per);
        let b = r.schedule(a, now).unwrap();
        let c = r.schedule(b, now).unwrap();
        assert_eq!(c, now + per + per + per);
        r.overflow = Overflow::Drop;
        assert_eq!(r.schedule(c, now), Err(Overflow::Drop));
    }
}
