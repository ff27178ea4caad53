//! Cutting a fabric into parts, one or more per thread of a parallel run (issue "One run on every core",
//! docs/parallel.md).
//!
//! A conservative parallel simulation lets each part run ahead of the others by its *lookahead*: nothing a
//! part does at time t can reach another part before t + the propagation delay of the links between them.
//! So the cut should cross few links, all of them with a delay, and leave parts of equal work. Work follows
//! the hosts (every packet starts and ends at one), so parts get equal numbers of hosts.
//!
//! How, for any topology (fat trees, leaf-spines, files): a switch's *level* is its distance to the nearest
//! host (ToRs 1, aggregation 2, cores 3). Removing every switch at or above a level leaves groups (below the
//! cores: the pods; below the aggregation switches: a ToR with its hosts). The cut is made at the highest
//! level that leaves at least as many groups as parts, so a fat tree is cut between pods while it has pods
//! enough, and inside pods only beyond that. Groups, in the order of their first node, fill the parts one
//! after the other up to an equal share of hosts (neighbouring pods stay together); each switch at or above
//! the cut joins the part it has most links to, ties going to the part with fewest such switches so far, then
//! to the lowest part (a fat tree's cores spread evenly). Everything is a function of the topology alone.

use crate::net::Network;
use crate::units::{NodeId, Time};

/// Which part each node belongs to, and what that cut costs.
#[derive(Clone, Debug)]
pub struct Partition {
    part: Vec<u16>,
    parts: usize,
    /// The smallest delay of a link between two parts (None: no link crosses).
    lookahead: Option<Time>,
    /// Directed ports whose two ends are in different parts.
    cut_ports: usize,
    /// The switch level the cut was made at (every switch at or above it was placed by its links).
    level: u32,
}

impl Partition {
    /// Cut `net` into `parts` parts (1 ≤ parts ≤ hosts).
    pub fn new(net: &Network, parts: usize) -> Result<Partition, String> {
        Partition::cut(net, parts, 1)
    }

    /// Cut `net` into `parts` parts, each host in its switch's part (a run of flows: a receiver's accounting
    /// reads its downlink, metrics/inbound.rs): at most as many parts as groups of a ToR and its hosts.
    pub fn keeping_hosts(net: &Network, parts: usize) -> Result<Partition, String> {
        Partition::cut(net, parts, 2)
    }

