use crate::units::{FlowSlot, NodeId, PortId, Time};

/// Transport timers. A flow has at most one pending event per kind; see `transport::Timer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    Retransmit,
    DelayedAck,
    /// Homa, RDMA: a host's NIC has serialized what it was handed (the slot is the host).
    Pacer,
    /// Homa, pHost, NDP: a receiver has waited too long for a message's packets.
    Resend,
    /// pHost's token clock, NDP's pull pacer: a receiver may send its next token or pull (the slot is the host).
    RxPacer,
    /// Word of the other end's close reaches a flow's end, a message between the hosts that takes the path's
    /// propagation delay (`EventQueue::schedule_message`): TCP's and RDMA's sender's to the receiver, lossy
    /// Homa's and pHost's receiver's completion to the sender; that half closes.
    PeerClosed,
}

/// Everything that can happen. Events name components by id and carry no heap data, so an event is 16 bytes
/// and the queue never allocates once its vector has grown to the working-set size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet at the head of a port's wire reaches the far end of the link.
    WireArrival(PortId),
    /// A port finished serializing its current packet.
    TxDone(PortId),
    /// The head of a switch's fixed-delay forwarding pipeline is ready for its output port.
    SwitchForward(NodeId),
    /// The head of a host's transmit-delay line enters the NIC queue.
    HostTx(NodeId),
    /// The head of a host's receive-delay line reaches the transport.
    HostRx(NodeId),
    /// A host's QJUMP shaper may release held packets (a new epoch began).
    HostShaper(NodeId),
    /// A transport timer of a flow (slot, generation).
    Timer(FlowSlot, u32, TimerKind),
    /// Workload generator `i` releases its next flow.
    Arrival(u32),
    /// Scheduled fault/link-state change `i` of the experiment.
    Fault(u32),
    /// End of the warm-up: queue-occupancy statistics restart.
    WarmupEnd,
    /// Record every port's queue occupancy.
    QueueSample,
    /// A timer of installed mechanism `m` (its index) with its own key (`HookCtx::timer`).
    Mech(u8, u32),
    /// Routes re-converge after a link changed state (`routing.reroute`).
    Reconverge,
    /// Word that a background flow of generator `g` from host `src` finished reaches its source, which
    /// starts the next one (sim/chain.rs). Every part of a parallel run handles it (`schedule_broadcast`).
    Successor(u32, NodeId),
    /// Word that a piece of foreground work (a flow, a workflow) is done, counted by every part of a parallel
    /// run alike (`schedule_broadcast`): with background traffic, the run ends when none is left.
    ForegroundDone,
}

/// What `EventQueue::pop_by` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The next event, taken off the queue.
    Due(Time, Event),
    /// The next event is later than the limit; it stays queued.
    Later,
    /// No event at all.
    Empty,
}

/// An event of the buckets being served: its time as an offset from the first one's start (13 bits: up to
/// four buckets, `AHEAD`) above its tie (51 bits), so one 64-bit compare orders them and an entry is 24
/// bytes, not 32.
#[derive(Clone, Copy, Debug)]
struct Near {
    key: u64,
    ev: Event,
}

/// How many buckets after the one being served its last events may look ahead into (`look_ahead`).
const AHEAD: u64 = 3;
/// With this many events left to serve after the next one, `look_ahead` takes the next bucket: the deep
/// prefetch looks five events past the next one (sim/ahead.rs, `prefetch_deep`).
const LOOK: usize = 5;
/// Buckets of fewer events than this (sparse traffic) are not looked past: there the look-ahead costs more
/// than the prefetch it allows. Measured (docs/performance-log.md, change 37): `pfabric-websearch-dctcp`
/// (about two events a bucket) 7 % slower looking past every bucket, 6 % from 2 events, as fast from 4;
/// `fattree128-perm-100g` (about eight) +10 % past every bucket, +4–8 % from 4, +3 % from 8.
const DENSE: usize = 4;
/// Bits of a near key holding the time's offset: room for the bucket served and `AHEAD` more.
const OFFSET_BITS: u32 = WIDTH_BITS + 2;
const _: () = assert!((AHEAD + 1) << WIDTH_BITS <= 1 << OFFSET_BITS);
/// Bits of a near key holding the tie.
const SEQ_BITS: u32 = 64 - OFFSET_BITS;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// The sequence number of the first event scheduled: above every port's number, the ties of wires'
/// arrivals (2^50 events: 3.5 years at 10 M events per second).
pub const FIRST_SEQ: u64 = 1 << (SEQ_BITS - 1);
/// Bits of an arrival's tie: every port number fits (`PortId` is 32 bits), below `FIRST_SEQ`.
const ARRIVAL_BITS: u32 = 32;
const _: () = assert!(ARRIVAL_BITS < SEQ_BITS - 1);
/// The ties of ends of serialization (`Event::TxDone`): after every arrival's, their port's number with bits
/// flipped (as an arrival's, `start_tie`) above this.
const START_TIE: u64 = 1 << ARRIVAL_BITS;
/// The ties of messages between hosts (`schedule_message`) and of broadcasts (`schedule_broadcast`): after
/// every arrival's and end of serialization's, before every other event's, their own key (a flow's id)
/// above this, times four, plus their kind (`Word`), so that words of different kinds about one flow never
/// tie.
const MESSAGE_TIE: u64 = START_TIE << 1;

