//! SQR, the Shared Queue Ring (Joshi thesis ch. 4): every switch keeps a copy of each protected packet it
//! sent for at least δ, in its own queues, and when a link is found down sends the copies of what that link
//! lost over the backup port, in their original order. Also the recovery schemes it sits on: ShareBackup
//! emulated as SB' (the same port comes back after the reconfiguration) and local rerouting (LRR: a backup
//! port chosen at detection), which are the baselines with `cache = "off"`.
//!
//! The thesis's algorithms, per packet in a switch's egress (`docs/sqr.md` maps each step):
//! - copy (Alg. 3, primary up): an original leaving a port that the switch believes up spawns a copy tagged
//!   with its primary port, a per-primary `PktTag` and the egress timestamp, into the caching queue of the
//!   least loaded port (fewest original bytes sent in a 150 µs window).
//! - ring (§4.3.1-2): a copy at the head of a caching queue takes the port's egress for a pass (a fraction of
//!   its serialization time, calibrated to Fig. 4.14) and, if younger than δ (Alg. 2, with n-bit timestamps
//!   that wrap), is cloned again into the least loaded port's caching queue after the clone delay.
//! - retire or resend (Alg. 3-4): old enough, a copy is dropped while its primary is up, and sent out of the
//!   backup port when it is down, in `PktTag` order (a copy ahead of its turn goes round again).
//! - detection: the switch sees a link down `detect` after it fails; δ is then raised by `raise` (SB'+SQR:
//!   30 → 760 µs). Originals meant for a failed port go to the backup port.
//!
//! Choices the thesis leaves open are marked "ours" here and listed in docs/sqr.md.

use crate::engine::Pipe;
use crate::net::hooks::{Admit, Effect, HookCtx, HookSet};
use crate::net::ledger::Origin;
use crate::net::mech::Hooks;
use crate::net::packet::Packet;
use crate::net::port::Port;
use crate::units::{NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

mod lrr;
mod split;
use lrr::lrr_backups;

/// How routes recover from a failed link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// SB': the failed port itself carries traffic again once its link is back up (ShareBackup's circuit
    /// switch replaced it); the backup port is the primary.
    ShareBackup,
    /// LRR: a precomputed backup port (per destination, or the configured one) from the moment of detection.
    Lrr,
}

/// Where copies wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cache {
    /// The thesis's Queue Ring: caching queues at the switch's ports, passes through egress.
    Ring {
        /// A pass takes this fraction of the copy's serialization time at the caching port.
        pass_cost: f64,
        /// From one pass's end (or the copy's making) to the next caching queue.
        clone_delay: Time,
        /// How the caching queue and the port's own queue of the same priority take turns.
        turns: Turns,
    },
    /// An exact delayed queue per primary port: no passes, no cost, released exactly δ after the copy.
    Ideal,
    /// No copies: the recovery scheme alone (the baselines SB' and LRR).
    Off,
}

/// How a port's caching queue and its own queue of the same priority share the transmitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns {
    /// Equal transmitter time while both have work (a pass is cheap, so passes come often).
    Time,
    /// One pass per own packet while both have work (round robin by packet; the default, Fig. 4.14).
    Packet,
}

#[derive(Clone, Debug)]
pub struct SqrParams {
    /// δ before any failure: the detection delay's upper bound.
    pub delta: Time,
    /// Added to δ while a port of the switch is failed (SB'+SQR: the 730 µs reconfiguration).
    pub raise: Time,
    /// How long a switch takes to see that a link went down (or came back up).
    pub detect: Time,
    pub recovery: Recovery,
    pub cache: Cache,
    /// The utilization window for the least loaded port.
    pub window: Time,
    /// Protected classes (bit c = class c).
    pub classes: u8,
    /// No copies while the switch's buffer use is above this fraction of `buffer`.
    pub backstop: f64,
    /// Each SQR switch's buffer in bytes (None: unlimited, no backstop), in the order of `switches`.
    pub buffer: Vec<Option<u64>>,
    /// Width of the egress timestamps in bits (Alg. 2's n).
    pub timestamp_bits: u32,
    /// The SQR switches: their ports (every port gets caching queues; switch-to-switch ones are protected).
    pub switches: Vec<Vec<PortId>>,
    /// Configured LRR backups: (primary, backup) port pairs, for every destination.
    pub backups: Vec<(PortId, PortId)>,
    /// Ports whose caching queues their switch may use; empty: every port of every SQR switch. A switch
    /// with none listed uses all its ports.
    pub cache_ports: Vec<PortId>,
}

