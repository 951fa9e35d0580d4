//! Byte sizes of RoCEv2 frames.
//!
//! Sources: IEEE 802.3 (Ethernet header 14 B, FCS 4 B, preamble + SFD 8 B,
//! minimum inter-frame gap 12 B, minimum frame 64 B), RFC 791 (IPv4 header
//! 20 B without options), RFC 768 (UDP 8 B), InfiniBand Architecture
//! Specification vol. 1 rel. 1.4 §9.2 and Annex A17 "RoCEv2" (BTH 12 B,
//! RETH 16 B, AETH 4 B, ICRC 4 B; CNP carries 16 reserved bytes after the BTH),
//! IEEE 802.1Qbb (a PFC frame is a 64 B MAC control frame).

/// Ethernet II header: destination MAC, source MAC, EtherType.
pub const ETH_HEADER: u32 = 14;
/// Ethernet frame check sequence.
pub const ETH_FCS: u32 = 4;
/// Preamble (7 B) and start-of-frame delimiter (1 B): on the wire, not in the frame.
pub const ETH_PREAMBLE_SFD: u32 = 8;
/// Minimum inter-frame gap: 96 bit times.
pub const ETH_IFG: u32 = 12;
/// Minimum Ethernet frame including FCS; shorter frames are padded.
pub const ETH_MIN_FRAME: u32 = 64;
/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;
/// UDP header; RoCEv2 uses destination port 4791.
pub const UDP_HEADER: u32 = 8;
/// InfiniBand base transport header: opcode, partition, destination QP, PSN.
pub const IB_BTH: u32 = 12;
/// RDMA extended transport header: virtual address, rkey, length (first packet of
/// a WRITE, and every READ request).
pub const IB_RETH: u32 = 16;
/// Selective repeat's header extensions (SRNIC §4.4.1, §6 "SEND 58 → 66 B,
/// WRITE 58 → 78 B"): every SEND packet carries its SSN and PSN offset
/// (+8 B), every WRITE packet its remote address (+20 B), so a packet that
/// arrives out of order is placed where it belongs.
pub const SR_SEND_EXT: u32 = 8;
pub const SR_WRITE_EXT: u32 = 20;
/// ACK extended transport header: syndrome and message sequence number.
pub const IB_AETH: u32 = 4;
/// Invariant CRC over the transport headers and payload.
pub const IB_ICRC: u32 = 4;
/// A CNP carries 16 reserved bytes after its BTH.
pub const CNP_RESERVED: u32 = 16;
/// Payload of an out-of-band peer message (SCR: "about 128 B").
pub const OOB_PAYLOAD: u32 = 128;
/// RoCEv2 UDP destination port.
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// How many bytes each kind of frame takes. Two presets: real RoCEv2 framing,
/// and the ns-3 HPCC simulator's (which ignores preamble, IFG, ICRC and FCS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireFormat {
    /// Payload bytes per data packet (the RoCE path MTU).
    pub mtu_payload: u32,
    /// Frame bytes around the payload of every data packet.
    pub data_overhead: u32,
    /// Extra bytes on the first packet of a WRITE (RETH).
    pub write_first_extra: u32,
    /// An ACK or NACK frame without INT (padded to the minimum frame).
    pub ack_frame: u32,
    /// An ACK's headers before padding; INT goes on top of these.
    pub ack_headers: u32,
    pub cnp_frame: u32,
    pub read_request_frame: u32,
    pub pfc_frame: u32,
    /// An RTT probe or its reply: a minimum frame (UDP with a timestamp).
    pub probe_frame: u32,
    /// An out-of-band peer message: UDP with a 128 B payload (SCR §4.3.3).
    pub oob_frame: u32,
    /// Preamble, SFD and inter-frame gap added to every frame on the wire.
    pub l1_overhead: u32,
    /// INT header carried by data packets and their ACKs and NACKs: HPCC's
    /// hop records when switches push INT, or (ns-3 HPCC framing only)
    /// TIMELY's 8-byte send timestamp.
    pub int_header: u32,
    /// SwCC's extensible CC header (`control.cc_header`, 0 to 64 B), after
    /// the BTH of every data packet and echoed on its ACKs and NACKs.
    pub cc_header: u32,
    /// Shorter data frames are padded to this (Ethernet: 64 B; ns-3 HPCC: none).
    pub min_frame: u32,
}

/// HPCC's INT header for up to 5 hops: 2 B of hop count and 8 B per hop
/// (the ns-3 HPCC simulator's `IntHeader` size).
pub const HPCC_INT_HEADER: u32 = 2 + 5 * 8;

/// The ns-3 HPCC simulator's TIMELY timestamp (`IntHeader` in TS mode).
pub const NS3_TIMELY_TS_HEADER: u32 = 8;

