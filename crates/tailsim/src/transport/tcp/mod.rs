//! TCP NewReno with SACK-based loss recovery (RFC 5681, 6582, 6675, 6298), and DCTCP (RFC 8257).
//!
//! Sequence space is counted in segments (every segment is a full MSS except the flow's last), so the
//! scoreboard is one flag byte per segment. Flows start without a handshake, as in ns-2 and htsim, unless
//! `handshake` is set (`handshake.rs`). Every deviation from the RFCs and Linux is listed in
//! docs/transport-tcp.md.

mod cubic;
mod fastlane;
mod handshake;
mod trace;

pub use cubic::CubicParams;
pub use trace::{CwndTrace, RxGaps};
use trace::{TraceEvent, Window};

pub use fastlane::NoticeReaction;

use super::split::{Ends, Halves, Split};
use super::{Ctx, FlowEvent, FlowSpec, Steer, Timer};
use crate::engine::{Slab, TimerKind};
use crate::net::packet::{Packet, PktKind, SACK_BLOCKS};
use crate::units::{BitsPerSec, FlowSlot, NodeId, PktId, Time};

/// Congestion control on top of the shared loss recovery.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CongestionControl {
    NewReno,
    /// DCTCP with gain g and initial alpha.
    Dctcp {
        g: f64,
        alpha_init: f64,
    },
    /// CUBIC (RFC 9438, `tcp/cubic.rs`): NewReno's loss recovery with CUBIC's window.
    Cubic(CubicParams),
}

/// The priority number (`Packet::rank`) a data packet carries, for pFabric queues (lower = more urgent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// No priority (rank 0 for every packet).
    None,
    /// Bytes from this packet's first byte to the end of the flow (pFabric's default, with the ns-2 code's
    /// per-sequence-number meaning: a retransmission carries the rank of its own sequence number).
    Remaining,
    /// Bytes the flow sent before this packet (needs no knowledge of the flow size).
    BytesSent,
    /// The flow's size, constant for the flow.
    FlowSize,
    /// The packet's class (0–7): priority dropping and scheduling on 8 levels (the QJUMP authors' ns-2 queue).
    Class,
    /// pFabric-EDF (§5.4.2): a flow with a deadline sends in the deadline class (its fixed class) with its
    /// absolute deadline in microseconds as the priority number; other flows send one class lower with their
    /// remaining size. A packet whose deadline has passed, or can no longer be met at line rate, is demoted
    /// to the lower class with priority 2^30 (the authors' ns-2 code).
    Deadline,
}

/// What class thresholds are compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassBy {
    /// pFabric §6's commodity priority queues: class i holds flows of size in (t_{i-1}, t_i].
    FlowSize,
    /// PIAS's multi-level feedback queue, without size knowledge: a packet preceded by [t_{i-1}, t_i) bytes
    /// of its flow goes in class i (a flow is demoted once it has sent t_i bytes).
    BytesSent,
    /// PIAS's size-aware variant (Homa thesis §6.1): the class of the packet's last byte, so a packet that
    /// spans several levels goes at the lowest of them and a one-packet message at its size's level.
    LastByte,
}

/// How data packets choose their strict-priority class (0 = highest).
#[derive(Clone, Debug, PartialEq)]
pub enum ClassPolicy {
    /// Every packet in one class.
    Fixed(u8),
    Thresholds {
        thresholds: Vec<u64>,
        by: ClassBy,
    },
}

