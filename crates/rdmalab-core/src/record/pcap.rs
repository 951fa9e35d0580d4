//! Packet capture (`records.pcap`): the simulated frames leaving chosen ports,
//! written as real RoCEv2 frames in a classic pcap file that Wireshark and
//! tshark dissect.
//!
//! File: pcap 2.4, little-endian, nanosecond timestamps (magic `0xa1b23c4d`;
//! rdmalab's picoseconds are truncated to whole ns), link type 1
//! (`LINKTYPE_ETHERNET`). Frames are written as they start on the wire, through
//! a buffered writer; nothing is held in memory. The bytes depend only on the
//! scenario and seed.
//!
//! Frames (`docs/outputs.md` has the full layout): Ethernet II without FCS;
//! IPv4 with a valid header checksum, DSCP = 8 × traffic class, ECN ECT(0) on
//! data and CE where a switch marked it; UDP to 4791 (checksum 0, as RoCEv2
//! allows); BTH; RETH on the first (or only) packet of a WRITE and on READ
//! requests; AETH on ACKs, NAKs and READ responses; rdmalab's extra headers
//! (selective repeat's extension, INT, the extensible CC header) after those,
//! before the payload; the payload as zeros padded to 4 bytes (BTH pad
//! count); 4 bytes of ICRC placeholder (zeros, not computed). PFC frames are
//! 802.1Qbb MAC control frames. Addresses are derived from node ids:
//! [`host_ip`], [`port_mac`], [`qpn`].

use crate::net::routing::ns3_ip;
use crate::nic::qp::Verb;
use crate::packet::wire::{self, ROCEV2_UDP_PORT};
use crate::packet::{PacketId, PacketKind};
use crate::time::{Duration, Time};
use crate::world::World;
use std::io::{self, BufWriter, Write};

/// `records.pcap` as validated: where to capture, what, and when.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PcapConfig {
    /// Hosts whose link is captured in both directions (node ids).
    pub hosts: Vec<u32>,
    /// Egress ports captured: (node id, its local port index; `None`: all its ports).
    pub ports: Vec<(u32, Option<u32>)>,
    /// Links captured in both directions (indices into the topology's links).
    pub links: Vec<u32>,
    /// Only frames of these flows (ids); PFC frames at the capture points are kept.
    pub flows: Option<Vec<u32>>,
    /// Frames that start on the wire in [start, end).
    pub start: Duration,
    pub end: Option<Duration>,
    /// Bytes kept of each frame (`None`: whole frames).
    pub snaplen: Option<u32>,
}

/// UDP destination port of rdmalab's out-of-band frames (RTT probes, their
/// replies, peer messages): not RoCEv2, so not 4791.
pub const OOB_UDP_PORT: u16 = 4792;
/// QPNs 0 and 1 are special in InfiniBand (SMI, GSI): QP `i` is QPN `QPN_BASE + i`.
pub const QPN_BASE: u32 = 0x100;
/// Destination MAC of PFC frames (IEEE 802.1Qbb, the MAC control address).
pub const PFC_DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// A PAUSE asks for the longest pause (rdmalab's pauses last until the RESUME,
/// a frame with quanta 0).
pub const PFC_PAUSE_QUANTA: u16 = 0xffff;
/// Ethernet frames shorter than this (without FCS) are padded.
const MIN_FRAME_NO_FCS: usize = (wire::ETH_MIN_FRAME - wire::ETH_FCS) as usize;

/// BTH opcodes (RC), InfiniBand Architecture Specification vol. 1, §9.2, table 38;
/// CNP from Annex A17.
pub mod opcode {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_ONLY: u8 = 0x04;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const READ_RESPONSE_LAST: u8 = 0x0f;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const CNP: u8 = 0x81;
}

/// AETH syndromes: ACK with no credit count (0x1f), NAK "PSN sequence error" (0x60).
pub const AETH_ACK: u8 = 0x1f;
pub const AETH_NAK_PSN_SEQ: u8 = 0x60;

/// A host's IPv4 address: the ns-3 HPCC simulator's `11.x.y.1` from the node
/// id (the addresses `fct.txt` prints), as a host-order u32.
pub fn host_ip(node: u32) -> u32 {
    ns3_ip(node)
}

