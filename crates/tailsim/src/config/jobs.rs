//! Request–response workloads (`kind = "retrieval"`, `"workflow"`, `"background"`; traffic/jobs.rs): host
//! sets, rates, shapes, each checked with the key that is wrong.

use super::build::{Ctx, R};
use super::limits;
use super::schema::WorkloadCfg;
use crate::engine::Rng;
use crate::metrics::Framing;
use crate::traffic::jobs::{BackgroundGen, JobGen, Shape};
use crate::traffic::{Generator, Sizes};
use crate::units::{BitsPerSec, Time};

/// A set of hosts: a list of host numbers and "a-b" ranges (inclusive), "all", or "random:N" (N hosts drawn
/// with the run's seed from those not in `exclude`). Sorted, without duplicates.
fn host_set(c: &Ctx, v: &toml::Value, key: &str, hosts: u32, rng: &mut Rng, exclude: &[u32]) -> R<Vec<u32>> {
    let expected = "a list of host numbers and \"a-b\" ranges, \"all\", or \"random:N\"";
    let one = |item: &toml::Value, out: &mut Vec<u32>| -> R<()> {
        let (lo, hi) = match item {
            toml::Value::Integer(n) => (*n, *n),
            toml::Value::String(s) => {
                let num = |t: &str| t.trim().trim_start_matches('h').parse::<i64>().ok();
                match s.split_once('-') {
                    Some((a, b)) => match (num(a), num(b)) {
                        (Some(a), Some(b)) if a <= b => (a, b),
                        _ => return Err(c.err(key, format!("\"{s}\" is not a range \"a-b\" with a ≤ b"))),
                    },
                    None => match num(s) {
                        Some(n) => (n, n),
                        None => return Err(c.err(key, format!("found \"{s}\"; expected {expected}"))),
                    },
                }
            }
            other => return Err(c.err(key, format!("found {}; expected {expected}", other.type_str()))),
        };
        if lo < 0 || hi >= hosts as i64 {
            return Err(
                c.err(key, format!("host {} does not exist (the topology has {hosts}: 0–{})", hi.max(lo), hosts - 1))
            );
        }
        out.extend(lo as u32..=hi as u32);
        Ok(())
    };
    let mut out = Vec::new();
    match v {
        toml::Value::String(s) if s == "all" => out.extend(0..hosts),
        toml::Value::String(s) if s.starts_with("random:") => {
            let pool: Vec<u32> = (0..hosts).filter(|h| !exclude.contains(h)).collect();
            let n: usize = s["random:".len()..]
                .parse()
                .map_err(|_| c.err(key, format!("\"{s}\": expected \"random:N\" with N a number of hosts")))?;
            if n == 0 || n > pool.len() {
                return Err(
                    c.err(key, format!("\"{s}\": N must be between 1 and {} (the hosts available)", pool.len()))
                );
            }
            let mut pool = pool;
            for i in 0..n {
                let j = i + rng.below((pool.len() - i) as u32) as usize;
                pool.swap(i, j);
            }
            out.extend_from_slice(&pool[..n]);
        }
        toml::Value::Array(items) => {
            for item in items {
                one(item, &mut out)?;
            }
        }
        other => one(other, &mut out)?,
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(c.err(key, "an empty set of hosts"));
    }
    Ok(out)
}

/// Clients and servers (or sources and destinations). Neither given: every host, each talking to the others.
/// Only the first: the second is every other host. Both: they must not overlap.
fn two_sets(
    c: &Ctx,
    (a, b): (&Option<toml::Value>, &Option<toml::Value>),
    (ka, kb): (&str, &str),
    hosts: u32,
    rng: &mut Rng,
) -> R<(Vec<u32>, Vec<u32>)> {
    let first = match a {
        Some(v) => host_set(c, v, ka, hosts, rng, &[])?,
        None => (0..hosts).collect(),
    };
    let second = match b {
        Some(v) => host_set(c, v, kb, hosts, rng, &first)?,
        None if a.is_none() => (0..hosts).collect(),
        None => (0..hosts).filter(|h| first.binary_search(h).is_err()).collect(),
    };
    if second.is_empty() {
        return Err(c.err(ka, "covers every host, which leaves none for the other side; give both sets"));
    }
    if a.is_some() && b.is_some() {
        if let Some(h) = first.iter().find(|h| second.binary_search(h).is_ok()) {
            return Err(c.err(kb, format!("host {h} is also in `{}`: the two sets must not overlap", leaf(ka))));
        }
    }
    Ok((first, second))
}

