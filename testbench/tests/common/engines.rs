//! What the queue-engine tests (`cq_engine`, `sq_engine`, `rq_engine`) share: the engine wired
//! to its memory-region table as the NIC wires it, the simulated host's DMA as one agent, MR
//! programming, and queue-command records.

use nicgen_edsl::prelude::*;
use nicgen_edsl::Dir;
use nicgen_hdl::host::mr_table::mr_table;
use nicgen_host::{DmaService, HostMemory};
use nicgen_model::sq::Mr;
use nicgen_tb::stream::{Agent, StreamError};
use nicgen_tb::Sim;

/// `engine` with a memory-region table of `mrs` entries on its `mr_*` lookup; the table's
/// write port is on `mr_wr_*`. With `idle_writes`, DMA write ports the engine lacks are added,
/// idle (the send engine only reads).
pub fn with_mr_table(
    name: &str,
    engine: &Rc<ModuleDef>,
    mrs: u32,
    idle_writes: Option<u32>,
) -> Rc<ModuleDef> {
    let mrt = mr_table(mrs, 1).unwrap();
    let engine = engine.clone();
    Module::build(name.to_string(), move || {
        doc("Test DUT: a queue engine with its memory-region table.");
        let u = instance(&engine, "u_engine");
        let m = instance(&mrt, "u_mr");
        for p in &engine.ports {
            match (p.dir, p.name.as_str()) {
                (_, "clk" | "rst") => {}
                (Dir::Output, "mr_lkey") => m.set("rd0_lkey", u.get("mr_lkey")),
                (Dir::Input, n @ ("mr_valid" | "mr_base" | "mr_len")) => {
                    u.set(n, m.get(&format!("rd0_{}", &n[3..])))
                }
                (Dir::Input, n) => u.set(n, input(n, p.width)),
                (Dir::Output, n) => output(n, u.get(n)),
            }
        }
        for (n, width) in [
            ("wr_en", 1),
            ("wr_index", 8),
            ("wr_valid", 1),
            ("wr_base", 64),
            ("wr_len", 64),
        ] {
            m.set(n, input(&format!("mr_{n}"), width));
        }
        if let Some(w) = idle_writes {
            output(
                "m_dma_wr_req_tdata",
                lit(nicgen_hdl::host::DmaWrReq::WIDTH, 0u32),
            );
            output("m_dma_wr_req_tvalid", lit(1, 0u32));
            input("m_dma_wr_req_tready", 1).unused();
            output("m_dma_wr_tdata", lit(w, 0u32));
            output("m_dma_wr_tkeep", lit(w / 8, 0u32));
            output("m_dma_wr_tlast", lit(1, 0u32));
            output("m_dma_wr_tvalid", lit(1, 0u32));
            input("m_dma_wr_tready", 1).unused();
        }
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The simulated host's memory and DMA service as one agent; a rule broken by the DUT panics
/// with the rule's text.
pub struct Host {
    pub dma: DmaService,
    pub mem: HostMemory,
}

impl Agent for Host {
    fn drive(&mut self, sim: &mut Sim) {
        self.dma.drive(sim, &self.mem);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        self.dma
            .observe(sim, &mut self.mem)
            .map_err(|v| panic!("{v}"))
    }
}

/// Reset, then write the memory-region table (`None` = invalid entry).
pub fn reset_and_program_mrs(sim: &mut Sim, mrs: &[Option<Mr>]) {
    let rst = sim.port("rst").unwrap();
    sim.set(rst, 1);
    sim.cycles_n(2);
    sim.set(rst, 0);
    let p = |sim: &Sim, n: &str| sim.port(&format!("mr_{n}")).unwrap();
    let (en, idx, valid, base, len) = (
        p(sim, "wr_en"),
        p(sim, "wr_index"),
        p(sim, "wr_valid"),
        p(sim, "wr_base"),
        p(sim, "wr_len"),
    );
    for (i, r) in mrs.iter().enumerate() {
        sim.set(en, 1);
        sim.set(idx, i as u64);
        sim.set(valid, r.is_some() as u64);
        sim.set(base, r.map_or(0, |x| x.base));
        sim.set(len, r.map_or(0, |x| x.len));
        sim.cycle();
    }
    sim.set(en, 0);
}

/// A queue command record for queue type `qtype`.
pub fn qcmd(op: u128, qtype: u128, index: u128, ins: [u128; 8]) -> Vec<u8> {
    use nicgen_hdl::host::QcmdReq;
    let [in0, in1, in2, in3, in4, in5, in6, in7] = ins;
    QcmdReq::shape().encode(&QcmdReq {
        op,
        qtype,
        index,
        in0,
        in1,
        in2,
        in3,
        in4,
        in5,
        in6,
        in7,
    })
}