impl ClassPolicy {
    /// The class of a packet of `payload` bytes of a flow of `size` bytes, preceded by `sent` bytes.
    #[inline]
    pub fn class(&self, size: u64, sent: u64, payload: u64) -> u8 {
        match self {
            ClassPolicy::Fixed(c) => *c,
            ClassPolicy::Thresholds { thresholds, by: ClassBy::FlowSize } => {
                thresholds.partition_point(|&t| t < size) as u8
            }
            ClassPolicy::Thresholds { thresholds, by: ClassBy::BytesSent } => {
                thresholds.partition_point(|&t| t <= sent) as u8
            }
            ClassPolicy::Thresholds { thresholds, by: ClassBy::LastByte } => {
                thresholds.partition_point(|&t| t < sent + payload.max(1)) as u8
            }
        }
    }
    /// The most urgent class in use (ACKs travel in it).
    fn top(&self) -> u8 {
        match self {
            ClassPolicy::Fixed(c) => *c,
            ClassPolicy::Thresholds { .. } => 0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct TcpConfig {
    pub mss: u32,
    pub header: u32,
    pub ack_size: u32,
    pub init_cwnd: u32,
    pub min_rto: Time,
    pub max_rto: Time,
    pub init_rto: Time,
    pub dupthresh: u32,
    /// Segments per ACK (1 = no delayed ACK).
    pub delayed_ack: u32,
    pub delayed_ack_timeout: Time,
    pub sack: bool,
    pub cc: CongestionControl,
    /// Strict-priority class of data packets.
    pub class: ClassPolicy,
    pub priority: Priority,
    /// Host line rate, to tell whether a deadline can still be met.
    pub line_rate: BitsPerSec,
    /// Duplicate-ACK / SACK loss detection (off: timeouts only, as pFabric).
    pub fast_retransmit: bool,
    /// A fixed RTO: no RTT estimation, no backoff (pFabric). None = RFC 6298.
    pub fixed_rto: Option<Time>,
    /// After this many consecutive timeouts, send only 1-byte probes (one per RTO) until an ACK arrives.
    pub probe_after: Option<u32>,
    /// Upper bound of cwnd, segments.
    pub max_cwnd: Option<u32>,
    /// On timeout, ssthresh = cwnd / 2 (pFabric) instead of FlightSize / 2 (RFC 5681).
    pub ssthresh_from_cwnd: bool,
    /// NewReno with ECN (RFC 3168): data packets are ECN-capable, the receiver echoes a mark, and the sender
    /// halves its window at most once per window of data. (DCTCP is always ECN-capable.)
    pub ecn: bool,
    /// What a switch's drop notice makes the sender do (`tcp/fastlane.rs`).
    pub notices: NoticeReaction,
    /// FastLane's multipath option (FL-PS): ACKs carry the receiver's out-of-order segments past the
    /// cumulative ACK, and the sender inflates its window by them.
    pub ooo_inflation: bool,
    /// Open each flow with SYN / SYN-ACK (`handshake.rs`).
    pub handshake: bool,
    /// The SYN's first timeout, doubled per retry.
    pub syn_rto: Time,
    /// After an ECN cut (DCTCP, or `ecn` with NewReno or CUBIC), the window does not grow until the round
    /// that was cut is acknowledged: Linux's and ns-3's CWR state. False keeps growing (`cwr_growth`).
    pub cwr_freeze: bool,
    /// Slow start stops at ssthresh and what the ACK covers beyond it grows the window as congestion avoidance
    /// does (Linux's `tcp_slow_start`); false adds every acknowledged segment, however far past ssthresh (as
    /// pFabric's ns-2 sender, whose timeouts restart from one segment with nothing SACKed).
    pub slow_start_cap: bool,
}

// Scoreboard flags per segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETX: u8 = 4;
const INFLIGHT: u8 = 8;

struct Flow {
    id: u64,
    size: u64,
    /// Absolute deadline (pFabric-EDF priorities).
    deadline: Option<Time>,
    /// The workload's class for every packet of the flow, if it chose one.
    class: Option<u8>,
    src: NodeId,
    dst: NodeId,
    steer: Steer,
    nsegs: u32,
    last_payload: u32,
    /// Which halves are open (transport/split.rs): the sender's until its last ACK, the receiver's until word
    /// of that close reaches it (`TimerKind::PeerClosed`, the path's propagation delay later), so that it
    /// answers duplicates meanwhile (a lost last ACK is recovered: the sender resends, the receiver ACKs).
    ends: Ends,
    // --- sender ---
    una: u32,
    nxt: u32,
    flags: Vec<u8>,
    /// Segments in flight (RFC 6675 "pipe"): flagged INFLIGHT.
    pipe: u32,
    cwnd: f64,
    ssthresh: f64,
    /// NewReno window inflation (non-SACK recovery only).
    inflate: u32,
    dupacks: u32,
    in_recovery: bool,
    recover: u32,
    /// No fast retransmit for data sent before the last timeout (RFC 6582 §4.2).
    rto_recover: u32,
    high_sacked: u32,
    /// Segments below this were checked for SACK-based loss (or marked lost by a timeout).
    lost_mark: u32,
    retx_hint: u32,
    srtt: f64,
    rttvar: f64,
    rto: Time,
    rto_timer: Timer,
    alpha: f64,
    win_end: u32,
    acked_win: u32,
    marked_win: u32,
    cwr_end: u32,
    retransmits: u32,
    timeouts: u32,
    consecutive_timeouts: u32,
    probing: bool,
    /// FastLane's recovery state (`tcp/fastlane.rs`).
    fl: fastlane::FlState,
    /// CUBIC's state (unused by the other congestion controls).
    cubic: cubic::Cubic,
    /// The SYN-ACK arrived (always true without a handshake): data may be sent.
    established: bool,
    /// The SYN's current timeout.
    syn_rto: Time,
    /// In `output.cwnd_trace`.
    traced: bool,
    /// FL-PS: window inflation by the receiver's out-of-order count.
    ooo_inflate: u32,
    // --- receiver ---
    rcv_nxt: u32,
    /// Out-of-order segment ranges [a, b), sorted, disjoint, all above rcv_nxt.
    ooo: Vec<(u32, u32)>,
    last_ooo: u32,
    pending_acks: u32,
    ce_state: bool,
    last_ts: Time,
    delack_timer: Timer,
    received: bool,
    /// `output.rx_gaps`: arrivals of new data.
    rx: trace::RxClock,
}

/// The TCP transport: all flows' state.
pub struct Tcp {
    cfg: TcpConfig,
    flows: Slab<Flow>,
    /// Generation per slot, bumped when a flow's state is freed.
    gens: Vec<u32>,
    /// Which hosts' halves this run runs, and the halves closed since a parallel run's last meeting.
    split: Split,
    pub stats: TcpStats,
    /// `output.cwnd_trace`: the traced flows' windows.
    pub trace: CwndTrace,
    /// `output.rx_gaps`: the receivers' longest wait for new data, per flow.
    pub rx_gaps: RxGaps,
}

/// What TCP senders counted (in summary.json's `transport` once a notice arrived).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TcpStats {
    /// Drop notices received for a live flow (a switch's notice about a dropped packet of it).
    pub notices: u64,
    /// Notices that arrived after their flow closed.
    pub stale_notices: u64,
    /// FastLane: recoveries entered, data segments resent from the notice list, control packets (ACKs,
    /// probes) resent at once, and probes sent before resending (pFabric).
    pub fl_recoveries: u64,
    pub fl_retransmits: u64,
    pub fl_control_resent: u64,
    pub fl_probes: u64,
    /// Window halvings on an echoed ECN mark (`transport.ecn`, RFC 3168).
    pub ecn_cuts: u64,
}

impl Tcp {
    pub fn new(cfg: TcpConfig) -> Tcp {
        Tcp {
            cfg,
            flows: Slab::default(),
            gens: Vec::new(),
            split: Split::default(),
            stats: TcpStats::default(),
            trace: CwndTrace::default(),
            rx_gaps: RxGaps::default(),
        }
    }

    pub fn active(&self) -> usize {
        self.flows.live()
    }

    /// Another part's counters, added to this one's (the merge at the end of a parallel run).
    pub fn add_part(&mut self, other: &Tcp) {
        self.split.receiving += other.split.receiving;
        let (a, b) = (&mut self.stats, &other.stats);
        a.notices += b.notices;
        a.stale_notices += b.stale_notices;
        a.fl_recoveries += b.fl_recoveries;
        a.fl_retransmits += b.fl_retransmits;
        a.fl_control_resent += b.fl_control_resent;
        a.fl_probes += b.fl_probes;
        a.ecn_cuts += b.ecn_cuts;
        self.trace.add(&other.trace);
        self.rx_gaps.add(&other.rx_gaps);
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Set what drop notices make senders do (the configuration's `[fastlane]`).
    pub fn set_notice_reaction(&mut self, r: NoticeReaction) {
        self.cfg.notices = r;
    }

    /// Make flow `f`'s record, its halves at this run's hosts open, without sending (`Transport::open_flow`).
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        let mss = self.cfg.mss as u64;
        let nsegs = f.size.div_ceil(mss).max(1) as u32;
        let last_payload = (f.size - (nsegs as u64 - 1) * mss) as u32;
        let alpha = match self.cfg.cc {
            CongestionControl::Dctcp { alpha_init, .. } => alpha_init,
            _ => 0.0,
        };
        let flow = Flow {
            id: f.id,
            size: f.size,
            deadline: None, // known when it starts (`begin_flow`)
            class: f.class,
            src: f.src,
            dst: f.dst,
            steer: f.steer(),
            nsegs,
            last_payload,
            ends: self.split.open(f.src, f.dst),
            una: 0,
            nxt: 0,
            flags: vec![0; nsegs as usize],
            pipe: 0,
            cwnd: self.cfg.init_cwnd as f64,
            ssthresh: f64::MAX,
            inflate: 0,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            rto_recover: 0,
            high_sacked: 0,
            lost_mark: 0,
            retx_hint: 0,
            srtt: 0.0,
            rttvar: 0.0,
            rto: self.cfg.fixed_rto.unwrap_or(self.cfg.init_rto.max(self.cfg.min_rto)),
            rto_timer: Timer::default(),
            alpha,
            win_end: 0,
            acked_win: 0,
            marked_win: 0,
            cwr_end: 0,
            retransmits: 0,
            timeouts: 0,
            consecutive_timeouts: 0,
            probing: false,
            fl: Default::default(),
            cubic: Default::default(),
            established: !self.cfg.handshake,
            syn_rto: self.cfg.syn_rto,
            traced: self.trace.wants(f.id),
            ooo_inflate: 0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            last_ooo: 0,
            pending_acks: 0,
            ce_state: false,
            last_ts: Time::ZERO,
            delack_timer: Timer::default(),
            received: false,
            rx: trace::RxClock::default(),
        };
        let slot = FlowSlot(self.flows.insert(flow));
        super::track_slot(&mut self.gens, slot);
        slot
    }

    /// Start the sender of the flow in `slot`, whose absolute deadline (if any) is now known.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot, deadline: Option<Time>) {
        let f = self.flows.get_mut(slot.0);
        f.deadline = deadline;
        if !f.ends.snd {
            // Another part's sender (a parallel run): this part only records the flow, or runs its receiver.
        } else if self.cfg.handshake {
            self.send_syn(ctx, slot);
        } else {
            self.try_send(ctx, slot);
        }
    }

    pub fn on_packet(&mut self, ctx: &mut Ctx, _host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.consume(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            return; // a late packet of a flow that has already closed
        }
        let ends = self.flows.get(p.flow.0).ends;
        let open = match p.kind {
            PktKind::Ack | PktKind::SynAck => ends.snd,
            _ => ends.rcv,
        };
        if !open {
            return; // a late packet for a half that has closed
        }
        match p.kind {
            PktKind::Data => self.on_data(ctx, p),
            PktKind::Ack => self.on_ack(ctx, p),
            PktKind::Syn => self.on_syn(ctx, p),
            PktKind::SynAck => self.on_syn_ack(ctx, p),
            PktKind::Probe => {
                // Answer at once with the current cumulative ACK and SACK blocks; the byte is not data.
                let f = self.flows.get_mut(p.flow.0);
                f.last_ts = p.ts;
                let ece = f.ce_state;
                self.send_ack_with(ctx, p.flow, ece, fastlane::PROBE_ECHO);
            }
            other => unreachable!("{other:?}: receiver-driven transports' and the network's packets never reach TCP"),
        }
    }

    /// The host a flow timer acts at (the handover check, sim/handover.rs): the retransmission timer the
    /// sender's, the delayed ACK the receiver's.
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return None; // its flow is gone: the timer does nothing
        }
        let f = self.flows.try_get(slot.0)?;
        Some(match kind {
            TimerKind::DelayedAck | TimerKind::PeerClosed => f.dst,
            _ => f.src,
        })
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return;
        }
        let f = self.flows.get_mut(slot.0);
        match kind {
            TimerKind::Retransmit => {
                if f.rto_timer.fire(ctx, slot, gen, kind) {
                    if f.established {
                        self.on_rto(ctx, slot);
                    } else {
                        self.on_syn_timeout(ctx, slot);
                    }
                }
            }
            TimerKind::DelayedAck => {
                if f.delack_timer.fire(ctx, slot, gen, kind) && f.pending_acks > 0 && f.ends.rcv {
                    let ece = f.ce_state;
                    self.send_ack(ctx, slot, ece);
                }
            }
            TimerKind::PeerClosed => {
                f.delack_timer.cancel();
                self.close_half(slot, false);
            }
            TimerKind::Pacer | TimerKind::Resend | TimerKind::RxPacer => {
                unreachable!("receiver-driven transports' timers")
            }
        }
    }

    // ------------------------------------------------------------------ receiver

    fn on_data(&mut self, ctx: &mut Ctx, p: Packet) {
        let slot = p.flow;
        let gen = p.flow_gen;
        let dctcp = matches!(self.cfg.cc, CongestionControl::Dctcp { .. });
        let (delack, delack_to) = (self.cfg.delayed_ack, self.cfg.delayed_ack_timeout);
        // DCTCP's receiver state machine: when CE flips with an ACK pending, ACK the earlier segments at once
        // with the old ECE value so the sender sees the exact marked fraction (RFC 8257 §3.2).
        {
            let f = self.flows.get_mut(slot.0);
            if dctcp && p.ce != f.ce_state && f.pending_acks > 0 {
                let old = f.ce_state;
                self.send_ack(ctx, slot, old);
            }
        }
        let f = self.flows.get_mut(slot.0);
        if dctcp || self.cfg.ecn {
            f.ce_state = p.ce;
        }
        f.last_ts = p.ts;
        let s = p.seq;
        let first = f.rcv_nxt == 0 && f.ooo.is_empty();
        let mut immediate = false;
        if s < f.rcv_nxt || f.ooo.iter().any(|&(a, b)| a <= s && s < b) {
            immediate = true; // duplicate: ACK at once so the sender learns
        } else if s == f.rcv_nxt {
            f.rx.progress(ctx.now);
            f.rcv_nxt += 1;
            if let Some(&(a, b)) = f.ooo.first() {
                if a == f.rcv_nxt {
                    f.rcv_nxt = b;
                    f.ooo.remove(0);
                }
                immediate = true; // filled (part of) a hole: RFC 5681 asks for an immediate ACK
            }
        } else {
            f.rx.progress(ctx.now);
            insert_range(&mut f.ooo, s);
            f.last_ooo = s;
            immediate = true; // out of order: duplicate ACK with SACK at once
        }
        if f.rcv_nxt == f.nsegs && !f.received {
            f.received = true;
            immediate = true;
            ctx.report(FlowEvent::Received { id: f.id, at: ctx.now, timeouts: 0 });
            self.rx_gaps.record(f.id, &f.rx);
        } else if first {
            ctx.report(FlowEvent::Heard { id: f.id, at: ctx.now });
        }
        f.pending_acks += 1;
        if immediate || f.pending_acks >= delack {
            f.delack_timer.cancel();
            let ece = f.ce_state;
            self.send_ack(ctx, slot, ece);
        } else if !f.delack_timer.armed() {
            f.delack_timer.set(ctx, ctx.now + delack_to, slot, gen, TimerKind::DelayedAck);
        }
    }

    fn send_ack(&mut self, ctx: &mut Ctx, slot: FlowSlot, ece: bool) {
        self.send_ack_with(ctx, slot, ece, 0)
    }

    /// An ACK with `flags` in `aux` (`fastlane::PROBE_ECHO`), and the out-of-order count when FL-PS is on.
    fn send_ack_with(&mut self, ctx: &mut Ctx, slot: FlowSlot, ece: bool, flags: u32) {
        let gen = self.gens[slot.idx()];
        let f = self.flows.get_mut(slot.0);
        f.pending_acks = 0;
        let mut a = control_packet(&self.cfg, f, PktKind::Ack, slot, gen, true);
        a.seq = f.rcv_nxt;
        a.ece = ece;
        a.ts = f.last_ts;
        a.aux = flags;
        if self.cfg.ooo_inflation {
            a.aux |= fastlane::ooo_count(&f.ooo);
        }
        if self.cfg.sack && !f.ooo.is_empty() {
            // Most recent block first (RFC 2018), then the highest others.
            let mut n = 0;
            if let Some(&blk) = f.ooo.iter().find(|&&(x, y)| x <= f.last_ooo && f.last_ooo < y) {
                a.sack[0] = blk;
                n = 1;
            }
            for &blk in f.ooo.iter().rev() {
                if n == SACK_BLOCKS {
                    break;
                }
                if n == 1 && a.sack[0] == blk {
                    continue;
                }
                a.sack[n] = blk;
                n += 1;
            }
        }
        let host = f.dst;
        ctx.send(host, a);
    }

    // ------------------------------------------------------------------ sender

    fn on_ack(&mut self, ctx: &mut Ctx, p: Packet) {
        let cfg = &self.cfg;
        let slot = p.flow;
        let f = self.flows.get_mut(slot.0);
        if f.una == f.nsegs {
            return;
        }
        let ack = p.seq.min(f.nxt);
        f.consecutive_timeouts = 0;
        f.probing = false;
        // SACK scoreboard.
        let mut newly_sacked = 0;
        if cfg.sack {
            for &(a, b) in p.sack.iter().filter(|b| b.1 > 0) {
                for s in a.max(f.una)..b.min(f.nxt) {
                    let fl = &mut f.flags[s as usize];
                    if *fl & SACKED == 0 {
                        if *fl & INFLIGHT != 0 {
                            f.pipe -= 1;
                        }
                        *fl = SACKED;
                        newly_sacked += 1;
                    }
                }
                f.high_sacked = f.high_sacked.max(b.min(f.nxt));
            }
        }
        let advanced = ack > f.una;
        let mut newly_acked = 0;
        if advanced {
            // RTT from the echoed timestamp (every ACK gives a valid sample, so Karn's rule is not needed).
            rtt_sample(cfg, f, (ctx.now - p.ts).0 as f64);
            for s in f.una..ack {
                if f.flags[s as usize] & INFLIGHT != 0 {
                    f.pipe -= 1;
                }
            }
            newly_acked = ack - f.una;
            f.una = ack;
            f.dupacks = 0;
            f.retx_hint = f.retx_hint.max(ack);
            f.lost_mark = f.lost_mark.max(ack);
        } else if f.una < f.nxt {
            f.dupacks += 1;
        }
        if cfg.ooo_inflation {
            // FL-PS (§6.5.4): a new ACK sets the inflation; a duplicate can only raise it (ACKs may be reordered).
            let v = p.aux & fastlane::OOO_MASK;
            f.ooo_inflate = if advanced { v } else { f.ooo_inflate.max(v) };
        }
        // DCTCP: estimate the marked fraction once per window of data; cut once per window on ECE.
        if let CongestionControl::Dctcp { g, .. } = cfg.cc {
            let acked = newly_acked + newly_sacked;
            f.acked_win += acked;
            if p.ece {
                f.marked_win += acked;
            }
            if f.una >= f.win_end && advanced {
                if f.acked_win > 0 {
                    let frac = f.marked_win as f64 / f.acked_win as f64;
                    f.alpha = (1.0 - g) * f.alpha + g * frac;
                }
                f.acked_win = 0;
                f.marked_win = 0;
                f.win_end = f.nxt;
            }
            if p.ece && !f.in_recovery && (f.una >= f.cwr_end || f.cwr_end == 0) {
                f.cwnd = (f.cwnd * (1.0 - f.alpha / 2.0)).max(1.0);
                f.ssthresh = f.cwnd.max(2.0);
                f.cwr_end = f.nxt;
            }
        }
        // RFC 3168: an echoed mark halves the window, once per window of data, never during loss recovery
        // (which has cut it already).
        let ecn_cc = matches!(cfg.cc, CongestionControl::NewReno | CongestionControl::Cubic(_));
        if cfg.ecn && ecn_cc && p.ece && !f.in_recovery && f.una >= f.cwr_end {
            f.cwnd = match cfg.cc {
                CongestionControl::Cubic(c) => f.cubic.on_congestion(c, f.cwnd),
                _ => (f.cwnd / 2.0).max(1.0),
            };
            f.ssthresh = f.cwnd.max(2.0);
            f.cwr_end = f.nxt;
            self.stats.ecn_cuts += 1;
        }
        // Loss recovery.
        if f.in_recovery {
            if f.una >= f.recover {
                f.in_recovery = false;
                f.cwnd = f.ssthresh;
                f.inflate = 0;
            } else if !cfg.sack {
                if advanced {
                    // NewReno partial ACK: the next hole is lost too; deflate by what was acked.
                    mark_lost(f, f.una);
                    f.inflate = f.inflate.saturating_sub(newly_acked);
                } else {
                    f.inflate += 1;
                }
            }
        } else if cfg.fast_retransmit
            && !f.fl.active
            && f.una >= f.rto_recover
            && f.una < f.nxt
            && (f.dupacks >= cfg.dupthresh || (cfg.sack && sack_lost_limit(f, cfg.dupthresh) > f.una))
        {
            f.in_recovery = true;
            f.recover = f.nxt;
            f.ssthresh = match cfg.cc {
                // Linux's CUBIC cuts the window, not the flight size (RFC 9438 §4.6 allows either).
                CongestionControl::Cubic(c) => f.cubic.on_congestion(c, f.cwnd),
                _ => ((f.nxt - f.una) as f64 / 2.0).max(2.0),
            };
            f.cwnd = f.ssthresh;
            f.inflate = if cfg.sack { 0 } else { cfg.dupthresh };
            mark_lost(f, f.una);
        } else if advanced && !(cfg.cwr_freeze && f.una < f.cwr_end) {
            let mut acked = newly_acked as f64;
            if f.cwnd < f.ssthresh {
                // One segment per segment acknowledged, up to ssthresh; after a timeout a single cumulative ACK
                // can cover hundreds of SACKed segments, and Linux does not let them all open the window.
                if cfg.slow_start_cap && f.cwnd + acked > f.ssthresh {
                    acked -= f.ssthresh - f.cwnd;
                    f.cwnd = f.ssthresh;
                } else {
                    f.cwnd += acked;
                    acked = 0.0;
                }
            }
            if acked > 0.0 {
                if let CongestionControl::Cubic(c) = cfg.cc {
                    // srtt is in picoseconds; before the first sample CUBIC aims at the curve itself.
                    f.cwnd = f.cubic.on_ack(c, f.cwnd, acked, ctx.now, f.srtt * 1e-12);
                } else {
                    f.cwnd += acked / f.cwnd;
                }
            }
            if let Some(m) = cfg.max_cwnd {
                f.cwnd = f.cwnd.min(m as f64);
            }
        }
        if f.in_recovery && cfg.sack {
            let limit = sack_lost_limit(f, cfg.dupthresh);
            for s in f.lost_mark.max(f.una)..limit {
                let fl = f.flags[s as usize];
                if fl & (SACKED | LOST | RETX) == 0 {
                    mark_lost(f, s);
                }
            }
            f.lost_mark = f.lost_mark.max(limit);
        }
        if f.fl.active {
            fastlane::on_ack(cfg, f, p.aux);
        }
        if f.traced {
            self.trace.record(ctx.now, f.id, TraceEvent::Ack, window(f));
        }
        if f.una == f.nsegs {
            f.rto_timer.cancel();
            f.flags = Vec::new();
            let (id, retransmits, timeouts) = (f.id, f.retransmits, f.timeouts);
            ctx.report(FlowEvent::Closed { id, retransmits, timeouts });
            // The receiver's half answers duplicates until word of this close reaches it.
            let gen = self.gens[slot.idx()];
            ctx.tell(f.src, f.dst, f.steer.path, slot, gen, TimerKind::PeerClosed, id);
            self.close_half(slot, true);
            return;
        }
        if advanced {
            let (at, gen) = (ctx.now + f.rto, self.gens[slot.idx()]);
            f.rto_timer.set(ctx, at, slot, gen, TimerKind::Retransmit);
        }
        if f.fl.active {
            self.fl_pump(ctx, slot, false);
        }
        self.try_send(ctx, slot);
    }

    fn on_rto(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let cfg = &self.cfg;
        let f = self.flows.get_mut(slot.0);
        f.timeouts += 1;
        f.consecutive_timeouts += 1;
        // The notice list holds packets notified "since the last timeout" (§6.5.4).
        f.fl.clear();
        if cfg.probe_after.is_some_and(|n| f.consecutive_timeouts > n) {
            // Probe mode: no data until an ACK shows the path is usable again; one 1-byte probe per RTO.
            f.probing = true;
            let gen = self.gens[slot.idx()];
            let p = segment_packet(cfg, f, PktKind::Probe, slot, gen, f.una, 1, ctx.now);
            let (src, at) = (f.src, ctx.now + f.rto);
            ctx.send(src, p);
            f.rto_timer.set(ctx, at, slot, gen, TimerKind::Retransmit);
            return;
        }
        f.ssthresh = match cfg.cc {
            CongestionControl::Cubic(c) => f.cubic.on_congestion(c, f.cwnd),
            _ => {
                let before = if cfg.ssthresh_from_cwnd { f.cwnd } else { (f.nxt - f.una) as f64 };
                (before / 2.0).max(2.0)
            }
        };
        f.cwnd = 1.0;
        // A timeout ends a window reduction in progress (Linux leaves CWR for Loss): slow start may grow.
        f.cwr_end = f.cwr_end.min(f.una);
        f.in_recovery = false;
        f.inflate = 0;
        f.dupacks = 0;
        f.rto_recover = f.nxt;
        for s in f.una..f.nxt {
            let fl = &mut f.flags[s as usize];
            if *fl & SACKED == 0 {
                if *fl & INFLIGHT != 0 {
                    f.pipe -= 1;
                }
                *fl = LOST;
            }
        }
        f.lost_mark = f.nxt;
        f.retx_hint = f.una;
        if cfg.fixed_rto.is_none() {
            f.rto = Time((f.rto.0 * 2).min(cfg.max_rto.0));
        }
        if f.traced {
            self.trace.record(ctx.now, f.id, TraceEvent::Timeout, window(f));
        }
        self.try_send(ctx, slot);
    }

    fn try_send(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let gen = self.gens[slot.idx()];
        let cfg = &self.cfg;
        let f = self.flows.get_mut(slot.0);
        if !f.established {
            return; // the SYN-ACK starts the data
        }
        // No new data while FastLane resends from its list (a choice: the thesis does not say).
        let wnd = if f.probing || f.fl.active { 0 } else { (f.cwnd as u32).max(1) + f.inflate + f.ooo_inflate };
        while f.pipe < wnd {
            let seg = match next_lost(f) {
                Some(s) => {
                    f.flags[s as usize] = (f.flags[s as usize] & !LOST) | RETX | INFLIGHT;
                    f.retransmits += 1;
                    s
                }
                None if f.nxt < f.nsegs => {
                    f.flags[f.nxt as usize] |= INFLIGHT;
                    f.nxt += 1;
                    f.nxt - 1
                }
                None => break,
            };
            f.pipe += 1;
            let p = data_packet(cfg, f, slot, gen, seg, ctx.now);
            let src = f.src;
            ctx.send(src, p);
        }
        if f.una < f.nxt && !f.rto_timer.armed() {
            let at = ctx.now + f.rto;
            f.rto_timer.set(ctx, at, slot, gen, TimerKind::Retransmit);
        }
    }
}

