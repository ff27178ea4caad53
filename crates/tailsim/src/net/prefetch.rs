//! The network's side of the run loop's prefetch chain (sim/ahead.rs): where a coming event's records are, so
//! that the chain can start loading them a stage per event ahead. Every function here only reads and hints;
//! none changes the network or a result.

use super::{packet, port, queue, Network, Packets, Port};
use crate::engine::prefetch;
use crate::units::{PktId, PortId};
use queue::QueueDisc;

impl Network {
    /// The queue lines the deep chain loads (`queue_lines`).
    #[inline(always)]
    fn queue_lines(&self) -> u8 {
        self.queue_lines.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Prefetch stage 1 for an event on port `p`: the port's record (its first three lines: flags, wire,
    /// counters; net/port.rs) and what the transmitter holds; with `queue`, the queue's lines too (for the
    /// end of a serialization).
    #[inline(always)]
    pub fn prefetch_port(&self, p: PortId, queue: bool) {
        if let Some(pt) = self.ports.get(p.idx()) {
            pt.prefetch();
            if queue {
                pt.prefetch_queue(self.queue_lines() as usize);
            }
            prefetch(self.tx_current.as_ptr().wrapping_add(p.idx()));
        }
    }
    /// Prefetch stages 2 and later for the end of a serialization on `p` (`stage` 0 = the second): the
    /// queue's head (`QueueDisc::prefetch_head`: a NIC order's records, queued long enough ago to have left
    /// the caches; a FIFO class keeps its oldest packet in the queue's lines, which need no stage).
    #[inline(always)]
    pub fn prefetch_queue_head(&self, p: PortId, stage: u8) {
        if let Some(pt) = self.ports.get(p.idx()) {
            pt.queue.prefetch_head(stage, pt.paused);
        }
    }
    /// Whether `p` has deferred the end of a serialization (net/lazy.rs), which its wire's next arrival
    /// catches up: the transmitter then takes the queue's head. Reads the port's first line (stage 1).
    #[inline(always)]
    pub fn deferred(&self, p: PortId) -> bool {
        self.ports.get(p.idx()).is_some_and(|pt| pt.defer == port::Defer::Deferred)
    }
    /// The deep chain's stage 1 for a wire arrival on `p`: the port's first line alone (what the arrival
    /// reads, net/port.rs) and what the transmitter holds. A port that deferred its end of serialization
    /// needs its transmitter's lines too, which `prefetch_catch_up` loads once this line says so.
    #[inline(always)]
    pub fn prefetch_arrival_port(&self, p: PortId) {
        if let Some(pt) = self.ports.get(p.idx()) {
            pt.prefetch_arrival();
            prefetch(self.tx_current.as_ptr().wrapping_add(p.idx()));
        }
    }
    /// For a wire arrival on `p` that will catch up the port's deferred end of serialization: the
    /// transmitter's lines of the record and the queue's (a stage before `prefetch_queue_head`).
    #[inline(always)]
    pub fn prefetch_catch_up(&self, p: PortId) {
        if let Some(pt) = self.ports.get(p.idx()) {
            pt.prefetch_transmitter();
            pt.prefetch_queue(self.queue_lines() as usize);
        }
    }
    /// Prefetch stage 2 for a wire arrival on `p`: the entry behind the wire's head, which the arrival
    /// makes the head and whose time schedules the wire's next arrival (the port's record is expected in the
    /// cache by now, from stage 1).
    #[inline(always)]
    pub fn prefetch_wire_next(&self, p: PortId) {
        if let Some(h) = self.ports.get(p.idx()).and_then(|pt| pt.wire.second()) {
            prefetch(h);
        }
    }
    /// Prefetch stage 3 for a wire arrival on `p`: the packet at the wire's head (its id in the port's
    /// record, from stage 1).
    #[inline(always)]
    pub fn prefetch_wire_packet(&self, p: PortId, pk: &Packets) {
        if let Some(pt) = self.ports.get(p.idx()) {
            match pt.wire.head() {
                Some((_, id)) if id != PktId::NONE => pk.prefetch(id, self.is_host(pt.peer)),
                _ => {}
            }
        }
    }
    /// The switch index and the packet at the head of `p`'s wire, when it leads to a switch and the packet is
    /// addressed to a host (a link-local frame, PFC's pause say, is addressed to the switch itself: no route
    /// leads there, and the arrival never routes it).
    #[inline(always)]
    fn head_at_switch<'a>(&self, p: PortId, pk: &'a Packets) -> Option<(usize, &'a packet::Packet)> {
        let pt = self.ports.get(p.idx())?;
        let (_, id) = pt.wire.head()?;
        if id == PktId::NONE || self.is_host(pt.peer) {
            return None;
        }
        let pkt = pk.get(id);
        self.is_host(pkt.dst).then(|| (pt.peer.idx() - self.hosts.len(), pkt))
    }
    /// Prefetch stage 4 for a wire arrival on `p` at a switch: the route's table entry for the packet's
    /// destination (the packet from stage 3).
    #[inline(always)]
    pub fn prefetch_route(&self, p: PortId, pk: &Packets) {
        if let Some((s, pkt)) = self.head_at_switch(p, pk) {
            self.routes.prefetch(s, pkt.dst);
        }
    }
    /// The NIC of the host that a wire arrival on `p` reaches (the link's other direction), if it reaches
    /// one. Reads `p`'s first line.
    #[inline(always)]
    fn arrival_host_nic(&self, p: PortId) -> Option<&Port> {
        let pt = self.ports.get(p.idx())?;
        self.is_host(pt.peer).then(|| self.ports.get(pt.reverse.idx())).flatten()
    }
    /// Host `h`'s NIC. Reads the host's record.
    #[inline(always)]
    fn host_nic(&self, h: usize) -> Option<&Port> {
        self.ports.get(self.hosts.get(h)?.nic.idx())
    }
    /// A host NIC's stage `stage` for the transport's next push onto it: 0, the port's lines, its queue's
    /// and its order's record (at `nic_offset` from the queue, `QueueDisc::nic_offset`: an address, read
    /// before the queue's line says the variant); 1 and 2, if the NIC deferred its end of serialization
    /// (which the push catches up, the transmitter then taking the queue's head), `prefetch_head`'s stages.
    #[inline(always)]
    fn prefetch_nic(&self, nic: &Port, stage: u8, nic_offset: usize) {
        if stage == 0 {
            nic.prefetch();
            nic.prefetch_queue(self.queue_lines() as usize);
            let q = (&nic.queue as *const QueueDisc).cast::<u8>();
            crate::engine::prefetch_lines(q.wrapping_add(nic_offset), 2);
        } else if nic.defer == port::Defer::Deferred {
            nic.queue.prefetch_head(stage, nic.paused);
        }
    }
    /// For a wire arrival on `p` at a host, whose transport answers through the NIC: `prefetch_nic` (nothing
    /// when no NIC has an order of its own, `nic_offset`).
    #[inline(always)]
    pub fn prefetch_arrival_nic(&self, p: PortId, stage: u8) {
        let Some(nic_offset) = self.nic_offset else { return };
        if let Some(nic) = self.arrival_host_nic(p) {
            self.prefetch_nic(nic, stage, nic_offset);
        }
    }
    /// For a host's timer that sends (NDP's pull pacer): the host's record, then `prefetch_nic` (`stage` 1
    /// on: its stage `stage` − 1).
    #[inline(always)]
    pub fn prefetch_host_sending(&self, h: usize, stage: u8) {
        let Some(nic_offset) = self.nic_offset else { return };
        if stage == 0 {
            if let Some(host) = self.hosts.get(h) {
                prefetch(host);
            }
        } else if let Some(nic) = self.host_nic(h) {
            self.prefetch_nic(nic, stage - 1, nic_offset);
        }
    }
    /// Prefetch stage 5 for a wire arrival on `p` at a switch: the record and queue of the egress port the
    /// packet will most likely take (`Switch::predicted_egress`), known only once the packet and its route
    /// entry are.
    #[inline(always)]
    pub fn prefetch_egress(&self, p: PortId, pk: &Packets) {
        if let Some((s, pkt)) = self.head_at_switch(p, pk) {
            let cands = self.routes.candidates(s, pkt.dst);
            if let Some(out) = self.switches[s].predicted_egress(self.lb, cands, pkt.hash) {
                let pt = &self.ports[out.idx()];
                let (known, lines) = (self.queue_lines(), queue::lines_through(pkt.class));
                if lines > known {
                    self.queue_lines.store(lines, std::sync::atomic::Ordering::Relaxed);
                }
                pt.prefetch();
                pt.prefetch_admission(pkt.ect, known.max(lines) as usize);
            }
        }
    }
}
