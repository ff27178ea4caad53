//! pFabric's "Ideal": the greedy SRPT schedule on one big non-blocking switch (Alizadeh et al. 2013,
//! Algorithm 1), simulated at flow level on the same arrival trace as a packet-level run.
//!
//! Whenever the set of active flows changes (an arrival or a completion), flows are taken in increasing order
//! of remaining size (ties: earlier arrival, then lower id) and each is served at full host-link rate if
//! neither its source nor its destination is already serving a smaller flow; all others wait (preemptive).
//! Only host links are bottlenecks. Time is integer picoseconds and a flow's work is its wire
//! serialization time, so there is no floating-point drift.

use crate::units::Time;

/// A flow for the Ideal: endpoints, arrival, and its transmission time at line rate.
#[derive(Clone, Copy, Debug)]
pub struct IdealFlow {
    pub src: u32,
    pub dst: u32,
    pub arrival: Time,
    /// Serialization time of all its bytes at the host link rate.
    pub work: Time,
}

/// Completion time (from arrival) of every flow under greedy SRPT. `flows` must be sorted by arrival.
pub fn srpt_greedy(flows: &[IdealFlow], hosts: usize) -> Vec<Time> {
    let n = flows.len();
    let mut done = vec![Time::ZERO; n];
    let mut active: Vec<(u64, usize)> = Vec::new(); // (remaining ps, index)
    let mut src_busy = vec![u32::MAX; hosts];
    let mut dst_busy = vec![u32::MAX; hosts];
    let mut served: Vec<usize> = Vec::new(); // positions in `active`
    let mut next = 0;
    let mut now = 0u64;
    let mut round = 0u32;
    while next < n || !active.is_empty() {
        if active.is_empty() {
            now = now.max(flows[next].arrival.0);
        }
        while next < n && flows[next].arrival.0 <= now {
            active.push((flows[next].work.0, next));
            next += 1;
        }
        // Algorithm 1 (busy markers stamped with the round number: no clearing of per-host arrays).
        active.sort_unstable_by_key(|&(rem, i)| (rem, flows[i].arrival, i));
        served.clear();
        for (k, &(_, i)) in active.iter().enumerate() {
            let f = &flows[i];
            if src_busy[f.src as usize] != round && dst_busy[f.dst as usize] != round {
                src_busy[f.src as usize] = round;
                dst_busy[f.dst as usize] = round;
                served.push(k);
            }
        }
        round = round.wrapping_add(1);
        let first_done = served.iter().map(|&k| active[k].0).min().expect("a non-empty active set serves a flow");
        let step = match flows.get(next) {
            Some(f) => first_done.min(f.arrival.0 - now),
            None => first_done,
        };
        for &k in &served {
            active[k].0 -= step;
        }
        now += step;
        active.retain(|&(rem, i)| {
            if rem == 0 {
                done[i] = Time(now - flows[i].arrival.0);
                false
            } else {
                true
            }
        });
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: advance one time unit at a time, re-running Algorithm 1 at every unit.
    fn brute(flows: &[IdealFlow], hosts: usize) -> Vec<Time> {
        let mut rem: Vec<u64> = flows.iter().map(|f| f.work.0).collect();
        let mut done = vec![None; flows.len()];
        let mut t = 0u64;
        while done.iter().any(Option::is_none) {
            let mut order: Vec<usize> =
                (0..flows.len()).filter(|&i| flows[i].arrival.0 <= t && done[i].is_none()).collect();
            order.sort_by_key(|&i| (rem[i], flows[i].arrival, i));
            let (mut s, mut d) = (vec![false; hosts], vec![false; hosts]);
            let mut serve = vec![];
            for i in order {
                let f = flows[i];
                if !s[f.src as usize] && !d[f.dst as usize] {
                    s[f.src as usize] = true;
                    d[f.dst as usize] = true;
                    serve.push(i);
                }
            }
            t += 1;
            for i in serve {
                rem[i] -= 1;
                if rem[i] == 0 {
                    done[i] = Some(Time(t - flows[i].arrival.0));
                }
            }
        }
        done.into_iter().map(Option::unwrap).collect()
    }

    fn f(src: u32, dst: u32, arrival: u64, work: u64) -> IdealFlow {
        IdealFlow { src, dst, arrival: Time(arrival), work: Time(work) }
    }

    #[test]
    fn hand_example_preemption_and_blocking() {
        // A (0→1, work 10) runs alone from 0. B (2→1, 3) arrives at 2 and preempts A at destination 1.
        // C (0→3, 4) arrives at 4: C (4) is smaller than A (8 left), so it takes source 0 while B still holds
        // destination 1. B ends at 5 (FCT 3), C at 8 (FCT 4), and A runs 8..16 (FCT 16).
        let flows = [f(0, 1, 0, 10), f(2, 1, 2, 3), f(0, 3, 4, 4)];
        assert_eq!(srpt_greedy(&flows, 4), vec![Time(16), Time(3), Time(4)]);
        assert_eq!(brute(&flows, 4), vec![Time(16), Time(3), Time(4)]);
    }

    #[test]
    fn matches_brute_force_on_random_tiny_traces() {
        let mut x: u64 = 0x9E3779B97F4A7C15;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..300 {
            let hosts = 2 + rnd(4) as usize;
            let n = 1 + rnd(8) as usize;
            let mut flows: Vec<IdealFlow> = (0..n)
                .map(|_| {
                    let s = rnd(hosts as u64) as u32;
                    let mut d = rnd(hosts as u64) as u32;
                    if d == s {
                        d = (d + 1) % hosts as u32;
                    }
                    f(s, d, rnd(20), 1 + rnd(12))
                })
                .collect();
            flows.sort_by_key(|f| f.arrival);
            assert_eq!(srpt_greedy(&flows, hosts), brute(&flows, hosts), "{flows:?}");
        }
    }
}
