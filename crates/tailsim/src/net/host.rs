//! Stage: hosts. A transport's packet goes through the host's transmit delay line and its regulator (QJUMP)
//! into the NIC queue; a packet that reached a host goes through the receive delay line to the transport, or,
//! if it is a network packet (a notice, telemetry), to the transport's notice handler or the host's sink
//! (`World::deliver`).

use super::regulator::Verdict;
use super::{drop_at, Network, Packets};
use crate::engine::{Event, EventQueue, Pipe};
use crate::net::packet::PktKind;
use crate::net::port::DropReason;
use crate::units::{NodeId, PktId, PortId, Time};

pub struct Host {
    pub nic: PortId,
    /// Software + NIC delay before a packet joins the NIC queue.
    pub tx_delay: Time,
    /// Delay between the last bit arriving and the transport seeing the packet: with `rx_servers`, the time
    /// one of them spends processing it.
    pub rx_delay: Time,
    /// A receive path that processes this many packets at once, in arrival order (FastLane's servers: 5 µs per
    /// packet, 16 in parallel), as the time each is next free; empty = no limit (a pure delay).
    pub rx_servers: Vec<Time>,
    /// The server that frees first (they are used in turn: service times are equal and the order FIFO).
    pub rx_turn: usize,
    pub tx_pipe: Pipe,
    pub rx_pipe: Pipe,
    /// Network packets this host received.
    pub sink: HostSink,
}

/// What a host's sink counted: network packets (not a transport's) that reached it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostSink {
    /// Notices (drop notifications) handed to the transport's notice handler.
    pub notices: u64,
    /// Telemetry packets (couriers, monitoring records).
    pub telemetry: u64,
    /// Raw packets of constant-bit-rate sources, and their wire bytes.
    pub raw: u64,
    pub raw_bytes: u64,
}

impl Network {
    /// A transport hands a packet to its host.
    pub fn host_send(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId, id: PktId) {
        let host = &mut self.hosts[h.idx()];
        if host.tx_delay.0 == 0 {
            self.host_egress(now, ev, pk, h, id);
        } else if host.tx_pipe.push(now + host.tx_delay, id) {
            ev.schedule(now + host.tx_delay, Event::HostTx(h));
        }
    }

    pub fn on_host_tx(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId) {
        let host = &mut self.hosts[h.idx()];
        let (id, next) = host.tx_pipe.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::HostTx(h));
        }
        self.host_egress(now, ev, pk, h, id);
    }

    /// The host's regulator (if any) passes, drops or holds a packet on its way to the NIC queue. Only data
    /// packets are regulated (docs/qjump.md: ACKs and control packets pass).
    #[inline]
    fn host_egress(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId, id: PktId) {
        let nic = self.hosts[h.idx()].nic;
        if let Some(q) = &mut self.qjump {
            let p = pk.get(id);
            if p.kind == PktKind::Data {
                let bytes = p.size as u64 + self.ports[nic.idx()].wire_overhead as u64;
                match q.offer(now, h.idx(), p.class as usize, bytes, id, p.flow.idx(), p.flow_gen) {
                    Verdict::Send => {}
                    Verdict::Drop => {
                        return drop_at(&mut self.ports[nic.idx()], nic, pk, &mut self.out, id, DropReason::Policed)
                    }
                    Verdict::Held(wake) => {
                        if let Some(t) = wake {
                            ev.schedule(t, Event::HostShaper(h));
                        }
                        return;
                    }
                }
            }
        }
        self.enqueue(now, ev, pk, nic, id);
    }

    /// A host's shaper event: release every held packet that fits now, then wait for the next epoch.
    pub fn on_host_shaper(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId) {
        let nic = self.hosts[h.idx()].nic;
        let overhead = self.ports[nic.idx()].wire_overhead as u64;
        let Some(q) = &mut self.qjump else { return };
        if !q.wake_due(h.idx(), now) {
            return;
        }
        loop {
            let q = self.qjump.as_mut().expect("checked");
            let Some(id) = q.release(now, h.idx(), |i| pk.get(i).size as u64 + overhead) else { break };
            self.enqueue(now, ev, pk, nic, id);
        }
        if let Some(t) = self.qjump.as_mut().expect("checked").rearm(now, h.idx()) {
            ev.schedule(t, Event::HostShaper(h));
        }
    }

    /// A packet that crossed link `port` reaches host `h`: now, or after the host's receive delay.
    #[inline(always)]
    pub(super) fn host_arrival(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &Packets,
        port: PortId,
        h: NodeId,
        id: PktId,
    ) -> Option<(NodeId, PktId)> {
        if self.qjump.is_some() {
            self.record_delivery(now, pk, port, id);
        }
        let host = &mut self.hosts[h.idx()];
        if host.rx_delay.0 == 0 {
            return Some((h, id));
        }
        let done = if host.rx_servers.is_empty() {
            now + host.rx_delay
        } else {
            // c servers of equal service time D in FIFO order: packet i starts when it arrives or when packet
            // i − c is done, whichever is later. Done times never decrease, so the delay line stays a FIFO.
            let n = host.rx_servers.len();
            let free = &mut host.rx_servers[host.rx_turn];
            *free = now.max(*free) + host.rx_delay;
            host.rx_turn = (host.rx_turn + 1) % n;
            *free
        };
        if host.rx_pipe.push(done, id) {
            ev.schedule(done, Event::HostRx(h));
        }
        None
    }

    pub fn on_host_rx(&mut self, ev: &mut EventQueue, h: NodeId) -> PktId {
        let (id, next) = self.hosts[h.idx()].rx_pipe.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::HostRx(h));
        }
        id
    }

    /// Latency of a data packet reaching host `h` over `port` (QJUMP's statistics): from its send time, and
    /// the last switch's delay from the last bit in to the last bit out (the thesis's definition, §3.1).
    #[inline(never)]
    fn record_delivery(&mut self, now: Time, pk: &Packets, port: PortId, id: PktId) {
        let p = pk.get(id);
        let Some(q) = &mut self.qjump else { return };
        if p.kind != PktKind::Data {
            return;
        }
        let pt = &self.ports[port.idx()];
        let st = &mut q.stats[p.class as usize];
        st.latency.record(now.saturating_sub(p.ts));
        let h = self.hosts.len();
        if pt.node.idx() >= h {
            let arrived = p.enq_time.saturating_sub(self.switches[pt.node.idx() - h].delay);
            st.last_hop.record(now.saturating_sub(pt.delay).saturating_sub(arrived));
        }
    }
}
