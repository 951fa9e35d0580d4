//! Writing a controller against the control-plane interface, and what
//! happens when one misbehaves.

mod common;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::{Duration, Rate, Time};
use rdmalab_core::world::{RunError, World};

const INCAST: &str = r#"{"duration": "5ms",
    "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
    "workload": {"flows": [{"src": "h0", "dst": "h2", "size": "2MB"}, {"src": "h1", "dst": "h2", "size": "2MB"}]}}"#;

fn world_with(name: &str, make: impl Fn() -> Box<dyn Controller> + 'static) -> World {
    let mut s = Scenario::from_json_str(INCAST).unwrap();
    s.cc = CcConfig::custom(name, make);
    s.build().unwrap()
}

/// Halve the rate on every CNP, add 1 Gb/s per ACK'd 64 KB: an afternoon's AIMD.
struct Aimd {
    acked: u64,
}

impl Controller for Aimd {
    fn name(&self) -> &str {
        "aimd"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::CNP | EventMask::ACK)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Cnp => ctx.set_rate(Rate((ctx.rate.bps() / 2).max(1_000_000_000))),
            CcEvent::Ack { acked_bytes, .. } => {
                self.acked += acked_bytes;
                if self.acked >= 65_536 {
                    self.acked = 0;
                    ctx.set_rate(Rate(
                        (ctx.rate.bps() + 1_000_000_000).min(ctx.line_rate.bps()),
                    ));
                }
            }
            _ => {}
        }
    }
}

#[test]
fn a_user_controller_plugs_in_and_reacts_to_cnps() {
    let mut w = world_with("aimd", || Box::new(Aimd { acked: 0 }));
    w.run_to_end().unwrap();
    assert_eq!(w.rec.flows.len(), 2);
    assert!(w.stats.cnps_sent > 0);
    assert!(
        w.qps.iter().any(|q| q.rate < Rate::gbps(100)),
        "the controller's rates took effect"
    );
    common::assert_conservation(&w);
}

struct Panics;
impl Controller for Panics {
    fn name(&self) -> &str {
        "panicky"
    }
    fn on_event(&mut self, ev: &CcEvent, _: &mut CcContext) {
        if matches!(ev, CcEvent::Cnp) {
            panic!("division by zero in my law");
        }
    }
}

struct TooFast;
impl Controller for TooFast {
    fn name(&self) -> &str {
        "too-fast"
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if matches!(ev, CcEvent::Cnp) {
            ctx.set_rate(Rate::gbps(400));
        }
    }
}

struct Zero;
impl Controller for Zero {
    fn name(&self) -> &str {
        "zero"
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if matches!(ev, CcEvent::Cnp) {
            ctx.set_rate(Rate(0));
        }
    }
}

fn run_err(mut w: World) -> RunError {
    w.run_to_end().expect_err("the run must stop with an error")
}

#[test]
fn a_panicking_controller_is_reported_by_name_and_event() {
    let e = run_err(world_with("panicky", || Box::new(Panics))).to_string();
    assert!(e.contains("controller `panicky`"), "{e}");
    assert!(e.contains("CNP event"), "{e}");
    assert!(e.contains("division by zero in my law"), "{e}");
}

#[test]
fn invalid_actions_are_refused_with_the_controller_and_event() {
    let e = run_err(world_with("too-fast", || Box::new(TooFast))).to_string();
    assert!(
        e.contains("controller `too-fast`")
            && e.contains("CNP")
            && e.contains("above the line rate"),
        "{e}"
    );
    let e = run_err(world_with("zero", || Box::new(Zero))).to_string();
    assert!(
        e.contains("controller `zero`") && e.contains("0 bit/s"),
        "{e}"
    );
}

/// Sets the rate on every TX event: at the asic placement this runs inside
/// the NIC's dequeue, and must not let the port start a second frame.
struct RateOnTx;
impl Controller for RateOnTx {
    fn name(&self) -> &str {
        "rate-on-tx"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::TX)
    }
    fn on_event(&mut self, _: &CcEvent, ctx: &mut CcContext) {
        ctx.set_rate(ctx.line_rate);
        ctx.send_oob([1, 2, 3, 4]);
    }
}

