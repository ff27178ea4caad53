//! What a run would cost, checked before anything is built: a fabric or a workload too large for this
//! machine gets an error naming the key and the estimate, not `memory allocation failed` (an abort) half an
//! hour into building routes; and a workload whose flows could not finish in any reasonable time is refused
//! unless the run has a stop (`stop.time` or `stop.max_events`).
//!
//! The memory model counts what grows with the fabric and the workload; its constants were fitted to the
//! peak RSS of `tailsim run` (fat trees k = 8…40, see docs/config.md; 10^5 → 3·10^6 flows: +0.7 B a flow at the peak, finished flows' records being on
//! disk (metrics/records.rs), 8 B counted; the flow-level Ideal keeps every flow: +237 B a flow measured,
//! 320 B counted). It is meant to be within a factor of two, enough to tell a run that fits from one that
//! cannot.

use super::build::{Ctx, R};
use crate::units::BitsPerSec;

/// Bytes per host (NIC port, host state, transport tables), per switch, per link direction (a port with its
/// 8 class queues), per (switch, leaf) route entry (net/routing.rs; leaves counted as min(hosts, switches),
/// an upper bound), and per flow: in a packet-level run a
/// finished flow's record goes to disk, so what remains is a trace of concurrency (the transport's slots,
/// the event queue); the flow-level Ideal holds every flow for its greedy SRPT.
const HOST_BYTES: u64 = 1_500;
const SWITCH_BYTES: u64 = 1_000;
/// A port's record is 960 B since a host NIC's order sits in line in it and each FIFO class's oldest packet
/// does (docs/performance-log.md, changes 45 and 47).
const PORT_BYTES: u64 = 1_156;
const ROUTE_BYTES: u64 = 2;
const FLOW_BYTES: u64 = 8;
const FLOW_LEVEL_FLOW_BYTES: u64 = 320;
/// What a run needs besides (the binary, the allocator's arenas, the event queue's first pages).
const BASE_BYTES: u64 = 4 << 20;

/// Packet hops a run may take without a stop condition: about a day of simulation at the benchmark's
/// 5 M packet-hops per second on one core.
const MAX_UNSTOPPED_PACKET_HOPS: f64 = 4e11;

/// The fabric's size and the memory it needs.
#[derive(Clone, Copy, Debug)]
pub struct Footprint {
    pub hosts: u64,
    pub switches: u64,
    pub links: u64,
}

impl Footprint {
    pub fn bytes(&self) -> u64 {
        BASE_BYTES
            + self.hosts * HOST_BYTES
            + self.switches * SWITCH_BYTES
            + 2 * self.links * PORT_BYTES
            + self.switches * self.switches.min(self.hosts) * ROUTE_BYTES
    }
}

/// The memory a run may use: `TAILSIM_MAX_MEMORY` (a size such as "64GB", or "none"), else 90 % of the
/// machine's memory (the smaller of /proc/meminfo's MemTotal and the cgroup's memory.max). None: no limit
/// (set to "none", or neither could be read).
pub fn max_memory() -> Result<Option<u64>, String> {
    if let Ok(v) = std::env::var("TAILSIM_MAX_MEMORY") {
        let v = v.trim();
        if v.eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        return super::units::parse_size(v)
            .map(Some)
            .map_err(|e| format!("TAILSIM_MAX_MEMORY: {e} (expected a size such as \"64GB\", or \"none\")"));
    }
    let total = crate::run::proc_kib_field("/proc/meminfo", "MemTotal:");
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|s| s.trim().parse::<u64>().ok());
    Ok(match (total, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
    .map(|m| m / 10 * 9))
}

fn gb(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MB", b as f64 / (1u64 << 20) as f64)
    }
}

/// Refuse a fabric that cannot be simulated here: more nodes than the 32-bit ids hold, or more memory than
/// the limit. `key` is the key that sized it (e.g. "topology.k").
pub(super) fn check_fabric(c: &Ctx, key: &str, f: Footprint) -> R<()> {
    let nodes = f.hosts + f.switches;
    if nodes > u32::MAX as u64 / 2 || f.links > u32::MAX as u64 / 4 {
        return Err(c.err(
            key,
            format!(
                "{} hosts, {} switches and {} links: more than tailsim's 32-bit ids hold",
                f.hosts, f.switches, f.links
            ),
        ));
    }
    check_memory(c, key, f.bytes(), &format!("{} hosts, {} switches, {} links", f.hosts, f.switches, f.links))
}

/// Refuse `bytes` (what `what` needs) above the memory limit.
pub(super) fn check_memory(c: &Ctx, key: &str, bytes: u64, what: &str) -> R<()> {
    let limit = max_memory().map_err(|m| c.err(key, m))?;
    match limit {
        Some(limit) if bytes > limit => Err(c.err(
            key,
            format!(
                "{what} need about {} of memory, more than the {} this run may use; make it smaller, or raise \
                 the limit (--max-memory, or TAILSIM_MAX_MEMORY=64GB / none)",
                gb(bytes),
                gb(limit)
            ),
        )),
        _ => Ok(()),
    }
}

/// A workload of `flows` flows (`packets` in all, the largest `max_size` bytes): refused if their records
/// would not fit in memory (at `flows_key`), or, when nothing stops the run, if they could never all finish:
/// a flow so large it would take more than an hour at the host rate, or so many packets that the run would
/// take more than a day (at `key`).
pub(super) fn check_flows(
    c: &Ctx,
    (flows_key, key): (&str, &str),
    flows: f64,
    packets: f64,
    max_size: Option<u64>,
    host_rate: BitsPerSec,
) -> R<()> {
    let per_flow = if c.flow_level { FLOW_LEVEL_FLOW_BYTES } else { FLOW_BYTES };
    let what = if c.flow_level {
        format!("{flows:.0} flows (the flow-level Ideal holds every flow at once)")
    } else {
        format!("{flows:.0} flows")
    };
    check_memory(c, flows_key, (flows * per_flow as f64) as u64, &what)?;
    if c.stopped {
        return Ok(());
    }
    let hint = "set `stop.time` or `stop.max_events` to run it for a while";
    if let Some(max) = max_size {
        let secs = max as f64 * 8.0 / host_rate.0.max(1) as f64;
        if secs > 3600.0 {
            return Err(c.err(
                key,
                format!(
                    "a flow of {max} B (this workload's largest size) takes {:.0} h at the host rate: the run \
                     would not end; {hint}",
                    secs / 3600.0,
                ),
            ));
        }
    }
    // Each packet crosses up to 5 links in a fat tree; 2 is a fair mean for the usual fabrics.
    let hops = packets * 2.0;
    if hops > MAX_UNSTOPPED_PACKET_HOPS {
        return Err(c.err(
            key,
            format!(
                "about {packets:.2e} packets in all (flows × mean size): more than a day of simulation; {hint}, or \
                 lower the number of flows"
            ),
        ));
    }
    Ok(())
}
