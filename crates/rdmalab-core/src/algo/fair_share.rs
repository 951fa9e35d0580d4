//! Fair QP scheduling on the NIC (SCR §5.1, host domain, TX events): the
//! knob is each QP's dequeue rate, the signal the TX events of every QP of
//! the NIC. Two policies against the RNIC's default scheduler:
//!
//! * `fair-static`: every flow gets capacity / n, never below `min_rate`.
//! * `water-filling`: progressive filling. A flow that saturates its dequeue
//!   rate (measured bandwidth ≥ `saturation` × allocation) grows by `step`
//!   per `step_interval` while the NIC's allocations leave room (or while it
//!   is below an equal share, the water level, in which case flows above
//!   the level give the excess back); one that does not stops; one
//!   whose bandwidth falls well below its allocation (< `reclaim_below`) is
//!   cut to what it uses (+ `reclaim_margin`) and the rest is reclaimed.
//!
//! As on SCR's DPA, the controllers of one NIC share a flow table: a Bloom
//! filter spots a QP's first TX event (a new flow), records keep each
//! flow's allocation and bandwidth EWMA. Flow arrival: `join: scale` scales
//! every allocation by (n−1)/n and starts the newcomer at capacity / n (SCR
//! §5.1, Fig. 9c); `reset_on_join` restarts everyone at `start_rate` (SCR
//! A.4, Fig. 16: "scale down to 0, start from 0"); `newcomer_from_start`
//! scales the others by (n−1)/n but starts the newcomer at `start_rate`, to
//! fill the room they left (the third Fig. 9 strategy as rdmalab reads it:
//! the paper names only the other two). A flow without TX events for `idle_timeout` has left: its
//! allocation is reclaimed. New allocations reach a QP at its next event.

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::state::bloom::BloomFilter;
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

const COMMON: [ParamSpec; 3] = [
    p::rate(
        "min_rate",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "smallest allocation per flow",
        "SCR §6.2: a 1 Gb/s bound per flow, as RNIC rate limiters lose accuracy below it",
    ),
    p::float(
        "capacity",
        1.0,
        0.01,
        1.0,
        "fraction of the line rate the policy hands out",
        "rdmalab choice: all of it (SCR allocates the link capacity)",
    ),
    p::duration(
        "idle_timeout",
        200.0 * p::US,
        1.0,
        1e15,
        "a flow without TX events this long has left",
        "rdmalab choice: far above a perftest QP's gap between bursts",
    ),
];

pub const STATIC_PARAMS: &[ParamSpec] = &COMMON;

pub const WATER_FILLING_PARAMS: &[ParamSpec] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    p::rate("step", 0.1 * p::GBPS, 1.0, 1e13, "filling step: growth of a saturated flow's allocation per step_interval", "SCR A.4: 0.03, 0.05 and 0.1 Gb/s"),
    p::duration("step_interval", 0.5 * p::US, 1.0, 1e15, "a saturated flow grows one step per this much time (several at once when events are sparser)", "SCR Table 5: 0.1 Gb/s steps from 0.5 Gb/s converge 8 flows in 49 µs, about one step per 0.4–0.5 µs"),
    p::rate("start_rate", 0.5 * p::GBPS, 1.0, 1e13, "allocation everyone restarts at with join = reset", "SCR A.4: 0.5 Gb/s"),
    p::boolean("reset_on_join", false, "a new flow resets every allocation to start_rate (otherwise: scale by (n−1)/n, start the newcomer at capacity / n)", "SCR §5.1 (scale, Fig. 9c) and A.4 (reset, Fig. 16)"),
    p::boolean("newcomer_from_start", false, "without reset_on_join: the others still scale by (n−1)/n, but every newcomer (the first flow too) starts at start_rate and fills the room", "rdmalab's reading of the third Fig. 9 strategy (SCR §5.1 shows three, names two)"),
    p::float("saturation", 0.9, 0.0, 1.0, "bandwidth / allocation at or above which a flow saturates its dequeue rate", "rdmalab choice for SCR's BW_EWMA ≈ DequeueRate"),
    p::float("reclaim_below", 0.5, 0.0, 1.0, "bandwidth / allocation below which the unused allocation is reclaimed", "rdmalab choice for SCR's BW_EWMA ≪ DequeueRate"),
    p::float("reclaim_margin", 0.2, 0.0, 10.0, "a reclaimed flow keeps its bandwidth × (1 + margin)", "rdmalab choice: room to grow back"),
    p::duration("ewma_time", 20.0 * p::US, 1.0, 1e15, "time constant of the bandwidth EWMA (each sample weighs dt / τ, at most 1)", "rdmalab choice: several RTTs and DPA trigger periods; time-weighted so bursts do not bias it"),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FairParams {
    pub water_filling: bool,
    pub min_rate: Rate,
    pub capacity: f64,
    pub idle_timeout: Duration,
    pub step: Rate,
    pub step_interval: Duration,
    pub start_rate: Rate,
    pub reset_on_join: bool,
    pub newcomer_from_start: bool,
    pub saturation: f64,
    pub reclaim_below: f64,
    pub reclaim_margin: f64,
    pub ewma_time: Duration,
}

