//! pFabric's port queue (Alizadeh et al., SIGCOMM 2013, §4.1): a tiny buffer that admits, drops and
//! schedules by each packet's priority number (`Packet::rank`, lower = more urgent).
//!
//! - **Enqueue**: a packet that fits is appended (arrival order is kept). When the buffer is full, the
//!   packet with the largest rank is dropped — the arriving one if its rank is at least as large (it loses
//!   ties, as in the authors' ns-2 code). With unequal sizes the largest-rank packets are evicted until the
//!   newcomer fits, or the newcomer is dropped if it would have to evict a packet at least as urgent.
//! - **Dequeue**: find the most urgent packet (earliest on ties), then send the *earliest* buffered packet of
//!   the same flow — starvation prevention: with remaining-size ranks a flow's later packets are more urgent
//!   than its earlier ones, which strict priority would strand. It can be switched off for the ablation.
//!
//! The buffer holds tens of packets (36 KB = 24 full frames), so linear scans are the right tool.

use crate::net::packet::Packet;
use crate::net::Packets;
use crate::units::PktId;

#[derive(Default)]
pub struct PFabricQueue {
    /// Buffered packets in arrival order.
    pkts: Vec<PktId>,
    /// Their bytes.
    pub bytes: u64,
    /// Strict priority only (no starvation prevention): the ablation of the paper's Fig. 16.
    pub strict: bool,
    /// Packets evicted by the last `admit` (reused, so admission never allocates once warm).
    pub evicted: Vec<PktId>,
}

/// A flow's identity at a switch: the 5-tuple, here (source, destination, flow slot and generation). The
/// generation too: a slot freed and taken by a new flow between the same hosts is another flow, and when a
/// slot is freed differs between a serial and a parallel run (transport/split.rs).
#[inline]
fn flow_key(p: &Packet) -> (u32, u32, u32, u32) {
    (p.src.0, p.dst.0, p.flow.0, p.flow_gen)
}

impl PFabricQueue {
    pub fn new(strict: bool) -> Self {
        PFabricQueue { strict, ..Default::default() }
    }

    /// Offer `id` to the buffer, which has room for `limit` bytes (None = unlimited). Returns whether it was
    /// queued; packets evicted to make room are left in `self.evicted` for the caller to drop.
    pub fn admit(&mut self, id: PktId, limit: Option<u64>, pk: &Packets) -> bool {
        self.evicted.clear();
        let p = pk.get(id);
        let size = p.size as u64;
        let bytes = self.bytes;
        if limit.is_none_or(|l| bytes + size <= l) {
            self.pkts.push(id);
            self.bytes += size;
            return true;
        }
        let limit = limit.unwrap();
        // Victims in order of (rank, arrival index), largest first, until the newcomer fits; nothing is
        // removed unless the whole choice works out.
        let mut freed = 0u64;
        let mut last: Option<(u64, usize)> = None;
        while bytes - freed + size > limit {
            let mut cand: Option<(u64, usize)> = None;
            for (i, &q) in self.pkts.iter().enumerate() {
                let key = (pk.get(q).rank, i);
                if last.is_none_or(|l| key < l) && cand.is_none_or(|c| key > c) {
                    cand = Some(key);
                }
            }
            match cand {
                Some((rank, i)) if rank > p.rank => {
                    freed += pk.get(self.pkts[i]).size as u64;
                    last = Some((rank, i));
                }
                _ => return false, // it would have to evict something at least as urgent: the newcomer loses
            }
        }
        let threshold = last.expect("a full buffer evicts at least one packet");
        let mut idx = 0;
        let evicted = &mut self.evicted;
        self.pkts.retain(|&q| {
            let key = (pk.get(q).rank, idx);
            idx += 1;
            if key >= threshold {
                evicted.push(q);
                false
            } else {
                true
            }
        });
        self.pkts.push(id);
        self.bytes = bytes - freed + size;
        true
    }

