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

pub mod compute;
pub mod framework;
pub mod params;
pub mod state;

use crate::packet::IntHop;
use crate::time::{Duration, Rate, Time};

/// Timer slots a controller may use per QP.
pub const CC_TIMER_SLOTS: usize = 4;

/// Which events a controller wants; the NIC does not raise the others
/// (DOCA PCC's `disable_event_bitmask`, SwCC's traced-packet filter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventMask(pub u16);

impl EventMask {
    pub const TX: u16 = 1 << 0;
    pub const ACK: u16 = 1 << 1;
    pub const NACK: u16 = 1 << 2;
    pub const CNP: u16 = 1 << 3;
    pub const TIMEOUT: u16 = 1 << 4;
    pub const RTT: u16 = 1 << 5;
    /// Receive-side data events (only where the placement exposes them).
    pub const RX: u16 = 1 << 6;
    /// Out-of-band messages from the peer and application hints.
    pub const PEER: u16 = 1 << 7;
    /// Periodic host-domain reports: PCIe and NIC utilisation.
    pub const HOST: u16 = 1 << 8;
    pub const ALL: EventMask = EventMask(0x1ff);
    /// Everything that every placement raises (all but receive-side events).
    pub const DEFAULT: EventMask = EventMask(0x1ff & !Self::RX);
    #[inline]
    pub fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// What happened on a QP, as the controller sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcEvent {
    /// The NIC put a burst of this QP's data on the wire.
    Tx { bytes: u32, packets: u32 },
    /// A cumulative ACK advanced by `acked_bytes`, acknowledging the QP's byte
    /// stream up to `acked_through`. `rtt` is measured from the in-band
    /// timestamp the receiver echoes; `ece` echoes an ECN mark on the data
    /// (DCTCP's ECE); `hops` is how many switches the data crossed. The INT
    /// records echoed with it are in [`CcContext::int`].
    Ack {
        acked_bytes: u64,
        acked_through: u64,
        rtt: Duration,
        ece: bool,
        hops: u8,
    },
    /// The receiver saw a PSN gap and asked to go back to `expected_psn`. The
    /// reason is always a sequence error (DOCA PCC's NACK subtype OOS): receivers
    /// here always have receive WQEs posted, so RNR NACKs do not occur.
    Nack { expected_psn: u32 },
    /// A congestion notification packet arrived for this QP.
    Cnp,
    /// A timer the controller set in `slot` expired.
    Timer { slot: u8 },
    /// The retransmission timer fired: the NIC is going back to the oldest unacknowledged PSN.
    Timeout,
    /// An out-of-band probe on path `udp_sport`, sent at `sent`, came back
    /// after `rtt`, or `lost` (no answer within the probe timeout: the path may
    /// have failed). `sent` is the NIC's clock, so a controller on slow cores
    /// still orders its probes right.
    Rtt {
        udp_sport: u16,
        sent: Time,
        rtt: Duration,
        lost: bool,
    },
    /// Data arrived at the QP's receiver (`bytes` payload, `ce`: ECN-marked).
    /// Only placements that expose receive-side events raise it.
    Rx { bytes: u32, packets: u32, ce: bool },
    /// An out-of-band message from the QP's other end (peer domain): 16 bytes
    /// of controller-defined content, e.g. credits or a utilisation report;
    /// `to_receiver` when the data sender sent it.
    Peer { words: [u32; 4], to_receiver: bool },
    /// An application hint (host domain), e.g. a tenant's weight or latency target.
    Hint { kind: HintKind, value: f64 },
    /// A periodic host-domain report from the sending NIC: PCIe link
    /// utilisation and DMA-read latency over the last period, QPs with data
    /// to send, and the port's utilisation.
    Host {
        pcie_utilization: f64,
        pcie_latency: Duration,
        active_qps: u32,
        port_utilization: f64,
    },
}

/// What an application hint is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    /// Relative share (a tenant's weight).
    Weight,
    /// Target latency in µs (an SLO).
    TargetLatencyUs,
    /// Priority class the application asks for.
    Priority,
    /// Anything else, by number.
    Custom(u16),
}

