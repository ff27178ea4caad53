//! Shortest-path routing with equal-cost next hops, indexed by the destination's leaf.
//!
//! A host has exactly one link, to its *leaf* (the switch it hangs off), and hosts do not forward, so every
//! shortest path to host h ends leaf(h) → h, and a switch's equal-cost next hops towards h are its next hops
//! towards leaf(h). The table is therefore kept per (switch, leaf), not per (switch, host): a k = 28 fat tree
//! (5,488 hosts, 392 leaves) needs 0.8 MB instead of 43 MB, the table a switch reads per packet fits in a few KB,
//! and building it takes one breadth-first search per leaf instead of one per host. This holds for every
//! topology (file topologies included), so there is no second, arithmetic route computation for the regular
//! fabrics to keep in step with it; `reference_tables` below, the per-host search it replaced, checks it in
//! the tests (`tests/routing.rs`).
//!
//! Identical next-hop sets are stored once per switch (a leaf's uplink set serves every remote leaf).

use crate::units::{NodeId, PortId};
use std::collections::{HashMap, VecDeque};

/// Every switch's routes.
#[derive(Clone, Default)]
pub struct Routes {
    /// Per host: the index of its leaf among the leaves, or `leaves` (a column that is empty at every switch)
    /// when no switch can reach it (its NIC's link down after re-convergence); and the leaf's index among the
    /// switches (u32::MAX without one). One load gives both.
    host_leaf: Vec<(u32, u32)>,
    /// Per host: its leaf's port to it, and 1, or 0 when that port is down (no route at the leaf itself).
    local: Vec<(PortId, u32)>,
    /// Per leaf: its node.
    leaf_node: Vec<NodeId>,
    /// Per (switch, leaf or the unreachable column): the index of the next-hop set among the switch's own
    /// (`sets[set_base[switch] + i]`). Rows of `row` = leaves + 1. Two bytes an entry keep a k = 28 fat tree's
    /// table at 0.8 MB, inside the per-core cache beside the packets (at 8 bytes it missed on most hops).
    entries: Vec<u16>,
    /// Per switch: where its sets start in `sets`.
    set_base: Vec<u32>,
    /// (start, len) into `cands`; each switch's first set is the empty one.
    sets: Vec<(u32, u32)>,
    cands: Vec<PortId>,
    row: usize,
}

/// A switch may have at most this many distinct next-hop sets (one per leaf at most, plus the empty one).
pub const MAX_LEAVES: usize = u16::MAX as usize - 1;

/// Why routes could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// The first host (in order) that some switch (the first, in order) cannot reach; only when strict.
    Unreachable { switch: NodeId, host: NodeId },
    /// More switches with hosts than a two-byte set index can tell apart.
    TooManyLeaves(usize),
}

impl Routes {
    /// The equal-cost next hops at switch `sw` (its index among the switches) towards host `dst`, in the
    /// switch's port order; empty when there is no route.
    #[inline(always)]
    pub fn candidates(&self, sw: usize, dst: NodeId) -> &[PortId] {
        let (leaf, leaf_sw) = self.host_leaf[dst.idx()];
        if leaf_sw as usize == sw {
            let (p, n) = &self.local[dst.idx()];
            return &std::slice::from_ref(p)[..*n as usize];
        }
        let i = self.entries[sw * self.row + leaf as usize];
        let (s, l) = self.sets[self.set_base[sw] as usize + i as usize];
        &self.cands[s as usize..(s + l) as usize]
    }

    /// Start loading the table entry `candidates(sw, dst)` will read (a hint).
    #[inline(always)]
    pub fn prefetch(&self, sw: usize, dst: NodeId) {
        if let Some(&(leaf, leaf_sw)) = self.host_leaf.get(dst.idx()) {
            if leaf_sw as usize == sw {
                crate::engine::prefetch(self.local.as_ptr().wrapping_add(dst.idx()));
            } else {
                crate::engine::prefetch(self.entries.as_ptr().wrapping_add(sw * self.row + leaf as usize));
            }
        }
    }

    /// Bytes the tables take (for the performance notes and the memory test).
    pub fn heap_bytes(&self) -> usize {
        self.host_leaf.capacity() * 8
            + self.local.capacity() * 8
            + self.leaf_node.capacity() * 4
            + self.entries.capacity() * 2
            + self.set_base.capacity() * 4
            + self.sets.capacity() * 8
            + self.cands.capacity() * 4
    }
}

