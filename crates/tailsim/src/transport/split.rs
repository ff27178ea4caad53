//! Each end of a flow with a life of its own (docs/parallel.md, "Flows"): what the transports whose ends
//! are split (NDP; Homa without losses) share.
//!
//! A flow's record holds both ends' state, but each end reads and writes only its own half, and each half
//! closes on its own: the receiver's when it holds every byte, the sender's when it knows it has nothing
//! left to do. The record is freed when both halves are closed. In the serial run that is at once; in a
//! parallel run a part runs only its own hosts' halves (the other halves are closed there from the start),
//! so a part posts the halves it closed at each meeting of the parts, and every part applies every part's
//! list in part order (`retired`): the same frees in the same order everywhere, so a flow has the same slot
//! in every part, which the packets that cross between parts name it by.

use crate::units::{FlowSlot, NodeId};

/// A record's two halves.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ends {
    /// The sender's half is open: its host is this run's (this part's) and it still has work.
    pub snd: bool,
    /// The receiver's half is open: its host is this run's (this part's) and it still misses bytes.
    pub rcv: bool,
    /// Halves closed, as the meetings of a parallel run have told (the record is freed at 2).
    retired: u8,
}

/// Which hosts' halves this run runs, and the halves closed since the last meeting.
#[derive(Debug, Default)]
pub struct Split {
    /// In a parallel run, the hosts whose ends this part runs (None: every host, the serial run).
    local: Option<Vec<bool>>,
    /// In a parallel run, the records one of whose halves closed here since the last meeting.
    retiring: Vec<u32>,
    /// Receivers' halves open: the flows not yet received.
    pub receiving: usize,
}

impl Split {
    /// Run only the ends at the hosts `mine` accepts (one part of a parallel run).
    pub fn set_local(&mut self, mine: Vec<bool>) {
        self.local = Some(mine);
    }

    pub fn is_local(&self, h: NodeId) -> bool {
        self.local.as_ref().is_none_or(|m| m[h.idx()])
    }

    /// A new flow from `src` to `dst`: the halves this run runs are open.
    pub fn open(&mut self, src: NodeId, dst: NodeId) -> Ends {
        let ends = Ends { snd: self.is_local(src), rcv: self.is_local(dst), retired: 0 };
        self.receiving += ends.rcv as usize;
        ends
    }

    /// Close the sender's (`sender`) or the receiver's half of record `slot`; true when the record is to be
    /// freed now (the serial run, both halves closed). In a parallel run the half is posted for the meeting.
    pub fn close(&mut self, ends: &mut Ends, slot: u32, sender: bool) -> bool {
        if sender {
            ends.snd = false;
        } else {
            ends.rcv = false;
            self.receiving -= 1;
        }
        if self.local.is_some() {
            self.retiring.push(slot);
            return false;
        }
        !ends.snd && !ends.rcv
    }

    /// The records one of whose halves closed in this part since the last call (the meeting posts them).
    pub fn take_retiring(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.retiring)
    }
}

impl Ends {
    /// At a meeting: another half of this record closed somewhere; true when both have (free it now).
    pub fn retired(&mut self) -> bool {
        self.retired += 1;
        self.retired == 2
    }
}

/// What every transport does with its records' halves (each keeps an `Ends` in every flow's record): close a
/// half, and at a parallel run's meetings retire the halves every part closed. A transport gives access to
/// its split and its records' ends, and frees a record its own way; the rest is here, once.
pub trait Halves {
    fn split_mut(&mut self) -> &mut Split;
    /// The halves of the record in `slot`.
    fn ends_mut(&mut self, slot: u32) -> &mut Ends;
    /// Free the record in `slot` (its generation bumped, so its late packets and timers are recognised).
    fn free(&mut self, slot: FlowSlot);

    /// Close the sender's (`sender`) or the receiver's half of the record in `slot`; free it once both are
    /// closed (in a parallel run, at the meeting: `retire`).
    fn close_half(&mut self, slot: FlowSlot, sender: bool) {
        let mut ends = *self.ends_mut(slot.0);
        let free = self.split_mut().close(&mut ends, slot.0, sender);
        *self.ends_mut(slot.0) = ends;
        if free {
            self.free(slot);
        }
    }

    /// At a meeting of a parallel run: the halves every part closed since the last one (each part's list in
    /// turn, the same lists in every part); a record both of whose halves are closed is freed, in this order.
    fn retire(&mut self, slots: &[u32]) {
        for &s in slots {
            if self.ends_mut(s).retired() {
                self.free(FlowSlot(s));
            }
        }
    }
}