impl HintKind {
    pub fn parse(s: &str) -> Option<HintKind> {
        match s {
            "weight" => Some(HintKind::Weight),
            "target_latency_us" => Some(HintKind::TargetLatencyUs),
            "priority" => Some(HintKind::Priority),
            _ => s
                .strip_prefix("custom")
                .and_then(|n| n.parse().ok())
                .map(HintKind::Custom),
        }
    }
    pub fn name(self) -> String {
        match self {
            HintKind::Weight => "weight".into(),
            HintKind::TargetLatencyUs => "target_latency_us".into(),
            HintKind::Priority => "priority".into(),
            HintKind::Custom(n) => format!("custom{n}"),
        }
    }
}

impl CcEvent {
    /// Did this happen at the QP's data receiver?
    pub fn at_receiver(&self) -> bool {
        matches!(
            self,
            CcEvent::Rx { .. }
                | CcEvent::Peer {
                    to_receiver: true,
                    ..
                }
        )
    }

    pub fn name(&self) -> &'static str {
        match self {
            CcEvent::Tx { .. } => "TX",
            CcEvent::Ack { .. } => "ACK",
            CcEvent::Nack { .. } => "NACK",
            CcEvent::Cnp => "CNP",
            CcEvent::Timer { .. } => "TIMER",
            CcEvent::Timeout => "TIMEOUT",
            CcEvent::Rtt { .. } => "RTT",
            CcEvent::Rx { .. } => "RX",
            CcEvent::Peer { .. } => "PEER",
            CcEvent::Hint { .. } => "HINT",
            CcEvent::Host { .. } => "HOST",
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
    /// RTT probes to send, by UDP source port (the path); `probe_count` are valid.
    pub probes: [u16; MAX_PROBES_PER_EVENT],
    pub probe_count: u8,
    /// Move the QP's data to the path of this UDP source port.
    pub path: Option<u16>,
    /// An out-of-band message to the QP's other end.
    pub oob: Option<[u32; 4]>,
    /// The QP's share in the NIC's QP scheduler (packets per round-robin turn).
    pub share: Option<u32>,
    /// Move the QP's data (and READ requests) to this traffic class.
    pub class: Option<u8>,
    /// Words of the QP's extensible CC header to write (bit i: word i of
    /// `header`), carried by its data packets from the next one on.
    pub header_mask: u16,
    pub header: [u32; MAX_CC_HEADER_WORDS],
}

/// SwCC's extensible CC header: at most 64 bytes (§4.3.1).
pub const MAX_CC_HEADER_BYTES: u32 = 64;
pub const MAX_CC_HEADER_WORDS: usize = 16;

/// Probes one event may request (SCR probes a handful of paths per flow).
pub const MAX_PROBES_PER_EVENT: usize = 8;

/// Facts about a QP's path that do not change while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathFacts {
    /// Rate of the NIC port: the ceiling for any dequeue rate.
    pub line_rate: Rate,
    /// Round trip of one full-size data packet and its ACK on the idle path.
    pub base_rtt: Duration,
    /// Switches between sender and receiver.
    pub hops: u8,
    /// Payload bytes per full packet.
    pub mtu: u32,
    /// Wire bytes a data packet carries beyond its payload (headers, FCS,
    /// preamble and gap), to turn TX payload bytes into link occupancy.
    pub packet_overhead: u32,
}

impl PathFacts {
    /// Bandwidth-delay product of the path, bytes.
    pub fn bdp_bytes(&self) -> u64 {
        self.line_rate.bytes_in(self.base_rtt)
    }
}

impl Actions {
    /// True when the controller decided nothing.
    pub fn is_empty(&self) -> bool {
        self.rate.is_none()
            && self.window.is_none()
            && self.timers.iter().all(|t| t.is_none())
            && self.probe_count == 0
            && self.path.is_none()
            && self.oob.is_none()
            && self.share.is_none()
            && self.class.is_none()
            && self.header_mask == 0
    }
}

