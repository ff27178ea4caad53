//! `output.pcap`: which ports' packets are captured (`net/mech/pcap.rs`), resolved against the built network.

use super::build::{node_named, Ctx, R};
use super::schema::{ExperimentConfig, PcapEntry};
use crate::metrics::Framing;
use crate::net::mech::pcap::Capture;
use crate::net::mech::Mech;
use crate::net::Network;
use crate::units::{NodeId, PortId};

/// Default bound on captured packets (about 40 MB of records).
const MAX_PACKETS: u64 = 1_000_000;

pub(super) fn install(c: &Ctx, cfg: &ExperimentConfig, fr: Framing, net: &mut Network) -> R<()> {
    let Some(entries) = &cfg.output.pcap else {
        if cfg.output.pcap_max_packets.is_some() {
            return Err(c.err("output.pcap_max_packets", "applies only with output.pcap"));
        }
        return Ok(());
    };
    let max = cfg.output.pcap_max_packets.unwrap_or(MAX_PACKETS);
    if max == 0 {
        return Err(c.err("output.pcap_max_packets", "must be at least 1"));
    }
    let hosts = net.n_hosts();
    let name = |n: NodeId| net.node_name(n);
    // Names as everywhere else in a configuration (a switch's exact name wins, else "h3" or "3").
    let node = |key: &str, s: &str| -> R<NodeId> {
        node_named(net.switches.iter().map(|sw| sw.name.as_str()), hosts as u32, s)
            .ok_or_else(|| c.err(key, format!("\"{s}\" is not a host (h0 … h{}) or a switch name", hosts - 1)))
    };
    // Both directions of every link named, in the order given, each once.
    let mut ports: Vec<PortId> = Vec::new();
    let both = |p: PortId, ports: &mut Vec<PortId>| {
        for q in [p, net.ports[p.idx()].reverse] {
            if !ports.contains(&q) {
                ports.push(q);
            }
        }
    };
    for (i, e) in entries.iter().enumerate() {
        let key = format!("output.pcap[{i}]");
        match e {
            PcapEntry::Node(s) if s == "hosts" => {
                for h in 0..hosts {
                    both(net.hosts[h].nic, &mut ports);
                }
            }
            PcapEntry::Node(s) => {
                let n = node(&key, s)?;
                let mine: Vec<PortId> =
                    (0..net.ports.len() as u32).map(PortId).filter(|p| net.ports[p.idx()].node == n).collect();
                for p in mine {
                    both(p, &mut ports);
                }
            }
            PcapEntry::Link(pair) => {
                let [a, b] = pair.as_slice() else {
                    return Err(c.err(&key, "a link is a pair of ends, e.g. [\"leaf0\", \"spine0\"]"));
                };
                let (a, b) = (node(&key, a)?, node(&key, b)?);
                let Some(p) = (0..net.ports.len() as u32)
                    .map(PortId)
                    .find(|p| net.ports[p.idx()].node == a && net.ports[p.idx()].peer == b)
                else {
                    return Err(c.err(&key, format!("no link between \"{}\" and \"{}\"", name(a), name(b))));
                };
                both(p, &mut ports);
            }
        }
    }
    let named: Vec<(PortId, String)> = ports
        .iter()
        .map(|&p| (p, format!("{}-{}", name(net.ports[p.idx()].node), name(net.ports[p.idx()].peer))))
        .collect();
    if named.len() > u16::MAX as usize {
        return Err(c.err("output.pcap", format!("{} ports: at most {} can be captured", named.len(), u16::MAX)));
    }
    let capture = Capture::new(named, net.ports.len(), max as usize, fr.mss as u32);
    net.install(Mech::Pcap(capture), ports);
    Ok(())
}
