//! Packets. One struct for every transport, kept in an arena and addressed by `PktId`.
//!
//! Fields are the union of what the transports need (sequence/ack numbers, SACK blocks, ECN, a priority the
//! transport chooses, an echo timestamp). Receiver-driven transports add kinds, not structs.

use crate::net::ledger::Origin;
use crate::units::{FlowSlot, NodeId, PathId, PortId, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktKind {
    Data,
    Ack,
    /// pFabric's probe: a 1-byte packet a sender in probe mode sends each RTO to learn when to resume.
    Probe,
    /// Homa: the receiver allows packets below `seq`, to be sent at class `aux`.
    Grant,
    /// Homa: the receiver asks for packets [seq, seq + aux) again.
    Resend,
    /// Homa: the sender has the message but is sending others first.
    Busy,
    /// pHost: a sender announces a message of `aux` bytes.
    Rts,
    /// pHost: the receiver allows packet `seq` (within the token's expiry).
    Token,
    /// NDP: the receiver allows one more packet of the message.
    Pull,
    /// NDP: packet `seq` arrived trimmed (or is missing); send it again on a pull.
    Nack,
    /// TCP's handshake (`transport.handshake`): the sender opens the connection; `ts` is its send time.
    Syn,
    /// TCP's handshake: the receiver's answer, echoing the SYN's `ts`.
    SynAck,
    // Network kinds: made by switch mechanisms, never handed to `Transport::on_packet`.
    /// A switch tells the packet's source about it (a drop notification): routed to `dst`, handed to the
    /// transport's `on_notice` there. `seq`, `flow` and `flow_gen` are the packet's it is about.
    Notice,
    /// A link-local control frame (pause, link-layer ACK/NACK): sent out of one port, consumed by the
    /// mechanism at the other end of that link, never routed. `aux` is the mechanism's frame type.
    Frame,
    /// Telemetry (a courier, a monitoring record): routed to `dst`, counted by the host's sink there.
    Telemetry,
    /// A raw packet of a constant-bit-rate source (`traffic/cbr.rs`): no transport, routed to `dst`, counted
    /// by the host's sink there.
    Raw,
}

impl PktKind {
    /// Every kind, in the order of [`PktKind::code`].
    const ALL: [PktKind; 16] = [
        PktKind::Data,
        PktKind::Ack,
        PktKind::Probe,
        PktKind::Grant,
        PktKind::Resend,
        PktKind::Busy,
        PktKind::Rts,
        PktKind::Token,
        PktKind::Pull,
        PktKind::Nack,
        PktKind::Syn,
        PktKind::SynAck,
        PktKind::Notice,
        PktKind::Frame,
        PktKind::Telemetry,
        PktKind::Raw,
    ];
    /// A small number for the kind (what a notice carries about the packet it reports).
    #[inline]
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<PktKind> {
        Self::ALL.get(c as usize).copied()
    }
    /// A packet of the network itself (or of a raw source) rather than of a transport.
    #[inline]
    pub fn is_network(self) -> bool {
        matches!(self, PktKind::Notice | PktKind::Frame | PktKind::Telemetry | PktKind::Raw)
    }
    /// A frame that lives on one link and is never forwarded.
    #[inline]
    pub fn is_link_local(self) -> bool {
        self == PktKind::Frame
    }
}

/// Number of SACK blocks an ACK carries (as with the TCP timestamp option, RFC 2018 fits 3).
pub const SACK_BLOCKS: usize = 3;

/// The fields a switch reads and writes on a hop lie in the first of the packet's two cache lines
/// (`repr(C)` keeps this order, the alignment keeps each packet on a line's start): a packet-hop through a
/// switch touches one line of the packet, and the second line (what only the transports read) waits at
/// the hosts. Compile-time layout asserts below hold the first line's end.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Packet {
    // The first line: what a hop through a switch uses.
    /// Time the packet entered its current queue (queueing-delay telemetry).
    pub enq_time: Time,
    /// Finer-grained priority number for queue disciplines that sort (pFabric): lower = more urgent.
    pub rank: u64,
    pub dst: NodeId,
    /// Bytes on the wire (payload + headers); what buffers count.
    pub size: u32,
    /// Payload bytes.
    pub payload: u32,
    /// Per-flow hash for ECMP.
    pub hash: u32,
    /// A path the flow is pinned to (`net/pinned.rs`), which overrides the switches' choice; NONE = theirs.
    pub path: PathId,
    /// Set by the routing step at a switch ingress, used after the forwarding delay.
    pub out_port: PortId,
    /// The port through which it entered the switch it is at (that switch's port towards the previous hop):
    /// where a notification about it leaves, whose ingress counters it charges. `PortId::NONE` at its source.
    pub in_port: PortId,
    pub flow: FlowSlot,
    /// Generation of the flow slot when the packet was sent; a stale packet for a finished flow is dropped
    /// by the receiving host, never misdelivered to a newer flow in the same slot.
    pub flow_gen: u32,
    pub kind: PktKind,
    /// Strict-priority class at switch ports, 0 = highest (the transport chooses it per packet).
    pub class: u8,
    pub ect: bool,
    pub ce: bool,
    pub hops: u8,
    /// Sent off its shortest path by a switch's local failover (SQR's LRR): the next switch must not send it
    /// back where it came from (`net/mech/sqr/`), and clears the mark.
    pub detour: bool,
    // The second line: the transports' fields.
    /// Data: send time. Ack: the echoed send time of the data that triggered it (RTT sample).
    pub ts: Time,
    pub src: NodeId,
    /// Data: segment number. Ack: cumulative ack (next expected segment).
    pub seq: u32,
    /// Transport-defined: Homa's message length (data), priority (grant) or packet count (resend); pHost's
    /// and NDP's message length (data, RTS); NDP's ACK or NACK carrying a pull (1).
    pub aux: u32,
    /// Ack: SACK blocks [start, end) in segments, most recent first; end == 0 means unused.
    pub sack: [(u32, u32); SACK_BLOCKS],
    /// Ack: ECN-echo.
    pub ece: bool,
    /// Who made it (the ledger's category; set by the arena).
    pub origin: Origin,
}