impl FairParams {
    pub fn static_from(v: &ParamValues) -> Self {
        let w = ParamValues::defaults(WATER_FILLING_PARAMS);
        FairParams {
            water_filling: false,
            ..Self::water_filling_from(&w)
        }
        .with_common(v)
    }

    pub fn water_filling_from(v: &ParamValues) -> Self {
        FairParams {
            water_filling: true,
            min_rate: v.rate("min_rate"),
            capacity: v.get("capacity"),
            idle_timeout: v.duration("idle_timeout"),
            step: v.rate("step"),
            step_interval: v.duration("step_interval"),
            start_rate: v.rate("start_rate"),
            reset_on_join: v.flag("reset_on_join"),
            newcomer_from_start: v.flag("newcomer_from_start"),
            saturation: v.get("saturation"),
            reclaim_below: v.get("reclaim_below"),
            reclaim_margin: v.get("reclaim_margin"),
            ewma_time: v.duration("ewma_time"),
        }
    }

    fn with_common(mut self, v: &ParamValues) -> Self {
        self.min_rate = v.rate("min_rate");
        self.capacity = v.get("capacity");
        self.idle_timeout = v.duration("idle_timeout");
        self
    }
}

/// Steps a flow may take in one event after a long gap (bounds the jump after an idle spell).
const MAX_STEPS_AT_ONCE: u64 = 64;

/// One flow's record in the NIC's table.
#[derive(Clone, Copy, Debug)]
struct FlowRecord {
    /// The dequeue rate the policy gives the flow, bit/s (wire bytes).
    alloc: f64,
    /// Time-weighted EWMA of the flow's wire bandwidth, bit/s.
    bw: f64,
    last_tx: Time,
    last_step: Time,
    joined: Time,
}

/// The flow table the controllers of one NIC share.
#[derive(Debug)]
pub struct FlowTable {
    seen: BloomFilter,
    flows: BTreeMap<u32, FlowRecord>,
    /// Sum of the allocations, bit/s.
    allocated: f64,
    last_sweep: Time,
    /// Flow arrivals and departures seen (for tests and reports).
    pub joins: u64,
    pub leaves: u64,
}

impl FlowTable {
    fn new(node: u32) -> Self {
        FlowTable {
            // SCR Fig. 10's sizing: 8192 flows at 3 % false positives (~8 bits a flow,
            // 8 KB); a false positive is caught by the record lookup.
            seen: BloomFilter::with_capacity(8192, 0.03, 0x5C2_0000 + node as u64),
            flows: BTreeMap::new(),
            allocated: 0.0,
            last_sweep: Time::ZERO,
            joins: 0,
            leaves: 0,
        }
    }

    /// Flows currently in the table.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// A flow's allocation, bit/s.
    pub fn allocation(&self, qp: u32) -> Option<f64> {
        self.flows.get(&qp).map(|r| r.alloc)
    }