/// Data segment `seg` of flow `f` (new or resent): its payload, and ECN-capable when the sender reacts to ECN.
fn data_packet(cfg: &TcpConfig, f: &Flow, slot: FlowSlot, gen: u32, seg: u32, now: Time) -> Packet {
    let payload = if seg + 1 == f.nsegs { f.last_payload } else { cfg.mss };
    let mut p = segment_packet(cfg, f, PktKind::Data, slot, gen, seg, payload, now);
    p.ect = cfg.ecn || matches!(cfg.cc, CongestionControl::Dctcp { .. });
    p
}

/// A sender packet for segment `seg` (data, or a 1-byte probe) carrying `payload` bytes.
#[allow(clippy::too_many_arguments)]
fn segment_packet(
    cfg: &TcpConfig,
    f: &Flow,
    kind: PktKind,
    slot: FlowSlot,
    gen: u32,
    seg: u32,
    payload: u32,
    now: Time,
) -> Packet {
    let mut p = Packet::new(kind, slot, gen, f.src, f.dst);
    p.payload = payload;
    p.size = payload + cfg.header;
    p.seq = seg;
    p.ts = now;
    (p.class, p.rank) = priority(cfg, f, seg, now);
    f.steer.apply(&mut p);
    p
}

/// One RTT sample `r` (ps) into SRTT and RTTVAR, and the RTO from them (RFC 6298 §2), unless it is fixed.
fn rtt_sample(cfg: &TcpConfig, f: &mut Flow, r: f64) {
    if f.srtt == 0.0 {
        f.srtt = r;
        f.rttvar = r / 2.0;
    } else {
        f.rttvar = 0.75 * f.rttvar + 0.25 * (f.srtt - r).abs();
        f.srtt = 0.875 * f.srtt + 0.125 * r;
    }
    let rto = Time((f.srtt + 4.0 * f.rttvar) as u64);
    f.rto = cfg.fixed_rto.unwrap_or(rto.max(cfg.min_rto).min(cfg.max_rto));
}

