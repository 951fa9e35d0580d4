//! A switch's shared packet buffer: admission, PFC decisions and ECN marking.
//!
//! Lossless mode follows the Broadcom-style model of the ns-3 HPCC simulator
//! (`switch-mmu.cc`): each (ingress port, class) has a small reserve, then
//! draws on the shared pool up to a dynamic threshold
//! `α · (buffer − headroom − reserve − shared in use)`, then on its port's
//! headroom. Using headroom or crossing the threshold sends PAUSE upstream;
//! RESUME follows once headroom is empty and shared use is `resume_offset`
//! below the threshold. A packet is dropped only when headroom is exhausted.
//!
//! Lossy mode (PFC off) admits a packet unless the buffer is full or its
//! egress queue exceeds the Choudhury–Hahne dynamic threshold
//! `α_egress · (buffer − in use)`; a refused packet is dropped and counted.

use crate::packet::{TrafficClass, NUM_CLASSES};
use crate::rng::RngStream;
use crate::time::Rate;

/// RED-style ECN marking on dequeue, per egress queue (the DCQCN switch rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcnConfig {
    /// Below this many queued bytes, never mark.
    pub kmin_bytes: u64,
    /// Above this many queued bytes, always mark.
    pub kmax_bytes: u64,
    /// Marking probability at `kmax_bytes`, rising linearly from 0 at `kmin_bytes`.
    pub pmax: f64,
}

impl EcnConfig {
    /// Defaults scaled by link rate as in the ns-3 HPCC simulator's `run.py`
    /// (Kmin 100 KB and Kmax 400 KB per 25 Gb/s, Pmax 0.2; "from Alibaba production").
    pub fn scaled_for(rate: Rate) -> Self {
        let per_25g = rate.bps() as f64 / 25e9;
        EcnConfig {
            kmin_bytes: (100_000.0 * per_25g) as u64,
            kmax_bytes: (400_000.0 * per_25g) as u64,
            pmax: 0.2,
        }
    }

    #[inline]
    pub fn should_mark(&self, queued_bytes: u64, rng: &mut RngStream) -> bool {
        if queued_bytes > self.kmax_bytes {
            true
        } else if queued_bytes > self.kmin_bytes {
            let span = (self.kmax_bytes - self.kmin_bytes).max(1) as f64;
            rng.chance(self.pmax * (queued_bytes - self.kmin_bytes) as f64 / span)
        } else {
            false
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct BufferConfig {
    pub size_bytes: u64,
    pub pfc_enabled: bool,
    /// Dynamic PFC threshold factor α (ns-3 HPCC: 1/8 at the NIC rate, ×2 per doubling of port rate).
    pub pfc_alpha: f64,
    /// Per (ingress port, class) reserve, bytes (ns-3 HPCC: 4 KB).
    pub reserve_bytes: u64,
    /// RESUME once shared use is this far below the threshold (ns-3 HPCC: 3 KB).
    pub resume_offset_bytes: u64,
    /// Per-port headroom in bytes; `None` = 3 × rate × delay of the port's link (ns-3 HPCC).
    pub headroom_bytes: Option<u64>,
    /// Lossy mode: egress dynamic-threshold factor.
    pub egress_alpha: f64,
    /// Scale PFC α with port rate over this reference rate (ns-3 uses the first host's NIC rate).
    pub pfc_alpha_reference_rate: Option<Rate>,
}

/// Outcome of offering a packet to the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    Dropped,
}

/// A dynamic-threshold factor α: the share of the free buffer that one
/// port (and class) may hold. ns-3's α is a power of two (a right shift in
/// its code); then the threshold is that shift, which for any buffer below
/// 2^53 bytes is the same integer as the rounded-down float product,
/// without two float conversions per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Alpha {
    value: f64,
    /// k when `value` is 2^-k, else [`Alpha::NO_SHIFT`].
    shift: u8,
}

impl Alpha {
    const NO_SHIFT: u8 = u8::MAX;

