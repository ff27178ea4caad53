//! Switch mechanisms and routing changes from the configuration: each validates its own keys and installs
//! itself on the ports it covers (net/mech/). A new mechanism adds its keys to `schema.rs` and a block here.

use super::build::{Ctx, R};
use super::schema::ExperimentConfig;
use crate::net::mech::{adaptive_lb::AdaptiveLb, bounce::BounceDrop, Mech};
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
    if cfg.routing.load_balance.as_deref() == Some("adaptive") {
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::AdaptiveLb(AdaptiveLb::new(cfg.seed)), ports);
    }
    if cfg.switch.bounce == Some(true) {
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::BounceDrop(BounceDrop::default()), ports);
    }
    Ok(())
}
