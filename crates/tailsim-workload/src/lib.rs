//! Workload inputs for tailsim, with no simulator dependencies: flow-size
//! distributions ([`SizeCdf`]), flow traces ([`TraceFlow`]), htsim's
//! connection-matrix and fat-tree files, the flow-size thresholds of
//! pFabric's M/G/1 priority-queue model ([`optimal_thresholds`]), and Homa's
//! division of priority levels and its unscheduled cutoffs
//! ([`homa_priority_split`]).
//!
//! Kept separate from the simulator so that these parsers and their data can
//! be tested, documented and reused (e.g. by scripts that generate traces)
//! on their own, and so that every workload file is validated with
//! line-numbered errors ([`WorkloadError`]) before a long run starts. See
//! `docs/workloads.md` for the built-in distributions and file formats.

mod builtin;
pub mod cdf;
pub mod error;
pub mod homa;
pub mod htsim;
pub mod tail;
pub mod thresholds;
pub mod trace;

pub use cdf::{builtins, Builtin, CdfOptions, Interp, SizeCdf};
pub use error::WorkloadError;
pub use homa::{
    homa_level_split, homa_priorities, homa_priority_split, homa_unscheduled_cutoffs, HomaPriorities,
    HomaPriorityParams, UnschedMode,
};
pub use htsim::{parse_cm, parse_flows, parse_topo, FatTreeShape, HtsimTier, HtsimTopo};
pub use tail::GeneralizedParetoTail;
pub use thresholds::{equal_count_thresholds, mg1_normalized_fct, optimal_thresholds};
pub use trace::{parse_trace_csv, read_trace, read_trace_nodes, TraceFlow, TraceRoute};

/// The 1-based numbers and trimmed text of the lines that carry data: blank
/// lines and `#` comments are skipped, so every format shares one comment
/// syntax and the line numbers in errors match what an editor shows.
pub(crate) fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}
