//! The run loop's prefetch chain: while one event is handled, what the next few of the bucket being served
//! will read is already on its way from memory (engine/prefetch.rs says why; net/prefetch.rs says where each
//! record is). Nothing here changes a result.

use super::World;
use crate::engine::{Event, TimerKind};
use crate::net::{Network, Packets};
use crate::units::PortId;

impl World {
    /// Start loading what the coming events of the current bucket will read, one stage of the chain per event
    /// (engine/prefetch.rs), so that each stage finds in the cache what the one before loaded. Counting from the
    /// event about to be handled: the port five events later (for a wire arrival its first line alone, what the
    /// arrival reads; for the end of a serialization its first three and its queue's); for a wire arrival, the
    /// entry behind its wire's head (the head itself is in the port's record) four later, the packet three later,
    /// at a switch the route's table entry two later and the egress port the packet will likely take one later;
    /// for the end of a serialization, the queue's head from four events later (none for a FIFO class, whose
    /// oldest packet is in the queue's lines, net/queue.rs; four for a NIC's own order: its record, the sending
    /// flow's, the front of that flow's other packets, the record of its turn's last flow). A wire arrival on a
    /// port that deferred its end of serialization (net/lazy.rs) catches that end up, and the transmitter takes
    /// its queue's head, with no event of its own to prefetch for: so from four events later, once the port's
    /// first line is in, such an arrival walks the transmitter's chain too (the record's next two lines and the
    /// queue's, then the head's stages but the last; change 49 of docs/performance-log.md). A host's NIC is
    /// caught up the same way when the transport pushes its answer (an arrival at the host) or its next pull
    /// (NDP's pull pacer, a timer): for those, the NIC's port, queue and order three events later (an arrival's
    /// port is in by then, and says which host; a timer's host record is loaded four later), and if the NIC
    /// deferred, its head's first two stages after (docs/performance-log.md, change 46).
    /// While the working set fits in the last-level cache, at most 32 MiB of it (`deep_prefetch` unset;
    /// `deep_from`), a lighter chain runs, closer to the events: for an arrival or an end of serialization the
    /// port two events ahead, for an arrival the packet (and the wire's entry behind its head) one ahead and
    /// its route's table entry at the next event; no egress port and no queue head. The egress stage repeats
    /// the route's choice, which costs more than the misses it saves while those are cache hits (measured,
    /// docs/performance-log.md, changes 14, 27, 28 and 31: −15 to −20 % packet-hops per second at 128 hosts,
    /// 2 MB; −10 % at 5 MB; −3 to −10 % at 1,024 hosts, 20 MB; +40 % at 5,488 hosts, 184 MB, on an AMD VM's
    /// 32 MB cache; −8 % at 128 hosts and +9 to +19 % at 5,488 on an Intel VM's). Results do not depend on it.
    /// With the deep chain, the queue heads that the last event's transmitters owe are refilled here, their
    /// slots having been prefetched then (net/queue.rs, `HeadRefills`; the light chain's pops ask for none).
    #[inline(always)]
    pub(super) fn prefetch_ahead(&mut self) {
        if !self.deep_prefetch {
            if let Some(Event::WireArrival(p) | Event::TxDone(p)) = self.ev.upcoming(2) {
                self.net.prefetch_port(p, false);
            }
            if let Some(Event::WireArrival(p)) = self.ev.upcoming(1) {
                self.net.prefetch_wire_next(p);
                self.net.prefetch_wire_packet(p, &self.pk);
            }
            if let Some(Event::WireArrival(p)) = self.ev.upcoming(0) {
                self.net.prefetch_route(p, &self.pk);
            }
            return;
        }
        self.net.refill_heads();
        self.prefetch_deep();
    }

    /// The deep stages (`prefetch_ahead`), out of line: they run only where a hop waits on memory, and in line
    /// their code moved the registers of the run loop that every run executes (callgrind, `htsim-p2`, where
    /// they never run: +1.3 % instructions in line).
    #[inline(never)]
    fn prefetch_deep(&self) {
        match self.ev.upcoming(4) {
            Some(Event::WireArrival(p)) => self.net.prefetch_arrival_port(p),
            Some(Event::TxDone(p)) => self.net.prefetch_port(p, true),
            _ => {}
        }
        match self.ev.upcoming(3) {
            Some(Event::Timer(h, _, TimerKind::RxPacer)) => self.net.prefetch_host_sending(h.0 as usize, 0),
            Some(Event::WireArrival(p)) => {
                self.net.prefetch_wire_next(p);
                if self.net.deferred(p) {
                    self.net.prefetch_catch_up(p);
                }
            }
            Some(Event::TxDone(p)) => self.net.prefetch_queue_head(p, 0),
            _ => {}
        }
        self.deep_stage(2, 0, |net, p, pk| net.prefetch_wire_packet(p, pk));
        self.deep_stage(1, 1, |net, p, pk| net.prefetch_route(p, pk));
        self.deep_stage(0, 2, |net, p, pk| net.prefetch_egress(p, pk));
    }

    /// The stages that the events `k` places after the next one share, at depth `s` (0 for `k` = 2, the
    /// stage after the port's line and the wire's next entry): an arrival's own step (`arrival`: its packet,
    /// its route's entry, its egress port), then its host's NIC stage `s` and, if its port deferred an end
    /// of serialization, the queue head's stage `s`; a pull pacer's stage `s + 1` (its host's record was
    /// stage 0); an end of serialization's queue head, stage `s + 1`.
    #[inline(always)]
    fn deep_stage(&self, k: usize, s: u8, arrival: fn(&Network, PortId, &Packets)) {
        match self.ev.upcoming(k) {
            Some(Event::Timer(h, _, TimerKind::RxPacer)) => self.net.prefetch_host_sending(h.0 as usize, s + 1),
            Some(Event::WireArrival(p)) => {
                arrival(&self.net, p, &self.pk);
                self.net.prefetch_arrival_nic(p, s);
                if self.net.deferred(p) {
                    self.net.prefetch_queue_head(p, s);
                }
            }
            Some(Event::TxDone(p)) => self.net.prefetch_queue_head(p, s + 1),
            _ => {}
        }
    }
}