/// A copy's SQR metadata (thesis §4.3.3: added when it is made, stripped before it leaves the switch).
#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    tag: u32,
    /// Egress timestamp when the copy was made, in ns modulo 2^timestamp_bits.
    start: u64,
    primary: PortId,
    /// The packet is the only one left (an original taken into the ring because no port could send it).
    sole: bool,
    /// Waiting for its turn (Alg. 4): its next pass is in this port's caching queue (the backup's), not the
    /// least loaded port's.
    wait_at: PortId,
}

/// Where a packet meant for a failed port goes.
enum FailedRoute {
    /// Out of the port itself: SB' once ShareBackup restored it.
    Own,
    /// Out of another port (LRR).
    Backup(PortId),
    /// Into the cache: no port can carry it yet.
    Cache,
}

#[derive(Default)]
struct PortState {
    /// Index of its switch in `SqrParams::switches`; u32::MAX for ports of other nodes.
    sw: u32,
    /// A switch-to-switch port: its packets are copied.
    protected: bool,
    /// The link as it is (from `on_link`).
    link_up: bool,
    /// The switch's view: failed since detection, until the link is back and no copy is owed.
    failed: bool,
    /// The link came back and the switch has seen it.
    back: bool,
    /// Failed and not yet seen back: the switch's δ is raised for it.
    raised: bool,
    /// Its caching queue may hold copies (`cache_ports`).
    caches: bool,
    next_tag: u32,
    /// While failed: the tags of the copies owed for this primary, in order. Alg. 4's NextPktTag is the
    /// front: the tags held when the failure was detected (the ring may have retired younger copies before
    /// older ones, so they need not be consecutive), then those of originals taken in since.
    owed: VecDeque<u32>,
    /// The last tag resent for this primary (to count resends out of order).
    last_resent: Option<u32>,
    /// Copies (and sole originals) held for this primary, and their bytes.
    held: u32,
    held_bytes: u64,
    max_held_bytes: u64,
    /// Ring: the caching queue at this port, the copy in its pass, and whose turn it is.
    cache_q: VecDeque<PktId>,
    passing: Option<PktId>,
    /// Transmitter time (ps) given to the port's own packets and to passes since both last had work, or
    /// packets and passes with turns by packet: the two queues of one priority share the port by it.
    own_time: u64,
    pass_time: u64,
    /// Original bytes sent in the current and the previous window.
    win_start: Time,
    cur: u64,
    prev: u64,
    /// Ideal: the copies of this primary in tag order, and the release timer armed.
    ideal: VecDeque<PktId>,
    armed: Option<Time>,
    /// LRR: the backup port per destination host, computed at detection (PortId::NONE: none).
    backup: Vec<PortId>,
}

struct SwitchState {
    ports: Vec<PortId>,
    /// LeastLoadedPort and LeastUtilization (registers).
    llp: PortId,
    least_util: u64,
    clone: Pipe,
    failed: u32,
    /// Its failed ports not yet seen back (δ is raised while there is one).
    down: u32,
    cache_bytes: u64,
    max_cache_bytes: u64,
}

#[derive(Default, Clone, Copy)]
struct Counters {
    copies: u64,
    passes: u64,
    retired: u64,
    resent: u64,
    late: u64,
    waited: u64,
    out_of_order: u64,
    redirected: u64,
    taken_in: u64,
    backstopped: u64,
    no_backup: u64,
    detected: u64,
}

