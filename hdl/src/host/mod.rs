//! The host side of the NIC: the BAR register interface, DMA, queues, doorbells, completions
//! and events (mlx5 descriptor formats, `docs/wire-formats.md` §4).
//!
//! ## The BAR port (register space)
//!
//! BAR 0 is an AXI4-Lite slave with 32-bit data: `s_axil_awaddr/_awvalid/_awready`,
//! `s_axil_wdata/_wstrb/_wvalid/_wready`, `s_axil_bresp/_bvalid/_bready`,
//! `s_axil_araddr/_arvalid/_arready`, `s_axil_rdata/_rresp/_rvalid/_rready`; addresses are byte
//! addresses of [`BAR_BITS`] bits, 4-byte aligned (the low two bits are ignored); `wstrb` must be
//! all ones (sub-dword writes are not supported and answered with `bresp` = SLVERR, 2).
//! Register values are little-endian numbers; the mlx5 doorbell payloads written to the UAR
//! page are raw descriptor bytes (big-endian fields), as on mlx5. The map is
//! `crate::host::regmap` (generated document: `docs/REGISTERS.md`); the hardware names its
//! registers, descriptor fields and constants through the typed constants of
//! `crate::host::regs`, and reaches the BAR's [`Axil`] interface as one port group.
//!
//! ## The DMA port (what the simulated host, `testbench/host`, and a PCIe shell serve)
//!
//! The NIC is the DMA master. Bus addresses are 64 bits; data beats are `W` bits wide, the
//! preset's `host.dma_bits` (`Preset::dma_bits`: 256 on nic64 and nic128, as a PCIe Gen3 x8
//! hard block presents it; the datapath width where absent), bytes little-endian in the beat
//! (byte `i` at `tdata[8i+7:8i]`), as on every stream (`crate::stream`). The send and receive
//! engines work at the datapath width; where the port is wider, `nic` narrows the read answers
//! and widens the receive engine's write data at the port (`crate::stream::stream_width`),
//! every byte at its place, so an engine's `off` (below its own beat's bytes) is the port's.
//! The CQ engine, which moves only 64-byte entries, writes at the port's width.
//!
//! | ports | direction | record / stream | meaning |
//! |---|---|---|---|
//! | `m_dma_rd_req_tdata/_tvalid/_tready` | NIC → host | [`DmaRdReq`] | read `len` bytes at `addr`, answer with tag `tag`, first byte at byte `off` of the first beat |
//! | `s_dma_rd_cpl_*` | host → NIC | stream, `tuser` = [`DmaRdCplUser`] | the data of one read |
//! | `m_dma_wr_req_tdata/_tvalid/_tready` | NIC → host | [`DmaWrReq`] | write `len` bytes at `addr`, taken from byte `off` of the first data beat on |
//! | `m_dma_wr_*` | NIC → host | stream (no `tuser`) | the data of the writes, in request order |
//! | `irq` | NIC → host | `eqs` bits | a one-cycle pulse on bit `v` = one message on vector `v` (MSI-X style) |
//!
//! Rules:
//! 1. A request has `1 <= len <= 4096` and does not cross a 4 KiB boundary (PCIe's rule); the
//!    NIC splits longer transfers.
//! 2. Reads: at most one outstanding read per tag; the host answers each read with exactly
//!    `ceil((off + len) / (W/8))` beats, `tlast` on the final one, the first byte of the data
//!    at byte `off` of the first beat and the rest following byte by byte; `tkeep` marks the
//!    `len` data bytes (so it is a contiguous run, starting at `off` on the first beat and
//!    ending early on the last). The beats of one answer are
//!    contiguous (never interleaved with another answer), but answers may come in any order
//!    relative to their requests. `tuser.err` set on every beat of an answer says the address
//!    was not readable (the data is then zero).
//! 3. Writes: each write request is followed (on `m_dma_wr`, in request order) by exactly
//!    `ceil((off + len) / (W/8))` beats laid out as in rule 2 (`tkeep` marks the data bytes). Writes are posted and applied in order:
//!    a write is visible to the host only after every earlier write, so a CQE written after
//!    its data never overtakes it. A write to an address the host cannot write is dropped and
//!    counted by the host.
//!
//! `off` (`0 <= off < W/8`) lets the NIC place DMA data anywhere in its beats without a
//! barrel shifter: a frame gathered from several buffers lands in a byte-enabled buffer at its
//! running byte position, and a frame scattered over several buffers is written from wherever
//! each buffer's share starts. The byte shifting this implies belongs to the DMA interface
//! (the PCIe shell), as in Corundum's `dma_if_pcie`, where it aligns to its RAM instead.
//! 4. The host may hold `tready` low on any request or data channel for any number of cycles.

use nicgen_edsl::prelude::*;

/// The trait that encodes and decodes these records on the testbench side
/// (`DmaRdReq::shape().decode(bytes)`), for crates that see the NIC only through this module.
pub use nicgen_edsl::record::Shape;

/// Width of the BAR 0 byte address (1 MiB).
pub const BAR_BITS: u32 = 20;