    fn new(value: f64) -> Alpha {
        let shift = (0..64u8)
            .find(|&k| value == 0.5f64.powi(k as i32))
            .unwrap_or(Alpha::NO_SHIFT);
        Alpha { value, shift }
    }

    /// α × `free`, rounded down.
    #[inline]
    fn of(self, free: u64) -> u64 {
        Alpha::shifted(self.shift, free).unwrap_or_else(|| (free as f64 * self.value) as u64)
    }

    /// `free` >> `shift` where that equals the float product: `shift` is
    /// not [`Alpha::NO_SHIFT`] and `free` is below 2^53.
    #[inline]
    fn shifted(shift: u8, free: u64) -> Option<u64> {
        (shift != Alpha::NO_SHIFT && free < 1 << f64::MANTISSA_DIGITS).then(|| free >> shift)
    }
}

/// One (ingress port, class)'s accounts, with what deciding on them needs
/// from its port (headroom, α's shift): a frame's admission, release and
/// PAUSE/RESUME decisions read this one 32-byte entry and the pool's line.
/// (What waits to leave by a port is its egress queue's byte count.)
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
struct ClassAccount {
    /// Reserve and shared-pool bytes held.
    ingress: u64,
    /// Headroom bytes held (released first).
    hdrm_used: u64,
    /// The port's headroom.
    headroom: u64,
    /// The port's α as a shift ([`Alpha::NO_SHIFT`]: use `PortAccount::alpha`).
    alpha_shift: u8,
    paused_upstream: bool,
}

/// One local port of a switch: per-class accounts, then its PFC α.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct PortAccount {
    class: [ClassAccount; NUM_CLASSES],
    alpha: Alpha,
}

/// What every admission and release reads or writes, in one cache line.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Pool {
    ports: Box<[PortAccount]>,
    size_bytes: u64,
    reserve_bytes: u64,
    /// Headroom and reserves of all ports: the shared pool is the rest.
    set_aside: u64,
    shared_used: u64,
    total_used: u64,
    pfc_enabled: bool,
}

/// Buffer state of one switch. Ports are the switch's local port indices.
#[derive(Clone)]
pub struct SharedBuffer {
    pool: Pool,
    pub cfg: BufferConfig,
    /// `cfg.egress_alpha`, for the lossy egress limit.
    egress_alpha: Alpha,
}

impl SharedBuffer {
    /// `ports`: (rate, one-way delay in ps) of each local port's link.
    pub fn new(cfg: BufferConfig, ports: &[(Rate, u64)]) -> Self {
        let n = ports.len();
        let headroom: Vec<u64> = ports
            .iter()
            .map(|&(rate, delay_ps)| {
                cfg.headroom_bytes.unwrap_or_else(|| {
                    // 3 × bandwidth-delay product of the link.
                    // Saturating: a sum past u64 reads as "no shared pool left".
                    (rate
                        .bytes_in(crate::time::Duration(delay_ps))
                        .saturating_mul(3))
                    .max(1)
                })
            })
            .collect();
        // ns-3 HPCC (third.cc): the α shift drops by one while the port rate,
        // halved each time, still exceeds the NIC rate, and never below 0 (α ≤ 1).
        let alpha: Vec<f64> = ports
            .iter()
            .map(|&(rate, _)| {
                let mut a = cfg.pfc_alpha;
                if let Some(nic) = cfg.pfc_alpha_reference_rate {
                    let mut r = rate.bps();
                    while r > nic.bps() && a * 2.0 <= 1.0 {
                        a *= 2.0;
                        r /= 2;
                    }
                }
                a
            })
            .collect();
        let total_headroom = if cfg.pfc_enabled {
            headroom.iter().fold(0u64, |a, &h| a.saturating_add(h))
        } else {
            0
        };
        // ns-3's ConfigNPort reserves `reserve` once per port.
        let total_reserve = if cfg.pfc_enabled {
            cfg.reserve_bytes.saturating_mul(n as u64)
        } else {
            0
        };
        SharedBuffer {
            pool: Pool {
                ports: headroom
                    .iter()
                    .zip(&alpha)
                    .map(|(&headroom, &alpha)| {
                        let alpha = Alpha::new(alpha);
                        let account = ClassAccount {
                            headroom,
                            alpha_shift: alpha.shift,
                            ..ClassAccount::default()
                        };
                        PortAccount {
                            class: [account; NUM_CLASSES],
                            alpha,
                        }
                    })
                    .collect(),
                size_bytes: cfg.size_bytes,
                reserve_bytes: cfg.reserve_bytes,
                set_aside: total_headroom.saturating_add(total_reserve),
                shared_used: 0,
                total_used: 0,
                pfc_enabled: cfg.pfc_enabled,
            },
            egress_alpha: Alpha::new(cfg.egress_alpha),
            cfg,
        }
    }

