//! Where the NIC meets the control plane: raise an event to the QP's
//! controller, check the actions it recorded, and apply them to the data path.
//!
//! At the ASIC placement (the only one in the core so far) actions take
//! effect at once; the SCR framework adds trigger, processing and install
//! latencies between these two steps.

use super::cc_scope::NO_GROUP;
use super::qp::CC_SLOT_BASE;
use crate::control::framework::{
    ControlDelay, Entry, EventType, PendingInstall, ThreadSend, NO_ENTRY,
};
use crate::control::{check_actions, Actions, CcContext, CcEvent, NicFacts, CC_TIMER_SLOTS};
use crate::packet::IntHop;
use crate::time::Rate;
use crate::world::{Event, RunError, World};

/// The counters of the NIC at the end of `qp` where an event happened.
fn nic_facts(
    nics: &[super::Nic],
    ports: &[crate::net::Port],
    qp: &super::qp::Qp,
    at_receiver: bool,
) -> NicFacts {
    let nic = &nics[if at_receiver { qp.rx_nic } else { qp.tx_nic } as usize];
    NicFacts {
        node: nic.node,
        active_qps: (nic.active.len() + nic.ns3_qps.len() + nic.parked.len()) as u32,
        tx_bytes: ports[nic.port as usize].tx_bytes,
        rx_bytes: nic.rx_bytes,
        rx_payload: nic.rx_payload,
    }
}

/// What every event's context says of QP `qp` (keyed `key`: its id, or its
/// CC group's) and of the NIC at the end where the event happened.
fn qp_facts(
    ctx: &mut CcContext,
    nics: &[super::Nic],
    ports: &[crate::net::Port],
    qp: &super::qp::Qp,
    key: u32,
    at_receiver: bool,
) {
    ctx.udp_sport = qp.udp_sport;
    ctx.tenant = qp.tenant;
    ctx.posted_bytes = qp.byte_end;
    ctx.at_receiver = at_receiver;
    ctx.qp = key;
    ctx.nic = nic_facts(nics, ports, qp, at_receiver);
}

/// Who tries the sender's port once a new rate or window is applied: it may
/// now send.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    Now,
    /// The caller, right after, with nothing in between.
    ByCaller,
}

impl World {
    /// Deliver `ev` to QP `qi`'s controller and apply what it decides. An ACK
    /// passes its packet so the controller can read the echoed INT records.
    #[inline(never)]
    pub(crate) fn raise_cc(&mut self, qi: u32, ev: CcEvent, ack: Option<crate::packet::PacketId>) {
        self.deliver_cc(qi, ev, ack, Wake::Now);
    }

    /// [`World::raise_cc`] for an ACK, whose handler tries the sender's port
    /// right after anyway (the ACK may have opened the window): a new rate
    /// or window does not try it first. With HPCC, which sets both on every
    /// ACK, that was a second search of the NIC's QPs per ACK.
    #[inline(never)]
    pub(crate) fn raise_ack_cc(&mut self, qi: u32, ev: CcEvent, ack: crate::packet::PacketId) {
        self.deliver_cc(qi, ev, Some(ack), Wake::ByCaller);
    }

    #[inline(always)]
    fn deliver_cc(
        &mut self,
        qi: u32,
        ev: CcEvent,
        ack: Option<crate::packet::PacketId>,
        wake: Wake,
    ) {
        if let (None, CcEvent::Ack { rtt, .. }) = (&self.ctl, &ev) {
            // Decided and in effect at once: the loop is the RTT the NIC saw.
            self.stats.control_loop.add(*rtt);
        }
        let g = self.qps[qi as usize].group;
        if g != NO_GROUP {
            self.raise_group_cc(g, qi, ev, ack, wake);
            return;
        }
        if self.ctl.is_some() {
            self.ctl_raise(qi, ev, ack);
            return;
        }
        let now = self.now();
        let qp = &mut self.qps[qi as usize];
        let int = match ack {
            Some(id) => self.pkts.int_of(id),
            None => &[],
        };
        let header = match ack {
            Some(id) => self.pkts.header_of(id),
            None => &[],
        };
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(
            now,
            qp.rate,
            qp.bytes_in_flight(),
            qp.snd_nxt_off,
            qp.path,
            int,
            &mut actions,
        );
        qp_facts(&mut ctx, &self.nics, &self.ports, qp, qi, ev.at_receiver());
        ctx.header = header;
        if let Err(detail) = qp.cc.on_event(&ev, &mut ctx) {
            self.fail_controller(qi, ev.name(), detail);
            return;
        }
        self.apply_actions(qi, ev.name(), &actions, ev.at_receiver(), wake);
    }

