//! Per-packet adaptive load balancing at a switch's ingress, among the equal-cost output ports, built only on
//! the `INGRESS` hook. Two rules:
//!
//! - **least queued** (`routing.load_balance = "adaptive"`): the port with the fewest queued bytes, ties
//!   broken uniformly at random (the "ideal variant" the DeTail thesis names and sets aside for its cost);
//! - **favoured ports** (`"detail"`, DeTail's rule, thesis Fig. 5.4): the ports whose egress drain bytes for
//!   the packet's class (bytes of classes 0..=class queued there) are below the first threshold (16 KB), else
//!   below the second (64 KB), else all of them; one of the set uniformly at random.
//!
//! A port whose link is down is never chosen while another is up.
//!
//! The choice reads the queues when the packet arrives, before the switch's forwarding delay: with a delay,
//! the occupancy it sees is that much older than at DeTail's crossbar.

use super::Hooks;
use crate::engine::Rng;
use crate::net::hooks::{HookCtx, HookSet};
use crate::net::port::Port;
use crate::units::{NodeId, PktId, PortId};

pub struct AdaptiveLb {
    rule: Rule,
    /// A random stream per node (by number; only switches draw): a switch's draws depend on its own packets
    /// alone, so each part of a parallel run draws its switches' as the serial run does.
    rngs: Vec<Rng>,
    pub stats: AdaptiveLbStats,
}

/// How the port is chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    LeastQueued,
    /// DeTail's favoured ports: drain-byte thresholds in increasing order (16 KB, 64 KB).
    Favoured(Vec<u64>),
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct AdaptiveLbStats {
    /// Packets that had more than one equal-cost port to choose from.
    pub decisions: u64,
    /// Of those, decisions between ports with equally many queued bytes (settled at random; least queued).
    pub ties: u64,
    /// Favoured ports: decisions settled under the first threshold, under a later one, and among all ports.
    pub by_threshold: [u64; 3],
}

impl AdaptiveLb {
    /// The rule, for a fabric of `nodes` nodes (hosts and switches).
    pub fn new(seed: u64, rule: Rule, nodes: usize) -> AdaptiveLb {
        let rngs = (0..nodes).map(|n| Rng::new(seed, "adaptive-lb", n as u64)).collect();
        AdaptiveLb { rule, rngs, stats: AdaptiveLbStats::default() }
    }

    /// DeTail's rule: uniform among the live ports under the first threshold that has any, else among all live
    /// ports. Counts, then draws an index (no allocation).
    fn favoured(&mut self, c: &HookCtx, id: PktId, cands: &[PortId], live: bool) -> PortId {
        let class = c.packet(id).class as usize;
        let Rule::Favoured(thresholds) = &self.rule else { unreachable!("called for the favoured rule") };
        let rng = &mut self.rngs[c.ports[cands[0].idx()].node.idx()]; // the switch's own stream
        let usable = |p: &&PortId| !live || c.ports[p.idx()].up;
        let drain = |p: &PortId| c.ports[p.idx()].queue.drain_bytes(class);
        for (i, &t) in thresholds.iter().enumerate() {
            let n = cands.iter().filter(usable).filter(|p| drain(p) < t).count() as u32;
            if n > 0 {
                self.stats.by_threshold[i.min(1)] += 1;
                let k = rng.below(n) as usize;
                return *cands.iter().filter(usable).filter(|p| drain(p) < t).nth(k).expect("counted");
            }
        }
        self.stats.by_threshold[2] += 1;
        let n = cands.iter().filter(usable).count() as u32;
        let k = rng.below(n) as usize;
        *cands.iter().filter(usable).nth(k).expect("counted")
    }
}

impl Hooks for AdaptiveLb {
    const NAME: &'static str = "adaptive_lb";
    const HOOKS: HookSet = HookSet::INGRESS;

    /// Splits by switch: each draws from its own stream and reads only its own ports' queues.
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn take_part(&mut self, other: &mut AdaptiveLb, _ports: &[Port], _theirs: &dyn Fn(NodeId) -> bool) {
        let AdaptiveLbStats { decisions, ties, by_threshold } = other.stats;
        self.stats.decisions += decisions;
        self.stats.ties += ties;
        for (a, b) in self.stats.by_threshold.iter_mut().zip(by_threshold) {
            *a += b;
        }
    }

    fn on_ingress(&mut self, c: &mut HookCtx, _at: PortId, id: PktId, cands: &[PortId]) -> Option<PortId> {
        if cands.len() < 2 {
            return None;
        }
        self.stats.decisions += 1;
        // A port whose link is down has an empty queue (it drops what it sends): never prefer it, unless
        // every candidate is down.
        let live = cands.iter().any(|p| c.ports[p.idx()].up);
        if matches!(self.rule, Rule::Favoured(_)) {
            return Some(self.favoured(c, id, cands, live));
        }
        let (mut best, mut best_bytes, mut ties) = (cands[0], u64::MAX, 0u32);
        let rng = &mut self.rngs[c.ports[cands[0].idx()].node.idx()]; // the switch's own stream
        for &p in cands {
            let pt = &c.ports[p.idx()];
            if live && !pt.up {
                continue;
            }
            if pt.bytes < best_bytes {
                (best, best_bytes, ties) = (p, pt.bytes, 1);
            } else if pt.bytes == best_bytes {
                // Reservoir sampling: each of the k tied ports ends up chosen with probability 1/k.
                ties += 1;
                if rng.below(ties) == 0 {
                    best = p;
                }
            }
        }
        if ties > 1 {
            self.stats.ties += 1;
        }
        Some(best)
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats).unwrap_or_default()
    }
}