/// What a message or broadcast says, the low bits of its tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// A flow's end to the other (`schedule_message`).
    Host = 0,
    /// A background flow finished (`Event::Successor`).
    Successor = 1,
    /// A piece of foreground work is done (`Event::ForegroundDone`).
    ForegroundDone = 2,
}

/// `Message::to` of a broadcast: every part.
pub const EVERY_PART: u32 = u32::MAX;

fn word_tie(key: u64, word: Word) -> u64 {
    assert!(key < (FIRST_SEQ - MESSAGE_TIE) / 4, "a message's key is below (2^50 - 2^33) / 4");
    MESSAGE_TIE + key * 4 + word as u64
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// (time << 64) | tie: one integer compare orders by time, then by tie.
    key: u128,
    ev: Event,
}

/// log2 of a bucket's width in picoseconds: 2.048 ns. Half as many, twice as full buckets as at 1.024 ns
/// cost about 3 % more instructions at 128 hosts (the sorts of fuller buckets) and ran 3–9 % faster there,
/// when the run loop prefetched for the coming events of the bucket being served only (change 37 now looks
/// past its end; 1.024 ns measured again after it: no gain) and crossed from one bucket to the next half
/// as often (docs/performance-log.md, changes 36–38).
const WIDTH_BITS: u32 = 11;
/// Buckets in the wheel (a power of two): 2,048 of 2.048 ns, a horizon of 4.19 µs.
const BUCKETS: usize = 1 << 11;
const WORDS: usize = BUCKETS / 64;