#[test]
fn a_controller_acting_inside_the_dequeue_cannot_overdrive_the_port() {
    let mut s = Scenario::from_json_str(
        r#"{"duration": "5ms", "cc": {"algorithm": "none"},
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1MB"}, {"src": "h0", "dst": "h2", "size": "1MB"}]}}"#,
    )
    .unwrap();
    s.cc = CcConfig::custom("rate-on-tx", || Box::new(RateOnTx));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let last = w.rec.flows.iter().map(|f| f.finish.ps()).max().unwrap();
    // 2 MB of payload through one 100 Gb/s port takes at least 160 µs.
    assert!(
        last >= 160_000_000,
        "the sender's port ran faster than its line rate: done at {last} ps"
    );
    common::assert_conservation(&w);
}

/// Re-arms its timer at the current instant forever.
struct Spinner;
impl rdmalab_core::control::Controller for Spinner {
    fn name(&self) -> &str {
        "spinner"
    }
    fn on_start(&mut self, ctx: &mut rdmalab_core::control::CcContext) {
        ctx.set_timer(0, ctx.now);
    }
    fn on_event(
        &mut self,
        ev: &rdmalab_core::control::CcEvent,
        ctx: &mut rdmalab_core::control::CcContext,
    ) {
        if let rdmalab_core::control::CcEvent::Timer { .. } = ev {
            ctx.set_timer(0, ctx.now);
        }
    }
}

#[test]
fn a_controller_that_never_lets_time_advance_is_stopped_with_a_clear_error() {
    let json = r#"{"name": "spin", "duration": "1ms", "max_events": 1000000000,
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "10KB", "start": "5us"}]}}"#;
    let mut s = rdmalab_core::scenario::Scenario::from_json_str(json).unwrap();
    s.cc = rdmalab_core::algo::CcConfig::custom("spinner", || Box::new(Spinner));
    let mut w = s.build().unwrap();
    let e = w.run_to_end().unwrap_err().to_string();
    println!("{e}");
    assert!(
        e.contains("without time advancing") && e.contains("20000001 events"),
        "{e}"
    );
    assert!(e.contains("QpTimer"), "names the event: {e}");
}

/// Starts at 1 Gb/s and, at a timer, raises its QP to line rate.
struct SlowThenFast;

impl Controller for SlowThenFast {
    fn name(&self) -> &str {
        "slow-then-fast"
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        ctx.set_rate(Rate::gbps(1));
        ctx.set_timer(0, Time::ZERO + Duration::from_us(50));
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if let CcEvent::Timer { .. } = ev {
            ctx.set_rate(ctx.line_rate);
        }
    }
}

#[test]
fn a_rate_raised_by_a_timer_takes_effect_at_once() {
    // At 1 Gb/s a 1 KB packet leaves every ~8 µs. When the timer raises the
    // rate, the NIC must try the port then: waiting for the next ACK or the
    // old gap would start the rest of the flow microseconds late. (A test
    // of applying actions, whose port try no other test guarded.)
    let mut s = Scenario::from_json_str(
        r#"{"duration": "5ms",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "200KB"}]}}"#,
    )
    .unwrap();
    s.cc = CcConfig::custom("slow-then-fast", || Box::new(SlowThenFast));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let f = &w.rec.flows[0];
    let (fct, timer) = (f.finish - f.start, Duration::from_us(50));
    // From the timer on, the rest of the flow takes no longer than the whole
    // flow alone at line rate (`ideal`): 70.9 µs against 50 + 21.4 µs. With
    // the port left untried it resumed at the next ACK, 74.1 µs.
    assert!(fct > timer, "{fct:?}: the slow start did not hold");
    assert!(fct <= timer + f.ideal, "{fct:?} > 50 µs + {:?}", f.ideal);
}
