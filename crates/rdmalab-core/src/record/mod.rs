//! What a run records, and the text formats it is written in.
//!
//! Tables (columns documented in `docs/outputs.md`):
//! * `flows`: one row per completed flow, with FCT, ideal FCT and slowdown;
//! * `qp_samples`: per open QP and sample period, dequeue rate and delivered throughput;
//! * `port_samples`: per switch egress port and sample period, queued bytes;
//! * `pfc_events`: every PAUSE and RESUME as received by the paused port;
//! * `drops`: dropped frames per (node, port, reason);
//! * `apps`: per perftest-like application, messages, bytes and latency percentiles;
//! * `probes`: every out-of-band RTT probe answered or reported lost;
//! * `counter_samples` (with `records.counters`): per sample period, the
//!   run's ECN marks, CNPs, PFC frames, drops, retransmissions and timeouts.
//!
//! * `packets.pcap` (`records.pcap`): the frames leaving chosen ports, as
//!   RoCEv2 frames in a pcap file ([`pcap`]).
//!
//! Writers take any `io::Write`; the core never opens files itself.

mod collectives;
pub mod config;
pub mod parquet;
pub mod pcap;
pub mod quantile;

use crate::net::routing::L4Ports;
use crate::nic::qp::Verb;
use crate::time::{Duration, Rate, Time};
use crate::world::World;
use std::collections::BTreeMap;
use std::io::{self, Write};

#[derive(Clone, Debug, PartialEq)]
pub struct FlowRecord {
    pub flow: u32,
    pub qp: u32,
    pub src: u32,
    pub dst: u32,
    pub verb: Verb,
    pub udp_sport: u16,
    pub bytes: u64,
    pub start: Time,
    pub finish: Time,
    pub ideal: Duration,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
}