fn leaf(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// `kind = "retrieval"` (a workflow of one) and `kind = "workflow"`.
#[allow(clippy::too_many_arguments)]
pub(super) fn workflows(
    c: &Ctx,
    w: &WorkloadCfg,
    key: &str,
    kind: &str,
    i: usize,
    seed: u64,
    hosts: u32,
    sizes: Sizes,
    (fr, host_rate): (Framing, BitsPerSec),
) -> R<Generator> {
    let k = |f: &str| format!("{key}.{f}");
    let rate = c.need(&w.rate, &k("rate"), "retrievals (or workflows) per second per client")?;
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(c.err(&k("rate"), format!("must be a positive number per second, found {rate}")));
    }
    if w.count.is_none() && w.until.is_none() {
        return Err(c.err(key, "missing: give `count` (a number of arrivals) or `until` (when arrivals stop)"));
    }
    if w.count == Some(0) {
        return Err(c.err(&k("count"), "must be at least 1"));
    }
    let mut roles = Rng::new(seed, "workload-roles", i as u64);
    let (clients, servers) = two_sets(c, (&w.clients, &w.servers), (&k("clients"), &k("servers")), hosts, &mut roles)?;
    let shape = if kind == "retrieval" {
        Shape::Single
    } else {
        match c.need(&w.shape, &k("shape"), "\"sequential\" or \"partition-aggregate\"")?.as_str() {
            "sequential" => {
                if w.fanout.is_some() {
                    return Err(c.err(&k("fanout"), "applies to shape \"partition-aggregate\" only"));
                }
                let parts = c.need(&w.parts, &k("parts"), "the number of retrievals in a sequential workflow")?;
                if parts == 0 {
                    return Err(c.err(&k("parts"), "must be at least 1"));
                }
                Shape::Sequential { parts }
            }
            "partition-aggregate" => {
                if w.parts.is_some() {
                    return Err(c.err(&k("parts"), "applies to shape \"sequential\" only (use `fanout`)"));
                }
                // A client that is also a server cannot retrieve from itself.
                let available =
                    clients.iter().map(|cl| servers.len() - servers.contains(cl) as usize).min().unwrap_or(0);
                if let Some(totals) = &w.totals {
                    if w.fanout.is_some() {
                        return Err(c.err(&k("totals"), "give `fanout` or `totals` (fan-out = total / size), not both"));
                    }
                    let totals: Vec<u64> = totals.iter().map(|s| s.0).collect();
                    let smallest = sizes.min_bytes().max(1);
                    if totals.is_empty() || totals.contains(&0) {
                        return Err(
                            c.err(&k("totals"), "a non-empty list of positive sizes, e.g. [\"32KB\", \"64KB\"]")
                        );
                    }
                    let most = totals.iter().map(|&t| ((t as f64 / smallest as f64).round() as u64).max(1)).max();
                    if let Some(f) = most.filter(|&f| f as usize > available) {
                        return Err(c.err(
                            &k("totals"),
                            format!(
                                "the largest total over the smallest size is a fan-out of {f}, more than the {available} \
                                 servers a client can reach"
                            ),
                        ));
                    }
                    Shape::PartitionTotal { totals }
                } else {
                    let fanouts = c.need(&w.fanout, &k("fanout"), "a list of fan-outs, e.g. [10, 20, 40]")?;
                    if fanouts.is_empty() || fanouts.contains(&0) {
                        return Err(c.err(&k("fanout"), "a non-empty list of positive fan-outs"));
                    }
                    if let Some(f) = fanouts.iter().find(|&&f| f as usize > available) {
                        return Err(c.err(
                            &k("fanout"),
                            format!("a fan-out of {f} exceeds the {available} servers a client can reach"),
                        ));
                    }
                    Shape::PartitionAggregate { fanouts }
                }
            }
            o => {
                return Err(
                    c.err(&k("shape"), format!("expected \"sequential\" or \"partition-aggregate\", found \"{o}\""))
                )
            }
        }
    };
    if w.request.is_some_and(|s| s.0 == 0) {
        return Err(c.err(&k("request"), "a request must have at least 1 byte"));
    }
    let start = w.start.map_or(Time::ZERO, |d| d.0);
    let request = w.request.map_or(10, |s| s.0);
    check_amount(c, w, key, (rate, clients.len(), start), &shape, &sizes, (request, fr.mss, host_rate))?;
    let mut gap_rng = Rng::new(seed, "workload-gaps", i as u64);
    let mean_gap_ps = 1e12 / (rate * clients.len() as f64);
    let first = start.0 as f64 + gap_rng.exp(mean_gap_ps);
    Ok(Generator::Jobs(Box::new(JobGen {
        clients,
        servers,
        shape,
        request,
        sizes,
        mean_gap_ps,
        next_at: first,
        remaining: w.count,
        until: w.until.map(|d| d.0),
        gap_rng,
        pick_rng: Rng::new(seed, "workload-pairs", i as u64),
        size_rng: Rng::new(seed, "workload-sizes", i as u64),
    })))
}