    #[inline]
    pub fn pfc_threshold(&self, port: usize) -> u64 {
        self.threshold_at(&self.pool.ports[port].class[0], port)
    }

    /// The dynamic PFC threshold of the port of `acc` (local port `port`).
    #[inline]
    fn threshold_at(&self, acc: &ClassAccount, port: usize) -> u64 {
        let free = self
            .pool
            .size_bytes
            .saturating_sub(self.pool.set_aside + self.pool.shared_used);
        // The account's copy of the shift spares a load of the port's α.
        Alpha::shifted(acc.alpha_shift, free)
            .unwrap_or_else(|| self.pool.ports[port].alpha.of(free))
    }

    /// Offer a packet arriving on `in_port`, class `c`, for an egress
    /// queue that holds `egress_queued` bytes. On success the bytes are
    /// accounted until [`SharedBuffer::release`].
    #[inline]
    pub fn admit(
        &mut self,
        in_port: usize,
        egress_queued: u64,
        c: TrafficClass,
        bytes: u64,
    ) -> Admission {
        let c = c as usize;
        if self.pool.pfc_enabled {
            // As in ns-3's SwitchMmu: `ingress` counts reserve and shared bytes;
            // headroom bytes are kept apart and released first.
            let reserve = self.pool.reserve_bytes;
            let acc = self.pool.ports[in_port].class[c];
            let new_ingress = acc.ingress + bytes;
            if new_ingress > reserve && new_ingress - reserve > self.threshold_at(&acc, in_port) {
                if acc.hdrm_used + bytes > acc.headroom {
                    return Admission::Dropped;
                }
                self.pool.ports[in_port].class[c].hdrm_used += bytes;
            } else {
                if new_ingress > reserve {
                    self.pool.shared_used += bytes.min(new_ingress - reserve);
                }
                self.pool.ports[in_port].class[c].ingress = new_ingress;
            }
        } else {
            let free = self.pool.size_bytes.saturating_sub(self.pool.total_used);
            let limit = self.egress_alpha.of(free);
            if self.pool.total_used + bytes > self.pool.size_bytes || egress_queued + bytes > limit
            {
                return Admission::Dropped;
            }
            self.pool.ports[in_port].class[c].ingress += bytes;
        }
        self.pool.total_used += bytes;
        Admission::Admitted
    }

    /// Free the bytes of a packet that came in on `in_port` and leaves now.
    #[inline]
    pub fn release(&mut self, in_port: usize, c: TrafficClass, bytes: u64) {
        let c = c as usize;
        let reserve = self.pool.reserve_bytes;
        let acc = &mut self.pool.ports[in_port].class[c];
        if self.pool.pfc_enabled {
            let from_hdrm = acc.hdrm_used.min(bytes);
            let rest = bytes - from_hdrm;
            let over_reserve = acc.ingress.saturating_sub(reserve);
            acc.hdrm_used -= from_hdrm;
            acc.ingress -= rest;
            self.pool.shared_used -= rest.min(over_reserve);
        } else {
            acc.ingress -= bytes;
        }
        self.pool.total_used -= bytes;
    }