impl FlowRecord {
    pub fn fct(&self) -> Duration {
        self.finish - self.start
    }
    pub fn slowdown(&self) -> f64 {
        self.fct().ps() as f64 / self.ideal.ps().max(1) as f64
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QpSample {
    pub time: Time,
    pub qp: u32,
    pub rate: Rate,
    pub throughput_bps: u64,
    pub bytes_in_flight: u64,
    /// The QP's window on bytes in flight at the sample (as the controller
    /// or `nic.window` set it, scaled by rate with `window_scales_with_rate`);
    /// `None` when only its rate limits it.
    pub window: Option<u64>,
    /// The UDP source port (the path) the QP's data uses at the sample.
    pub udp_sport: u16,
}

/// One out-of-band RTT probe's outcome: answered after `rtt`, or `lost`
/// (not answered within the probe timeout; `rtt` is then that timeout).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeRecord {
    /// When the answer arrived, or when the probe was declared lost.
    pub time: Time,
    pub qp: u32,
    /// The path probed.
    pub udp_sport: u16,
    pub rtt: Duration,
    pub lost: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortSample {
    pub time: Time,
    pub node: u32,
    pub port: u32,
    pub queued_bytes: u64,
}

/// Run-wide counters over one sample period (`records.counters`): what
/// happened in (time − interval, time]; the last row of a run that stops
/// between samples is cut at its end.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct CounterSample {
    pub time: Time,
    pub ecn_marked_packets: u64,
    pub cnps_sent: u64,
    pub pfc_pauses: u64,
    pub pfc_resumes: u64,
    pub dropped_frames: u64,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
}

impl CounterSample {
    /// The counts between `earlier` totals and these, at these totals' time.
    pub(crate) fn since(&self, earlier: &CounterSample) -> CounterSample {
        CounterSample {
            time: self.time,
            ecn_marked_packets: self.ecn_marked_packets - earlier.ecn_marked_packets,
            cnps_sent: self.cnps_sent - earlier.cnps_sent,
            pfc_pauses: self.pfc_pauses - earlier.pfc_pauses,
            pfc_resumes: self.pfc_resumes - earlier.pfc_resumes,
            dropped_frames: self.dropped_frames - earlier.dropped_frames,
            retransmitted_packets: self.retransmitted_packets - earlier.retransmitted_packets,
            timeouts: self.timeouts - earlier.timeouts,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfcEvent {
    pub time: Time,
    /// The node whose port was paused (it received the frame).
    pub node: u32,
    pub port: u32,
    /// The node that sent the frame.
    pub from_node: u32,
    pub class: u8,
    pub pause: bool,
}

/// The ns-3 HPCC simulator's queue-length monitor (QLEN_MON_START/END), as
/// its `monitor_buffer`: every 100 ns from the start until the first tick at
/// or past the end, each switch port's bytes in the buffer's accounting (the
/// data classes; ACKs and PFC in the control class are not counted) go into a
/// 1 KB-bin histogram; at every multiple of 100 ms of simulated time the
/// cumulative histograms are dumped. Nothing is dumped when the window ends
/// off such a multiple: ns-3 does not either.
pub struct QlenMonitor {
    pub start: Time,
    pub end: Time,
    /// Monitored ports: (switch node, ns-3 interface index, global port id).
    pub ports: Vec<(u32, u32, u32)>,
    pub hist: Vec<Vec<u64>>,
    /// The dumps, as text in ns-3's format.
    pub text: String,
    /// In a partition of a parallel run: the histograms at each dump, to be
    /// joined with the other partitions' into `text` when the run is folded.
    pub snapshots: Vec<(Time, Vec<Vec<u64>>)>,
}

/// The ns-3 monitor's sampling period and dump period.
pub const QLEN_SAMPLE_PERIOD: Duration = Duration(100 * crate::time::PS_PER_NS);
pub const QLEN_DUMP_PERIOD: Duration = Duration(100 * crate::time::PS_PER_MS);

impl QlenMonitor {
    fn dump(&mut self, now: Time) {
        write_qlen_dump(&mut self.text, now, &self.ports, &self.hist);
    }
}

/// One dump of the monitor's histograms `hist`, in ns-3's format.
pub(crate) fn write_qlen_dump(
    text: &mut String,
    now: Time,
    ports: &[(u32, u32, u32)],
    hist: &[Vec<u64>],
) {
    use std::fmt::Write as _;
    let _ = writeln!(text, "time: {}", now.ns());
    for (i, &(node, ifindex, _)) in ports.iter().enumerate() {
        let _ = write!(text, "{node} {ifindex}");
        for c in &hist[i] {
            let _ = write!(text, " {c}");
        }
        text.push('\n');
    }
}

/// A link went down or came up, or the switches rerouted (`link` = `u32::MAX`).
#[derive(Clone, Debug)]
pub struct LinkEvent {
    pub time: Time,
    pub link: u32,
    pub event: &'static str,
}

#[derive(Default)]
pub struct Recorder {
    pub flows: Vec<FlowRecord>,
    /// Links going down and up, and switches recomputing their tables, in time order.
    pub link_events: Vec<LinkEvent>,
    pub qp_samples: Vec<QpSample>,
    pub port_samples: Vec<PortSample>,
    pub pfc_events: Vec<PfcEvent>,
    /// (node, port, reason) → (frames, frame bytes).
    pub drops: BTreeMap<(u32, u32, &'static str), (u64, u64)>,
    /// Probe answers and losses, in the order they happened (empty unless a controller probes).
    pub probes: Vec<ProbeRecord>,
    /// `records.probes: false`: probes still work, their rows are not kept
    /// (a probing controller on a long run can write millions).
    pub skip_probes: bool,
    /// `records.counters`: keep `counter_samples`.
    pub keep_counters: bool,
    pub counter_samples: Vec<CounterSample>,
    /// The counters' totals at the last sample (the next row is the difference).
    pub counters_at_last_sample: CounterSample,
}

impl Recorder {
    pub fn count_drop(&mut self, node: u32, port: u32, reason: &'static str, bytes: u64) {
        let e = self.drops.entry((node, port, reason)).or_insert((0, 0));
        e.0 += 1;
        e.1 += bytes;
    }

    /// Keep a probe's outcome, unless `records.probes: false`.
    pub fn probe(&mut self, r: ProbeRecord) {
        if !self.skip_probes {
            self.probes.push(r);
        }
    }

    pub fn pfc(
        &mut self,
        time: Time,
        node: u32,
        port: u32,
        from_node: u32,
        class: u8,
        pause: bool,
    ) {
        self.pfc_events.push(PfcEvent {
            time,
            node,
            port,
            from_node,
            class,
            pause,
        });
    }

    pub fn dropped_frames(&self) -> u64 {
        self.drops.values().map(|v| v.0).sum()
    }

    /// Frames dropped for `reason` (`buffer_full`, `link_loss`, `link_down`, `no_route`).
    pub fn dropped_frames_for(&self, reason: &str) -> u64 {
        self.drops
            .iter()
            .filter(|(k, _)| k.2 == reason)
            .map(|(_, v)| v.0)
            .sum()
    }
}

impl World {
    #[cold]
    #[inline(never)]
    pub(crate) fn record_flow(&mut self, f: u32, qi: u32, start: Time, finish: Time) {
        let spec = &self.workload.flows[f as usize];
        let qp = &self.qps[qi as usize];
        let ideal = self.ideal_fct(
            spec.src,
            spec.dst,
            L4Ports {
                sport: qp.udp_sport,
                dport: qp.udp_dport,
            },
            spec.verb,
            spec.bytes,
        );
        self.rec.flows.push(FlowRecord {
            flow: f,
            qp: qi,
            src: spec.src,
            dst: spec.dst,
            verb: spec.verb,
            udp_sport: qp.udp_sport,
            bytes: spec.bytes,
            start,
            finish,
            ideal,
            retransmitted_packets: qp.retransmitted_packets,
            timeouts: qp.timeouts,
        });
    }

    /// Links (rate, delay) that a frame from `src` to `dst` with this source port crosses.
    pub fn path_links(&self, src: u32, dst: u32, l4: L4Ports) -> Vec<(Rate, Duration)> {
        let mut links = Vec::new();
        let mut port = self.node_ports[src as usize][0];
        for _ in 0..64 {
            let p = &self.ports[port as usize];
            links.push((p.rate(), p.delay));
            let next = self.ports[p.peer as usize].node;
            if next == dst || !self.is_switch(next) {
                break;
            }
            match self.routing.select(next, src, dst, l4) {
                Some(np) => port = np,
                None => break,
            }
        }
        links
    }

    /// What a controller may know of the path from `src` to `dst`: line rate,
    /// the idle round trip of one full packet and its ACK, switch hops, MTU.
    pub fn path_facts(
        &self,
        src: u32,
        dst: u32,
        l4: L4Ports,
        line_rate: Rate,
    ) -> crate::control::PathFacts {
        let w = self.nic_cfg.wire;
        let links = self.path_links(src, dst, l4);
        let data = w.on_wire(w.data_frame(w.mtu_payload, 0)) as u64;
        let ack = w.on_wire(w.ack_with_int()) as u64;
        let rtt: u64 = links
            .iter()
            .map(|l| 2 * l.1.ps() + l.0.serialization(data).ps() + l.0.serialization(ack).ps())
            .sum();
        crate::control::PathFacts {
            line_rate,
            base_rtt: Duration(rtt),
            hops: links.len().saturating_sub(1) as u8,
            mtu: w.mtu_payload,
            packet_overhead: (data - w.mtu_payload as u64) as u32,
        }
    }

    /// FCT of the message alone on an idle network: its packets leave the NIC
    /// back to back and cross the path store-and-forward (a packet starts on a
    /// link when it has fully arrived and the link has sent the one before it),
    /// then the ACK comes back (WRITE, SEND), or the READ request goes out
    /// first (READ). Wire bytes include every header, preamble and gap.
    pub fn ideal_fct(&self, src: u32, dst: u32, l4: L4Ports, verb: Verb, bytes: u64) -> Duration {
        let w = self.nic_cfg.wire;
        // Data travels requester→responder, except for READ.
        let (dsrc, ddst) = if verb == Verb::Read {
            (dst, src)
        } else {
            (src, dst)
        };
        let links = self.path_links(dsrc, ddst, l4);
        let n = w.packets_for(bytes);
        let last_payload = bytes - (n - 1) * w.mtu_payload as u64;
        let size = |k: u64| -> u64 {
            let payload = if k + 1 == n {
                last_payload
            } else {
                w.mtu_payload as u64
            };
            let extra = if k == 0 && verb == Verb::Write {
                w.write_first_extra
            } else {
                0
            };
            w.on_wire(w.data_frame(payload as u32, extra)) as u64
        };
        if verb == Verb::Read {
            // The request goes out first; the READ completes when the last byte arrives.
            let (arrived, _) = idle_transfer(&links, n, size, None);
            let prop: u64 = links.iter().map(|l| l.1.ps()).sum();
            let req = w.on_wire(w.read_request_frame) as u64;
            let out = prop
                + links
                    .iter()
                    .map(|l| l.0.serialization(req).ps())
                    .sum::<u64>();
            return Duration(out + arrived);
        }
        // The ACKs (every `ack_every` packets and the last) come back the same
        // links in reverse, store-and-forward; the last one completes the WRITE.
        let ack = AckPolicy {
            wire_bytes: w.on_wire(w.ack_with_int()) as u64,
            every: self.nic_cfg.ack_every_packets.max(1) as u64,
        };
        let (_, last_ack) = idle_transfer(&links, n, size, Some(ack));
        Duration(last_ack)
    }

    /// Monitor switch queue lengths between `start` and `end` (ns-3's QLEN_MON).
    pub fn set_qlen_monitor(&mut self, start: Time, end: Time) {
        let mut ports = Vec::new();
        for sw in &self.switches {
            for &p in &self.node_ports[sw.node as usize] {
                // ns-3 numbers a node's devices from 1 (0 is the loopback).
                ports.push((sw.node, self.ports[p as usize].local + 1, p));
            }
        }
        let n = ports.len();
        self.qlen_monitor = Some(QlenMonitor {
            start,
            end,
            ports,
            hist: vec![Vec::new(); n],
            text: String::new(),
            snapshots: Vec::new(),
        });
        self.q
            .schedule(start.max(self.now()), crate::world::Event::QlenSample);
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn qlen_sample(&mut self) {
        let now = self.now();
        let Some(m) = self.qlen_monitor.as_mut() else {
            return;
        };
        // A partition of a parallel run samples the ports it owns.
        let part = self.part.as_ref().map(|c| (c.id, c.node_part.clone()));
        for (i, &(node, _, p)) in m.ports.iter().enumerate() {
            if part
                .as_ref()
                .is_some_and(|(me, np)| np[node as usize] != *me)
            {
                continue;
            }
            let port = &self.ports[p as usize];
            let bytes = port.queued_total - port.queue(crate::net::CONTROL_CLASS).bytes;
            let bin = (bytes / 1000) as usize;
            let h = &mut m.hist[i];
            if h.len() <= bin {
                h.resize(bin + 1, 0);
            }
            h[bin] += 1;
        }
        if now.ps() % QLEN_DUMP_PERIOD.ps() == 0 {
            if part.is_some() {
                m.snapshots.push((now, m.hist.clone()));
            } else {
                m.dump(now);
            }
        }
        let next = now + QLEN_SAMPLE_PERIOD;
        if now < m.end && next <= self.run.stop_at {
            self.q.schedule(next, crate::world::Event::QlenSample);
        }
    }

    /// The queue-length file (ns-3 QLEN_MON_FILE format).
    pub fn write_hpcc_qlen(&self, w: &mut dyn Write) -> io::Result<()> {
        if let Some(m) = &self.qlen_monitor {
            w.write_all(m.text.as_bytes())?;
        }
        Ok(())
    }

    /// ns-3's standalone FCT for the FCT file: its pair base RTT
    /// (2 × propagation + one payload's serialisation per hop) plus the
    /// message with 48 B per packet at the bottleneck (`third.cc`).
    pub fn ns3_standalone_fct(&self, src: u32, dst: u32, l4: L4Ports, bytes: u64) -> Duration {
        let w = self.nic_cfg.wire;
        let links = self.path_links(src, dst, l4);
        let payload = w.mtu_payload as u64;
        let base: u64 = links
            .iter()
            .map(|l| 2 * l.1.ps() + l.0.serialization(payload).ps())
            .sum();
        let bottleneck = links.iter().map(|l| l.0).min().unwrap_or(Rate(1));
        let packets = bytes.saturating_sub(1) / payload + 1;
        let total = bytes + packets * 48;
        Duration(
            base + (total as u128 * 8 * crate::time::PS_PER_S as u128 / bottleneck.bps() as u128)
                as u64,
        )
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn take_samples(&mut self) {
        let now = self.now();
        let Some(iv) = self.run.sample_interval else {
            return;
        };
        if self.part.is_some() {
            self.take_partition_samples(now);
            if now + iv <= self.run.stop_at {
                self.q.schedule(now + iv, crate::world::Event::Sample);
            }
            return;
        }
        let scales = self.nic_cfg.window_scales_with_rate;
        for qp in self.qps.iter_mut() {
            let open = qp.epsn < qp.psn_end || qp.snd_una < qp.psn_end;
            let moved = qp.delivered_bytes - qp.sampled_delivered;
            if !open && moved == 0 {
                continue;
            }
            let tput = (moved as u128 * 8 * crate::time::PS_PER_S as u128 / iv.ps() as u128) as u64;
            qp.sampled_delivered = qp.delivered_bytes;
            self.rec.qp_samples.push(QpSample {
                time: now,
                qp: qp.id,
                rate: qp.rate,
                throughput_bps: tput,
                bytes_in_flight: qp.bytes_in_flight(),
                window: qp.effective_window(scales),
                udp_sport: qp.udp_sport,
            });
        }
        for sw in &self.switches {
            for &p in &self.node_ports[sw.node as usize] {
                let port = &self.ports[p as usize];
                self.rec.port_samples.push(PortSample {
                    time: now,
                    node: sw.node,
                    port: port.local,
                    queued_bytes: port.queued_total,
                });
            }
        }
        if self.rec.keep_counters {
            self.sample_counters(now);
        }
        if now + iv <= self.run.stop_at {
            self.q.schedule(now + iv, crate::world::Event::Sample);
        }
    }

    /// The run's counters now, as totals since the start.
    pub(crate) fn counter_totals(&self, now: Time) -> CounterSample {
        CounterSample {
            time: now,
            ecn_marked_packets: self.stats.ecn_marked,
            cnps_sent: self.stats.cnps_sent,
            pfc_pauses: self.stats.pfc_pauses_sent,
            pfc_resumes: self.stats.pfc_resumes_sent,
            dropped_frames: self.rec.dropped_frames(),
            retransmitted_packets: self.stats.retransmitted_packets,
            timeouts: self.stats.timeouts,
        }
    }

    /// Append a `counter_samples` row: what happened since the last sample.
    pub(crate) fn sample_counters(&mut self, now: Time) {
        let t = self.counter_totals(now);
        let l = self.rec.counters_at_last_sample;
        self.rec.counter_samples.push(t.since(&l));
        self.rec.counters_at_last_sample = t;
    }

    // ------------------------------------------------------------------ writers

    pub fn write_flows_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "flow_id,qp,src,dst,src_name,dst_name,verb,udp_sport,size_bytes,start_ps,finish_ps,fct_ps,ideal_fct_ps,slowdown,retransmitted_packets,timeouts,tenant,piece"
        )?;
        let mut rows: Vec<&FlowRecord> = self.rec.flows.iter().collect();
        rows.sort_by_key(|r| r.flow);
        for r in rows {
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{},{},{},{}",
                r.flow,
                r.qp,
                r.src,
                r.dst,
                self.topo.nodes[r.src as usize].name,
                self.topo.nodes[r.dst as usize].name,
                r.verb.name(),
                r.udp_sport,
                r.bytes,
                r.start.ps(),
                r.finish.ps(),
                r.fct().ps(),
                r.ideal.ps(),
                r.slowdown(),
                r.retransmitted_packets,
                r.timeouts,
                self.tenant_name(self.workload.flows[r.flow as usize].owner.tenant),
                self.workload.flows[r.flow as usize].piece
            )?;
        }
        Ok(())
    }

    /// A tenant's name (empty for none).
    pub fn tenant_name(&self, t: u32) -> &str {
        self.workload
            .tenants
            .get(t as usize)
            .map_or("", |s| s.as_str())
    }

    /// Per tenant: its QPs, flows, payload delivered, throughput over the
    /// run so far, share of all payload delivered, and the FCT slowdown of
    /// its completed flows that are not attack pieces (no rows without
    /// `workload.tenants`).
    pub fn write_tenants_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "tenant,qps,flows,flows_completed,pieces,bytes_delivered,throughput_bps,share,slowdown_p50,slowdown_p99")?;
        let n = self.workload.tenants.len();
        if n == 0 {
            return Ok(());
        }
        let mut qps = vec![0u64; n];
        let mut bytes = vec![0u64; n];
        let mut total = 0u64;
        for qp in &self.qps {
            total += qp.delivered_bytes;
            if (qp.tenant as usize) < n {
                qps[qp.tenant as usize] += 1;
                bytes[qp.tenant as usize] += qp.delivered_bytes;
            }
        }
        let mut flows = vec![0u64; n];
        let mut pieces = vec![0u64; n];
        for f in &self.workload.flows {
            if (f.owner.tenant as usize) < n {
                flows[f.owner.tenant as usize] += 1;
                pieces[f.owner.tenant as usize] += f.piece as u64;
            }
        }
        let mut slow: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut done = vec![0u64; n];
        for r in &self.rec.flows {
            let f = &self.workload.flows[r.flow as usize];
            if (f.owner.tenant as usize) < n {
                done[f.owner.tenant as usize] += 1;
                if !f.piece {
                    slow[f.owner.tenant as usize].push(r.slowdown());
                }
            }
        }
        let elapsed = self.now().ps().max(1) as f64 / 1e12;
        for t in 0..n {
            let s = &mut slow[t];
            s.sort_by(|a, b| a.total_cmp(b));
            let pct = |q: f64| quantile::nearest_rank(s, q).unwrap_or(f64::NAN);
            let share = if total == 0 {
                0.0
            } else {
                bytes[t] as f64 / total as f64
            };
            writeln!(
                w,
                "{},{},{},{},{},{},{:.0},{:.6},{:.6},{:.6}",
                self.workload.tenants[t],
                qps[t],
                flows[t],
                done[t],
                pieces[t],
                bytes[t],
                bytes[t] as f64 * 8.0 / elapsed,
                share,
                pct(0.5),
                pct(0.99)
            )?;
        }
        Ok(())
    }

    /// The ns-3 HPCC simulator's FCT file: `sip dip sport dport size start_ns fct_ns standalone_ns`,
    /// IPs in hex as `0x0b000001 + (id / 256) << 16 + (id % 256) << 8`, in completion order;
    /// the last column is ns-3's own standalone-FCT formula, so scripts written
    /// for ns-3 compute the same slowdowns (`flows.csv` has rdmalab's exact ideal).
    pub fn write_hpcc_fct(&self, w: &mut dyn Write) -> io::Result<()> {
        self.write_hpcc_fct_from(w, 0)
    }

    /// The `fct.txt` lines of the flows finished after the first `from`, in
    /// completion order: appended as a run goes, they build the same file
    /// [`World::write_hpcc_fct`] writes at the end.
    pub fn write_hpcc_fct_from(&self, w: &mut dyn Write, from: usize) -> io::Result<()> {
        let ip = crate::net::routing::ns3_ip;
        for r in self.rec.flows.iter().skip(from) {
            // The data direction, as ns-3 reports it.
            let (s, d) = if r.verb == Verb::Read {
                (r.dst, r.src)
            } else {
                (r.src, r.dst)
            };
            let l4 = L4Ports {
                sport: r.udp_sport,
                dport: self.workload.flows[r.flow as usize].dport,
            };
            let standalone = self.ns3_standalone_fct(s, d, l4, r.bytes);
            writeln!(
                w,
                "{:08x} {:08x} {} {} {} {} {} {}",
                ip(s),
                ip(d),
                r.udp_sport,
                self.workload.flows[r.flow as usize].dport,
                r.bytes,
                r.start.ns(),
                r.fct().ps() / 1000,
                standalone.ps() / 1000
            )?;
        }
        Ok(())
    }

    pub fn write_qp_samples_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "time_ps,qp,dequeue_rate_bps,throughput_bps,bytes_in_flight,window_bytes,udp_sport"
        )?;
        for s in &self.rec.qp_samples {
            write!(
                w,
                "{},{},{},{},{},",
                s.time.ps(),
                s.qp,
                s.rate.bps(),
                s.throughput_bps,
                s.bytes_in_flight,
            )?;
            if let Some(win) = s.window {
                write!(w, "{win}")?;
            }
            writeln!(w, ",{}", s.udp_sport)?;
        }
        Ok(())
    }