pub struct Sqr {
    prm: SqrParams,
    ports: Vec<PortState>,
    sws: Vec<SwitchState>,
    meta: Vec<Meta>,
    n: Counters,
}

const PASS: u32 = 0;
const CLONE: u32 = 1;
const DETECT: u32 = 2;
const IDEAL: u32 = 3;
const BACK: u32 = 4;
const KIND_SHIFT: u32 = 28;

fn key(kind: u32, i: u32) -> u32 {
    debug_assert!(i < 1 << KIND_SHIFT);
    kind << KIND_SHIFT | i
}

/// The values of an n-bit clock.
fn clock_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Alg. 2: the time since `start` on an n-bit nanosecond clock that wraps (`now_ns` read on the same clock).
pub fn elapsed_ns(now_ns: u64, start: u64, bits: u32) -> u64 {
    now_ns.wrapping_sub(start) & clock_mask(bits)
}

impl Sqr {
    pub fn new(prm: SqrParams, ports: &[Port], hosts: usize) -> Sqr {
        let mut st: Vec<PortState> =
            (0..ports.len()).map(|_| PortState { sw: u32::MAX, link_up: true, ..Default::default() }).collect();
        let mut sws = Vec::new();
        for (i, list) in prm.switches.iter().enumerate() {
            for &p in list {
                let s = &mut st[p.idx()];
                s.sw = i as u32;
                s.protected = ports[p.idx()].peer.idx() >= hosts;
                s.link_up = ports[p.idx()].up;
                if matches!(prm.cache, Cache::Ring { .. }) {
                    s.cache_q.reserve(64);
                }
            }
            let listed: Vec<PortId> = list.iter().copied().filter(|p| prm.cache_ports.contains(p)).collect();
            let caching = if listed.is_empty() { list.clone() } else { listed };
            for &p in &caching {
                st[p.idx()].caches = true;
            }
            sws.push(SwitchState {
                ports: list.clone(),
                llp: caching[0],
                least_util: 0,
                clone: Pipe::default(),
                failed: 0,
                down: 0,
                cache_bytes: 0,
                max_cache_bytes: 0,
            });
        }
        Sqr { prm, ports: st, sws, meta: Vec::new(), n: Counters::default() }
    }

    fn delta(&self, sw: u32) -> Time {
        if self.sws[sw as usize].down > 0 {
            self.prm.delta + self.prm.raise
        } else {
            self.prm.delta
        }
    }

    fn stamp(&self, now: Time) -> u64 {
        (now.0 / 1000) & clock_mask(self.prm.timestamp_bits)
    }

    fn old_enough(&self, now: Time, m: &Meta, sw: u32) -> bool {
        elapsed_ns(now.0 / 1000, m.start, self.prm.timestamp_bits) * 1000 >= self.delta(sw).0
    }

    fn protects(&self, p: &Packet) -> bool {
        p.origin == Origin::Host && !p.kind.is_network() && self.prm.classes & (1 << p.class) != 0
    }

    /// Where a packet meant for failed port `p` goes instead (PortId::NONE: nowhere yet).
    fn backup(&self, p: PortId, dst: NodeId) -> PortId {
        match self.prm.recovery {
            Recovery::ShareBackup => p,
            Recovery::Lrr => {
                if let Some(&(_, b)) = self.prm.backups.iter().find(|(a, _)| *a == p) {
                    return b;
                }
                self.ports[p.idx()].backup.get(dst.idx()).copied().unwrap_or(PortId::NONE)
            }
        }
    }

    /// Can `b` carry traffic now: its link is up and, if the switch saw it fail, the switch has seen it come
    /// back (SB': the failed port is its own backup once ShareBackup restored it)?
    fn ready(&self, b: PortId) -> bool {
        b != PortId::NONE && {
            let st = &self.ports[b.idx()];
            st.link_up && (!st.failed || st.back)
        }
    }

