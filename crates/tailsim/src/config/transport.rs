//! The transport section: kinds, their defaults (TCP, DCTCP, pFabric's minimal rate control), priorities and
//! priority classes.

use super::build::{Ctx, R};
use super::schema::{ClassThresholds, TransportCfg};
use crate::metrics::Framing;
use crate::net::queue::CLASSES;
use crate::transport::rdma::{Rdma, RdmaConfig};
use crate::transport::tcp::{
    ClassBy, ClassPolicy, CongestionControl, CubicParams, NoticeReaction, Priority, Tcp, TcpConfig,
};
use crate::transport::Transport;
use crate::units::{BitsPerSec, Time};
use tailsim_workload::SizeCdf;

/// The transport and its parameters. `line_rate` is the hosts' link rate; `workload` the first Poisson
/// workload's size distribution and load (for thresholds derived from it).
pub(super) fn transport(
    c: &Ctx,
    t: &TransportCfg,
    fr: Framing,
    ack: u32,
    port_buffer: Option<u64>,
    line_rate: BitsPerSec,
    workload: Option<(&SizeCdf, f64)>,
) -> R<Transport> {
    let kind = t.kind.clone().unwrap_or_else(|| "tcp".into());
    let pfabric = kind == "pfabric";
    let pias = kind == "pias";
    let cc = match kind.as_str() {
        // "ideal" runs no packets (flow-level SRPT, see ideal.rs); the TCP state is never used.
        "tcp" | "pfabric" | "ideal" => CongestionControl::NewReno,
        // PIAS (Bai et al., NSDI 2015): DCTCP under a multi-level feedback queue (`class_policy`).
        "dctcp" | "pias" => {
            let g = t.dctcp_g.unwrap_or(1.0 / 16.0);
            let a = t.dctcp_alpha_init.unwrap_or(1.0);
            if !(g > 0.0 && g <= 1.0) {
                return Err(c.err("transport.dctcp_g", format!("must be in (0, 1], found {g}")));
            }
            if !(0.0..=1.0).contains(&a) {
                return Err(c.err("transport.dctcp_alpha_init", format!("must be in [0, 1], found {a}")));
            }
            CongestionControl::Dctcp { g, alpha_init: a }
        }
        // CUBIC (RFC 9438): NewReno's loss recovery with CUBIC's window (tcp/cubic.rs).
        "cubic" => {
            let d = CubicParams::default();
            let p = CubicParams { c: t.cubic_c.unwrap_or(d.c), beta: t.cubic_beta.unwrap_or(d.beta) };
            if !(p.c > 0.0 && p.c.is_finite()) {
                return Err(c.err("transport.cubic_c", format!("must be positive, found {}", p.c)));
            }
            if !(p.beta > 0.0 && p.beta < 1.0) {
                return Err(c.err("transport.cubic_beta", format!("must be in (0, 1), found {}", p.beta)));
            }
            CongestionControl::Cubic(p)
        }
        o => return Err(c.err("transport.kind", format!("unknown transport \"{o}\"; expected \"tcp\", \"dctcp\", \"cubic\", \"pfabric\", \"pias\", \"ideal\", \"homa\", \"phost\", \"ndp\" or \"rdma\""))),
    };
    let class = class_policy(c, t, workload, pias)?;
    let dctcp = matches!(cc, CongestionControl::Dctcp { .. });
    let cubic = matches!(cc, CongestionControl::Cubic(_));
    for (k, set, applies) in [
        ("dctcp_g", t.dctcp_g.is_some(), dctcp),
        ("dctcp_alpha_init", t.dctcp_alpha_init.is_some(), dctcp),
        ("cubic_c", t.cubic_c.is_some(), cubic),
        ("cubic_beta", t.cubic_beta.is_some(), cubic),
    ] {
        if set && !applies {
            return Err(c.err(&format!("transport.{k}"), format!("does not apply to kind \"{kind}\"")));
        }
    }
    // pFabric's minimal rate control (Table 1 and §4.2 of the paper; docs/pfabric.md): initial window = BDP
    // (12 packets), timeouts only, a fixed 45 us RTO, probe mode after 5 consecutive timeouts, cwnd capped
    // at the port buffer in packets minus one, remaining-size priorities.
    let priority = match t.priority.as_deref().unwrap_or(if pfabric { "remaining" } else { "none" }) {
        "none" => Priority::None,
        "remaining" => Priority::Remaining,
        "bytes-sent" => Priority::BytesSent,
        "flow-size" => Priority::FlowSize,
        "class" => Priority::Class,
        "deadline" => Priority::Deadline,
        o => {
            return Err(c.err(
                "transport.priority",
                format!("expected \"none\", \"remaining\", \"bytes-sent\", \"flow-size\", \"class\" or \"deadline\", found \"{o}\""),
            ))
        }
    };
    if priority == Priority::Deadline {
        match &class {
            ClassPolicy::Fixed(c0) if (*c0 as usize) < CLASSES - 1 => {}
            ClassPolicy::Fixed(_) => {
                return Err(c.err(
                    "transport.class",
                    "deadline priorities need the class below it for flows without deadlines (class 0–6)",
                ))
            }
            ClassPolicy::Thresholds { .. } => {
                return Err(c.err(
                    "transport.class_thresholds",
                    "does not combine with priority = \"deadline\" (which uses two classes of its own)",
                ))
            }
        }
    }
    let fixed_rto = t.rto.map(|d| d.0).or(pfabric.then_some(Time::us(45)));
    if fixed_rto == Some(Time::ZERO) {
        return Err(c.err("transport.rto", "must be positive"));
    }
    let probe_after = match t.probe_after.unwrap_or(if pfabric { 5 } else { 0 }) {
        0 => None,
        n => Some(n),
    };
    let max_cwnd = t.max_cwnd.or_else(|| {
        let pkt = fr.mss + fr.header;
        port_buffer.filter(|_| pfabric).map(|b| ((b / pkt) as u32).saturating_sub(1).max(1))
    });
    if max_cwnd == Some(0) {
        return Err(c.err("transport.max_cwnd", "must be at least 1 segment"));
    }
    let init_cwnd = t.init_cwnd.unwrap_or(if pfabric { 12 } else { 10 });
    if init_cwnd == 0 {
        return Err(c.err("transport.init_cwnd", "must be at least 1 segment"));
    }
    let min_rto = t.min_rto.map_or(Time::us(200), |d| d.0);
    let max_rto = t.max_rto.map_or(Time::ms(1000), |d| d.0);
    if min_rto == Time::ZERO {
        return Err(c.err("transport.min_rto", "must be positive"));
    }
    if max_rto < min_rto {
        return Err(c.err("transport.max_rto", format!("must be at least min_rto ({min_rto})")));
    }
    let init_rto = t.init_rto.map_or(min_rto, |d| d.0);
    if init_rto == Time::ZERO {
        return Err(c.err("transport.init_rto", "must be positive"));
    }
    let dupthresh = t.dupthresh.unwrap_or(3);
    if dupthresh == 0 {
        return Err(c.err("transport.dupthresh", "must be at least 1"));
    }
    let handshake = t.handshake.unwrap_or(false);
    let syn_rto = t.syn_rto.map_or(Time::ms(1000), |d| d.0);
    if syn_rto == Time::ZERO {
        return Err(c.err("transport.syn_rto", "must be positive"));
    }
    if t.syn_rto.is_some() && !handshake {
        return Err(c.err("transport.syn_rto", "is the SYN's timeout: it needs handshake = true"));
    }
    if handshake && (pfabric || kind == "ideal") {
        return Err(c.err("transport.handshake", format!("not modelled for kind \"{kind}\"")));
    }
    let delayed_ack = t.delayed_ack.unwrap_or(1);
    if delayed_ack == 0 {
        return Err(c.err("transport.delayed_ack", "segments per ACK must be at least 1"));
    }
    Ok(Transport::Tcp(Tcp::new(TcpConfig {
        mss: fr.mss as u32,
        header: fr.header as u32,
        ack_size: ack,
        init_cwnd,
        min_rto,
        max_rto,
        init_rto,
        dupthresh,
        delayed_ack,
        delayed_ack_timeout: t.delayed_ack_timeout.map_or(Time::us(40), |d| d.0),
        sack: t.sack.unwrap_or(true),
        cc,
        class,
        priority,
        line_rate,
        fast_retransmit: t.fast_retransmit.unwrap_or(!pfabric),
        fixed_rto,
        probe_after,
        max_cwnd,
        ssthresh_from_cwnd: pfabric,
        ecn: t.ecn.unwrap_or(false),
        notices: NoticeReaction::Count,
        ooo_inflation: t.ooo_inflation.unwrap_or(false),
        handshake,
        syn_rto,
        cwr_freeze: !t.cwr_growth.unwrap_or(false),
        slow_start_cap: t.slow_start_cap.unwrap_or(!pfabric),
    })))
}