/// The MAC of port `local` of node `node`: locally administered `02:` then
/// the node id in 3 bytes and the port index in 2 (a NIC's port is 0).
pub fn port_mac(node: u32, local: u32) -> [u8; 6] {
    [
        0x02,
        (node >> 16) as u8,
        (node >> 8) as u8,
        node as u8,
        (local >> 8) as u8,
        local as u8,
    ]
}

/// The QPN of rdmalab QP `qp` (both ends of the connection use it).
pub fn qpn(qp: u32) -> u32 {
    (QPN_BASE + qp) & 0xff_ffff
}

/// IPv4 header fields that vary.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4 {
    pub src: u32,
    pub dst: u32,
    pub dscp: u8,
    /// 0 not-ECT, 2 ECT(0), 3 CE.
    pub ecn: u8,
    pub ttl: u8,
}

/// Base transport header fields.
#[derive(Clone, Copy, Debug)]
pub struct Bth {
    pub opcode: u8,
    /// Backward explicit congestion notification bit (byte 4).
    pub becn: bool,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: u32,
}

/// The extended transport header after the BTH.
#[derive(Clone, Copy, Debug)]
pub enum Eth2 {
    None,
    Reth { va: u64, rkey: u32, len: u32 },
    Aeth { syndrome: u8, msn: u32 },
}

/// One frame to encode.
#[derive(Clone, Copy, Debug)]
pub enum Frame<'a> {
    /// A RoCEv2 frame: `extra` goes after the extended transport header,
    /// then `payload` zero bytes (padded to 4), then the ICRC.
    Roce {
        ip: Ipv4,
        udp_sport: u16,
        bth: Bth,
        ext: Eth2,
        extra: &'a [u8],
        payload: u32,
    },
    /// A plain UDP datagram of `payload` bytes starting with `data` (rest zeros).
    Udp {
        ip: Ipv4,
        sport: u16,
        dport: u16,
        data: &'a [u8],
        payload: u32,
    },
    /// An 802.1Qbb PFC frame.
    Pfc { class_enable: u16, quanta: [u16; 8] },
}

/// The one's-complement checksum of an IPv4 header (RFC 791, RFC 1071).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in header.chunks(2) {
        sum += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn put_ipv4_udp(buf: &mut Vec<u8>, ip: &Ipv4, sport: u16, dport: u16, udp_len: usize) {
    let start = buf.len();
    let total = (wire::IPV4_HEADER as usize + udp_len).min(0xffff) as u16;
    buf.push(0x45);
    buf.push(ip.dscp << 2 | (ip.ecn & 3));
    buf.extend_from_slice(&total.to_be_bytes());
    buf.extend_from_slice(&[0, 0]); // identification
    buf.extend_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    buf.push(ip.ttl);
    buf.push(17); // UDP
    buf.extend_from_slice(&[0, 0]); // checksum, below
    buf.extend_from_slice(&ip.src.to_be_bytes());
    buf.extend_from_slice(&ip.dst.to_be_bytes());
    let sum = ipv4_checksum(&buf[start..start + 20]);
    buf[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&(udp_len.min(0xffff) as u16).to_be_bytes());
    buf.extend_from_slice(&[0, 0]); // no UDP checksum (RoCEv2 allows 0)
}