nicgen_edsl::record! {
    /// A DMA read request (`m_dma_rd_req_tdata`).
    pub struct DmaRdReq {
        /// Bus address of the first byte.
        addr: 64,
        /// Bytes, `1..=4096`, not crossing a 4 KiB boundary.
        len: 13,
        /// The tag the answer carries in `tuser`.
        tag: 8,
        /// Byte of the first answer beat the data starts at.
        off: 6,
        /// Zero.
        pad: 5,
    }
}

nicgen_edsl::record! {
    /// The `tuser` of a DMA read answer: the request's tag and an error flag.
    pub struct DmaRdCplUser {
        tag: 8,
        /// The address was not readable (the data is zero).
        err: 1,
    }
}

nicgen_edsl::record! {
    /// A DMA write request (`m_dma_wr_req_tdata`; its data follows on `m_dma_wr`).
    pub struct DmaWrReq {
        /// Bus address of the first byte.
        addr: 64,
        /// Bytes, `1..=4096`, not crossing a 4 KiB boundary.
        len: 13,
        /// Byte of the first data beat the data starts at.
        off: 6,
        /// Zero.
        pad: 13,
    }
}

nicgen_edsl::record! {
    /// A queue command, as the QCMD registers stage it (`regmap` block `qcmd`), routed to the
    /// engine that owns the queue type.
    pub struct QcmdReq {
        /// `QCMD.EXEC.op` (`regs::consts::qcmd_op`).
        op: 4,
        /// `QCMD.EXEC.qtype` (`regs::consts::qtype`).
        qtype: 4,
        /// `QCMD.EXEC.index`: the queue number.
        index: 16,
        /// `QCMD.IN` words (their meaning: the `qcmd_in` layout of the map).
        in0: 32,
        in1: 32,
        in2: 32,
        in3: 32,
        in4: 32,
        in5: 32,
        in6: 32,
        in7: 32,
    }
}

nicgen_edsl::record! {
    /// The answer to a queue command: `QCMD.STATUS.status` and the `QCMD.OUT` words.
    pub struct QcmdRes {
        /// `regs::consts::qcmd_status`.
        status: 8,
        out0: 32,
        out1: 32,
        out2: 32,
        out3: 32,
    }
}

/// The BAR port (AXI4-Lite slave, 32-bit data, [`BAR_BITS`]-bit byte addresses) as one
/// interface: `<prefix>_aw*`, `_w*`, `_b*`, `_ar*`, `_r*` in this order. Declared with
/// [`Axil::sink`] by the module that serves it; [`connect`] passes it through a parent whole.
#[derive(Clone, Debug)]
pub struct Axil {
    pub awaddr: Sig,
    pub awvalid: Sig,
    pub awready: Sig,
    pub wdata: Sig,
    pub wstrb: Sig,
    pub wvalid: Sig,
    pub wready: Sig,
    pub bresp: Sig,
    pub bvalid: Sig,
    pub bready: Sig,
    pub araddr: Sig,
    pub arvalid: Sig,
    pub arready: Sig,
    pub rdata: Sig,
    pub rresp: Sig,
    pub rvalid: Sig,
    pub rready: Sig,
}

impl Axil {
    /// The slave side (`s_axil`-style ports) of the module `io` declares.
    #[track_caller]
    pub fn sink(io: &Io, prefix: &str) -> Axil {
        let fw = |n: &str, w: u32| io.forward(Role::Sink, &format!("{prefix}_{n}"), w);
        let bw = |n: &str, w: u32| io.backward(Role::Sink, &format!("{prefix}_{n}"), w);
        Axil {
            awaddr: fw("awaddr", BAR_BITS),
            awvalid: fw("awvalid", 1),
            awready: bw("awready", 1),
            wdata: fw("wdata", 32),
            wstrb: fw("wstrb", 4),
            wvalid: fw("wvalid", 1),
            wready: bw("wready", 1),
            bresp: bw("bresp", 2),
            bvalid: bw("bvalid", 1),
            bready: fw("bready", 1),
            araddr: fw("araddr", BAR_BITS),
            arvalid: fw("arvalid", 1),
            arready: bw("arready", 1),
            rdata: bw("rdata", 32),
            rresp: bw("rresp", 2),
            rvalid: bw("rvalid", 1),
            rready: fw("rready", 1),
        }
    }
}

impl Interface for Axil {
    fn signals(&self) -> Vec<(Sig, Flow)> {
        use Flow::{Backward as B, Forward as F};
        vec![
            (self.awaddr, F),
            (self.awvalid, F),
            (self.awready, B),
            (self.wdata, F),
            (self.wstrb, F),
            (self.wvalid, F),
            (self.wready, B),
            (self.bresp, B),
            (self.bvalid, B),
            (self.bready, F),
            (self.araddr, F),
            (self.arvalid, F),
            (self.arready, B),
            (self.rdata, B),
            (self.rresp, B),
            (self.rvalid, B),
            (self.rready, F),
        ]
    }
}

/// Largest single DMA request, bytes (and the boundary a request may not cross).
pub const DMA_MAX_LEN: u32 = 4096;
pub mod bar_regs;
pub mod cq_engine;
pub mod desc;
pub mod mr_table;
mod qctx;
pub mod regmap;
pub mod regs;
pub mod rq_engine;
pub mod sq_engine;
