//! Bounce drops: a switch that drops a data packet turns it into a small, highest-priority notice to the
//! packet's source, sent back out of the port the packet came in through (FastLane's path; its rate and
//! buffer caps and the senders' reaction come with FastLane). The worked example of docs/architecture.md:
//! it uses one hook (`DROP`), makes a packet (`HookCtx::make`, counted as switch-made by the ledger) and asks
//! for one effect (`Effect::Enqueue`). `switch.bounce = true` installs it on every switch port.
//!
//! The transport at the source gets the notice through `Transport::on_notice` (TCP counts it; other
//! transports leave it to the host's sink). Notices are never bounced themselves, and a packet without an
//! ingress port (dropped at its own host's NIC) is not bounced: the host already knows.

use super::Hooks;
use crate::net::hooks::{Effect, HookCtx, HookSet};
use crate::net::packet::{Packet, PktKind};
use crate::net::port::{DropReason, Port};
use crate::units::{NodeId, PktId, PortId};

/// Size of a notice on the wire: a minimum Ethernet frame.
pub const NOTICE_BYTES: u32 = 64;

#[derive(Default)]
pub struct BounceDrop {
    pub stats: BounceStats,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct BounceStats {
    /// Notices made (one per dropped data packet that had an ingress port).
    pub notices: u64,
    /// Dropped data packets without an ingress port (at a host's NIC) or corrupted on a link: no notice.
    pub not_bounced: u64,
}

impl Hooks for BounceDrop {
    const NAME: &'static str = "bounce_drop";
    const HOOKS: HookSet = HookSet::DROP;

    fn on_drop(&mut self, c: &mut HookCtx, at: PortId, id: PktId, why: DropReason) {
        let p = *c.packet(id);
        if p.kind != PktKind::Data {
            return;
        }
        // A corrupted packet is dropped at the link's far end (its checksum fails there): the switch that
        // sent it never learns of it (as FastLane's switches, which notify no corruption either).
        if p.in_port == PortId::NONE || why == DropReason::Corrupt {
            self.stats.not_bounced += 1;
            return;
        }
        let notice = c.make(Packet::notice_about(&p, c.ports[at.idx()].node, NOTICE_BYTES));
        c.effect(Effect::Enqueue { port: p.in_port, id: notice });
        self.stats.notices += 1;
    }

    // Split between the parts of a parallel run: it keeps nothing but counters, and a notice leaves by
    // the dropping switch's own port.
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn take_part(&mut self, other: &mut BounceDrop, _ports: &[Port], _theirs: &dyn Fn(NodeId) -> bool) {
        self.stats.notices += other.stats.notices;
        self.stats.not_bounced += other.stats.not_bounced;
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats).unwrap_or_default()
    }
}