/// What the NIC where an event happened can tell about itself: the
/// counters a control core reads from NIC registers (SCR's receiver measures
/// its port this way). Cumulative, so a controller turns them into rates
/// with its own timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NicFacts {
    /// Node id of the NIC's host.
    pub node: u32,
    /// QPs in the NIC's round robin: those with data waiting to be sent (a QP
    /// that just sent its last byte leaves at its next turn).
    pub active_qps: u32,
    /// Bytes (frames, wire size without preamble) the NIC's port has sent so far.
    pub tx_bytes: u64,
    /// Bytes (frames) that have arrived at the NIC's port so far: data, ACKs, control.
    pub rx_bytes: u64,
    /// Data payload bytes that have arrived at the NIC so far.
    pub rx_payload: u64,
}

/// What the controller may read about its QP, and where it records actions.
pub struct CcContext<'a> {
    pub now: Time,
    /// The QP this event is about (a key for controllers that keep per-flow
    /// records in a table shared by all QPs of a NIC).
    pub qp: u32,
    /// The NIC where the event happened (the receiver's for RX and
    /// receiver-bound peer messages, the sender's otherwise).
    pub nic: NicFacts,
    /// Rate of the NIC port: the ceiling for any dequeue rate.
    pub line_rate: Rate,
    /// The QP's dequeue rate before this event.
    pub rate: Rate,
    pub bytes_in_flight: u64,
    /// Stream byte offset of the next byte to send (`snd_nxt`, in bytes).
    pub snd_nxt_bytes: u64,
    /// Bytes the application has posted on the QP so far (the end of its
    /// byte stream: for a flow, its message length), as the WQEs tell the NIC.
    pub posted_bytes: u64,
    pub path: PathFacts,
    /// The UDP source port the QP's data uses now (its current path).
    pub udp_sport: u16,
    /// This event happened at the QP's data receiver (RX, or a Peer message
    /// sent by the sender); otherwise at the data sender. One controller
    /// object serves both ends: state of one end must reach the other only
    /// through out-of-band messages.
    pub at_receiver: bool,
    /// INT hop records echoed with this ACK (empty unless switches push INT).
    pub int: &'a [IntHop],
    /// The tenant that owns the QP (`workload.tenants`; `u32::MAX`: none).
    pub tenant: u32,
    /// The extensible CC header (`control.cc_header`) of the packet behind
    /// this event, as 32-bit words: on an ACK, what the data packet it
    /// answers carried (the receiver echoes it); on an RX event, what the
    /// data packet carries. Empty without `control.cc_header`.
    pub header: &'a [u32],
    /// Events folded into this one while it waited (1 when nothing was coalesced;
    /// DOCA PCC's `num_coalesced`).
    pub coalesced: u32,
    actions: &'a mut Actions,
}

impl<'a> CcContext<'a> {
    pub fn new(
        now: Time,
        line_rate: Rate,
        rate: Rate,
        bytes_in_flight: u64,
        actions: &'a mut Actions,
    ) -> Self {
        let path = PathFacts {
            line_rate,
            base_rtt: Duration::from_us(10),
            hops: 1,
            mtu: 1024,
            packet_overhead: 82,
        };
        CcContext {
            now,
            qp: 0,
            nic: NicFacts::default(),
            line_rate,
            rate,
            bytes_in_flight,
            snd_nxt_bytes: 0,
            posted_bytes: 0,
            path,
            udp_sport: 0,
            at_receiver: false,
            int: &[],
            tenant: u32::MAX,
            header: &[],
            coalesced: 1,
            actions,
        }
    }

