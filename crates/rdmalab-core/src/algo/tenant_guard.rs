//! Tenant guard: a defense against the attacks of Snyder et al. ("RDMA
//! Congestion Control: It's Only for the Compliant") that needs no change
//! to how the NIC enforces CC. It is DCQCN plus a receiver that watches
//! each tenant's share of its port and pushes back on the tenant that
//! takes more than an equal share while the port is busy.
//!
//! Per-QP CC cannot see tenants: the parallel, staggered and shuffled
//! attacks all get past it. The sending NIC sees only its own QPs (an
//! attacker on many hosts escapes `nic.cc_scope: tenant`). The receiver
//! sees every byte of every tenant that reaches its port, whatever QP,
//! source or overlay carried it.
//!
//! * Receiver end, shared by all QPs of a receiving NIC: every RX event
//!   adds its payload to its tenant's count. An RX event at least
//!   `interval` after the start of the window closes it. If the payload that
//!   arrived filled at least `threshold` of the line, each tenant whose
//!   payload exceeded (1 + `tolerance`) × an equal share of it (total /
//!   tenants seen) is over, by the ratio equal share / its payload. While
//!   its tenant is over, a QP's RX event sends its sender a notice out of
//!   band carrying that ratio and how many QPs of the tenant arrived in the
//!   window, at most one per `notice_interval`.
//! * Sender end: DCQCN runs as usual; the guard adds a cap. A notice cuts
//!   the cap to the ratio × the QP's current rate (not below `min_rate`):
//!   every QP of the tenant shrinks alike, so the tenant as a whole lands on
//!   an equal share however many QPs it spreads over. Every `ai_interval`
//!   without a notice the cap grows by `ai` / (the tenant's QPs), so the
//!   tenant as a whole, not each QP, regains `ai` per interval, until the
//!   cap reaches the line. The QP's rate is min(DCQCN's, cap).
//!
//! An equal share is the fair share only when every tenant wants at least
//! that much: a tenant whose demand is small leaves the rest idle, the
//! other is pushed back while the port is busy, and AI lets it take the
//! idle share again. The guard never cuts a tenant below an equal share:
//! it only acts on tenants above it.

use super::dcqcn::{Dcqcn, DcqcnParams};
use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// First word of a guard notice ("TGRD").
pub const NOTICE_TAG: u32 = 0x5447_5244;

/// Timer slot of the cap's additive increase (DCQCN uses slots 0 and 1).
const AI_SLOT: usize = 2;