    pub fn write_probes_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "time_ps,qp,udp_sport,rtt_ps,lost")?;
        for p in &self.rec.probes {
            writeln!(
                w,
                "{},{},{},{},{}",
                p.time.ps(),
                p.qp,
                p.udp_sport,
                p.rtt.ps(),
                p.lost
            )?;
        }
        Ok(())
    }

    /// Whether the run has `link_events` to write: some link has down intervals.
    pub fn has_link_events(&self) -> bool {
        self.topo.links.iter().any(|l| !l.down.is_empty())
    }

    pub fn write_link_events_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "time_ps,event,link,node_a,node_a_name,node_b,node_b_name"
        )?;
        for e in &self.rec.link_events {
            if e.link == u32::MAX {
                writeln!(w, "{},{},,,,,", e.time.ps(), e.event)?;
                continue;
            }
            let l = &self.topo.links[e.link as usize];
            writeln!(
                w,
                "{},{},{},{},{},{},{}",
                e.time.ps(),
                e.event,
                e.link,
                l.a,
                self.topo.nodes[l.a as usize].name,
                l.b,
                self.topo.nodes[l.b as usize].name
            )?;
        }
        Ok(())
    }

    pub fn write_counter_samples_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "time_ps,ecn_marked_packets,cnps_sent,pfc_pauses,pfc_resumes,dropped_frames,retransmitted_packets,timeouts"
        )?;
        let mut rows = self.rec.counter_samples.clone();
        // What happened after the last sample, up to the end of the run.
        let (t, l) = (
            self.counter_totals(self.now()),
            self.rec.counters_at_last_sample,
        );
        if self.rec.keep_counters && t.time > l.time {
            rows.push(t.since(&l));
        }
        for c in &rows {
            writeln!(
                w,
                "{},{},{},{},{},{},{},{}",
                c.time.ps(),
                c.ecn_marked_packets,
                c.cnps_sent,
                c.pfc_pauses,
                c.pfc_resumes,
                c.dropped_frames,
                c.retransmitted_packets,
                c.timeouts
            )?;
        }
        Ok(())
    }

    pub fn write_port_samples_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "time_ps,node,node_name,port,queued_bytes")?;
        for s in &self.rec.port_samples {
            writeln!(
                w,
                "{},{},{},{},{}",
                s.time.ps(),
                s.node,
                self.topo.nodes[s.node as usize].name,
                s.port,
                s.queued_bytes
            )?;
        }
        Ok(())
    }

    pub fn write_pfc_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "time_ps,node,node_name,port,from_node,class,event")?;
        for e in &self.rec.pfc_events {
            writeln!(
                w,
                "{},{},{},{},{},{},{}",
                e.time.ps(),
                e.node,
                self.topo.nodes[e.node as usize].name,
                e.port,
                e.from_node,
                e.class,
                if e.pause { "pause" } else { "resume" }
            )?;
        }
        Ok(())
    }

    /// The ns-3 HPCC simulator's PFC file: `time_ns node_id node_type if_index type`
    /// (node_type 0 host, 1 switch; type 1 pause, 0 resume).
    pub fn write_hpcc_pfc(&self, w: &mut dyn Write) -> io::Result<()> {
        for e in &self.rec.pfc_events {
            let t = if self.is_switch(e.node) { 1 } else { 0 };
            // ns-3 interface indices start at 1 (0 is the loopback).
            writeln!(
                w,
                "{} {} {} {} {}",
                e.time.ns(),
                e.node,
                t,
                e.port + 1,
                if e.pause { 1 } else { 0 }
            )?;
        }
        Ok(())
    }

    pub fn write_drops_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "node,node_name,port,reason,frames,bytes")?;
        for (&(node, port, reason), &(n, b)) in &self.rec.drops {
            writeln!(
                w,
                "{},{},{},{},{},{}",
                node, self.topo.nodes[node as usize].name, port, reason, n, b
            )?;
        }
        Ok(())
    }

    pub fn write_control_delays_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "time_ps,qp,event,delay_ps,coalesced,trigger_ps,wait_ps,processing_ps,install_ps"
        )?;
        if let Some(fw) = &self.ctl {
            for d in &fw.delays {
                writeln!(
                    w,
                    "{},{},{},{},{},{},{},{},{}",
                    d.time.ps(),
                    d.qp,
                    d.kind.name(),
                    d.delay.ps(),
                    d.coalesced,
                    d.trigger.ps(),
                    d.wait.ps(),
                    d.processing.ps(),
                    d.install.ps()
                )?;
            }
        }
        Ok(())
    }

    pub fn write_apps_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "app,name,qp,verb,message_bytes,queue_depth,messages_completed,bytes_completed,latency_mean_ps,latency_p50_ps,latency_p99_ps,tenant"
        )?;
        for (i, (spec, st)) in self.workload.apps.iter().zip(&self.apps).enumerate() {
            let mut l = st.latencies_ps.clone();
            l.sort_unstable();
            let pct = |q: f64| quantile::nearest_rank(&l, q).unwrap_or(0);
            let mean = if l.is_empty() {
                0
            } else {
                l.iter().sum::<u64>() / l.len() as u64
            };
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                i,
                spec.name,
                st.qp.map_or(-1, |q| q as i64),
                spec.verb.name(),
                spec.message_bytes,
                spec.queue_depth,
                st.completed,
                st.completed_bytes,
                mean,
                pct(0.5),
                pct(0.99),
                self.tenant_name(spec.owner.tenant)
            )?;
        }
        Ok(())
    }

    /// Per NIC: cache hits and misses, PCIe reads by purpose, and context
    /// stalls (`nic.resources`; no rows when it is off).
    pub fn write_nic_resources_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        use crate::nic::resources::PciePurpose;
        write!(
            w,
            "node,node_name,preset,qpc_hits,qpc_misses,mtt_hits,mtt_misses,wqe_hits,wqe_misses"
        )?;
        for p in PciePurpose::ALL {
            write!(w, ",pcie_{}_bytes,pcie_{}_requests", p.name(), p.name())?;
        }
        writeln!(w, ",stall_ps,unit_waits")?;
        let Some(cfg) = &self.nic_cfg.resources else {
            return Ok(());
        };
        for nic in &self.nics {
            let Some(r) = &nic.res else { continue };
            let c = r.counters();
            write!(
                w,
                "{},{},{},{},{},{},{},{},{}",
                nic.node,
                self.topo.nodes[nic.node as usize].name,
                cfg.preset,
                c.qpc.0,
                c.qpc.1,
                c.mtt.0,
                c.mtt.1,
                c.wqe.0,
                c.wqe.1
            )?;
            for p in PciePurpose::ALL {
                write!(
                    w,
                    ",{},{}",
                    c.pcie_bytes[p as usize], c.pcie_requests[p as usize]
                )?;
            }
            writeln!(w, ",{},{}", c.stall_ps, c.unit_waits)?;
        }
        Ok(())
    }

    /// The on-chip memory budget (SRNIC Table 1) for the most QPs any NIC of
    /// this run holds (as sender or receiver); no rows without `nic.resources`.
    pub fn write_nic_memory_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "structure,category,qps,typical_bytes,on_chip_bytes,how")?;
        let Some(cfg) = &self.nic_cfg.resources else {
            return Ok(());
        };
        for row in self.memory_budget(cfg) {
            writeln!(
                w,
                "{},{},{},{},{},{}",
                row.1.structure,
                row.1.category,
                row.0,
                row.1.typical_bytes,
                row.1.on_chip_bytes,
                row.1.how
            )?;
        }
        Ok(())
    }

    /// The budget rows with the QP count they are for. Selective repeat's
    /// structures are sized for a 40 µs RTT at the NIC's line rate (SRNIC and
    /// IRN: 500 slots at 100 Gb/s).
    pub fn memory_budget(
        &self,
        cfg: &crate::nic::resources::ResourceConfig,
    ) -> Vec<(u64, crate::nic::resources::BudgetRow)> {
        let mut per_nic = vec![0u64; self.nics.len()];
        for q in &self.qps {
            per_nic[q.tx_nic as usize] += 1;
            per_nic[q.rx_nic as usize] += 1;
        }
        let qps = per_nic.iter().copied().max().unwrap_or(0);
        let line = self
            .nics
            .iter()
            .map(|n| n.line_rate)
            .max()
            .unwrap_or(crate::time::Rate(100_000_000_000));
        let bdp_bytes = line.bytes_in(crate::time::Duration::from_us(40));
        let bdp_packets = bdp_bytes.div_ceil(self.nic_cfg.wire.mtu_payload as u64);
        let sr = self.nic_cfg.selective_repeat();
        crate::nic::resources::memory_budget(cfg, qps, bdp_packets, bdp_bytes, sr)
            .into_iter()
            .map(|r| (qps, r))
            .collect()
    }

    /// Every host policy that fired (`host.scheduler`): when its action took
    /// effect, on which host, which policy and what it did.
    pub fn write_policy_actions_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "time_ps,node,node_name,policy,action")?;
        let Some(cfg) = &self.nic_cfg.scheduler else {
            return Ok(());
        };
        for f in &self.policy_firings {
            let p = &cfg.policies[f.policy as usize];
            let job = |j: u32| self.workload.jobs[j as usize].as_str();
            let what = match p.then {
                crate::host::policy::PolicyAction::SetClass { job: j, class } => {
                    format!("set_class {class} job {}", job(j))
                }
                crate::host::policy::PolicyAction::SetShare { job: j, packets } => {
                    format!("set_share {packets} job {}", job(j))
                }
                crate::host::policy::PolicyAction::SetQps { job: j, qps } => {
                    format!("set_qps {qps} job {}", job(j))
                }
                crate::host::policy::PolicyAction::SetUar { job: j, placement } => {
                    format!(
                        "set_uar {} job {}",
                        crate::host::UarPlacement::NAMES[placement as usize],
                        job(j)
                    )
                }
            };
            writeln!(
                w,
                "{},{},{},{},{}",
                f.time.ps(),
                f.node,
                self.topo.nodes[f.node as usize].name,
                p.name,
                what
            )?;
        }
        Ok(())
    }
}