    fn recount(&mut self) {
        self.allocated = self.flows.values().map(|r| r.alloc).sum();
    }

    fn join(&mut self, qp: u32, now: Time, p: &FairParams, capacity: f64) {
        self.seen.insert(qp as u64);
        self.joins += 1;
        let n = self.flows.len() as f64 + 1.0;
        let start = if p.water_filling && p.reset_on_join {
            for r in self.flows.values_mut() {
                r.alloc = p.start_rate.bps() as f64;
            }
            p.start_rate.bps() as f64
        } else {
            for r in self.flows.values_mut() {
                r.alloc *= (n - 1.0) / n;
            }
            if p.water_filling && p.newcomer_from_start {
                p.start_rate.bps() as f64
            } else {
                capacity / n
            }
        };
        let alloc = start.max(p.min_rate.bps() as f64);
        // Until its EWMA has warmed up a newcomer is taken to use its allocation.
        let rec = FlowRecord {
            alloc,
            bw: alloc,
            last_tx: now,
            last_step: now,
            joined: now,
        };
        self.flows.insert(qp, rec);
        self.recount();
    }

    /// Forget flows that have been idle for `idle_timeout`; their allocation is free again.
    fn sweep(&mut self, now: Time, idle: Duration) {
        if now < self.last_sweep + Duration(idle.ps() / 2) {
            return;
        }
        self.last_sweep = now;
        let before = self.flows.len();
        self.flows.retain(|_, r| r.last_tx + idle > now);
        if self.flows.len() != before {
            self.leaves += (before - self.flows.len()) as u64;
            self.recount();
        }
    }
}

/// The flow tables of every NIC in one run, by node id. The world creates
/// one per run, so runs never share records.
pub type NicTables = Rc<RefCell<BTreeMap<u32, Rc<RefCell<FlowTable>>>>>;

/// The controller of one QP: its NIC's policy applied to its own flow.
pub struct FairShare {
    p: FairParams,
    tables: NicTables,
    table: Option<Rc<RefCell<FlowTable>>>,
}

impl FairShare {
    pub fn new(p: FairParams, tables: NicTables) -> Self {
        FairShare {
            p,
            tables,
            table: None,
        }
    }

    fn table(&mut self, node: u32) -> Rc<RefCell<FlowTable>> {
        if self.table.is_none() {
            let t = self
                .tables
                .borrow_mut()
                .entry(node)
                .or_insert_with(|| Rc::new(RefCell::new(FlowTable::new(node))))
                .clone();
            self.table = Some(t);
        }
        self.table.clone().expect("set above")
    }
}

