//! Per-packet adaptive load balancing: at a switch's ingress, send each packet to the equal-cost output port
//! with the fewest queued bytes, ties broken uniformly at random. The simplest form of DeTail's adaptive load
//! balancing (its favoured-port thresholds and per-priority drain bytes come with DeTail); built only on the
//! `INGRESS` hook (`routing.load_balance = "adaptive"`).
//!
//! The choice reads the queues when the packet arrives, before the switch's forwarding delay: with a delay,
//! the occupancy it sees is that much older than at DeTail's crossbar.

use super::Hooks;
use crate::engine::Rng;
use crate::net::hooks::{HookCtx, HookSet};
use crate::units::{PktId, PortId};

pub struct AdaptiveLb {
    rng: Rng,
    pub stats: AdaptiveLbStats,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct AdaptiveLbStats {
    /// Packets that had more than one equal-cost port to choose from.
    pub decisions: u64,
    /// Of those, decisions between ports with equally many queued bytes (settled at random).
    pub ties: u64,
}

impl AdaptiveLb {
    pub fn new(seed: u64) -> AdaptiveLb {
        AdaptiveLb { rng: Rng::new(seed, "adaptive-lb", 0), stats: AdaptiveLbStats::default() }
    }
}

impl Hooks for AdaptiveLb {
    const NAME: &'static str = "adaptive_lb";
    const HOOKS: HookSet = HookSet::INGRESS;

    fn on_ingress(&mut self, c: &mut HookCtx, _at: PortId, _id: PktId, cands: &[PortId]) -> Option<PortId> {
        if cands.len() < 2 {
            return None;
        }
        self.stats.decisions += 1;
        // A port whose link is down has an empty queue (it drops what it sends): never prefer it, unless
        // every candidate is down.
        let live = cands.iter().any(|p| c.ports[p.idx()].up);
        let (mut best, mut best_bytes, mut ties) = (cands[0], u64::MAX, 0u32);
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
                if self.rng.below(ties) == 0 {
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
