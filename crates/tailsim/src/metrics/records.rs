//! The run's flow records, kept so that memory does not grow with the number of finished flows.
//!
//! A flow's record is *open* from its start until it is final: the receiver holds the last byte and the
//! sender has closed (the sender's retransmission and timeout counts come with the close, after the
//! receipt). Open records live in memory, in id order. Final ones gather in a batch that, once it holds
//! `spill_at` records, is written to a scratch file at fixed-width offsets by flow id (72 B each), so the
//! file reads back in id order whatever the order flows finished in. Runs with fewer final flows than one
//! batch never touch the disk.
//!
//! Reading (the summary, the flows table, the tests) goes chunk by chunk: a chunk is read from the file and
//! completed from the batch and the open records, so the reader's memory is one chunk too. A run may go on
//! after it has been read (an interrupted run written, then resumed): reading changes nothing.
//!
//! The scratch file is unnamed (deleted on creation) in `TAILSIM_SPILL_DIR`, else the system's temporary
//! directory (`TMPDIR`), and vanishes with the process. Should it fail (a full disk), the records stay in
//! memory and `spill_error` says why: a run is never lost to its scratch file.

use super::FlowRecord;
use crate::traffic::jobs::Role;
use crate::units::{NodeId, PathId, Time};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;

/// Final records gathered before a write to the scratch file (4 MB of records).
pub const SPILL_AT: usize = 65_536;

/// Bytes per record in the scratch file.
const REC: usize = 72;

/// Rows per chunk when reading every record.
pub const CHUNK: usize = 65_536;

struct Open {
    rec: FlowRecord,
    /// The sender closed (or is not this run's: another part's, in a parallel run).
    closed: bool,
    /// The receiver is this run's: the record waits for its end.
    waits_end: bool,
}

pub struct FlowRecords {
    len: usize,
    /// Records made but not started (`push_dormant`), here.
    dormant: usize,
    open: BTreeMap<u64, Open>,
    /// Final records not yet written, in the order they became final.
    done: Vec<FlowRecord>,
    spill: Option<File>,
    /// Records written to the scratch file.
    spilled: u64,
    spill_at: usize,
    spill_error: Option<String>,
}

impl Default for FlowRecords {
    fn default() -> FlowRecords {
        FlowRecords {
            len: 0,
            dormant: 0,
            open: BTreeMap::new(),
            done: Vec::new(),
            spill: None,
            spilled: 0,
            spill_at: SPILL_AT,
            spill_error: None,
        }
    }
}

