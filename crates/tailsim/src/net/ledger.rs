//! The packet arena and the conservation ledger.
//!
//! Every packet has an origin and ends in one fate:
//!
//! | origin | made by |
//! |---|---|
//! | `host` | a transport (`Ctx::send`) |
//! | `switch` | a mechanism: a notification, a courier, a control frame (`HookCtx::make`) |
//! | `copy` | a mechanism copying a packet (`HookCtx::copy`) |
//!
//! | fate | where |
//! |---|---|
//! | `delivered` | a transport consumed it at its destination host |
//! | `sunk` | a host's network-packet sink or the transport's notice handler consumed it |
//! | `absorbed` | a mechanism consumed it (a link-local frame, a copy no longer needed) |
//! | `dropped` | a drop, counted with its reason at a port |
//!
//! At any instant, per origin, made = ended + live, and every live packet is held by exactly one holder of the
//! network: a queue, a transmitter, a wire, a delay line, a regulator, a mechanism or the outbox. After every
//! run `World::check_conservation` checks all of it and names the category that does not balance.
//!
//! A part of a parallel run (sim/parallel.rs) also hands packets to other parts and takes theirs: per
//! origin, made + taken in = ended + handed out + live, in each part; over all parts what was handed out
//! was taken in, so the sums balance as a serial run's do.

use crate::engine::Slab;
use crate::net::packet::Packet;
use crate::net::Network;
use crate::units::PktId;

/// Who made a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Origin {
    #[default]
    Host = 0,
    Switch = 1,
    Copy = 2,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Host, Origin::Switch, Origin::Copy];
    pub fn name(self) -> &'static str {
        match self {
            Origin::Host => "host packets",
            Origin::Switch => "switch-made packets",
            Origin::Copy => "copies",
        }
    }
}

/// How a packet left the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fate {
    Delivered = 0,
    Sunk = 1,
    Absorbed = 2,
    Dropped = 3,
}

impl Fate {
    pub const ALL: [Fate; 4] = [Fate::Delivered, Fate::Sunk, Fate::Absorbed, Fate::Dropped];
}

/// The packet arena with its ledger.
#[derive(Default)]
pub struct Packets {
    slab: Slab<Packet>,
    /// Packets made, by origin.
    pub made: [u64; 3],
    /// Packets ended, by origin and fate.
    pub ended: [[u64; 4]; 3],
    /// Packets handed to another part of a parallel run, and taken from one, by origin.
    pub handed_out: [u64; 3],
    pub taken_in: [u64; 3],
}

