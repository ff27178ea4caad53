//! Topology builders. Each produces a plain `TopologySpec` (hosts first, then switches, then links), which
//! `Network::build` instantiates; a topology file is just another way to write a spec.

use crate::units::{BitsPerSec, NodeId, Time};

#[derive(Clone, Debug)]
pub struct SwitchSpec {
    pub name: String,
    pub delay: Time,
}

#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: NodeId,
    pub b: NodeId,
    pub rate: BitsPerSec,
    pub delay: Time,
}

#[derive(Clone, Debug, Default)]
pub struct TopologySpec {
    pub hosts: u32,
    pub switches: Vec<SwitchSpec>,
    pub links: Vec<LinkSpec>,
}

impl TopologySpec {
    fn add_switches(&mut self, prefix: &str, n: u32, delay: Time) -> u32 {
        let first = self.hosts + self.switches.len() as u32;
        for i in 0..n {
            self.switches.push(SwitchSpec { name: format!("{prefix}{i}"), delay });
        }
        first
    }
    fn link(&mut self, a: u32, b: u32, rate: BitsPerSec, delay: Time) {
        self.links.push(LinkSpec { a: NodeId(a), b: NodeId(b), rate, delay });
    }
}

/// Two-tier leaf-spine: host h sits under leaf h / hosts_per_leaf; every leaf connects to every spine.
#[derive(Clone, Debug)]
pub struct LeafSpine {
    pub leaves: u32,
    pub spines: u32,
    pub hosts_per_leaf: u32,
    pub edge_rate: BitsPerSec,
    pub core_rate: BitsPerSec,
    pub edge_delay: Time,
    pub core_delay: Time,
    pub switch_delay: Time,
}

impl LeafSpine {
    pub fn spec(&self) -> TopologySpec {
        let mut t = TopologySpec { hosts: self.leaves * self.hosts_per_leaf, ..Default::default() };
        let leaf0 = t.add_switches("leaf", self.leaves, self.switch_delay);
        let spine0 = t.add_switches("spine", self.spines, self.switch_delay);
        for h in 0..t.hosts {
            t.link(h, leaf0 + h / self.hosts_per_leaf, self.edge_rate, self.edge_delay);
        }
        for l in 0..self.leaves {
            for s in 0..self.spines {
                t.link(leaf0 + l, spine0 + s, self.core_rate, self.core_delay);
            }
        }
        t
    }
}

/// One tier of a 3-tier fat tree: the links below this tier's switches and the switches' forwarding delay.
#[derive(Clone, Debug)]
pub struct Tier {
    pub down_rate: BitsPerSec,
    pub down_delay: Time,
    pub switch_delay: Time,
}

/// (hosts, switches, links) of a fat tree of [pods, hosts per edge, edges per pod, aggregation switches per
/// pod, cores], in 64 bits: the config checks size a fabric with it before building one (a k-ary tree's
/// k³/4 hosts overflow 32 bits long before its memory is refused).
pub fn fat_tree_counts([pods, hosts_per_edge, edges_per_pod, aggs_per_pod, cores]: [u64; 5]) -> (u64, u64, u64) {
    let edges = pods * edges_per_pod;
    let hosts = edges * hosts_per_edge;
    (hosts, edges + pods * aggs_per_pod + cores, hosts + edges * aggs_per_pod + pods * cores)
}

/// Three-tier fat tree (edge, aggregation, core), in htsim's numbering: host h under edge h / hosts_per_edge,
/// edge e in pod e / edges_per_pod; every edge connects to every aggregation switch of its pod; aggregation
/// switch j of each pod connects to cores j, j + A, j + 2A, … (A = aggs_per_pod), the strided wiring of
/// current htsim, so that per-core statistics and ECMP choices line up with htsim runs.
#[derive(Clone, Debug)]
pub struct FatTree {
    pub pods: u32,
    pub hosts_per_edge: u32,
    pub edges_per_pod: u32,
    pub aggs_per_pod: u32,
    pub cores: u32,
    /// Tier 0 = edge (links to hosts), 1 = aggregation (links to edges), 2 = core (links to aggregation).
    pub tiers: [Tier; 3],
}