    /// Deliver an application hint to QP `qi`'s controller (host domain).
    pub fn hint(
        &mut self,
        qi: u32,
        kind: crate::control::HintKind,
        value: f64,
    ) -> Result<(), String> {
        if qi as usize >= self.qps.len() {
            return Err(format!("no QP {qi}; {} QPs exist so far", self.qps.len()));
        }
        if self.qps[qi as usize]
            .cc_mask
            .has(crate::control::EventMask::PEER)
        {
            self.raise_cc(qi, CcEvent::Hint { kind, value }, None);
        }
        Ok(())
    }

    /// `nic.cc_scope`: deliver `ev` of QP `qi` to the controller of its
    /// group, which sees the group's byte stream, rate and window.
    #[inline(never)]
    fn raise_group_cc(
        &mut self,
        g: u32,
        qi: u32,
        ev: CcEvent,
        ack: Option<crate::packet::PacketId>,
        wake: Wake,
    ) {
        let now = self.now();
        let grp = &mut self.cc_groups.groups[g as usize];
        let ev = match ev {
            CcEvent::Ack {
                acked_bytes,
                rtt,
                ece,
                hops,
                ..
            } => CcEvent::Ack {
                acked_bytes,
                acked_through: grp.acked_bytes,
                rtt,
                ece,
                hops,
            },
            e => e,
        };
        let int = match ack {
            Some(id) => self.pkts.int_of(id),
            None => &[],
        };
        let header = match ack {
            Some(id) => self.pkts.header_of(id),
            None => &[],
        };
        let qp = &self.qps[qi as usize];
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(
            now,
            grp.rate,
            grp.bytes_in_flight(),
            grp.sent_bytes,
            grp.path,
            int,
            &mut actions,
        );
        qp_facts(
            &mut ctx,
            &self.nics,
            &self.ports,
            qp,
            grp.timer_qp,
            ev.at_receiver(),
        );
        ctx.header = header;
        if let Err(detail) = grp.cc.on_event(&ev, &mut ctx) {
            self.fail_controller(qi, ev.name(), detail);
            return;
        }
        self.apply_actions(qi, ev.name(), &actions, ev.at_receiver(), wake);
    }

    /// `nic.cc_scope`: put new QP `qi` in the group of `key`, or open that
    /// group and start its controller. A QP joining a running group sends
    /// at the group's rate and window, not at line rate, from its first post.
    pub(crate) fn join_cc_group(&mut self, qi: u32, key: (u32, u32, u32)) {
        if let Some(&g) = self.cc_groups.index.get(&key) {
            // Its rate and window are the group's once it posts (`post_issued`).
            let qp = &mut self.qps[qi as usize];
            qp.group = g;
            qp.cc_mask = self.cc_groups.groups[g as usize].cc_mask;
            return;
        }
        let g = self.cc_groups.groups.len() as u32;
        let qp = &mut self.qps[qi as usize];
        qp.group = g;
        let split = self.cc_groups.scope.splits();
        self.cc_groups.groups.push(super::cc_scope::CcGroup {
            cc: self.cc_cfg.make_in(&self.ctl_tables),
            cc_mask: crate::control::EventMask(0),
            members: Vec::new(),
            timer_qp: qi,
            split,
            rate: qp.rate,
            window: qp.window,
            next_avail: crate::time::Time::ZERO,
            last_tx_start: crate::time::Time::ZERO,
            last_tx_wire: 0,
            sent_bytes: 0,
            acked_bytes: 0,
            path: qp.path,
        });
        self.cc_groups.index.insert(key, g);
        let now = self.now();
        let grp = &mut self.cc_groups.groups[g as usize];
        let qp = &self.qps[qi as usize];
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(now, grp.rate, 0, 0, grp.path, &[], &mut actions);
        qp_facts(&mut ctx, &self.nics, &self.ports, qp, qi, false);
        if let Err(detail) = grp.cc.on_start(&mut ctx) {
            self.fail_controller(qi, "START", detail);
            return;
        }
        let mask = grp.cc.subscriptions();
        let mask = self.trigger_filter(mask);
        self.cc_groups.groups[g as usize].cc_mask = mask;
        self.qps[qi as usize].cc_mask = mask;
        self.apply_actions(qi, "START", &actions, false, Wake::Now);
    }

