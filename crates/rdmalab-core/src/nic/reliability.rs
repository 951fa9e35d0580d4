//! QP timers: the retransmission timeout, the READ-request retry, and the
//! controller's timers, all through one lazily rescheduled mechanism.
//!
//! The ns-3 HPCC simulator has no retransmission timeout, so a lost tail
//! packet stalls a flow forever there; rdmalab always has one (`nic.rto`).

use super::qp::{QpTimer, CC_SLOT_BASE, PROBE_SLOT, READ_RETRY_SLOT, RTO_SLOT};
use crate::control::{CcEvent, EventMask};
use crate::time::{Duration, Time};
use crate::world::{Event, World};

impl World {
    /// Set timer `slot` of QP `qi` to fire at `deadline` (`Time::NEVER` disarms it).
    pub(crate) fn set_qp_timer(&mut self, qi: u32, slot: usize, deadline: Time) {
        let t: &mut QpTimer = &mut self.qps[qi as usize].timers[slot];
        t.deadline = deadline;
        if deadline == Time::NEVER || t.pending_at <= deadline {
            // The pending event (if any) fires first and re-arms for the deadline.
            return;
        }
        t.gen = t.gen.wrapping_add(1);
        t.pending_at = deadline;
        let gen = t.gen;
        self.q.schedule(
            deadline,
            Event::QpTimer {
                qp: qi,
                slot: slot as u8,
                gen,
            },
        );
    }

    /// The QP's retransmission timeout (`nic.rto`); `None`: no timer.
    #[inline]
    fn rto_of(&self, qi: u32) -> Option<Duration> {
        self.nic_cfg
            .rto
            .for_base_rtt(self.qps[qi as usize].path.base_rtt)
    }

    /// Start the retransmission timer if it is not running.
    pub(crate) fn arm_rto(&mut self, qi: u32) {
        let Some(rto) = self.rto_of(qi) else { return };
        if self.qps[qi as usize].timers[RTO_SLOT].deadline == Time::NEVER {
            let at = self.now() + rto;
            self.set_qp_timer(qi, RTO_SLOT, at);
        }
    }

    /// ACK progress: restart the timeout, or stop it when nothing is outstanding.
    pub(crate) fn rearm_rto_on_progress(&mut self, qi: u32) {
        let Some(rto) = self.rto_of(qi) else { return };
        let qp = &self.qps[qi as usize];
        let outstanding = qp.snd_una < qp.highest_sent || qp.snd_una < qp.ready_psn_end;
        let at = if outstanding {
            self.now() + rto
        } else {
            Time::NEVER
        };
        self.set_qp_timer(qi, RTO_SLOT, at);
    }

    pub(crate) fn arm_read_retry(&mut self, qi: u32) {
        let Some(rto) = self.rto_of(qi) else { return };
        let at = self.now() + rto;
        self.set_qp_timer(qi, READ_RETRY_SLOT, at);
    }

    pub(crate) fn on_qp_timer(&mut self, qi: u32, slot: u8, gen: u32) {
        let now = self.now();
        let slot = slot as usize;
        let t = &mut self.qps[qi as usize].timers[slot];
        if t.gen != gen {
            return; // superseded by an earlier re-arm
        }
        t.pending_at = Time::NEVER;
        if t.deadline == Time::NEVER {
            return;
        }
        if t.deadline > now {
            let d = t.deadline;
            self.set_qp_timer(qi, slot, d);
            return;
        }
        t.deadline = Time::NEVER;
        match slot {
            RTO_SLOT => self.on_retransmission_timeout(qi),
            READ_RETRY_SLOT => self.on_read_retry(qi),
            PROBE_SLOT => self.on_probe_timeout(qi),
            s => {
                let cc_slot = (s - CC_SLOT_BASE) as u8;
                self.raise_cc(qi, CcEvent::Timer { slot: cc_slot }, None);
            }
        }
    }

    fn on_retransmission_timeout(&mut self, qi: u32) {
        let qp = &self.qps[qi as usize];
        if qp.snd_una >= qp.highest_sent && qp.snd_una >= qp.ready_psn_end {
            return;
        }
        if qp.snd_una >= qp.highest_sent {
            // Nothing was sent that could be lost; the QP is only slow. Check again later.
            self.arm_rto(qi);
            return;
        }
        self.qps[qi as usize].timeouts += 1;
        self.stats.timeouts += 1;
        if self.nic_cfg.selective_repeat() {
            self.sr_on_timeout(qi);
        } else {
            self.go_back_n(qi);
        }
        if self.qps[qi as usize].cc_mask.has(EventMask::TIMEOUT) {
            self.raise_cc(qi, CcEvent::Timeout, None);
        }
        self.arm_rto(qi);
        self.activate(qi);
    }

    /// A READ request (or all its responses) may have been lost: with nothing
    /// received in order for one timeout, the requester asks again from its
    /// expected PSN (the responder goes back to it).
    fn on_read_retry(&mut self, qi: u32) {
        let qp = &self.qps[qi as usize];
        if qp.epsn >= qp.psn_end {
            return;
        }
        let quiet_since = qp.last_rx_progress;
        let Some(rto) = self.rto_of(qi) else { return };
        if self.now() - quiet_since < rto {
            let at = quiet_since + rto;
            self.set_qp_timer(qi, READ_RETRY_SLOT, at);
            return;
        }
        let epsn = qp.epsn;
        self.send_read_request(qi, epsn);
    }
}