/// What retrievals or workflows amount to, for `limits::check_flows`: the arrivals (`count`, or `rate` per
/// client over [`start`, `until`), the fewer if both), each a number of retrievals of a request and a
/// response. Estimates, as the other workloads' (the packets in all, the largest response). The shape's
/// lists are not empty (checked above).
fn check_amount(
    c: &Ctx,
    w: &WorkloadCfg,
    key: &str,
    (rate, clients, start): (f64, usize, Time),
    shape: &Shape,
    sizes: &Sizes,
    (request, mss, host_rate): (u64, u64, BitsPerSec),
) -> R<()> {
    let by_time = w.until.map(|u| rate * clients as f64 * u.0 .0.saturating_sub(start.0) as f64 * 1e-12);
    let arrivals = match (w.count.map(|n| n as f64), by_time) {
        (Some(n), Some(t)) => n.min(t),
        (n, t) => n.or(t).unwrap_or(0.0),
    };
    let (resp_bytes, resp_pkts) = sizes.means(mss);
    let req_pkts = request.div_ceil(mss) as f64;
    let retrievals = match shape {
        Shape::Single => 1.0,
        Shape::Sequential { parts } => *parts as f64,
        Shape::PartitionAggregate { fanouts } => fanouts.iter().map(|&f| f as f64).sum::<f64>() / fanouts.len() as f64,
        Shape::PartitionTotal { totals } => {
            let mean_total = totals.iter().map(|&t| t as f64).sum::<f64>() / totals.len() as f64;
            (mean_total / resp_bytes.max(1.0)).round().max(1.0)
        }
    };
    let flows = 2.0 * arrivals * retrievals;
    let packets = arrivals * retrievals * (req_pkts + resp_pkts);
    let which = if w.count.is_some() { format!("{key}.count") } else { format!("{key}.until") };
    limits::check_flows(c, (&which, &which), flows, packets, Some(sizes.max_bytes()), host_rate)
}

/// `kind = "background"`: closed-loop flows from every source.
pub(super) fn background(
    c: &Ctx,
    w: &WorkloadCfg,
    key: &str,
    i: usize,
    seed: u64,
    hosts: u32,
    sizes: Sizes,
) -> R<Generator> {
    let k = |f: &str| format!("{key}.{f}");
    let mut roles = Rng::new(seed, "workload-roles", i as u64);
    let (sources, dests) =
        two_sets(c, (&w.sources, &w.destinations), (&k("sources"), &k("destinations")), hosts, &mut roles)?;
    let per_source = w.per_source.unwrap_or(1);
    if per_source == 0 {
        return Err(c.err(&k("per_source"), "must be at least 1"));
    }
    Ok(Generator::Background(Box::new(BackgroundGen {
        dests,
        per_source,
        sizes,
        start: w.start.map_or(Time::ZERO, |d| d.0),
        pending: true,
        streams: (0..sources.len()).map(|k| BackgroundGen::streams_of(seed, i, k)).collect(),
        sources,
    })))
}