    /// `control.trigger`: packet events the filter does not pass never reach the controller.
    fn trigger_filter(&self, mask: crate::control::EventMask) -> crate::control::EventMask {
        let Some(t) = self.nic_cfg.trigger else {
            return mask;
        };
        use crate::control::EventMask as M;
        let filtered = M::ACK | M::NACK | M::CNP | M::RX;
        let keep = !filtered | (t.events.0 & filtered);
        M(mask.0 & keep)
    }

    /// Start the controller of a new QP.
    pub(crate) fn start_cc(&mut self, qi: u32) {
        let now = self.now();
        let qp = &mut self.qps[qi as usize];
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(now, qp.rate, 0, 0, qp.path, &[], &mut actions);
        qp_facts(&mut ctx, &self.nics, &self.ports, qp, qi, false);
        if let Err(detail) = qp.cc.on_start(&mut ctx) {
            self.fail_controller(qi, "START", detail);
            return;
        }
        self.qps[qi as usize].cc_mask =
            self.trigger_filter(self.qps[qi as usize].cc.subscriptions());
        self.apply_actions(qi, "START", &actions, false, Wake::Now);
    }

    #[cold]
    #[inline(never)]
    fn fail_controller(&mut self, qi: u32, event: &str, detail: String) {
        if self.error.is_none() {
            let g = self.qps[qi as usize].group;
            let cc = if g == NO_GROUP {
                &self.qps[qi as usize].cc
            } else {
                &self.cc_groups.groups[g as usize].cc
            };
            self.error = Some(RunError::Controller {
                controller: cc.name().to_string(),
                qp: qi,
                event: event.to_string(),
                detail,
            });
        }
    }

    // ------------------------------------------------- the framework path

    /// Queue `ev` for QP `qi`: fold it into a waiting entry of its type, or
    /// open one and start its trigger.
    #[cold]
    #[inline(never)]
    fn ctl_raise(&mut self, qi: u32, ev: CcEvent, ack: Option<crate::packet::PacketId>) {
        let now = self.now();
        let int: &[IntHop] = match ack {
            Some(id) => self.pkts.int_of(id),
            None => &[],
        };
        let header: &[u32] = match ack {
            Some(id) => self.pkts.header_of(id),
            None => &[],
        };
        let fw = self.ctl.as_mut().expect("framework");
        fw.ensure_qp(qi);
        let kind = EventType::of(&ev);
        fw.stats.raised[kind as usize] += 1;
        if let CcEvent::Tx { bytes, .. } = ev {
            fw.stats.tx_bytes_raised += bytes as u64;
        }
        let open = fw.open[qi as usize][kind as usize];
        // Timers, probe answers, peer messages and hints are each distinct: they never fold together.
        let distinct = matches!(
            kind,
            EventType::Timer | EventType::Rtt | EventType::Peer | EventType::Hint
        );
        if open != NO_ENTRY && !distinct {
            let how = fw.placement.coalesce[kind as usize];
            let batch = fw.placement.tx_batch_bytes;
            let trigger = fw.placement.trigger_latency;
            let e = &mut fw.entries[open as usize];
            e.absorb(&ev, int, how);
            if how != crate::control::framework::Coalesce::KeepOldest {
                e.set_header(header);
            }
            // A held TX batch starts its trigger once enough bytes have gathered.
            if !e.trigger_started && e.batch_bytes >= batch {
                e.trigger_started = true;
                self.q
                    .schedule(now + trigger, Event::CtrlTrigger { entry: open });
            }
            return;
        }
        let mut entry = Entry::new(qi, ev, now, int);
        entry.set_header(header);
        let held =
            matches!(ev, CcEvent::Tx { bytes, .. } if (bytes as u64) < fw.placement.tx_batch_bytes);
        entry.trigger_started = !held;
        let id = fw.alloc(entry);
        if !distinct {
            fw.open[qi as usize][kind as usize] = id;
        }
        // Timers and timeouts arise on the control cores themselves: no trigger path.
        let trigger = if matches!(kind, EventType::Timer | EventType::Timeout) {
            crate::time::Duration::ZERO
        } else {
            fw.placement.trigger_latency
        };
        if held {
            // Waits in its queue until the batch is full (see above).
        } else if trigger.ps() == 0 {
            self.ctl_trigger(id);
        } else {
            self.q
                .schedule(now + trigger, Event::CtrlTrigger { entry: id });
        }
    }

