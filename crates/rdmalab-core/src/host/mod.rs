//! The host side of posting work: application threads pinned to cores ring
//! doorbells through the NIC's UAR pages (SwiftRDMA §3.1).
//!
//! A ConnectX-6 device context exposes 16 UAR pages; every QP is bound to
//! one, and a doorbell is an MMIO write to its page under the page's lock.
//! Doorbells to one page are serialised; when the page's lock (and its cache
//! line) was last held by another core, the write also pays a transfer
//! between cores. QPs driven by different cores on one page therefore slow
//! each other, which is the contention UAR-aware placement removes. The
//! model is off unless a scenario sets `host.uar`.

pub mod config;
pub mod policy;
pub mod scheduler;

use crate::time::{Duration, Time};

/// How QPs are bound to UAR pages when they are created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UarPlacement {
    /// The host's QPs in creation order, page by page (one driver default).
    RoundRobin,
    /// A page drawn at random for each QP (the other default SwiftRDMA
    /// names), from the run's seeded stream.
    Random,
    /// SwiftRDMA's UAR-aware placement: each core's QPs on that core's own
    /// page (a resource domain per core), core c on page c mod pages.
    PerCore,
    /// Every QP on one page: the worst case of sharing.
    Single,
}

/// `host.uar`: the pages and what a doorbell costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UarConfig {
    /// UAR pages per device context (CX-6: 16, SwiftRDMA §3.1).
    pub pages: u32,
    pub placement: UarPlacement,
    /// A core's work per post before it rings (outside the page's lock).
    pub post: Duration,
    /// Time a doorbell holds its page: lock, MMIO write, unlock.
    pub doorbell: Duration,
    /// Extra when the page was last rung from another core (the lock's cache
    /// line moves between cores).
    pub bounce: Duration,
}

/// Doorbell state of one host's NIC context.
#[derive(Clone, Debug)]
pub struct UarPages {
    free_at: Vec<Time>,
    last_core: Vec<u32>,
    /// When each core is free to ring its next doorbell.
    core_free_at: std::collections::BTreeMap<u32, Time>,
    /// QPs bound so far (round-robin placement).
    bound: u64,
    rng: crate::rng::RngStream,
    pub doorbells: u64,
    pub bounces: u64,
    /// Time doorbells waited for their page held by another core's doorbell.
    pub wait_ps: u64,
}

/// When a doorbell went through and what it waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rung {
    pub done: Time,
    pub waited: Duration,
}

impl UarPlacement {
    pub const NAMES: &'static [&'static str] = &["round-robin", "random", "per-core", "single"];

    pub fn parse(s: &str) -> Option<UarPlacement> {
        Some(match s {
            "round-robin" => UarPlacement::RoundRobin,
            "random" => UarPlacement::Random,
            "per-core" => UarPlacement::PerCore,
            "single" => UarPlacement::Single,
            _ => return None,
        })
    }
}

impl UarPages {
    /// `rng`: the stream random placement draws from (one per host).
    pub fn new(cfg: &UarConfig, rng: crate::rng::RngStream) -> Self {
        let n = cfg.pages.max(1) as usize;
        UarPages {
            free_at: vec![Time::ZERO; n],
            last_core: vec![u32::MAX; n],
            core_free_at: Default::default(),
            bound: 0,
            rng,
            doorbells: 0,
            bounces: 0,
            wait_ps: 0,
        }
    }

    /// The page a new QP driven by `core` is bound to.
    pub fn bind(&mut self, cfg: &UarConfig, core: u32) -> u32 {
        self.place(cfg, cfg.placement, core)
    }

    /// The page `placement` gives a QP driven by `core` (at creation, or when
    /// a host policy moves it: SwiftRDMA's QP-to-UAR migration).
    pub fn place(&mut self, cfg: &UarConfig, placement: UarPlacement, core: u32) -> u32 {
        let page = match placement {
            UarPlacement::RoundRobin => (self.bound % cfg.pages as u64) as u32,
            UarPlacement::Random => self.rng.below(cfg.pages as u64) as u32,
            UarPlacement::PerCore => core % cfg.pages,
            UarPlacement::Single => 0,
        };
        self.bound += 1;
        page
    }