    /// The cut at the highest level that fills the parts evenly, but not below `floor`.
    fn cut(net: &Network, parts: usize, floor: u32) -> Result<Partition, String> {
        let hosts = net.hosts.len();
        if parts == 0 || parts > hosts || parts > u16::MAX as usize {
            return Err(format!("cannot cut a fabric of {hosts} hosts into {parts} parts (1 to {hosts})"));
        }
        let nodes = hosts + net.switches.len();
        // The graph routes are computed on (links up: all of them before a run's faults).
        let adj: Vec<Vec<usize>> =
            net.adjacency().into_iter().map(|ns| ns.into_iter().map(|(_, m)| m.idx()).collect()).collect();
        // Levels by breadth-first search from every host at once; a switch no host reaches gets the top level.
        let mut level = vec![u32::MAX; nodes];
        let mut frontier: Vec<usize> = (0..hosts).collect();
        frontier.iter().for_each(|&h| level[h] = 0);
        let mut d = 0;
        while !frontier.is_empty() {
            d += 1;
            let mut next = vec![];
            for &n in &frontier {
                for &m in &adj[n] {
                    if level[m] == u32::MAX {
                        level[m] = d;
                        next.push(m);
                    }
                }
            }
            frontier = next;
        }
        let top = level.iter().copied().filter(|&l| l != u32::MAX).max().unwrap_or(0) + 1;
        level.iter_mut().filter(|l| **l == u32::MAX).for_each(|l| *l = top);
        // The highest cut level whose groups fill the parts evenly: enough groups, and no part more than 5 %
        // over an equal share of hosts (28 pods in 8 parts would be 4 pods against 3: the cut goes to the
        // ToRs instead). Level 1 leaves every host alone, as even as it gets.
        let mut part = vec![u16::MAX; nodes];
        let mut cut = 0;
        for c in (floor.min(top)..=top).rev() {
            let groups = groups_below(&adj, &level, c, hosts);
            if groups.len() < parts {
                continue;
            }
            let most = fill(&groups, parts, hosts, &mut part);
            if c == floor || most as f64 <= 1.05 * hosts as f64 / parts as f64 {
                cut = c;
                break;
            }
        }
        if cut == 0 {
            let groups = groups_below(&adj, &level, floor.min(top), hosts).len();
            let (g, t) = if groups == 1 { ("group", "part") } else { ("groups", "parts") };
            return Err(format!(
                "cannot cut this fabric into {parts} parts with every host in its switch's part: it has {groups} \
                 {g} of a switch and its hosts (use at most {groups} {t})"
            ));
        }
        // Switches at or above the cut, level by level: each to the part it has most links to, among the parts
        // that do not yet have their share of the level (switches are work too: a core handles as many
        // packets as a ToR, and placing by links alone lets the parts with more aggregation switches draw
        // more cores), ties to the part with fewest of the level, then the lowest.
        let mut upper: Vec<usize> = (hosts..nodes).filter(|&n| level[n] >= cut).collect();
        upper.sort_by_key(|&n| (level[n], n));
        for same in upper.chunk_by(|&a, &b| level[a] == level[b]) {
            let share = same.len().div_ceil(parts);
            let mut placed = vec![0usize; parts];
            for &n in same {
                let mut links = vec![0usize; parts];
                adj[n].iter().filter(|&&m| part[m] != u16::MAX).for_each(|&m| links[part[m] as usize] += 1);
                let q = (0..parts)
                    .filter(|&q| placed[q] < share)
                    .max_by_key(|&q| (links[q], std::cmp::Reverse(placed[q]), std::cmp::Reverse(q)))
                    .expect("parts × share ≥ the level's switches");
                part[n] = q as u16;
                placed[q] += 1;
            }
        }
        let mut lookahead: Option<Time> = None;
        let mut cut_ports = 0;
        for pt in &net.ports {
            if part[pt.node.idx()] != part[pt.peer.idx()] {
                cut_ports += 1;
                lookahead = Some(lookahead.map_or(pt.delay, |l| l.min(pt.delay)));
            }
        }
        Ok(Partition { part, parts, lookahead, cut_ports, level: cut })
    }

    /// Every node a part of its own, except that links without delay, which leave no lookahead, join their
    /// ends: every other link is cut (the strictest handover check, sim/handover.rs).
    pub fn each_node(net: &Network) -> Result<Partition, String> {
        let n = net.hosts.len() + net.switches.len();
        if n > u16::MAX as usize {
            return Err(format!("{n} nodes: at most {} parts", u16::MAX));
        }
        // Union-find over the links without delay; a part is numbered by its lowest node.
        let mut root: Vec<usize> = (0..n).collect();
        fn find(root: &mut [usize], mut v: usize) -> usize {
            while root[v] != v {
                root[v] = root[root[v]];
                v = root[v];
            }
            v
        }
        for pt in net.ports.iter().filter(|p| p.delay == Time::ZERO) {
            let (a, b) = (find(&mut root, pt.node.idx()), find(&mut root, pt.peer.idx()));
            root[a.max(b)] = a.min(b);
        }
        let mut number = vec![u16::MAX; n];
        let mut parts = 0;
        let part: Vec<u16> = (0..n)
            .map(|v| {
                let r = find(&mut root, v);
                if number[r] == u16::MAX {
                    number[r] = parts;
                    parts += 1;
                }
                number[r]
            })
            .collect();
        let cut: Vec<_> = net.ports.iter().filter(|p| part[p.node.idx()] != part[p.peer.idx()]).collect();
        let lookahead = cut.iter().map(|p| p.delay).min();
        Ok(Partition { part, parts: parts as usize, lookahead, cut_ports: cut.len(), level: 0 })
    }