/// `adj[n]` = (port, neighbour) for every egress port of node n that is up. Hosts are nodes 0..hosts and
/// have at most one link. A host that some switch cannot reach is an error (the first such (switch, host)
/// pair, hosts in order, then switches) when `strict`; otherwise that switch gets no route to it (after links
/// failed). More than `MAX_LEAVES` leaves is an error either way.
pub fn build(adj: &[Vec<(PortId, NodeId)>], hosts: usize, strict: bool) -> Result<Routes, RouteError> {
    let n = adj.len();
    let switches = n - hosts;
    // Leaves in order of their first host; a host with no link up (or linked to a host) has no leaf.
    let mut leaf_of_node: HashMap<usize, u32> = HashMap::new();
    let mut leaf_node = Vec::new();
    let mut host_leaf = vec![(u32::MAX, u32::MAX); hosts];
    let mut local = vec![(PortId::NONE, 0); hosts];
    for h in 0..hosts {
        if let [(_, l)] = adj[h].as_slice() {
            if l.idx() >= hosts {
                let leaf = *leaf_of_node.entry(l.idx()).or_insert_with(|| {
                    leaf_node.push(*l);
                    leaf_node.len() as u32 - 1
                });
                host_leaf[h] = (leaf, (l.idx() - hosts) as u32);
                if let Some((p, _)) = adj[l.idx()].iter().find(|(_, v)| v.idx() == h) {
                    local[h] = (*p, 1);
                }
            }
        }
    }
    let leaves = leaf_node.len();
    let row = leaves + 1;
    for l in host_leaf.iter_mut().filter(|l| l.0 == u32::MAX) {
        l.0 = leaves as u32;
    }
    if leaves > MAX_LEAVES {
        return Err(RouteError::TooManyLeaves(leaves));
    }
    let mut r = Routes {
        host_leaf,
        local,
        leaf_node,
        entries: vec![0; switches * row],
        set_base: vec![],
        sets: vec![],
        cands: vec![],
        row,
    };
    // Per switch: its sets (the empty one first) and their index by content.
    let mut own: Vec<Vec<(u32, u32)>> = vec![vec![(0, 0)]; switches];
    let mut interned: Vec<HashMap<Vec<PortId>, u16>> = vec![HashMap::new(); switches];
    // Distances of switches only (indexed by node − hosts): a search costs the switches' ports, not the
    // hosts' count, and only the switches it reached are reset.
    let mut dist = vec![u32::MAX; switches];
    let d = |dist: &[u32], v: usize| if v >= hosts { dist[v - hosts] } else { u32::MAX };
    let mut order: Vec<usize> = Vec::with_capacity(switches);
    let mut set = Vec::new();
    let mut reached = vec![false; row];
    #[allow(clippy::needless_range_loop)] // `leaf` indexes three tables and a column of `entries`
    for leaf in 0..leaves {
        // BFS from the leaf over the switches, along egress ports (links are full duplex).
        let root = r.leaf_node[leaf].idx();
        for &s in &order {
            dist[s - hosts] = u32::MAX;
        }
        order.clear();
        dist[root - hosts] = 0;
        order.push(root);
        let mut next = 0;
        while next < order.len() {
            let u = order[next];
            next += 1;
            for &(_, v) in &adj[u] {
                let v = v.idx();
                if v >= hosts && dist[v - hosts] == u32::MAX {
                    dist[v - hosts] = dist[u - hosts] + 1;
                    order.push(v);
                }
            }
        }
        reached[leaf] = order.len() == switches;
        for &s in &order[1..] {
            set.clear();
            set.extend(
                adj[s].iter().filter(|(_, v)| d(&dist, v.idx()).wrapping_add(1) == dist[s - hosts]).map(|x| x.0),
            );
            let cands = &mut r.cands;
            let sets = &mut own[s - hosts];
            let i = match interned[s - hosts].get(&set) {
                Some(i) => *i,
                None => {
                    sets.push((cands.len() as u32, set.len() as u32));
                    cands.extend_from_slice(&set);
                    let i = (sets.len() - 1) as u16;
                    interned[s - hosts].insert(set.clone(), i);
                    i
                }
            };
            r.entries[(s - hosts) * row + leaf] = i;
        }
    }
    for sets in own {
        r.set_base.push(r.sets.len() as u32);
        r.sets.extend(sets);
    }
    if strict && switches > 0 {
        for h in 0..hosts {
            let leaf = r.host_leaf[h].0 as usize;
            if leaf == leaves || !reached[leaf] || r.local[h].1 == 0 {
                // The first switch that cannot reach it, in order.
                let s = (0..switches).find(|&s| r.candidates(s, NodeId(h as u32)).is_empty()).unwrap_or(0);
                return Err(RouteError::Unreachable { switch: NodeId((hosts + s) as u32), host: NodeId(h as u32) });
            }
        }
    }
    Ok(r)
}

/// The per-host search that `build` replaced: per destination host, a BFS over the whole graph. Kept as the
/// reference the leaf-indexed tables are checked against (`tests/routing.rs`); returns, per switch and host,
/// the equal-cost next hops.
pub fn reference_tables(adj: &[Vec<(PortId, NodeId)>], hosts: usize) -> Vec<Vec<Vec<PortId>>> {
    let n = adj.len();
    let mut out = vec![vec![Vec::new(); hosts]; n - hosts];
    let mut dist = vec![u32::MAX; n];
    let mut bfs = VecDeque::new();
    for h in 0..hosts {
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
            if dist[s] != u32::MAX {
                out[s - hosts][h] =
                    adj[s].iter().filter(|(_, v)| dist[v.idx()] + 1 == dist[s]).map(|(p, _)| *p).collect();
            }
        }
    }
    out
}