/// A header-only control packet of flow `f` (ACK, SYN, SYN-ACK): `packet.ack` bytes, the flow's class, the
/// most urgent rank (a decision: the papers do not say), and on the `reverse` path (receiver to sender) a
/// hash of its own, so that ACKs need not follow the data's path backwards (a pinned flow's do).
#[inline]
fn control_packet(cfg: &TcpConfig, f: &Flow, kind: PktKind, slot: FlowSlot, gen: u32, reverse: bool) -> Packet {
    let (src, dst, steer) = if reverse { (f.dst, f.src, f.steer.reverse()) } else { (f.src, f.dst, f.steer) };
    let mut p = Packet::new(kind, slot, gen, src, dst);
    p.size = cfg.ack_size;
    p.class = f.class.unwrap_or_else(|| cfg.class.top());
    p.rank = 0;
    steer.apply(&mut p);
    p
}

/// What the cwnd trace records of a sender.
fn window(f: &Flow) -> Window {
    Window { cwnd: f.cwnd, ssthresh: f.ssthresh, pipe: f.pipe, una: f.una, nxt: f.nxt }
}

/// The class and priority number of segment `seg` of flow `f`, sent at `now`.
#[inline]
fn priority(cfg: &TcpConfig, f: &Flow, seg: u32, now: Time) -> (u8, u64) {
    let sent = (seg as u64 * cfg.mss as u64).min(f.size);
    let remaining = f.size - sent;
    let payload = (f.size - sent).min(cfg.mss as u64);
    let class = f.class.unwrap_or_else(|| cfg.class.class(f.size, sent, payload));
    match cfg.priority {
        Priority::None => (class, 0),
        Priority::Remaining => (class, remaining),
        Priority::BytesSent => (class, sent),
        Priority::FlowSize => (class, f.size),
        Priority::Class => (class, class as u64),
        Priority::Deadline => match f.deadline {
            Some(d) if now + cfg.line_rate.tx_time(remaining) <= d => (class, d.0 / 1_000_000),
            Some(_) => (class + 1, 1 << 30),
            None => (class + 1, remaining),
        },
    }
}

