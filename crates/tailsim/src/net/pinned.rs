//! Pinned paths. A flow whose trace names its path (`path` or `via` column, docs/workloads.md) crosses exactly
//! those switches, whatever the switches' load balancing would choose: the way to put each flow on the path
//! another simulator gave it, flow by flow. Its reverse packets (ACKs, grants, pulls) take the same switches
//! back.
//!
//! A pinned packet carries its `PathId`; at each switch on the path the pin gives the output port (one short
//! scan: paths have a handful of hops). A switch not on the path (a mechanism sent the packet elsewhere)
//! routes it as usual. A pinned path is followed even over a link that is down: the packet is lost there,
//! as it would be in the other simulator.

use super::Network;
use crate::units::{NodeId, PathId, PortId};
use std::collections::HashMap;

#[derive(Default)]
pub struct PinnedPaths {
    /// By `PathId` − 1: each switch of the path (in order) and the port it sends the packet out of.
    hops: Vec<Vec<(NodeId, PortId)>>,
    /// By `PathId` − 1: the nodes from the source host to the destination host.
    nodes: Vec<Vec<NodeId>>,
    /// Forward paths by their nodes: flows pinned to one path share it.
    known: HashMap<Vec<NodeId>, PathId>,
}

impl PinnedPaths {
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }

    /// The port that switch `s` sends packets of `path` out of; None if `s` is not on it.
    #[inline(never)]
    pub fn port_at(&self, path: PathId, s: NodeId) -> Option<PortId> {
        self.hops[path.idx() - 1].iter().find(|h| h.0 == s).map(|h| h.1)
    }

    /// The path's nodes, from the source host to the destination host.
    pub fn nodes(&self, path: PathId) -> &[NodeId] {
        &self.nodes[path.idx() - 1]
    }
}

impl Network {
    /// Pin a path given as its nodes, source host first and destination host last, every one linked to the
    /// next; returns its forward id (`PathId::reverse` is the way back). An error says which step is wrong.
    pub fn pin(&mut self, nodes: &[NodeId]) -> Result<PathId, String> {
        if let Some(&p) = self.pins.known.get(nodes) {
            return Ok(p);
        }
        let h = self.hosts.len();
        let name = |n: NodeId| self.node_name(n);
        let (Some(&src), Some(&dst)) = (nodes.first(), nodes.last()) else {
            return Err("an empty path".into());
        };
        if nodes.len() < 3 || src.idx() >= h || dst.idx() >= h {
            return Err("a path goes from the source host through one or more switches to the destination host".into());
        }
        if let Some(n) = nodes[1..nodes.len() - 1].iter().find(|n| n.idx() < h) {
            return Err(format!("host {} is in the middle of the path: hosts do not forward", n.0));
        }
        if let Some((i, n)) = nodes.iter().enumerate().find(|(i, n)| nodes[..*i].contains(n)) {
            return Err(format!("{} appears twice (step {}): a path has no loops", name(*n), i + 1));
        }
        let mut fwd = Vec::with_capacity(nodes.len() - 2);
        let mut back = Vec::with_capacity(nodes.len() - 2);
        for w in nodes.windows(2) {
            let (a, b) = (w[0], w[1]);
            let Some(port) = self.port_towards(a, b) else {
                return Err(format!("{} has no link to {}", name(a), name(b)));
            };
            if a.idx() >= h {
                fwd.push((a, port));
            }
            if b.idx() >= h {
                back.push((b, self.ports[port.idx()].reverse));
            }
        }
        back.reverse();
        let t = &mut self.pins;
        let id = PathId(t.hops.len() as u32 + 1);
        t.hops.push(fwd);
        t.hops.push(back);
        t.nodes.push(nodes.to_vec());
        t.nodes.push(nodes.iter().rev().copied().collect());
        t.known.insert(nodes.to_vec(), id);
        Ok(id)
    }

    /// The ports of node `n`: a host's NIC, or a switch's ports.
    pub fn ports_of(&self, n: NodeId) -> &[PortId] {
        match n.idx().checked_sub(self.hosts.len()) {
            None => std::slice::from_ref(&self.hosts[n.idx()].nic),
            Some(s) => &self.switches[s].ports,
        }
    }

    /// The port of node `a` on its link to node `b` (the first, if there are several).
    pub fn port_towards(&self, a: NodeId, b: NodeId) -> Option<PortId> {
        self.ports_of(a).iter().copied().find(|p| self.ports[p.idx()].peer == b)
    }

    /// The ports a packet of a flow from `src` to `dst` crosses on the healthy fabric: along its pinned path if
    /// it has one, else as `Network::path`.
    pub fn path_of(&self, src: NodeId, dst: NodeId, pin: PathId) -> Vec<PortId> {
        if pin == PathId::NONE {
            return self.path(src, dst);
        }
        let nodes = self.pins.nodes(pin);
        nodes.windows(2).map(|w| self.port_towards(w[0], w[1]).expect("checked when pinned")).collect()
    }

    /// The switches a flow's data crosses on the healthy fabric when its path is fixed: its pinned path, or the
    /// one ECMP's hash `hash` chooses at every switch. None when the path is chosen per packet (spraying, or a
    /// mechanism that chooses ports: adaptive load balancing, local rerouting).
    pub fn flow_switches(&self, src: NodeId, dst: NodeId, hash: u32, pin: PathId) -> Option<Vec<NodeId>> {
        if pin != PathId::NONE {
            let n = self.pins.nodes(pin);
            return Some(n[1..n.len() - 1].to_vec());
        }
        if self.lb == super::LoadBalance::Spray || self.mechs.iter().any(|m| m.hooks().has(super::HookSet::INGRESS)) {
            return None;
        }
        let mut out = Vec::new();
        let mut node = self.ports[self.hosts[src.idx()].nic.idx()].peer;
        while node != dst {
            out.push(node);
            let i = node.idx() - self.hosts.len();
            let p = self.switches[i].flow_choice(self.lb, self.healthy_routes().candidates(i, dst), hash)?;
            node = self.ports[p.idx()].peer;
        }
        Some(out)
    }
}