pub const PARAMS: &[ParamSpec] = &[
    p::duration("interval", 20.0 * p::US, 1.0, 1e12, "receiver's measurement window", "rdmalab choice: about two RTTs of the paper's fat-tree (13 µs), as SCR's receiver-driven loops use 20 µs"),
    p::float("threshold", 0.8, 0.01, 2.0, "payload arrivals, as a fraction of line rate, at which the port counts as busy", "rdmalab choice: below the 92 % payload share a line-rate flow reaches, so one saturating tenant is seen"),
    p::float("tolerance", 0.1, 0.0, 10.0, "how far above an equal share a tenant may go before it is over", "rdmalab choice: DCQCN's own unfairness between two flows stays within 10 %"),
    p::duration("notice_interval", 40.0 * p::US, 0.0, 1e12, "smallest gap between two notices of one QP", "rdmalab choice: two windows, so a decrease shows before the next notice"),
    p::rate("ai", 1.0 * p::GBPS, 1.0, 1e13, "additive increase of the cap per ai_interval", "rdmalab choice: 1 % of 100 Gb/s, as receiver-backpressure"),
    p::duration("ai_interval", 20.0 * p::US, 1.0, 1e12, "period of the cap's additive increase", "rdmalab choice: one measurement interval"),
    p::rate("min_rate", 1.0 * p::GBPS, 1.0, 1e13, "cap floor", "rdmalab choice, as DCQCN's min_rate in ns-3 run.py"),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantGuardParams {
    pub dcqcn: DcqcnParams,
    pub interval: Duration,
    pub threshold: f64,
    pub tolerance: f64,
    pub notice_interval: Duration,
    pub ai: Rate,
    pub ai_interval: Duration,
    pub min_rate: Rate,
}

impl TenantGuardParams {
    pub fn from_values(v: &ParamValues) -> Self {
        TenantGuardParams {
            // The DCQCN underneath runs with its defaults.
            dcqcn: DcqcnParams::from_values(&ParamValues::defaults(super::dcqcn::PARAMS)),
            interval: v.duration("interval"),
            threshold: v.get("threshold"),
            tolerance: v.get("tolerance"),
            notice_interval: v.duration("notice_interval"),
            ai: v.rate("ai"),
            ai_interval: v.duration("ai_interval"),
            min_rate: v.rate("min_rate"),
        }
    }
}

/// What a receiving NIC knows of its tenants.
#[derive(Debug, Default)]
pub struct TenantLedger {
    window_start: Option<Time>,
    /// Payload per tenant in the open window, and the QPs it came on.
    bytes: BTreeMap<u32, (u64, Vec<u32>)>,
    /// Tenants found over their share when the last window closed, with
    /// equal share / their payload and their QP count.
    over: Vec<(u32, f64, u32)>,
    /// Windows closed, and how many found a tenant over.
    pub windows: u64,
    pub windows_over: u64,
}

impl TenantLedger {
    /// Count `bytes` of `tenant`; close the window if it is `interval` old.
    fn on_rx(
        &mut self,
        now: Time,
        tenant: u32,
        qp: u32,
        bytes: u64,
        line: Rate,
        p: &TenantGuardParams,
    ) {
        let start = *self.window_start.get_or_insert(now);
        if now - start >= p.interval {
            let total: u64 = self.bytes.values().map(|b| b.0).sum();
            let busy = total as f64 * 8.0
                >= p.threshold * line.bps() as f64 * (now - start).ps() as f64 / 1e12;
            self.over.clear();
            if busy && self.bytes.len() > 1 {
                let equal = total as f64 / self.bytes.len() as f64;
                self.over.extend(
                    self.bytes
                        .iter()
                        .filter(|(_, b)| b.0 as f64 > equal * (1.0 + p.tolerance))
                        .map(|(&t, b)| (t, equal / b.0 as f64, b.1.len() as u32)),
                );
            }
            self.windows += 1;
            self.windows_over += !self.over.is_empty() as u64;
            self.bytes.clear();
            self.window_start = Some(now);
        }
        let e = self.bytes.entry(tenant).or_default();
        e.0 += bytes;
        if !e.1.contains(&qp) {
            e.1.push(qp);
        }
    }

    /// Equal share / the tenant's payload, and its QPs, if it was over its share.
    pub fn over(&self, tenant: u32) -> Option<(f64, u32)> {
        self.over.iter().find(|o| o.0 == tenant).map(|o| (o.1, o.2))
    }
}

/// Ledgers by receiving node, shared by the guards of one run.
pub type GuardTables = Rc<RefCell<BTreeMap<u32, TenantLedger>>>;

/// Both ends of one QP.
#[derive(Debug)]
pub struct TenantGuard {
    p: TenantGuardParams,
    dcqcn: Dcqcn,
    ledgers: GuardTables,
    // Receiver end.
    last_notice: Option<Time>,
    notices_sent: u64,
    // Sender end.
    dcqcn_rate: Rate,
    cap: Rate,
    /// The tenant's QPs the last notice reported: the cap grows by `ai` / this.
    tenant_qps: u32,
    next_increase: Time,
    notices_received: u64,
}

impl TenantGuard {
    pub fn new(p: TenantGuardParams, ledgers: GuardTables) -> Self {
        TenantGuard {
            p,
            dcqcn: Dcqcn::new(p.dcqcn),
            ledgers,
            last_notice: None,
            notices_sent: 0,
            dcqcn_rate: Rate(0),
            cap: Rate(0),
            tenant_qps: 1,
            next_increase: Time::ZERO,
            notices_received: 0,
        }
    }

    pub fn notices_sent(&self) -> u64 {
        self.notices_sent
    }

    pub fn notices_received(&self) -> u64 {
        self.notices_received
    }

    fn emit(&self, ctx: &mut CcContext) {
        ctx.set_rate(self.dcqcn_rate.min(self.cap));
    }
}

impl Controller for TenantGuard {
    fn name(&self) -> &str {
        "tenant-guard"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(self.dcqcn.subscriptions().0 | EventMask::RX | EventMask::PEER)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.dcqcn.on_start(ctx);
        self.dcqcn_rate = ctx.line_rate;
        self.cap = ctx.line_rate;
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Rx { bytes, .. } => {
                let over = {
                    let mut t = self.ledgers.borrow_mut();
                    let ledger = t.entry(ctx.nic.node).or_default();
                    ledger.on_rx(
                        ctx.now,
                        ctx.tenant,
                        ctx.qp,
                        bytes as u64,
                        ctx.line_rate,
                        &self.p,
                    );
                    ledger.over(ctx.tenant)
                };
                let due = self
                    .last_notice
                    .is_none_or(|t| ctx.now - t >= self.p.notice_interval);
                if let (Some((ratio, qps)), true) = (over, due) {
                    self.last_notice = Some(ctx.now);
                    self.notices_sent += 1;
                    let permille = (ratio * 1000.0).round() as u32;
                    ctx.send_oob([NOTICE_TAG, qps, ctx.tenant, permille]);
                }
            }
            CcEvent::Peer {
                words: [NOTICE_TAG, qps, _, permille],
                to_receiver: false,
            } => {
                self.notices_received += 1;
                self.tenant_qps = qps.max(1);
                let current = self.dcqcn_rate.min(self.cap);
                let ratio = (permille as f64 / 1000.0).clamp(0.0, 1.0);
                self.cap = current.scale(ratio).max(self.p.min_rate.min(ctx.line_rate));
                self.emit(ctx);
                self.next_increase = ctx.now + self.p.ai_interval;
                ctx.set_timer(AI_SLOT, self.next_increase);
            }
            CcEvent::Timer { slot } if slot as usize == AI_SLOT => {
                self.cap = Rate(self.cap.bps() + self.p.ai.bps() / self.tenant_qps as u64)
                    .min(ctx.line_rate);
                self.emit(ctx);
                if self.cap < ctx.line_rate {
                    self.next_increase = self.next_increase + self.p.ai_interval;
                    ctx.set_timer(AI_SLOT, self.next_increase);
                }
            }
            _ => {
                self.dcqcn.on_event(ev, ctx);
                if let Some(r) = ctx.pending_rate() {
                    self.dcqcn_rate = r;
                    self.emit(ctx);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, NicFacts};

    const LINE: Rate = Rate::gbps(100);

    fn guard(tables: &GuardTables) -> TenantGuard {
        let mut g = TenantGuard::new(
            TenantGuardParams::from_values(&ParamValues::defaults(PARAMS)),
            tables.clone(),
        );
        let mut a = Actions::default();
        g.on_start(&mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a));
        g
    }

    /// An RX event of `bytes` for `tenant` at `us` on node 7.
    fn rx(g: &mut TenantGuard, us: u64, tenant: u32, bytes: u32) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time(us * 1_000_000), LINE, LINE, 0, &mut a);
        ctx.at_receiver = true;
        ctx.tenant = tenant;
        ctx.qp = tenant * 100 + (us as u32 % 3);
        ctx.nic = NicFacts {
            node: 7,
            ..Default::default()
        };
        g.on_event(
            &CcEvent::Rx {
                bytes,
                packets: 1,
                ce: false,
            },
            &mut ctx,
        );
        a
    }

    #[test]
    fn a_tenant_above_an_equal_share_of_a_busy_port_gets_notices() {
        let tables = GuardTables::default();
        let (mut a, mut v) = (guard(&tables), guard(&tables));
        // 20 µs at 100 Gb/s = 250 KB: the attacker 180 KB, the victim 60 KB (96 % busy).
        for i in 0..18 {
            assert_eq!(
                rx(&mut a, i, 0, 10_000).oob,
                None,
                "no verdict before the window closes"
            );
        }
        for i in 0..6 {
            rx(&mut v, i, 1, 10_000);
        }
        let notice = rx(&mut a, 20, 0, 1000).oob.expect("over its share");
        // Equal share 120 KB of its 180 KB: cut to 2/3.
        assert_eq!(
            notice,
            [NOTICE_TAG, 3, 0, 667],
            "tag, the tenant's 3 QPs, tenant, cut to 2/3"
        );
        assert_eq!(rx(&mut v, 21, 1, 1000).oob, None, "under its share");
        assert_eq!(
            rx(&mut a, 22, 0, 1000).oob,
            None,
            "at most one per notice_interval"
        );
        let ledgers = tables.borrow();
        assert_eq!((ledgers[&7].windows, ledgers[&7].windows_over), (1, 1));
    }

    /// A tenant within `tolerance` (10 %) of an equal share is not over it;
    /// one just past it is. Ignoring the tolerance fails the first half.
    #[test]
    fn a_tenant_within_the_tolerance_of_an_equal_share_gets_none() {
        for (mine, theirs, over) in [(13, 11, false), (14, 10, true)] {
            let tables = GuardTables::default();
            let (mut a, mut v) = (guard(&tables), guard(&tables));
            // 240 KB in 20 µs (96 % busy); equal share 120 KB: 130 KB is
            // 8.3 % above it, 140 KB 16.7 %.
            for i in 0..mine {
                rx(&mut a, i, 0, 10_000);
            }
            for i in 0..theirs {
                rx(&mut v, i, 1, 10_000);
            }
            let notice = rx(&mut a, 20, 0, 1000).oob;
            assert_eq!(
                notice.is_some(),
                over,
                "{mine}0 KB against {theirs}0 KB: {notice:?}"
            );
        }
    }

    #[test]
    fn a_quiet_port_or_a_lone_tenant_gets_none() {
        let tables = GuardTables::default();
        let (mut a, mut v) = (guard(&tables), guard(&tables));
        // 60 KB + 20 KB in 20 µs: 32 % busy.
        for i in 0..6 {
            rx(&mut a, i, 0, 10_000);
        }
        rx(&mut v, 7, 1, 20_000);
        assert_eq!(rx(&mut a, 20, 0, 1000).oob, None);
        // One tenant alone at line rate is nobody's problem.
        let tables = GuardTables::default();
        let mut a = guard(&tables);
        for i in 0..25 {
            rx(&mut a, i, 0, 10_000);
        }
        assert_eq!(rx(&mut a, 40, 0, 1000).oob, None);
    }

    #[test]
    fn the_cap_cuts_below_dcqcn_and_grows_back_to_the_line() {
        let tables = GuardTables::default();
        let mut g = guard(&tables);
        let notice = CcEvent::Peer {
            words: [NOTICE_TAG, 2, 0, 700],
            to_receiver: false,
        };
        let mut a = Actions::default();
        g.on_event(
            &notice,
            &mut CcContext::new(Time(1_000_000), LINE, LINE, 0, &mut a),
        );
        assert_eq!(a.rate, Some(Rate::gbps(70)));
        assert_eq!(a.timers[AI_SLOT], Some(Some(Time(21_000_000))));
        // A CNP: DCQCN keeps the line on the first one, so the cap rules;
        // its first decrease (α = 1) halves its rate, below the cap.
        let mut a = Actions::default();
        g.on_event(
            &CcEvent::Cnp,
            &mut CcContext::new(Time(2_000_000), LINE, Rate::gbps(70), 0, &mut a),
        );
        assert_eq!(a.rate, Some(Rate::gbps(70)));
        let Some(Some(check)) = a.timers[0] else {
            panic!("DCQCN arms its decrease check")
        };
        let mut a = Actions::default();
        g.on_event(
            &CcEvent::Timer { slot: 0 },
            &mut CcContext::new(check, LINE, Rate::gbps(70), 0, &mut a),
        );
        let cut = a.rate.expect("DCQCN's decrease");
        assert!(
            cut < Rate::gbps(70) && cut > Rate::gbps(45),
            "{cut:?}: about half the line, under the cap"
        );
        // The cap climbs back by 1 Gb/s / 2 QPs per tick and stops at the line.
        let mut a = Actions::default();
        g.on_event(
            &CcEvent::Timer {
                slot: AI_SLOT as u8,
            },
            &mut CcContext::new(Time(21_000_000), LINE, LINE, 0, &mut a),
        );
        assert_eq!(a.rate, Some(cut.min(Rate::mbps(70_500))));
        let mut last = Actions::default();
        for i in 1..80 {
            last = Actions::default();
            let t = Time((21 + 20 * i) * 1_000_000);
            g.on_event(
                &CcEvent::Timer {
                    slot: AI_SLOT as u8,
                },
                &mut CcContext::new(t, LINE, LINE, 0, &mut last),
            );
        }
        assert_eq!(last.timers[AI_SLOT], None, "the cap reached the line");
        assert_eq!(last.rate, Some(cut), "DCQCN's rate rules again");
    }
}
