//! Retrieval and workflow results: the retrievals and workflows tables, and their summary by response size
//! (retrievals) and by workload and shape (workflows). Both leave out what started before the warm-up.

use super::output::Column;
use super::percentile;
use crate::traffic::jobs::Jobs;
use crate::units::Time;
use serde::Serialize;
use std::collections::BTreeMap;

/// Completion times of one group of retrievals or workflows, in microseconds.
#[derive(Clone, Debug, Serialize)]
pub struct TimeStats {
    pub count: usize,
    pub unfinished: usize,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl TimeStats {
    fn of(times: impl Iterator<Item = Option<Time>>) -> TimeStats {
        let mut count = 0;
        let mut v: Vec<f64> = Vec::new();
        for t in times {
            count += 1;
            v.extend(t.map(|t| t.micros()));
        }
        v.sort_by(f64::total_cmp);
        TimeStats {
            count,
            unfinished: count - v.len(),
            mean_us: if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 },
            p50_us: percentile(&v, 0.5),
            p99_us: percentile(&v, 0.99),
            p999_us: percentile(&v, 0.999),
            max_us: v.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// summary.json's `retrievals` (by response size, plus "all") and `workflows` (by workload index and shape).
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub retrievals: BTreeMap<String, TimeStats>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkflowStats {
    pub workload: u32,
    pub shape: &'static str,
    /// Retrievals per workflow ("all" sizes of fan-out together, then each fan-out).
    pub parts: String,
    #[serde(flatten)]
    pub time: TimeStats,
}

pub fn summary(jobs: &Jobs, warmup: Time) -> Option<JobSummary> {
    if jobs.workflows.is_empty() {
        return None;
    }
    let counted = |start: Option<Time>| start.is_some_and(|s| s >= warmup);
    let rs = || jobs.retrievals.iter().filter(|r| counted(r.start));
    let mut sizes: Vec<u64> = rs().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut retrievals = BTreeMap::new();
    retrievals.insert("all".to_string(), TimeStats::of(rs().map(|r| r.time())));
    if sizes.len() > 1 && sizes.len() <= 16 {
        for s in sizes {
            retrievals.insert(format!("{s}B"), TimeStats::of(rs().filter(|r| r.size == s).map(|r| r.time())));
        }
    }
    let mut workflows = Vec::new();
    let mut kinds: Vec<(u32, &'static str)> =
        jobs.workflows.iter().filter(|w| w.shape != "retrieval").map(|w| (w.workload, w.shape)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for (workload, shape) in kinds {
        let ws =
            || jobs.workflows.iter().filter(move |w| w.workload == workload && w.shape == shape && w.start >= warmup);
        let mut parts: Vec<u32> = ws().map(|w| w.parts).collect();
        parts.sort_unstable();
        parts.dedup();
        workflows.push(WorkflowStats {
            workload,
            shape,
            parts: "all".into(),
            time: TimeStats::of(ws().map(|w| w.time())),
        });
        if parts.len() > 1 {
            for p in parts {
                workflows.push(WorkflowStats {
                    workload,
                    shape,
                    parts: p.to_string(),
                    time: TimeStats::of(ws().filter(|w| w.parts == p).map(|w| w.time())),
                });
            }
        }
    }
    Some(JobSummary { retrievals, workflows })
}

/// The retrievals table; `timeouts` sums the request's and the response's (from the flow records).
pub fn retrieval_columns(jobs: &Jobs, records: &super::records::FlowRecords) -> std::io::Result<Vec<Column>> {
    let r = &jobs.retrievals;
    let i = |f: &dyn Fn(&crate::traffic::jobs::Retrieval) -> i64| r.iter().map(f).collect::<Vec<i64>>();
    let mut timeouts = vec![0i64; r.len()];
    records.for_each_chunk(|chunk| {
        for f in chunk {
            if let Some(q) = f.role.retrieval() {
                timeouts[q as usize] += f.timeouts as i64;
            }
        }
    })?;
    Ok(vec![
        Column::I64("retrieval_id", (0..r.len() as i64).collect()),
        Column::I64("workflow_id", i(&|x| x.workflow as i64)),
        Column::I64("client", i(&|x| x.client.0 as i64)),
        Column::I64("server", i(&|x| x.server.0 as i64)),
        Column::I64("size_bytes", i(&|x| x.size as i64)),
        Column::OptI64("start_ps", r.iter().map(|x| x.start.map(|t| t.0 as i64)).collect()),
        Column::OptI64("end_ps", r.iter().map(|x| x.end.map(|t| t.0 as i64)).collect()),
        Column::OptF64("time_us", r.iter().map(|x| x.time().map(|t| t.micros())).collect()),
        Column::F64("ideal_us", r.iter().map(|x| x.ideal.micros()).collect()),
        Column::Bool("finished", r.iter().map(|x| x.end.is_some()).collect()),
        Column::I64("timeouts", timeouts),
    ])
}

/// The workflows table.
pub fn workflow_columns(jobs: &Jobs) -> Vec<Column> {
    let w = &jobs.workflows;
    let i = |f: &dyn Fn(&crate::traffic::jobs::Workflow) -> i64| w.iter().map(f).collect::<Vec<i64>>();
    vec![
        Column::I64("workflow_id", (0..w.len() as i64).collect()),
        Column::I64("workload", i(&|x| x.workload as i64)),
        Column::Str("shape", w.iter().map(|x| x.shape.to_string()).collect()),
        Column::I64("client", i(&|x| x.client.0 as i64)),
        Column::I64("parts", i(&|x| x.parts as i64)),
        Column::I64("start_ps", i(&|x| x.start.0 as i64)),
        Column::OptI64("end_ps", w.iter().map(|x| x.end.map(|t| t.0 as i64)).collect()),
        Column::OptF64("time_us", w.iter().map(|x| x.time().map(|t| t.micros())).collect()),
        Column::F64("ideal_us", w.iter().map(|x| x.ideal.micros()).collect()),
        Column::Bool("finished", w.iter().map(|x| x.end.is_some()).collect()),
    ]
}