/// The event queue: a calendar of 2 ns buckets for the next 4 µs, and a 4-ary heap for later events.
///
/// Ties in time: the arrivals of packets at the far ends of their links first (their ports in an order that
/// a hash of the time shuffles: `arrival_tie`); then the ends of serialization (`TxDone`, their ports in such
/// an order too: `start_tie`); then messages between hosts; then every other event in the order it was
/// scheduled. Every event's key is its time and a *tie* (51 bits): a wire's arrival has its port's number
/// with bits flipped, an end of serialization 2^32 plus that, any other event a sequence number from 2^50
/// up. So a run is a pure function of its configuration and seed, and the order is exactly the heap's alone
/// (tests compare them on random interleavings).
///
/// Why arrivals apart: a run cut into parts that run in parallel (docs/parallel.md) must order each
/// part's events as the serial run does. Every event but a wire's arrival is scheduled by a handler at the
/// node it belongs to, so a part schedules its own events in the serial run's order and insertion order
/// agrees; an arrival over a link between two parts is scheduled by the other part, and handed over later
/// than the serial run would have inserted it, so it takes a place that does not depend on when it was
/// scheduled. Insertion order stays for the rest: a partition-independent key for every event cost 2.6–6.3 %
/// of all instructions, because a bucket then no longer comes out of its blocks in order (the branch
/// `issue24-tie-key`, docs/parallel.md).
///
/// Why ends of serialization apart: a port whose queue still holds packets when one starts does not
/// schedule the end of that serialization; whatever touches the port next (its wire's next arrival, a
/// packet joining its queue) first starts what should have started by then (net/lazy.rs). That end must
/// have a place among simultaneous events that does not depend on when it would have been scheduled.
///
/// Why: a packet-hop schedules its end of serialization 0.1–1.2 µs ahead and its arrival about a
/// propagation delay ahead, so nearly every event falls inside the horizon. Pushing one appends it to its
/// bucket; when the clock reaches a bucket its events (a few to a few thousand) are moved into one vector,
/// sorted once, and popped from its end. The heap it replaced did log4(n) levels of unpredictable
/// comparisons per pop over two cache lines each: at 1,024 hosts (13,000 pending events) its pops were 44 %
/// of all instructions (docs/performance-log.md, change 2). Timers (RTOs, NDP's timeouts) and slow links'
/// events stay in the heap and move into the wheel when they come within the horizon.
///
/// A bucket is a list of blocks of ten events (256 bytes, four cache lines), filled from the newest
/// block, rather than a list of single events: walking a bucket of a large fabric (thousands of events,
/// scheduled microseconds apart and evicted from the caches since) was one dependent miss per event, 14 %
/// of all time at 5,488 hosts; a block costs one miss for ten and the next block is prefetched while one
/// is read. The blocks live in one arena with a free list, so once it has grown to the peak number of
/// pending events nothing allocates.
pub struct EventQueue {
    /// Bucket `b % BUCKETS` holds the events of times in [b, b + 1) << WIDTH_BITS for b in
    /// [cur, cur + BUCKETS): its newest block (NIL = empty) and how many events that block holds (every
    /// older block of the list is full). An array, not a vector: its length is known where a bucket is
    /// indexed (by time, masked), so no index is tested against it.
    head: Box<[Head; BUCKETS]>,
    blocks: Vec<Block>,
    /// First free block (NIL: none).
    free: u32,
    /// Bit b set = bucket b is not empty.
    full: [u64; WORDS],
    cur: u64,
    /// Buckets after `cur` already taken into `now` (`look_ahead`): the buckets served are `cur ..= cur +
    /// span`. 0 whenever `now` is empty.
    span: u64,
    /// `pop_by` calls `advance` or `look_ahead` when fewer than this many events are left in `now`: `LOOK + 2` from a dense
    /// bucket's start; fewer once it has taken a bucket of fewer events; 1 (only once empty) from a sparse
    /// bucket's start or when it found nothing to take. Never 0, and at least 2 while `span` > 0, so that
    /// `now` empties with `span` 0.
    look_below: usize,
    /// The bucket last taken held at least `DENSE` events: look ahead past the next one.
    dense: bool,
    /// The events of the buckets served taken out of their blocks, sorted descending (the next one last).
    /// Not empty exactly while they are being served (`serving`).
    now: Vec<Near>,
    /// An empty vector that `take_ahead` fills and swaps with `now`.
    spare: Vec<Near>,
    /// The time bucket `cur` starts at (`cur << WIDTH_BITS`, set with it by `move_to`; kept, not derived:
    /// +0.3 % instructions deriving it in `htsim-p2`): the origin of the keys in `now`.
    base: u64,
    /// Events earlier than bucket `cur` (only a caller that moved time back makes them), sorted descending;
    /// they come before everything in `now`.
    early: Vec<Entry>,
    /// Events in the buckets.
    listed: usize,
    /// Events at or beyond the horizon.
    far: Heap,
    seq: u64,
    popped: u64,
    /// The tie of the event last taken (`current_tie`).
    tie: u64,
    /// Deferred ends of serialization caught up (`count_deferred`).
    deferred: u64,
    /// Arrivals over cut links held until their window ends, as a parallel run hands them over
    /// (`World::run_handing_over`, sim/handover.rs); None in every other run.
    pub held: Option<Box<Held>>,
}

/// The arrivals (and messages between hosts) a run handing packets over between parts holds until the end
/// of the window.
pub struct Held {
    /// Port p's link joins two parts.
    crossing: Vec<bool>,
    /// Node n's part.
    parts: Vec<u16>,
    /// The window's end.
    pub until: Time,
    /// In the order they were sent.
    pub arrivals: Vec<(Time, PortId)>,
    /// Messages to a host of another part, in the order they were sent.
    pub messages: Vec<Message>,
    /// The first arrival due before the end of the window it was sent in: (due, port, window's end).
    pub late: Option<(Time, PortId, Time)>,
    /// The first message due before the end of the window it was sent in: (due, window's end).
    pub late_message: Option<(Time, Time)>,
}

/// A message between hosts on its way to another part, or a broadcast to every part: when it is due, the
/// event, its tie, the part (`EVERY_PART`: every part, this one included).
#[derive(Clone, Copy, Debug)]
pub struct Message {
    pub at: Time,
    pub ev: Event,
    pub tie: u64,
    pub to: u32,
}