    pub fn pop(&mut self, pk: &Packets) -> Option<PktId> {
        let mut best = 0;
        for i in 1..self.pkts.len() {
            if pk.get(self.pkts[i]).rank < pk.get(self.pkts[best]).rank {
                best = i;
            }
        }
        if self.pkts.is_empty() {
            return None;
        }
        if !self.strict {
            let key = flow_key(pk.get(self.pkts[best]));
            best = self.pkts.iter().position(|&q| flow_key(pk.get(q)) == key).expect("the best packet itself");
        }
        let id = self.pkts.remove(best);
        self.bytes -= pk.get(id).size as u64;
        Some(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        self.pkts.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::PktKind;
    use crate::units::{FlowSlot, NodeId};

    /// A packet of flow `f` with priority number `rank` and `size` bytes.
    fn pkt(pk: &mut Packets, f: u32, rank: u64, size: u32) -> PktId {
        let mut p = Packet::new(PktKind::Data, FlowSlot(f), 0, NodeId(f), NodeId(99));
        p.rank = rank;
        p.size = size;
        pk.alloc(p)
    }

    fn fill(q: &mut PFabricQueue, pk: &mut Packets, spec: &[(u32, u64)]) -> Vec<PktId> {
        spec.iter()
            .map(|&(f, r)| {
                let id = pkt(pk, f, r, 100);
                assert!(q.admit(id, Some(300), pk));
                id
            })
            .collect()
    }

    #[test]
    fn full_buffer_evicts_the_least_urgent_and_the_newcomer_loses_ties() {
        let mut pk = Packets::default();
        let mut q = PFabricQueue::new(false);
        let ids = fill(&mut q, &mut pk, &[(1, 50), (2, 90), (3, 70)]);
        // More urgent than the worst (90): the worst is evicted.
        let a = pkt(&mut pk, 4, 60, 100);
        assert!(q.admit(a, Some(300), &pk));
        assert_eq!(q.evicted, vec![ids[1]]);
        // Equal to the worst now buffered (70): the newcomer loses the tie.
        let b = pkt(&mut pk, 5, 70, 100);
        assert!(!q.admit(b, Some(300), &pk));
        assert!(q.evicted.is_empty());
        // Among equal worst ranks the latest-arrived goes.
        let mut q = PFabricQueue::new(false);
        let ids = fill(&mut q, &mut pk, &[(1, 80), (2, 80), (3, 10)]);
        let c = pkt(&mut pk, 4, 20, 100);
        assert!(q.admit(c, Some(300), &pk));
        assert_eq!(q.evicted, vec![ids[1]]);
        assert_eq!(q.iter().collect::<Vec<_>>(), vec![ids[0], ids[2], c]);
    }

    #[test]
    fn a_big_newcomer_evicts_several_or_nothing() {
        let mut pk = Packets::default();
        let mut q = PFabricQueue::new(false);
        let ids = fill(&mut q, &mut pk, &[(1, 90), (2, 10), (3, 80)]);
        // 250 B needs 250 B freed from 300 B: evict rank 90 and 80 (200 B) is not enough with 100 + 250 > 300,
        // so it would have to evict rank 10 as well, which is more urgent than 30: rejected, nothing removed.
        let big = pkt(&mut pk, 4, 30, 250);
        assert!(!q.admit(big, Some(300), &pk));
        assert_eq!(q.iter().count(), 3);
        // 200 B with rank 30: evicting 90 and 80 is enough.
        let mid = pkt(&mut pk, 5, 30, 200);
        assert!(q.admit(mid, Some(300), &pk));
        assert_eq!(q.evicted, vec![ids[0], ids[2]]);
        assert_eq!(q.iter().collect::<Vec<_>>(), vec![ids[1], mid]);
    }

    #[test]
    fn dequeue_sends_the_earliest_packet_of_the_most_urgent_flow() {
        // The paper's Fig. 2 situation: flow A's later packet is its most urgent; its earliest goes first.
        let mut pk = Packets::default();
        let mut q = PFabricQueue::new(false);
        let push = |q: &mut PFabricQueue, pk: &mut Packets, f, r| {
            let id = pkt(pk, f, r, 100);
            assert!(q.admit(id, None, pk));
            id
        };
        let a6 = push(&mut q, &mut pk, 1, 6);
        let b3 = push(&mut q, &mut pk, 2, 3);
        let a1 = push(&mut q, &mut pk, 1, 1);
        let b2 = push(&mut q, &mut pk, 2, 2);
        assert_eq!(q.pop(&pk), Some(a6)); // A holds the most urgent packet (1): A's earliest goes
        assert_eq!(q.pop(&pk), Some(a1));
        assert_eq!(q.pop(&pk), Some(b3));
        assert_eq!(q.pop(&pk), Some(b2));
        assert_eq!(q.pop(&pk), None);
    }

    #[test]
    fn strict_mode_is_plain_priority_with_earliest_on_ties() {
        let mut pk = Packets::default();
        let mut q = PFabricQueue::new(true);
        let ids: Vec<PktId> = [(1, 6), (2, 3), (1, 1), (3, 3)].iter().map(|&(f, r)| pkt(&mut pk, f, r, 100)).collect();
        for &id in &ids {
            assert!(q.admit(id, None, &pk));
        }
        let order: Vec<PktId> = std::iter::from_fn(|| q.pop(&pk)).collect();
        assert_eq!(order, vec![ids[2], ids[1], ids[3], ids[0]]);
    }
}