/// RDMA WRITE over RoCEv2 RC (`transport/rdma.rs`): go-back-N at line rate, a fixed timeout (1 ms: the
/// thesis's CX6-DX), an ACK per packet unless `ack_every` coalesces them.
pub(super) fn rdma(c: &Ctx, t: &TransportCfg, fr: Framing, ack: u32, hosts: usize) -> R<Transport> {
    let rto = c.positive("transport.rto", t.rto.map(|d| d.0))?.unwrap_or(Time::ms(1));
    let ack_every = t.ack_every.unwrap_or(1);
    if ack_every == 0 {
        return Err(c.err("transport.ack_every", "packets per ACK must be at least 1"));
    }
    // Class thresholds are TCP's (`only_kind_keys`): RDMA's policy is one fixed class.
    let ClassPolicy::Fixed(class) = class_policy(c, t, None, false)? else {
        unreachable!("class thresholds are rejected for kind \"rdma\"")
    };
    let cfg = RdmaConfig {
        payload: fr.mss as u32,
        header: fr.header as u32,
        ack_size: ack,
        wire_overhead: fr.wire_overhead as u32,
        rto,
        ack_every,
        class,
    };
    Ok(Transport::Rdma(Rdma::new(cfg, hosts)))
}

/// Which class data packets use: one fixed class, or classes by size thresholds (pFabric §6), or — PIAS, by
/// default — a multi-level feedback queue on bytes sent with 8 levels derived for the workload.
fn class_policy(c: &Ctx, t: &TransportCfg, workload: Option<(&SizeCdf, f64)>, pias: bool) -> R<ClassPolicy> {
    let by = match t.class_by.as_deref().unwrap_or(if pias { "bytes-sent" } else { "flow-size" }) {
        "flow-size" => ClassBy::FlowSize,
        "bytes-sent" => ClassBy::BytesSent,
        "last-byte" => ClassBy::LastByte,
        o => {
            return Err(c.err(
                "transport.class_by",
                format!("expected \"flow-size\", \"bytes-sent\" or \"last-byte\", found \"{o}\""),
            ))
        }
    };
    let pias_default = ClassThresholds::Rule("optimal".into());
    let th = match &t.class_thresholds {
        Some(th) => Some(th),
        None if pias && t.class.is_none() => Some(&pias_default),
        None => None,
    };
    let classes = t.classes.or((pias && t.class_thresholds.is_none()).then_some(CLASSES as u8));
    let Some(th) = th else {
        for (k, set) in [("classes", t.classes.is_some()), ("class_by", t.class_by.is_some())] {
            if set {
                return Err(c.err(&format!("transport.{k}"), "applies only with `class_thresholds`"));
            }
        }
        let class = t.class.unwrap_or(0);
        if class as usize >= CLASSES {
            return Err(c.err("transport.class", format!("must be 0–7, found {class}")));
        }
        return Ok(ClassPolicy::Fixed(class));
    };
    if t.class.is_some() {
        return Err(c.err("transport.class", "give either `class` or `class_thresholds`, not both"));
    }
    let thresholds: Vec<u64> = match th {
        ClassThresholds::Sizes(v) => {
            if t.classes.is_some() {
                return Err(c.err(
                    "transport.classes",
                    "applies only to derived thresholds (\"optimal\", \"equal-count\"); a list gives len + 1 classes",
                ));
            }
            v.iter().map(|s| s.0).collect()
        }
        ClassThresholds::Rule(rule) => {
            let k = c.need(&classes, "transport.classes", "the number of classes (2–8) to derive thresholds for")?;
            if !(2..=CLASSES as u8).contains(&k) {
                return Err(c.err("transport.classes", format!("must be 2–8, found {k}")));
            }
            let Some((cdf, load)) = workload else {
                if pias && t.class_thresholds.is_none() {
                    return Err(c.err("transport.class_thresholds", "PIAS derives its demotion thresholds from a Poisson workload's `cdf`; there is none: give the thresholds (a list of sizes)"));
                }
                return Err(c.err(
                    "transport.class_thresholds",
                    format!("\"{rule}\" derives thresholds from a Poisson workload with a `cdf`; there is none"),
                ));
            };
            // PIAS on a workload with a tail (thesis W1): thresholds from the table, the tail's mass at its end.
            let body;
            let cdf = if pias && cdf.tail().is_some() {
                body = cdf.body_only();
                &body
            } else {
                cdf
            };
            match rule.as_str() {
                "equal-count" => tailsim_workload::equal_count_thresholds(cdf, k as usize),
                "optimal" => tailsim_workload::optimal_thresholds(cdf, load, k as usize)
                    .map_err(|e| c.err("transport.class_thresholds", e.to_string()))?,
                o => {
                    return Err(c.err(
                        "transport.class_thresholds",
                        format!("expected a list of sizes, \"optimal\" or \"equal-count\", found \"{o}\""),
                    ))
                }
            }
        }
    };
    if thresholds.is_empty() || thresholds.len() >= CLASSES {
        return Err(c.err(
            "transport.class_thresholds",
            format!("expected 1–7 thresholds (2–8 classes), found {}", thresholds.len()),
        ));
    }
    if thresholds.windows(2).any(|w| w[0] >= w[1]) || thresholds[0] == 0 {
        return Err(c.err("transport.class_thresholds", "thresholds must be positive and increasing"));
    }
    Ok(ClassPolicy::Thresholds { thresholds, by })
}