impl Controller for FairShare {
    fn name(&self) -> &str {
        if self.p.water_filling {
            "water-filling"
        } else {
            "fair-static"
        }
    }

    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::TX)
    }

    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let CcEvent::Tx { bytes, packets } = *ev else {
            return;
        };
        let p = self.p;
        let now = ctx.now;
        let capacity = ctx.line_rate.bps() as f64 * p.capacity;
        let min = p.min_rate.bps() as f64;
        let table = self.table(ctx.nic.node);
        let mut t = table.borrow_mut();
        t.sweep(now, p.idle_timeout);
        if !t.seen.contains(ctx.qp as u64) || !t.flows.contains_key(&ctx.qp) {
            t.join(ctx.qp, now, &p, capacity);
        }
        let n = t.flows.len() as f64;
        let allocated = t.allocated;
        let rec = t.flows.get_mut(&ctx.qp).expect("joined above");
        // Bandwidth on the wire since the flow's previous event (coalesced events carry the sum).
        let wire_bits = 8.0 * (bytes as f64 + packets as f64 * ctx.path.packet_overhead as f64);
        let dt = (now - rec.last_tx).ps();
        if dt > 0 {
            let w = (dt as f64 / p.ewma_time.ps() as f64).min(1.0);
            rec.bw += w * (wire_bits / (dt as f64 * 1e-12) - rec.bw);
            rec.last_tx = now;
        }
        let before = rec.alloc;
        if !p.water_filling {
            rec.alloc = (capacity / n).max(min);
        } else if now >= rec.last_step + p.step_interval {
            // One step per step_interval elapsed: the filling speed does not
            // depend on how often the placement delivers events.
            let whole = (now - rec.last_step).ps() / p.step_interval.ps().max(1);
            let steps = whole.min(MAX_STEPS_AT_ONCE);
            // Keep the unused part of an interval, unless the cap dropped steps.
            rec.last_step = if whole > MAX_STEPS_AT_ONCE {
                now
            } else {
                rec.last_step + Duration(p.step_interval.ps() * steps)
            };
            let steps = steps as f64;
            let step = p.step.bps() as f64 * steps;
            let level = capacity / n;
            if rec.bw >= p.saturation * rec.alloc {
                if allocated + step <= capacity {
                    rec.alloc += step;
                } else if rec.alloc + step <= level {
                    // Below the water level (an equal share) a saturated flow still
                    // grows; flows above the level give the excess back (below).
                    rec.alloc += step;
                } else if allocated < capacity {
                    rec.alloc += capacity - allocated;
                }
            } else if rec.bw < p.reclaim_below * rec.alloc
                && now >= rec.joined + p.ewma_time + p.ewma_time
            {
                rec.alloc = (rec.bw * (1.0 + p.reclaim_margin)).max(min);
            }
        }
        if p.water_filling && allocated > capacity && rec.alloc > capacity / n {
            // Over-committed: a flow above the water level gives back.
            let back = (p.step.bps() as f64)
                .min(allocated - capacity)
                .min(rec.alloc - capacity / n);
            rec.alloc -= back;
        }
        rec.alloc = rec.alloc.min(ctx.line_rate.bps() as f64);
        let alloc = rec.alloc;
        if alloc != before {
            t.allocated += alloc - before;
        }
        let r = Rate(alloc as u64).max(Rate(1));
        if r != ctx.rate {
            ctx.set_rate(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;

    const LINE: Rate = Rate(100_000_000_000);

    fn tx(c: &mut FairShare, qp: u32, us: f64, packets: u32, rate: Rate) -> Option<Rate> {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time((us * 1e6) as u64), LINE, rate, 0, &mut a);
        ctx.qp = qp;
        c.on_event(
            &CcEvent::Tx {
                bytes: packets * 1024,
                packets,
            },
            &mut ctx,
        );
        a.rate
    }

    #[test]
    fn static_policy_gives_each_flow_capacity_over_n_with_a_floor() {
        let tables = NicTables::default();
        let p = FairParams::static_from(&ParamValues::defaults(STATIC_PARAMS));
        let mut c: Vec<FairShare> = (0..4).map(|_| FairShare::new(p, tables.clone())).collect();
        for (i, c) in c.iter_mut().enumerate() {
            tx(c, i as u32, 1.0, 1, LINE);
        }
        // The last to join sees n = 4 at once; the first learns it at its next event.
        assert_eq!(tx(&mut c[0], 0, 2.0, 1, LINE), Some(Rate(25_000_000_000)));
        let t = tables.borrow()[&0].clone();
        assert_eq!(t.borrow().len(), 4);
        // 200 flows: 0.5 Gb/s each would be below the 1 Gb/s floor.
        let p = FairParams::static_from(&ParamValues::defaults(STATIC_PARAMS));
        let tables = NicTables::default();
        let mut many: Vec<FairShare> = (0..200)
            .map(|_| FairShare::new(p, tables.clone()))
            .collect();
        for (i, c) in many.iter_mut().enumerate() {
            tx(c, i as u32, 1.0, 1, LINE);
        }
        assert_eq!(tx(&mut many[0], 0, 2.0, 1, LINE), Some(Rate(1_000_000_000)));
    }

    #[test]
    fn joining_scales_everyone_by_n_minus_1_over_n_and_leaving_frees_the_allocation() {
        let tables = NicTables::default();
        let p = FairParams::water_filling_from(&ParamValues::defaults(WATER_FILLING_PARAMS));
        let mut a = FairShare::new(p, tables.clone());
        let mut b = FairShare::new(p, tables.clone());
        assert_eq!(
            tx(&mut a, 0, 1.0, 1, LINE),
            None,
            "alone: the whole line, which it has"
        );
        tx(&mut b, 1, 1.5, 1, LINE);
        let t = tables.borrow()[&0].clone();
        assert_eq!(t.borrow().allocation(0), Some(50e9));
        assert_eq!(t.borrow().allocation(1), Some(50e9));
        assert_eq!(t.borrow().joins, 2);
        // b goes quiet; after the idle timeout a's next event sweeps it out.
        tx(&mut a, 0, 150.0, 1, Rate(50_000_000_000));
        assert_eq!(
            t.borrow().len(),
            2,
            "b idle for 148.5 µs < 200 µs: still there"
        );
        tx(&mut a, 0, 300.0, 1, Rate(50_000_000_000));
        assert_eq!(t.borrow().len(), 1);
        assert_eq!(t.borrow().leaves, 1);
    }

    #[test]
    fn each_join_strategy_sets_the_newcomer_and_the_others_as_documented() {
        // (reset_on_join, newcomer_from_start) -> (first flow's, second flow's)
        // allocation in Gb/s once the second has joined, start_rate 2 Gb/s.
        // With newcomer_from_start the first also started at 2 and was halved.
        let cases = [
            ((0.0, 0.0), (50.0, 50.0)),
            ((1.0, 0.0), (2.0, 2.0)),
            ((0.0, 1.0), (1.0, 2.0)),
        ];
        for ((reset, newcomer), want) in cases {
            let tables = NicTables::default();
            let mut v = ParamValues::defaults(WATER_FILLING_PARAMS);
            v.set("reset_on_join", reset);
            v.set("newcomer_from_start", newcomer);
            v.set("start_rate", 2e9);
            let p = FairParams::water_filling_from(&v);
            let mut a = FairShare::new(p, tables.clone());
            let mut b = FairShare::new(p, tables.clone());
            tx(&mut a, 0, 1.0, 1, LINE);
            tx(&mut b, 1, 1.5, 1, LINE);
            let t = tables.borrow()[&0].clone();
            let got = (
                t.borrow().allocation(0).unwrap() / 1e9,
                t.borrow().allocation(1).unwrap() / 1e9,
            );
            assert_eq!(got, want, "reset {reset}, newcomer_from_start {newcomer}");
        }
    }

    #[test]
    fn water_filling_grows_saturated_flows_and_reclaims_idle_allocation() {
        let tables = NicTables::default();
        let mut v = ParamValues::defaults(WATER_FILLING_PARAMS);
        v.set("reset_on_join", 1.0);
        let p = FairParams::water_filling_from(&v);
        let mut a = FairShare::new(p, tables.clone());
        // Sending one 1024 B packet (1106 B on the wire) every 17.7 µs is 0.5 Gb/s: saturated.
        let mut t_us = 0.0;
        let mut rate = Rate(500_000_000);
        for _ in 0..40 {
            t_us += 1106.0 * 8.0 / rate.bps() as f64 * 1e6;
            if let Some(r) = tx(&mut a, 0, t_us, 1, rate) {
                rate = r;
            }
        }
        assert!(rate > Rate(2_000_000_000), "grew step by step: {rate}");
        // Now it sends a tenth of its allocation for a while: cut to what it uses.
        let alloc = rate;
        for _ in 0..40 {
            t_us += 10.0 * 1106.0 * 8.0 / alloc.bps() as f64 * 1e6;
            if let Some(r) = tx(&mut a, 0, t_us, 1, rate) {
                rate = r;
            }
        }
        assert!(rate < Rate(alloc.bps() / 3), "reclaimed: {alloc} -> {rate}");
        assert!(rate >= Rate(1_000_000_000), "never below min_rate");
    }
}
