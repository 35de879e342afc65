//! `mr_table`: the RoCE memory-region table. Each entry is a registered region (protection
//! domain, virtual address range, access rights) named by an mlx5-style key; the transport asks
//! whether a key may touch a range with given rights and gets the verdict a fixed number of
//! cycles later, in the model's precedence (bad key, wrong PD, out of bounds, no permission).
//!
//! Keys: `key = (index << 8) | tag`, 32 bits: `index` (below `entries`) selects the entry, `tag`
//! is an 8-bit variant the driver picks per registration, so a stale key of a re-registered
//! entry misses. The lkey and the rkey of a region are the same key; `remote` only travels
//! with the request into the result.
//!
//! | Entry field (one block-RAM word per index) | bits | meaning |
//! |---|---|---|
//! | `valid` | 1 | a region is registered here |
//! | `tag` | 8 | the key's low byte |
//! | `pd` | 24 | protection domain |
//! | `base` | 64 | first virtual address (`wr_va`) |
//! | `end` | 64 | `wr_va + wr_len` modulo 2^64, added as the write is registered |
//! | `access` | 4 | [`ACCESS_LOCAL_WRITE`] 1, [`ACCESS_REMOTE_WRITE`] 2, [`ACCESS_REMOTE_READ`] 4, [`ACCESS_REMOTE_ATOMIC`] 8 |
//!
//! A request `(key, pd, va, len, need)` passes when the key names a valid entry with its tag
//! (else 1, bad key: the index at or above `entries`, the entry invalid, or another tag), the
//! entry's PD is `pd` (else 2), `va >= base` and `va + len`, without a carry out of 64 bits,
//! is at most `end` (else 3, out of bounds; a zero-length range at the region's end passes),
//! and every right in `need` is in `access` (else 4, no permission). The region's end wraps
//! as the model's `base.wrapping_add(len)` does.
//!
//! - Ports ([`MrTablePorts`]): `wr_en`, `wr_index`, `wr_valid`, `wr_tag`, `wr_pd`, `wr_va`,
//!   `wr_len`, `wr_access` ([`MrWrite`]: one entry per cycle, `wr_valid` 0 deregisters);
//!   `s_axis_req_tdata/tvalid` ([`MrReq`], one request per cycle, never stalled: no ready);
//!   `m_axis_res_tdata/tvalid` ([`MrRes`], one result per request, in order); `busy` (the
//!   clearing sweep after reset runs).
//! - Write rule: a request sees every write made in its own cycle or before it, and none made
//!   after. After reset the table clears itself, one entry per cycle for `entries` cycles while
//!   `busy` is 1; writes in those cycles are ignored and requests answer bad key.
//! - Internals: the write port is registered (`w_*`, the end added on the way in) and written
//!   into the RAM in the next cycle, so a request in the same cycle as a write reads the RAM
//!   while the write lands: a registered compare of the two indices (`bypass`) then takes the
//!   written word, carried along beside the RAM read (`w_word_d1`, `w_word_d2`), instead of the
//!   read. Stages (docs/TIMING.md, rules 7 and 10): A, the request registered; B, the RAM read
//!   (its address from A), `va + len` with its carry, the key's range, the bypass compare and
//!   the bank selects; C, the read word's register (the RAM's
//!   own output register on ECP5); M, the entry picked from the banks and the bypass word under
//!   registered one-hot selects; K, the checks as registered flags: key (range, valid, tag),
//!   PD (24-bit equality), `va >= base` and `va + len <= end` (a 64-bit carry chain each, their
//!   operands all flops), rights; R, the error code picked from the flags, the result register.
//!   No stage has an add in front of a compare. Tables deeper than [`BANK_DEPTH`] are banks, each
//!   with its own read register, picked in M.
//! - Latency: [`LATENCY`] (6): a request on `s_axis_req` in cycle `t` has its result on
//!   `m_axis_res` in cycle `t + 6`. Throughput: one request and one write per cycle, no
//!   bubbles; the result cannot be stalled (no ready).
//! - Cost: `entries` x 165 bits of block RAM; the write and request pipelines in flip-flops
//!   (the request through five stages, the registered write and its two bypass copies, the
//!   entry register); four carry chains (the region's end, the request's end, the two bound
//!   compares); one LUT per entry bit for the pick, the equality compares and the code. Yosys
//!   `synth_ecp5`: at 256 entries 5 DP16KD, 360 LUT4, 133 CCU2C, 1572 FF; at 4096 entries 38
//!   DP16KD, 548 LUT4, 135 CCU2C, 1747 FF (results/AREA-mr_table.md, with the command).
//! - Golden model: `nicgen_model::rdma::context::MrTable` (the checks of
//!   `nicgen_model::rdma::context::Mr`, which `Host::check_remote` runs too); test:
//!   `testbench/tests/roce/mr_table.rs`.

