//! Switch mechanisms: additions to the datapath that act only through its hooks (`net/hooks.rs`).
//!
//! A mechanism is a type implementing [`Hooks`] (every method has a do-nothing default: write only the hooks
//! it uses), in a file of its own here, registered by one line in `mechanisms!` below and installed on the
//! ports it covers by the configuration (`config/mechanisms.rs`). The registry turns the list into the enum
//! [`Mech`] and one `match` per hook, so the packet path has no trait objects. `docs/architecture.md` walks
//! through `bounce.rs` as the worked example.

pub mod adaptive_lb;
pub mod bounce;
pub mod burstradar;
pub mod cioq;
pub mod codel;
pub mod fastlane;
pub mod linkguardian;
pub mod pcap;
pub mod pfc;
pub mod sqr;

use crate::net::hooks::{Admit, Arrive, HookCtx, HookSet};
use crate::net::port::{DropReason, Port};
use crate::units::{NodeId, PktId, PortId};

/// What a mechanism can do. `HOOKS` says which hook points it implements; `Network::install` sets those bits on
/// the ports it covers, and a hook is called only on ports whose bit is set.
pub trait Hooks {
    /// The name used in summary.json (`mechanisms.<name>`) and in messages.
    const NAME: &'static str;
    const HOOKS: HookSet;
    /// A packet reached a switch through ingress port `at` (this switch's port towards the sender). Return a
    /// port from `cands` (the equal-cost next hops) to override the switch's load balancing.
    fn on_ingress(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId, _cands: &[PortId]) -> Option<PortId> {
        None
    }
    /// A packet is about to join the queue of egress port `at`.
    fn on_admit(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) -> Admit {
        Admit::Queue
    }
    /// Egress port `at` took a packet from its queue to serialize it.
    fn on_dequeue(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) {}
    /// Port `at` finished serializing a packet, which now enters the wire.
    fn on_transmit(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) {}
    /// A packet reached the far end of the link driven by port `at`.
    fn on_arrive(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) -> Arrive {
        Arrive::Pass
    }
    /// The idle transmitter of port `at` is about to serve its queue: return a duration to take it instead for
    /// that long (nothing goes on the wire); the mechanism then frees it with `Effect::Release`. It is asked
    /// again each time the transmitter is idle, and after an `Effect::Kick`.
    fn on_serve(&mut self, _c: &mut HookCtx, _at: PortId) -> Option<crate::units::Time> {
        None
    }
    /// The link driven by port `at` went up or down (a `[[fault]]`): called for both directions of the link,
    /// on every mechanism. What the mechanism's switches know of it, and when, is the mechanism's model.
    fn on_link(&mut self, _c: &mut HookCtx, _at: PortId, _up: bool) {}
    /// A packet was dropped at port `at` for `why`; it is freed after this returns.
    fn on_drop(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId, _why: DropReason) {}
    /// The run is about to start: set first timers (a traffic source's first packet).
    fn start(&mut self, _c: &mut HookCtx) {}
    /// A timer this mechanism set with `HookCtx::timer`.
    fn on_timer(&mut self, _c: &mut HookCtx, _key: u32) {}
    /// Every packet the mechanism holds (for the ledger).
    fn held(&self, _f: &mut dyn FnMut(PktId)) {}
    /// Its counters, for summary.json.
    fn summary(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// A table of its own for the results directory (`<name>.parquet`), e.g. telemetry records.
    fn table(&self) -> Option<(&'static str, Vec<crate::metrics::output::Column>)> {
        None
    }
    /// Files of its own for the results directory (packet captures): written into `dir`, returned as
    /// (path relative to `dir`, bytes).
    fn files(&self, _dir: &std::path::Path) -> std::io::Result<Vec<(String, u64)>> {
        Ok(Vec::new())
    }

    // A parallel run (sim/parallel.rs, docs/parallel.md) gives every part a whole copy of each mechanism; a
    // part calls hooks only at its own nodes' ports, so a mechanism whose state is kept per node (per port,
    // per switch, per source host) and whose timers act at one node splits by saying which (`timer_node`)
    // and gathering its nodes' state from the parts at the end (`take_part`).

    /// Why this mechanism cannot run in a parallel run yet; None once it splits.
    fn parallel_refusal(&self) -> Option<&'static str> {
        Some("is not yet split between parts")
    }
    /// The node at which timer `key` acts: only that node's part handles it.
    fn timer_node(&self, _ports: &[Port], _key: u32) -> Option<NodeId> {
        None
    }
    /// Take from `other` (this mechanism's copy in another part of a parallel run) the state of the nodes
    /// `theirs` accepts, and add its counters: the merge at the run's end, into the first part's copy.
    fn take_part(&mut self, _other: &mut Self, _ports: &[Port], _theirs: &dyn Fn(NodeId) -> bool) {}
    /// Packet `id`, which port `at` sent, leaves this part for the far end's part: what the mechanism keeps
    /// about it for the far end to read on arrival, as one word (0: nothing). Called in wire order.
    fn hand_out(&mut self, _at: PortId, _id: PktId) -> u64 {
        0
    }
    /// The far end's part took the packet in as `id`, with the word `hand_out` gave.
    fn take_in(&mut self, _at: PortId, _id: PktId, _word: u64) {}
}