    /// Where a packet meant for failed port `at` goes (Alg. 3, primary down).
    fn failed_route(&self, at: PortId, dst: NodeId) -> FailedRoute {
        let b = self.backup(at, dst);
        if !self.ready(b) {
            FailedRoute::Cache
        } else if b == at {
            FailedRoute::Own
        } else {
            FailedRoute::Backup(b)
        }
    }

    /// Send a packet meant for a failed port out of its backup `b`, marked as a detour.
    fn redirect(&mut self, c: &mut HookCtx, b: PortId, id: PktId) {
        self.n.redirected += 1;
        c.pk.get_mut(id).detour = true;
        c.effect(Effect::Enqueue { port: b, id });
    }

    fn set_meta(&mut self, id: PktId, m: Meta) {
        if self.meta.len() <= id.idx() {
            self.meta.resize(id.idx() + 1, Meta::default());
        }
        self.meta[id.idx()] = m;
    }

    /// Take packet `id` (a fresh copy, or a sole original) into the cache for primary `p`.
    fn cache(&mut self, c: &mut HookCtx, p: PortId, id: PktId, sole: bool) {
        let st = &mut self.ports[p.idx()];
        let m = Meta { tag: st.next_tag, start: 0, primary: p, sole, wait_at: PortId::NONE };
        st.next_tag = st.next_tag.wrapping_add(1);
        if st.failed {
            st.owed.push_back(m.tag); // an original taken in while the port is failed
        }
        let size = c.packet(id).size as u64;
        st.held += 1;
        st.held_bytes += size;
        st.max_held_bytes = st.max_held_bytes.max(st.held_bytes);
        let sw = st.sw as usize;
        let s = &mut self.sws[sw];
        s.cache_bytes += size;
        s.max_cache_bytes = s.max_cache_bytes.max(s.cache_bytes);
        let start = self.stamp(c.now);
        self.set_meta(id, Meta { start, ..m });
        match self.prm.cache {
            Cache::Ring { clone_delay, .. } => self.ring_again(c, sw, id, clone_delay),
            Cache::Ideal => {
                self.ports[p.idx()].ideal.push_back(id);
                if self.ports[p.idx()].ideal.len() == 1 {
                    let at = c.now + self.delta(sw as u32);
                    self.arm(c, p, at);
                }
            }
            Cache::Off => unreachable!("no copies without a cache"),
        }
    }

    fn ring_again(&mut self, c: &mut HookCtx, sw: usize, id: PktId, clone_delay: Time) {
        if self.sws[sw].clone.push(c.now + clone_delay, id) {
            c.timer(c.now + clone_delay, key(CLONE, sw as u32));
        }
    }

    fn arm(&mut self, c: &mut HookCtx, p: PortId, at: Time) {
        let st = &mut self.ports[p.idx()];
        if st.armed.is_none_or(|a| a > at) {
            st.armed = Some(at);
            c.timer(at, key(IDEAL, p.0));
        }
    }

    /// A copy leaves the cache: its bytes are no longer held for its primary.
    fn unhold(&mut self, c: &mut HookCtx, id: PktId) {
        let p = self.meta[id.idx()].primary;
        let size = c.packet(id).size as u64;
        let st = &mut self.ports[p.idx()];
        st.held -= 1;
        st.held_bytes -= size;
        self.sws[st.sw as usize].cache_bytes -= size;
        self.try_restore(p);
    }

    /// A failed port returns to the switch's "up" view once its link is back and nothing is owed for it.
    fn try_restore(&mut self, p: PortId) {
        let st = &mut self.ports[p.idx()];
        if st.failed && st.back && st.link_up && st.held == 0 {
            st.failed = false;
            self.sws[st.sw as usize].failed -= 1;
        }
    }

    /// The switch's LeastLoadedPort register (§4.3.2): a caching queue for the next copy. If the port it names
    /// cannot carry traffic (its link is down), the first port that can (ours).
    fn least_loaded(&self, sw: usize) -> PortId {
        let s = &self.sws[sw];
        if self.ready(s.llp) {
            return s.llp;
        }
        let caching = || s.ports.iter().copied().filter(|&p| self.ports[p.idx()].caches);
        caching().find(|&p| self.ready(p)).or_else(|| caching().next()).unwrap_or(s.ports[0])
    }

