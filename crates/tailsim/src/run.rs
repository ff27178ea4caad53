//! Running an experiment and writing its results directory.

use crate::config::{Experiment, OutputFormat};
use crate::metrics::latency::LatencySummary;
use crate::metrics::output::{write_atomic, write_csv_chunked, write_parquet_chunked, Chunks, Column, CHUNK_ROWS};
use crate::metrics::{deadline_stats, summarize, BucketStats, DeadlineStats};
use crate::net::ledger::{Fate, Origin};
use crate::net::port::DropReason;
use crate::sim::{Progress, StopReason};
use crate::transport::Transport;
use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Packets by origin and fate (the ledger's categories, net/ledger.rs) and drops by reason.
#[derive(Clone, Debug, Serialize)]
pub struct PacketCounts {
    /// Made by transports.
    pub created: u64,
    /// Consumed by transports at their destination.
    pub delivered: u64,
    pub dropped: u64,
    /// Live at the end: queued, in flight, or held by a regulator or a mechanism.
    pub in_flight: u64,
    /// Made by switch mechanisms (notices, couriers, control frames).
    pub made_by_switches: u64,
    /// Copies of packets made by mechanisms.
    pub copies: u64,
    /// Network packets consumed at hosts (notices, telemetry).
    pub sunk: u64,
    /// Consumed by mechanisms (link-local frames, copies no longer needed).
    pub absorbed: u64,
    /// `dropped_<reason>` for every drop reason (port::DropReason::ALL).
    #[serde(flatten)]
    pub drops: DropCounts,
    pub ecn_marked: u64,
    /// Data packets cut to their header at a switch (NDP).
    pub trimmed: u64,
}

/// Drops by reason, written as `dropped_<reason>` keys.
#[derive(Clone, Debug, Default)]
pub struct DropCounts(pub [u64; DropReason::COUNT]);

impl std::ops::Index<DropReason> for DropCounts {
    type Output = u64;
    fn index(&self, why: DropReason) -> &u64 {
        &self.0[why as usize]
    }
}

impl Serialize for DropCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(DropReason::COUNT))?;
        for why in DropReason::ALL {
            m.serialize_entry(&format!("dropped_{}", why.name()), &self[why])?;
        }
        m.end()
    }
}