/// Encode `f` into `buf` (cleared first): the Ethernet frame without FCS,
/// padded to the 60-byte minimum.
pub fn encode(buf: &mut Vec<u8>, dst_mac: [u8; 6], src_mac: [u8; 6], f: &Frame) {
    buf.clear();
    buf.extend_from_slice(&dst_mac);
    buf.extend_from_slice(&src_mac);
    match *f {
        Frame::Roce {
            ip,
            udp_sport,
            bth,
            ext,
            extra,
            payload,
        } => {
            buf.extend_from_slice(&0x0800u16.to_be_bytes());
            let pad = (4 - payload % 4) % 4;
            let ext_len = match ext {
                Eth2::None => 0,
                Eth2::Reth { .. } => wire::IB_RETH,
                Eth2::Aeth { .. } => wire::IB_AETH,
            };
            let udp_len = (wire::UDP_HEADER
                + wire::IB_BTH
                + ext_len
                + extra.len() as u32
                + payload
                + pad
                + wire::IB_ICRC) as usize;
            put_ipv4_udp(buf, &ip, udp_sport, ROCEV2_UDP_PORT, udp_len);
            // BTH: opcode; SE, M, pad count, transport version 0; P_Key.
            buf.push(bth.opcode);
            buf.push((pad as u8) << 4);
            buf.extend_from_slice(&0xffffu16.to_be_bytes());
            buf.push(if bth.becn { 0x40 } else { 0 });
            buf.extend_from_slice(&(bth.dest_qp & 0xff_ffff).to_be_bytes()[1..]);
            buf.push(if bth.ack_req { 0x80 } else { 0 });
            buf.extend_from_slice(&(bth.psn & 0xff_ffff).to_be_bytes()[1..]);
            match ext {
                Eth2::None => {}
                Eth2::Reth { va, rkey, len } => {
                    buf.extend_from_slice(&va.to_be_bytes());
                    buf.extend_from_slice(&rkey.to_be_bytes());
                    buf.extend_from_slice(&len.to_be_bytes());
                }
                Eth2::Aeth { syndrome, msn } => {
                    buf.push(syndrome);
                    buf.extend_from_slice(&(msn & 0xff_ffff).to_be_bytes()[1..]);
                }
            }
            buf.extend_from_slice(extra);
            buf.resize(buf.len() + (payload + pad + wire::IB_ICRC) as usize, 0);
        }
        Frame::Udp {
            ip,
            sport,
            dport,
            data,
            payload,
        } => {
            buf.extend_from_slice(&0x0800u16.to_be_bytes());
            let payload = (payload as usize).max(data.len());
            put_ipv4_udp(buf, &ip, sport, dport, wire::UDP_HEADER as usize + payload);
            buf.extend_from_slice(data);
            buf.resize(buf.len() + payload - data.len(), 0);
        }
        Frame::Pfc {
            class_enable,
            quanta,
        } => {
            buf.extend_from_slice(&0x8808u16.to_be_bytes());
            buf.extend_from_slice(&0x0101u16.to_be_bytes());
            buf.extend_from_slice(&class_enable.to_be_bytes());
            for q in quanta {
                buf.extend_from_slice(&q.to_be_bytes());
            }
        }
    }
    if buf.len() < MIN_FRAME_NO_FCS {
        buf.resize(MIN_FRAME_NO_FCS, 0);
    }
}

/// The global header of a nanosecond-resolution pcap file.
pub fn file_header(snaplen: u32) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs stay 0.
    h[16..20].copy_from_slice(&snaplen.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    h
}

/// The per-record header: timestamp (s, ns), captured and original length.
pub fn record_header(t: Time, caplen: u32, len: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    let ps = t.ps();
    let secs = ps / crate::time::PS_PER_S;
    let ns = (ps % crate::time::PS_PER_S) / 1000;
    h[0..4].copy_from_slice(&(secs as u32).to_le_bytes());
    h[4..8].copy_from_slice(&(ns as u32).to_le_bytes());
    h[8..12].copy_from_slice(&caplen.to_le_bytes());
    h[12..16].copy_from_slice(&len.to_le_bytes());
    h
}

/// Snap length written in the file header when whole frames are kept.
pub const WHOLE_FRAMES_SNAPLEN: u32 = 262_144;

/// A capture in progress: the filter resolved to ports and QPs, and the file.
pub struct Capture {
    /// Global port id → frames leaving it are captured.
    at_port: Vec<bool>,
    /// Flow id → selected (`None`: every flow).
    flows: Option<Vec<bool>>,
    /// QP id → carries a selected flow (grown as QPs are created).
    qp_selected: Vec<bool>,
    start: Time,
    end: Time,
    snaplen: Option<u32>,
    out: BufWriter<Box<dyn Write>>,
    frame: Vec<u8>,
    extra: Vec<u8>,
    error: Option<io::Error>,
    /// Frames written, and how many of them carry ECN CE.
    pub frames: u64,
    pub ce_frames: u64,
}

