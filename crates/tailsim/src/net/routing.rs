//! Shortest-path routing tables with equal-cost next hops.
//!
//! Each switch keeps, per destination host, the set of output ports that lie on a shortest path. Identical sets
//! are stored once per switch (a leaf's uplink set serves every remote host).

use crate::units::{NodeId, PortId};
use std::collections::{HashMap, VecDeque};

#[derive(Default)]
pub struct RouteTable {
    /// Per destination host: (start, len) into `cands`.
    entries: Vec<(u32, u32)>,
    cands: Vec<PortId>,
}

impl RouteTable {
    #[inline]
    pub fn candidates(&self, dst: NodeId) -> &[PortId] {
        let (s, l) = self.entries[dst.idx()];
        &self.cands[s as usize..(s + l) as usize]
    }
}

/// `adj[n]` = (port, neighbour) for every egress port of node n. Hosts are nodes 0..hosts.
/// Returns one table per node (hosts get an empty one). A host that some switch cannot reach is an error
/// (the first such (switch, host) pair) when `strict`; otherwise that switch gets no route to it (after
/// links failed).
pub fn build_tables(
    adj: &[Vec<(PortId, NodeId)>],
    hosts: usize,
    strict: bool,
) -> Result<Vec<RouteTable>, (NodeId, NodeId)> {
    let n = adj.len();
    let mut tables: Vec<RouteTable> = (0..n).map(|_| RouteTable::default()).collect();
    let mut interned: Vec<HashMap<Vec<PortId>, (u32, u32)>> = vec![HashMap::new(); n];
    let mut dist = vec![u32::MAX; n];
    let mut bfs = VecDeque::new();
    for h in 0..hosts {
        // BFS from the destination over the (symmetric) graph; links are full duplex.
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        dist[h] = 0;
        bfs.push_back(h);
        while let Some(u) = bfs.pop_front() {
            for &(_, v) in &adj[u] {
                let v = v.idx();
                // Hosts do not forward: never expand through a host other than the destination.
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    if v >= hosts {
                        bfs.push_back(v);
                    }
                }
            }
        }
        for s in hosts..n {
            if dist[s] == u32::MAX {
                if strict {
                    return Err((NodeId(s as u32), NodeId(h as u32)));
                }
                tables[s].entries.resize(hosts, (0, 0));
                continue;
            }
            let set: Vec<PortId> =
                adj[s].iter().filter(|(_, v)| dist[v.idx()] + 1 == dist[s]).map(|(p, _)| *p).collect();
            let t = &mut tables[s];
            let e = *interned[s].entry(set).or_insert_with_key(|set| {
                let start = t.cands.len() as u32;
                t.cands.extend_from_slice(set);
                (start, set.len() as u32)
            });
            if t.entries.len() < hosts {
                t.entries.resize(hosts, (0, 0));
            }
            t.entries[h] = e;
        }
    }
    Ok(tables)
}
