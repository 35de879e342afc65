//! What every queue engine shares: the queue-command port (CREATE / DESTROY / RESET / QUERY,
//! one at a time, answered on `m_qcmd_res`) and the sweep that marks every context "not
//! created" after reset. Used inside an engine's `Block::build`.

use super::regs::consts::{qcmd_op, qcmd_status, qstate};
use super::{QcmdReq, QcmdRes};
use nicgen_edsl::prelude::*;

/// The engine's `s_qcmd` / `m_qcmd_res` ports, with the command register.
pub(crate) struct QcmdPort {
    /// The command being served (latched when taken).
    pub c: QcmdReq,
    /// A command is waiting and the previous answer was taken: the engine may take it.
    pub go: Sig,
    take: Sig,
    res_valid: Sig,
    res: RecordStream<QcmdRes<u32>>,
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
    /// Serve `req` (`s_qcmd`) and answer on `res` (`m_qcmd_res`), the engine's ports.
    pub fn new(req: &RecordStream<QcmdReq<u32>>, res: &RecordStream<QcmdRes<u32>>) -> QcmdPort {
        let res_valid = reg_init(1, 0u32).named("res_valid");
        let go = (req.valid & !res_valid).named("qcmd_go");
        let take = wire(1).named("take_qcmd");
        req.ready.set(take);
        let cmd = reg(QcmdReq::WIDTH).enable(take).named("cmd");
        cmd.set(req.data);
        QcmdPort {
            // Each queue type reads only some of the input words.
            c: QcmdReq::unpack(cmd.unused()),
            go,
            take,
            res_valid,
            res: res.clone(),
        }
    }

    /// Take the waiting command now (`when` must imply `go`).
    pub fn take(&self, when: Sig) {
        self.take.set(when);
    }

    /// Judge the command for a queue of type `qtype` (`regs::consts::qtype`) with `count`
    /// queues, whose context shows `state`; `params_ok` says whether a CREATE's parameters are
    /// acceptable.
    pub fn verdict(&self, qtype: u64, count: u32, state: Sig, params_ok: Sig) -> Verdict {
        let c = &self.c;
        let op = c.op;
        let create = op.eq(qcmd_op::CREATE).named("cmd_create");
        let known = op.ge(qcmd_op::CREATE) & op.le(qcmd_op::QUERY);
        let is_rst = state.eq(qstate::RST);
        let bad_state = select(
            &[
                (create, !is_rst),
                (op.eq(qcmd_op::DESTROY) | op.eq(qcmd_op::RESET), is_rst),
            ],
            lit(1, 0u32),
        );
        let status = |v: u64| lit(8, v);
        let st = select(
            &[
                (!known | c.qtype.ne(qtype), status(qcmd_status::BAD_PARAM)),
                (!c.index.lt(count as u64), status(qcmd_status::BAD_INDEX)),
                (bad_state, status(qcmd_status::BAD_RES_STATE)),
                (create & !params_ok, status(qcmd_status::BAD_PARAM)),
            ],
            status(qcmd_status::OK),
        )
        .named("cmd_status");
        let rdy = lit(2, qstate::RDY);
        Verdict {
            ok: st.eq(qcmd_status::OK).named("cmd_ok"),
            new_state: case(
                op,
                &[
                    (qcmd_op::CREATE, rdy),
                    (qcmd_op::DESTROY, lit(2, qstate::RST)),
                    (qcmd_op::RESET, rdy),
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
        let res = reg(QcmdRes::WIDTH).enable(when).named("res");
        res.set(
            QcmdRes {
                status,
                out0: out[0],
                out1: out[1],
                out2: out[2],
                out3: out[3],
            }
            .pack(),
        );
        self.res_valid
            .set(mux(when, 1u32, mux(self.res.ready, 0u32, self.res_valid)));
        self.res.data.set(res);
        self.res.valid.set(self.res_valid);
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
