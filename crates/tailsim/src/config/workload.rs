//! The `[[workload]]` tables: from each to a traffic generator (traffic/), with every value checked.

use super::build::{only_applicable, Ctx, R};
use super::schema::WorkloadCfg;
use crate::engine::Rng;
use crate::metrics::Framing;
use crate::traffic::{Deadlines, Generator, Pattern, Sizes};
use crate::units::{BitsPerSec, Time};
use std::sync::Arc;
use tailsim_workload::{CdfOptions, Interp, SizeCdf};

fn sizes(c: &Ctx, w: &WorkloadCfg, key: &str) -> R<Sizes> {
    if let Some(list) = &w.sizes {
        if w.cdf.is_some() || w.size.is_some() {
            return Err(c.err(&format!("{key}.sizes"), "give one of `cdf`, `size` or `sizes`"));
        }
        if list.is_empty() {
            return Err(c.err(&format!("{key}.sizes"), "an empty list: give at least one size"));
        }
        if list.iter().any(|s| s.0 == 0) {
            return Err(c.err(&format!("{key}.sizes"), "a flow must have at least 1 byte"));
        }
        return Ok(Sizes::Choice(list.iter().map(|s| s.0).collect()));
    }
    match (&w.cdf, &w.size) {
        (Some(_), Some(_)) => Err(c.err(&format!("{key}.size"), "give either `cdf` or `size`, not both")),
        (None, None) => Err(c.err(
            key,
            "missing: expected `cdf` (a distribution), `size` (a fixed flow size) or `sizes` (a list, equally likely)",
        )),
        (None, Some(s)) if s.0 == 0 => Err(c.err(&format!("{key}.size"), "a flow must have at least 1 byte")),
        (None, Some(s)) => Ok(Sizes::Fixed(s.0)),
        (Some(name), None) => {
            let interp = match w.cdf_interp.as_deref() {
                None => None,
                Some("step") => Some(Interp::Step),
                Some("linear") => Some(Interp::Linear),
                Some(o) => {
                    return Err(
                        c.err(&format!("{key}.cdf_interp"), format!("expected \"step\" or \"linear\", found \"{o}\""))
                    )
                }
            };
            let opts = CdfOptions { interp, unit_bytes: w.cdf_unit_bytes };
            let cdf = if SizeCdf::builtin_names().contains(&name.as_str())
                && interp.is_none()
                && w.cdf_unit_bytes.is_none()
            {
                SizeCdf::builtin(name)
            } else if SizeCdf::builtin_names().contains(&name.as_str()) {
                return Err(c.err(
                    &format!("{key}.cdf"),
                    "a built-in CDF has its own sampling rule; copy the file to change it",
                ));
            } else {
                let p = c.path(name);
                if !p.exists() {
                    return Err(c.err(
                        &format!("{key}.cdf"),
                        format!(
                            "\"{name}\" is neither a built-in CDF ({}) nor an existing file",
                            SizeCdf::builtin_names().join(", ")
                        ),
                    ));
                }
                SizeCdf::from_file(&p, opts)
            }
            .map_err(|e| c.err(&format!("{key}.cdf"), e.to_string()))?;
            Ok(Sizes::Cdf(Arc::new(cdf)))
        }
    }
}

/// pFabric's deadline workload keys of a Poisson generator.
fn deadlines(c: &Ctx, w: &WorkloadCfg, key: &str, seed: u64, i: usize) -> R<Option<Deadlines>> {
    let Some(mean) = w.deadline_mean else {
        for (k, set) in
            [("deadline_below", w.deadline_below.is_some()), ("deadline_min_slack", w.deadline_min_slack.is_some())]
        {
            if set {
                return Err(c.err(&format!("{key}.{k}"), "applies only with `deadline_mean`"));
            }
        }
        return Ok(None);
    };
    if mean.0 == Time::ZERO {
        return Err(c.err(&format!("{key}.deadline_mean"), "must be positive"));
    }
    let min_slack = w.deadline_min_slack.unwrap_or(1.25);
    if !(min_slack >= 1.0 && min_slack.is_finite()) {
        return Err(c.err(
            &format!("{key}.deadline_min_slack"),
            format!("must be at least 1 (a multiple of the ideal FCT), found {min_slack}"),
        ));
    }
    Ok(Some(Deadlines {
        mean: mean.0,
        below: w.deadline_below.map_or(200_000, |s| s.0),
        min_slack,
        rng: Rng::new(seed, "workload-deadlines", i as u64),
    }))
}

