//! The 512-bit checksum stage behind the bindings the generator emitted for it
//! (`build.rs` writes them to `OUT_DIR`).

pub mod csum512 {
    include!(concat!(env!("OUT_DIR"), "/inet_csum_sim.rs"));
}

use anyhow::{anyhow, Result};
use nicgen_tb::{Model, VerilatorBuild, VerilatorOptions};

/// The same stage the bindings were generated for, built in Verilator (cached by content).
pub fn csum512_model() -> Result<Model> {
    let def = nicgen_hdl::csum::inet_csum(&nicgen_hdl::csum::CsumCfg {
        data_bits: 512,
        levels_per_stage: 1,
    })
    .map_err(|e| anyhow!("{e}"))?;
    let g = nicgen_edsl::generate(&def, &nicgen_edsl::EmitOptions::default());
    Ok(VerilatorBuild::new(
        &g.top,
        g.verilog.clone(),
        &g.shim_cpp,
        VerilatorOptions::default(),
    )
    .build()?)
}

/// xorshift64*: cheap enough that the benchmark measures the model, not the generator.
pub struct XorShift(pub u64);

impl XorShift {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Drive `cycles` cycles of random data through the typed wrapper; returns the number of
/// checksums seen (so the work cannot be optimised away).
pub fn drive_random(dut: &mut csum512::InetCsumD512L1, cycles: u64, seed: u64) -> u64 {
    let mut rng = XorShift(seed | 1);
    let mut inp = csum512::InetCsumD512L1In::default();
    let mut results = 0u64;
    for _ in 0..cycles {
        for w in inp.s_axis_tdata.iter_mut() {
            *w = rng.next_u64();
        }
        let r = rng.next_u64();
        inp.s_axis_tkeep = rng.next_u64();
        inp.s_axis_tvalid = (r >> 8) & 1;
        inp.s_axis_tlast = (r >> 9) & 1;
        inp.m_axis_csum_tready = 1;
        let out = dut.cycle(&inp);
        results += out.m_axis_csum_tvalid;
    }
    results
}