    #[inline]
    pub fn of(&self, n: NodeId) -> usize {
        self.part[n.idx()] as usize
    }
    /// Every node's part, by node number.
    pub fn node_parts(&self) -> &[u16] {
        &self.part
    }
    pub fn parts(&self) -> usize {
        self.parts
    }
    /// How far a part may run ahead of the others: the smallest delay of a link between parts (None when
    /// no link crosses; zero when one has no delay, and then parts cannot run apart at all).
    pub fn lookahead(&self) -> Option<Time> {
        self.lookahead
    }
    /// An error naming a link between two parts that has no delay, if there is one: then no part can run
    /// ahead of another by any time at all (the lookahead is zero), and the cut cannot run.
    pub fn refuse_zero_lookahead(&self, net: &Network) -> Result<(), String> {
        if self.lookahead != Some(Time::ZERO) {
            return Ok(());
        }
        let pt = net.ports.iter().find(|p| p.delay == Time::ZERO && self.of(p.node) != self.of(p.peer));
        let link =
            pt.map_or("a link".into(), |p| format!("the link {} - {}", net.node_name(p.node), net.node_name(p.peer)));
        Err(format!(
            "{link} joins two of the {} parts and has no propagation delay, so neither part can run ahead of the \
             other (a part's lookahead is the smallest delay of a link between parts, docs/parallel.md): give the \
             fabric's links a delay, or run on one thread",
            self.parts
        ))
    }
    /// Claim another lookahead than the cut's: for tests, where a parallel run must catch one that is too
    /// long (sim/parallel.rs).
    pub fn assume_lookahead(&mut self, l: Time) {
        self.lookahead = Some(l);
    }
    /// Directed ports (one per direction of a link) with their ends in different parts.
    pub fn cut_ports(&self) -> usize {
        self.cut_ports
    }
    /// The switch level the fabric was cut at: 3 between the pods of a fat tree, 2 inside them.
    pub fn level(&self) -> u32 {
        self.level
    }
    /// Hosts in each part.
    pub fn hosts_per_part(&self, hosts: usize) -> Vec<usize> {
        let mut n = vec![0; self.parts];
        self.part[..hosts].iter().for_each(|&p| n[p as usize] += 1);
        n
    }
}

/// Give the groups, in order, to the parts one after the other, each up to an equal share of hosts: the
/// nodes' parts in `part`; returns the most hosts a part got.
fn fill(groups: &[Vec<usize>], parts: usize, hosts: usize, part: &mut [u16]) -> usize {
    part.iter_mut().for_each(|x| *x = u16::MAX);
    let mut count = vec![0usize; parts];
    let mut p = 0usize;
    let mut filled = 0usize;
    for (i, g) in groups.iter().enumerate() {
        // Move on when this part has its share, but never leave a later part without a group.
        if p + 1 < parts && (filled >= hosts * (p + 1) / parts || groups.len() - i == parts - p - 1) {
            p += 1;
        }
        g.iter().for_each(|&n| part[n] = p as u16);
        let g_hosts = g.iter().filter(|&&n| n < hosts).count();
        filled += g_hosts;
        count[p] += g_hosts;
    }
    count.into_iter().max().unwrap_or(0)
}