// The switch's fields end within the first line; a packet is two lines.
const _: () = assert!(std::mem::offset_of!(Packet, detour) < 64);
const _: () = assert!(std::mem::offset_of!(Packet, ts) >= 64);
const _: () = assert!(std::mem::size_of::<Packet>() == 128);

/// Bits of a notice's `aux` that hold the reported packet's wire size (the rest hold its kind's code).
const NOTICE_SIZE_BITS: u32 = 24;

impl Packet {
    /// A notice of `size` wire bytes from switch `at` to `p`'s source, about `p` (a drop notification): the
    /// flow, sequence number, hash and send time of `p`, and in `aux` its kind and original length (FastLane
    /// keeps the IP length field of the dropped packet, thesis §6.5.2). Class 0, rank 0: the most urgent.
    pub fn notice_about(p: &Packet, at: NodeId, size: u32) -> Packet {
        let mut n = Packet::new(PktKind::Notice, p.flow, p.flow_gen, at, p.src);
        n.size = size;
        n.seq = p.seq;
        n.hash = p.hash;
        n.ts = p.ts;
        n.aux = (p.kind.code() as u32) << NOTICE_SIZE_BITS | p.size.min((1 << NOTICE_SIZE_BITS) - 1);
        n
    }
    /// For a notice: the kind and wire size of the packet it reports.
    pub fn noticed(&self) -> (PktKind, u32) {
        let kind = PktKind::from_code((self.aux >> NOTICE_SIZE_BITS) as u8).unwrap_or(PktKind::Data);
        (kind, self.aux & ((1 << NOTICE_SIZE_BITS) - 1))
    }

    pub fn new(kind: PktKind, flow: FlowSlot, flow_gen: u32, src: NodeId, dst: NodeId) -> Packet {
        Packet {
            kind,
            flow,
            flow_gen,
            src,
            dst,
            size: 0,
            payload: 0,
            class: 0,
            rank: 0,
            ect: false,
            ce: false,
            seq: 0,
            aux: 0,
            ece: false,
            sack: [(0, 0); SACK_BLOCKS],
            ts: Time::ZERO,
            hash: 0,
            path: PathId::NONE,
            out_port: PortId::NONE,
            enq_time: Time::ZERO,
            in_port: PortId::NONE,
            hops: 0,
            detour: false,
            origin: Origin::Host,
        }
    }
}