impl FatTree {
    /// The classic k-ary fat tree: k pods, k/2 edge and k/2 aggregation switches per pod, k/2 hosts per edge,
    /// (k/2)² cores: k³/4 hosts at full bisection.
    pub fn k_ary(k: u32, rate: BitsPerSec, delay: Time, switch_delay: Time) -> FatTree {
        let t = Tier { down_rate: rate, down_delay: delay, switch_delay };
        FatTree {
            pods: k,
            hosts_per_edge: k / 2,
            edges_per_pod: k / 2,
            aggs_per_pod: k / 2,
            cores: k * k / 4,
            tiers: [t.clone(), t.clone(), t],
        }
    }

    /// (hosts, switches, links), counted in 64 bits before anything is built.
    pub fn counts(&self) -> (u64, u64, u64) {
        fat_tree_counts(
            [self.pods, self.hosts_per_edge, self.edges_per_pod, self.aggs_per_pod, self.cores].map(u64::from),
        )
    }

    pub fn spec(&self) -> Result<TopologySpec, String> {
        if self.aggs_per_pod == 0 || !self.cores.is_multiple_of(self.aggs_per_pod) {
            return Err(format!(
                "{} cores cannot be split evenly over {} aggregation switches per pod",
                self.cores, self.aggs_per_pod
            ));
        }
        let edges = self.pods * self.edges_per_pod;
        let mut t = TopologySpec { hosts: edges * self.hosts_per_edge, ..Default::default() };
        let [t0, t1, t2] = &self.tiers;
        let edge0 = t.add_switches("edge", edges, t0.switch_delay);
        let agg0 = t.add_switches("agg", self.pods * self.aggs_per_pod, t1.switch_delay);
        let core0 = t.add_switches("core", self.cores, t2.switch_delay);
        for h in 0..t.hosts {
            t.link(h, edge0 + h / self.hosts_per_edge, t0.down_rate, t0.down_delay);
        }
        for e in 0..edges {
            let pod = e / self.edges_per_pod;
            for j in 0..self.aggs_per_pod {
                t.link(edge0 + e, agg0 + pod * self.aggs_per_pod + j, t1.down_rate, t1.down_delay);
            }
        }
        let g = self.cores / self.aggs_per_pod;
        for pod in 0..self.pods {
            for j in 0..self.aggs_per_pod {
                for c in 0..g {
                    t.link(
                        agg0 + pod * self.aggs_per_pod + j,
                        core0 + j + c * self.aggs_per_pod,
                        t2.down_rate,
                        t2.down_delay,
                    );
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn k8_fat_tree_has_the_right_size() {
        let t = FatTree::k_ary(8, BitsPerSec::gbps(10), Time::us(1), Time::ZERO).spec().unwrap();
        assert_eq!(t.hosts, 128);
        assert_eq!(t.switches.len(), 32 + 32 + 16);
        // 128 host links + 32 edges × 4 aggs + 32 aggs × 4 cores
        assert_eq!(t.links.len(), 128 + 128 + 128);
    }
    #[test]
    fn cores_are_wired_with_htsim_stride() {
        let t = FatTree::k_ary(8, BitsPerSec::gbps(10), Time::us(1), Time::ZERO).spec().unwrap();
        let (agg0, core0) = (128 + 32, 128 + 64);
        // Aggregation switch 1 of pod 0 reaches cores 1, 5, 9, 13 (as tailsim_workload::FatTreeShape says).
        let cores: Vec<u32> =
            t.links.iter().filter(|l| l.a.0 == agg0 + 1 && l.b.0 >= core0).map(|l| l.b.0 - core0).collect();
        assert_eq!(cores, vec![1, 5, 9, 13]);
    }
    #[test]
    fn leaf_spine_144() {
        let ls = LeafSpine {
            leaves: 9,
            spines: 4,
            hosts_per_leaf: 16,
            edge_rate: BitsPerSec::gbps(10),
            core_rate: BitsPerSec::gbps(40),
            edge_delay: Time::ns(2700),
            core_delay: Time::ns(200),
            switch_delay: Time::ZERO,
        };
        let t = ls.spec();
        assert_eq!(t.hosts, 144);
        assert_eq!(t.links.len(), 144 + 36);
    }
}