    /// An original of `size` bytes leaves port `p` of switch `sw`: the port's utilization (bytes sent in the
    /// moving window) is updated, and the registers follow the thesis: a port below `LeastUtilization`
    /// becomes `LeastLoadedPort`, and traffic sent on `LeastLoadedPort` updates `LeastUtilization`. So the
    /// register changes only when originals flow, and copies keep going to one caching queue meanwhile.
    fn account(&mut self, now: Time, sw: usize, p: PortId, size: u64) {
        self.roll(now, p);
        let st = &mut self.ports[p.idx()];
        st.cur += size;
        let into = (now - st.win_start).0 as u128;
        let w = self.prm.window.0 as u128;
        let util = st.cur + (st.prev as u128 * (w - into.min(w)) / w) as u64;
        if !st.caches {
            return;
        }
        let s = &mut self.sws[sw];
        if util < s.least_util || p == s.llp {
            s.llp = p;
            s.least_util = util;
        }
    }

    fn roll(&mut self, now: Time, p: PortId) {
        let w = self.prm.window;
        let st = &mut self.ports[p.idx()];
        if now >= st.win_start + w {
            let windows = (now - st.win_start).0 / w.0;
            st.prev = if windows == 1 { st.cur } else { 0 };
            st.cur = 0;
            st.win_start = Time(st.win_start.0 + windows * w.0);
        }
    }

    /// Algs. 2-4 for a cached packet whose turn came (a pass ended, or its ideal release time): retire it,
    /// send it out of the backup port, or keep it. Returns false when it stays cached.
    fn decide(&mut self, c: &mut HookCtx, id: PktId) -> bool {
        let m = self.meta[id.idx()];
        let p = m.primary;
        let sw = self.ports[p.idx()].sw;
        if !self.old_enough(c.now, &m, sw) {
            return false;
        }
        let st = &self.ports[p.idx()];
        if !st.failed {
            self.unhold(c, id);
            if m.sole {
                // Ours: never drop the last one of a packet; out of its own port, now up again.
                self.n.resent += 1;
                c.effect(Effect::Enqueue { port: p, id });
            } else {
                self.n.retired += 1;
                c.absorb(id);
            }
            return true;
        }
        let b = self.backup(p, c.packet(id).dst);
        if b == PortId::NONE {
            self.n.no_backup += 1;
            self.ports[p.idx()].owed.retain(|&t| t != m.tag);
            self.unhold(c, id);
            c.effect(Effect::Drop { port: p, id, why: crate::net::port::DropReason::NoRoute });
            return true;
        }
        // Alg. 3 as written: an old enough copy goes to the backup port whether or not its link works yet, so
        // a δ shorter than the route failure time loses it there (δ must cover detection plus recovery).
        match self.ports[p.idx()].owed.front() {
            Some(&next) if m.tag > next => {
                // Alg. 4: back into the backup port's caching queue, where the waiting copies keep their order.
                self.n.waited += 1;
                self.meta[id.idx()].wait_at = b;
                return false;
            }
            Some(&next) if m.tag == next => {
                self.ports[p.idx()].owed.pop_front();
            }
            // Never (every copy held for a failed primary is owed): counted, and sent.
            _ => self.n.late += 1,
        }
        self.n.resent += 1;
        let st = &mut self.ports[p.idx()];
        if st.last_resent.is_some_and(|l| m.tag < l) {
            self.n.out_of_order += 1;
        }
        st.last_resent = Some(m.tag);
        self.unhold(c, id);
        if b != p {
            c.pk.get_mut(id).detour = true;
        }
        c.effect(Effect::Enqueue { port: b, id });
        true
    }