/// The connected groups of the nodes below `cut` (hosts always), each listed in order, the groups in the order
/// of their first node.
fn groups_below(adj: &[Vec<usize>], level: &[u32], cut: u32, hosts: usize) -> Vec<Vec<usize>> {
    let mut seen = vec![false; adj.len()];
    let mut groups = vec![];
    for start in 0..adj.len() {
        if seen[start] || (start >= hosts && level[start] >= cut) {
            continue;
        }
        seen[start] = true;
        let (mut g, mut stack) = (vec![], vec![start]);
        while let Some(n) = stack.pop() {
            g.push(n);
            for &m in &adj[n] {
                if !seen[m] && (m < hosts || level[m] < cut) {
                    seen[m] = true;
                    stack.push(m);
                }
            }
        }
        g.sort_unstable();
        groups.push(g);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::{FatTree, LeafSpine};
    use crate::net::NetParams;
    use crate::units::BitsPerSec;

    fn fat_tree(k: u32) -> Network {
        let mut ft = FatTree::k_ary(k, BitsPerSec::gbps(100), Time::us(1), Time::ZERO);
        ft.tiers[2].down_delay = Time::ns(500); // agg-core links shorter than the rest
        Network::build(&ft.spec().unwrap(), &NetParams::default()).unwrap()
    }

    #[test]
    fn a_fat_tree_is_cut_between_pods_while_it_has_pods_enough() {
        for k in [4u32, 8, 16] {
            let net = fat_tree(k);
            let hosts = net.hosts.len();
            let pod_hosts = (k * k / 4) as usize;
            for parts in [1usize, 2, 4, k as usize] {
                if parts > k as usize {
                    continue;
                }
                let p = Partition::new(&net, parts).unwrap();
                assert_eq!(p.hosts_per_part(hosts), vec![hosts / parts; parts], "k = {k}, {parts} parts");
                // Every host of a pod in one part, with its ToR and aggregation switches.
                for h in 0..hosts {
                    assert_eq!(p.of(NodeId(h as u32)), p.of(NodeId((h - h % pod_hosts) as u32)));
                }
                for pt in &net.ports {
                    let (a, b) = (pt.node.idx(), pt.peer.idx());
                    if a < hosts || b < hosts {
                        assert_eq!(p.of(pt.node), p.of(pt.peer), "a host and its ToR are never cut");
                    }
                }
                if parts == 1 {
                    assert_eq!((p.cut_ports(), p.lookahead()), (0, None));
                    continue;
                }
                assert_eq!(p.level(), 3);
                // Cores spread evenly; each core's links to the other parts' pods are cut.
                let cores = (k * k / 4) as usize;
                let per_core_cut = k as usize - k as usize / parts;
                assert_eq!(p.cut_ports(), 2 * cores * per_core_cut, "k = {k}, {parts} parts");
                assert_eq!(p.lookahead(), Some(Time::ns(500)));
                let mut switches = vec![0; parts];
                (hosts..hosts + net.switches.len()).for_each(|n| switches[p.of(NodeId(n as u32))] += 1);
                assert_eq!(switches, vec![net.switches.len() / parts; parts], "cores spread evenly");
            }
        }
    }

    #[test]
    fn a_run_of_flows_keeps_every_host_with_its_switch() {
        // k = 4: 4 pods of 4 hosts, 8 ToRs of 2. In 3 parts the pods do not divide evenly and the ToRs do
        // not either (3, 3, 2): `new` cuts between hosts; `keeping_hosts` takes the uneven ToR cut.
        let net = fat_tree(4);
        let separated = |p: &Partition| {
            net.ports.iter().filter(|pt| net.is_host(pt.node) && p.of(pt.node) != p.of(pt.peer)).count()
        };
        assert!(separated(&Partition::new(&net, 3).unwrap()) > 0);
        for parts in [2, 3, 5, 8] {
            let p = Partition::keeping_hosts(&net, parts).unwrap();
            assert_eq!(separated(&p), 0, "{parts} parts");
            assert_eq!(p.parts(), parts);
        }
        let err = Partition::keeping_hosts(&net, 9).unwrap_err();
        assert!(err.contains("it has 8 groups of a switch and its hosts (use at most 8 parts)"), "{err}");
    }

    #[test]
    fn pods_that_do_not_divide_evenly_are_cut_at_their_tors() {
        // 12 pods of 36 hosts in 8 parts would be 2 pods against 1; 72 ToRs of 6 hosts are 9 a part.
        let net = fat_tree(12);
        let p = Partition::new(&net, 8).unwrap();
        assert_eq!((p.level(), p.hosts_per_part(432)), (2, vec![54; 8]));
        // Switches spread level by level: 9 ToRs, 9 aggregation switches and 4 or 5 of the 36 cores a part.
        let mut switches = vec![0; 8];
        (432..432 + net.switches.len()).for_each(|n| switches[p.of(NodeId(n as u32))] += 1);
        switches.sort_unstable();
        assert_eq!(switches, [22, 22, 22, 22, 23, 23, 23, 23]);
        // 12 pods in 3 parts divide evenly: between pods.
        let p = Partition::new(&net, 3).unwrap();
        assert_eq!((p.level(), p.hosts_per_part(432)), (3, vec![144; 3]));
    }

    #[test]
    fn more_parts_than_pods_cut_inside_the_pods() {
        let net = fat_tree(4); // 4 pods of 2 ToRs of 2 hosts
        let p = Partition::new(&net, 8).unwrap();
        assert_eq!(p.level(), 2);
        assert_eq!(p.hosts_per_part(16), vec![2; 8]);
        assert_eq!(p.lookahead(), Some(Time::ns(500)), "ToR-aggregation links (1 us) and agg-core (500 ns) cut");
        let p = Partition::new(&net, 16).unwrap();
        assert_eq!(p.level(), 1);
        assert!(Partition::new(&net, 17).is_err() && Partition::new(&net, 0).is_err());
    }

    /// 10G host links of 100 ns, 40G core links of 300 ns.
    fn leaf_spine(leaves: u32, spines: u32, hosts_per_leaf: u32) -> LeafSpine {
        LeafSpine {
            leaves,
            spines,
            hosts_per_leaf,
            edge_rate: BitsPerSec::gbps(10),
            core_rate: BitsPerSec::gbps(40),
            edge_delay: Time::ns(100),
            core_delay: Time::ns(300),
            switch_delay: Time::ZERO,
        }
    }

    #[test]
    fn a_leaf_spine_is_cut_between_leaves_and_a_lone_switch_between_hosts() {
        let ls = leaf_spine(6, 3, 4);
        let net = Network::build(&ls.spec(), &NetParams::default()).unwrap();
        let p = Partition::new(&net, 3).unwrap();
        assert_eq!((p.level(), p.hosts_per_part(24)), (2, vec![8; 3]));
        // Two leaves a part, one spine a part: each spine keeps its links to its own part's two leaves.
        assert_eq!(p.cut_ports(), 2 * 3 * 4);
        assert_eq!(p.lookahead(), Some(Time::ns(300)));
        let one = LeafSpine { leaves: 1, spines: 1, ..ls };
        let net = Network::build(&one.spec(), &NetParams::default()).unwrap();
        let p = Partition::new(&net, 2).unwrap();
        assert_eq!((p.level(), p.hosts_per_part(4)), (1, vec![2, 2]));
        assert_eq!(p.lookahead(), Some(Time::ns(100)));
    }

    #[test]
    fn each_node_apart_but_across_links_without_delay() {
        let ls = leaf_spine(2, 2, 3);
        let net = Network::build(&ls.spec(), &NetParams::default()).unwrap();
        let p = Partition::each_node(&net).unwrap();
        assert_eq!((p.parts(), p.cut_ports(), p.lookahead()), (10, net.ports.len(), Some(Time::ns(100))));
        // Host links without delay: each leaf with its hosts, each spine alone.
        let net = Network::build(&LeafSpine { edge_delay: Time::ZERO, ..ls }.spec(), &NetParams::default()).unwrap();
        let p = Partition::each_node(&net).unwrap();
        assert_eq!((p.parts(), p.cut_ports(), p.lookahead()), (4, 2 * 2 * 2, Some(Time::ns(300))));
        assert_eq!(p.hosts_per_part(6), vec![3, 3, 0, 0]);
        assert!((0..3).all(|h| p.of(NodeId(h)) == p.of(NodeId(6))), "h0–h2 with leaf 0");
    }

    #[test]
    fn a_cut_link_without_delay_is_refused_by_name() {
        // Host links without delay stay inside the parts (a run of flows keeps hosts with their leaf): fine.
        let ls = leaf_spine(2, 2, 3);
        let net = Network::build(&LeafSpine { edge_delay: Time::ZERO, ..ls }.spec(), &NetParams::default()).unwrap();
        let p = Partition::keeping_hosts(&net, 2).unwrap();
        assert_eq!(p.lookahead(), Some(Time::ns(300)));
        p.refuse_zero_lookahead(&net).unwrap();
        // Leaf–spine links without delay (the Homa thesis's fabric) are cut: refused, naming one.
        let net = Network::build(&LeafSpine { core_delay: Time::ZERO, ..ls }.spec(), &NetParams::default()).unwrap();
        let p = Partition::keeping_hosts(&net, 2).unwrap();
        assert_eq!(p.lookahead(), Some(Time::ZERO));
        let err = p.refuse_zero_lookahead(&net).unwrap_err();
        assert!(
            err.starts_with("the link leaf0 - spine1 joins two of the 2 parts and has no propagation delay"),
            "{err}"
        );
    }
}
