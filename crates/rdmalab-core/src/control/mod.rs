//! The control-plane interface between the NIC and congestion control.
//!
//! The NIC never decides rates. It turns what happens on a QP into a
//! [`CcEvent`] (a burst transmitted, an ACK with its RTT sample, a NACK, a
//! CNP, a timer), hands it to the QP's controller together with a [`CcContext`],
//! and applies the [`Actions`] the controller recorded: a new dequeue rate, a
//! new window, timers. Controllers are pure with respect to the network: they
//! see only the event, their own state and the context, so they can be unit
//! tested without a fabric. The event names follow NVIDIA DOCA PCC (TX, ACK,
//! NACK, CNP, RTT) so a DPA algorithm maps over by renaming.
//!
//! Built-in algorithms are dispatched through the [`Cc`] enum (no dynamic
//! dispatch on the hot path); one boxed arm carries user-defined controllers.

use crate::time::{Duration, Rate, Time};

/// Timer slots a controller may use per QP.
pub const CC_TIMER_SLOTS: usize = 4;

/// Which events a controller wants; the NIC does not raise the others
/// (DOCA PCC's `disable_event_bitmask`, SwCC's traced-packet filter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventMask(pub u8);

impl EventMask {
    pub const TX: u8 = 1 << 0;
    pub const ACK: u8 = 1 << 1;
    pub const NACK: u8 = 1 << 2;
    pub const CNP: u8 = 1 << 3;
    pub const TIMEOUT: u8 = 1 << 4;
    pub const ALL: EventMask = EventMask(0xff);
    #[inline]
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// What happened on a QP, as the controller sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcEvent {
    /// The NIC put a burst of this QP's data on the wire.
    Tx { bytes: u32, packets: u32 },
    /// A cumulative ACK advanced by `acked_bytes`; `rtt` is measured from the
    /// in-band timestamp echoed by the receiver.
    Ack { acked_bytes: u64, rtt: Duration },
    /// The receiver saw a PSN gap and asked to go back to `expected_psn`.
    Nack { expected_psn: u32 },
    /// A congestion notification packet arrived for this QP.
    Cnp,
    /// A timer the controller set in `slot` expired.
    Timer { slot: u8 },
    /// The retransmission timer fired: the NIC is going back to the oldest unacknowledged PSN.
    Timeout,
}

impl CcEvent {
    pub fn name(&self) -> &'static str {
        match self {
            CcEvent::Tx { .. } => "TX",
            CcEvent::Ack { .. } => "ACK",
            CcEvent::Nack { .. } => "NACK",
            CcEvent::Cnp => "CNP",
            CcEvent::Timer { .. } => "TIMER",
            CcEvent::Timeout => "TIMEOUT",
        }
    }
}

/// Actions a controller recorded while handling one event.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Actions {
    /// New dequeue rate for the QP.
    pub rate: Option<Rate>,
    /// New window in bytes in flight (`Some(None)` removes the window).
    pub window: Option<Option<u64>>,
    /// Per slot: `Some(Some(t))` arms the timer at `t`, `Some(None)` cancels it.
    pub timers: [Option<Option<Time>>; CC_TIMER_SLOTS],
}

/// What the controller may read about its QP, and where it records actions.
pub struct CcContext<'a> {
    pub now: Time,
    /// Rate of the NIC port: the ceiling for any dequeue rate.
    pub line_rate: Rate,
    /// The QP's dequeue rate before this event.
    pub rate: Rate,
    pub bytes_in_flight: u64,
    actions: &'a mut Actions,
}

impl<'a> CcContext<'a> {
    pub fn new(now: Time, line_rate: Rate, rate: Rate, bytes_in_flight: u64, actions: &'a mut Actions) -> Self {
        CcContext { now, line_rate, rate, bytes_in_flight, actions }
    }
    pub fn set_rate(&mut self, r: Rate) {
        self.actions.rate = Some(r);
    }
    pub fn set_window(&mut self, bytes: Option<u64>) {
        self.actions.window = Some(bytes);
    }
    pub fn set_timer(&mut self, slot: usize, at: Time) {
        self.actions.timers[slot] = Some(Some(at));
    }
    pub fn cancel_timer(&mut self, slot: usize) {
        self.actions.timers[slot] = Some(None);
    }
}

/// A congestion controller for one QP. Callbacks are named after what
/// happened; the default `subscriptions` asks for everything.
pub trait Controller {
    fn name(&self) -> &str;
    fn subscriptions(&self) -> EventMask {
        EventMask::ALL
    }
    /// The QP starts sending; `ctx.rate` is the line rate.
    fn on_start(&mut self, _ctx: &mut CcContext) {}
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext);
}

/// The controller attached to a QP.
pub enum Cc {
    /// No congestion control: the QP keeps the rate it was given.
    Fixed,
    Dcqcn(crate::algo::dcqcn::Dcqcn),
    /// A user-defined controller (Rust or Python). Panics inside it are caught
    /// and reported as run errors.
    Custom(Box<dyn Controller>),
}

impl Cc {
    pub fn name(&self) -> &str {
        match self {
            Cc::Fixed => "none",
            Cc::Dcqcn(_) => "dcqcn",
            Cc::Custom(c) => c.name(),
        }
    }

    #[inline]
    pub fn subscriptions(&self) -> EventMask {
        match self {
            Cc::Fixed => EventMask(0),
            Cc::Dcqcn(d) => d.subscriptions(),
            Cc::Custom(c) => c.subscriptions(),
        }
    }

    pub fn on_start(&mut self, ctx: &mut CcContext) -> Result<(), String> {
        match self {
            Cc::Fixed => Ok(()),
            Cc::Dcqcn(d) => {
                d.on_start(ctx);
                Ok(())
            }
            Cc::Custom(c) => guarded(|| c.on_start(ctx)),
        }
    }

    #[inline]
    pub fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) -> Result<(), String> {
        match self {
            Cc::Fixed => Ok(()),
            Cc::Dcqcn(d) => {
                d.on_event(ev, ctx);
                Ok(())
            }
            Cc::Custom(c) => guarded(|| c.on_event(ev, ctx)),
        }
    }
}

fn guarded(f: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
        if let Some(s) = e.downcast_ref::<&str>() {
            format!("panicked: {s}")
        } else if let Some(s) = e.downcast_ref::<String>() {
            format!("panicked: {s}")
        } else {
            "panicked".to_string()
        }
    })
}

/// Check a controller's actions before they touch the data path.
pub fn check_actions(a: &Actions, line_rate: Rate) -> Result<(), String> {
    if let Some(r) = a.rate {
        if r.bps() == 0 {
            return Err("set a dequeue rate of 0 bit/s (allowed: 1 bit/s up to the line rate)".into());
        }
        if r > line_rate {
            return Err(format!("set a dequeue rate of {r} above the line rate {line_rate}"));
        }
    }
    if let Some(Some(0)) = a.window {
        return Err("set a window of 0 bytes (allowed: at least 1 byte, or no window)".into());
    }
    Ok(())
}