    /// A switch saw port `p` fail: δ rises, LRR computes its backups, and resending starts from the oldest
    /// copy held for `p`.
    fn detect(&mut self, c: &mut HookCtx, p: PortId) {
        let st = &mut self.ports[p.idx()];
        let sw = st.sw as usize;
        // δ rises until the switch sees the link back, also for a port failed again while it still owes copies.
        if !st.raised {
            st.raised = true;
            self.sws[sw].down += 1;
        }
        // A failure shorter than the detection delay is still reported (the detector saw the link go down);
        // the port is then back as soon as the switch sees it up again.
        if st.failed {
            st.back = false;
            return;
        }
        self.n.detected += 1;
        // What is owed: every copy held for p, in tag order (taken out to keep its capacity: no allocation).
        let mut owed = std::mem::take(&mut self.ports[p.idx()].owed);
        owed.clear();
        self.held(&mut |id| {
            let m = self.meta[id.idx()];
            if m.primary == p {
                owed.push_back(m.tag);
            }
        });
        owed.make_contiguous().sort_unstable();
        let st = &mut self.ports[p.idx()];
        st.owed = owed;
        st.failed = true;
        st.back = false;
        self.sws[sw].failed += 1;
        if self.prm.recovery == Recovery::Lrr {
            let b = lrr_backups(c, p);
            self.ports[p.idx()].backup = b;
        }
        // Copies of the ideal cache may now be due at a later time (δ rose): their timers re-arm as they fire.
    }

    fn ideal_release(&mut self, c: &mut HookCtx, p: PortId) {
        self.ports[p.idx()].armed = None;
        while let Some(&id) = self.ports[p.idx()].ideal.front() {
            let sw = self.ports[p.idx()].sw;
            if !self.old_enough(c.now, &self.meta[id.idx()], sw) {
                let m = self.meta[id.idx()];
                let age = elapsed_ns(c.now.0 / 1000, m.start, self.prm.timestamp_bits);
                let due = c.now + Time::ns(self.delta(sw).0.div_ceil(1000).saturating_sub(age));
                self.arm(c, p, due.max(c.now + Time::ns(1)));
                return;
            }
            let done = self.decide(c, id);
            debug_assert!(done, "an old enough copy at the head of its primary's queue always leaves");
            self.ports[p.idx()].ideal.pop_front();
        }
    }
}

impl Hooks for Sqr {
    const NAME: &'static str = "sqr";
    const HOOKS: HookSet = HookSet::ADMIT.with(HookSet::DEQUEUE).with(HookSet::SERVE).with(HookSet::INGRESS);

    /// LRR's detour mark: the switch after a detour does not send the packet back where it came from.
    fn on_ingress(&mut self, c: &mut HookCtx, at: PortId, id: PktId, cands: &[PortId]) -> Option<PortId> {
        let p = c.pk.get_mut(id);
        if !p.detour {
            return None;
        }
        p.detour = false;
        if p.out_port != at || cands.len() < 2 {
            return None;
        }
        let others = cands.iter().filter(|&&q| q != at).count() as u32;
        let pick = (p.hash % others) as usize;
        cands.iter().copied().filter(|&q| q != at).nth(pick)
    }

