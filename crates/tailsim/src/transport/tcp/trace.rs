//! The congestion-window trace (`output.cwnd_trace = [flow ids]`): for each named flow, one row per ACK the
//! sender processes and per timeout, with the window after it (cwnd.parquet). It is what ns-3's
//! `CongestionWindow` trace source gives, and what checks a congestion control against a hand computation
//! or another simulator packet by packet.

use crate::metrics::output::Column;
use crate::units::Time;

/// Why a row was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// An ACK (new or duplicate) was processed.
    Ack,
    /// The retransmission timer fired.
    Timeout,
}

#[derive(Clone, Copy, Debug)]
struct Row {
    at: Time,
    flow: u64,
    event: TraceEvent,
    cwnd: f64,
    ssthresh: f64,
    pipe: u32,
    una: u32,
    nxt: u32,
}

/// The flows to trace and their rows so far.
#[derive(Default)]
pub struct CwndTrace {
    /// Flow ids, sorted.
    flows: Vec<u64>,
    rows: Vec<Row>,
}

/// A sender's state as the trace records it.
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
    pub pipe: u32,
    pub una: u32,
    pub nxt: u32,
}

impl CwndTrace {
    pub fn new(mut flows: Vec<u64>) -> CwndTrace {
        flows.sort_unstable();
        flows.dedup();
        CwndTrace { flows, rows: Vec::new() }
    }

    /// Whether flow `id` is traced (looked up once, when the flow starts).
    pub fn wants(&self, id: u64) -> bool {
        self.flows.binary_search(&id).is_ok()
    }

    /// Another part's rows (a parallel run's merge; each flow's rows are all in its sender's part).
    pub fn add(&mut self, other: &CwndTrace) {
        self.rows.extend(other.rows.iter().cloned());
    }

    pub fn record(&mut self, at: Time, flow: u64, event: TraceEvent, w: Window) {
        let Window { cwnd, ssthresh, pipe, una, nxt } = w;
        self.rows.push(Row { at, flow, event, cwnd, ssthresh, pipe, una, nxt });
    }

    /// The `cwnd` table, if any flow was traced.
    pub fn table(&self) -> Option<(&'static str, Vec<Column>)> {
        if self.flows.is_empty() {
            return None;
        }
        // By time, and simultaneous rows by flow: each flow's rows are its sender's, in its order, which a
        // parallel run's parts keep apart (`add`); the order of two flows' rows at one instant is not theirs.
        let mut r: Vec<&Row> = self.rows.iter().collect();
        r.sort_by_key(|x| (x.at, x.flow));
        // "Not yet set" is infinity inside; the table says NaN, which Parquet and pandas read as missing.
        let ss = |x: f64| if x == f64::MAX { f64::NAN } else { x };
        Some((
            "cwnd",
            vec![
                Column::I64("time_ps", r.iter().map(|x| x.at.0 as i64).collect()),
                Column::F64("time_us", r.iter().map(|x| x.at.0 as f64 / 1e6).collect()),
                Column::I64("flow_id", r.iter().map(|x| x.flow as i64).collect()),
                Column::Str(
                    "event",
                    r.iter()
                        .map(|x| match x.event {
                            TraceEvent::Ack => "ack".to_string(),
                            TraceEvent::Timeout => "timeout".to_string(),
                        })
                        .collect(),
                ),
                Column::F64("cwnd", r.iter().map(|x| x.cwnd).collect()),
                Column::F64("ssthresh", r.iter().map(|x| ss(x.ssthresh)).collect()),
                Column::I64("pipe", r.iter().map(|x| x.pipe as i64).collect()),
                Column::I64("una", r.iter().map(|x| x.una as i64).collect()),
                Column::I64("nxt", r.iter().map(|x| x.nxt as i64).collect()),
            ],
        ))
    }
}

/// The receivers' longest silence (`output.rx_gaps = true`): for every flow that completes, the longest time
/// between two consecutive arrivals of segments bringing data the receiver did not hold yet, from the first
/// such segment (or the SYN, with the handshake) to the one that completes the flow (rx_gaps.parquet).
/// Duplicates do not end a gap: it is the time the receiver waited for progress, what the SQR thesis calls
/// the recovery time (Fig. 4.8) when a failure caused it. `first_us` is when the receiver heard of the flow
/// (its SYN or first segment), for the wait before it: against the same flow in a run without the failure.
#[derive(Default)]
pub struct RxGaps {
    pub on: bool,
    rows: Vec<(u64, Time, Time, Time)>,
}

/// One flow's receiver clock: the last arrival of new data and the longest gap so far (with its end).
#[derive(Clone, Copy, Debug, Default)]
pub struct RxClock {
    first: Option<Time>,
    last: Option<Time>,
    gap: Time,
    gap_end: Time,
}

impl RxClock {
    /// The connection's first SYN arrived at `now` (a repeated one changes nothing): the receiver's wait
    /// starts here, as a capture at the receiver would show it.
    #[inline]
    pub fn opened(&mut self, now: Time) {
        self.last.get_or_insert(now);
        self.first.get_or_insert(now);
    }

    /// A segment with new data arrived at `now`.
    #[inline]
    pub fn progress(&mut self, now: Time) {
        if let Some(l) = self.last {
            if now - l > self.gap {
                self.gap = now - l;
                self.gap_end = now;
            }
        }
        self.last = Some(now);
        self.first.get_or_insert(now);
    }
}

impl RxGaps {
    /// Another part's rows (a parallel run's merge; each flow's row is its receiver's part's).
    pub fn add(&mut self, other: &RxGaps) {
        self.rows.extend_from_slice(&other.rows);
    }

    /// Flow `flow` completed with receiver clock `c`.
    pub fn record(&mut self, flow: u64, c: &RxClock) {
        if self.on {
            self.rows.push((flow, c.gap, c.gap_end, c.first.unwrap_or_default()));
        }
    }

    /// The `rx_gaps` table, rows in flow id order, if asked for.
    pub fn table(&self) -> Option<(&'static str, Vec<Column>)> {
        if !self.on {
            return None;
        }
        let mut r = self.rows.clone();
        r.sort_unstable_by_key(|x| x.0);
        Some((
            "rx_gaps",
            vec![
                Column::I64("flow_id", r.iter().map(|x| x.0 as i64).collect()),
                Column::I64("gap_ps", r.iter().map(|x| x.1 .0 as i64).collect()),
                Column::F64("gap_us", r.iter().map(|x| x.1 .0 as f64 / 1e6).collect()),
                Column::F64("gap_end_us", r.iter().map(|x| x.2 .0 as f64 / 1e6).collect()),
                Column::F64("first_us", r.iter().map(|x| x.3 .0 as f64 / 1e6).collect()),
            ],
        ))
    }
}
