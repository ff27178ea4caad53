//! CoDel marking (RFC 8289, with ECN marks instead of drops): the FastLane thesis's TCP baseline runs NewReno
//! with "CoDel early marking" (§6.6). At dequeue, a packet's sojourn time is compared with `target`; once it has
//! stayed above for `interval`, the port enters the marking state and marks ECN-capable packets at times
//! spaced by interval / √count, as CoDel would drop them, until the sojourn falls below target again.
//! Packets that are not ECN-capable pass unmarked (CoDel would drop them; marking mode never does).

use super::Hooks;
use crate::net::hooks::{HookCtx, HookSet};
use crate::net::port::Port;
use crate::units::{NodeId, PktId, PortId, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    pub target: Time,
    pub interval: Time,
    /// Below this many queued bytes the queue is never considered standing (RFC 8289's MAXPACKET).
    pub mtu: u64,
}

#[derive(Clone, Copy, Default)]
struct State {
    /// When the sojourn time will have been above target for a whole interval (ZERO = it is below).
    first_above: Time,
    marking: bool,
    mark_next: Time,
    count: u32,
    last_count: u32,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CodelStats {
    /// Packets marked.
    pub marks: u64,
    /// Times a port entered the marking state.
    pub episodes: u64,
}

pub struct Codel {
    prm: CodelParams,
    ports: Vec<State>,
    stats: CodelStats,
}

impl Codel {
    pub fn new(prm: CodelParams, ports: usize) -> Codel {
        Codel { prm, ports: vec![State::default(); ports], stats: CodelStats::default() }
    }
}

/// RFC 8289's control law: the next mark `interval / √count` after `t`.
fn control_law(t: Time, interval: Time, count: u32) -> Time {
    t + Time((interval.0 as f64 / (count.max(1) as f64).sqrt()) as u64)
}

impl Hooks for Codel {
    const NAME: &'static str = "codel";
    const HOOKS: HookSet = HookSet::DEQUEUE;

    fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        let now = c.now;
        let sojourn = now.saturating_sub(c.packet(id).enq_time);
        let queued = c.ports[at.idx()].bytes;
        let prm = self.prm;
        let st = &mut self.ports[at.idx()];
        let mut ok_to_mark = false;
        if sojourn < prm.target || queued <= prm.mtu {
            st.first_above = Time::ZERO;
        } else if st.first_above == Time::ZERO {
            st.first_above = now + prm.interval;
        } else if now >= st.first_above {
            ok_to_mark = true;
        }
        let mut mark = false;
        if st.marking {
            if !ok_to_mark {
                st.marking = false;
            } else if now >= st.mark_next {
                mark = true;
                st.count += 1;
                st.mark_next = control_law(st.mark_next, prm.interval, st.count);
            }
        } else if ok_to_mark {
            mark = true;
            st.marking = true;
            // Resume near the previous rate if the last episode ended recently (RFC 8289 §5.5).
            let delta = st.count.wrapping_sub(st.last_count);
            st.count =
                if delta > 1 && now.saturating_sub(st.mark_next) < Time(16 * prm.interval.0) { delta } else { 1 };
            st.last_count = st.count;
            st.mark_next = control_law(now, prm.interval, st.count);
            self.stats.episodes += 1;
        }
        if mark {
            let p = c.pk.get_mut(id);
            if p.ect {
                p.ce = true;
                self.stats.marks += 1;
            }
        }
    }

    // Split between the parts of a parallel run: its state is per port, it has no timers.
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn take_part(&mut self, other: &mut Codel, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        super::take_ports(&mut self.ports, &mut other.ports, ports, theirs);
        self.stats.episodes += other.stats.episodes;
        self.stats.marks += other.stats.marks;
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats).unwrap_or_default()
    }
}
