//! Multipath routing selection (SCR appendix A.7, Fig. 19): the sender
//! probes several paths of a QP out of band and moves the QP's data to the
//! path with the lowest latency, leaving a path whose probes are lost.
//!
//! A path is a UDP source port: switches hash it into their ECMP choice, so
//! changing it moves the QP (MP-RDMA's virtual path id, which SCR enforces by
//! rewriting the RoCEv2 header in the NIC's flow engine).
//!
//! * Candidates: `paths` source ports per QP, either consecutive from
//!   `first_port` (SCR's 5101, 5102) or, with `first_port: 0`, a
//!   pseudo-random set in the RoCEv2 entropy range 49152–65535 derived from
//!   the QP, as MP-RDMA and PLB assign them. Two ports may hash to the same
//!   physical path; the controller does not know the topology.
//! * Every `probe_interval` every candidate is probed; the peer NIC answers.
//! * Per path, a smoothed RTT: srtt ← (1 − g)·srtt + g·rtt (`rtt_gain` = g).
//!   The first answer, and the first after a failure, sets srtt outright.
//! * A probe lost (no answer within `nic.probe_timeout`) marks its path
//!   failed; a later probe answered marks it alive again. A loss of a probe
//!   sent before the path's latest answered probe is stale (the path came
//!   back meanwhile) and ignored.
//! * The QP moves to the live path with the lowest srtt when that is below
//!   the current path's srtt by more than the fraction `hysteresis` (so it
//!   does not flap between paths of equal latency), comparing the two on the
//!   latest probe round both have answered (so an answer still on its way on
//!   a slower path does not count while the network's delay changes); when
//!   the current path fails it moves at once to the best live one. With no
//!   live path it stays.
//!
//! It sets no rate or window: the QP sends at line rate (window permitting),
//! like `none`. Moving a QP onto a faster path can reorder its packets (the
//! ones still in flight on the slower path arrive late); the receiver then
//! NACKs and the sender goes back N, as RoCE does.

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask, MAX_PROBES_PER_EVENT};
use crate::rng::stable_hash;
use crate::time::{Duration, Time};

/// Lowest and number of source ports a pseudo-random candidate may take
/// (49152–65535, the range RoCEv2 NICs draw source ports from for entropy).
const ENTROPY_FIRST: u32 = 49152;
const ENTROPY_PORTS: u32 = 16384;