    /// Should (port, class) send PAUSE now? (It is in headroom or at the threshold.)
    #[inline]
    pub fn should_pause(&self, port: usize, c: TrafficClass) -> bool {
        let acc = &self.pool.ports[port].class[c as usize];
        if !self.pool.pfc_enabled || acc.paused_upstream {
            return false;
        }
        let shared = acc.ingress.saturating_sub(self.pool.reserve_bytes);
        acc.hdrm_used > 0 || shared >= self.threshold_at(acc, port)
    }

    /// Should a paused (port, class) send RESUME now?
    #[inline]
    pub fn should_resume(&self, port: usize, c: TrafficClass) -> bool {
        let acc = &self.pool.ports[port].class[c as usize];
        if !acc.paused_upstream {
            return false;
        }
        let shared = acc.ingress.saturating_sub(self.pool.reserve_bytes);
        acc.hdrm_used == 0
            && (shared == 0
                || shared + self.cfg.resume_offset_bytes <= self.threshold_at(acc, port))
    }

    /// Record that we paused (or resumed) the upstream of (port, class).
    #[inline]
    pub fn set_paused_upstream(&mut self, port: usize, c: TrafficClass, paused: bool) {
        self.pool.ports[port].class[c as usize].paused_upstream = paused;
    }

    pub fn used_bytes(&self) -> u64 {
        self.pool.total_used
    }

    pub fn headroom_of(&self, port: usize) -> u64 {
        self.pool.ports[port].class[0].headroom
    }

    /// Bytes set aside for headroom and reserves; the shared pool is what is left.
    pub fn set_aside_bytes(&self) -> u64 {
        self.pool.set_aside
    }

    pub fn alpha_of(&self, port: usize) -> f64 {
        self.pool.ports[port].alpha.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pfc: bool) -> BufferConfig {
        BufferConfig {
            size_bytes: 1_000_000,
            pfc_enabled: pfc,
            pfc_alpha: 0.125,
            reserve_bytes: 4_000,
            resume_offset_bytes: 3_000,
            headroom_bytes: Some(40_000),
            egress_alpha: 1.0,
            pfc_alpha_reference_rate: None,
        }
    }

    #[test]
    fn lossless_pauses_before_dropping_and_resumes_when_drained() {
        let mut b = SharedBuffer::new(cfg(true), &[(Rate::gbps(100), 1_000_000); 3]);
        let mut admitted = 0;
        while !b.should_pause(0, 3) {
            assert_eq!(b.admit(0, 0, 3, 1000), Admission::Admitted);
            admitted += 1;
        }
        assert!(
            admitted > 4,
            "reserve and shared pool are used before pausing"
        );
        b.set_paused_upstream(0, 3, true);
        // Headroom (40 KB) absorbs what is still in flight, then the port drops.
        let mut after_pause = 0;
        while b.admit(0, 0, 3, 1000) == Admission::Admitted {
            after_pause += 1;
            assert!(after_pause < 100, "headroom must run out");
        }
        assert!((38..=45).contains(&after_pause), "{after_pause}");
        admitted += after_pause;
        assert!(!b.should_resume(0, 3));
        for _ in 0..admitted {
            b.release(0, 3, 1000);
        }
        assert!(b.should_resume(0, 3));
        assert_eq!(b.used_bytes(), 0);
    }

    #[test]
    fn headroom_bytes_of_mixed_sizes_release_without_leaking_the_shared_pool() {
        // The whole buffer is headroom and reserve: anything above the reserve
        // goes to headroom. Mixed frame sizes must release to exactly zero.
        let mut c = cfg(true);
        c.size_bytes = 3 * 40_000 + 3 * 4_000;
        let mut b = SharedBuffer::new(c, &[(Rate::gbps(100), 1_000_000); 3]);
        for _ in 0..4 {
            assert_eq!(b.admit(0, 0, 3, 1000), Admission::Admitted);
        }
        assert_eq!(b.admit(0, 0, 3, 64), Admission::Admitted);
        assert_eq!(b.admit(0, 0, 3, 1066), Admission::Admitted);
        b.release(0, 3, 1000);
        b.release(0, 3, 64);
        b.release(0, 3, 1000);
        b.release(0, 3, 1066);
        b.release(0, 3, 1000);
        b.release(0, 3, 1000);
        assert_eq!(b.used_bytes(), 0);
        assert_eq!(b.pool.shared_used, 0);
        assert_eq!(
            b.pfc_threshold(0),
            0,
            "nothing left for the shared pool, but no underflow"
        );
    }

