//! Pinned paths from traces: a trace's `path` (every switch) or `via` (one switch) column, resolved against
//! the built network (`net/pinned.rs`). Errors name the workload key, the trace file and its line.

use super::build::{node_named, Ctx, R};
use crate::net::Network;
use crate::traffic::Generator;
use crate::units::{NodeId, PathId};
use std::collections::{HashMap, VecDeque};
use tailsim_workload::TraceRoute;

/// Pin every trace flow that names its path; flows that name none are left to the switches.
pub(super) fn pin_traces(c: &Ctx, generators: &mut [Generator], net: &mut Network) -> R<()> {
    let mut from: HashMap<NodeId, Bfs> = HashMap::new();
    for (i, g) in generators.iter_mut().enumerate() {
        let Generator::List { flows, pins, .. } = g else { continue };
        if flows.iter().all(|f| f.route.is_none()) {
            continue;
        }
        let key = format!("workload[{i}].path");
        *pins = Vec::with_capacity(flows.len());
        for f in flows.iter() {
            let Some(r) = &f.route else {
                pins.push(PathId::NONE);
                continue;
            };
            let at = |msg: String| c.err(&key, format!("{}:{}: {msg}", r.origin, r.line));
            let (src, dst) = (NodeId(f.src), NodeId(f.dst));
            let switches = named_switches(net, r).map_err(at)?;
            let nodes = if r.via {
                let via = switches[0];
                let bfs = from.entry(via).or_insert_with(|| Bfs::from(net, via));
                let mut nodes = bfs.unique_path_to(net, src).map_err(at)?;
                nodes.reverse();
                nodes.pop(); // `via` starts the second half too
                nodes.extend(bfs.unique_path_to(net, dst).map_err(at)?);
                nodes
            } else {
                [src].into_iter().chain(switches).chain([dst]).collect()
            };
            pins.push(net.pin(&nodes).map_err(|m| at(format!("flow {} → {}: {m}", src.0, dst.0)))?);
        }
    }
    Ok(())
}

/// The switches a route names, in order.
fn named_switches(net: &Network, r: &TraceRoute) -> Result<Vec<NodeId>, String> {
    let hosts = net.n_hosts() as u32;
    r.switches
        .iter()
        .map(|name| match node_named(net.switches.iter().map(|s| s.name.as_str()), hosts, name) {
            Some(n) if n.0 >= hosts => Ok(n),
            Some(_) => Err(format!("\"{name}\" is a host: a path lists switches only")),
            None => Err(format!("no switch is named \"{name}\"")),
        })
        .collect()
}

/// Shortest paths from one switch: distance and number of shortest paths to every node (hosts do not forward).
struct Bfs {
    root: NodeId,
    dist: Vec<u32>,
    count: Vec<u64>,
}

impl Bfs {
    fn from(net: &Network, root: NodeId) -> Bfs {
        let n = net.n_hosts() + net.switches.len();
        let (mut dist, mut count) = (vec![u32::MAX; n], vec![0u64; n]);
        dist[root.idx()] = 0;
        count[root.idx()] = 1;
        let mut q = VecDeque::from([root]);
        while let Some(u) = q.pop_front() {
            if net.is_host(u) {
                continue;
            }
            for &p in net.ports_of(u) {
                let v = net.ports[p.idx()].peer;
                if dist[v.idx()] == u32::MAX {
                    dist[v.idx()] = dist[u.idx()] + 1;
                    q.push_back(v);
                }
                if dist[v.idx()] == dist[u.idx()] + 1 {
                    count[v.idx()] = count[v.idx()].saturating_add(count[u.idx()]);
                }
            }
        }
        Bfs { root, dist, count }
    }

    /// The nodes of the one shortest path from the root to `to` (root first), or why there is not one.
    fn unique_path_to(&self, net: &Network, to: NodeId) -> Result<Vec<NodeId>, String> {
        let name = |n: NodeId| net.node_name(n);
        match self.count[to.idx()] {
            0 => return Err(format!("{} cannot reach {}", name(self.root), name(to))),
            1 => {}
            k => {
                return Err(format!(
                    "{k} shortest paths join {} and {}: give the whole path (a `path` column) instead of `via`",
                    name(self.root),
                    name(to)
                ))
            }
        }
        // Walk back from `to`: its one predecessor on a shortest path at each step.
        let mut out = vec![to];
        let mut v = to;
        while v != self.root {
            v = net
                .ports_of(v)
                .iter()
                .map(|p| net.ports[p.idx()].peer)
                .find(|u| !net.is_host(*u) && self.dist[u.idx()].wrapping_add(1) == self.dist[v.idx()])
                .expect("a node at distance d > 0 has a switch at d − 1");
            out.push(v);
        }
        out.reverse();
        Ok(out)
    }
}
