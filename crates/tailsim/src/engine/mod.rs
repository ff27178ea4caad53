//! The discrete-event engine: time-ordered events with deterministic tie-breaking, a packet arena, seeded
//! random streams, and FIFO delay lines.

mod barrier;
mod hugepages;
mod pipe;
mod prefetch;
mod queue;
mod ring;
mod rng;
mod slab;

pub use barrier::{cores, measure_meeting, MinBarrier};
pub use hugepages::HugePageAlloc;
pub use pipe::Pipe;
pub use prefetch::{deep_prefetch_from, prefetch, prefetch_lines};
pub use queue::{start_tie, Event, EventQueue, Held, Message, Next, TimerKind, Word, EVERY_PART, FIRST_SEQ};
pub use ring::Ring;
pub use rng::{stream_seed, Rng};
pub use slab::Slab;
