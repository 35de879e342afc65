//! The BAR master: 32-bit AXI4-Lite reads and writes on the NIC's `s_axil_*` slave ports
//! (`hdl/src/host/mod.rs`, "The BAR port"), one transaction at a time, each with a budget of
//! cycles after which it fails naming the handshake it was waiting for.
//!
//! A write raises `awvalid` and `wvalid` together (`wstrb` all ones), lowers each after its
//! handshake, then waits for `bvalid` with `bready` high; a read raises `arvalid`, then waits
//! for `rvalid` with `rready` high. `bready`/`rready` are high only while the response is due.

use crate::error::{port, HostError};
use nicgen_hdl::host::BAR_BITS;
use nicgen_tb::{Dir, PortId, Sim};
use std::fmt;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxilOp {
    /// A 32-bit read.
    Read,
    /// A 32-bit write.
    Write,
}

impl fmt::Display for AxilOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AxilOp::Read => "read",
            AxilOp::Write => "write",
        })
    }
}

/// Why a BAR transaction failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxilError {
    /// The offset is not 4-byte aligned or lies beyond the BAR.
    #[error("BAR {op} at {offset:#x}: offsets are 4-byte aligned and below {size:#x}")]
    BadOffset {
        /// Read or write.
        op: AxilOp,
        /// The offset asked for.
        offset: u32,
        /// Size of the BAR in bytes.
        size: u64,
    },
    /// The NIC did not complete a handshake within the budget.
    #[error("BAR {op} at {offset:#x}: no {waiting_for} within {budget} cycles (started in cycle {start}): the NIC never answered")]
    Timeout {
        /// Read or write.
        op: AxilOp,
        /// Register offset.
        offset: u32,
        /// The handshake that never came (`awready`, `wready`, `bvalid`, `arready`, `rvalid`).
        waiting_for: &'static str,
        /// The budget in cycles.
        budget: u64,
        /// Cycle the transaction started.
        start: u64,
    },
    /// The NIC answered with `bresp`/`rresp` other than OKAY.
    #[error("BAR {op} at {offset:#x}: the NIC answered {} ({resp})", resp_name(*.resp))]
    Response {
        /// Read or write.
        op: AxilOp,
        /// Register offset.
        offset: u32,
        /// `bresp` or `rresp`.
        resp: u8,
    },
    /// A transaction was started while another is in flight.
    #[error("BAR {op} at {offset:#x} started while another transaction is in flight")]
    Busy {
        /// Read or write.
        op: AxilOp,
        /// Register offset.
        offset: u32,
    },
}

fn resp_name(resp: u8) -> &'static str {
    match resp {
        0 => "OKAY",
        1 => "EXOKAY",
        2 => "SLVERR",
        _ => "DECERR",
    }
}

#[derive(Debug)]
struct Ports {
    awaddr: PortId,
    awvalid: PortId,
    awready: PortId,
    wdata: PortId,
    wstrb: PortId,
    wvalid: PortId,
    wready: PortId,
    bresp: PortId,
    bvalid: PortId,
    bready: PortId,
    araddr: PortId,
    arvalid: PortId,
    arready: PortId,
    rdata: PortId,
    rresp: PortId,
    rvalid: PortId,
    rready: PortId,
}

impl Ports {
    fn new(sim: &Sim) -> Result<Ports, HostError> {
        let i = |name: &str, w| port(sim, &format!("s_axil_{name}"), Dir::Input, Some(w));
        let o = |name: &str, w| port(sim, &format!("s_axil_{name}"), Dir::Output, Some(w));
        Ok(Ports {
            awaddr: i("awaddr", BAR_BITS)?,
            awvalid: i("awvalid", 1)?,
            awready: o("awready", 1)?,
            wdata: i("wdata", 32)?,
            wstrb: i("wstrb", 4)?,
            wvalid: i("wvalid", 1)?,
            wready: o("wready", 1)?,
            bresp: o("bresp", 2)?,
            bvalid: o("bvalid", 1)?,
            bready: i("bready", 1)?,
            araddr: i("araddr", BAR_BITS)?,
            arvalid: i("arvalid", 1)?,
            arready: o("arready", 1)?,
            rdata: o("rdata", 32)?,
            rresp: o("rresp", 2)?,
            rvalid: o("rvalid", 1)?,
            rready: i("rready", 1)?,
        })
    }
}

/// A transaction in flight: which handshakes are done.
#[derive(Debug)]
struct Txn {
    op: AxilOp,
    offset: u32,
    start: u64,
    /// Write: the address handshake; read: the `ar` handshake.
    addr_done: bool,
    /// Write: the data handshake; read: unused (true).
    data_done: bool,
}

/// The AXI4-Lite master of the BAR port. Start a transaction with
/// [`begin_read`](Self::begin_read) or [`begin_write`](Self::begin_write), then call
/// [`drive`](Self::drive) before and [`observe`](Self::observe) after each [`Sim::cycle`] until
/// [`take_done`](Self::take_done) yields the outcome ([`crate::SimHost`] does all of this).
#[derive(Debug)]
pub struct AxilMaster {
    ports: Ports,
    budget: u64,
    txn: Option<Txn>,
    done: Option<Result<u32, AxilError>>,
}