/// What a run measured, written as summary.json.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub name: String,
    /// Names everything that determines the results (see `Experiment::run_id`): runs alike share it.
    /// Every table of a results directory carries it (parquet metadata `tailsim.run_id`), and summary.json
    /// lists each table's size (`files`), so that `tailsim.load` can tell a table of another run.
    pub run_id: String,
    pub tailsim_version: String,
    /// The build: a hash of the simulator's sources and Cargo.lock (build.rs).
    pub tailsim_build: String,
    pub seed: u64,
    pub stop_reason: StopReason,
    pub simulated_seconds: f64,
    pub wall_seconds: f64,
    pub events: u64,
    pub events_per_second: f64,
    pub packet_hops: u64,
    pub packet_hops_per_second: f64,
    pub peak_memory_bytes: Option<u64>,
    pub flows_started: u64,
    pub flows_finished: u64,
    pub packets: PacketCounts,
    pub buckets: Vec<BucketStats>,
    /// Retrieval and workflow workloads only: completion times by response size and by workflow shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<crate::metrics::jobs::JobSummary>,
    /// Deadline workloads only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlines: Option<DeadlineStats>,
    /// Receivers' downlinks: wasted bandwidth (idle with incomplete incoming flows) and utilization, from the
    /// end of warm-up to the last Poisson arrival (the open-loop period; without Poisson generators, to the
    /// end of the run); absent for flow-level runs (the Ideal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receivers: Option<crate::metrics::inbound::InboundStats>,
    /// QJUMP runs only: per regulated class, the bucket, its counters and the delivered packets' latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qjump: Option<QjumpSummary>,
    /// The transport's own counters (Homa: grants, RESENDs; pHost: tokens, expiries, downgrades; NDP: pulls,
    /// NACKs, trimmed headers; TCP: drop notices, once one arrived).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<serde_json::Value>,
    /// Each installed mechanism's counters, by name (net/mech/).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub mechanisms: serde_json::Map<String, serde_json::Value>,
    /// Network packets (notices, telemetry) received by hosts, summed over hosts; absent when none arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_sinks: Option<crate::net::HostSink>,
    pub config: serde_json::Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct QjumpSummary {
    pub network_epoch_us: f64,
    pub variant: String,
    pub anchor: String,
    pub excess: String,
    pub levels: Vec<QjumpLevelSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct QjumpLevelSummary {
    pub class: u8,
    pub level: u8,
    pub f: f64,
    pub epoch_us: f64,
    pub budget_bytes: u64,
    pub rate_mbps: f64,
    /// The calculator's fan-in switch latency, min(N, N/f)·P/r + ε.
    pub bound_us: f64,
    pub admitted: u64,
    pub policed: u64,
    pub held: u64,
    pub max_hold_us: f64,
    /// Data packets of the class: send to last bit at the destination.
    pub latency: LatencySummary,
    /// The last switch, last bit in to last bit out.
    pub last_hop: LatencySummary,
}

fn qjump_summary(q: &crate::net::regulator::Regulator) -> QjumpSummary {
    let levels = q
        .bounds
        .iter()
        .map(|l| {
            let st = &q.stats[l.class as usize];
            QjumpLevelSummary {
                class: l.class,
                level: l.level,
                f: l.f,
                epoch_us: l.epoch.micros(),
                budget_bytes: l.budget,
                rate_mbps: l.rate_bps / 1e6,
                bound_us: l.latency.micros(),
                admitted: st.admitted,
                policed: st.policed,
                held: st.held,
                max_hold_us: st.max_hold.micros(),
                latency: st.latency.summary(),
                last_hop: st.last_hop.summary(),
            }
        })
        .collect();
    let kebab = |s: String| {
        s.chars().fold(String::new(), |mut a, ch| {
            if ch.is_uppercase() && !a.is_empty() {
                a.push('-');
            }
            a.push(ch.to_ascii_lowercase());
            a
        })
    };
    QjumpSummary {
        network_epoch_us: q.network_epoch.micros(),
        variant: kebab(format!("{:?}", q.variant)),
        anchor: kebab(format!("{:?}", q.anchor)),
        excess: kebab(format!("{:?}", q.excess)),
        levels,
    }
}

/// FNV-1a, 64 bit, continued from `h` over `bytes`: stable across platforms and Rust versions.
fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Peak resident memory of this process (Linux VmHWM), if known.
pub fn peak_memory_bytes() -> Option<u64> {
    proc_kib_field("/proc/self/status", "VmHWM:")
}

/// Resident memory of this process now (Linux VmRSS), if known.
pub fn resident_memory_bytes() -> Option<u64> {
    proc_kib_field("/proc/self/status", "VmRSS:")
}

/// How many parts a run on `threads` threads is cut into, and the option its errors name: `parts` if given
/// (at least one part per thread), else one per thread (docs/parallel.md). `opt(name, value)` spells an
/// option as the caller's user writes it (`--parts 28`, `parts=28`; with no value, its bare name), so the
/// command line and the Python package share one rule and its messages.
pub fn parts_of_run(
    threads: usize,
    parts: Option<usize>,
    opt: impl Fn(&str, Option<usize>) -> String,
) -> Result<(usize, String), String> {
    if threads == 0 {
        return Err(format!("{}: give 1 or more", opt("threads", None)));
    }
    match parts {
        None => Ok((threads, opt("threads", Some(threads)))),
        Some(0) => Err(format!("{}: give 1 or more", opt("parts", None))),
        Some(p) if p < threads => Err(format!(
            "{}: fewer parts than {} (a thread runs one part or more)",
            opt("parts", Some(p)),
            opt("threads", Some(threads))
        )),
        Some(p) => Ok((p, opt("parts", Some(p)))),
    }
}

/// Whether `parts` whole worlds fit the memory limit (`--max-memory`, TAILSIM_MAX_MEMORY, else 90 % of the
/// machine), judged once the first is built: `world` is what building it added to this process's resident
/// memory. Every part of a parallel run holds a whole world (docs/parallel.md).
pub fn check_parallel_memory(parts: usize, world: u64) -> Result<(), String> {
    let limit = crate::config::limits::max_memory()?;
    let (Some(limit), Some(now)) = (limit, resident_memory_bytes()) else { return Ok(()) };
    let need = now + (parts as u64).saturating_sub(1) * world;
    if need <= limit {
        return Ok(());
    }
    let mb = |b: u64| b as f64 / (1u64 << 20) as f64;
    Err(format!(
        "every part of a parallel run holds a whole world (this one took about {:.0} MB): {parts} of them need \
         about {:.0} MB, more than the {:.0} MB this run may use; use fewer parts (--threads, --parts), or raise \
         the limit (--max-memory, or TAILSIM_MAX_MEMORY=64GB / none)",
        mb(world),
        mb(need),
        mb(limit)
    ))
}

/// A "Field:   N kB" line of a Linux /proc file, in bytes (/proc/self/status, /proc/meminfo).
pub(crate) fn proc_kib_field(path: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Experiment {
    /// Run to a stop condition and summarise. Conservation is checked at the end of every run.
    pub fn run(&mut self, on_progress: &mut dyn FnMut(&Progress)) -> Result<Summary, String> {
        self.run_interruptible(&mut |p| {
            on_progress(p);
            true
        })
    }

    /// As `run`, but the callback may return false to stop early (the summary then says `interrupted`).
    pub fn run_interruptible(&mut self, on_progress: &mut dyn FnMut(&Progress) -> bool) -> Result<Summary, String> {
        let t0 = Instant::now();
        let stop =
            if self.flow_level { self.world.run_flow_level(self.stop) } else { self.world.run(self.stop, on_progress) };
        let wall = t0.elapsed().as_secs_f64();
        self.world.check_conservation().map_err(|e| format!("packet conservation violated: {e}"))?;
        self.summary(stop, wall)
    }

    /// Make ready to run as `parts` parts (nothing to do for one): refuse what a parallel run cannot do yet,
    /// check that the fabric can be cut so, and that `parts` whole worlds fit the memory limit (`before`:
    /// this process's resident memory before this experiment was loaded). The messages name `arg` (the flag
    /// or keyword that asked for parts) and `origin` (the experiment's file). The command line and the Python
    /// package both call this, before they load the other parts.
    pub fn prepare_parts(&self, parts: usize, before: Option<u64>, arg: &str, origin: &str) -> Result<(), String> {
        if parts <= 1 {
            return Ok(());
        }
        if let Some(why) = self.world.parallel_refusal(&self.stop) {
            return Err(format!("{arg}: {origin}: {why}"));
        }
        self.parallel_cut(parts).map_err(|e| format!("{arg}: {origin}: {e}"))?;
        let world = resident_memory_bytes().zip(before).map_or(0, |(a, b)| a.saturating_sub(b));
        check_parallel_memory(parts, world).map_err(|e| format!("{arg}: {e}"))
    }

    /// The cut of a run in `parts` parts (docs/parallel.md): as `Partition::new` cuts the fabric, but a run
    /// of flows keeps every host with its switch (a receiver's accounting reads its downlink), so it takes at
    /// most as many parts as the fabric has ToRs. An error says why a cut cannot be made.
    pub fn parallel_cut(&self, parts: usize) -> Result<crate::net::partition::Partition, String> {
        use crate::net::partition::Partition;
        if self.flow_level {
            return Err("the flow-level Ideal has no packets to share between threads".into());
        }
        let cut = if self.world.makes_flows() {
            Partition::keeping_hosts(&self.world.net, parts)
        } else {
            Partition::new(&self.world.net, parts)
        }?;
        cut.refuse_zero_lookahead(&self.world.net)?;
        Ok(cut)
    }

    /// Run as `others.len() + 1` parts, the fabric cut by `parallel_cut`, on `threads` threads (1 up to one
    /// per part; a thread with several parts runs them in turn, window by window: `World::run_parallel`).
    /// `others` are this experiment loaded as many more times: every part runs in a whole world. The results
    /// are the serial run's; afterwards this experiment's world holds them but cannot run on. Conservation is
    /// checked in every part.
    pub fn run_parallel(
        &mut self,
        others: Vec<Experiment>,
        threads: usize,
        on_progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<(Summary, crate::sim::Parallel), String> {
        let cut = self.parallel_cut(others.len() + 1)?;
        let t0 = Instant::now();
        let others = others.into_iter().map(|e| e.world).collect();
        let par = self.world.run_parallel(others, &cut, self.stop, threads, on_progress)?;
        let wall = t0.elapsed().as_secs_f64();
        Ok((self.summary(par.reason, wall)?, par))
    }

    pub fn summary(&self, stop: StopReason, wall: f64) -> Result<Summary, String> {
        let records = |e: io::Error| format!("cannot read the flow records back: {e}");
        let w = &self.world;
        let ports = &w.net.ports;
        let sum = |f: fn(&crate::net::port::PortStats) -> u64| ports.iter().map(|p| f(&p.stats)).sum::<u64>();
        let events = w.ev.processed();
        Ok(Summary {
            name: self.name.clone(),
            run_id: self.run_id(),
            tailsim_version: env!("CARGO_PKG_VERSION").to_string(),
            tailsim_build: env!("TAILSIM_BUILD").to_string(),
            seed: self.seed,
            stop_reason: stop,
            simulated_seconds: w.now.secs(),
            wall_seconds: wall,
            events,
            events_per_second: events as f64 / wall.max(1e-9),
            packet_hops: w.net.packet_hops,
            packet_hops_per_second: w.net.packet_hops as f64 / wall.max(1e-9),
            peak_memory_bytes: peak_memory_bytes(),
            flows_started: w.records.started() as u64,
            flows_finished: w.flows_finished,
            packets: PacketCounts {
                created: w.pk.created(),
                delivered: w.pk.ended_as(Fate::Delivered),
                dropped: w.pk.ended_as(Fate::Dropped),
                in_flight: w.pk.in_flight(),
                made_by_switches: w.pk.made[Origin::Switch as usize],
                copies: w.pk.made[Origin::Copy as usize],
                sunk: w.pk.ended_as(Fate::Sunk),
                absorbed: w.pk.ended_as(Fate::Absorbed),
                drops: DropCounts(std::array::from_fn(|i| ports.iter().map(|p| p.stats.drops[i]).sum())),
                ecn_marked: sum(|s| s.ecn_marks),
                trimmed: sum(|s| s.trims),
            },
            buckets: summarize(&w.records, &self.buckets, self.warmup).map_err(records)?,
            jobs: crate::metrics::jobs::summary(&w.jobs, self.warmup),
            deadlines: deadline_stats(&w.records, self.warmup).map_err(records)?,
            receivers: if self.flow_level {
                None
            } else {
                w.inbound_at_last_arrival.map(|s| s.stats()).or_else(|| w.inbound.stats(&w.net, w.now))
            },
            qjump: w.net.qjump.as_ref().map(qjump_summary),
            transport: match &w.transport {
                Transport::Tcp(t) => (t.stats.notices + t.stats.stale_notices + t.stats.ecn_cuts > 0)
                    .then(|| serde_json::to_value(t.stats).ok())
                    .flatten(),
                Transport::Homa(t) => serde_json::to_value(t.stats).ok(),
                Transport::Phost(t) => serde_json::to_value(t.stats).ok(),
                Transport::Ndp(t) => serde_json::to_value(t.stats).ok(),
                Transport::Rdma(t) => serde_json::to_value(t.stats).ok(),
            },
            mechanisms: w.net.mechanism_summaries().into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            host_sinks: {
                let total = w.net.hosts.iter().fold(crate::net::HostSink::default(), |a, h| crate::net::HostSink {
                    notices: a.notices + h.sink.notices,
                    telemetry: a.telemetry + h.sink.telemetry,
                    raw: a.raw + h.sink.raw,
                    raw_bytes: a.raw_bytes + h.sink.raw_bytes,
                });
                (total != crate::net::HostSink::default()).then_some(total)
            },
            config: serde_json::to_value(&self.resolved).unwrap_or(serde_json::Value::Null),
        })
    }

    /// The per-flow table's rows `rows` (the table is written in chunks of these).
    pub fn flow_columns_of(&self, rows: std::ops::Range<usize>) -> io::Result<Vec<Column>> {
        let r = &self.world.records.read_started(rows)?;
        let ps = |f: &dyn Fn(&crate::metrics::FlowRecord) -> i64| r.iter().map(f).collect::<Vec<i64>>();
        let fl = |f: &dyn Fn(&crate::metrics::FlowRecord) -> f64| r.iter().map(f).collect::<Vec<f64>>();
        Ok(vec![
            Column::I64("flow_id", ps(&|x| x.id as i64)),
            Column::I64("src", ps(&|x| x.src.0 as i64)),
            Column::I64("dst", ps(&|x| x.dst.0 as i64)),
            Column::I64("size_bytes", ps(&|x| x.size as i64)),
            Column::I64("start_ps", ps(&|x| x.start.0 as i64)),
            Column::OptI64("end_ps", r.iter().map(|x| x.end.map(|e| e.0 as i64)).collect()),
            Column::OptI64("fct_ps", r.iter().map(|x| x.fct().map(|e| e.0 as i64)).collect()),
            Column::I64("ideal_fct_ps", ps(&|x| x.ideal.0 as i64)),
            Column::F64("start_us", fl(&|x| x.start.micros())),
            Column::OptF64("fct_us", r.iter().map(|x| x.fct().map(|t| t.micros())).collect()),
            Column::F64("ideal_fct_us", fl(&|x| x.ideal.micros())),
            Column::OptF64("slowdown", r.iter().map(|x| x.slowdown()).collect()),
            Column::Bool("finished", r.iter().map(|x| x.end.is_some()).collect()),
            Column::OptF64("deadline_us", r.iter().map(|x| x.deadline.map(|d| d.micros())).collect()),
            Column::I64("retransmits", ps(&|x| x.retransmits as i64)),
            Column::I64("timeouts", ps(&|x| x.timeouts as i64)),
            Column::Str("role", r.iter().map(|x| x.role.name().to_string()).collect()),
            Column::OptI64("retrieval_id", r.iter().map(|x| x.role.retrieval().map(|q| q as i64)).collect()),
            Column::Str("path", r.iter().map(|x| self.path_names(x)).collect()),
        ])
    }

    /// The switches a flow's data crossed, by name, space-separated, as a trace's `path` column takes them
    /// (so another run or simulator can be given the same paths); empty where packets choose their own
    /// (spraying, adaptive load balancing) and for the flow-level Ideal.
    fn path_names(&self, r: &crate::metrics::FlowRecord) -> String {
        let net = &self.world.net;
        if self.flow_level {
            return String::new();
        }
        let hash = crate::transport::flow_hash(r.id, r.src, r.dst);
        net.flow_switches(r.src, r.dst, hash, r.path)
            .map_or(String::new(), |s| s.iter().map(|&n| net.node_name(n)).collect::<Vec<_>>().join(" "))
    }

    /// The per-port table (drops, marks, queue occupancy).
    pub fn port_columns(&self) -> Vec<Column> {
        let w = &self.world;
        let net = &w.net;
        let name = |n: crate::units::NodeId| net.node_name(n);
        let p = &net.ports;
        let i = |f: &dyn Fn(&crate::net::port::Port) -> i64| p.iter().map(f).collect::<Vec<i64>>();
        let over_arrivals = w.occupancy_at_last_arrival.as_deref();
        let (avg_arrivals, max_arrivals): (Vec<_>, Vec<_>) = match over_arrivals {
            Some(o) => o.iter().map(|&(avg, max)| (Some(avg), Some(max as i64))).unzip(),
            None => (vec![None; p.len()], vec![None; p.len()]),
        };
        vec![
            Column::I64("port_id", (0..p.len() as i64).collect()),
            Column::Str("node", p.iter().map(|x| name(x.node)).collect()),
            Column::Str("peer", p.iter().map(|x| name(x.peer)).collect()),
            Column::F64("rate_gbps", p.iter().map(|x| x.rate.0 as f64 / 1e9).collect()),
            Column::I64("tx_packets", i(&|x| x.stats.tx_packets as i64)),
            Column::I64("tx_bytes", i(&|x| x.stats.tx_bytes as i64)),
        ]
        .into_iter()
        .chain(DropReason::ALL.map(|why| Column::I64(why.column(), i(&|x| x.stats.drops(why) as i64))))
        .chain([
            Column::I64("ecn_marks", i(&|x| x.stats.ecn_marks as i64)),
            Column::I64("trims", i(&|x| x.stats.trims as i64)),
            Column::I64("max_queue_bytes", i(&|x| x.stats.max_bytes as i64)),
            Column::F64("avg_queue_bytes", p.iter().map(|x| x.avg_bytes(w.now)).collect()),
            // Over the arrival window only (end of warm-up to the last open-loop arrival); empty for runs
            // without one (traces, incasts) and for runs stopped before it ended.
            Column::OptF64("avg_queue_bytes_arrivals", avg_arrivals),
            Column::OptI64("max_queue_bytes_arrivals", max_arrivals),
        ])
        .collect()
    }

    /// One row per retrieval (request–response workloads).
    pub fn retrieval_columns(&self) -> io::Result<Vec<Column>> {
        crate::metrics::jobs::retrieval_columns(&self.world.jobs, &self.world.records)
    }

    /// One row per workflow (a lone retrieval is a workflow of one part).
    pub fn workflow_columns(&self) -> Vec<Column> {
        crate::metrics::jobs::workflow_columns(&self.world.jobs)
    }

    /// The queue-occupancy samples (only with `output.queue_sample`).
    pub fn queue_columns(&self) -> Vec<Column> {
        let q = &self.world.queue_samples;
        vec![
            Column::F64("time_us", q.iter().map(|s| s.0.micros()).collect()),
            Column::I64("port_id", q.iter().map(|s| s.1 as i64).collect()),
            Column::I64("bytes", q.iter().map(|s| s.2 as i64).collect()),
        ]
    }

    /// The run's id: FNV-1a, in hex, of everything that determines its results: the tailsim version and
    /// build (a hash of the simulator's sources and Cargo.lock, see build.rs), the resolved configuration, and
    /// the contents of every file it references. Two runs share it exactly when they must give the same
    /// results; a sweep reuses a finished point only if its id is the one the point would have now.
    pub fn run_id(&self) -> String {
        let text = format!(
            "{}\n{}\n{}",
            env!("CARGO_PKG_VERSION"),
            env!("TAILSIM_BUILD"),
            toml::to_string(&self.resolved).unwrap_or_default()
        );
        let mut h = fnv1a(FNV_OFFSET, text.as_bytes());
        for p in &self.inputs {
            // A file read at build time and gone since: its absence changes the id too.
            h = fnv1a(h, &std::fs::read(p).unwrap_or_else(|_| b"\0missing".to_vec()));
        }
        format!("{h:016x}")
    }

    /// Where results go when no directory is given: `output.dir`, else `results/<name>`; with overrides
    /// (`--set`, a seed), their text is added (`results/<name>@load=0.5,seed=2`, or a hash of it when long), so
    /// that runs of other settings never replace each other's results.
    pub fn default_out_dir(&self, sets: &[String]) -> PathBuf {
        let base = self.out_dir.clone().unwrap_or_else(|| format!("results/{}", self.name));
        let sets: Vec<&str> = sets.iter().map(|s| s.trim()).filter(|s| !s.starts_with("output.dir")).collect();
        if sets.is_empty() {
            return PathBuf::from(base);
        }
        let text = sets.join(",");
        let clean: String =
            text.chars().map(|c| if c.is_ascii_alphanumeric() || "._=,+-".contains(c) { c } else { '_' }).collect();
        let suffix = if clean.len() <= 80 {
            clean
        } else {
            let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
            format!("{h:016x}")
        };
        PathBuf::from(format!("{}@{suffix}", base.trim_end_matches('/')))
    }

    /// Write flows, ports and summary.json into `dir` as one whole: into a new directory beside it, renamed
    /// into place at the end, so a reader sees the previous run's directory or this one, never a mix. A
    /// previous results directory (one with a summary.json) there is replaced; anything else is refused.
    pub fn write_results(&self, dir: &Path, summary: &Summary) -> io::Result<()> {
        let name = dir
            .file_name()
            .filter(|n| *n != "..")
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the results directory must end in a name"))?;
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let replace = match std::fs::read_dir(dir) {
            Ok(mut entries) => {
                if !dir.join("summary.json").is_file() && entries.next().is_some() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "it exists and is not a tailsim results directory (no summary.json): not replacing it",
                    ));
                }
                true
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) if dir.exists() => return Err(io::Error::new(e.kind(), format!("not a directory ({e})"))),
            Err(e) => return Err(e),
        };
        std::fs::create_dir_all(parent)?;
        let stamp = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        );
        let tmp = parent.join(format!(".{}.tmp-{stamp}", name.to_string_lossy()));
        std::fs::create_dir(&tmp)?;
        let res = self.write_tables(&tmp, summary).and_then(|()| {
            if replace {
                let old = parent.join(format!(".{}.old-{stamp}", name.to_string_lossy()));
                std::fs::rename(dir, &old)?;
                std::fs::rename(&tmp, dir)?;
                std::fs::remove_dir_all(&old)
            } else {
                std::fs::rename(&tmp, dir)
            }
        });
        if res.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        res
    }

    /// What every Parquet table carries, so that a table on its own says where it came from: the run id it
    /// shares with summary.json (checked by `tailsim.load`), the version and build, the commit the build was
    /// made from (if it was built from a git checkout), the seed, and the resolved configuration with its hash.
    fn table_metadata(&self, summary: &Summary) -> Vec<(&'static str, String)> {
        let config = serde_json::to_string(&summary.config).unwrap_or_default();
        let hash = fnv1a(FNV_OFFSET, config.as_bytes());
        vec![
            ("tailsim.run_id", summary.run_id.clone()),
            ("tailsim.version", summary.tailsim_version.clone()),
            ("tailsim.build", summary.tailsim_build.clone()),
            ("tailsim.commit", env!("TAILSIM_COMMIT").to_string()),
            ("tailsim.name", summary.name.clone()),
            ("tailsim.seed", summary.seed.to_string()),
            ("tailsim.config_hash", format!("{hash:016x}")),
            ("tailsim.config", config),
        ]
    }

    fn write_tables(&self, dir: &Path, summary: &Summary) -> io::Result<()> {
        // One table at a time, each built just before it is written; the flows table in chunks too, so its
        // columns never exist whole beside the records (docs/performance-log.md, "Memory of long runs").
        let mut files = serde_json::Map::new();
        let meta = self.table_metadata(summary);
        let mut write_chunks = |name: &str, header: &[Column], chunks: &mut Chunks| -> io::Result<()> {
            let file = match self.format {
                OutputFormat::Parquet => format!("{name}.parquet"),
                OutputFormat::Csv => format!("{name}.csv"),
            };
            let path = dir.join(&file);
            match self.format {
                OutputFormat::Parquet => write_parquet_chunked(&path, name, &meta, header, chunks)?,
                OutputFormat::Csv => write_csv_chunked(&path, header, chunks)?,
            }
            files.insert(file, std::fs::metadata(&path)?.len().into());
            Ok(())
        };
        let flows = self.world.records.len();
        write_chunks("flows", &self.flow_columns_of(0..0)?, &mut |emit| {
            (0..flows)
                .step_by(CHUNK_ROWS)
                .try_for_each(|lo| emit(&self.flow_columns_of(lo..flows.min(lo + CHUNK_ROWS))?))
        })?;
        let mut write = |name: &str, cols: Vec<Column>| write_chunks(name, &cols, &mut |emit| emit(&cols));
        write("ports", self.port_columns())?;
        if !self.world.queue_samples.is_empty() {
            write("queues", self.queue_columns())?;
        }
        if !self.world.jobs.workflows.is_empty() {
            write("retrievals", self.retrieval_columns()?)?;
            write("workflows", self.workflow_columns())?;
        }
        for (name, cols) in self.world.net.mechanism_tables().into_iter().chain(self.world.transport.tables()) {
            write(name, cols)?;
        }
        for (file, bytes) in self.world.net.write_mechanism_files(dir)? {
            files.insert(file, bytes.into());
        }
        let mut json = serde_json::to_value(summary).map_err(io::Error::other)?;
        json["files"] = files.into();
        // Written last: its presence marks a complete results directory.
        write_atomic(&dir.join("summary.json"), |f| {
            serde_json::to_writer_pretty(&mut *f, &json).map_err(io::Error::other)?;
            io::Write::write_all(f, b"\n")
        })
    }
}

