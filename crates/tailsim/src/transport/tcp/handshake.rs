//! The connection handshake (`transport.handshake = true`): SYN, SYN-ACK, then data.
//!
//! ns-3 and Linux open every connection with a SYN and wait for the SYN-ACK before sending data; ns-2's
//! one-way agents and htsim do not, and neither do the papers' simulators, so it is off by default. With it,
//! a flow's completion time still runs from the application's open (the flow's start), so it includes the
//! SYN/SYN-ACK round trip, as ns-3 and Linux measure it.
//!
//! - The SYN and the SYN-ACK are header-only packets of `packet.ack` bytes (Linux's carry 20–32 bytes of
//!   options more; the size is what `packet.ack` says).
//! - The first data segments carry the ACK of the SYN-ACK (no separate pure ACK), so a lone flow's
//!   completion time is its no-handshake time plus exactly one SYN/SYN-ACK round trip.
//! - A lost SYN (or SYN-ACK) is resent after `syn_rto` (1 s, Linux's and RFC 6298's initial RTO), doubled at
//!   each retry as Linux does (1, 2, 4, … s) up to Linux's 120 s maximum, not `max_rto` (which datacenter
//!   configurations set low for data); RTT samples and the data RTO start from the SYN-ACK's round trip
//!   (RFC 6298 §2.2), as Linux does.

use super::{control_packet, rtt_sample, Ctx, Tcp};
use crate::engine::TimerKind;
use crate::net::packet::{Packet, PktKind};
use crate::units::{FlowSlot, Time};

/// Linux's TCP_RTO_MAX, the SYN's backoff limit.
const SYN_RTO_MAX: Time = Time::ms(120_000);

impl Tcp {
    /// Send (or resend) the flow's SYN and arm its timer.
    pub(super) fn send_syn(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let gen = self.gens[slot.idx()];
        let f = self.flows.get_mut(slot.0);
        let mut p = control_packet(&self.cfg, f, PktKind::Syn, slot, gen, false);
        p.ts = ctx.now;
        let (src, at) = (f.src, ctx.now + f.syn_rto);
        ctx.send(src, p);
        f.rto_timer.set(ctx, at, slot, gen, TimerKind::Retransmit);
    }

    /// The receiver answers every SYN, a repeated one too (its SYN-ACK may have been lost).
    pub(super) fn on_syn(&mut self, ctx: &mut Ctx, p: Packet) {
        let f = self.flows.get_mut(p.flow.0);
        f.rx.opened(ctx.now);
        let mut a = control_packet(&self.cfg, f, PktKind::SynAck, p.flow, p.flow_gen, true);
        a.ts = p.ts;
        ctx.send(f.dst, a);
    }

    /// The SYN-ACK opens the connection: its round trip is the first RTT sample, and data may flow.
    pub(super) fn on_syn_ack(&mut self, ctx: &mut Ctx, p: Packet) {
        let f = self.flows.get_mut(p.flow.0);
        if f.established {
            return; // the answer to a repeated SYN
        }
        f.established = true;
        f.rto_timer.cancel();
        rtt_sample(&self.cfg, f, (ctx.now - p.ts).0 as f64);
        self.try_send(ctx, p.flow);
    }

    /// The SYN's timer fired with no SYN-ACK: back off and resend.
    pub(super) fn on_syn_timeout(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let max = SYN_RTO_MAX.max(self.cfg.syn_rto);
        let f = self.flows.get_mut(slot.0);
        f.timeouts += 1;
        f.retransmits += 1;
        f.syn_rto = Time(f.syn_rto.0.saturating_mul(2)).min(max);
        self.send_syn(ctx, slot);
    }
}
