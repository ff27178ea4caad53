//! pFabric's deadline workload and pFabric-EDF (§5.4.2): which flows get deadlines, the 1.25 × ideal floor,
//! application throughput, and the two-buffer EDF ports.

mod common;
use common::*;
use tailsim::units::Time;

fn workload(mean: &str, flows: u32, extra: &str) -> String {
    format!(
        "[topology]\npreset = \"pfabric-144\"\n{extra}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nflows = {flows}\ndeadline_mean = \"{mean}\"\n"
    )
}

const IDEAL: &str = "[transport]\nkind = \"ideal\"";

#[test]
fn small_flows_get_exponential_deadlines_above_the_floor() {
    let (e, s) = run(&workload("1ms", 4000, IDEAL));
    let r = &e.world.records.all();
    for f in r {
        assert_eq!(f.deadline.is_some(), f.size < 200_000, "flow {} of {} B", f.id, f.size);
        if let Some(d) = f.deadline {
            assert!(d.0 as f64 >= 1.25 * f.ideal.0 as f64, "deadline {d} below 1.25 × ideal {}", f.ideal);
        }
    }
    let d: Vec<f64> = r.iter().filter_map(|f| f.deadline).map(|d| d.secs()).collect();
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    // ~2400 exponential draws of mean 1 ms (standard error 2 %); the floor (tens of µs) barely moves it.
    assert!((mean / 1e-3 - 1.0).abs() < 0.08, "mean deadline {mean}");
    let ds = s.deadlines.expect("deadline statistics");
    assert_eq!(ds.flows, d.len());
    assert_eq!(ds.flows + ds.other_flows, 4000);
}

#[test]
fn tight_deadlines_sit_exactly_on_the_floor() {
    let (e, _) = run(&workload("1ns", 500, IDEAL).replace("flows = 500", "flows = 500\ndeadline_min_slack = 1.5"));
    for f in e.world.records.all().iter().filter(|f| f.deadline.is_some()) {
        assert_eq!(f.deadline.unwrap(), Time((f.ideal.0 as f64 * 1.5).ceil() as u64));
    }
}

#[test]
fn no_deadlines_no_deadline_statistics() {
    let (e, s) = run(&workload("1ms", 50, IDEAL).replace("deadline_mean = \"1ms\"\n", ""));
    assert!(s.deadlines.is_none());
    assert!(e.world.records.all().iter().all(|f| f.deadline.is_none()));
}

const PFABRIC: &str = "[switch]\nqueue = \"pfabric\"\nbuffer = \"36KB\"\n[routing]\nload_balance = \"spray\"\n[transport]\nkind = \"pfabric\"";

#[test]
fn pfabric_edf_meets_nearly_all_deadlines_and_tcp_does_not() {
    // The paper (web search, load 0.6, mean deadline 100 µs): pFabric-EDF 98.9 %, pFabric 98.4 %.
    let edf =
        PFABRIC.replace("buffer = \"36KB\"", "buffer = \"36KB\"\npfabric_queues = 2") + "\npriority = \"deadline\"";
    let tcp = "[switch]\nbuffer = \"225KB\"\n[transport]\nkind = \"tcp\"\ninit_cwnd = 12\nfast_retransmit = false";
    let at = |extra: &str| run(&workload("100us", 1500, extra)).1.deadlines.unwrap().application_throughput;
    let (edf, pf, tcp) = (at(&edf), at(PFABRIC), at(tcp));
    assert!(edf >= 0.97 && pf >= 0.95, "pFabric-EDF {edf:.4}, pFabric {pf:.4}");
    assert!(tcp < pf - 0.1, "TCP {tcp:.4} should miss far more deadlines than pFabric {pf:.4}");
}

#[test]
fn edf_orders_by_deadline_not_by_size() {
    // Same arrivals, same deadlines. EDF serves deadline flows earliest-deadline-first rather than
    // smallest-first: it meets at least as many deadlines as pFabric, but their mean slowdown is higher than
    // under SRPT-like remaining-size priorities (which minimize mean FCT, not missed deadlines).
    let edf =
        PFABRIC.replace("buffer = \"36KB\"", "buffer = \"36KB\"\npfabric_queues = 2") + "\npriority = \"deadline\"";
    let (a, sa) = run(&workload("100us", 1500, &edf));
    let (b, sb) = run(&workload("100us", 1500, PFABRIC));
    let slow = |e: &tailsim::Experiment| {
        let v: Vec<f64> =
            e.world.records.all().iter().filter(|r| r.deadline.is_some()).filter_map(|r| r.slowdown()).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (ma, mb) = (sa.deadlines.unwrap().met, sb.deadlines.unwrap().met);
    assert!(ma >= mb, "deadlines met: EDF {ma}, pFabric {mb}");
    assert!(slow(&a) > slow(&b), "deadline flows' mean slowdown: EDF {} vs pFabric {}", slow(&a), slow(&b));
}

#[test]
fn deadline_keys_are_checked() {
    let err = config_error;
    let w = workload("100us", 10, "");
    assert!(err(&w.replace("deadline_mean = \"100us\"", "deadline_below = \"100KB\""))
        .contains("workload[0].deadline_below"));
    assert!(err(&w.replace("deadline_mean = \"100us\"", "deadline_mean = \"0us\"")).contains("must be positive"));
    assert!(err(&format!("{w}deadline_min_slack = 0.5\n")).contains("deadline_min_slack"));
    let e = err(&workload("100us", 10, "[transport]\npriority = \"deadline\"\nclass = 7"));
    assert!(e.contains("transport.class"), "{e}");
    let e = err(&workload("100us", 10, "[switch]\npfabric_queues = 2"));
    assert!(e.contains("switch.pfabric_queues") && e.contains("pfabric"), "{e}");
    let e = err(&workload(
        "100us",
        10,
        "[switch]\nqueue = \"pfabric\"\npfabric_queues = 9\n[transport]\nkind = \"pfabric\"",
    ));
    assert!(e.contains("1–8"), "{e}");
}