impl Held {
    /// Hold the arrivals over the ports `crossing` marks, and the messages between hosts of two parts
    /// (`parts`: node n's).
    pub fn new(crossing: Vec<bool>, parts: Vec<u16>) -> Held {
        Held {
            crossing,
            parts,
            until: Time::ZERO,
            arrivals: Vec::new(),
            messages: Vec::new(),
            late: None,
            late_message: None,
        }
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Head {
    block: u32,
    len: u32,
}

impl Head {
    /// No block; "full", so that one comparison tells whether an event fits in the newest block.
    const EMPTY: Head = Head { block: NIL, len: PER_BLOCK as u32 };
}

/// An event in a bucket: its time's offset into its bucket above its tie, in one word (its bucket holds the
/// rest of its time), 24 bytes. A time and a tie in two words made a slot 32 bytes and a block seven events
/// (docs/performance-log.md, change 39).
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot {
    key: u64,
    ev: Event,
}

const PER_BLOCK: usize = 10;

/// Ten events of one bucket and the bucket's next (older, full) block: four cache lines.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block {
    e: [Slot; PER_BLOCK],
    next: u32,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 24);
const _: () = assert!(std::mem::size_of::<Block>() == 256);

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            head: Box::new([Head::EMPTY; BUCKETS]),
            blocks: Vec::new(),
            free: NIL,
            full: [0; WORDS],
            cur: 0,
            span: 0,
            look_below: 1,
            dense: false,
            now: Vec::new(),
            spare: Vec::new(),
            base: 0,
            early: Vec::new(),
            listed: 0,
            far: Heap::default(),
            seq: FIRST_SEQ,
            popped: 0,
            tie: 0,
            deferred: 0,
            held: None,
        }
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }
    // Always inlined: with pop, the hottest functions of the simulator, small, and otherwise left out of line
    // when the callers grow (measured: +11 % instructions).
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, ev: Event) {
        // The event is known where this is inlined: the match folds away.
        let tie = match ev {
            Event::WireArrival(p) => arrival_tie(at, p),
            Event::TxDone(p) => start_tie(at, p),
            _ => {
                self.seq += 1;
                self.seq - 1
            }
        };
        self.schedule_tied(at, ev, tie);
    }
    /// Schedule `ev`, a message from host `from` to host `to` (a transport's word between a flow's two ends
    /// that is not a packet: a close), due at `at`. Its tie is `key` (the flow's id), which both ends
    /// know, so its place among simultaneous events does not depend on when it was scheduled: in a part of a
    /// parallel run (or a run handing packets over) a message to another part's host is held to the window's
    /// end and handed over as a packet is (sim/parallel.rs).
    pub fn schedule_message(&mut self, at: Time, from: NodeId, to: NodeId, ev: Event, key: u64) {
        let tie = word_tie(key, Word::Host);
        if let Some(h) = self.held.as_mut() {
            let to = h.parts[to.idx()];
            if h.parts[from.idx()] != to {
                if at < h.until && h.late_message.is_none() {
                    h.late_message = Some((at, h.until));
                }
                h.messages.push(Message { at, ev, tie, to: to as u32 });
                return;
            }
        }
        self.schedule_tied(at, ev, tie);
    }
    /// Schedule `ev`, an event every part of a parallel run handles, caused by one of them: word of a
    /// finished flow (`word` says which, `key` is the flow's id: its tie, which every part knows), due at
    /// `at`. In a part of a parallel run (or a run handing packets over) it is held to the window's end and
    /// then scheduled in every part: `at` must be at least a lookahead away (a shorter delay is a causality
    /// error, reported as a message's), which the callers keep for every cut (sim/chain.rs).
    pub fn schedule_broadcast(&mut self, at: Time, ev: Event, key: u64, word: Word) {
        let tie = word_tie(key, word);
        if let Some(h) = self.held.as_mut() {
            if at < h.until && h.late_message.is_none() {
                h.late_message = Some((at, h.until));
            }
            h.messages.push(Message { at, ev, tie, to: EVERY_PART });
            return;
        }
        self.schedule_tied(at, ev, tie);
    }
    /// A message handed over from another part (`schedule_message`'s held one).
    pub fn schedule_handed(&mut self, m: Message) {
        self.schedule_tied(m.at, m.ev, m.tie);
    }
    #[inline(always)]
    fn schedule_tied(&mut self, at: Time, ev: Event, tie: u64) {
        let key = ((at.0 as u128) << 64) | tie as u128;
        let b = at.0 >> WIDTH_BITS;
        if b >= self.cur + BUCKETS as u64 {
            self.far.push(Entry { key, ev });
        } else if b < self.cur {
            // Earlier than the bucket being served: only a caller that moved time back makes one, and it is
            // the earliest of all.
            insert_sorted(&mut self.early, Entry { key, ev });
        } else if b <= self.cur + self.span && self.serving() {
            // Into the buckets being served: in order (usually at its end, the next event).
            self.insert_now(Near { key: near_key(at.0 - self.base, tie), ev });
        } else {
            self.link(b, Entry { key, ev });
        }
    }
    /// Add `e` to bucket `b`, its time's.
    #[inline(always)]
    fn link(&mut self, b: u64, e: Entry) {
        let (time, tie) = ((e.key >> 64) as u64, e.key as u64);
        debug_assert_eq!(time >> WIDTH_BITS, b, "an event in its own time's bucket");
        let i = (b as usize) & (BUCKETS - 1);
        let slot = Slot { key: near_key(time & ((1 << WIDTH_BITS) - 1), tie), ev: e.ev };
        let h = self.head[i];
        if (h.len as usize) < PER_BLOCK {
            self.blocks[h.block as usize].e[h.len as usize] = slot;
            self.head[i].len = h.len + 1;
        } else {
            self.new_block(i, slot);
        }
        self.full[i / 64] |= 1 << (i % 64);
        self.listed += 1;
    }
    /// Start a new newest block for bucket `i` with `slot` in it.
    #[inline(always)]
    fn new_block(&mut self, i: usize, slot: Slot) {
        let older = self.head[i].block;
        let id = if self.free == NIL {
            self.blocks.push(Block { e: [slot; PER_BLOCK], next: older });
            (self.blocks.len() - 1) as u32
        } else {
            let id = self.free;
            let blk = &mut self.blocks[id as usize];
            self.free = blk.next;
            blk.e[0] = slot;
            blk.next = older;
            id
        };
        self.head[i] = Head { block: id, len: 1 };
    }
    /// Bucket `cur` has been taken out of its blocks into `now`, and not yet emptied.
    #[inline(always)]
    fn serving(&self) -> bool {
        !self.now.is_empty()
    }
    #[inline(never)]
    fn insert_now(&mut self, e: Near) {
        let at = self.now.partition_point(|x| x.key > e.key);
        self.now.insert(at, e);
    }
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        match self.pop_by(Time::MAX) {
            Next::Due(t, e) => Some((t, e)),
            Next::Later | Next::Empty => None,
        }
    }
    /// Schedule the arrival of a packet at the far end of port `p`'s link, from the sending end: a run that
    /// hands packets between parts holds it if the link is cut (sim/handover.rs).
    #[inline(always)]
    pub fn schedule_arrival(&mut self, at: Time, p: PortId) {
        if self.held.is_none() {
            self.schedule(at, Event::WireArrival(p));
        } else {
            self.hold(at, p);
        }
    }
    #[cold]
    #[inline(never)]
    fn hold(&mut self, at: Time, p: PortId) {
        let h = self.held.as_mut().expect("holding");
        if !h.crossing[p.idx()] {
            return self.schedule(at, Event::WireArrival(p));
        }
        if at < h.until && h.late.is_none() {
            h.late = Some((at, p, h.until));
        }
        h.arrivals.push((at, p));
    }
    /// The end of a window in a parallel run's part: the held arrivals are another part's to schedule (their
    /// packets wait on the sending port's wire, sim/parallel.rs). Returns how many there were.
    pub fn forget_held(&mut self) -> usize {
        let h = self.held.as_mut().expect("holding");
        let n = h.arrivals.len();
        h.arrivals.clear();
        n
    }
    /// The end of a window in a parallel run's part: the messages to other parts' hosts, to hand over.
    pub fn take_messages(&mut self) -> std::vec::Drain<'_, Message> {
        self.held.as_mut().expect("holding").messages.drain(..)
    }
    /// The end of a window in a run handing packets over: the held arrivals join the queue, the last sent
    /// first (the order must not matter). Returns how many there were.
    pub fn release_held(&mut self) -> usize {
        let mut v = std::mem::take(&mut self.held.as_mut().expect("holding").arrivals);
        for &(at, p) in v.iter().rev() {
            self.schedule(at, Event::WireArrival(p));
        }
        let n = v.len();
        v.clear();
        self.held.as_mut().expect("holding").arrivals = v;
        let messages = std::mem::take(&mut self.held.as_mut().expect("holding").messages);
        for &m in &messages {
            self.schedule_handed(m);
        }
        n
    }
    /// The next event if it is due at or before `limit` (the run loop's one call per event: a peek and a
    /// pop would test the same things twice).
    #[inline(always)]
    pub fn pop_by(&mut self, limit: Time) -> Next {
        if !self.early.is_empty() {
            // (A limit-taking `pop_early` instead of this peek moved the run loop's layout: +0.9 % instructions.)
            return match self.peek_time() {
                Some(t) if t <= limit => self.pop_early().map_or(Next::Empty, |(t, e)| Next::Due(t, e)),
                _ => Next::Later,
            };
        }
        // One test for both: the buckets served are empty, or running out.
        if self.now.len() < self.look_below {
            if !self.serving() {
                if self.advance().is_none() {
                    return Next::Empty;
                }
            } else {
                self.look_ahead();
            }
        }
        let e = *self.now.last().expect("the current bucket is not empty once sorted");
        let t = Time(self.base + (e.key >> SEQ_BITS));
        if t > limit {
            return Next::Later;
        }
        self.now.pop();
        self.popped += 1;
        self.tie = e.key & SEQ_MASK;
        Next::Due(t, e.ev)
    }
    /// The buckets served are running out: take the next non-empty bucket, if it is at most `AHEAD` buckets
    /// on, into `now` behind the events left, so that the run loop's prefetch (`upcoming`) sees past a
    /// bucket's end. The order is the same as taking it when `now` empties: its keys, offset from the same
    /// origin, all follow those left, and an event scheduled into a bucket served joins `now` in order.
    /// Without it, a bucket's first events went without their prefetch (docs/performance-log.md, change 37).
    #[inline(never)]
    fn look_ahead(&mut self) {
        // The keys' origin moves to the last bucket served, so the next event must be in it (the clock will
        // be there: an event scheduled then, before that bucket, would be `early`). `look_below` calls this
        // only once the events before it are served (`take_ahead`); the test keeps a change of that from
        // reordering events: it would look again at the next event, the last one left being in it.
        let last = self.cur + self.span;
        let from = self.span << WIDTH_BITS;
        if self.now[self.now.len() - 1].key >> SEQ_BITS < from {
            return;
        }
        if from > 0 {
            let shift = from << SEQ_BITS;
            for e in self.now.iter_mut() {
                e.key -= shift;
            }
            self.move_to(last);
        }
        let next = if self.dense { self.next_full((last as usize) & (BUCKETS - 1)) } else { None };
        match next {
            Some(d) if d as u64 <= AHEAD => self.take_ahead(d as u64),
            // Not again before the bucket served is empty (nothing is usually scheduled this close).
            _ => self.look_below = 1,
        }
    }
    /// `look_ahead`'s taking of bucket `cur + d` behind the events left, all in bucket `cur`.
    #[inline(never)]
    fn take_ahead(&mut self, d: u64) {
        debug_assert!(self.span == 0 && self.now.len() <= LOOK + 1);
        // Into the spare vector, the events left pushed behind, and the two swapped: no copy of the bucket,
        // and no call to `memcpy` for the few left (a copy out and back in cost about 60 instructions).
        let mut left = std::mem::replace(&mut self.now, std::mem::take(&mut self.spare));
        self.take_bucket(self.cur + d);
        self.span = d;
        // Again once the events left now are served, and the bucket just taken is running out; at the
        // latest before its last event, which moves `cur` to it.
        self.look_below = self.now.len().min(LOOK + 1) + 1;
        self.dense = self.now.len() >= DENSE;
        for &e in left.iter() {
            self.now.push(e);
        }
        left.clear();
        self.spare = left;
    }
    /// Make bucket `b` (not before `cur`) the first served: the heap's events now within the horizon join
    /// their buckets.
    #[inline(always)]
    fn move_to(&mut self, b: u64) {
        self.cur = b;
        self.base = b << WIDTH_BITS;
        self.span = 0;
        while let Some(k) = self.far.peek_key() {
            let b = (k >> (64 + WIDTH_BITS)) as u64;
            if b >= self.cur + BUCKETS as u64 {
                break;
            }
            // Never before `cur`: the heap's events are beyond the horizon of every bucket that was `cur`,
            // and `cur` moves at most to the first of them.
            let e = self.far.pop().expect("peeked");
            self.link(b, e);
        }
    }
    #[cold]
    #[inline(never)]
    fn pop_early(&mut self) -> Option<(Time, Event)> {
        let e = self.early.pop()?;
        self.popped += 1;
        self.tie = e.key as u64;
        Some((Time((e.key >> 64) as u64), e.ev))
    }
    /// Make the bucket of the next event current: its events sorted in `now`. None when there is no event.
    #[inline(never)]
    fn advance(&mut self) -> Option<()> {
        debug_assert!(self.now.is_empty() && self.span == 0);
        loop {
            let i = (self.cur as usize) & (BUCKETS - 1);
            let h = self.head[i];
            if h.block != NIL {
                self.take_bucket(self.cur);
                self.dense = self.now.len() >= DENSE;
                self.look_below = if self.dense { LOOK + 2 } else { 1 };
                return Some(());
            }
            // The next non-empty bucket, or the heap's first event when the wheel is empty; the heap's
            // events now within the horizon join their buckets.
            let next = match self.next_full(i) {
                Some(d) => self.cur + d as u64,
                None => (self.far.peek_key()? >> (64 + WIDTH_BITS)) as u64,
            };
            self.move_to(next);
        }
    }
    /// Take bucket `b` (non-empty, within `AHEAD` of `cur`) out of its blocks onto `now`, sorted descending,
    /// its keys offset from `base`.
    #[inline(always)]
    fn take_bucket(&mut self, b: u64) {
        let i = (b as usize) & (BUCKETS - 1);
        let h = self.head[i];
        self.head[i] = Head::EMPTY;
        // The keys in the blocks are offsets into bucket `b`: into the buckets served, from `base`.
        let shift = (b - self.cur) << (WIDTH_BITS + SEQ_BITS);
        debug_assert!(self.now.is_empty());
        let (mut id, mut len) = (h.block, h.len as usize);
        while id != NIL {
            // The next block's four lines start loading while this one is read.
            let next = self.blocks[id as usize].next;
            if let Some(n) = self.blocks.get(next as usize) {
                crate::engine::prefetch_lines((n as *const Block).cast(), 4);
            }
            let blk = &mut self.blocks[id as usize];
            // Newest first, so `now` comes out in descending insertion order and only events out of time
            // order are left for the sort to move (callgrind: htsim-p2 −3.1 %, fattree128-perm-100g −6.2 % of
            // all instructions against oldest first).
            let taken = blk.e[..len].iter().rev();
            self.now.extend(taken.map(|s| Near { key: s.key + shift, ev: s.ev }));
            blk.next = self.free;
            self.free = id;
            self.listed -= len;
            id = next;
            len = PER_BLOCK;
        }
        self.full[i / 64] &= !(1 << (i % 64));
        if self.now.len() > 1 {
            self.now.sort_unstable_by_key(|e| std::cmp::Reverse(e.key));
        }
    }
    /// Distance from bucket `i` to the next non-empty bucket after it, round the wheel.
    fn next_full(&self, i: usize) -> Option<usize> {
        if self.listed == 0 {
            return None;
        }
        // Words from i's onwards, wrapping; bits at or below i in i's own word are masked off the first time.
        let (w0, bit) = (i / 64, i % 64);
        let first = self.full[w0] & (!0u64).checked_shl(bit as u32 + 1).unwrap_or(0);
        if first != 0 {
            return Some(first.trailing_zeros() as usize - bit);
        }
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
            let word = if k == WORDS { self.full[w] & ((1u64 << bit) | ((1u64 << bit) - 1)) } else { self.full[w] };
            if word != 0 {
                return Some(k * 64 + word.trailing_zeros() as usize - bit);
            }
        }
        None
    }
    /// The event `k` places after the next one, if the current bucket holds it (for prefetching; 0 = the
    /// one after the next).
    #[inline(always)]
    pub fn upcoming(&self, k: usize) -> Option<Event> {
        let n = self.now.len();
        if n > k + 1 {
            Some(self.now[n - 2 - k].ev)
        } else {
            None
        }
    }
    /// The tie of the next event: an arrival's below `FIRST_SEQ`, every other event's its sequence number
    /// (the handover check, sim/handover.rs). None when nothing is pending.
    pub fn next_tie(&mut self) -> Option<u64> {
        if let Some(e) = self.early.last() {
            return Some(e.key as u64);
        }
        if !self.serving() {
            self.advance()?;
        }
        self.now.last().map(|e| e.key & SEQ_MASK)
    }
    /// The tie of the event last taken: with its time, where it stands among simultaneous events (a deferred
    /// end of serialization is due before it or not, net/lazy.rs).
    #[inline(always)]
    pub fn current_tie(&self) -> u64 {
        self.tie
    }
    /// The sequence number the next event scheduled (other than an arrival over a link) will have.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        if let Some(e) = self.early.last() {
            return Some(Time((e.key >> 64) as u64));
        }
        if !self.serving() {
            self.advance()?;
        }
        self.now.last().map(|e| Time(self.base + (e.key >> SEQ_BITS)))
    }
    pub fn len(&self) -> usize {
        self.listed + self.now.len() + self.early.len() + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
    /// Count a deferred end of serialization, started without its event (net/lazy.rs), as processed: a run
    /// reports the events of its model.
    pub fn count_deferred(&mut self) {
        self.popped += 1;
        self.deferred += 1;
    }
    /// Of the events processed, the deferred ends of serialization (`count_deferred`).
    pub fn deferred(&self) -> u64 {
        self.deferred
    }
    /// Count `n` more events as processed (a parallel run's merged world: every part's events).
    pub fn add_processed(&mut self, n: u64) {
        self.popped += n;
    }
    /// Set the count of events processed (a parallel run's merged world, whose parts each handled their own
    /// copies of the queue samples).
    pub fn set_processed(&mut self, n: u64) {
        self.popped = n;
    }
    /// Keep only the pending events `keep` accepts, in their order (a part of a parallel run drops the other
    /// parts' events from a world built whole). Dropping is not processing.
    pub fn retain(&mut self, mut keep: impl FnMut(Event) -> bool) {
        let (popped, deferred) = (self.popped, self.deferred);
        let mut kept = Vec::new();
        while let Some(tie) = self.next_tie() {
            let (t, e) = self.pop().expect("an event");
            if keep(e) {
                kept.push((t, e, tie));
            }
        }
        let held = self.held.take();
        *self = EventQueue::new();
        (self.held, self.popped, self.deferred) = (held, popped, deferred);
        for (t, e, tie) in kept {
            // A message keeps its tie; the others' ties are renumbered in the same order.
            if (MESSAGE_TIE..FIRST_SEQ).contains(&tie) {
                self.schedule_tied(t, e, tie);
            } else {
                self.schedule(t, e);
            }
        }
    }
}

