//! Routes indexed by the destination's leaf (net/routing.rs) against the per-host breadth-first search they
//! replaced: the same equal-cost next hops, in the same order, at every (switch, destination) of fat trees
//! k = 4…16, htsim-shaped fat trees, leaf-spines and a small irregular fabric, healthy and with failed links.

use tailsim::net::routing::{build, reference_tables};
use tailsim::net::topology::{FatTree, LeafSpine, LinkSpec, SwitchSpec, TopologySpec};
use tailsim::net::{NetParams, Network};
use tailsim::units::{BitsPerSec, NodeId, Time};

fn net(spec: &TopologySpec) -> Network {
    Network::build(spec, &NetParams::default()).expect("builds")
}

/// `hosts` hosts, then `switches` switches named s0, s1, …, and 10 Gbps links between the given nodes.
fn small(hosts: u32, switches: u32, links: &[(u32, u32)]) -> TopologySpec {
    let l =
        |&(a, b): &(u32, u32)| LinkSpec { a: NodeId(a), b: NodeId(b), rate: BitsPerSec::gbps(10), delay: Time::us(1) };
    TopologySpec {
        hosts,
        switches: (0..switches).map(|i| SwitchSpec { name: format!("s{i}"), delay: Time::ZERO }).collect(),
        links: links.iter().map(l).collect(),
    }
}

/// Every (switch, host) of `n`'s current routes equals the reference computed on the same graph.
fn same_as_reference(n: &Network, what: &str) -> usize {
    let adj = n.adjacency();
    let reference = reference_tables(&adj, n.n_hosts());
    let mut nonempty = 0;
    for (s, per_host) in reference.iter().enumerate() {
        for (h, want) in per_host.iter().enumerate() {
            let got = n.routes.candidates(s, NodeId(h as u32));
            assert_eq!(got, &want[..], "{what}: switch {} to host {h}", n.switches[s].name);
            nonempty += !got.is_empty() as usize;
        }
    }
    nonempty
}

#[test]
fn fat_trees_k4_to_k16_route_as_the_per_host_search() {
    for k in [4, 6, 8, 10, 12, 14, 16] {
        let spec = FatTree::k_ary(k, BitsPerSec::gbps(100), Time::us(1), Time::ZERO).spec().unwrap();
        let n = net(&spec);
        let cells = same_as_reference(&n, &format!("k = {k}"));
        assert_eq!(cells, n.switches.len() * n.n_hosts(), "k = {k}: every switch reaches every host");
        // One two-byte entry per (switch, leaf), not eight bytes per (switch, host); a switch of a fat tree has
        // at most k + 2 distinct next-hop sets (8 bytes each) of at most k/2 ports.
        let (sw, k) = (n.switches.len(), k as usize);
        let leaves = k * k / 2;
        let bound = sw * (leaves + 1) * 2 + sw * (k + 2) * (8 + 4 * k / 2 + 4) + n.n_hosts() * 16 + leaves * 4;
        assert!(n.routes.heap_bytes() <= bound, "k = {k}: {} > {bound} bytes", n.routes.heap_bytes());
    }
}

#[test]
fn oversubscribed_and_bundled_fat_trees_route_as_the_per_host_search() {
    // htsim's shapes: 8 hosts per edge, 8 edges and 8 aggregation switches per pod, 16 pods, 64 cores (the
    // side-by-side 1,024-host file), and a 2:1 core.
    let mut ft = FatTree::k_ary(4, BitsPerSec::gbps(100), Time::us(1), Time::ZERO);
    (ft.pods, ft.hosts_per_edge, ft.edges_per_pod, ft.aggs_per_pod, ft.cores) = (16, 8, 8, 8, 64);
    same_as_reference(&net(&ft.spec().unwrap()), "1024 hosts");
    (ft.pods, ft.hosts_per_edge, ft.edges_per_pod, ft.aggs_per_pod, ft.cores) = (4, 4, 4, 4, 8);
    same_as_reference(&net(&ft.spec().unwrap()), "2:1 core");
}

#[test]
fn leaf_spines_route_as_the_per_host_search() {
    for (leaves, spines, hpl) in [(2, 1, 1), (4, 2, 8), (9, 4, 16), (16, 8, 4)] {
        let ls = LeafSpine {
            leaves,
            spines,
            hosts_per_leaf: hpl,
            edge_rate: BitsPerSec::gbps(10),
            core_rate: BitsPerSec::gbps(40),
            edge_delay: Time::us(1),
            core_delay: Time::us(1),
            switch_delay: Time::ZERO,
        };
        let n = net(&ls.spec());
        assert_eq!(same_as_reference(&n, "leaf-spine"), n.switches.len() * n.n_hosts());
    }
}

#[test]
fn an_irregular_fabric_routes_as_the_per_host_search() {
    // A ring of five switches with a chord, hosts on three of them (one switch with none): paths of unequal
    // length, sets of one and two next hops.
    let hosts = [(0, 0), (1, 0), (2, 2), (3, 2), (4, 3), (5, 3)].map(|(h, s)| (h, 6 + s));
    let ring = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (1, 3)].map(|(a, b)| (6 + a, 6 + b));
    let t = small(6, 5, &[&hosts[..], &ring[..]].concat());
    same_as_reference(&net(&t), "ring");
}

#[test]
fn routes_after_failures_match_the_per_host_search() {
    let spec = FatTree::k_ary(8, BitsPerSec::gbps(100), Time::us(1), Time::ZERO).spec().unwrap();
    let mut n = net(&spec);
    let id = |n: &Network, name: &str| NodeId((n.switch_named(name).unwrap() + n.n_hosts()) as u32);
    // An aggregation–core link both ways, an edge–aggregation link one way, a host's NIC one way (that host
    // becomes unreachable), and a leaf's port to another host (no route at its leaf only).
    let (agg0, core0, edge1, agg1) = (id(&n, "agg0"), id(&n, "core0"), id(&n, "edge1"), id(&n, "agg1"));
    let edge0 = id(&n, "edge0");
    assert!(n.set_link(agg0, core0, Some(false), None, None, false));
    assert!(n.set_link(edge1, agg1, Some(false), None, None, true));
    assert!(n.set_link(NodeId(0), edge0, Some(false), None, None, true));
    assert!(n.set_link(edge0, NodeId(1), Some(false), None, None, true));
    n.reconverge();
    same_as_reference(&n, "after failures");
    let s_edge0 = edge0.idx() - n.n_hosts();
    assert!(n.routes.candidates(s_edge0, NodeId(0)).is_empty(), "host 0's NIC is down: no route anywhere");
    assert!(n.routes.candidates(0, NodeId(0)).is_empty());
    assert!(n.routes.candidates(s_edge0, NodeId(1)).is_empty(), "edge0's port to host 1 is down");
    assert!(!n.routes.candidates(id(&n, "core5").idx() - n.n_hosts(), NodeId(1)).is_empty());
    // The healthy routes stay for ideal completion times.
    assert_eq!(n.healthy_routes().candidates(s_edge0, NodeId(1)).len(), 1);
}

#[test]
fn an_unreachable_host_is_named_in_order() {
    // Two switches of two hosts each and no link between them: host 0 is the first host some switch (s1)
    // cannot reach.
    let t = small(4, 2, &[(0, 4), (1, 4), (2, 5), (3, 5)]);
    let err = Network::build(&t, &NetParams::default()).err().expect("refused");
    assert_eq!(err, "host 0 is unreachable from switch s1");
    let adj = net(&small(4, 2, &[(0, 4), (1, 4), (2, 5), (3, 5), (4, 5)])).adjacency();
    assert!(build(&adj, 4, true).is_ok());
}