pub const PARAMS: &[ParamSpec] = &[
    p::int(
        "paths",
        4.0,
        1.0,
        MAX_PROBES_PER_EVENT as f64,
        "candidate paths (UDP source ports) per QP, all probed each round",
        "rdmalab's choice: 4 random ports cover both spines of a 2-spine fabric 7 times in 8 (SCR Fig. 19b uses 2; at most 8 probes per event)",
    ),
    p::int(
        "first_port",
        0.0,
        0.0,
        (65536 - MAX_PROBES_PER_EVENT) as f64,
        "first of `paths` consecutive source ports; 0 draws a pseudo-random set from the QP",
        "SCR §A.7: random source ports as MP-RDMA and PLB; Fig. 19b probes 5101 and 5102",
    ),
    p::duration(
        "probe_interval",
        10.0 * p::US,
        1e3,
        1e12,
        "time between probe rounds",
        "rdmalab's choice: about one base RTT of a 2-tier fabric, so a failure is seen within probe_interval + nic.probe_timeout",
    ),
    p::float(
        "rtt_gain",
        0.25,
        0.01,
        1.0,
        "EWMA gain of the smoothed RTT per path (1: latest sample only)",
        "rdmalab's choice: follows a change within about 4 probes (TCP's srtt uses 1/8)",
    ),
    p::float(
        "hysteresis",
        0.1,
        0.0,
        1.0,
        "move only to a path whose smoothed RTT is lower than the current path's by more than this fraction",
        "rdmalab's choice: above probe jitter of a few packets at 100 Gb/s, below SCR Fig. 19b's 10 µs difference",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultipathParams {
    pub paths: u32,
    pub first_port: u32,
    pub probe_interval: Duration,
    pub rtt_gain: f64,
    pub hysteresis: f64,
}

impl MultipathParams {
    pub fn from_values(v: &ParamValues) -> Self {
        MultipathParams {
            paths: v.int("paths").clamp(1, MAX_PROBES_PER_EVENT as u32),
            first_port: v.int("first_port"),
            probe_interval: v.duration("probe_interval"),
            rtt_gain: v.get("rtt_gain"),
            hysteresis: v.get("hysteresis"),
        }
    }
}

impl Default for MultipathParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// Probe rounds remembered per path: enough to compare paths whose RTTs
/// differ by up to this many probe intervals on the same round (beyond, the
/// faster path's oldest remembered round stands in).
const HISTORY: usize = 16;

/// What the controller knows of one candidate path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathState {
    pub udp_sport: u16,
    /// Smoothed probe RTT, ps (`None` until the first answer).
    pub srtt_ps: Option<f64>,
    /// Its latest probe was lost.
    pub failed: bool,
    /// When the latest answered probe on it was sent (to spot stale losses).
    answered_sent: Option<Time>,
    /// (probe round = send time, srtt after its answer), the latest `HISTORY`.
    history: [(Time, f64); HISTORY],
    recorded: usize,
}

impl PathState {
    fn new(udp_sport: u16) -> Self {
        PathState {
            udp_sport,
            srtt_ps: None,
            failed: false,
            answered_sent: None,
            history: [(Time::NEVER, 0.0); HISTORY],
            recorded: 0,
        }
    }

    fn remember(&mut self, round: Time, srtt: f64) {
        self.history[self.recorded % HISTORY] = (round, srtt);
        self.recorded += 1;
    }

    /// The srtt as known from the probes sent up to `round`; if those have
    /// left the history, the oldest remembered; `None` if it first answered
    /// (or answered again after failing) a later round.
    fn srtt_as_of(&self, round: Time) -> Option<f64> {
        let h = &self.history[..self.recorded.min(HISTORY)];
        let known = h.iter().filter(|e| e.0 <= round).max_by_key(|e| e.0);
        let forgotten = || {
            h.iter()
                .min_by_key(|e| e.0)
                .filter(|_| self.recorded > HISTORY)
        };
        known.or_else(forgotten).map(|e| e.1)
    }

    /// Both paths' srtt as of the latest probe round both have answered.
    fn compare(&self, other: &PathState) -> Option<(f64, f64)> {
        let round = self.answered_sent?.min(other.answered_sent?);
        Some((self.srtt_as_of(round)?, other.srtt_as_of(round)?))
    }
}

#[derive(Clone, Debug)]
pub struct Multipath {
    p: MultipathParams,
    paths: Vec<PathState>,
    /// Index in `paths` of the path the QP's data uses.
    current: usize,
    moves: u32,
}

impl Multipath {
    pub fn new(p: MultipathParams) -> Self {
        Multipath {
            p,
            paths: Vec::new(),
            current: 0,
            moves: 0,
        }
    }

    pub fn paths(&self) -> &[PathState] {
        &self.paths
    }

    /// The source port the QP's data uses.
    pub fn current_port(&self) -> Option<u16> {
        self.paths.get(self.current).map(|s| s.udp_sport)
    }

    /// How many times the QP was moved.
    pub fn moves(&self) -> u32 {
        self.moves
    }

    /// The candidate source ports of QP `qp` whose own port is `sport`.
    pub fn candidates(p: &MultipathParams, qp: u32, sport: u16) -> Vec<u16> {
        if p.first_port > 0 {
            return (0..p.paths).map(|i| (p.first_port + i) as u16).collect();
        }
        let mut ports: Vec<u16> = Vec::with_capacity(p.paths as usize);
        let mut attempt = 0u32;
        while ports.len() < p.paths as usize {
            let h = stable_hash(format!("multipath/{qp}/{sport}/{attempt}").as_bytes());
            let port = (ENTROPY_FIRST + (h % ENTROPY_PORTS as u64) as u32) as u16;
            if !ports.contains(&port) {
                ports.push(port);
            }
            attempt += 1;
        }
        ports
    }

    fn probe_all(&self, ctx: &mut CcContext) {
        for s in &self.paths {
            ctx.request_probe(s.udp_sport);
        }
    }

    /// The live path with the lowest smoothed RTT (lowest index on a tie).
    fn best_live(&self) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, s) in self.paths.iter().enumerate() {
            if let (false, Some(r)) = (s.failed, s.srtt_ps) {
                if best.map_or(true, |(_, b)| r < b) {
                    best = Some((i, r));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// The live path that beats the current one by more than the hysteresis,
    /// compared on the latest probe round both answered (a path whose answer
    /// is still on its way would look better or worse than it is while the
    /// network's delay changes); the lowest srtt then wins.
    fn better_than_current(&self) -> Option<usize> {
        let cur = &self.paths[self.current];
        let mut best: Option<(usize, f64)> = None;
        for (i, s) in self.paths.iter().enumerate() {
            if i == self.current || s.failed {
                continue;
            }
            let Some((mine, theirs)) = cur.compare(s) else {
                continue;
            };
            if theirs < mine * (1.0 - self.p.hysteresis) && best.map_or(true, |(_, b)| theirs < b) {
                best = Some((i, theirs));
            }
        }
        best.map(|(i, _)| i)
    }

    fn select(&mut self, ctx: &mut CcContext) {
        // A failed path is left at once for the best live one.
        let to = if self.paths[self.current].failed {
            self.best_live()
        } else {
            self.better_than_current()
        };
        if let Some(b) = to.filter(|&b| b != self.current) {
            self.current = b;
            self.moves += 1;
            ctx.set_path(self.paths[b].udp_sport);
        }
    }

    fn on_probe(&mut self, sport: u16, sent: Time, rtt: Duration, lost: bool) -> bool {
        let Some(s) = self.paths.iter_mut().find(|s| s.udp_sport == sport) else {
            return false;
        };
        if lost {
            if s.answered_sent.is_some_and(|t| sent < t) {
                return false; // a later probe on this path was answered
            }
            // What it measured before failing says nothing about it once back.
            s.failed = true;
            s.recorded = 0;
        } else {
            let r = rtt.ps() as f64;
            s.srtt_ps = Some(match s.srtt_ps {
                Some(old) if !s.failed => old + self.p.rtt_gain * (r - old),
                _ => r,
            });
            s.failed = false;
            s.answered_sent = Some(s.answered_sent.map_or(sent, |t| t.max(sent)));
            s.remember(sent, s.srtt_ps.expect("just set"));
        }
        true
    }
}

impl Controller for Multipath {
    fn name(&self) -> &str {
        "multipath"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RTT)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.paths = Self::candidates(&self.p, ctx.qp, ctx.udp_sport)
            .into_iter()
            .map(PathState::new)
            .collect();
        self.current = 0;
        ctx.set_path(self.paths[0].udp_sport);
        self.probe_all(ctx);
        ctx.set_timer(0, ctx.now + self.p.probe_interval);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Timer { slot: 0 } => {
                self.probe_all(ctx);
                ctx.set_timer(0, ctx.now + self.p.probe_interval);
            }
            CcEvent::Rtt {
                udp_sport,
                sent,
                rtt,
                lost,
            } => {
                if self.on_probe(udp_sport, sent, rtt, lost) {
                    self.select(ctx);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;
    use crate::time::Rate;

    fn params(first_port: u32, paths: u32) -> MultipathParams {
        MultipathParams {
            paths,
            first_port,
            ..MultipathParams::default()
        }
    }

    fn started(p: MultipathParams) -> (Multipath, Actions) {
        let mut m = Multipath::new(p);
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, Rate::gbps(100), Rate::gbps(100), 0, &mut a);
        ctx.qp = 3;
        ctx.udp_sport = 10000;
        m.on_start(&mut ctx);
        (m, a)
    }

    /// Deliver a probe report at `now_us`; returns the path set, if any.
    fn report(m: &mut Multipath, now_us: f64, sport: u16, rtt_us: f64, lost: bool) -> Option<u16> {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(
            Time((now_us * 1e6) as u64),
            Rate::gbps(100),
            Rate::gbps(100),
            0,
            &mut a,
        );
        let sent = Time(((now_us - rtt_us) * 1e6) as u64);
        m.on_event(
            &CcEvent::Rtt {
                udp_sport: sport,
                sent,
                rtt: Duration((rtt_us * 1e6) as u64),
                lost,
            },
            &mut ctx,
        );
        a.path
    }

    /// The probe sent at `sent_us` on `sport` is answered after `rtt_us`.
    fn answer(m: &mut Multipath, sent_us: f64, sport: u16, rtt_us: f64) -> Option<u16> {
        report(m, sent_us + rtt_us, sport, rtt_us, false)
    }

    /// The probe sent at `sent_us` on `sport` is declared lost 100 µs later.
    fn loss(m: &mut Multipath, sent_us: f64, sport: u16) -> Option<u16> {
        report(m, sent_us + 100.0, sport, 100.0, true)
    }

    #[test]
    fn start_probes_every_candidate_and_uses_the_first() {
        let (m, a) = started(params(5101, 2));
        assert_eq!(a.path, Some(5101));
        assert_eq!(&a.probes[..a.probe_count as usize], &[5101, 5102]);
        assert_eq!(a.timers[0], Some(Some(Time(10_000_000))));
        assert_eq!(m.current_port(), Some(5101));
    }

    #[test]
    fn random_candidates_are_distinct_deterministic_and_in_the_entropy_range() {
        let p = params(0, 8);
        let a = Multipath::candidates(&p, 7, 10000);
        assert_eq!(a, Multipath::candidates(&p, 7, 10000));
        assert_ne!(
            a,
            Multipath::candidates(&p, 8, 10000),
            "another QP draws other ports"
        );
        let set: std::collections::BTreeSet<_> = a.iter().collect();
        assert_eq!(set.len(), 8);
        assert!(a.iter().all(|&x| x >= 49152));
    }

    #[test]
    fn moves_to_a_faster_path_only_beyond_the_hysteresis() {
        let (mut m, _) = started(params(5101, 2));
        assert_eq!(answer(&mut m, 0.0, 5101, 8.0), None);
        // 5102 at 7.5 µs is less than 10 % faster: stay.
        assert_eq!(answer(&mut m, 0.0, 5102, 7.5), None);
        assert_eq!(answer(&mut m, 10.0, 5101, 8.0), None);
        // A 6 µs answer brings its srtt to 7.125 µs, below 8 × 0.9: move.
        assert_eq!(answer(&mut m, 10.0, 5102, 6.0), Some(5102));
        assert_eq!(m.moves(), 1);
    }

    #[test]
    fn paths_are_compared_only_on_answers_to_the_same_round() {
        let (mut m, _) = started(params(5101, 2));
        answer(&mut m, 0.0, 5101, 8.0);
        answer(&mut m, 0.0, 5102, 8.0);
        // Delay grows: the current path's answer to round 10 comes first and
        // makes it look twice as slow as 5102, whose answer is still on its way.
        assert_eq!(answer(&mut m, 10.0, 5101, 40.0), None);
        // 5102's answer is as bad: srtt 16 vs 16, no move.
        assert_eq!(answer(&mut m, 10.0, 5102, 40.0), None);
        assert_eq!(m.moves(), 0);
    }

    #[test]
    fn paths_further_apart_than_the_history_are_still_compared() {
        // Probes every 1 µs; the current path takes 40 µs, the other 8 µs:
        // the other has answered 32 more rounds by the time the current
        // path's first answer comes back.
        let (mut m, _) = started(MultipathParams {
            probe_interval: Duration::from_us(1),
            ..params(5101, 2)
        });
        let mut events: Vec<(f64, u16, f64)> = Vec::new();
        for r in 0..60 {
            events.push((r as f64 + 40.0, 5101, 40.0));
            events.push((r as f64 + 8.0, 5102, 8.0));
        }
        events.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let moved: Vec<Option<u16>> = events
            .iter()
            .map(|&(t, port, rtt)| report(&mut m, t, port, rtt, false))
            .collect();
        assert_eq!(
            moved.iter().flatten().collect::<Vec<_>>(),
            vec![&5102],
            "one move, to the faster path"
        );
        assert_eq!(m.current_port(), Some(5102));
    }

    #[test]
    fn a_lost_probe_on_the_current_path_moves_at_once_and_recovery_moves_back() {
        let (mut m, _) = started(params(5101, 2));
        answer(&mut m, 0.0, 5101, 8.0);
        answer(&mut m, 0.0, 5102, 18.0);
        assert_eq!(
            loss(&mut m, 10.0, 5101),
            Some(5102),
            "failed: to the slower live path"
        );
        assert!(m.paths()[0].failed);
        // Recovery: a fresh answer sets srtt outright; the QP moves back once
        // the current path has answered the same round.
        assert_eq!(answer(&mut m, 200.0, 5101, 8.0), None);
        assert_eq!(m.paths()[0].srtt_ps, Some(8e6));
        assert_eq!(answer(&mut m, 200.0, 5102, 18.0), Some(5101));
    }

    #[test]
    fn a_stale_loss_after_recovery_is_ignored() {
        let (mut m, _) = started(params(5101, 2));
        answer(&mut m, 0.0, 5101, 8.0);
        answer(&mut m, 0.0, 5102, 18.0);
        answer(&mut m, 200.0, 5101, 8.0);
        // The probe sent at 150 µs, before the one answered, is declared lost at 250 µs.
        assert_eq!(loss(&mut m, 150.0, 5101), None);
        assert!(!m.paths()[0].failed);
    }

    #[test]
    fn with_every_path_failed_it_stays_put() {
        let (mut m, _) = started(params(5101, 2));
        answer(&mut m, 0.0, 5101, 8.0);
        answer(&mut m, 0.0, 5102, 9.0);
        assert_eq!(loss(&mut m, 10.0, 5102), None);
        assert_eq!(loss(&mut m, 10.0, 5101), None);
        assert_eq!(m.current_port(), Some(5101));
        assert_eq!(
            answer(&mut m, 300.0, 5102, 9.0),
            Some(5102),
            "the first path back takes the QP"
        );
    }
}