/// The tie of an arrival over port `p`'s link at `at`: the port's number with some of its bits flipped by
/// a hash of the time, so that simultaneous arrivals come in an order that changes from instant to instant.
/// A fixed order (by port) made two flows sharing a bottleneck in lockstep lose their packets unequally, the
/// later port always finding the buffer full: 46 against 82 ms for two 50 MB flows (tests/congestion.rs).
/// Flipping bits maps the ports one to one, so ties stay distinct; any two ports' order is decided by the
/// hash's bit where their numbers first differ.
#[inline(always)]
fn arrival_tie(at: Time, p: PortId) -> u64 {
    let flip = at.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - ARRIVAL_BITS);
    (p.0 as u64) ^ flip
}

/// The tie of the end of a serialization at port `p` at `at`: after every arrival's, before every message's
/// and other event's; among themselves, ordered as arrivals are.
#[inline(always)]
pub fn start_tie(at: Time, p: PortId) -> u64 {
    START_TIE | arrival_tie(at, p)
}

/// Insert into a vector sorted descending by key.
#[cold]
#[inline(never)]
fn insert_sorted(v: &mut Vec<Entry>, e: Entry) {
    let at = v.partition_point(|x| x.key > e.key);
    v.insert(at, e);
}

/// The key of an event `offset` picoseconds into the bucket being served, with sequence number `seq`.
#[inline(always)]
fn near_key(offset: u64, seq: u64) -> u64 {
    debug_assert!(offset < 1 << OFFSET_BITS && seq <= SEQ_MASK);
    (offset << SEQ_BITS) | (seq & SEQ_MASK)
}