impl AxilMaster {
    /// Resolves the `s_axil_*` ports (widths as the contract says); each transaction fails
    /// after `budget` cycles without completing.
    pub fn new(sim: &Sim, budget: u64) -> Result<AxilMaster, HostError> {
        if budget == 0 {
            return Err(HostError::Config {
                field: "axil_budget",
                message: "is 0 cycles: no transaction could complete".into(),
            });
        }
        Ok(AxilMaster {
            ports: Ports::new(sim)?,
            budget,
            txn: None,
            done: None,
        })
    }

    /// Starts a read of the register at `offset` in the cycle `sim` is about to run.
    pub fn begin_read(&mut self, sim: &Sim, offset: u32) -> Result<(), AxilError> {
        self.begin(sim, AxilOp::Read, offset)
    }

    /// Starts a write of `value` to the register at `offset`.
    pub fn begin_write(&mut self, sim: &mut Sim, offset: u32, value: u32) -> Result<(), AxilError> {
        self.begin(sim, AxilOp::Write, offset)?;
        sim.set(self.ports.wdata, u64::from(value));
        Ok(())
    }

    fn begin(&mut self, sim: &Sim, op: AxilOp, offset: u32) -> Result<(), AxilError> {
        if self.txn.is_some() {
            return Err(AxilError::Busy { op, offset });
        }
        let size = 1u64 << BAR_BITS;
        if !offset.is_multiple_of(4) || u64::from(offset) >= size {
            return Err(AxilError::BadOffset { op, offset, size });
        }
        self.done = None;
        self.txn = Some(Txn {
            op,
            offset,
            start: sim.cycles(),
            addr_done: false,
            data_done: op == AxilOp::Read,
        });
        Ok(())
    }

    /// Before [`Sim::cycle`]: drives the valid and ready signals of the transaction in flight.
    pub fn drive(&mut self, sim: &mut Sim) {
        let p = &self.ports;
        let (mut aw, mut w, mut b, mut ar, mut r) = (false, false, false, false, false);
        if let Some(t) = &self.txn {
            match t.op {
                AxilOp::Write => {
                    sim.set(p.awaddr, u64::from(t.offset));
                    sim.set(p.wstrb, 0xf);
                    aw = !t.addr_done;
                    w = !t.data_done;
                    b = t.addr_done && t.data_done;
                }
                AxilOp::Read => {
                    sim.set(p.araddr, u64::from(t.offset));
                    ar = !t.addr_done;
                    r = t.addr_done;
                }
            }
        }
        sim.set_bool(p.awvalid, aw);
        sim.set_bool(p.wvalid, w);
        sim.set_bool(p.bready, b);
        sim.set_bool(p.arvalid, ar);
        sim.set_bool(p.rready, r);
    }

    /// After [`Sim::cycle`]: records the handshakes; completes the transaction on its response
    /// or when the budget runs out. Returns whether a handshake happened.
    pub fn observe(&mut self, sim: &Sim) -> bool {
        let p = &self.ports;
        let Some(t) = &mut self.txn else {
            return false;
        };
        let fire = |valid, ready| sim.get_bool(valid) && sim.get_bool(ready);
        let mut progress = false;
        let outcome = match t.op {
            AxilOp::Write => {
                let resp_due = t.addr_done && t.data_done;
                if fire(p.awvalid, p.awready) {
                    t.addr_done = true;
                    progress = true;
                }
                if fire(p.wvalid, p.wready) {
                    t.data_done = true;
                    progress = true;
                }
                (resp_due && fire(p.bvalid, p.bready)).then(|| (sim.get_u64(p.bresp), 0))
            }
            AxilOp::Read => {
                let resp_due = t.addr_done;
                if fire(p.arvalid, p.arready) {
                    t.addr_done = true;
                    progress = true;
                }
                (resp_due && fire(p.rvalid, p.rready))
                    .then(|| (sim.get_u64(p.rresp), sim.get_u64(p.rdata) as u32))
            }
        };
        if let Some((resp, data)) = outcome {
            self.done = Some(if resp == 0 {
                Ok(data)
            } else {
                Err(AxilError::Response {
                    op: t.op,
                    offset: t.offset,
                    resp: resp as u8,
                })
            });
            self.txn = None;
            return true;
        }
        if sim.cycles() - t.start >= self.budget {
            let waiting_for = match (t.op, t.addr_done, t.data_done) {
                (AxilOp::Write, false, false) => "awready and wready",
                (AxilOp::Write, false, true) => "awready",
                (AxilOp::Write, true, false) => "wready",
                (AxilOp::Write, true, true) => "bvalid",
                (AxilOp::Read, false, _) => "arready",
                (AxilOp::Read, true, _) => "rvalid",
            };
            self.done = Some(Err(AxilError::Timeout {
                op: t.op,
                offset: t.offset,
                waiting_for,
                budget: self.budget,
                start: t.start,
            }));
            self.txn = None;
        }
        progress
    }

    /// The outcome of the last transaction once it is complete: the read data (0 for a
    /// write) or why it failed.
    pub fn take_done(&mut self) -> Option<Result<u32, AxilError>> {
        self.done.take()
    }

    /// A transaction is in flight.
    pub fn busy(&self) -> bool {
        self.txn.is_some()
    }
}