impl Packets {
    #[inline]
    fn insert(&mut self, mut p: Packet, o: Origin) -> PktId {
        p.origin = o;
        self.made[o as usize] += 1;
        PktId(self.slab.insert(p))
    }
    /// A transport's packet.
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktId {
        self.insert(p, Origin::Host)
    }
    /// A packet a switch mechanism made.
    pub fn make(&mut self, p: Packet) -> PktId {
        self.insert(p, Origin::Switch)
    }
    /// A copy of a live packet.
    pub fn copy(&mut self, id: PktId) -> PktId {
        let p = *self.get(id);
        self.insert(p, Origin::Copy)
    }
    /// Hand packet `id` to another part of a parallel run: it leaves this arena, in no fate.
    pub fn hand_out(&mut self, id: PktId) -> Packet {
        let p = *self.slab.get(id.0);
        self.handed_out[p.origin as usize] += 1;
        self.slab.remove(id.0);
        p
    }
    /// Take a packet another part handed over.
    pub fn take_in(&mut self, p: Packet) -> PktId {
        self.taken_in[p.origin as usize] += 1;
        PktId(self.slab.insert(p))
    }
    /// Add another part's counters to these (the merged world of a parallel run: its arena is one
    /// part's, its counters every part's).
    pub fn add_counts(&mut self, o: &Packets) {
        for i in 0..3 {
            self.made[i] += o.made[i];
            self.handed_out[i] += o.handed_out[i];
            self.taken_in[i] += o.taken_in[i];
            for f in 0..4 {
                self.ended[i][f] += o.ended[i][f];
            }
        }
    }
    /// Live packets by the counters (the arena's count where the ledger balances; a merged parallel run's
    /// total, where the arena is one part's).
    pub fn in_flight(&self) -> u64 {
        Origin::ALL.iter().map(|&o| self.live_of(o)).sum()
    }
    /// Start loading packet `id` (a hint; `engine::prefetch`): its first line, what a switch uses
    /// (net/packet.rs), and with `whole` its second too, for a host's transport.
    #[inline(always)]
    pub fn prefetch(&self, id: PktId, whole: bool) {
        // An address only: a hint needs no test of the id against the arena (the chain never asks for
        // `NONE`'s, and any other id is one of the arena's).
        let at = self.slab.address(id.0).cast::<u8>();
        crate::engine::prefetch(at);
        if whole {
            crate::engine::prefetch(at.wrapping_add(64));
        }
    }
    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        self.slab.get(id.0)
    }
    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        self.slab.get_mut(id.0)
    }
    #[inline]
    fn end(&mut self, id: PktId, f: Fate) {
        let o = self.slab.get(id.0).origin;
        self.ended[o as usize][f as usize] += 1;
        self.slab.remove(id.0);
    }
    /// The packet reached its endpoint and was handled by the transport.
    #[inline]
    pub fn consume(&mut self, id: PktId) {
        self.end(id, Fate::Delivered)
    }
    /// A network packet (notice, telemetry) consumed at a host.
    pub fn sink(&mut self, id: PktId) {
        self.end(id, Fate::Sunk)
    }
    /// A mechanism consumed the packet.
    pub fn absorb(&mut self, id: PktId) {
        self.end(id, Fate::Absorbed)
    }
    #[inline]
    pub(crate) fn drop_pkt(&mut self, id: PktId) {
        self.end(id, Fate::Dropped)
    }
    /// Packets made by transports (the summary's `created`).
    pub fn created(&self) -> u64 {
        self.made[Origin::Host as usize]
    }
    /// Packets dropped, whatever their origin.
    pub fn dropped(&self) -> u64 {
        self.ended_as(Fate::Dropped)
    }
    /// Packets that ended in fate `f`, whatever their origin.
    pub fn ended_as(&self, f: Fate) -> u64 {
        self.ended.iter().map(|e| e[f as usize]).sum()
    }
    /// Live packets of origin `o` by the counters.
    pub fn live_of(&self, o: Origin) -> u64 {
        let o = o as usize;
        self.made[o] + self.taken_in[o] - self.ended[o].iter().sum::<u64>() - self.handed_out[o]
    }
    pub fn live(&self) -> usize {
        self.slab.live()
    }
    /// Peak number of packets alive at once (arena size).
    pub fn peak(&self) -> usize {
        self.slab.capacity_used()
    }
}

/// A ledger category that does not balance.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LedgerError {
    #[error("the arena holds {arena} packets but the counters say {counted} (made − ended)")]
    Arena { arena: u64, counted: u64 },
    #[error("{category}: {made} made, {ended} ended, so {live} live, but the network holds {held} of them ({})", if live > held { "leaked: live in the arena, held nowhere" } else { "held twice or freed while held" })]
    Unbalanced { category: &'static str, made: u64, ended: u64, live: u64, held: u64 },
    #[error("ports counted {ports} drops, the arena {arena}")]
    Drops { ports: u64, arena: u64 },
}

/// Check the ledger: per origin, every packet made ended in a fate or is held by exactly one holder of the
/// network, and the ports counted every drop. The error names the category that does not balance.
pub fn check(pk: &Packets, net: &Network) -> Result<(), LedgerError> {
    let counted: u64 = Origin::ALL.iter().map(|&o| pk.live_of(o)).sum();
    if counted != pk.live() as u64 {
        return Err(LedgerError::Arena { arena: pk.live() as u64, counted });
    }
    let mut held = [0u64; 3];
    held[Origin::Host as usize] = net.regulated() as u64;
    net.for_each_held(|id| held[pk.get(id).origin as usize] += 1);
    for o in Origin::ALL {
        let live = pk.live_of(o);
        if held[o as usize] != live {
            return Err(LedgerError::Unbalanced {
                category: o.name(),
                made: pk.made[o as usize],
                ended: pk.made[o as usize] - live,
                live,
                held: held[o as usize],
            });
        }
    }
    // A drop still in the outbox is neither counted nor freed yet (its packet is held by the outbox).
    let ports: u64 = net.ports.iter().map(|p| p.stats.all_drops()).sum();
    if ports != pk.dropped() {
        return Err(LedgerError::Drops { ports, arena: pk.dropped() });
    }
    Ok(())
}