use crate::timing::stage_init;
use nicgen_edsl::prelude::*;

/// Cycles from a request on `s_axis_req` to its result on `m_axis_res`.
pub const LATENCY: u64 = 6;

/// Bits of the opaque request id returned with the result.
pub const ID_BITS: u32 = 8;

/// Entries per block-RAM bank: deeper tables are banks of this many, each read into a
/// register of its own before the pick (docs/TIMING.md, rule 7).
pub const BANK_DEPTH: u32 = 2048;

/// The local side may write.
pub const ACCESS_LOCAL_WRITE: u32 = 1;
/// A remote RDMA WRITE may target the region.
pub const ACCESS_REMOTE_WRITE: u32 = 2;
/// A remote RDMA READ may source the region.
pub const ACCESS_REMOTE_READ: u32 = 4;
/// A remote atomic may target the region.
pub const ACCESS_REMOTE_ATOMIC: u32 = 8;

/// Result codes (`MrRes::err`), in the order the checks take precedence.
pub mod err {
    /// The access passes.
    pub const NONE: u32 = 0;
    /// No valid entry has the key.
    pub const BAD_KEY: u32 = 1;
    /// The entry belongs to another protection domain.
    pub const WRONG_PD: u32 = 2;
    /// The range is not inside the region.
    pub const OUT_OF_BOUNDS: u32 = 3;
    /// The entry lacks a right the request needs.
    pub const NO_PERMISSION: u32 = 4;
}

/// Parameters of [`mr_table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MrTableCfg {
    /// Entries: a power of two, 16..=4096.
    pub entries: u32,
}

impl MrTableCfg {
    /// Bits of an entry index.
    pub fn index_bits(&self) -> u32 {
        clog2(self.entries as u64)
    }
}

nicgen_edsl::record! {
    /// A write of one entry (from the register file).
    pub struct MrWrite(index_bits: u32) {
        /// Write in this cycle.
        en: 1,
        /// The entry: the key's bits `8..8 + index_bits`.
        index: index_bits,
        /// Register (1) or deregister (0).
        valid: 1,
        /// The key's low byte.
        tag: 8,
        /// Protection domain.
        pd: 24,
        /// First virtual address.
        va: 64,
        /// Length in bytes.
        len: 64,
        /// Access rights (`ACCESS_*` bits).
        access: 4,
    }
}

nicgen_edsl::record! {
    /// A check request (`s_axis_req_tdata`).
    pub struct MrReq {
        /// lkey or rkey: `(index << 8) | tag`.
        key: 32,
        /// The QP's protection domain.
        pd: 24,
        /// First virtual address of the range.
        va: 64,
        /// Length of the range in bytes (a RoCE message is at most 2^31 bytes).
        len: 32,
        /// The rights the access needs (`ACCESS_*` bits).
        need: 4,
        /// The key is an rkey from the wire; returned with the result only.
        remote: 1,
        /// Opaque, returned with the result.
        id: ID_BITS,
    }
}

nicgen_edsl::record! {
    /// A verdict (`m_axis_res_tdata`), in request order.
    pub struct MrRes {
        /// The access passes (`err` is 0).
        ok: 1,
        /// The first failed check ([`err`] codes).
        err: 3,
        /// The request's `remote`.
        remote: 1,
        /// The request's `id`.
        id: ID_BITS,
    }
}

nicgen_edsl::record! {
    /// An entry as the block RAM holds it.
    struct Entry {
        valid: 1,
        tag: 8,
        pd: 24,
        base: 64,
        end: 64,
        access: 4,
    }
}

nicgen_edsl::record! {
    /// What of a request the stages after the RAM read need.
    struct Carried {
        tag: 8,
        pd: 24,
        va: 64,
        need: 4,
        remote: 1,
        id: ID_BITS,
    }
}