    /// An entry reaches its thread's ready queue.
    pub(crate) fn ctl_trigger(&mut self, id: u32) {
        let fw = self.ctl.as_mut().expect("framework");
        let now = self.q.now();
        let e = &mut fw.entries[id as usize];
        e.triggered = true;
        e.triggered_at = now;
        let (qp, kind) = (e.qp, e.kind);
        if !fw.placement.software_coalescing {
            fw.open[qp as usize][kind as usize] = NO_ENTRY;
        }
        // Each NIC has its own control cores: the event goes to a thread of
        // the NIC where it happened (the receiver's for RX and peer messages
        // to the receiver), steered by QP id within that NIC's pool.
        let at_receiver = e.event.at_receiver();
        let q = &self.qps[qp as usize];
        let nic = if at_receiver { q.rx_nic } else { q.tx_nic } as usize;
        let per_nic = fw.placement.threads_per_nic() as usize;
        let t = if per_nic == 0 {
            2 * qp as usize + at_receiver as usize
        } else {
            nic * per_nic + fw.thread_of(qp, kind)
        };
        if fw.threads.len() <= t {
            fw.threads.resize(t + 1, Default::default());
        }
        fw.threads[t].ready.push_back(id);
        if !fw.threads[t].busy {
            self.ctl_start(t);
        }
    }

    /// Thread `t` takes its next entry, runs the controller on it and
    /// schedules the install of what it decided.
    fn ctl_start(&mut self, t: usize) {
        let now = self.now();
        let fw = self.ctl.as_mut().expect("framework");
        let Some(id) = fw.threads[t].ready.pop_front() else {
            fw.threads[t].busy = false;
            return;
        };
        fw.threads[t].busy = true;
        let e = fw.entries[id as usize].clone();
        if fw.open[e.qp as usize][e.kind as usize] == id {
            fw.open[e.qp as usize][e.kind as usize] = NO_ENTRY;
        }
        fw.release(id);
        let k = e.kind as usize;
        fw.stats.processed[k] += 1;
        fw.stats.hw_coalesced[k] += e.hw_coalesced as u64;
        fw.stats.sw_coalesced[k] += e.sw_coalesced as u64;
        if let CcEvent::Tx { bytes, .. } = e.event {
            fw.stats.tx_bytes_processed += bytes as u64;
        }
        let per_nic = fw.placement.threads_per_nic() as usize;
        let cost = if per_nic == 0 {
            fw.placement.processing + fw.placement.state_access
        } else {
            fw.processing_cost(t / per_nic, t % per_nic, e.qp)
        };
        let install = fw.placement.install_latency;
        if let CcEvent::Ack { rtt, .. } = e.event {
            // The ACK's RTT, then from its raise to the decision in effect
            // (for a coalesced entry: the oldest raise and the newest RTT).
            let decided = now + cost + install;
            self.stats.control_loop.add(decided - e.first_signal + rtt);
        }
        fw.threads[t].busy_time = fw.threads[t].busy_time + cost;
        fw.threads[t].processed += 1;

        let qp = &mut self.qps[e.qp as usize];
        let mut actions = Actions::default();
        let mut ctx = CcContext::with_facts(
            now,
            qp.rate,
            qp.bytes_in_flight(),
            qp.snd_nxt_off,
            qp.path,
            &e.int[..e.int_len as usize],
            &mut actions,
        );
        ctx.coalesced = e.count;
        qp_facts(
            &mut ctx,
            &self.nics,
            &self.ports,
            qp,
            e.qp,
            e.event.at_receiver(),
        );
        ctx.header = &e.header[..e.header_len as usize];
        let result = qp.cc.on_event(&e.event, &mut ctx);
        self.q
            .schedule(now + cost, Event::CtrlDone { thread: t as u32 });
        if let Err(detail) = result {
            self.fail_controller(e.qp, e.event.name(), detail);
            return;
        }
        if !actions.is_empty() {
            let fw = self.ctl.as_mut().expect("framework");
            fw.installs[e.qp as usize].push_back(PendingInstall {
                actions,
                first_signal: e.first_signal,
                triggered_at: e.triggered_at,
                started_at: now,
                processing: cost,
                kind: e.kind,
                count: e.count,
                at_receiver: e.event.at_receiver(),
            });
            self.q
                .schedule(now + cost + install, Event::CtrlInstall { qp: e.qp });
        }
    }