    #[test]
    fn pfc_alpha_doubles_per_halving_of_port_over_nic_rate_as_ns3_does() {
        let mut c = cfg(true);
        c.pfc_alpha_reference_rate = Some(Rate::gbps(25));
        let b = SharedBuffer::new(
            c.clone(),
            &[
                (Rate::gbps(25), 1_000_000),
                (Rate::gbps(40), 1_000_000),
                (Rate::gbps(100), 1_000_000),
                (Rate::gbps(1600), 1_000_000),
            ],
        );
        assert_eq!(b.alpha_of(0), 0.125);
        assert_eq!(
            b.alpha_of(1),
            0.25,
            "40G over 25G: one halving (ns-3 rounds up)"
        );
        assert_eq!(b.alpha_of(2), 0.5);
        assert_eq!(b.alpha_of(3), 1.0, "capped at 1 (shift 0)");
    }

    #[test]
    fn lossy_mode_drops_at_the_egress_threshold() {
        let mut b = SharedBuffer::new(cfg(false), &[(Rate::gbps(100), 1_000_000); 2]);
        let mut n = 0;
        while b.admit(0, n * 1000, 3, 1000) == Admission::Admitted {
            n += 1;
        }
        // α = 1: a single queue may use half the buffer.
        assert!((490..=510).contains(&n), "{n}");
        assert!(!b.should_pause(0, 3));
    }

    /// The admission limits are inclusive, byte for byte: a packet that
    /// exactly fills the lossy buffer (or a queue's egress share) is
    /// admitted; one byte more is dropped.
    #[test]
    fn lossy_limits_admit_a_packet_that_exactly_fills_them() {
        let mut c = cfg(false);
        c.size_bytes = 1000;
        let b = SharedBuffer::new(c.clone(), &[(Rate::gbps(100), 1_000_000); 2]);
        assert_eq!(
            b.clone().admit(0, 0, 3, 1000),
            Admission::Admitted,
            "size = limit = 1000"
        );
        assert_eq!(b.clone().admit(0, 0, 3, 1001), Admission::Dropped);
        // Egress share: α = 0.5 of 2000 free is 1000.
        c.size_bytes = 2000;
        c.egress_alpha = 0.5;
        let b = SharedBuffer::new(c, &[(Rate::gbps(100), 1_000_000); 2]);
        assert_eq!(b.clone().admit(0, 0, 3, 1000), Admission::Admitted);
        assert_eq!(b.clone().admit(0, 0, 3, 1001), Admission::Dropped);
    }

    /// PFC admission at its boundaries: shared bytes up to exactly the
    /// dynamic threshold stay in the shared pool, and headroom takes a packet
    /// that exactly fills it, not one byte more.
    #[test]
    fn lossless_limits_are_inclusive_at_the_threshold_and_the_headroom() {
        let mut c = cfg(true);
        c.size_bytes = 200_000;
        c.headroom_bytes = Some(3_000);
        c.reserve_bytes = 1_000;
        c.pfc_alpha = 1.0;
        let fresh = SharedBuffer::new(c, &[(Rate::gbps(100), 1_000_000); 2]);
        // Free pool: 200 KB − 2 × 3 KB headroom − 2 × 1 KB reserve; α = 1.
        assert_eq!(fresh.pfc_threshold(0), 192_000);
        // Reserve + exactly the threshold: all of it in the shared pool.
        let mut b = fresh.clone();
        assert_eq!(b.admit(0, 0, 3, 1_000 + 192_000), Admission::Admitted);
        assert_eq!(
            (b.pool.ports[0].class[3].hdrm_used, b.pool.shared_used),
            (0, 192_000)
        );
        assert!(b.should_pause(0, 3));
        // Past the threshold: headroom, which takes exactly 3,000 B.
        assert_eq!(b.admit(0, 0, 3, 3_000), Admission::Admitted);
        assert_eq!(b.pool.ports[0].class[3].hdrm_used, 3_000);
        assert_eq!(b.admit(0, 0, 3, 1), Admission::Dropped);
    }

