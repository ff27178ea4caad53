//! pHost (Gao et al., CoNEXT 2015), as the Homa thesis describes and ran it (§6.1): receiver-driven tokens
//! with free tokens for the first BDP and the downgrading of unresponsive senders.
//!
//! - A new message sends an RTS (its size) to the receiver and, at once, its first BDP (RTTbytes) on free
//!   tokens.
//! - A receiver sends one token per full-packet time at its link rate, to the message with the fewest bytes
//!   left to receive (SRPT) among those whose sender is not downgraded. A token names one packet.
//! - A sender holds a token for 1.5 full-packet times after it arrives; unused by then, it expires. The sender
//!   sends, whenever its NIC is free (the pacer, as Homa's), a packet of the message with the fewest bytes
//!   left to send among those with a free token or an unexpired token (its tokens before its free packets).
//! - The receiver counts a token as expired when its packet has not arrived `token_timeout` after the token
//!   left (three RTTs plus the expiry by default); it tokens that packet again once the message has no new
//!   packets left to token and none of its packets has arrived for `token_timeout` (not at once: a packet
//!   late behind a queue would arrive twice, and the duplicates lengthen the queue). When a sender has more
//!   than a BDP of expired tokens, the receiver downgrades it: no tokens to it until a packet arrives from it
//!   or 3 × BDP time has passed.
//! - Two priorities: control packets (RTS, tokens) and, by default, the free-token packets in class 0 (the
//!   thesis: "one high priority for all blind transmissions"), tokened packets in class 1.
//! - Lost packets (finite buffers only; off when nothing can be lost): a receiver that hears nothing of an
//!   incomplete message for `timeout` tokens its missing packets again.
//!
//! One record per message holds both ends' state, as in `homa.rs`; each end reads only its own fields and has
//! a life of its own (`split.rs`): the receiver's ends when it holds every byte, the sender's when word of
//! that reaches it (`TimerKind::PeerClosed`, a message between the hosts that takes the path's propagation
//! delay): until then it spends the tokens that reach it, as a sender that cannot know would. Docs:
//! docs/phost.md.

use std::collections::{BTreeMap, VecDeque};

use super::split::{Ends, Halves, Split};
use super::{packet_count, payload_of, track_slot, Ctx, FlowEvent, FlowSpec, Steer, Timer};
use crate::engine::{Slab, TimerKind};
use crate::net::packet::{Packet, PktKind};
use crate::units::{FlowSlot, NodeId, PktId, Time};

#[derive(Clone, Debug)]
pub struct PhostConfig {
    pub payload: u32,
    pub header: u32,
    pub ctrl_size: u32,
    pub wire_overhead: u32,
    /// Free tokens per message (one BDP), and the downgrade threshold in packets' worth.
    pub rtt_bytes: u64,
    /// A token's lifetime at the sender after it arrives (1.5 full-packet times).
    pub token_expiry: Time,
    /// Receiver: a token whose packet has not arrived this long after it left counts as expired (the
    /// receiver cannot see the sender's expiry; default three RTTs plus the expiry).
    pub token_timeout: Time,
    /// How long a downgraded sender stays downgraded without sending (3 × BDP time).
    pub downgrade_for: Time,
    /// Send the free-token packets in class 0 with the control packets (else in the data class).
    pub free_high: bool,
    /// Class of tokened data packets.
    pub data_class: u8,
    /// Hand the NIC one packet at a time, so a token's packet is not queued behind blind ones.
    pub pacer: bool,
    /// Receiver: token the missing packets again after this long without progress (None: never).
    pub timeout: Option<Time>,
}

