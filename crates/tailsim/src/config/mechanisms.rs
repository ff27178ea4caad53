//! Switch mechanisms and routing changes from the configuration: each validates its own keys and installs
//! itself on the ports it covers (net/mech/). A new mechanism adds its keys to `schema.rs` and a block here.

use super::build::{Ctx, R};
use super::schema::ExperimentConfig;
use crate::net::mech::adaptive_lb::{AdaptiveLb, Rule};
use crate::net::mech::pfc::{Pfc, PfcParams};
use crate::net::mech::{bounce::BounceDrop, Mech};
use crate::net::Network;
use crate::units::Time;

pub(super) fn install(c: &Ctx, cfg: &ExperimentConfig, net: &mut Network) -> R<()> {
    if let Some(d) = cfg.routing.reroute {
        if d.0 == Time::ZERO {
            return Err(c.err(
                "routing.reroute",
                "the detection delay must be positive (omit the key for routes that never change)",
            ));
        }
        net.reroute = Some(d.0);
    }
    // Before PFC: at ingress, every mechanism sees each packet (PFC accounts) and the first to choose a port
    // wins (adaptive load balancing), whatever the order; tests/pfc.rs relies on this order to check it.
    let rule = match cfg.routing.load_balance.as_deref() {
        Some("adaptive") => Some(Rule::LeastQueued),
        Some("detail") => {
            let t: Vec<u64> = cfg
                .routing
                .alb_thresholds
                .as_ref()
                .map_or(vec![16 << 10, 64 << 10], |v| v.iter().map(|s| s.0).collect());
            if t.is_empty() || t[0] == 0 || t.windows(2).any(|w| w[0] >= w[1]) {
                return Err(c.err(
                    "routing.alb_thresholds",
                    "expected positive sizes in increasing order, e.g. [\"16KiB\", \"64KiB\"]",
                ));
            }
            Some(Rule::Favoured(t))
        }
        _ => None,
    };
    if cfg.routing.alb_thresholds.is_some() && !matches!(rule, Some(Rule::Favoured(_))) {
        return Err(c.err("routing.alb_thresholds", "applies only with routing.load_balance = \"detail\""));
    }
    if let Some(rule) = rule {
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::AdaptiveLb(AdaptiveLb::new(cfg.seed, rule)), ports);
    }
    if let Some(p) = &cfg.pfc {
        let pause = p.pause.map_or(8192, |s| s.0);
        let unpause = p.unpause.map_or(4557, |s| s.0);
        if pause == 0 {
            return Err(c.err("pfc.pause", "must be at least 1 byte"));
        }
        if unpause >= pause {
            return Err(c.err("pfc.unpause", format!("must be below pfc.pause ({pause} B), found {unpause} B")));
        }
        if cfg.switch.queue.as_deref() == Some("pfabric") {
            return Err(c.err("pfc", "PFC pauses priority classes of FIFO queues; pFabric queues have none"));
        }
        if net.ports.iter().any(|p| p.trim.is_some()) {
            // A trimmed packet changes size and class between the ingress charge and the release.
            return Err(c.err("pfc", "PFC does not combine with trimming switches (transport \"ndp\")"));
        }
        let prm = PfcParams { pause, unpause, response: p.response.map_or(Time::ZERO, |d| d.0) };
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::Pfc(Pfc::new(prm, net.ports.len())), ports);
    }
    if cfg.switch.bounce == Some(true) {
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::BounceDrop(BounceDrop::default()), ports);
    }
    Ok(())
}