impl Capture {
    /// Note that QP `qp` was created for flow `flow` (`None`: an application's).
    pub fn note_qp(&mut self, qp: u32, flow: Option<u32>) {
        let Some(sel) = &self.flows else { return };
        let want = flow.is_some_and(|f| sel.get(f as usize).copied().unwrap_or(false));
        let i = qp as usize;
        if self.qp_selected.len() <= i {
            self.qp_selected.resize(i + 1, false);
        }
        self.qp_selected[i] = want;
    }

    fn qp_wanted(&self, qp: u32) -> bool {
        self.flows.is_none() || self.qp_selected.get(qp as usize).copied().unwrap_or(false)
    }

    fn write(&mut self, t: Time) {
        if self.error.is_some() {
            return;
        }
        let len = self.frame.len() as u32;
        let caplen = self.snaplen.map_or(len, |s| s.min(len));
        let r = self
            .out
            .write_all(&record_header(t, caplen, len))
            .and_then(|_| self.out.write_all(&self.frame[..caplen as usize]));
        match r {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }
}

impl World {
    /// Start writing the capture `records.pcap` asked for to `out` (its
    /// global header now, then every captured frame as it leaves its port).
    /// Does nothing when the scenario has no `records.pcap`.
    pub fn start_pcap(&mut self, out: Box<dyn Write>) -> io::Result<()> {
        let Some(cfg) = self.pcap_cfg.clone() else {
            return Ok(());
        };
        let mut at_port = vec![false; self.ports.len()];
        let mut hosts = cfg.hosts.clone();
        if cfg.hosts.is_empty() && cfg.ports.is_empty() && cfg.links.is_empty() {
            hosts = self.topo.hosts().collect();
        }
        for h in hosts {
            for &p in &self.node_ports[h as usize] {
                at_port[p as usize] = true;
                at_port[self.ports[p as usize].peer as usize] = true;
            }
        }
        for &(node, local) in &cfg.ports {
            for &p in &self.node_ports[node as usize] {
                if local.is_none_or(|l| l == self.ports[p as usize].local) {
                    at_port[p as usize] = true;
                }
            }
        }
        for &l in &cfg.links {
            for (i, p) in self.ports.iter().enumerate() {
                if p.link == l {
                    at_port[i] = true;
                }
            }
        }
        let flows = cfg.flows.as_ref().map(|ids| {
            let mut sel = vec![false; self.workload.flows.len()];
            for &f in ids {
                if let Some(s) = sel.get_mut(f as usize) {
                    *s = true;
                }
            }
            sel
        });
        let mut out = BufWriter::with_capacity(1 << 20, out);
        out.write_all(&file_header(cfg.snaplen.unwrap_or(WHOLE_FRAMES_SNAPLEN)))?;
        self.capture = Some(Box::new(Capture {
            at_port,
            flows,
            qp_selected: Vec::new(),
            start: Time::ZERO + cfg.start,
            end: cfg.end.map_or(Time::NEVER, |e| Time::ZERO + e),
            snaplen: cfg.snaplen,
            out,
            frame: Vec::with_capacity(2048),
            extra: Vec::with_capacity(256),
            error: None,
            frames: 0,
            ce_frames: 0,
        }));
        Ok(())
    }

    /// Flush the capture; the first write error, if any, is returned (once).
    pub fn flush_pcap(&mut self) -> io::Result<()> {
        let Some(c) = self.capture.as_mut() else {
            return Ok(());
        };
        if let Some(e) = c.error.take() {
            return Err(e);
        }
        c.out.flush()
    }

    /// Frames written to the capture so far, and those with ECN CE.
    pub fn pcap_counts(&self) -> Option<(u64, u64)> {
        self.capture.as_ref().map(|c| (c.frames, c.ce_frames))
    }

    /// Message sequence number after the messages that end below `psn_end`
    /// (as the sender's queue of messages knows them now).
    fn msn_below(&self, qp: u32, psn_end: u32) -> u32 {
        let q = &self.qps[qp as usize];
        let i = q.msgs.partition_point(|m| m.end_psn() <= psn_end);
        ((q.msgs_popped + i as u64) & 0xff_ffff) as u32
    }