/// The table's ports.
pub struct MrTablePorts {
    pub wr: MrWrite,
    pub req: RecordValid<MrReq<u32>>,
    pub res: RecordValid<MrRes<u32>>,
    /// The clearing sweep after reset runs: writes are ignored, requests answer bad key.
    pub busy: Sig,
}

impl Ports for MrTablePorts {
    type Cfg = MrTableCfg;
    fn ports(io: &Io, cfg: &MrTableCfg) -> Self {
        MrTablePorts {
            wr: io.inputs("wr_", &MrWrite::shape(cfg.index_bits())),
            req: RecordValid::sink(io, "s_axis_req", MrReq::shape()),
            res: RecordValid::source(io, "m_axis_res", MrRes::shape()),
            busy: io.output("busy", 1),
        }
    }
}

/// The table for `cfg` (module `roce_mr_table_e<entries>`).
pub fn mr_table(cfg: &MrTableCfg) -> Result<Block<MrTablePorts>, ElabError> {
    if !cfg.entries.is_power_of_two() || !(16..=4096).contains(&cfg.entries) {
        return Err(ElabError::config(
            "mr_table",
            format!(
                "entries {} must be a power of two in 16..=4096 (the index is a whole number of \
                 key bits; 4096 entries of 165 bits take 38 of the ECP5-85k's 208 block RAMs)",
                cfg.entries
            ),
        ));
    }
    let cfg = *cfg;
    Block::build(
        format!("roce_mr_table_e{}", cfg.entries),
        cfg,
        move |p: MrTablePorts| {
            doc("RoCE memory-region table: key, PD, bounds and rights checked per request.");
            let ib = cfg.index_bits();
            let banks = (cfg.entries / BANK_DEPTH).max(1);
            let bank_bits = banks.trailing_zeros();
            let row_bits = ib - bank_bits;
            let one = lit(1, 1u32);
            // Whether `index` lies in bank `b` (the index's top bits).
            let in_bank = move |index: Sig, b: u32| {
                if banks > 1 {
                    index.slice(ib - 1, row_bits).eq(u64::from(b))
                } else {
                    one
                }
            };

            // ---- Clearing sweep after reset: every entry written invalid, one per cycle.
            let clearing = reg_init(1, 1u32).named("clearing");
            let clear_idx = reg_init(ib, 0u32).named("clear_index");
            let last = clear_idx.eq(u64::from(cfg.entries - 1));
            clear_idx.set_if(clearing, clear_idx + 1u32);
            clearing.set_if(clearing & last, lit(1, 0u32));
            p.busy.set(clearing);

            // ---- The write, registered with the region's end added.
            let wr = p.wr;
            let w_en = stage_init(wr.en | clearing, one).named("w_en");
            let w_index = delay(mux(clearing, clear_idx, wr.index)).named("w_index");
            let w_word = delay(
                Entry {
                    valid: wr.valid & !clearing,
                    tag: wr.tag,
                    pd: wr.pd,
                    base: wr.va,
                    end: wr.va + wr.len,
                    access: wr.access,
                }
                .pack(),
            )
            .named("w_word");

            // ---- A: the request registered.
            let a_valid = stage_init(p.req.valid, one).named("a_valid");
            let a = delay(p.req.data).named("a_req");
            let a_busy = delay(clearing).named("a_busy");
            let a = MrReq::unpack(a);
            let a_index = a.key.slice(8 + ib - 1, 8).named("a_index");

            // ---- B: the RAM read; `va + len` and its carry; the bypass and bank selects.
            let rams: Vec<Sig> = (0..banks)
                .map(|b| {
                    let m = memory(&format!("entries_b{b}"), Entry::WIDTH, cfg.entries / banks);
                    m.write(
                        (w_en & in_bank(w_index, b)).named(&format!("w_en_b{b}")),
                        w_index.slice(row_bits - 1, 0),
                        w_word,
                    );
                    m.read_sync(a_index.slice(row_bits - 1, 0), None)
                        .named(&format!("read_b{b}"))
                })
                .collect();
            let b_valid = stage_init(a_valid, one).named("b_valid");
            let b_end = delay(a.va.add_wide(a.len.zext(64))).named("b_req_end");
            let in_range = a.key.slice(31, 8 + ib).eq(0u32);
            let b_key_ok = delay(in_range & !a_busy).named("b_key_ok");
            let bypass = (w_en & w_index.eq(a_index)).named("bypass");
            // One-hot selects of the M pick: each bank (when not bypassed), then the bypass.
            let sel: Vec<Sig> = (0..banks)
                .map(|b| in_bank(a_index, b) & !bypass)
                .chain(std::iter::once(bypass))
                .rev()
                .collect();
            // `cat` takes the most significant part first: bit `i` is select `i`.
            let b_sel = delay(cat(&sel)).named("b_sel");
            let b_word = delay(w_word).named("w_word_d1");
            let carried = Carried {
                tag: a.key.slice(7, 0),
                pd: a.pd,
                va: a.va,
                need: a.need,
                remote: a.remote,
                id: a.id,
            };
            let b_req = delay(carried.pack()).named("b_req");

            // ---- C: the read words' registers (each RAM's output register).
            let c_rams: Vec<Sig> = rams
                .iter()
                .enumerate()
                .map(|(b, r)| delay(*r).named(&format!("read_b{b}_q")))
                .collect();
            let c_valid = stage_init(b_valid, one).named("c_valid");
            let c_end = delay(b_end).named("c_req_end");
            let c_key_ok = delay(b_key_ok).named("c_key_ok");
            let c_sel = delay(b_sel).named("c_sel");
            let c_word = delay(b_word).named("w_word_d2");
            let c_req = delay(b_req).named("c_req");

            // ---- M: the entry, picked under the registered one-hot selects.
            let picked = c_rams
                .iter()
                .chain(std::iter::once(&c_word))
                .enumerate()
                .map(|(i, w)| *w & c_sel.bit(i as u32).repl(Entry::WIDTH))
                .reduce(|x, y| x | y)
                .expect("at least one bank");
            let m_entry = Entry::unpack(delay(picked).named("m_entry"));
            let m_valid = stage_init(c_valid, one).named("m_valid");
            let m_end = delay(c_end).named("m_req_end");
            let m_key_ok = delay(c_key_ok).named("m_key_ok");
            let m_req = Carried::unpack(delay(c_req).named("m_req"));

            // ---- K: the checks, each a registered flag.
            let k_valid = stage_init(m_valid, one).named("k_valid");
            let key_ok = m_key_ok & m_entry.valid & m_entry.tag.eq(m_req.tag);
            let k_key = delay(key_ok).named("k_key_ok");
            let k_pd = delay(m_entry.pd.eq(m_req.pd)).named("k_pd_ok");
            let k_lo = delay(m_req.va.ge(m_entry.base)).named("k_lo_ok");
            let k_hi = delay(m_end.slice(63, 0).le(m_entry.end)).named("k_hi_ok");
            let k_carry = delay(m_end.bit(64)).named("k_carry");
            let lacks = m_req.need & !m_entry.access;
            let k_rights = delay(lacks.eq(0u32)).named("k_rights_ok");
            let k_remote = delay(m_req.remote).named("k_remote");
            let k_id = delay(m_req.id).named("k_id");

            // ---- R: the first failed check, the result register.
            let bounds = k_lo & k_hi & !k_carry;
            let code = select(
                &[
                    (!k_key, lit(3, err::BAD_KEY)),
                    (!k_pd, lit(3, err::WRONG_PD)),
                    (!bounds, lit(3, err::OUT_OF_BOUNDS)),
                    (!k_rights, lit(3, err::NO_PERMISSION)),
                ],
                lit(3, err::NONE),
            );
            let r_valid = stage_init(k_valid, one).named("r_valid");
            let r_ok = delay(k_key & k_pd & bounds & k_rights).named("r_ok");
            let r_err = delay(code).named("r_err");
            let r_remote = delay(k_remote).named("r_remote");
            let r_id = delay(k_id).named("r_id");
            p.res.valid.set(r_valid);
            p.res.set_fields(&MrRes {
                ok: r_ok,
                err: r_err,
                remote: r_remote,
                id: r_id,
            });
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_for_every_size_and_refuses_others() {
        for entries in [16, 256, 2048, 4096] {
            mr_table(&MrTableCfg { entries }).unwrap_or_else(|e| panic!("{entries}: {e}"));
        }
        for entries in [0, 8, 100, 8192] {
            let e = mr_table(&MrTableCfg { entries }).unwrap_err();
            assert!(e.mentions(&format!("entries {entries}")), "{e}");
        }
    }
}
