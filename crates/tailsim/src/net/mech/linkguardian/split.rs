//! LinkGuardian in a parallel run (sim/parallel.rs, docs/parallel.md): each end of a protected link runs in
//! its switch's part. The `Link` record holds both ends' state, each read only by its own end; the
//! recirculation loops are their switches'; what a frame says (kept per direction of the link, `Wire`)
//! crosses between parts with the frame, packed in one word; each timer acts at one end.

use super::{LgStats, LinkGuardian, Role, Seq, Tag, Wire, PFC, STALL};
use crate::net::port::Port;
use crate::units::{NodeId, PortId};

impl Tag {
    /// The tag as one word, for a parallel run that hands its frame to the far end's part (sim/parallel.rs):
    /// 3 bits of kind, then the fields (a sequence number is 17 bits: 16 and its era).
    pub(super) fn pack(self) -> u64 {
        let s = |q: Seq| q.n as u64 | (q.era as u64) << 16;
        match self {
            Tag::Plain => 0,
            Tag::Data { seq, retx } => 1 | s(seq) << 3 | (retx as u64) << 20,
            Tag::Dummy { next } => 2 | s(next) << 3,
            Tag::Piggy { latest } => 3 | latest.map_or(0, |l| s(l) << 3 | 1 << 20),
            Tag::Ack { latest } => 4 | s(latest) << 3,
            Tag::Notice { first, hole, latest } => 5 | s(first) << 3 | s(latest) << 20 | (hole as u64) << 37,
            Tag::Pfc(pause) => 6 | (pause as u64) << 3,
        }
    }

    pub(super) fn unpack(w: u64) -> Tag {
        let s = |x: u64| Seq { n: x as u16, era: (x >> 16) & 1 != 0 };
        let bit = |i: u32| (w >> i) & 1 != 0;
        match w & 7 {
            0 => Tag::Plain,
            1 => Tag::Data { seq: s(w >> 3), retx: bit(20) },
            2 => Tag::Dummy { next: s(w >> 3) },
            3 => Tag::Piggy { latest: bit(20).then(|| s(w >> 3)) },
            4 => Tag::Ack { latest: s(w >> 3) },
            5 => Tag::Notice { first: s(w >> 3), latest: s(w >> 20), hole: (w >> 37) as u32 },
            _ => Tag::Pfc(bit(3)),
        }
    }
}

impl LgStats {
    /// Add another part's counts (each counted where it happened) and take the larger maxima.
    pub(super) fn add(&mut self, o: &LgStats) {
        let LgStats {
            protected,
            delivered,
            missing,
            recovered,
            unrequested,
            gave_up,
            notices,
            resends,
            duplicates,
            dummies,
            ack_frames,
            piggybacked,
            pauses,
            resumes,
            held,
            loop_overflow,
            max_tx_queue,
            max_rx_queue,
            max_tx_held,
            max_rx_held,
        } = *o;
        self.protected += protected;
        self.delivered += delivered;
        self.missing += missing;
        self.recovered += recovered;
        self.unrequested += unrequested;
        self.gave_up += gave_up;
        self.notices += notices;
        self.resends += resends;
        self.duplicates += duplicates;
        self.dummies += dummies;
        self.ack_frames += ack_frames;
        self.piggybacked += piggybacked;
        self.pauses += pauses;
        self.resumes += resumes;
        self.held += held;
        self.loop_overflow += loop_overflow;
        self.max_tx_queue = self.max_tx_queue.max(max_tx_queue);
        self.max_rx_queue = self.max_rx_queue.max(max_rx_queue);
        self.max_tx_held = self.max_tx_held.max(max_tx_held);
        self.max_rx_held = self.max_rx_held.max(max_rx_held);
    }
}

impl LinkGuardian {
    /// The switch of recirculation loop `r` (a link's sender's or receiver's).
    pub(super) fn loop_node(&self, ports: &[Port], r: usize) -> NodeId {
        for l in &self.prm.links {
            if l.tx_loop == r {
                return ports[l.port.idx()].node;
            }
            if l.rx_loop == r {
                return ports[l.port.idx()].peer;
            }
        }
        unreachable!("loop {r} serves no protected link")
    }

    /// The node at which timer `key` acts.
    pub(super) fn timer_at(&self, ports: &[Port], key: u32) -> NodeId {
        let end = |k: u32, far: bool| {
            let p = &ports[self.prm.links[k as usize].port.idx()];
            if far {
                p.peer
            } else {
                p.node
            }
        };
        if key & STALL != 0 {
            end(key & !STALL, true) // the receiver's countdown
        } else if key & PFC != 0 {
            end((key & !PFC) >> 1, false) // a pause taking effect at the sender
        } else {
            self.loop_node(ports, key as usize)
        }
    }

    /// The merge: counters added, the receiver's recovery delays and each loop taken from their parts.
    pub(super) fn take_ends(&mut self, other: &mut LinkGuardian, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        for (k, l) in self.prm.links.iter().enumerate() {
            let (a, b) = (&mut self.links[k], &mut other.links[k]);
            a.stats.add(&b.stats);
            if theirs(ports[l.port.idx()].peer) {
                std::mem::swap(&mut a.recovery, &mut b.recovery);
            }
        }
        for r in 0..self.loops.len() {
            if theirs(self.loop_node(ports, r)) {
                std::mem::swap(&mut self.loops[r], &mut other.loops[r]);
            }
        }
    }

    /// The direction of a protected link that port `at` sends over, if any.
    pub(super) fn wire_of(&mut self, at: PortId) -> Option<&mut Wire> {
        match self.role[at.idx()] {
            Role::None => None,
            Role::Fwd(k) => Some(&mut self.links[k as usize].fwd),
            Role::Back(k) => Some(&mut self.links[k as usize].back),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_survives_its_word() {
        let seqs = [Seq { n: 0, era: false }, Seq { n: 65_535, era: true }, Seq { n: 1234, era: false }];
        for &a in &seqs {
            for &b in &seqs {
                for t in [
                    Tag::Plain,
                    Tag::Data { seq: a, retx: false },
                    Tag::Data { seq: a, retx: true },
                    Tag::Dummy { next: a },
                    Tag::Piggy { latest: None },
                    Tag::Piggy { latest: Some(a) },
                    Tag::Ack { latest: a },
                    Tag::Notice { first: a, hole: 65_536, latest: b },
                    Tag::Notice { first: b, hole: 1, latest: a },
                    Tag::Pfc(true),
                    Tag::Pfc(false),
                ] {
                    assert_eq!(Tag::unpack(t.pack()), t, "{t:?}");
                }
            }
        }
    }
}