    /// `core` posts at `at` (or when the core is free): after `post` of its
    /// own work the doorbell takes the page when its lock is free, holds it
    /// for `doorbell` (plus `bounce` if another core rang it last), and the
    /// core with it.
    pub fn ring(&mut self, cfg: &UarConfig, core: u32, page: u32, at: Time) -> Rung {
        let p = page as usize;
        let ready = at.max(self.core_free_at.get(&core).copied().unwrap_or(Time::ZERO)) + cfg.post;
        let start = ready.max(self.free_at[p]);
        let moved = self.last_core[p] != u32::MAX && self.last_core[p] != core;
        let hold = cfg.doorbell + if moved { cfg.bounce } else { Duration::ZERO };
        let done = start + hold;
        self.free_at[p] = done;
        self.last_core[p] = core;
        self.core_free_at.insert(core, done);
        self.doorbells += 1;
        self.bounces += moved as u64;
        self.wait_ps += (start - ready).ps();
        Rung {
            done,
            waited: start - ready,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(placement: UarPlacement) -> UarConfig {
        UarConfig {
            pages: 16,
            placement,
            post: Duration::ZERO,
            doorbell: Duration::from_ns(100),
            bounce: Duration::from_ns(200),
        }
    }

    #[test]
    fn one_core_never_waits_for_its_page() {
        let c = cfg(UarPlacement::Single);
        let mut u = UarPages::new(&c, crate::rng::RngStream::new(1, "uar"));
        let t = Time::ZERO;
        let a = u.ring(&c, 0, 0, t);
        let b = u.ring(&c, 0, 0, t);
        assert_eq!(a.done, t + Duration::from_ns(100));
        assert_eq!(
            b.done,
            t + Duration::from_ns(200),
            "the core rings one after the other, no bounce"
        );
        assert_eq!((u.wait_ps, u.bounces), (0, 0));
    }

    #[test]
    fn two_cores_on_one_page_wait_and_bounce() {
        let c = cfg(UarPlacement::Single);
        let mut u = UarPages::new(&c, crate::rng::RngStream::new(1, "uar"));
        u.ring(&c, 0, 0, Time::ZERO);
        let b = u.ring(&c, 1, 0, Time::ZERO);
        assert_eq!(
            b.waited,
            Duration::from_ns(100),
            "waits for core 0's doorbell"
        );
        assert_eq!(
            b.done,
            Time::ZERO + Duration::from_ns(400),
            "then holds the page 100 + 200 ns"
        );
        assert_eq!(u.bounces, 1);
        // On their own pages the same two doorbells go through together.
        let c = cfg(UarPlacement::PerCore);
        let mut u = UarPages::new(&c, crate::rng::RngStream::new(1, "uar"));
        let (p0, p1) = (u.bind(&c, 0), u.bind(&c, 1));
        assert_ne!(p0, p1);
        u.ring(&c, 0, p0, Time::ZERO);
        let b = u.ring(&c, 1, p1, Time::ZERO);
        assert_eq!(
            (b.waited, b.done, u.bounces),
            (Duration::ZERO, Time::ZERO + Duration::from_ns(100), 0)
        );
    }

    #[test]
    fn placements_bind_as_documented() {
        let c = cfg(UarPlacement::RoundRobin);
        let mut u = UarPages::new(&c, crate::rng::RngStream::new(1, "uar"));
        let pages: Vec<u32> = (0..18).map(|i| u.bind(&c, i % 3)).collect();
        assert_eq!(&pages[..3], &[0, 1, 2]);
        assert_eq!(pages[16], 0);
        let c = cfg(UarPlacement::PerCore);
        let mut u = UarPages::new(&c, crate::rng::RngStream::new(1, "uar"));
        assert_eq!(u.bind(&c, 17), 1);
    }
}
