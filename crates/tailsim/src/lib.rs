//! tailsim: a packet-level simulator of datacenter networks for studying tail latency.
//!
//! The crate is laid out as the simulation is: `engine` (time, events, arena, random streams), `net`
//! (hosts, links, switches, routing, topologies), `transport` (TCP, DCTCP, …), `traffic` (arrival
//! processes), `metrics` (flow records, summaries, result files), `config` (experiment files), and `sim`
//! (the world and its event loop). See docs/architecture.md.

pub mod config;
pub mod engine;
pub mod ideal;
pub mod metrics;
pub mod net;
pub mod qjump;
pub mod run;
pub mod sim;
pub mod traffic;
pub mod transport;
pub mod units;

pub use config::{load, load_str, load_table, ConfigError, Experiment};
pub use run::Summary;
pub use sim::{Progress, StopReason};
