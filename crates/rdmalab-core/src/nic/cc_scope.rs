//! Enforcement scope (`nic.cc_scope`): which QPs one congestion-control
//! state governs.
//!
//! The IB specification enforces CC per QP: every QP has its own state and
//! starts at line rate. That is what the attacks of Snyder et al., "RDMA
//! Congestion Control: It's Only for the Compliant", exploit: open more QPs
//! (parallel), or a fresh QP every RTT (staggered). A NIC may instead keep
//! one state for several QPs, a *CC group*:
//!
//! * `destination`: the QPs from a NIC to one destination address share a
//!   state, and *each* sends at the shared rate (the rate is not split).
//!   This is what the paper measured on ConnectX-5 (§IV-A, and NVIDIA's
//!   destination-based CC patent, its ref. [4]); a tenant escapes it by
//!   giving the destination host more addresses.
//! * `pair`: the QPs between two hosts share a state and split its rate
//!   between them (per-src/dst CC, the paper's §V and Table I).
//! * `tenant`: all QPs of one tenant at a NIC share a state and split its
//!   rate, whatever their destination (Seawall's per-source CC, NSDI'11, at
//!   tenant granularity): shuffled overlays gain nothing, but one congested
//!   destination slows the tenant's traffic to every other.
//!
//! A group is a virtual flow: its controller sees the group's byte stream
//! (bytes first sent and acknowledged by all its QPs), its rate and window.
//! A QP that joins a group starts at the group's current rate, not at line
//! rate. With a split scope the NIC also paces the group as a whole (one
//! token bucket at the group's rate) and holds it to one window of bytes
//! in flight. The group's timers run on the slots of its first QP.

use super::qp::Qp;
use crate::control::{Cc, EventMask, PathFacts};
use crate::time::{Rate, Time};
use std::collections::HashMap;

/// `nic.cc_scope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CcScope {
    /// One CC state per QP (the IB specification; the default).
    #[default]
    Qp,
    /// Per destination address, shared rate not split (ConnectX-5).
    Destination,
    /// Per pair of hosts, rate split between the QPs.
    Pair,
    /// Per tenant at each sending NIC, rate split between the QPs.
    Tenant,
}

impl CcScope {
    pub const NAMES: &'static [&'static str] = &["qp", "destination", "pair", "tenant"];

    pub fn parse(s: &str) -> Option<CcScope> {
        Some(match s {
            "qp" => CcScope::Qp,
            "destination" => CcScope::Destination,
            "pair" => CcScope::Pair,
            "tenant" => CcScope::Tenant,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        CcScope::NAMES[self as usize]
    }

    /// Whether the group's QPs split its rate (and window) between them.
    pub fn splits(self) -> bool {
        matches!(self, CcScope::Pair | CcScope::Tenant)
    }

    /// The key of the group a QP belongs to: (sending NIC, a, b).
    pub fn key(
        self,
        tx_nic: u32,
        dst_node: u32,
        address: u16,
        tenant: u32,
    ) -> Option<(u32, u32, u32)> {
        match self {
            CcScope::Qp => None,
            CcScope::Destination => Some((tx_nic, dst_node, address as u32)),
            CcScope::Pair => Some((tx_nic, dst_node, u32::MAX)),
            CcScope::Tenant => Some((tx_nic, u32::MAX, tenant)),
        }
    }
}

/// No group: the QP has its own state.
pub const NO_GROUP: u32 = u32::MAX;

/// One CC state shared by several QPs.
pub struct CcGroup {
    pub cc: Cc,
    pub cc_mask: EventMask,
    /// Its QPs with messages posted (the ones its rate and window reach).
    pub members: Vec<u32>,
    /// The QP whose timer slots carry the group's timers (the first to join).
    pub timer_qp: u32,
    pub split: bool,
    pub rate: Rate,
    pub window: Option<u64>,
    /// Split scopes: when the group's aggregate pacing lets its next packet
    /// go, and when its last packet started and its wire size (a new rate
    /// re-times the next packet from it, as a QP's own pacing does).
    pub next_avail: Time,
    pub last_tx_start: Time,
    pub last_tx_wire: u32,
    /// Payload bytes its QPs first sent, and had acknowledged.
    pub sent_bytes: u64,
    pub acked_bytes: u64,
    /// The first QP's path, which the controller is told about.
    pub path: PathFacts,
}

impl CcGroup {
    #[inline]
    pub fn bytes_in_flight(&self) -> u64 {
        self.sent_bytes.saturating_sub(self.acked_bytes)
    }

    /// Whether a split group's aggregate window is full.
    #[inline]
    pub fn window_full(&self, scales_with_rate: bool) -> bool {
        let Some(w) = self.window.filter(|_| self.split) else {
            return false;
        };
        let w = if scales_with_rate {
            self.rate.scale_bytes(w, self.path.line_rate)
        } else {
            w
        };
        self.bytes_in_flight() >= w.max(1)
    }
}

/// Every group of a run, and the index from a group key to it.
#[derive(Default)]
pub struct CcGroups {
    pub scope: CcScope,
    pub groups: Vec<CcGroup>,
    pub index: HashMap<(u32, u32, u32), u32>,
}

impl CcGroups {
    /// QP `qi` of group `g` has a message posted: it follows the group's
    /// rate and window again.
    pub fn list(&mut self, g: u32, qp: &mut Qp) {
        if !qp.group_listed {
            qp.group_listed = true;
            self.groups[g as usize].members.push(qp.id);
        }
    }

    /// Drop the QPs of group `g` that have nothing posted (finished flows).
    pub fn prune(&mut self, g: u32, qps: &mut [Qp]) {
        self.groups[g as usize].members.retain(|&m| {
            let q = &mut qps[m as usize];
            q.group_listed = !q.msgs.is_empty();
            q.group_listed
        });
    }
}