/// A 4-ary min-heap of entries: the events beyond the wheel's horizon. Four children per node halve the
/// depth of a binary heap, and the four children of a node sit in two adjacent cache lines.
#[derive(Default)]
struct Heap {
    heap: Vec<Entry>,
}

const D: usize = 4;

impl Heap {
    fn push(&mut self, e: Entry) {
        let key = e.key;
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(e);
        // Sift up, moving the hole rather than swapping.
        while i > 0 {
            let parent = (i - 1) / D;
            if h[parent].key <= key {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }
    fn peek_key(&self) -> Option<u128> {
        self.heap.first().map(|e| e.key)
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
    fn pop(&mut self) -> Option<Entry> {
        let h = &mut self.heap;
        let top = *h.first()?;
        let last = h.pop().expect("non-empty");
        let n = h.len();
        if n > 0 {
            // Sift the last entry down from the root.
            let mut i = 0;
            loop {
                let first = i * D + 1;
                if first >= n {
                    break;
                }
                let m = if first + D <= n {
                    // Full node: a branch-free tournament (comparisons here are unpredictable, so
                    // conditional moves beat branches).
                    let k = [h[first].key, h[first + 1].key, h[first + 2].key, h[first + 3].key];
                    let a = first + (k[1] < k[0]) as usize;
                    let b = first + 2 + (k[3] < k[2]) as usize;
                    if h[b].key < h[a].key {
                        b
                    } else {
                        a
                    }
                } else {
                    let mut m = first;
                    for c in first + 1..n {
                        if h[c].key < h[m].key {
                            m = c;
                        }
                    }
                    m
                };
                if h[m].key >= last.key {
                    break;
                }
                h[i] = h[m];
                i = m;
            }
            h[i] = last;
        }
        Some(top)
    }
}

#[cfg(test)]
mod tests;