const KINDS: &str =
    "\"poisson\", \"incast\", \"permutation\", \"trace\", \"retrieval\", \"workflow\" or \"background\"";

/// The keys of `kind = "retrieval"`; a workflow adds its shape's.
const REQUEST_RESPONSE_KEYS: &[&str] = &[
    "sizes",
    "cdf",
    "cdf_interp",
    "cdf_unit_bytes",
    "size",
    "rate",
    "clients",
    "servers",
    "request",
    "count",
    "start",
    "until",
];

pub(super) fn generator(
    c: &Ctx,
    w: &WorkloadCfg,
    i: usize,
    seed: u64,
    hosts: u32,
    host_rate: BitsPerSec,
    fr: Framing,
) -> R<Generator> {
    let key = format!("workload[{i}]");
    let k = |f: &str| format!("{key}.{f}");
    let kind = c.need(&w.kind, &k("kind"), KINDS)?;
    let set = [
        ("cdf", w.cdf.is_some()),
        ("cdf_interp", w.cdf_interp.is_some()),
        ("cdf_unit_bytes", w.cdf_unit_bytes.is_some()),
        ("size", w.size.is_some()),
        ("load", w.load.is_some()),
        ("pattern", w.pattern.is_some()),
        ("flows", w.flows.is_some()),
        ("start", w.start.is_some()),
        ("until", w.until.is_some()),
        ("senders", w.senders.is_some()),
        ("dst", w.dst.is_some()),
        ("interval", w.interval.is_some()),
        ("count", w.count.is_some()),
        ("path", w.path.is_some()),
        ("deadline_mean", w.deadline_mean.is_some()),
        ("deadline_below", w.deadline_below.is_some()),
        ("deadline_min_slack", w.deadline_min_slack.is_some()),
        ("sizes", w.sizes.is_some()),
        ("rate", w.rate.is_some()),
        ("clients", w.clients.is_some()),
        ("servers", w.servers.is_some()),
        ("sources", w.sources.is_some()),
        ("destinations", w.destinations.is_some()),
        ("request", w.request.is_some()),
        ("shape", w.shape.is_some()),
        ("parts", w.parts.is_some()),
        ("fanout", w.fanout.is_some()),
        ("per_source", w.per_source.is_some()),
    ];
    let workflow_keys: Vec<&str> = REQUEST_RESPONSE_KEYS.iter().copied().chain(["shape", "parts", "fanout"]).collect();
    let allowed: &[&str] = match kind.as_str() {
        "poisson" => &[
            "sizes",
            "cdf",
            "cdf_interp",
            "cdf_unit_bytes",
            "size",
            "load",
            "pattern",
            "flows",
            "start",
            "until",
            "deadline_mean",
            "deadline_below",
            "deadline_min_slack",
        ],
        "incast" => {
            &["sizes", "cdf", "cdf_interp", "cdf_unit_bytes", "size", "senders", "dst", "interval", "count", "start"]
        }
        "permutation" => &["size", "start"],
        "trace" => &["path", "start"],
        "retrieval" => REQUEST_RESPONSE_KEYS,
        "workflow" => &workflow_keys,
        "background" => {
            &["sizes", "cdf", "cdf_interp", "cdf_unit_bytes", "size", "sources", "destinations", "per_source", "start"]
        }
        _ => &[],
    };
    if !allowed.is_empty() {
        only_applicable(c, &key, &kind, &set, allowed)?;
    }
    let start = w.start.map_or(Time::ZERO, |d| d.0);
    if hosts < 2 {
        return Err(c.err(&key, "a workload needs at least two hosts"));
    }
    let check_host = |h: u32, f: &str| {
        if h >= hosts {
            Err(c.err(&k(f), format!("host {h} does not exist (the topology has {hosts})")))
        } else {
            Ok(h)
        }
    };
    match kind.as_str() {
        "poisson" => {
            let load = c.need(&w.load, &k("load"), "the offered load, a fraction of host link capacity in (0, 1)")?;
            if !(load > 0.0 && load < 1.0) {
                return Err(c.err(&k("load"), format!("must be in (0, 1), found {load}")));
            }
            if w.flows.is_none() && w.until.is_none() {
                return Err(c.err(&key, "missing: give `flows` (a number of flows) or `until` (when arrivals stop)"));
            }
            let sizes = sizes(c, w, &key)?;
            let (mean_s, mean_pkts) = sizes.means(fr.mss);
            let wire = mean_s + mean_pkts * (fr.header + fr.wire_overhead) as f64;
            let per_host_per_ps = load * host_rate.0 as f64 / (8.0 * wire) * 1e-12;
            let pattern = match w.pattern.as_deref().unwrap_or("all-to-all") {
                "all-to-all" => Pattern::AllToAll,
                "permutation" => Pattern::Permutation(Generator::derangement(
                    hosts,
                    &mut Rng::new(seed, "workload-permutation", i as u64),
                )),
                o => {
                    return Err(
                        c.err(&k("pattern"), format!("expected \"all-to-all\" or \"permutation\", found \"{o}\""))
                    )
                }
            };
            let deadlines = deadlines(c, w, &key, seed, i)?;
            let mut gap_rng = Rng::new(seed, "workload-gaps", i as u64);
            let mean_gap_ps = 1.0 / (per_host_per_ps * hosts as f64);
            let first = start.0 as f64 + gap_rng.exp(mean_gap_ps);
            Ok(Generator::Poisson {
                hosts,
                pattern,
                sizes,
                mean_gap_ps,
                next_at: first,
                remaining: w.flows,
                until: w.until.map(|d| d.0),
                gap_rng,
                size_rng: Rng::new(seed, "workload-sizes", i as u64),
                pair_rng: Rng::new(seed, "workload-pairs", i as u64),
                deadlines,
            })
        }
        "incast" => {
            let senders = c.need(&w.senders, &k("senders"), "the number of senders")?;
            if senders == 0 || senders >= hosts {
                return Err(c.err(&k("senders"), format!("must be between 1 and {} (hosts − 1)", hosts - 1)));
            }
            let dst = w.dst.map(|d| check_host(d, "dst")).transpose()?;
            let count = w.count.unwrap_or(1);
            let interval = w.interval.map(|d| d.0).unwrap_or(Time::ZERO);
            if count > 1 && interval == Time::ZERO {
                return Err(c.err(&k("interval"), "missing: repeated incasts need an interval"));
            }
            Ok(Generator::Incast {
                hosts,
                senders,
                dst,
                sizes: sizes(c, w, &key)?,
                next_at: start,
                interval,
                remaining: count,
                rng: Rng::new(seed, "workload-incast", i as u64),
                size_rng: Rng::new(seed, "workload-sizes", i as u64),
            })
        }
        "permutation" => {
            let Sizes::Fixed(size) = sizes(c, w, &key)? else {
                return Err(c.err(&k("cdf"), "a permutation round needs a fixed `size`"));
            };
            let perm = Generator::derangement(hosts, &mut Rng::new(seed, "workload-permutation", i as u64));
            let flows = perm
                .iter()
                .enumerate()
                .map(|(s, &d)| tailsim_workload::TraceFlow {
                    id: None,
                    src: s as u32,
                    dst: d,
                    size_bytes: size,
                    start_ps: start.0,
                })
                .collect();
            Ok(Generator::List { flows, next: 0 })
        }
        "trace" => {
            let p = c.need(&w.path, &k("path"), "a flow trace (.csv, htsim .cm or .flows)")?;
            let mut flows = tailsim_workload::read_trace(&c.path(&p)).map_err(|e| c.err(&k("path"), e.to_string()))?;
            for (j, f) in flows.iter_mut().enumerate() {
                if f.src >= hosts || f.dst >= hosts {
                    return Err(c.err(
                        &k("path"),
                        format!(
                            "flow {} (entry {}) uses host {} but the topology has {hosts} hosts",
                            f.id.unwrap_or(j as u64),
                            j + 1,
                            f.src.max(f.dst)
                        ),
                    ));
                }
                f.start_ps += start.0;
            }
            flows.sort_by_key(|f| f.start_ps); // stable: file order among equal starts
            Ok(Generator::List { flows, next: 0 })
        }
        "retrieval" | "workflow" => super::jobs::workflows(c, w, &key, &kind, i, seed, hosts, sizes(c, w, &key)?),
        "background" => super::jobs::background(c, w, &key, i, seed, hosts, sizes(c, w, &key)?),
        o => Err(c.err(&k("kind"), format!("unknown kind \"{o}\"; expected {KINDS}"))),
    }
}