/// The ACKs of an idle transfer: one per `every` packets and one for the last.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckPolicy {
    pub wire_bytes: u64,
    pub every: u64,
}

/// `n` packets (packet k has `size(k)` wire bytes) leave back to back over
/// `links` on an idle path, store-and-forward, each ACKed per `ack` back
/// over the same links in reverse. Returns (in ps from the first bit) when
/// the last packet has fully arrived and when the last ACK has.
///
/// Stepping every packet costs packets × links, which made recording the
/// FCTs of large flows a visible part of a run. Packets 1..n−1 have one
/// size, so a period of `every` of them (with its ACK) maps the links'
/// busy-until times by a max-plus map that commutes with adding a constant
/// to all of them. Once one such period has moved every time by the same
/// amount c, each later one does too, and they are skipped in one step.
/// The result is exactly that of stepping every packet.
pub(crate) fn idle_transfer(
    links: &[(Rate, Duration)],
    n: u64,
    size: impl Fn(u64) -> u64,
    ack: Option<AckPolicy>,
) -> (u64, u64) {
    let l = links.len();
    // When each link has sent its last packet (`[..l]`) and its last ACK
    // (`[l..]`, in the ACKs' direction).
    let mut busy = vec![0u64; 2 * l];
    let mut before = busy.clone();
    let mut have_before = false;
    let every = ack.map_or(1, |a| a.every);
    let (mut last_arrival, mut last_ack) = (0u64, 0u64);
    let mut k = 0u64;
    while k < n {
        let s = size(k);
        let mut arrived = 0u64; // at the sending end of link 0: the NIC has it at once
        for (h, &(rate, delay)) in links.iter().enumerate() {
            let start = arrived.max(busy[h]);
            busy[h] = start + rate.serialization(s).ps();
            arrived = busy[h] + delay.ps();
        }
        last_arrival = arrived;
        if let Some(a) = ack.filter(|a| (k + 1) % a.every == 0 || k + 1 == n) {
            let mut back = arrived;
            for (h, &(rate, delay)) in links.iter().rev().enumerate() {
                let start = back.max(busy[l + h]);
                busy[l + h] = start + rate.serialization(a.wire_bytes).ps();
                back = busy[l + h] + delay.ps();
            }
            last_ack = back;
        }
        k += 1;
        if k % every != 0 {
            continue;
        }
        // A period ends at k. It is regular when its packets are all middle
        // ones (neither the first nor the last of the message).
        let regular = k > every && k < n;
        if regular && have_before {
            let c = busy[0].wrapping_sub(before[0]);
            if busy
                .iter()
                .zip(&before)
                .all(|(b, a)| b.wrapping_sub(*a) == c)
            {
                // Regular periods still to come: those starting at k, k + every, ...
                // whose last packet is before the message's last.
                let periods = if k + every < n {
                    (n - 1 - every - k) / every + 1
                } else {
                    0
                };
                let shift = periods * c;
                for b in busy.iter_mut() {
                    *b += shift;
                }
                last_arrival += shift;
                last_ack += shift;
                k += periods * every;
                have_before = false;
                continue;
            }
        }
        before.copy_from_slice(&busy);
        have_before = true;
    }
    (last_arrival, last_ack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStream;

    /// Every packet stepped, as `idle_transfer` did before it skipped periods.
    fn stepwise(
        links: &[(Rate, Duration)],
        n: u64,
        size: impl Fn(u64) -> u64,
        ack: Option<AckPolicy>,
    ) -> (u64, u64) {
        let mut done = vec![0u64; links.len()];
        let mut arrivals = Vec::new();
        for k in 0..n {
            let s = size(k);
            let mut arrived = 0u64;
            for (h, &(rate, delay)) in links.iter().enumerate() {
                let start = arrived.max(done[h]);
                done[h] = start + rate.serialization(s).ps();
                arrived = done[h] + delay.ps();
            }
            arrivals.push(arrived);
        }
        let last_arrival = arrivals.last().copied().unwrap_or(0);
        let Some(a) = ack else {
            return (last_arrival, 0);
        };
        let mut back_done = vec![0u64; links.len()];
        let mut last_ack = 0u64;
        for (k, &t) in arrivals.iter().enumerate() {
            let k = k as u64;
            if (k + 1) % a.every != 0 && k + 1 != n {
                continue;
            }
            let mut arrived = t;
            for (h, &(rate, delay)) in links.iter().rev().enumerate() {
                let start = arrived.max(back_done[h]);
                back_done[h] = start + rate.serialization(a.wire_bytes).ps();
                arrived = back_done[h] + delay.ps();
            }
            last_ack = arrived;
        }
        (last_arrival, last_ack)
    }

    /// Skipping periods gives the stepped result exactly, on paths whose
    /// slowest link is first, last or in between, with ACKs every 1 to 5
    /// packets or none (READ).
    #[test]
    fn idle_transfer_matches_stepping_every_packet() {
        let mut rng = RngStream::new(11, "idle-transfer-test");
        let rates = [25, 40, 100, 200, 400];
        for case in 0..3000 {
            let hops = 1 + rng.below(6) as usize;
            let links: Vec<(Rate, Duration)> = (0..hops)
                .map(|_| {
                    (
                        Rate::gbps(rates[rng.below(rates.len() as u64) as usize]),
                        Duration(rng.below(2_000_000)),
                    )
                })
                .collect();
            let n = 1 + rng.below(if case % 10 == 0 { 5000 } else { 60 });
            let (first, mid, last) = (
                1000 + rng.below(200),
                1000 + rng.below(100),
                60 + rng.below(1000),
            );
            let size = |k: u64| {
                if k + 1 == n {
                    last
                } else if k == 0 {
                    first
                } else {
                    mid
                }
            };
            let ack = (rng.below(4) != 0).then(|| AckPolicy {
                wire_bytes: 60 + rng.below(40),
                every: 1 + rng.below(5),
            });
            assert_eq!(
                idle_transfer(&links, n, size, ack),
                stepwise(&links, n, size, ack),
                "case {case}: {links:?} n {n} ack {ack:?}"
            );
        }
    }
}
