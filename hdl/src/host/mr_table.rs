//! `mr_table`: the memory regions the NIC may touch (lkey = entry index): base and length per
//! entry, looked up combinationally by the engines that gather and scatter.
//!
//! - Ports: `wr_en`, `wr_index`, `wr_valid`, `wr_base` (64), `wr_len` (64): one entry written
//!   per cycle (the BAR's MR.COMMIT); per reader `r`: `rd<r>_lkey` in, `rd<r>_valid`,
//!   `rd<r>_base`, `rd<r>_len` out (same cycle). An lkey at or above the table size reads
//!   invalid.
//! - Latency: a written entry is visible the next cycle. Throughput: one write per cycle, one
//!   lookup per reader per cycle.
//! - Cost: `mrs` x 128 bits of LUT RAM per reader (read ports are copies), `mrs` valid
//!   flip-flops (reset to invalid); no row in results/AREA.md.
//! - Golden model: `nicgen_model::sq::Mr` checks; test: `testbench/tests/host/sq_engine.rs`.

use nicgen_edsl::prelude::*;

/// `x < n`, true for every value when `n` exceeds what `x` can hold.
fn below(x: Sig, n: u32) -> Sig {
    if (n as u64) >= 1u64 << x.width() {
        lit(1, 1u32)
    } else {
        x.lt(n as u64)
    }
}

pub fn mr_table(mrs: u32, readers: u32) -> Result<Rc<ModuleDef>, ElabError> {
    if !(2..=256).contains(&mrs) || readers == 0 {
        return Err(ElabError::config(
            "mr_table",
            "2..=256 entries and at least one reader",
        ));
    }
    Module::build(format!("mr_table_m{mrs}_r{readers}"), move || {
        doc("Memory-region table: base and length per lkey, combinational lookups.");
        let bits = clog2(mrs as u64);
        let wr_en = input("wr_en", 1);
        let wr_index = input("wr_index", 8);
        let wr_valid = input("wr_valid", 1);
        let wr_base = input("wr_base", 64);
        let wr_len = input("wr_len", 64);
        let in_range = below(wr_index, mrs);
        let mem = memory("regions", 128, mrs.next_power_of_two());
        mem.write(
            (wr_en & in_range).named("write"),
            wr_index.trunc(bits),
            cat(&[wr_len, wr_base]),
        );
        let valid = reg_init(mrs, 0u32).named("valid");
        let one = lit(mrs, 1u32).shl_by(wr_index.trunc(bits));
        let set = mux(wr_en & in_range & wr_valid, one, lit(mrs, 0u32));
        let clr = mux(wr_en & in_range, one, lit(mrs, 0u32));
        valid.set((valid & !clr) | set);
        for r in 0..readers {
            let lkey = input(&format!("rd{r}_lkey"), bits);
            let e = mem.read_async(lkey).named(&format!("rd{r}_entry"));
            let hit = valid.shr_by(lkey).bit(0) & below(lkey, mrs);
            output(&format!("rd{r}_valid"), hit);
            output(&format!("rd{r}_base"), e.slice(63, 0));
            output(&format!("rd{r}_len"), e.slice(127, 64));
        }
    })
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