struct Msg {
    id: u64,
    src: NodeId,
    dst: NodeId,
    size: u64,
    npkts: u32,
    steer: Steer,
    /// Which halves are open (`split.rs`).
    ends: Ends,
    /// Packets sent on free tokens.
    free: u32,
    // --- sender ---
    next_free: u32,
    /// Tokens held: (packet, expiry), oldest first.
    tokens: VecDeque<(u32, Time)>,
    in_out: bool,
    sent_bytes: u64,
    retransmits: u32,
    // --- receiver ---
    got: Vec<bool>,
    got_pkts: u32,
    got_bytes: u64,
    /// Next packet to token (packets below it were tokened or are free).
    tok_next: u32,
    /// Packets whose token expired or whose packet went missing: tokened again after the new ones.
    retoken: Vec<u32>,
    in_pending: bool,
    seen: bool,
    /// When the receiver last got a packet of the message.
    last_arrival: Time,
    timer: Timer,
    timeouts: u32,
}

impl Msg {
    fn tokenable(&self) -> bool {
        !self.retoken.is_empty() || self.tok_next < self.npkts
    }
    /// A token may go now: a new packet, or — once none is left and the message has been quiet for `quiet`
    /// — a packet counted as expired (one still queued somewhere would otherwise arrive twice).
    fn tokenable_now(&self, now: Time, quiet: Time) -> bool {
        self.tok_next < self.npkts || (!self.retoken.is_empty() && now >= self.last_arrival + quiet)
    }
}

/// A receiver's view of one sender: tokens that expired, and since when it is downgraded.
#[derive(Clone, Copy, Default)]
struct SenderView {
    expired: u32,
    down_since: Option<Time>,
}

#[derive(Default)]
struct HostState {
    // --- as a sender ---
    out: Vec<FlowSlot>,
    nic_free: Time,
    pacer_timer: Timer,
    // --- as a receiver ---
    /// Incomplete messages with packets to token.
    pending: Vec<FlowSlot>,
    /// Tokens sent, oldest first: (message, generation, packet, time by which its packet must arrive).
    outstanding: VecDeque<(FlowSlot, u32, u32, Time)>,
    /// Senders this receiver has counted expired tokens for (ordered, so iteration is deterministic).
    senders: BTreeMap<NodeId, SenderView>,
    downgraded: u32,
    token_timer: Timer,
    next_token: Time,
}

impl HostState {
    fn is_down(&self, src: NodeId) -> bool {
        self.downgraded > 0 && self.senders.get(&src).is_some_and(|v| v.down_since.is_some())
    }
}

/// Counters for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhostStats {
    pub tokens: u64,
    /// Tokens a sender let expire (dropped at the sender).
    pub expired_at_sender: u64,
    /// Tokens the receiver counted as expired.
    pub expired: u64,
    pub downgrades: u64,
    pub upgrades: u64,
    /// Data packets that arrived twice (tokened again after counting as expired, then both arrived).
    pub duplicates: u64,
}

pub struct Phost {
    cfg: PhostConfig,
    msgs: Slab<Msg>,
    gens: Vec<u32>,
    hosts: Vec<HostState>,
    /// Per host: one full frame's time at its link rate (the token clock).
    spacing: Vec<Time>,
    /// Which hosts' halves this run runs, and the halves closed since a parallel run's last meeting.
    split: Split,
    pub stats: PhostStats,
}

impl Phost {
    pub fn new(cfg: PhostConfig, spacing: Vec<Time>) -> Phost {
        let hosts = spacing.iter().map(|_| HostState::default()).collect();
        Phost {
            cfg,
            msgs: Slab::default(),
            gens: Vec::new(),
            hosts,
            spacing,
            split: Split::default(),
            stats: PhostStats::default(),
        }
    }

    /// Messages not yet received.
    pub fn active(&self) -> usize {
        self.split.receiving
    }

    /// Another part's counters, added to this one's (the merge at the end of a parallel run).
    pub fn add_part(&mut self, other: &Phost) {
        self.split.receiving += other.split.receiving;
        let (a, b) = (&mut self.stats, &other.stats);
        a.tokens += b.tokens;
        a.expired_at_sender += b.expired_at_sender;
        a.expired += b.expired;
        a.downgrades += b.downgrades;
        a.upgrades += b.upgrades;
        a.duplicates += b.duplicates;
    }