fn mark_lost(f: &mut Flow, s: u32) {
    let fl = &mut f.flags[s as usize];
    if *fl & (SACKED | RETX) != 0 {
        return;
    }
    if *fl & INFLIGHT != 0 {
        f.pipe -= 1;
    }
    *fl = LOST;
    f.retx_hint = f.retx_hint.min(s);
    f.lost_mark = f.lost_mark.max(s + 1);
}

/// RFC 6675 IsLost: segments below the returned index have at least `dupthresh` SACKed segments above them.
fn sack_lost_limit(f: &Flow, dupthresh: u32) -> u32 {
    let mut count = 0;
    let mut s = f.high_sacked;
    while s > f.una {
        s -= 1;
        if f.flags[s as usize] & SACKED != 0 {
            count += 1;
            if count == dupthresh {
                return s;
            }
        }
    }
    f.una
}

fn next_lost(f: &mut Flow) -> Option<u32> {
    let mut s = f.retx_hint.max(f.una);
    while s < f.lost_mark.min(f.nxt) {
        if f.flags[s as usize] & (LOST | RETX) == LOST {
            f.retx_hint = s + 1;
            return Some(s);
        }
        s += 1;
    }
    f.retx_hint = s;
    None
}

/// Insert segment `s` into the sorted disjoint range list, merging neighbours.
fn insert_range(r: &mut Vec<(u32, u32)>, s: u32) {
    let i = r.partition_point(|&(_, b)| b < s);
    if i < r.len() && r[i].0 <= s && s < r[i].1 {
        return;
    }
    let joins_left = i < r.len() && r[i].1 == s;
    let joins_right_idx = if joins_left { i + 1 } else { i };
    let joins_right = joins_right_idx < r.len() && r[joins_right_idx].0 == s + 1;
    match (joins_left, joins_right) {
        (true, true) => {
            r[i].1 = r[i + 1].1;
            r.remove(i + 1);
        }
        (true, false) => r[i].1 = s + 1,
        (false, true) => r[i].0 = s,
        (false, false) => r.insert(i, (s, s + 1)),
    }
}