    /// Frame `pkt` starts on the wire at `port` now: write it if captured.
    #[cold]
    #[inline(never)]
    pub(crate) fn capture_frame(&mut self, port: u32, pkt: PacketId) {
        let Some(mut c) = self.capture.take() else {
            return;
        };
        let now = self.now();
        let p = *self.pkts.get(pkt);
        let is_pfc = matches!(p.kind, PacketKind::Pfc { .. });
        if c.at_port[port as usize]
            && now >= c.start
            && now < c.end
            && (is_pfc || c.qp_wanted(p.qp))
        {
            self.encode_packet(&mut c, port, pkt);
            if p.ecn_ce {
                c.ce_frames += 1;
            }
            c.write(now);
        }
        self.capture = Some(c);
    }

    /// Build the RoCEv2 (or PFC, or UDP) frame of packet `pkt` leaving `port` into `c.frame`.
    fn encode_packet(&self, c: &mut Capture, port: u32, pkt: PacketId) {
        let p = *self.pkts.get(pkt);
        let out = &self.ports[port as usize];
        let peer = &self.ports[out.peer as usize];
        let src_mac = port_mac(out.node, out.local);
        let dst_mac = port_mac(peer.node, peer.local);
        let wf = self.nic_cfg.wire;
        let ip = Ipv4 {
            src: host_ip(p.src),
            dst: host_ip(p.dst),
            dscp: (p.class & 7) * 8,
            ecn: match (p.ect, p.ecn_ce) {
                (_, true) => 3,
                (true, false) => 2,
                _ => 0,
            },
            ttl: 64,
        };
        let Capture { frame, extra, .. } = c;
        extra.clear();
        let roce = |bth: Bth, ext: Eth2, extra: &[u8], payload: u32, frame: &mut Vec<u8>| {
            let f = Frame::Roce {
                ip,
                udp_sport: p.udp_sport,
                bth,
                ext,
                extra,
                payload,
            };
            encode(frame, dst_mac, src_mac, &f);
        };
        let bth = |opcode: u8, psn: u32, ack_req: bool| Bth {
            opcode,
            becn: false,
            dest_qp: qpn(p.qp),
            ack_req,
            psn,
        };
        match p.kind {
            PacketKind::Data => {
                let qp = &self.qps[p.qp as usize];
                let msg = qp.message_of(p.psn).map(|(_, m)| *m);
                let first = match msg {
                    Some(m) => m.first_psn == p.psn,
                    // The message was acknowledged and forgotten (a stale
                    // retransmission): a WRITE's first packet is the one with a RETH.
                    None => {
                        qp.verb == Verb::Write
                            && wf.write_first_extra > 0
                            && p.frame_bytes == wf.data_frame(p.payload, wf.write_first_extra)
                    }
                };
                let last = p.msg_last;
                use opcode::*;
                let pick = |f, m, l, o| match (first, last) {
                    (true, true) => o,
                    (true, false) => f,
                    (false, true) => l,
                    (false, false) => m,
                };
                let sr = self.nic_cfg.selective_repeat();
                let (op, ext) = match qp.verb {
                    Verb::Write => {
                        let op = pick(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY);
                        let ext = if first && !sr {
                            Eth2::Reth {
                                va: msg.map_or(0, |m| m.first_byte),
                                rkey: qpn(p.qp),
                                len: msg.map_or(0, |m| m.bytes.min(u32::MAX as u64) as u32),
                            }
                        } else {
                            Eth2::None
                        };
                        (op, ext)
                    }
                    Verb::Send => (
                        pick(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY),
                        Eth2::None,
                    ),
                    Verb::Read => {
                        let op = pick(
                            READ_RESPONSE_FIRST,
                            READ_RESPONSE_MIDDLE,
                            READ_RESPONSE_LAST,
                            READ_RESPONSE_ONLY,
                        );
                        let ext = if first || last {
                            Eth2::Aeth {
                                syndrome: AETH_ACK,
                                msn: self.msn_below(p.qp, p.psn + 1),
                            }
                        } else {
                            Eth2::None
                        };
                        (op, ext)
                    }
                };
                if sr {
                    let n = match qp.verb {
                        Verb::Write => wire::SR_WRITE_EXT,
                        _ => wire::SR_SEND_EXT,
                    };
                    extra.resize(n as usize, 0);
                }
                self.put_rdmalab_headers(extra, pkt);
                roce(bth(op, p.psn, last), ext, extra, p.payload, frame);
            }
            PacketKind::Ack | PacketKind::Nack => {
                let (psn, syndrome) = if p.kind == PacketKind::Ack {
                    // The BTH of an ACK carries the last PSN it acknowledges.
                    (p.psn.wrapping_sub(1), AETH_ACK)
                } else {
                    // A NAK carries the PSN the responder expects.
                    (p.psn, AETH_NAK_PSN_SEQ)
                };
                let mut b = bth(opcode::ACKNOWLEDGE, psn, false);
                // rdmalab's ECN echo on ACKs (DCTCP's ECE) rides in BECN.
                b.becn = p.ece;
                let ext = Eth2::Aeth {
                    syndrome,
                    msn: self.msn_below(p.qp, p.psn),
                };
                self.put_rdmalab_headers(extra, pkt);
                roce(b, ext, extra, 0, frame);
            }
            PacketKind::Cnp => {
                let mut b = bth(opcode::CNP, 0, false);
                b.becn = true;
                extra.resize(wire::CNP_RESERVED as usize, 0);
                roce(b, Eth2::None, extra, 0, frame);
            }
            PacketKind::ReadRequest => {
                let qp = &self.qps[p.qp as usize];
                let ext = Eth2::Reth {
                    va: qp.byte_offset_of(p.psn, wf.mtu_payload),
                    rkey: qpn(p.qp),
                    len: p.payload,
                };
                roce(bth(opcode::READ_REQUEST, p.psn, true), ext, extra, 0, frame);
            }
            PacketKind::Pfc { class, pause } => {
                let mut quanta = [0u16; 8];
                quanta[(class & 7) as usize] = if pause { PFC_PAUSE_QUANTA } else { 0 };
                let f = Frame::Pfc {
                    class_enable: 1 << (class & 7),
                    quanta,
                };
                encode(frame, PFC_DST_MAC, src_mac, &f);
            }
            PacketKind::Probe | PacketKind::ProbeReply | PacketKind::Oob { .. } => {
                // Probe id (or first word), second word, send time in ns.
                extra.extend_from_slice(&p.psn.to_be_bytes());
                extra.extend_from_slice(&p.payload.to_be_bytes());
                extra.extend_from_slice(&(p.tx_timestamp.ps() / 1000).to_be_bytes());
                let headers =
                    wire::ETH_HEADER + wire::IPV4_HEADER + wire::UDP_HEADER + wire::ETH_FCS;
                let f = Frame::Udp {
                    ip,
                    sport: p.udp_sport,
                    dport: OOB_UDP_PORT,
                    data: extra,
                    payload: p.frame_bytes.saturating_sub(headers),
                };
                encode(frame, dst_mac, src_mac, &f);
            }
        }
    }