    /// Originals meant for a failed port go to its backup (Alg. 3, primary down), or into the cache while no
    /// port can carry them (ours: SB' before the circuit switch brings the port back).
    fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
        if !self.ports[at.idx()].failed || !self.protects(c.packet(id)) {
            return Admit::Queue;
        }
        match self.failed_route(at, c.packet(id).dst) {
            FailedRoute::Own => Admit::Queue,
            FailedRoute::Backup(b) => {
                self.redirect(c, b, id);
                Admit::Hold
            }
            FailedRoute::Cache if self.prm.cache == Cache::Off => Admit::Queue,
            FailedRoute::Cache => {
                self.n.taken_in += 1;
                self.cache(c, at, id, true);
                Admit::Hold
            }
        }
    }

    /// An original leaves port `at`: count it for the utilization window, and copy it if the port is up in
    /// the switch's view (Alg. 3). A packet already queued when its port was found failed goes out on the dead
    /// link, and its copy is sent the way `on_admit` sends an original.
    fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        let p = c.packet(id);
        let size = p.size as u64;
        if self.ports[at.idx()].sw == u32::MAX {
            return;
        }
        let sw = self.ports[at.idx()].sw as usize;
        let pt = &c.ports[at.idx()];
        self.ports[at.idx()].own_time += match self.prm.cache {
            Cache::Ring { turns: Turns::Packet, .. } => 1,
            _ => pt.tx_time(size + pt.wire_overhead as u64).0,
        };
        self.account(c.now, sw, at, size);
        let st = &self.ports[at.idx()];
        if !st.protected || self.prm.cache == Cache::Off || !self.protects(p) {
            return;
        }
        if st.failed {
            match self.failed_route(at, p.dst) {
                FailedRoute::Own => {}
                FailedRoute::Backup(b) => {
                    let copy = c.copy(id);
                    self.redirect(c, b, copy);
                }
                FailedRoute::Cache => {
                    self.n.taken_in += 1;
                    let copy = c.copy(id);
                    self.cache(c, at, copy, false);
                }
            }
            return;
        }
        if let Some(total) = self.prm.buffer[st.sw as usize] {
            let sw = &self.sws[st.sw as usize];
            let queued: u64 = sw.ports.iter().map(|q| c.ports[q.idx()].bytes).sum();
            if (queued + sw.cache_bytes) as f64 > self.prm.backstop * total as f64 {
                self.n.backstopped += 1;
                return;
            }
        }
        self.n.copies += 1;
        let copy = c.copy(id);
        self.cache(c, at, copy, false);
    }

    /// The caching queue and the port's own queue share a priority level, served round-robin (§4.4.4): a
    /// pass when the caching queue's head is of a more urgent class, or of the same class and it is its turn.
    /// Turns are by packet by default: one pass per own packet while both queues have work, which is what
    /// Fig. 4.14 measured (a line-rate port keeps 9.2 of its 9.9 Gb/s beside 10 Gb/s of SQR traffic;
    /// docs/sqr.md). By transmitter time (`turns = "time"`), cheap passes come so often that the caching
    /// queue takes half of a busy port.
    fn on_serve(&mut self, c: &mut HookCtx, at: PortId) -> Option<Time> {
        let Cache::Ring { pass_cost, turns, .. } = self.prm.cache else { return None };
        let st = &self.ports[at.idx()];
        let &head = st.cache_q.front()?;
        let pt = &c.ports[at.idx()];
        let class = c.packet(head).class as usize;
        let contended = pt.queue.head_class(pt.paused);
        let serve = match contended {
            None => true,
            Some(q) if q < class => false,
            Some(q) if q > class => true,
            _ => st.pass_time <= st.own_time,
        };
        let st = &mut self.ports[at.idx()];
        if contended != Some(class) {
            // Round robin is between backlogged queues: time spent while one was idle does not count.
            (st.own_time, st.pass_time) = (0, 0);
        }
        if !serve {
            return None;
        }
        st.cache_q.pop_front();
        st.passing = Some(head);
        self.n.passes += 1;
        let wire = c.packet(head).size as u64 + pt.wire_overhead as u64;
        let d = Time(((pt.tx_time(wire).0 as f64 * pass_cost).round() as u64).max(1));
        st.pass_time += if turns == Turns::Packet { 1 } else { d.0 };
        c.timer(c.now + d, key(PASS, at.0));
        Some(d)
    }

    fn on_link(&mut self, c: &mut HookCtx, at: PortId, up: bool) {
        if self.ports[at.idx()].sw == u32::MAX {
            return;
        }
        let st = &mut self.ports[at.idx()];
        st.link_up = up;
        if !st.protected {
            return;
        }
        if up {
            c.timer(c.now + self.prm.detect, key(BACK, at.0));
        } else {
            st.back = false;
            c.timer(c.now + self.prm.detect, key(DETECT, at.0));
        }
    }

    fn on_timer(&mut self, c: &mut HookCtx, k: u32) {
        let i = k & ((1 << KIND_SHIFT) - 1);
        match k >> KIND_SHIFT {
            PASS => {
                let at = PortId(i);
                let id = self.ports[at.idx()].passing.take().expect("a pass without a copy");
                c.effect(Effect::Release { port: at });
                if !self.decide(c, id) {
                    let sw = self.ports[at.idx()].sw as usize;
                    let Cache::Ring { clone_delay, .. } = self.prm.cache else { unreachable!() };
                    self.ring_again(c, sw, id, clone_delay);
                }
            }
            CLONE => {
                let sw = i as usize;
                let (id, next) = self.sws[sw].clone.pop();
                if let Some(t) = next {
                    c.timer(t, key(CLONE, i));
                }
                let q = match self.meta[id.idx()].wait_at {
                    PortId::NONE => self.least_loaded(sw),
                    b => b,
                };
                self.ports[q.idx()].cache_q.push_back(id);
                c.effect(Effect::Kick { port: q });
            }
            DETECT => self.detect(c, PortId(i)),
            IDEAL => {
                if self.ports[i as usize].armed == Some(c.now) {
                    self.ideal_release(c, PortId(i));
                }
            }
            BACK => {
                let p = PortId(i);
                let st = &mut self.ports[p.idx()];
                if st.link_up {
                    st.back = true;
                    let sw = st.sw as usize;
                    if std::mem::take(&mut st.raised) {
                        // The route is back: δ falls (once no other port of the switch is down), so the
                        // copies waiting for it go out now, in order, rather than each at the raised age.
                        // What arrived during the failure is held for less than the raised δ (Fig. 4.8's
                        // recovery times below 760 µs).
                        self.sws[sw].down -= 1;
                        if self.sws[sw].down == 0 && self.prm.cache == Cache::Ideal {
                            for j in 0..self.sws[sw].ports.len() {
                                let q = self.sws[sw].ports[j];
                                if !self.ports[q.idx()].ideal.is_empty() {
                                    self.ideal_release(c, q);
                                }
                            }
                        }
                    }
                    self.try_restore(p);
                }
            }
            _ => unreachable!("unknown SQR timer"),
        }
    }

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        for s in &self.ports {
            s.cache_q.iter().chain(s.passing.iter()).chain(s.ideal.iter()).for_each(|&id| f(id));
        }
        for s in &self.sws {
            s.clone.iter().for_each(&mut *f);
        }
    }

    // Split between the parts of a parallel run: its state is per port and per switch, its copies never
    // leave their switch, and each timer acts at one switch (a switch's clone pipe, a port's pass, release,
    // detection); a link's change reaches only the parts of the ports it concerns (`Network::link_changed`).
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], k: u32) -> Option<NodeId> {
        self.timer_at(ports, k)
    }

    fn take_part(&mut self, other: &mut Sqr, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        self.take_switches(other, ports, theirs);
    }

    fn summary(&self) -> serde_json::Value {
        let n = self.n;
        let max_port = self.ports.iter().map(|s| s.max_held_bytes).max().unwrap_or(0);
        let max_sw = self.sws.iter().map(|s| s.max_cache_bytes).max().unwrap_or(0);
        let failed_now = self.ports.iter().filter(|s| s.failed).count();
        serde_json::json!({
            "ports_failed_at_end": failed_now,
            "copies": n.copies,
            "passes": n.passes,
            "retired": n.retired,
            "resent": n.resent,
            "resent_late": n.late,
            "waited_for_order": n.waited,
            "resent_out_of_order": n.out_of_order,
            "redirected": n.redirected,
            "taken_in": n.taken_in,
            "backstopped": n.backstopped,
            "no_backup": n.no_backup,
            "failures_detected": n.detected,
            "max_cache_bytes_per_port": max_port,
            "max_cache_bytes_per_switch": max_sw,
            // δ is raised only while a detected failure lasts.
            "max_delta_ns": (self.prm.delta + if n.detected > 0 { self.prm.raise } else { Time::ZERO }).0 / 1000,
        })
    }
}