/// Which family a transport kind belongs to, for the keys it accepts.
fn family(kind: &str) -> &'static str {
    match kind {
        "homa" => "homa",
        "phost" => "phost",
        "ndp" => "ndp",
        "rdma" => "rdma",
        _ => "tcp",
    }
}

/// Each key applies to some transport families; a key set for another family is an error, not ignored.
pub(super) fn only_kind_keys(c: &Ctx, t: &TransportCfg) -> R<()> {
    const TCP: &[&str] = &["tcp"];
    const HOMA: &[&str] = &["homa"];
    const RD: &[&str] = &["homa", "phost", "ndp"];
    const HP: &[&str] = &["homa", "phost"];
    const PHOST: &[&str] = &["phost"];
    const NDP: &[&str] = &["ndp"];
    const TCP_RDMA: &[&str] = &["tcp", "rdma"];
    const RDMA: &[&str] = &["rdma"];
    let keys: [(&str, bool, &[&str]); 42] = [
        ("ecn", t.ecn.is_some(), TCP),
        ("init_cwnd", t.init_cwnd.is_some(), TCP),
        ("min_rto", t.min_rto.is_some(), TCP),
        ("max_rto", t.max_rto.is_some(), TCP),
        ("init_rto", t.init_rto.is_some(), TCP),
        ("dupthresh", t.dupthresh.is_some(), TCP),
        ("delayed_ack", t.delayed_ack.is_some(), TCP),
        ("delayed_ack_timeout", t.delayed_ack_timeout.is_some(), TCP),
        ("sack", t.sack.is_some(), TCP),
        ("class", t.class.is_some(), TCP_RDMA),
        ("priority", t.priority.is_some(), TCP),
        ("class_thresholds", t.class_thresholds.is_some(), TCP),
        ("fast_retransmit", t.fast_retransmit.is_some(), TCP),
        ("rto", t.rto.is_some(), TCP_RDMA),
        ("ack_every", t.ack_every.is_some(), RDMA),
        ("probe_after", t.probe_after.is_some(), TCP),
        ("max_cwnd", t.max_cwnd.is_some(), TCP),
        ("classes", t.classes.is_some(), TCP),
        ("class_by", t.class_by.is_some(), TCP),
        ("dctcp_g", t.dctcp_g.is_some(), TCP),
        ("dctcp_alpha_init", t.dctcp_alpha_init.is_some(), TCP),
        ("cubic_c", t.cubic_c.is_some(), TCP),
        ("cubic_beta", t.cubic_beta.is_some(), TCP),
        ("handshake", t.handshake.is_some(), TCP),
        ("syn_rto", t.syn_rto.is_some(), TCP),
        ("cwr_growth", t.cwr_growth.is_some(), TCP),
        ("slow_start_cap", t.slow_start_cap.is_some(), TCP),
        ("header", t.header.is_some(), RD),
        ("rtt_bytes", t.rtt_bytes.is_some(), RD),
        ("resend_timeout", t.resend_timeout.is_some(), RD),
        ("pacer", t.pacer.is_some(), HP),
        ("unscheduled_levels", t.unscheduled_levels.is_some(), HOMA),
        ("unscheduled_cutoffs", t.unscheduled_cutoffs.is_some(), HOMA),
        ("overcommit", t.overcommit.is_some(), HOMA),
        ("tail_boost", t.tail_boost.is_some(), HOMA),
        ("free_tokens_high", t.free_tokens_high.is_some(), PHOST),
        ("token_expiry", t.token_expiry.is_some(), PHOST),
        ("token_timeout", t.token_timeout.is_some(), PHOST),
        ("downgrade_for", t.downgrade_for.is_some(), PHOST),
        ("pull_order", t.pull_order.is_some(), NDP),
        ("pull_on_ack", t.pull_on_ack.is_some(), NDP),
        ("pull_spacing", t.pull_spacing.is_some(), NDP),
    ];
    let kind = t.kind.as_deref().unwrap_or("tcp");
    let fam = family(kind);
    match keys.iter().find(|(_, set, fams)| *set && !fams.contains(&fam)) {
        Some((k, _, _)) => Err(c.err(&format!("transport.{k}"), format!("does not apply to kind \"{kind}\""))),
        None => Ok(()),
    }
}