/// The merge of a parallel run (`Hooks::take_part`): take from `other` (another part's copy of a per-port
/// table, indexed by `PortId`) the entries of the ports whose node `theirs` accepts.
pub(crate) fn take_ports<T>(ours: &mut [T], other: &mut [T], ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
    for (i, p) in ports.iter().enumerate() {
        if theirs(p.node) {
            std::mem::swap(&mut ours[i], &mut other[i]);
        }
    }
}

macro_rules! mechanisms {
    ($($(#[$m:meta])* $variant:ident($ty:ty),)*) => {
        /// Every mechanism tailsim has (the registry: one line each).
        pub enum Mech {
            $($(#[$m])* $variant($ty),)*
        }

        impl Mech {
            pub fn name(&self) -> &'static str {
                match self { $($(#[$m])* Mech::$variant(_) => <$ty as Hooks>::NAME,)* }
            }
            pub fn hooks(&self) -> HookSet {
                match self { $($(#[$m])* Mech::$variant(_) => <$ty as Hooks>::HOOKS,)* }
            }
            #[inline]
            pub fn on_ingress(&mut self, c: &mut HookCtx, at: PortId, id: PktId, cands: &[PortId]) -> Option<PortId> {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_ingress(c, at, id, cands),)* }
            }
            #[inline]
            pub fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_admit(c, at, id),)* }
            }
            #[inline]
            pub fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_dequeue(c, at, id),)* }
            }
            #[inline]
            pub fn on_transmit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_transmit(c, at, id),)* }
            }
            #[inline]
            pub fn on_arrive(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Arrive {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_arrive(c, at, id),)* }
            }
            pub fn on_serve(&mut self, c: &mut HookCtx, at: PortId) -> Option<crate::units::Time> {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_serve(c, at),)* }
            }
            pub fn on_link(&mut self, c: &mut HookCtx, at: PortId, up: bool) {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_link(c, at, up),)* }
            }
            pub fn on_drop(&mut self, c: &mut HookCtx, at: PortId, id: PktId, why: DropReason) {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_drop(c, at, id, why),)* }
            }
            pub fn start(&mut self, c: &mut HookCtx) {
                match self { $($(#[$m])* Mech::$variant(m) => m.start(c),)* }
            }
            pub fn table(&self) -> Option<(&'static str, Vec<crate::metrics::output::Column>)> {
                match self { $($(#[$m])* Mech::$variant(m) => m.table(),)* }
            }
            pub fn files(&self, dir: &std::path::Path) -> std::io::Result<Vec<(String, u64)>> {
                match self { $($(#[$m])* Mech::$variant(m) => m.files(dir),)* }
            }
            pub fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
                match self { $($(#[$m])* Mech::$variant(m) => m.on_timer(c, key),)* }
            }
            pub fn held(&self, f: &mut dyn FnMut(PktId)) {
                match self { $($(#[$m])* Mech::$variant(m) => m.held(f),)* }
            }
            pub fn summary(&self) -> serde_json::Value {
                match self { $($(#[$m])* Mech::$variant(m) => m.summary(),)* }
            }
            pub fn parallel_refusal(&self) -> Option<&'static str> {
                match self { $($(#[$m])* Mech::$variant(m) => m.parallel_refusal(),)* }
            }
            pub fn timer_node(&self, ports: &[Port], key: u32) -> Option<NodeId> {
                match self { $($(#[$m])* Mech::$variant(m) => m.timer_node(ports, key),)* }
            }
            pub fn hand_out(&mut self, at: PortId, id: PktId) -> u64 {
                match self { $($(#[$m])* Mech::$variant(m) => m.hand_out(at, id),)* }
            }
            pub fn take_in(&mut self, at: PortId, id: PktId, word: u64) {
                match self { $($(#[$m])* Mech::$variant(m) => m.take_in(at, id, word),)* }
            }
            /// `other` is this mechanism's copy in another part (the same variant: both built from one file).
            pub fn take_part(&mut self, other: &mut Mech, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
                match (self, other) {
                    $($(#[$m])* (Mech::$variant(a), Mech::$variant(b)) => a.take_part(b, ports, theirs),)*
                    #[allow(unreachable_patterns)]
                    _ => unreachable!("two parts' mechanisms differ"),
                }
            }
        }
    };
}

mechanisms! {
    AdaptiveLb(adaptive_lb::AdaptiveLb),
    BounceDrop(bounce::BounceDrop),
    BurstRadar(burstradar::BurstRadar),
    Cbr(crate::traffic::cbr::Cbr),
    Cioq(cioq::Cioq),
    Codel(codel::Codel),
    FastLane(fastlane::FastLane),
    LinkGuardian(linkguardian::LinkGuardian),
    Pcap(pcap::Capture),
    Pfc(pfc::Pfc),
    Sqr(sqr::Sqr),
    #[cfg(test)]
    Probe(crate::net::tests::Probe),
}