impl WireFormat {
    /// Real RoCEv2 over Ethernet with IPv4.
    pub fn rocev2(mtu_payload: u32) -> Self {
        let l2_l4 = ETH_HEADER + IPV4_HEADER + UDP_HEADER;
        let pad = |b: u32| b.max(ETH_MIN_FRAME);
        WireFormat {
            mtu_payload,
            data_overhead: l2_l4 + IB_BTH + IB_ICRC + ETH_FCS,
            write_first_extra: IB_RETH,
            ack_frame: pad(l2_l4 + IB_BTH + IB_AETH + IB_ICRC + ETH_FCS),
            ack_headers: l2_l4 + IB_BTH + IB_AETH + IB_ICRC + ETH_FCS,
            cnp_frame: pad(l2_l4 + IB_BTH + CNP_RESERVED + IB_ICRC + ETH_FCS),
            read_request_frame: pad(l2_l4 + IB_BTH + IB_RETH + IB_ICRC + ETH_FCS),
            pfc_frame: ETH_MIN_FRAME,
            probe_frame: ETH_MIN_FRAME,
            oob_frame: l2_l4 + OOB_PAYLOAD + ETH_FCS,
            l1_overhead: ETH_PREAMBLE_SFD + ETH_IFG,
            int_header: 0,
            cc_header: 0,
            min_frame: ETH_MIN_FRAME,
        }
    }

    /// The ns-3 HPCC simulator's accounting (its `CustomHeader` sizes): 48 B per
    /// data packet, ACK/NACK/CNP of 14 B PPP + 20 B IPv4 + 12 B qbbHeader padded
    /// to 60 B, no preamble or gap.
    pub fn ns3_hpcc(mtu_payload: u32) -> Self {
        WireFormat {
            mtu_payload,
            data_overhead: 48,
            write_first_extra: 0,
            ack_frame: 60,
            ack_headers: 46,
            cnp_frame: 60,
            read_request_frame: 60,
            // PPP 14 + IPv4 20 + PauseHeader 9 (qbb-net-device's SendPfc).
            pfc_frame: 43,
            probe_frame: 64,
            oob_frame: 48 + OOB_PAYLOAD,
            l1_overhead: 0,
            int_header: 0,
            cc_header: 0,
            min_frame: 0,
        }
    }

    /// Frame bytes of a data packet with `payload` bytes (`extra`: RETH on a WRITE's first packet).
    #[inline]
    pub fn data_frame(&self, payload: u32, extra: u32) -> u32 {
        (self.data_overhead + self.int_header + self.cc_header + extra + payload)
            .max(self.min_frame)
    }

    /// An ACK or NACK frame with the INT header of the data it answers
    /// (ns-3: 88 B with HPCC's 42 B of INT, still 60 B with TIMELY's 8 B).
    #[inline]
    pub fn ack_with_int(&self) -> u32 {
        (self.ack_headers + self.int_header + self.cc_header).max(self.ack_frame)
    }

    /// Bytes a frame of `frame_bytes` occupies on the wire.
    #[inline]
    pub fn on_wire(&self, frame_bytes: u32) -> u32 {
        frame_bytes + self.l1_overhead
    }

    /// Payload efficiency of full-MTU data packets: payload / wire bytes.
    pub fn goodput_fraction(&self) -> f64 {
        self.mtu_payload as f64 / (self.mtu_payload + self.data_overhead + self.l1_overhead) as f64
    }

    /// Packets a message of `bytes` is split into (a zero-byte message still sends one).
    pub fn packets_for(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mtu_payload as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocev2_data_packet_carries_62_bytes_of_headers() {
        let w = WireFormat::rocev2(1024);
        assert_eq!(w.data_overhead, 62);
        assert_eq!(w.on_wire(w.data_overhead + 1024), 1106);
    }

    #[test]
    fn acks_carry_the_int_of_the_data_as_ns3_sizes_them() {
        let mut ns3 = WireFormat::ns3_hpcc(1000);
        assert_eq!(ns3.ack_with_int(), 60);
        ns3.int_header = NS3_TIMELY_TS_HEADER;
        assert_eq!(
            (ns3.data_frame(1000, 0), ns3.ack_with_int()),
            (1056, 60),
            "TIMELY: 8 B more data, ACK still padded"
        );
        ns3.int_header = HPCC_INT_HEADER;
        assert_eq!(
            (ns3.data_frame(1000, 0), ns3.ack_with_int()),
            (1090, 88),
            "HPCC: 14 + 20 + 12 + 42 B"
        );
        let mut roce = WireFormat::rocev2(1024);
        roce.int_header = HPCC_INT_HEADER;
        assert_eq!(roce.ack_with_int(), 66 + 42);
    }

    #[test]
    fn small_frames_are_padded_to_the_ethernet_minimum() {
        let w = WireFormat::rocev2(1024);
        assert_eq!(w.ack_frame, 66);
        assert_eq!(w.pfc_frame, 64);
        assert!(w.cnp_frame >= ETH_MIN_FRAME);
    }

    #[test]
    fn ns3_preset_matches_hpcc_sizes() {
        let w = WireFormat::ns3_hpcc(1000);
        assert_eq!(w.on_wire(w.data_overhead + 1000), 1048);
        assert_eq!(w.on_wire(w.pfc_frame), 43);
    }

    #[test]
    fn a_message_is_split_at_the_mtu() {
        let w = WireFormat::rocev2(1024);
        assert_eq!(w.packets_for(0), 1);
        assert_eq!(w.packets_for(1024), 1);
        assert_eq!(w.packets_for(1025), 2);
    }
}
