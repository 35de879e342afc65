//! `tunnel_steering`: the de-capsulation steering table. Each entry maps a tunnel (kind and
//! VNI, or kind and VSID for NVGRE) to a receive queue; a received tunnel that hits an entry is
//! de-capsulated and delivered to that queue.
//!
//! - Ports ([`SteerPorts`]): `wr_*` ([`SteerWrite`]: one entry written per cycle, from the
//!   register file), `lookup_tdata/_tvalid` ([`SteerKey`], one per frame, never stalled) and
//!   `result_tdata/_tvalid` ([`SteerResult`]: hit and queue, in lookup order).
//! - Internals: the entries in flip-flops (valid, kind, id, queue), so every entry is compared
//!   at once: stage 1 registers per entry the key's compare in two halves (valid, kind and the
//!   low 12 bits of the id; the high 12 bits), two LUT levels each; stage 2 the lowest-numbered
//!   hit of each group of four entries and its queue; stage 3 the lowest-numbered group's (so
//!   a key written twice steers by its lower entry). The queue fields take a write a cycle
//!   after the keys do (the write is registered once more for them), so that stage 2 reads the
//!   queue stage 1's compare saw. A kind of 0 (not a tunnel) never hits.
//! - Latency: the result is valid 3 cycles after its key; a written entry is seen by a key
//!   that arrives the next cycle. Throughput: one lookup and one write per cycle.
//! - Cost: `entries` × (29 + queue bits) flip-flops and the registered write, `entries` 26-bit
//!   compares, `entries / 4` four-way priority picks and one over the groups; in
//!   results/AREA.md within the row `rx_decap`.
//! - Golden model: `nicgen_model::tunnel::Steering`; test:
//!   `testbench/tests/overlay/tunnel_steering.rs`.

use nicgen_edsl::prelude::*;

/// Cycles from a key on `lookup` to its result on `result`.
pub const LATENCY: u64 = 3;

/// Steering table parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SteerCfg {
    /// Table entries: 1..=256.
    pub entries: u32,
    /// Bits of a queue number.
    pub queue_bits: u32,
}

impl SteerCfg {
    fn index_bits(&self) -> u32 {
        clog2(self.entries as u64).max(1)
    }
}

nicgen_edsl::record! {
    /// A write of one entry.
    pub struct SteerWrite(index_bits: u32, queue_bits: u32) {
        /// Write in this cycle.
        en: 1,
        /// The entry; one at or above the table size is ignored.
        index: index_bits,
        /// The entry becomes valid with the fields below, else invalid.
        valid: 1,
        /// Tunnel kind (`eth_hdr_parse::tunnel_kind`: 1 VXLAN, 2 NVGRE).
        kind: 2,
        /// VNI or VSID.
        id: 24,
        queue: queue_bits,
    }
}

nicgen_edsl::record! {
    /// What a frame is looked up by: the parser's `tunnel` and `tunnel_id`.
    pub struct SteerKey {
        kind: 2,
        id: 24,
    }
}

nicgen_edsl::record! {
    /// The answer: whether an entry holds the key, and its queue (0 without a hit).
    pub struct SteerResult(queue_bits: u32) {
        hit: 1,
        queue: queue_bits,
    }
}

/// The table's ports.
pub struct SteerPorts {
    pub wr: SteerWrite,
    pub lookup: RecordValid<SteerKey<u32>>,
    pub result: RecordValid<SteerResult<u32>>,
}

impl Ports for SteerPorts {
    type Cfg = SteerCfg;
    fn ports(io: &Io, cfg: &SteerCfg) -> Self {
        SteerPorts {
            wr: io.inputs("wr_", &SteerWrite::shape(cfg.index_bits(), cfg.queue_bits)),
            lookup: RecordValid::sink(io, "lookup", SteerKey::shape()),
            result: RecordValid::source(io, "result", SteerResult::shape(cfg.queue_bits)),
        }
    }
}

