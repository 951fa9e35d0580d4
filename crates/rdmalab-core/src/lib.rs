//! # rdmalab-core
//!
//! A deterministic, packet-level simulator of RoCEv2 NICs and datacenter
//! fabrics in which transport control is software.
//!
//! A tour, in the order a packet meets things:
//!
//! * [`workload`] posts WQEs (messages) on queue pairs at their start times.
//! * [`nic`] schedules QPs (round robin, each paced at its *dequeue rate*,
//!   optionally windowed), packetises messages at the MTU with real RoCEv2
//!   header sizes ([`packet::wire`]), and on the receive side ACKs, NACKs
//!   sequence gaps (go-back-N) and sends CNPs for ECN-marked packets.
//! * [`net`] carries frames over links (rate, delay, loss, outages) through
//!   output-queued switches with a shared buffer, PFC, ECN and INT, routed on
//!   shortest paths with per-switch-seeded ECMP.
//! * [`control`] is the only door between the NIC and congestion control: the
//!   NIC raises events, a controller records actions, the NIC applies them.
//!   [`algo`] holds the algorithms (DCQCN first), which see nothing else.
//! * [`record`] keeps flow completions, samples, PFC events and drops, and
//!   writes them as CSV and in the ns-3 HPCC simulator's text formats.
//! * [`scenario`] parses and validates a run's configuration; [`world`] builds
//!   it and runs the [`engine`]'s event loop in integer picoseconds ([`time`])
//!   with per-component random streams ([`rng`]).
//!
//! The core does no I/O of its own and never reads the wall clock: the same
//! scenario and seed give the same bytes out, everywhere.

pub mod algo;
pub mod config;
pub mod control;
pub mod engine;
pub mod host;
pub mod net;
pub mod nic;
pub mod packet;
pub mod parallel;
pub mod record;
pub mod rng;
pub mod scenario;
pub mod time;
pub mod workload;
pub mod world;