impl Halves for Tcp {
    fn split_mut(&mut self) -> &mut Split {
        &mut self.split
    }
    fn ends_mut(&mut self, slot: u32) -> &mut Ends {
        &mut self.flows.get_mut(slot).ends
    }
    fn free(&mut self, slot: FlowSlot) {
        self.gens[slot.idx()] += 1;
        self.flows.remove(slot.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ranges_merge() {
        let mut r = vec![];
        insert_range(&mut r, 5);
        insert_range(&mut r, 7);
        assert_eq!(r, vec![(5, 6), (7, 8)]);
        insert_range(&mut r, 6);
        assert_eq!(r, vec![(5, 8)]);
        insert_range(&mut r, 4);
        insert_range(&mut r, 8);
        insert_range(&mut r, 1);
        assert_eq!(r, vec![(1, 2), (4, 9)]);
        insert_range(&mut r, 6);
        assert_eq!(r, vec![(1, 2), (4, 9)]);
    }
}

#[cfg(test)]
mod class_tests {
    use super::{ClassBy, ClassPolicy};

    #[test]
    fn size_thresholds_bound_each_class_from_above() {
        let p = ClassPolicy::Thresholds { thresholds: vec![100, 1000], by: ClassBy::FlowSize };
        // Class i holds sizes in (t_{i-1}, t_i]; every packet of a flow has its flow's class.
        let classes: Vec<u8> = [1, 100, 101, 1000, 1001, u64::MAX].iter().map(|&s| p.class(s, 0, 1)).collect();
        assert_eq!(classes, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(p.class(50, 40, 10), 0);
    }

    #[test]
    fn bytes_sent_thresholds_demote_a_flow_exactly_at_each_threshold() {
        let p = ClassPolicy::Thresholds { thresholds: vec![100, 1000], by: ClassBy::BytesSent };
        // A packet preceded by [t_{i-1}, t_i) bytes goes in class i, whatever the flow's size.
        let classes: Vec<u8> = [0, 99, 100, 999, 1000].iter().map(|&sent| p.class(1_000_000, sent, 1460)).collect();
        assert_eq!(classes, vec![0, 0, 1, 1, 2]);
        assert_eq!(ClassPolicy::Fixed(3).class(5, 0, 5), 3);
    }

    #[test]
    fn last_byte_puts_a_packet_spanning_levels_at_the_lowest() {
        let p = ClassPolicy::Thresholds { thresholds: vec![100, 1000], by: ClassBy::LastByte };
        // A 1460 B first packet holds bytes 0..1460: levels 0, 1 and 2; it goes at level 2.
        assert_eq!(p.class(1_000_000, 0, 1460), 2);
        // One-packet messages get their size's level: 100 B → 0, 101 B → 1, 1000 B → 1.
        assert_eq!([100, 101, 1000].map(|s| p.class(s, 0, s)), [0, 1, 1]);
        // With bytes sent the same packets would all go at level 0.
        let q = ClassPolicy::Thresholds { thresholds: vec![100, 1000], by: ClassBy::BytesSent };
        assert_eq!([100, 101, 1000, 1_000_000].map(|s| q.class(s, 0, s.min(1460))), [0, 0, 0, 0]);
    }
}
