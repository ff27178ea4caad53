//! SQR's local rerouting (LRR): the backup port of a failed port for each destination, computed when the
//! failure is detected.

use crate::net::hooks::HookCtx;
use crate::units::PortId;
use std::collections::VecDeque;

/// LRR's backup for each destination host when port `p` (switch s → neighbour n) fails: the other port of s
/// towards a switch whose distance to the host, avoiding s, is least (ties: the first port). Ours: the thesis
/// takes backups from path probing (CONGA/HULA-like); on a healthy fabric this is what probing would find.
pub(super) fn lrr_backups(c: &HookCtx, p: PortId) -> Vec<PortId> {
    let ports = c.ports;
    let s = ports[p.idx()].node;
    let n = ports.iter().map(|q| q.node.idx().max(q.peer.idx())).max().unwrap_or(0) + 1;
    let mut adj = vec![Vec::new(); n];
    for q in ports {
        if q.up && q.node != s && q.peer != s {
            adj[q.node.idx()].push(q.peer.idx());
        }
    }
    let mut best = vec![(u32::MAX, PortId::NONE); c.hosts];
    for (i, q) in ports.iter().enumerate() {
        let q_id = PortId(i as u32);
        if q.node != s || q_id == p || !q.up || q.peer.idx() < c.hosts {
            continue;
        }
        // Distances from the neighbour over the fabric without s.
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::from([q.peer.idx()]);
        dist[q.peer.idx()] = 0;
        while let Some(u) = queue.pop_front() {
            for &v in &adj[u] {
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        for (h, b) in best.iter_mut().enumerate() {
            if dist[h] < b.0 {
                *b = (dist[h], q_id);
            }
        }
    }
    best.into_iter().map(|b| b.1).collect()
}