impl FlowRecords {
    /// Flows recorded so far: their ids (started, or made to be started later: `push_dormant`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Flows started so far (the flows of the tables).
    pub fn started(&self) -> usize {
        self.len - self.dormant
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Write final records to the scratch file in batches of `n` (tests use small batches to exercise the
    /// file; `usize::MAX` keeps everything in memory).
    pub fn set_spill_at(&mut self, n: usize) {
        self.spill_at = n.max(1);
    }

    /// Records written to the scratch file so far.
    pub fn spilled(&self) -> u64 {
        self.spilled
    }

    /// Why the scratch file could not be used, if it could not (the records were kept in memory instead).
    pub fn spill_error(&self) -> Option<&str> {
        self.spill_error.as_deref()
    }

    /// Record a flow that starts; its id must be the next one.
    pub fn push(&mut self, rec: FlowRecord) {
        self.push_part(rec, true, true);
    }

    /// Record a flow that starts, in a part of a parallel run that runs its receiver (`receives`) or its
    /// sender (`sends`), both, or neither: the record is final when the ends it runs have reported.
    pub fn push_part(&mut self, rec: FlowRecord, receives: bool, sends: bool) {
        debug_assert_eq!(rec.id, self.len as u64);
        let id = rec.id;
        self.open.insert(id, Open { rec, closed: !sends, waits_end: receives });
        self.len += 1;
    }

    /// Record a flow made now to be started later (`begin`) by another flow's end — a retrieval's response
    /// or a workflow's later request — with the next id. Until it starts its record says `NOT_STARTED`; one
    /// that never starts (the run ended first) is in no table, so its id is missing from them.
    pub fn push_dormant(&mut self, mut rec: FlowRecord, receives: bool, sends: bool) {
        rec.start = NOT_STARTED;
        self.push_part(rec, receives, sends);
        self.dormant += 1;
    }

    /// Dormant flow `id` starts now (in a parallel run, in its sender's part: the others' records keep
    /// `NOT_STARTED`, and the merge takes the start from this one).
    pub fn begin(&mut self, id: u64, at: Time) {
        let o = self.open.get_mut(&id).expect("a dormant flow's record is open until it starts");
        debug_assert_eq!(o.rec.start, NOT_STARTED);
        o.rec.start = at;
        self.dormant -= 1;
    }

    /// A flow this part runs neither end of is final once started (it stays open until then: starting it
    /// reads it).
    pub fn settle(&mut self, id: u64) {
        if self.open.get(&id).is_some_and(|o| o.closed && !o.waits_end) {
            self.finalize(id);
        }
    }

    /// The records of a parallel run's parts, one store per part, each holding what its ends reported,
    /// merged: the end from the receiver's part, retransmissions and timeouts summed (each end counts its
    /// own). Every part recorded every flow, with the same ids.
    pub fn merged(parts: &[&FlowRecords]) -> io::Result<FlowRecords> {
        let mut out = FlowRecords { spill_at: parts[0].spill_at, ..FlowRecords::default() };
        let len = parts[0].len;
        for lo in (0..len).step_by(CHUNK) {
            let rows = lo..len.min(lo + CHUNK);
            let mut recs = parts[0].read(rows.clone())?;
            for p in &parts[1..] {
                for (a, b) in recs.iter_mut().zip(p.read(rows.clone())?) {
                    // A flow started by another's end has its start in its sender's part alone.
                    a.start = a.start.min(b.start);
                    a.end = a.end.or(b.end);
                    a.retransmits += b.retransmits;
                    a.timeouts += b.timeouts;
                }
            }
            for rec in recs {
                let id = rec.id;
                out.dormant += !rec.started() as usize;
                out.open.insert(id, Open { rec, closed: true, waits_end: false });
                out.len += 1;
                out.finalize(id);
            }
        }
        Ok(out)
    }

    /// A flow still open (started, not yet final).
    pub fn open(&self, id: u64) -> Option<&FlowRecord> {
        self.open.get(&id).map(|o| &o.rec)
    }

    /// The open flows, in id order.
    pub fn open_flows(&self) -> impl Iterator<Item = &FlowRecord> {
        self.open.values().map(|o| &o.rec)
    }

    /// The receiver holds flow `id`'s last byte at `at`, having timed out so often. Returns the record if
    /// this is news (a flow is received once).
    pub fn received(&mut self, id: u64, at: Time, timeouts: u32) -> Option<FlowRecord> {
        let o = self.open.get_mut(&id)?;
        if o.rec.end.is_some() {
            return None;
        }
        o.rec.end = Some(at);
        o.rec.timeouts += timeouts;
        let rec = o.rec.clone();
        if o.closed {
            self.finalize(id);
        }
        Some(rec)
    }

    /// The sender of flow `id` is done, having retransmitted and timed out so often.
    pub fn closed(&mut self, id: u64, retransmits: u32, timeouts: u32) {
        let Some(o) = self.open.get_mut(&id) else { return };
        o.rec.retransmits += retransmits;
        o.rec.timeouts += timeouts;
        o.closed = true;
        if o.rec.end.is_some() || !o.waits_end {
            self.finalize(id);
        }
    }

    fn finalize(&mut self, id: u64) {
        if let Some(o) = self.open.remove(&id) {
            self.done.push(o.rec);
        }
        if self.done.len() >= self.spill_at && self.spill_error.is_none() {
            if let Err(e) = self.write_done() {
                self.spill_error = Some(format!("cannot write flow records to a scratch file ({e}); kept in memory"));
            }
        }
    }

    /// Write the batch of final records at their offsets, one write per run of consecutive ids.
    fn write_done(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            let dir = std::env::var_os("TAILSIM_SPILL_DIR").map_or_else(std::env::temp_dir, Into::into);
            self.spill = Some(
                tempfile::tempfile_in(&dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?,
            );
        }
        let mut file = self.spill.as_ref().expect("created above");
        self.done.sort_unstable_by_key(|r| r.id);
        let mut buf = Vec::with_capacity(REC * 1024);
        let mut i = 0;
        while i < self.done.len() {
            let first = self.done[i].id;
            buf.clear();
            while i < self.done.len() && self.done[i].id == first + (buf.len() / REC) as u64 {
                encode(&self.done[i], &mut buf);
                i += 1;
            }
            file.seek(SeekFrom::Start(first * REC as u64))?;
            file.write_all(&buf)?;
        }
        self.spilled += self.done.len() as u64;
        self.done.clear();
        Ok(())
    }

    /// Records `rows` (ids), in id order.
    pub fn read(&self, rows: Range<usize>) -> io::Result<Vec<FlowRecord>> {
        let rows = rows.start.min(self.len)..rows.end.min(self.len);
        // Filled in place (no Option per row: a chunk is built while a results table is being written).
        let mut out: Vec<FlowRecord> = Vec::with_capacity(rows.len());
        let mut filled = vec![false; rows.len()];
        if let Some(mut file) = self.spill.as_ref() {
            let extent = (file.metadata()?.len() / REC as u64) as usize;
            let upto = rows.end.min(extent);
            if rows.start < upto {
                let mut buf = vec![0u8; (upto - rows.start) * REC];
                file.seek(SeekFrom::Start((rows.start * REC) as u64))?;
                file.read_exact(&mut buf)?;
                for (k, b) in buf.chunks_exact(REC).enumerate() {
                    let r = decode((rows.start + k) as u64, b);
                    filled[k] = r.is_some();
                    out.push(r.unwrap_or_else(|| blank((rows.start + k) as u64)));
                }
            }
        }
        out.extend((rows.start + out.len()..rows.end).map(|id| blank(id as u64)));
        let within = |id: u64| (rows.start as u64..rows.end as u64).contains(&id);
        let open = self.open.range(rows.start as u64..rows.end as u64).map(|(_, o)| &o.rec);
        for r in self.done.iter().filter(|r| within(r.id)).chain(open) {
            let k = r.id as usize - rows.start;
            out[k] = r.clone();
            filled[k] = true;
        }
        match filled.iter().position(|&f| !f) {
            Some(k) => Err(io::Error::other(format!("flow record {} is missing", rows.start + k))),
            None => Ok(out),
        }
    }

    /// The started flows' records of ids `rows`, in id order (a dormant flow's is left out).
    pub fn read_started(&self, rows: Range<usize>) -> io::Result<Vec<FlowRecord>> {
        let mut recs = self.read(rows)?;
        if self.dormant > 0 {
            recs.retain(FlowRecord::started);
        }
        Ok(recs)
    }

    /// Every started flow's record, chunk by chunk in id order.
    pub fn for_each_chunk(&self, mut f: impl FnMut(&[FlowRecord])) -> io::Result<()> {
        for lo in (0..self.len).step_by(CHUNK) {
            f(&self.read_started(lo..self.len.min(lo + CHUNK))?);
        }
        Ok(())
    }

    /// Every started flow's record at once (tests, small runs). Panics if the scratch file cannot be read back.
    pub fn all(&self) -> Vec<FlowRecord> {
        self.read_started(0..self.len).unwrap_or_else(|e| panic!("reading the flow records: {e}"))
    }

    /// Record `id` (tests). Panics if there is none or the scratch file cannot be read back.
    pub fn nth(&self, id: usize) -> FlowRecord {
        assert!(id < self.len, "flow {id} of {}", self.len);
        self.read(id..id + 1).unwrap_or_else(|e| panic!("reading flow record {id}: {e}")).remove(0)
    }
}

/// Absent times and deadlines on disk.
const NONE: u64 = u64::MAX;

/// The start of a flow made but not started (`push_dormant`).
pub const NOT_STARTED: Time = Time(u64::MAX);

fn encode(r: &FlowRecord, buf: &mut Vec<u8>) {
    let (tag, arg) = match r.role {
        Role::Flow => (1u32, 0u32),
        Role::Background(g) => (2, g),
        Role::Request(q) => (3, q),
        Role::Response(q) => (4, q),
    };
    buf.extend_from_slice(&r.src.0.to_le_bytes());
    buf.extend_from_slice(&r.dst.0.to_le_bytes());
    for v in [r.size, r.start.0, r.end.map_or(NONE, |t| t.0), r.ideal.0, r.deadline.map_or(NONE, |t| t.0)] {
        buf.extend_from_slice(&v.to_le_bytes());
    }
    for v in [r.retransmits, r.timeouts, tag, arg, r.path.0, 0] {
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

/// A placeholder for a row not read yet.
fn blank(id: u64) -> FlowRecord {
    FlowRecord {
        id,
        src: NodeId(0),
        dst: NodeId(0),
        size: 0,
        start: Time::ZERO,
        end: None,
        ideal: Time::ZERO,
        deadline: None,
        retransmits: 0,
        timeouts: 0,
        role: Role::Flow,
        path: PathId::NONE,
    }
}

/// A record from its 72 bytes; None for a slot never written (a tag of 0).
fn decode(id: u64, b: &[u8]) -> Option<FlowRecord> {
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let time = |o: usize| Some(u64_at(o)).filter(|&v| v != NONE).map(Time);
    let arg = u32_at(60);
    let role = match u32_at(56) {
        1 => Role::Flow,
        2 => Role::Background(arg),
        3 => Role::Request(arg),
        4 => Role::Response(arg),
        _ => return None,
    };
    Some(FlowRecord {
        id,
        src: NodeId(u32_at(0)),
        dst: NodeId(u32_at(4)),
        size: u64_at(8),
        start: Time(u64_at(16)),
        end: time(24),
        ideal: Time(u64_at(32)),
        deadline: time(40),
        retransmits: u32_at(48),
        timeouts: u32_at(52),
        role,
        path: PathId(u32_at(64)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64) -> FlowRecord {
        FlowRecord {
            id,
            src: NodeId(id as u32 % 7),
            dst: NodeId(3),
            size: 1000 + id,
            start: Time(id * 10),
            end: None,
            ideal: Time(5 + id),
            deadline: id.is_multiple_of(3).then_some(Time(77)),
            retransmits: 0,
            timeouts: 0,
            role: if id.is_multiple_of(2) { Role::Flow } else { Role::Response(id as u32) },
            path: PathId(id as u32 % 5),
        }
    }

    /// Flows finishing out of order, some never: the same records read back whether or not they went to disk.
    #[test]
    fn spilled_records_read_back_in_id_order() {
        let run = |spill_at: usize| {
            let mut s = FlowRecords::default();
            s.set_spill_at(spill_at);
            for id in 0..1000 {
                s.push(rec(id));
            }
            // Finish in a scrambled order; every 10th never finishes, every 7th is received but never closed.
            for k in 0..1000u64 {
                let id = (k * 389) % 1000;
                if id.is_multiple_of(10) {
                    continue;
                }
                s.received(id, Time(id * 10 + 500), 0);
                if !id.is_multiple_of(7) {
                    s.closed(id, id as u32 % 4, 1);
                }
            }
            s
        };
        let mem = run(usize::MAX);
        let disk = run(16);
        assert_eq!(mem.spilled(), 0);
        assert!(disk.spilled() > 700, "{}", disk.spilled());
        let (a, b) = (mem.all(), disk.all());
        assert_eq!(a.len(), 1000);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(format!("{x:?}"), format!("{y:?}"));
        }
        assert_eq!(b[3].end, Some(Time(530)));
        assert_eq!(b[3].retransmits, 3);
        assert_eq!(b[10].end, None);
        assert_eq!(b[7].end, Some(Time(570)));
        assert_eq!(b[7].retransmits, 0, "received, never closed");
        // Chunks that straddle the file's end and the open records.
        assert_eq!(format!("{:?}", disk.read(990..1000).unwrap()), format!("{:?}", &a[990..1000]));
        assert_eq!(disk.nth(999).id, 999);
    }

    #[test]
    fn a_flow_is_received_once() {
        let mut s = FlowRecords::default();
        s.push(rec(0));
        assert!(s.received(0, Time(9), 0).is_some());
        assert!(s.received(0, Time(12), 0).is_none());
        s.closed(0, 1, 0);
        assert!(s.open(0).is_none());
        assert_eq!(s.all()[0].end, Some(Time(9)));
    }
}
