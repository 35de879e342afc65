//! What every queue engine shares: the queue-command port (CREATE / DESTROY / RESET / QUERY,
//! one at a time, answered on `m_qcmd_res`) and the sweep that marks every context "not
//! created" after reset. Used inside an engine's `Module::build`.

use super::{kv, QCMD_REQ, QCMD_RES};
use crate::record::Record;
use nicgen_edsl::prelude::*;

/// The `s_qcmd` / `m_qcmd_res` ports of an engine.
pub(crate) struct QcmdPort {
    /// The command being served (latched when taken).
    pub c: Record,
    /// A command is waiting and the previous answer was taken: the engine may take it.
    pub go: Sig,
    take: Sig,
    res_valid: Sig,
}

/// The verdict on a command against the queue's current state.
pub(crate) struct Verdict {
    /// `QCMD.STATUS.status`.
    pub status: Sig,
    /// The command succeeded (only meaningful in the cycle it is judged).
    pub ok: Sig,
    /// The command is CREATE.
    pub create: Sig,
    /// The queue state after the command.
    pub new_state: Sig,
}

impl QcmdPort {
    /// Ports `s_qcmd_tdata/_tvalid/_tready`, `m_qcmd_res_tdata/_tvalid/_tready`.
    pub fn new() -> QcmdPort {
        let data = input("s_qcmd_tdata", QCMD_REQ.width());
        let valid = input("s_qcmd_tvalid", 1);
        let res_valid = reg_init(1, 0u32).named("res_valid");
        let go = (valid & !res_valid).named("qcmd_go");
        let take = wire(1).named("take_qcmd");
        output("s_qcmd_tready", take);
        let cmd = reg(QCMD_REQ.width()).enable(take).named("cmd");
        cmd.set(data);
        QcmdPort {
            // Each queue type reads only some of the input words.
            c: QCMD_REQ.unpack(cmd.unused()),
            go,
            take,
            res_valid,
        }
    }

    /// Take the waiting command now (`when` must imply `go`).
    pub fn take(&self, when: Sig) {
        self.take.set(when);
    }

    /// Judge the command for a queue of type `qtype` with `count` queues, whose context shows
    /// `state`; `params_ok` says whether a CREATE's parameters are acceptable.
    pub fn verdict(&self, qtype: &str, count: u32, state: Sig, params_ok: Sig) -> Verdict {
        let c = &self.c;
        let op = c.get("op");
        let create = op.eq(kv("qcmd_op", "CREATE")).named("cmd_create");
        let known = op.ge(kv("qcmd_op", "CREATE")) & op.le(kv("qcmd_op", "QUERY"));
        let is_rst = state.eq(kv("qstate", "RST"));
        let bad_state = select(
            &[
                (create, !is_rst),
                (
                    op.eq(kv("qcmd_op", "DESTROY")) | op.eq(kv("qcmd_op", "RESET")),
                    is_rst,
                ),
            ],
            lit(1, 0u32),
        );
        let status = |n: &str| lit(8, kv("qcmd_status", n));
        let st = select(
            &[
                (
                    !known | c.get("qtype").ne(kv("qtype", qtype)),
                    status("BAD_PARAM"),
                ),
                (!c.get("index").lt(count as u64), status("BAD_INDEX")),
                (bad_state, status("BAD_RES_STATE")),
                (create & !params_ok, status("BAD_PARAM")),
            ],
            status("OK"),
        )
        .named("cmd_status");
        let rdy = lit(2, kv("qstate", "RDY"));
        Verdict {
            ok: st.eq(kv("qcmd_status", "OK")).named("cmd_ok"),
            new_state: case(
                op,
                &[
                    (kv("qcmd_op", "CREATE"), rdy),
                    (kv("qcmd_op", "DESTROY"), lit(2, kv("qstate", "RST"))),
                    (kv("qcmd_op", "RESET"), rdy),
                ],
                state,
            ),
            status: st,
            create,
        }
    }

    /// Answer with `status` and `out` (QCMD.OUT words 0..4) in the cycle `when`; the answer
    /// is held until taken.
    pub fn answer(&self, when: Sig, status: Sig, out: [Sig; 4]) {
        let res = reg(QCMD_RES.width()).enable(when).named("res");
        res.set(QCMD_RES.pack(&[
            ("status", status),
            ("out0", out[0]),
            ("out1", out[1]),
            ("out2", out[2]),
            ("out3", out[3]),
        ]));
        let ready = input("m_qcmd_res_tready", 1);
        self.res_valid
            .set(mux(when, 1u32, mux(ready, 0u32, self.res_valid)));
        output("m_qcmd_res_tdata", res);
        output("m_qcmd_res_tvalid", self.res_valid);
    }
}

/// After reset, step an address through every context (`aw` bits) while `init`: returns the
/// address and the last cycle of the sweep.
pub(crate) fn sweep(init: Sig, aw: u32) -> (Sig, Sig) {
    let addr = reg_init(aw, 0u32).named("init_addr");
    addr.set_if(init, addr + 1u32);
    let done = (init & addr.eq((1u64 << aw) - 1)).named("init_done");
    (addr, done)
}