/// The steering table for `cfg` (module `tunnel_steering_n<entries>_q<queue bits>`).
pub fn tunnel_steering(cfg: &SteerCfg) -> Result<Block<SteerPorts>, ElabError> {
    if !(1..=256).contains(&cfg.entries) || !(1..=16).contains(&cfg.queue_bits) {
        return Err(ElabError::config(
            "tunnel_steering",
            format!(
                "{} entries of {}-bit queues: 1..=256 entries, 1..=16 queue bits",
                cfg.entries, cfg.queue_bits
            ),
        ));
    }
    let cfg = *cfg;
    Block::build(
        format!("tunnel_steering_n{}_q{}", cfg.entries, cfg.queue_bits),
        cfg,
        move |p: SteerPorts| {
            doc("Tunnel steering table: (kind, VNI/VSID) -> queue, all entries compared at once.");
            let n = cfg.entries;
            let wr = p.wr;
            let in_range = if n.is_power_of_two() {
                lit(1, 1u32)
            } else {
                wr.index.lt(n as u64)
            };
            let key = p.lookup.fields();
            let tunnel = key.kind.ne(0u32).named("key_is_tunnel");
            // The queue fields take each write a cycle later than the keys do, so that stage 2
            // reads them as stage 1 compared the keys: with the writes before the lookup's.
            let q_write = delay(wr.en & in_range).named("q_write");
            let q_index = delay(wr.index).named("q_index");
            let q_value = delay(wr.queue).named("q_value");
            // Stage 1: per entry, whether it holds the key, in two registered halves.
            let mut hits = Vec::new();
            let mut queues = Vec::new();
            for e in 0..n {
                let here = (wr.en & in_range & wr.index.eq(e as u64)).named(&format!("wr{e}"));
                let valid = reg_init(1, 0u32).named(&format!("e{e}_valid"));
                valid.set_if(here, wr.valid);
                let kind = reg(2).enable(here).named(&format!("e{e}_kind"));
                kind.set(wr.kind);
                let id = reg(24).enable(here).named(&format!("e{e}_id"));
                id.set(wr.id);
                let q_here = (q_write & q_index.eq(e as u64)).named(&format!("q_wr{e}"));
                let queue = reg(cfg.queue_bits)
                    .enable(q_here)
                    .named(&format!("e{e}_queue"));
                queue.set(q_value);
                let lo =
                    valid & tunnel & kind.eq(key.kind) & id.slice(11, 0).eq(key.id.slice(11, 0));
                let hi = id.slice(23, 12).eq(key.id.slice(23, 12));
                let lo = delay(lo).named(&format!("hit{e}_lo_s1"));
                let hi = delay(hi).named(&format!("hit{e}_hi_s1"));
                hits.push((lo & hi).named(&format!("hit{e}")));
                queues.push(queue);
            }
            let v1 = reg_init(1, 0u32).named("v1");
            v1.set(p.lookup.valid);
            // Stage 2: per group of four entries, the lowest-numbered hit and its queue.
            let groups: Vec<(Sig, Sig)> = hits
                .chunks(4)
                .zip(queues.chunks(4))
                .enumerate()
                .map(|(g, (h, q))| {
                    let (hit, queue) = first_hit(h, q);
                    (
                        delay(hit).named(&format!("g{g}_hit_s2")),
                        delay(queue).named(&format!("g{g}_queue_s2")),
                    )
                })
                .collect();
            let v2 = reg_init(1, 0u32).named("v2");
            v2.set(v1);
            // Stage 3: the lowest-numbered group with a hit.
            let (gh, gq): (Vec<Sig>, Vec<Sig>) = groups.into_iter().unzip();
            let (hit, queue) = first_hit(&gh, &gq);
            let v3 = reg_init(1, 0u32).named("v3");
            v3.set(v2);
            p.result.valid.set(v3);
            p.result.set_fields(&SteerResult {
                hit: delay(hit).named("hit_s3"),
                queue: delay(queue).named("queue_s3"),
            });
        },
    )
}

/// Whether any of `hits` is set, and the queue of the lowest-numbered one (0 for none): a prefix
/// OR of the hits and an AND-OR of the queues.
fn first_hit(hits: &[Sig], queues: &[Sig]) -> (Sig, Sig) {
    let mut below = lit(1, 0u32);
    let mut picked = Vec::new();
    for (h, q) in hits.iter().zip(queues) {
        picked.push(*q & (*h & !below).repl(q.width()));
        below = below | *h;
    }
    let queue = picked
        .into_iter()
        .reduce(|a, b| a | b)
        .expect("at least one entry");
    (below, queue)
}