    pub fn config(&self) -> &PhostConfig {
        &self.cfg
    }

    fn bdp_pkts(&self) -> u32 {
        (self.cfg.rtt_bytes.div_ceil(self.cfg.payload as u64) as u32).max(1)
    }

    /// Make message `f`'s record, its halves at this run's hosts open, without sending
    /// (`Transport::open_flow`).
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        let npkts = packet_count(f.size, self.cfg.payload);
        let free = self.bdp_pkts().min(npkts);
        let m = Msg {
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size,
            npkts,
            steer: f.steer(),
            ends: self.split.open(f.src, f.dst),
            free,
            next_free: 0,
            tokens: VecDeque::new(),
            in_out: false,
            sent_bytes: 0,
            retransmits: 0,
            got: vec![false; npkts as usize],
            got_pkts: 0,
            got_bytes: 0,
            tok_next: free,
            retoken: Vec::new(),
            in_pending: false,
            seen: false,
            last_arrival: Time::ZERO,
            timer: Timer::default(),
            timeouts: 0,
        };
        let slot = FlowSlot(self.msgs.insert(m));
        track_slot(&mut self.gens, slot);
        slot
    }

    /// Start the sender of the message in `slot`.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let gen = self.gens[slot.idx()];
        let m = self.msgs.get(slot.0);
        if !m.ends.snd {
            return; // another part's sender (a parallel run)
        }
        let (src, dst, size) = (m.src, m.dst, m.size);
        if m.free < m.npkts {
            // The RTS: only messages that need tokens announce themselves (a message that fits in its free
            // tokens is complete without the receiver's help).
            let mut rts = self.ctrl(PktKind::Rts, slot, gen, src, dst);
            rts.aux = size as u32;
            self.send(ctx, src, rts);
        }
        self.enqueue_out(slot);
        self.pump(ctx, src);
    }

    pub fn on_packet(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.consume(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            return; // a late packet of a finished message
        }
        let ends = self.msgs.get(p.flow.0).ends;
        if !(if p.kind == PktKind::Token { ends.snd } else { ends.rcv }) {
            return; // a late packet for a half that has closed (a duplicate after the last packet)
        }
        match p.kind {
            PktKind::Data => self.on_data(ctx, host, p),
            PktKind::Rts => self.learn(ctx, host, p.flow, p.flow_gen),
            PktKind::Token => {
                let expiry = ctx.now + self.cfg.token_expiry;
                self.msgs.get_mut(p.flow.0).tokens.push_back((p.seq, expiry));
                self.enqueue_out(p.flow);
                self.pump(ctx, host);
            }
            other => unreachable!("{other:?} is not a pHost packet"),
        }
    }

    /// The host a message timer acts at (the handover check, sim/handover.rs): the resend timer the
    /// receiver's, word of the receiver's completion the sender's (None once that half is closed).
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return None; // its flow is gone: the timer does nothing
        }
        let m = self.msgs.try_get(slot.0)?;
        if kind == TimerKind::PeerClosed {
            m.ends.snd.then_some(m.src)
        } else {
            m.ends.rcv.then_some(m.dst)
        }
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        match kind {
            TimerKind::Pacer => {
                let h = NodeId(slot.0);
                if self.hosts[h.idx()].pacer_timer.fire(ctx, slot, gen, kind) {
                    self.pump(ctx, h);
                }
            }
            TimerKind::RxPacer => {
                let h = NodeId(slot.0);
                if self.hosts[h.idx()].token_timer.fire(ctx, slot, gen, kind) {
                    self.tick(ctx, h);
                }
            }
            TimerKind::Resend => {
                if self.gens.get(slot.idx()) != Some(&gen) || !self.msgs.get(slot.0).ends.rcv {
                    return;
                }
                if self.msgs.get_mut(slot.0).timer.fire(ctx, slot, gen, kind) {
                    self.on_timeout(ctx, slot, gen);
                }
            }
            TimerKind::PeerClosed => {
                if self.gens.get(slot.idx()) == Some(&gen) && self.msgs.get(slot.0).ends.snd {
                    self.sender_done(ctx, slot);
                }
            }
            TimerKind::Retransmit | TimerKind::DelayedAck => unreachable!("not pHost's timers"),
        }
    }

    /// Word of the receiver's completion reached the sender: it stops.
    fn sender_done(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let m = self.msgs.get_mut(slot.0);
        let (id, retransmits, src, in_out) = (m.id, m.retransmits, m.src, m.in_out);
        m.in_out = false;
        m.tokens.clear();
        if in_out {
            let out = &mut self.hosts[src.idx()].out;
            out.swap_remove(out.iter().position(|&s| s == slot).unwrap());
        }
        ctx.report(FlowEvent::Closed { id, retransmits, timeouts: 0 });
        self.close_half(slot, true);
    }

    fn ctrl(&self, kind: PktKind, slot: FlowSlot, gen: u32, from: NodeId, to: NodeId) -> Packet {
        let mut c = Packet::new(kind, slot, gen, from, to);
        c.size = self.cfg.ctrl_size;
        c.class = 0;
        self.msgs.get(slot.0).steer.reverse().apply(&mut c);
        c
    }

    // ------------------------------------------------------------------ sender

    fn enqueue_out(&mut self, slot: FlowSlot) {
        let m = self.msgs.get_mut(slot.0);
        if !m.in_out {
            m.in_out = true;
            let src = m.src;
            self.hosts[src.idx()].out.push(slot);
        }
    }

    /// Send from host `h`: one packet whenever the NIC is idle (all at once without the pacer), of the
    /// message with the fewest bytes left to send among those holding a free or unexpired token.
    fn pump(&mut self, ctx: &mut Ctx, h: NodeId) {
        let full = self.cfg.payload;
        loop {
            let hs = &mut self.hosts[h.idx()];
            if self.cfg.pacer && ctx.now < hs.nic_free {
                let at = hs.nic_free;
                hs.pacer_timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::Pacer);
                return;
            }
            // Drop expired tokens, and messages with nothing to send, from the candidates.
            let mut i = 0;
            while i < hs.out.len() {
                let m = self.msgs.get_mut(hs.out[i].0);
                while m.tokens.front().is_some_and(|&(_, exp)| exp < ctx.now) {
                    m.tokens.pop_front();
                    self.stats.expired_at_sender += 1;
                }
                if m.next_free < m.free || !m.tokens.is_empty() {
                    i += 1;
                } else {
                    m.in_out = false;
                    hs.out.swap_remove(i);
                }
            }
            let msgs = &self.msgs;
            let Some(pos) = (0..hs.out.len()).min_by_key(|&i| {
                let m = msgs.get(hs.out[i].0);
                (m.size.saturating_sub(m.sent_bytes), m.id)
            }) else {
                return;
            };
            let slot = hs.out[pos];
            let gen = self.gens[slot.idx()];
            let m = self.msgs.get_mut(slot.0);
            // A token before a free packet: the token expires, the free packet does not (within a rack the
            // first tokens arrive while the free packets are still going out).
            let (i, free) = if let Some((seq, _)) = m.tokens.pop_front() {
                (seq, false)
            } else {
                m.next_free += 1;
                (m.next_free - 1, true)
            };
            let payload = payload_of(m.size, m.npkts, i, full);
            m.sent_bytes += payload as u64;
            if !free && i < m.free {
                m.retransmits += 1; // a free packet tokened again after a loss
            }
            let mut p = Packet::new(PktKind::Data, slot, gen, m.src, m.dst);
            p.payload = payload;
            p.size = payload + self.cfg.header;
            p.seq = i;
            p.aux = m.size as u32;
            p.class = if free && self.cfg.free_high { 0 } else { self.cfg.data_class };
            p.ts = ctx.now;
            m.steer.apply(&mut p);
            self.send(ctx, h, p);
            if !self.cfg.pacer {
                continue;
            }
        }
    }

    fn send(&mut self, ctx: &mut Ctx, h: NodeId, p: Packet) {
        ctx.send_paced(h, p, &mut self.hosts[h.idx()].nic_free, self.cfg.wire_overhead);
    }

    // ------------------------------------------------------------------ receiver

    /// The receiver learns of a message (its RTS or its first packet): schedule it for tokens.
    fn learn(&mut self, ctx: &mut Ctx, host: NodeId, slot: FlowSlot, gen: u32) {
        let m = self.msgs.get_mut(slot.0);
        if m.seen {
            return;
        }
        m.seen = true;
        ctx.report(FlowEvent::Heard { id: m.id, at: ctx.now });
        if let Some(to) = self.cfg.timeout {
            m.timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        }
        if m.tokenable() {
            m.in_pending = true;
            self.hosts[host.idx()].pending.push(slot);
            self.tick(ctx, host);
        }
    }

    fn on_data(&mut self, ctx: &mut Ctx, host: NodeId, p: Packet) {
        let slot = p.flow;
        let gen = p.flow_gen;
        // A packet from a downgraded sender upgrades it.
        let hs = &mut self.hosts[host.idx()];
        if hs.is_down(p.src) {
            hs.senders.insert(p.src, SenderView::default());
            hs.downgraded -= 1;
            self.stats.upgrades += 1;
        }
        let m = self.msgs.get_mut(slot.0);
        if m.got[p.seq as usize] {
            self.stats.duplicates += 1; // a late packet whose token the receiver had counted as expired
            return;
        }
        m.got[p.seq as usize] = true;
        m.got_pkts += 1;
        m.got_bytes += p.payload as u64;
        m.last_arrival = ctx.now;
        // A packet counted as expired arrived after all: it is not tokened again.
        if let Some(i) = m.retoken.iter().position(|&s| s == p.seq) {
            m.retoken.swap_remove(i);
        }
        if m.got_pkts == m.npkts {
            m.timer.cancel();
            let (id, timeouts, src, dst, in_pending, path) =
                (m.id, m.timeouts, m.src, m.dst, m.in_pending, m.steer.path);
            m.in_pending = false;
            m.got = Vec::new();
            m.retoken = Vec::new();
            ctx.report(FlowEvent::Received { id, at: ctx.now, timeouts });
            if in_pending {
                let pend = &mut self.hosts[dst.idx()].pending;
                pend.swap_remove(pend.iter().position(|&s| s == slot).unwrap());
            }
            // The sender spends the tokens that reach it until word of this does.
            ctx.tell(dst, src, path.reverse(), slot, gen, TimerKind::PeerClosed, id);
            self.close_half(slot, false);
            return;
        }
        if let Some(to) = self.cfg.timeout {
            m.timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        }
        self.learn(ctx, host, slot, gen);
    }

    /// The token clock: account for expired tokens, then send one token (SRPT among responsive senders).
    fn tick(&mut self, ctx: &mut Ctx, h: NodeId) {
        let bdp = self.bdp_pkts();
        let hs = &mut self.hosts[h.idx()];
        if ctx.now < hs.next_token {
            let at = hs.next_token;
            hs.token_timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::RxPacer);
            return;
        }
        // Tokens whose packet is overdue: expired. The packet is tokened again; the sender may be downgraded.
        while let Some(&(slot, gen, seq, due)) = hs.outstanding.front() {
            if due > ctx.now {
                break;
            }
            hs.outstanding.pop_front();
            if self.gens[slot.idx()] != gen || !self.msgs.get(slot.0).ends.rcv {
                continue; // received meanwhile
            }
            let m = self.msgs.get_mut(slot.0);
            if m.got[seq as usize] {
                continue;
            }
            m.retoken.push(seq);
            if !m.in_pending {
                m.in_pending = true;
                hs.pending.push(slot);
            }
            self.stats.expired += 1;
            let v = hs.senders.entry(m.src).or_default();
            v.expired += 1;
            if v.expired > bdp && v.down_since.is_none() {
                v.down_since = Some(ctx.now);
                hs.downgraded += 1;
                self.stats.downgrades += 1;
            }
        }
        // Senders downgraded for 3 × BDP time get another chance.
        if hs.downgraded > 0 {
            for v in hs.senders.values_mut() {
                if v.down_since.is_some_and(|t| ctx.now >= t + self.cfg.downgrade_for) {
                    *v = SenderView::default();
                    hs.downgraded -= 1;
                    self.stats.upgrades += 1;
                }
            }
        }
        let msgs = &self.msgs;
        let hs_ref = &*hs;
        let quiet = self.cfg.token_timeout;
        let pick = hs
            .pending
            .iter()
            .copied()
            .filter(|s| {
                let m = msgs.get(s.0);
                m.tokenable_now(ctx.now, quiet) && !hs_ref.is_down(m.src)
            })
            .min_by_key(|s| {
                let m = msgs.get(s.0);
                (m.size - m.got_bytes, m.id)
            });
        if let Some(slot) = pick {
            let gen = self.gens[slot.idx()];
            let m = self.msgs.get_mut(slot.0);
            // New packets first; packets counted as expired only when none is left. Tokening them again at
            // once would duplicate every packet that is merely late behind a queue, and the duplicates
            // lengthen the queue: at high load that feeds on itself.
            let seq = if m.tok_next < m.npkts {
                m.tok_next += 1;
                m.tok_next - 1
            } else {
                m.retoken.pop().expect("a tokenable message")
            };
            while m.tok_next < m.npkts && m.got[m.tok_next as usize] {
                m.tok_next += 1;
            }
            let (src, dst) = (m.src, m.dst);
            if !m.tokenable() {
                m.in_pending = false;
                let pend = &mut self.hosts[h.idx()].pending;
                pend.swap_remove(pend.iter().position(|&s| s == slot).unwrap());
            }
            let mut tok = self.ctrl(PktKind::Token, slot, gen, dst, src);
            tok.seq = seq;
            self.stats.tokens += 1;
            let due = ctx.now + self.cfg.token_timeout;
            let hs = &mut self.hosts[h.idx()];
            hs.outstanding.push_back((slot, gen, seq, due));
            hs.next_token = ctx.now + self.spacing[h.idx()];
            self.send(ctx, h, tok);
        }
        // Keep the clock running while anything is owed: tokens to send, or tokens to count as expired.
        let hs = &mut self.hosts[h.idx()];
        let at = if !hs.pending.is_empty() {
            Some(ctx.now + self.spacing[h.idx()])
        } else {
            hs.outstanding.front().map(|o| o.3)
        };
        if let Some(at) = at {
            hs.token_timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::RxPacer);
        }
    }

    fn on_timeout(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32) {
        let Some(to) = self.cfg.timeout else { return };
        let m = self.msgs.get_mut(slot.0);
        m.timeouts += 1;
        m.timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        // Everything missing below the token cursor is tokened again (free packets included).
        let missing: Vec<u32> = (0..m.tok_next).filter(|&i| !m.got[i as usize] && !m.retoken.contains(&i)).collect();
        if missing.is_empty() {
            return;
        }
        m.retoken.extend(missing.into_iter().rev());
        let dst = m.dst;
        if !m.in_pending {
            m.in_pending = true;
            self.hosts[dst.idx()].pending.push(slot);
        }
        self.tick(ctx, dst);
    }
}

impl Halves for Phost {
    fn split_mut(&mut self) -> &mut Split {
        &mut self.split
    }
    fn ends_mut(&mut self, slot: u32) -> &mut Ends {
        &mut self.msgs.get_mut(slot).ends
    }
    fn free(&mut self, slot: FlowSlot) {
        self.gens[slot.idx()] += 1;
        self.msgs.remove(slot.0);
    }
}
