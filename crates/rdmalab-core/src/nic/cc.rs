//! Where the NIC meets the control plane: raise an event to the QP's
//! controller, check the actions it recorded, and apply them to the data path.
//!
//! At the ASIC placement (the only one in the core so far) actions take
//! effect at once; the SCR framework adds trigger, processing and install
//! latencies between these two steps.

use super::qp::CC_SLOT_BASE;
use crate::control::{check_actions, Actions, CcContext, CcEvent, CC_TIMER_SLOTS};
use crate::time::Rate;
use crate::world::{RunError, World};

impl World {
    /// Deliver `ev` to QP `qi`'s controller and apply what it decides. An ACK
    /// passes its packet so the controller can read the echoed INT records.
    pub(crate) fn raise_cc(&mut self, qi: u32, ev: CcEvent, ack: Option<crate::packet::PacketId>) {
        let now = self.now();
        let qp = &mut self.qps[qi as usize];
        let int = match ack {
            Some(id) => self.pkts.int_of(id),
            None => &[],
        };
        let mut actions = Actions::default();
        let mut ctx =
            CcContext::with_facts(now, qp.rate, qp.bytes_in_flight(), qp.snd_nxt_off, qp.path, int, &mut actions);
        if let Err(detail) = qp.cc.on_event(&ev, &mut ctx) {
            self.fail_controller(qi, ev.name(), detail);
            return;
        }
        self.apply_actions(qi, ev.name(), &actions);
    }

    /// Start the controller of a new QP.
    pub(crate) fn start_cc(&mut self, qi: u32) {
        let now = self.now();
        let qp = &mut self.qps[qi as usize];
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(now, qp.rate, 0, 0, qp.path, &[], &mut actions);
        if let Err(detail) = qp.cc.on_start(&mut ctx) {
            self.fail_controller(qi, "START", detail);
            return;
        }
        self.qps[qi as usize].cc_mask = self.qps[qi as usize].cc.subscriptions();
        self.apply_actions(qi, "START", &actions);
    }

    fn fail_controller(&mut self, qi: u32, event: &str, detail: String) {
        if self.error.is_none() {
            self.error = Some(RunError::Controller {
                controller: self.qps[qi as usize].cc.name().to_string(),
                qp: qi,
                event: event.to_string(),
                detail,
            });
        }
    }

    fn apply_actions(&mut self, qi: u32, event: &str, a: &Actions) {
        let line = self.nics[self.qps[qi as usize].tx_nic as usize].line_rate;
        if let Err(detail) = check_actions(a, line) {
            self.fail_controller(qi, event, detail);
            return;
        }
        if let Some(r) = a.rate {
            self.set_dequeue_rate(qi, r);
        }
        if let Some(w) = a.window {
            self.qps[qi as usize].window = w;
        }
        for s in 0..CC_TIMER_SLOTS {
            match a.timers[s] {
                Some(Some(t)) => self.set_qp_timer(qi, CC_SLOT_BASE + s, t.max(self.now())),
                Some(None) => self.set_qp_timer(qi, CC_SLOT_BASE + s, crate::time::Time::NEVER),
                None => {}
            }
        }
        if a.rate.is_some() || a.window.is_some() {
            let port = self.nics[self.qps[qi as usize].tx_nic as usize].port;
            self.try_transmit(port);
        }
    }

    /// Change a QP's dequeue rate. The next packet's earliest start is
    /// recomputed from the last packet at the new rate, as ns-3's `ChangeRate` does.
    pub(crate) fn set_dequeue_rate(&mut self, qi: u32, r: Rate) {
        let qp = &mut self.qps[qi as usize];
        if qp.rate == r {
            return;
        }
        qp.rate = r;
        if qp.last_tx_wire > 0 {
            qp.next_avail = qp.last_tx_start + r.serialization(qp.last_tx_wire as u64);
        }
    }
}