    /// A context with every fact given (what the NIC builds).
    pub fn with_facts(
        now: Time,
        rate: Rate,
        bytes_in_flight: u64,
        snd_nxt_bytes: u64,
        path: PathFacts,
        int: &'a [IntHop],
        actions: &'a mut Actions,
    ) -> Self {
        CcContext {
            now,
            qp: 0,
            nic: NicFacts::default(),
            line_rate: path.line_rate,
            rate,
            bytes_in_flight,
            snd_nxt_bytes,
            posted_bytes: 0,
            path,
            udp_sport: 0,
            at_receiver: false,
            int,
            tenant: u32::MAX,
            header: &[],
            coalesced: 1,
            actions,
        }
    }
    pub fn set_rate(&mut self, r: Rate) {
        self.actions.rate = Some(r);
    }
    /// Write word `i` (0 to 15) of the QP's extensible CC header: its data
    /// packets carry it from the next one on, and their ACKs echo it
    /// (`control.cc_header` sets how many bytes travel; words past them are kept
    /// but not sent).
    pub fn set_header_word(&mut self, i: usize, value: u32) {
        if i < MAX_CC_HEADER_WORDS {
            self.actions.header_mask |= 1 << i;
            self.actions.header[i] = value;
        }
    }
    /// The rate set so far while handling this event, if any (for a
    /// controller that wraps another and adjusts what it decided).
    pub fn pending_rate(&self) -> Option<Rate> {
        self.actions.rate
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
    /// Send an out-of-band RTT probe along the path of UDP source port `udp_sport`
    /// (ignored past [`MAX_PROBES_PER_EVENT`] in one event).
    pub fn request_probe(&mut self, udp_sport: u16) {
        let a = &mut *self.actions;
        if (a.probe_count as usize) < MAX_PROBES_PER_EVENT {
            a.probes[a.probe_count as usize] = udp_sport;
            a.probe_count += 1;
        }
    }
    /// Move the QP's data onto the path of UDP source port `udp_sport`.
    pub fn set_path(&mut self, udp_sport: u16) {
        self.actions.path = Some(udp_sport);
    }
    /// Set the QP's share in the NIC's QP scheduler: it sends `packets`
    /// packets per round-robin turn (1 = plain round robin). A tenant's
    /// controller sets the same share on each of its QPs.
    pub fn set_share(&mut self, packets: u32) {
        self.actions.share = Some(packets);
    }
    /// Move the QP's data packets to traffic class `class` (1 to 7; 0 is the
    /// control class): from the next packet on they queue, and PFC pauses
    /// them, in that class (SwiftRDMA §3.4: raise a latency-sensitive job's
    /// class when the port is contended).
    pub fn set_class(&mut self, class: u8) {
        self.actions.class = Some(class);
    }
    /// Send 16 bytes to the QP's other end (an out-of-band packet with a 128 B
    /// payload); it arrives there as a `Peer` event. Sent from the end where
    /// this event happened ([`CcContext::at_receiver`]).
    pub fn send_oob(&mut self, words: [u32; 4]) {
        self.actions.oob = Some(words);
    }
}

/// A congestion controller for one QP. Callbacks are named after what
/// happened; the default `subscriptions` asks for every event that all
/// placements raise (RX events must be asked for explicitly).
pub trait Controller {
    fn name(&self) -> &str;
    fn subscriptions(&self) -> EventMask {
        EventMask::DEFAULT
    }
    /// The QP starts sending; `ctx.rate` is the line rate.
    fn on_start(&mut self, _ctx: &mut CcContext) {}
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext);
}

/// The controller attached to a QP. Built-in algorithms are enum arms so the
/// hot path dispatches with a `match`; user controllers are boxed.
pub enum Cc {
    /// No congestion control: the QP keeps the rate it was given.
    Fixed,
    Dcqcn(crate::algo::dcqcn::Dcqcn),
    Timely(crate::algo::timely::Timely),
    Dctcp(crate::algo::dctcp::Dctcp),
    Hpcc(crate::algo::hpcc::Hpcc),
    Swift(crate::algo::swift::Swift),
    DocaRtt(crate::algo::doca_rtt::DocaRtt),
    FairShare(crate::algo::fair_share::FairShare),
    ReceiverGrants(crate::algo::receiver_grants::ReceiverGrants),
    ReceiverBackpressure(crate::algo::receiver_backpressure::ReceiverBackpressure),
    TenantGuard(crate::algo::tenant_guard::TenantGuard),
    Homa(crate::algo::homa::Homa),
    Multipath(crate::algo::multipath::Multipath),
    /// A user-defined controller (Rust or Python). Panics inside it are caught
    /// and reported as run errors.
    Custom(Box<dyn Controller>),
    /// A controller in C; faults inside it are caught by its runtime.
    C(crate::algo::c::CController),
}