/// How far along a run is, for progress bars and ETAs (the CLI's line, the Python package's bar).
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    horizon_secs: Option<f64>,
    expected_flows: Option<u64>,
}

impl Completion {
    /// The fraction done: the larger of the simulated-time and finished-flow fractions, since the run ends at
    /// whichever comes first (a safety-net `stop.time` far beyond the flows' end must not set the ETA); None
    /// when neither is known.
    pub fn fraction(&self, p: &Progress) -> Option<f64> {
        let by_time = self.horizon_secs.filter(|h| *h > 0.0).map(|h| (p.now.secs() / h).min(1.0));
        let by_flows = self.expected_flows.filter(|n| *n > 0).map(|n| p.flows_finished as f64 / n as f64);
        match (by_time, by_flows) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Experiment {
    /// What the run's progress is measured against (`Completion::fraction`).
    pub fn completion(&self) -> Completion {
        Completion { horizon_secs: self.horizon().map(|t| t.secs()), expected_flows: self.expected_flows() }
    }

    /// The simulated time the run is expected to reach, if bounded.
    pub fn horizon(&self) -> Option<crate::units::Time> {
        self.stop.time.or_else(|| {
            self.world
                .generators
                .iter()
                .filter(|g| g.is_foreground()) // background traffic ends with the rest
                .map(|g| match g {
                    crate::traffic::Generator::Poisson { until, .. } => *until,
                    crate::traffic::Generator::Jobs(j) => j.until,
                    _ => None,
                })
                .try_fold(crate::units::Time::ZERO, |acc, u| u.map(|u| acc.max(u)))
        })
    }

    /// The number of flows the generators will release, if known in advance.
    pub fn expected_flows(&self) -> Option<u64> {
        self.world
            .generators
            .iter()
            .map(|g| match g {
                crate::traffic::Generator::Poisson { remaining, .. } => *remaining,
                crate::traffic::Generator::Incast { remaining, senders, .. } => Some(remaining * *senders as u64),
                crate::traffic::Generator::List { flows, .. } => Some(flows.len() as u64),
                // Workflows make a number of flows known only as they run; background flows are closed-loop.
                crate::traffic::Generator::Jobs(_) | crate::traffic::Generator::Background(_) => None,
            })
            .sum()
    }
}