    /// Each class account carries its port's α as a shift, or none: a
    /// power-of-two α and any other give the threshold α × free pool, and
    /// the shared bytes a port holds shrink every port's threshold.
    #[test]
    fn the_pfc_threshold_is_alpha_of_the_free_pool_whatever_alpha_is() {
        for alpha in [0.25, 0.3, 1.0 / 3.0] {
            let mut c = cfg(true);
            c.pfc_alpha = alpha;
            let mut b = SharedBuffer::new(c, &[(Rate::gbps(100), 1_000_000); 3]);
            let free = 1_000_000 - 3 * 40_000 - 3 * 4_000;
            let want = |free: u64| (free as f64 * alpha) as u64;
            assert_eq!(b.pfc_threshold(1), want(free), "alpha {alpha}");
            // Port 0 holds its reserve and 10 KB of the shared pool.
            assert_eq!(b.admit(0, 0, 3, 4_000 + 10_000), Admission::Admitted);
            assert_eq!(b.pfc_threshold(1), want(free - 10_000), "alpha {alpha}");
            // Port 1 pauses once its shared bytes reach its threshold, which
            // they themselves lower.
            assert_eq!(b.admit(1, 0, 3, 4_000), Admission::Admitted);
            let mut shared = 0;
            while !b.should_pause(1, 3) {
                assert!(shared < want(free - 10_000 - shared), "alpha {alpha}");
                assert_eq!(b.admit(1, 0, 3, 100), Admission::Admitted);
                shared += 100;
            }
            assert!(shared >= want(free - 10_000 - shared), "alpha {alpha}");
            assert!(shared > 50_000, "alpha {alpha}: paused at {shared}");
            // Past 2^53 free bytes a shift and the float product differ:
            // the threshold is the product's, as ns-3's float code gives.
            let mut c = cfg(true);
            c.pfc_alpha = alpha;
            c.size_bytes = (1 << 60) + 12_345;
            let b = SharedBuffer::new(c, &[(Rate::gbps(100), 1_000_000); 3]);
            let free = free_pool(&b);
            assert_eq!(b.pfc_threshold(2), want(free), "alpha {alpha}, 2^60 B");
        }
        fn free_pool(b: &SharedBuffer) -> u64 {
            b.cfg.size_bytes - b.set_aside_bytes()
        }
    }

    #[test]
    fn a_power_of_two_alpha_shifts_to_the_float_products_integer() {
        for value in [1.0, 0.5, 0.125, 1.0 / 1024.0, 0.3, 0.75, 2.0] {
            let a = Alpha::new(value);
            assert_eq!(
                a.shift != Alpha::NO_SHIFT,
                [1.0, 0.5, 0.125, 1.0 / 1024.0].contains(&value)
            );
            let mut free = 1u64;
            while free < 1 << 60 {
                for f in [free - 1, free, free + 1, free * 3 + 7] {
                    let want = (f as f64 * value) as u64;
                    assert_eq!(a.of(f), want, "alpha {value}, free {f}");
                }
                free = free * 5 / 2 + 1;
            }
        }
    }

    #[test]
    fn red_marks_linearly_between_kmin_and_kmax() {
        let e = EcnConfig {
            kmin_bytes: 100,
            kmax_bytes: 200,
            pmax: 0.5,
        };
        let mut rng = RngStream::new(1, "t");
        assert!(!e.should_mark(100, &mut rng));
        assert!(e.should_mark(201, &mut rng));
        let marks = (0..100_000)
            .filter(|_| e.should_mark(150, &mut rng))
            .count();
        assert!((24_000..26_000).contains(&marks), "{marks}");
    }
}