    pub(crate) fn ctl_thread_done(&mut self, t: u32) {
        self.ctl_start(t as usize);
    }

    /// The oldest decided actions of QP `qi` reach the data path.
    pub(crate) fn ctl_install(&mut self, qi: u32) {
        let now = self.now();
        let fw = self.ctl.as_mut().expect("framework");
        let Some(p) = fw.installs[qi as usize].pop_front() else {
            return;
        };
        fw.stats.actions_installed += 1;
        if fw.record_delays {
            let done = p.started_at + p.processing;
            fw.delays.push(ControlDelay {
                time: now,
                qp: qi,
                kind: p.kind,
                delay: now - p.first_signal,
                coalesced: p.count,
                trigger: p.triggered_at - p.first_signal,
                wait: p.started_at - p.triggered_at,
                processing: p.processing,
                install: now - done,
            });
        }
        self.apply_actions(qi, p.kind.name(), &p.actions, p.at_receiver, Wake::Now);
    }

    fn apply_actions(&mut self, qi: u32, event: &str, a: &Actions, at_receiver: bool, wake: Wake) {
        let line = self.nics[self.qps[qi as usize].tx_nic as usize].line_rate;
        if let Err(detail) = check_actions(a, line) {
            self.fail_controller(qi, event, detail);
            return;
        }
        let g = self.qps[qi as usize].group;
        if g != NO_GROUP {
            // The group's rate and window reach every QP of it with data posted.
            self.cc_groups.prune(g, &mut self.qps);
            let grp = &mut self.cc_groups.groups[g as usize];
            if let Some(r) = a.rate.filter(|&r| r != grp.rate) {
                grp.rate = r;
                if grp.split
                    && grp.last_tx_wire > 0
                    && self.nic_cfg.rate_change == super::RateChange::Immediate
                {
                    grp.next_avail =
                        grp.last_tx_start + self.run.tx_time.of(r, grp.last_tx_wire as u64);
                }
            }
            if let Some(w) = a.window {
                grp.window = w;
            }
            for i in 0..self.cc_groups.groups[g as usize].members.len() {
                let m = self.cc_groups.groups[g as usize].members[i];
                if let Some(r) = a.rate {
                    self.set_dequeue_rate(m, r);
                }
                if let Some(w) = a.window {
                    self.qps[m as usize].window = w;
                }
            }
        }
        if let Some(r) = a.rate {
            self.set_dequeue_rate(qi, r);
        }
        if let Some(w) = a.window {
            self.qps[qi as usize].window = w;
        }
        // A group's timers run on the slots of its first QP.
        let timer_qp = if g == NO_GROUP {
            qi
        } else {
            self.cc_groups.groups[g as usize].timer_qp
        };
        if let Some(sport) = a.path {
            self.qps[qi as usize].udp_sport = sport;
        }
        if let Some(s) = a.share {
            let qp = &mut self.qps[qi as usize];
            qp.share = s;
            qp.turns_used = 0;
        }
        if let Some(c) = a.class {
            self.qps[qi as usize].class = c;
        }
        if a.header_mask != 0 {
            if self.cc_headers.len() <= qi as usize {
                self.cc_headers
                    .resize(qi as usize + 1, [0; crate::control::MAX_CC_HEADER_WORDS]);
            }
            for i in 0..crate::control::MAX_CC_HEADER_WORDS {
                if a.header_mask & (1 << i) != 0 {
                    self.cc_headers[qi as usize][i] = a.header[i];
                }
            }
        }
        for &sport in &a.probes[..a.probe_count as usize] {
            self.thread_send(qi, ThreadSend::Probe { sport });
        }
        if let Some(words) = a.oob {
            self.thread_send(
                qi,
                ThreadSend::Oob {
                    words,
                    from_receiver: at_receiver,
                },
            );
        }
        for s in 0..CC_TIMER_SLOTS {
            match a.timers[s] {
                Some(Some(t)) => self.set_qp_timer(timer_qp, CC_SLOT_BASE + s, t.max(self.now())),
                Some(None) => {
                    self.set_qp_timer(timer_qp, CC_SLOT_BASE + s, crate::time::Time::NEVER)
                }
                None => {}
            }
        }
        if (a.rate.is_some() || a.window.is_some()) && wake == Wake::Now {
            let port = self.nics[self.qps[qi as usize].tx_nic as usize].port;
            self.try_transmit(port);
        }
    }