/// Run `$body` with `$c` bound to the built-in controller of any arm.
macro_rules! builtin {
    ($self:expr, $c:ident => $body:expr, fixed => $fixed:expr, custom($u:ident) => $custom:expr) => {
        match $self {
            Cc::Fixed => $fixed,
            Cc::Dcqcn($c) => $body,
            Cc::Timely($c) => $body,
            Cc::Dctcp($c) => $body,
            Cc::Hpcc($c) => $body,
            Cc::Swift($c) => $body,
            Cc::DocaRtt($c) => $body,
            Cc::FairShare($c) => $body,
            Cc::ReceiverGrants($c) => $body,
            Cc::ReceiverBackpressure($c) => $body,
            Cc::TenantGuard($c) => $body,
            Cc::Homa($c) => $body,
            Cc::Multipath($c) => $body,
            Cc::C($c) => $body,
            Cc::Custom($u) => $custom,
        }
    };
}

impl Cc {
    pub fn name(&self) -> &str {
        builtin!(self, c => c.name(), fixed => "none", custom(u) => u.name())
    }

    #[inline]
    pub fn subscriptions(&self) -> EventMask {
        builtin!(self, c => c.subscriptions(), fixed => EventMask(0), custom(u) => u.subscriptions())
    }

    pub fn on_start(&mut self, ctx: &mut CcContext) -> Result<(), String> {
        if let Cc::C(c) = self {
            return c.try_on_start(ctx);
        }
        builtin!(self, c => { c.on_start(ctx); Ok(()) }, fixed => Ok(()), custom(u) => guarded(|| u.on_start(ctx)))
    }

    #[inline]
    pub fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) -> Result<(), String> {
        if let Cc::C(c) = self {
            return c.try_on_event(ev, ctx);
        }
        builtin!(self, c => { c.on_event(ev, ctx); Ok(()) }, fixed => Ok(()), custom(u) => guarded(|| u.on_event(ev, ctx)))
    }
}

/// An exception a controller in another language raised, already worded
/// (`raised ValueError: ...` and its traceback). Its binding unwinds with it
/// (`std::panic::resume_unwind`, which skips the panic hook) and the guard
/// reports it as it is, without "panicked".
pub struct ControllerRaised(pub String);

fn guarded(f: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
        if let Some(s) = e.downcast_ref::<&str>() {
            format!("panicked: {s}")
        } else if let Some(r) = e.downcast_ref::<ControllerRaised>() {
            r.0.clone()
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
            return Err(
                "set a dequeue rate of 0 bit/s (allowed: 1 bit/s up to the line rate)".into(),
            );
        }
        if r > line_rate {
            return Err(format!(
                "set a dequeue rate of {r} above the line rate {line_rate}"
            ));
        }
    }
    if let Some(Some(0)) = a.window {
        return Err("set a window of 0 bytes (allowed: at least 1 byte, or no window)".into());
    }
    if let Some(s) = a.share {
        if s == 0 || s > 1 << 16 {
            return Err(format!(
                "set a share of {s} packets per turn (allowed: 1 to 65536)"
            ));
        }
    }
    if let Some(c) = a.class {
        if c == 0 || c as usize >= crate::packet::NUM_CLASSES {
            return Err(format!(
                "set traffic class {c} (allowed: 1 to {}; 0 is the control class)",
                crate::packet::NUM_CLASSES - 1
            ));
        }
    }
    Ok(())
}