    /// rdmalab's own headers after the transport headers: INT (HPCC's hop
    /// records, or the ns-3 TIMELY timestamp) and the extensible CC header,
    /// each as long as the simulation counts it.
    fn put_rdmalab_headers(&self, extra: &mut Vec<u8>, pkt: PacketId) {
        let wf = self.nic_cfg.wire;
        let p = self.pkts.get(pkt);
        let int_len = wf.int_header as usize;
        if int_len > 0 {
            let start = extra.len();
            if wf.int_header == wire::NS3_TIMELY_TS_HEADER {
                extra.extend_from_slice(&(p.tx_timestamp.ps() / 1000).to_be_bytes());
            } else {
                let hops = self.pkts.int_of(pkt);
                extra.extend_from_slice(&(hops.len() as u16).to_be_bytes());
                for h in hops {
                    let gbps = (h.link_rate.bps() / 1_000_000_000).min(255);
                    let qlen = (h.qlen_bytes / 80) & 0xf_ffff;
                    let tx = (h.tx_bytes / 128) & 0xf_ffff;
                    let ts = (h.timestamp.ps() / 1000) & 0xffff;
                    let word = gbps << 56 | qlen << 36 | tx << 16 | ts;
                    extra.extend_from_slice(&word.to_be_bytes());
                }
            }
            extra.resize(start + int_len, 0);
        }
        let cc_len = wf.cc_header as usize;
        if cc_len > 0 {
            let start = extra.len();
            for w in self.pkts.header_of(pkt) {
                extra.extend_from_slice(&w.to_be_bytes());
            }
            extra.resize(start + cc_len, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_first() -> Vec<u8> {
        let mut buf = Vec::new();
        let f = Frame::Roce {
            ip: Ipv4 {
                src: host_ip(0),
                dst: host_ip(2),
                dscp: 24,
                ecn: 3,
                ttl: 64,
            },
            udp_sport: 49152,
            bth: Bth {
                opcode: opcode::WRITE_FIRST,
                becn: false,
                dest_qp: qpn(1),
                ack_req: false,
                psn: 0,
            },
            ext: Eth2::Reth {
                va: 0,
                rkey: qpn(1),
                len: 4096,
            },
            extra: &[],
            payload: 1024,
        };
        encode(&mut buf, port_mac(3, 0), port_mac(0, 0), &f);
        buf
    }

    #[test]
    fn a_write_first_frame_has_valid_ipv4_and_roce_headers() {
        let b = write_first();
        // The simulated frame (with its 4 B FCS) is the encoded one plus the FCS.
        let w = wire::WireFormat::rocev2(1024);
        assert_eq!(
            b.len() as u32 + wire::ETH_FCS,
            w.data_frame(1024, w.write_first_extra)
        );
        assert_eq!(&b[12..14], &[0x08, 0x00], "IPv4 EtherType");
        let ip = &b[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[1], 24 << 2 | 3, "DSCP 24 and ECN CE");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, b.len() - 14);
        assert_eq!(
            ipv4_checksum(ip),
            0,
            "a header with its checksum sums to 0xffff"
        );
        assert_ne!(&ip[10..12], &[0, 0]);
        assert_eq!(&ip[12..16], &[11, 0, 0, 1]);
        assert_eq!(&ip[16..20], &[11, 0, 2, 1]);
        let udp = &b[34..42];
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 4791);
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]) as usize, b.len() - 34);
        let bth = &b[42..54];
        assert_eq!(bth[0], opcode::WRITE_FIRST);
        assert_eq!(&bth[2..4], &[0xff, 0xff], "default P_Key");
        assert_eq!(&bth[5..8], &[0x00, 0x01, 0x01], "QPN 0x101");
        let reth = &b[54..70];
        assert_eq!(
            u32::from_be_bytes([reth[12], reth[13], reth[14], reth[15]]),
            4096
        );
    }

    #[test]
    fn checksum_matches_a_known_header() {
        // RFC 1071-style example: the classic 45 00 00 73 ... header, checksum b861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
    }

    #[test]
    fn pfc_frames_are_mac_control_with_class_vector_and_quanta() {
        let mut buf = Vec::new();
        let mut quanta = [0u16; 8];
        quanta[3] = PFC_PAUSE_QUANTA;
        encode(
            &mut buf,
            PFC_DST_MAC,
            port_mac(5, 2),
            &Frame::Pfc {
                class_enable: 1 << 3,
                quanta,
            },
        );
        assert_eq!(buf.len(), 60);
        assert_eq!(&buf[12..16], &[0x88, 0x08, 0x01, 0x01]);
        assert_eq!(&buf[16..18], &[0x00, 0x08]);
        assert_eq!(&buf[18 + 6..18 + 8], &[0xff, 0xff]);
    }

    /// A writer the test can read back after the world is done with it.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Run `json` with its capture into memory; the records as (time ns, caplen, frame).
    fn capture_of(json: &str) -> (World, Vec<(u64, u32, Vec<u8>)>) {
        let s = crate::scenario::Scenario::from_json_str(json).unwrap_or_else(|e| panic!("{e}"));
        let mut w = s.build().unwrap();
        let buf = Shared::default();
        w.start_pcap(Box::new(buf.clone())).unwrap();
        w.run_to_end().unwrap();
        w.flush_pcap().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        assert_eq!(&bytes[..24], &file_header(WHOLE_FRAMES_SNAPLEN));
        let mut out = Vec::new();
        let mut i = 24;
        while i < bytes.len() {
            let u = |k: usize| u32::from_le_bytes(bytes[i + k..i + k + 4].try_into().unwrap());
            let (secs, ns, caplen, len) = (u(0), u(4), u(8), u(12));
            assert_eq!(caplen, len, "whole frames");
            let frame = bytes[i + 16..i + 16 + caplen as usize].to_vec();
            out.push((secs as u64 * 1_000_000_000 + ns as u64, len, frame));
            i += 16 + caplen as usize;
        }
        assert_eq!(out.len() as u64, w.pcap_counts().unwrap().0);
        (w, out)
    }

    const TWO_FLOWS: &str = r#"{
        "duration": "1ms", "seed": 3,
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "switch": {"buffer": "300KB", "ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "5KB", "kmax": "50KB", "pmax": 0.2}]} SWITCH_EXTRA},
        "cc": {"algorithm": "CC"},
        "workload": {"flows": [
            {"src": "h0", "dst": "h2", "size": "300KB"},
            {"src": "h1", "dst": "h2", "size": "300KB", "verb": "send"}]},
        "records": {"pcap": true}
    }"#;

    /// Every captured frame of a real run is a well-formed IPv4 frame (valid
    /// checksum, lengths that add up) or a PFC frame, and as long as the
    /// simulated frame without its FCS: the capture shows what the simulation charged.
    fn frames_match_the_simulated_sizes(cc: &str, switch_extra: &str, pfc: bool) {
        let json = TWO_FLOWS
            .replace("SWITCH_EXTRA", switch_extra)
            .replace("CC", cc);
        let (w, frames) = capture_of(&json);
        let wf = w.nic_cfg.wire;
        let fcs = wire::ETH_FCS;
        let last = 300_000 % wf.mtu_payload;
        let allowed = [
            wf.data_frame(wf.mtu_payload, 0) - fcs,
            wf.data_frame(wf.mtu_payload, wf.write_first_extra) - fcs,
            wf.data_frame(last, 0) - fcs,
            wf.ack_with_int() - fcs,
            wf.cnp_frame - fcs,
            wf.pfc_frame - fcs,
        ];
        let mut kinds = std::collections::BTreeMap::new();
        let mut t_prev = 0;
        for (t, len, f) in &frames {
            assert!(*t >= t_prev, "written in time order");
            t_prev = *t;
            assert!(
                allowed.contains(len),
                "frame of {len} B; simulated sizes {allowed:?}"
            );
            let ethertype = u16::from_be_bytes([f[12], f[13]]);
            *kinds.entry(ethertype).or_insert(0) += 1;
            if ethertype == 0x0800 {
                assert_eq!(ipv4_checksum(&f[14..34]), 0);
                assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize + 14, f.len());
                assert_eq!(u16::from_be_bytes([f[36], f[37]]), ROCEV2_UDP_PORT);
            } else {
                assert_eq!(ethertype, 0x8808);
            }
        }
        assert!(kinds[&0x0800] > 1000);
        if pfc {
            assert!(w.stats.pfc_pauses_sent > 0, "the scenario pauses");
            assert_eq!(
                kinds.get(&0x8808).copied().unwrap_or(0),
                w.stats.pfc_pauses_sent + w.stats.pfc_resumes_sent
            );
        }
    }

    #[test]
    fn captured_frames_are_the_simulated_frames() {
        frames_match_the_simulated_sizes("dcqcn", "", true);
    }

    #[test]
    fn captured_frames_carry_hpcc_int_as_the_simulation_counts_it() {
        frames_match_the_simulated_sizes("hpcc", r#", "int": true"#, false);
    }

    #[test]
    fn timestamps_are_nanoseconds() {
        let h = record_header(Time(3 * crate::time::PS_PER_S + 1_234_567), 60, 60);
        assert_eq!(u32::from_le_bytes(h[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 1234);
        assert_eq!(&file_header(128)[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
    }
}
