//! `mr_table`: the memory regions the NIC may touch (lkey = entry index): base and length per
//! entry, looked up combinationally by the engines that gather and scatter.
//!
//! - Ports ([`MrTablePorts`]): `wr_en`, `wr_index`, `wr_valid`, `wr_base` (64), `wr_len` (64)
//!   ([`MrWrite`]): one entry written per cycle (the BAR's MR.COMMIT); per reader `r`:
//!   `rd<r>_lkey` in, `rd<r>_valid`, `rd<r>_base`, `rd<r>_len` out ([`MrEntry`], same cycle).
//!   An lkey at or above the table size reads invalid. An engine's side of a lookup is
//!   [`MrLookup`] (`mr_lkey` out, `mr_valid/_base/_len` in).
//! - Latency: a written entry is visible the next cycle. Throughput: one write per cycle, one
//!   lookup per reader per cycle.
//! - Cost: `mrs` x 128 bits of LUT RAM per reader (read ports are copies), `mrs` valid
//!   flip-flops (reset to invalid); no row in results/AREA.md.
//! - Golden model: `nicgen_model::sq::Mr` checks; test: `testbench/tests/host/sq_engine.rs`.

use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// A write of one table entry (the BAR's MR.COMMIT).
    pub struct MrWrite {
        /// Write in this cycle.
        en: 1,
        /// The entry (lkey); one at or above the table size is ignored.
        index: 8,
        /// The entry becomes valid with `base` and `len`, else invalid.
        valid: 1,
        base: 64,
        len: 64,
    }
}

nicgen_edsl::record! {
    /// The answer to a lookup: the region of the lkey looked up.
    pub struct MrEntry {
        /// The lkey names a valid entry.
        valid: 1,
        /// Region start, bus address.
        base: 64,
        /// Region length, bytes.
        len: 64,
    }
}

nicgen_edsl::record! {
    /// A table entry in the RAM.
    struct Region {
        base: 64,
        len: 64,
    }
}

/// One lookup port of the table, seen from the engine that asks: `mr_lkey` out, the entry
/// (`mr_valid`, `mr_base`, `mr_len`) back in the same cycle.
#[derive(Clone, Debug)]
pub struct MrLookup {
    pub lkey: Sig,
    pub entry: MrEntry,
}

impl MrLookup {
    /// The engine's ports for a table of `mrs` entries.
    #[track_caller]
    pub fn engine(io: &Io, mrs: u32) -> MrLookup {
        MrLookup {
            lkey: io.output("mr_lkey", clog2(mrs as u64)),
            entry: io.inputs("mr_", &MrEntry::shape()),
        }
    }
}

/// The table's ports: the write port, then per reader its lkey in and its entry out.
pub struct MrTablePorts {
    pub wr: MrWrite,
    /// Reader `r`: `rd<r>_lkey` and `rd<r>_valid/_base/_len`.
    pub rd: Vec<(Sig, MrEntry)>,
}

impl Ports for MrTablePorts {
    /// `(mrs, readers)`.
    type Cfg = (u32, u32);
    fn ports(io: &Io, &(mrs, readers): &(u32, u32)) -> Self {
        let wr = io.inputs("wr_", &MrWrite::shape());
        let rd = (0..readers)
            .map(|r| {
                let lkey = io.input(&format!("rd{r}_lkey"), clog2(mrs as u64));
                (lkey, io.outputs(&format!("rd{r}_"), &MrEntry::shape()))
            })
            .collect();
        MrTablePorts { wr, rd }
    }
}

/// `x < n`, true for every value when `n` exceeds what `x` can hold.
fn below(x: Sig, n: u32) -> Sig {
    if (n as u64) >= 1u64 << x.width() {
        lit(1, 1u32)
    } else {
        x.lt(n as u64)
    }
}

pub fn mr_table(mrs: u32, readers: u32) -> Result<Block<MrTablePorts>, ElabError> {
    if !(2..=256).contains(&mrs) || readers == 0 {
        return Err(ElabError::config(
            "mr_table",
            "2..=256 entries and at least one reader",
        ));
    }
    Block::build(
        format!("mr_table_m{mrs}_r{readers}"),
        (mrs, readers),
        move |p: MrTablePorts| {
            doc("Memory-region table: base and length per lkey, combinational lookups.");
            let bits = clog2(mrs as u64);
            let wr = p.wr;
            let in_range = below(wr.index, mrs);
            let mem = memory("regions", 128, mrs.next_power_of_two());
            mem.write(
                (wr.en & in_range).named("write"),
                wr.index.trunc(bits),
                Region {
                    base: wr.base,
                    len: wr.len,
                }
                .pack(),
            );
            let valid = reg_init(mrs, 0u32).named("valid");
            let one = lit(mrs, 1u32).shl_by(wr.index.trunc(bits));
            let set = mux(wr.en & in_range & wr.valid, one, lit(mrs, 0u32));
            let clr = mux(wr.en & in_range, one, lit(mrs, 0u32));
            valid.set((valid & !clr) | set);
            for (r, (lkey, out)) in p.rd.iter().enumerate() {
                let e = Region::unpack(mem.read_async(*lkey).named(&format!("rd{r}_entry")));
                let hit = valid.shr_by(*lkey).bit(0) & below(*lkey, mrs);
                out.valid.set(hit);
                out.base.set(e.base);
                out.len.set(e.len);
            }
        },
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn builds_for_any_size() {
        for (m, r) in [(2, 1), (16, 2), (100, 2), (256, 1)] {
            super::mr_table(m, r).unwrap_or_else(|e| panic!("{m} {r}: {e}"));
        }
        assert!(super::mr_table(1, 1).is_err());
    }
}