    /// A controller's probe or peer message leaves. With `control.raw_eth`
    /// it goes through a thread of its pool (telemetry for probes, peer for
    /// messages, at the NIC that sends it), which sends at most `pps`
    /// packets per second: it waits its turn, or is dropped when `backlog`
    /// packets already wait (a dropped probe is reported lost at its timeout).
    fn thread_send(&mut self, qi: u32, s: ThreadSend) {
        let Some(raw) = self.ctl.as_ref().and_then(|fw| fw.placement.raw_eth) else {
            return self.send_now(qi, s);
        };
        let now = self.now();
        let (kind, from_receiver) = match s {
            ThreadSend::Probe { .. } => (EventType::Rtt, false),
            ThreadSend::Oob { from_receiver, .. } => (EventType::Peer, from_receiver),
        };
        let q = &self.qps[qi as usize];
        let nic = if from_receiver { q.rx_nic } else { q.tx_nic } as usize;
        let fw = self.ctl.as_mut().expect("raw_eth is a framework setting");
        let t = nic * fw.placement.threads_per_nic().max(1) as usize + fw.thread_of(qi, kind);
        if fw.threads.len() <= t {
            fw.threads.resize(t + 1, Default::default());
        }
        match raw.schedule(fw.threads[t].send_free_at, now) {
            Ok(at) => {
                fw.threads[t].send_free_at = at;
                fw.stats.raw_eth_wait = fw.stats.raw_eth_wait + (at - now);
                let slot = fw.queue_send(qi, s);
                self.q.schedule(at, Event::ThreadSend { slot });
            }
            Err(_) => {
                fw.stats.raw_eth_dropped += 1;
                if let ThreadSend::Probe { sport } = s {
                    self.register_probe(qi, sport);
                }
            }
        }
    }

    /// A thread has sent what it was given (`Event::ThreadSend`).
    pub(crate) fn ctl_thread_sent(&mut self, slot: u32) {
        let fw = self.ctl.as_mut().expect("framework");
        fw.stats.raw_eth_sent += 1;
        let (qi, s) = fw.take_send(slot);
        self.send_now(qi, s);
    }

    fn send_now(&mut self, qi: u32, s: ThreadSend) {
        match s {
            ThreadSend::Probe { sport } => self.send_probe(qi, sport),
            ThreadSend::Oob {
                words,
                from_receiver,
            } => self.send_oob(qi, words, from_receiver),
        }
    }

    /// Change a QP's dequeue rate. With `RateChange::Immediate` the next
    /// packet's earliest start is recomputed from the last packet at the new
    /// rate, as ns-3's `ChangeRate` does; with `NextPacket` it stays.
    pub(crate) fn set_dequeue_rate(&mut self, qi: u32, r: Rate) {
        let qp = &mut self.qps[qi as usize];
        if qp.rate == r {
            return;
        }
        qp.rate = r;
        if qp.last_tx_wire > 0 && self.nic_cfg.rate_change == super::RateChange::Immediate {
            qp.next_avail = qp.last_tx_start + self.run.tx_time.of(r, qp.last_tx_wire as u64);
        }
    }
}
