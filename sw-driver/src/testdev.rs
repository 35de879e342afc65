//! A behavioural stand-in for the NIC behind the three traits, for the driver's unit tests.
//!
//! It implements the register map's protocols as `docs/REGISTERS.md` states them (queue
//! commands with a busy phase, MR table, doorbells, owner bits written last, one completion
//! event per arm, loopback that takes effect a few ticks later) and executes send WQEs by
//! decoding them with [`crate::desc`]. It is not the NIC's model (that is the RTL behind
//! `testbench/host`): frames are not checksummed or hashed, RX reports fixed offload results.
//! Of the tunnel stage it models recognition of VXLAN over IPv4 (the kind and VNI in the CQE)
//! and, with `TUNNEL_CTL.inner_vxlan`, the CQE's `tunneled`; never de-capsulation.
//! Work runs on [`Interrupts::relax`] and [`Interrupts::wait`], as simulated time would.

use std::collections::VecDeque;

use crate::desc::{
    Cqe, CqeError, CqeOpcode, Eqe, EventType, Gather, L2Header, L3Type, L4Type, RecvWqe,
    RssHashType, SendOpcode, SendWqe, Syndrome, DS_BYTES, WQEBB,
};
use crate::device::{ABI, MAGIC};
use crate::hw::{DmaError, DmaMemory, DmaRegion, Interrupts, RegisterSpace};
use crate::regs::desc::{ctrl_seg, dbr, qcmd_in};
use crate::regs::{consts, dev, encap, id, mr, qcmd, rss, stats, tunnel, uar};

/// Bus address of the fake's memory.
pub const MEM_BASE: u64 = 0x1_0000_0000;
const TICK_NS: u64 = 10;
/// Device clock: 250 MHz.
const CLOCK_KHZ: u32 = 250_000;

/// The identification block the fake reports.
#[derive(Clone, Debug)]
pub struct FakeId {
    pub magic: u32,
    pub abi: u32,
    pub queues: u32,
    pub eqs: u32,
    pub mrs: u32,
    pub table_size: u32,
    pub log_max_wq: u32,
    pub caps: u32,
    pub mtu: u32,
    pub steer_entries: u32,
    /// `ID.OVERLAY`.
    pub encap_contexts: u32,
    pub max_mss: u32,
    pub log_max_lso: u32,
}

impl Default for FakeId {
    fn default() -> Self {
        FakeId {
            magic: MAGIC,
            abi: ABI,
            queues: 4,
            eqs: 4,
            mrs: 8,
            table_size: 16,
            log_max_wq: 10,
            caps: 0x7F,
            mtu: 1500,
            steer_entries: 4,
            encap_contexts: 4,
            max_mss: 9000,
            log_max_lso: 18,
        }
    }
}

/// A queue's context (fields used per type as in `qcmd_in`).
#[derive(Clone, Debug, Default)]
pub struct FQueue {
    pub ring: u64,
    pub log: u32,
    pub log_stride: u32,
    pub dbr: u64,
    pub link: u32,
    pub mod_count: u32,
    /// EQ/CQ: entries written; SQ: WQEBBs executed; RQ: WQEs consumed.
    pub pc: u32,
    pub ci: u32,
    pub state: u32,
    pub armed: bool,
    pub arm_ci: u32,
    pub synd: u8,
    pub err_wqe: u16,
    /// Striding RQ: log2 strides per WQE and log2 bytes per stride.
    pub striding: Option<(u32, u32)>,
    /// Striding RQ: strides of WQE `pc` used.
    pub stride: u32,
    /// SQ: the encapsulation context it was created with.
    pub encap: Option<u8>,
}

pub struct FakeNic {
    pub id: FakeId,
    pub mem: Vec<u8>,
    next: usize,
    pub allocated: Vec<DmaRegion>,
    pub now: u64,
    ctrl: u32,
    pub loopback_active: bool,
    loopback_ticks: u32,
    scratch: u32,
    timer_hi: u32,
    pub counters: [u64; 19],
    mr_sel: u32,
    mr_base: [u32; 2],
    mr_len: [u32; 2],
    pub mrs: Vec<Option<(u64, u64)>>,
    qin: [u32; 8],
    busy_ticks: u32,
    status: u32,
    out: [u32; 4],
    /// QCMD.STATUS.busy never clears.
    pub stuck: bool,
    pub rss_key: [u32; 10],
    /// Writes to the tunnel block, in order: (offset, value).
    pub tunnel_writes: Vec<(u32, u32)>,
    /// Writes to the encap block, in order: (offset, value).
    pub encap_writes: Vec<(u32, u32)>,
    pub rss_enables: u32,
    pub rss_table: Vec<u32>,
    /// Queues by type code (EQ, CQ, SQ, RQ).
    pub queues: [Vec<Option<FQueue>>; 4],
    pub irq_pending: u64,
    /// Frames sent with the loopback off.
    pub wire: Vec<Vec<u8>>,
    /// Every send WQE executed, decoded.
    pub sent: Vec<SendWqe>,
    /// Every send WQE fetched from a ring, as its bytes (whole WQEBBs).
    pub wqe_bytes: Vec<Vec<u8>>,
    pub pending_sq: VecDeque<u32>,
    /// Per send doorbell, the BlueFlame window's bytes written since the previous one (dwords
    /// 0, 1, 2, ... up to the first not written; the fake NIC fetches WQEs from the ring).
    pub blueflame: Vec<Vec<u8>>,
    bf_window: [u8; 256],
    bf_written: u64,
    sq_db_lo: u32,
    cq_db_lo: u32,
    /// Commands executed, as (op, qtype, index).
    pub commands: Vec<(u32, u32, u32)>,
}

fn be(v: u32) -> u32 {
    u32::from_be_bytes(v.to_le_bytes())
}

impl FakeNic {
    pub fn new(id: FakeId) -> Self {
        let n = |c: u32| vec![None; c as usize];
        FakeNic {
            queues: [n(id.eqs), n(id.queues), n(id.queues), n(id.queues)],
            mrs: vec![None; id.mrs as usize],
            rss_table: vec![0; id.table_size as usize],
            id,
            mem: vec![0; 4 << 20],
            next: 0,
            allocated: Vec::new(),
            now: 0,
            ctrl: 0,
            loopback_active: false,
            loopback_ticks: 0,
            scratch: 0,
            timer_hi: 0,
            counters: [0; 19],
            mr_sel: 0,
            mr_base: [0; 2],
            mr_len: [0; 2],
            qin: [0; 8],
            busy_ticks: 0,
            status: 0,
            out: [0; 4],
            stuck: false,
            rss_key: [0; 10],
            tunnel_writes: Vec::new(),
            encap_writes: Vec::new(),
            rss_enables: 0,
            irq_pending: 0,
            wire: Vec::new(),
            sent: Vec::new(),
            wqe_bytes: Vec::new(),
            pending_sq: VecDeque::new(),
            blueflame: Vec::new(),
            bf_window: [0; 256],
            bf_written: 0,
            sq_db_lo: 0,
            cq_db_lo: 0,
            commands: Vec::new(),
        }
    }

    fn count(&mut self, reg: u32) {
        self.counters[((reg - stats::BLOCK_BASE) / 8) as usize] += 1;
    }

    pub fn counter(&self, reg: u32) -> u64 {
        self.counters[((reg - stats::BLOCK_BASE) / 8) as usize]
    }

    fn mem_range(&self, addr: u64, len: usize) -> std::ops::Range<usize> {
        let a = addr
            .checked_sub(MEM_BASE)
            .unwrap_or_else(|| panic!("DMA below memory: {addr:#x}")) as usize;
        assert!(
            a + len <= self.mem.len(),
            "DMA beyond memory: {addr:#x}+{len}"
        );
        a..a + len
    }

    pub fn peek(&self, addr: u64, len: usize) -> Vec<u8> {
        self.mem[self.mem_range(addr, len)].to_vec()
    }

    fn poke(&mut self, addr: u64, data: &[u8]) {
        let r = self.mem_range(addr, data.len());
        self.mem[r].copy_from_slice(data);
    }

    fn q(&mut self, qtype: u32, index: u32) -> Option<&mut FQueue> {
        self.queues[qtype as usize]
            .get_mut(index as usize)
            .and_then(|q| q.as_mut())
    }

    /// Whether `[addr, addr+len)` lies in MR `lkey`.
    fn mr_ok(&self, lkey: u32, addr: u64, len: u64) -> bool {
        matches!(self.mrs.get(lkey as usize), Some(Some((base, l)))
            if addr >= *base && addr + len <= base + l)
    }

    // ---- commands ----

    fn exec(&mut self, v: u32) {
        let (op, qt, idx) = (
            qcmd::EXEC_OP.get(v),
            qcmd::EXEC_QTYPE.get(v),
            qcmd::EXEC_INDEX.get(v),
        );
        self.commands.push((op, qt, idx));
        self.busy_ticks = 3;
        let st = self.run_command(op, qt, idx);
        self.status = qcmd::STATUS_STATUS.put(st);
    }

    fn run_command(&mut self, op: u32, qt: u32, idx: u32) -> u32 {
        use consts::{qcmd_op as o, qcmd_status as s, qstate, qtype as t};
        if qt > 3 || idx as usize >= self.queues[qt as usize].len() {
            return s::BAD_INDEX;
        }
        let exists = self.queues[qt as usize][idx as usize].is_some();
        match op {
            o::CREATE => {
                if exists {
                    return s::BAD_RES_STATE;
                }
                let mut b = [0u8; 32];
                for (k, w) in self.qin.iter().enumerate() {
                    b[4 * k..4 * k + 4].copy_from_slice(&w.to_be_bytes());
                }
                let g = |f: crate::regs::DescField| f.get(&b);
                let q = FQueue {
                    ring: g(qcmd_in::RING_LO) | g(qcmd_in::RING_HI) << 32,
                    log: g(qcmd_in::LOG_SIZE) as u32,
                    log_stride: g(qcmd_in::LOG_STRIDE) as u32,
                    dbr: g(qcmd_in::DBR_LO) | g(qcmd_in::DBR_HI) << 32,
                    link: g(qcmd_in::LINK) as u32,
                    mod_count: g(qcmd_in::MOD_COUNT) as u32,
                    state: qstate::RDY,
                    striding: (qt == t::RQ && g(qcmd_in::STRIDING) == 1).then(|| {
                        (
                            g(qcmd_in::LOG_NUM_STRIDES) as u32,
                            g(qcmd_in::LOG_STRIDE_SIZE) as u32,
                        )
                    }),
                    encap: (qt == t::SQ && g(qcmd_in::ENCAP) == 1)
                        .then(|| g(qcmd_in::ENCAP_CTX) as u8),
                    ..FQueue::default()
                };
                let encap_ok = q
                    .encap
                    .is_none_or(|c| u32::from(c) < self.id.encap_contexts);
                let link_ok = match qt {
                    t::EQ => q.link < self.id.eqs,
                    t::CQ => self.queues[0]
                        .get(q.link as usize)
                        .is_some_and(|e| e.is_some()),
                    _ => self.queues[1]
                        .get(q.link as usize)
                        .is_some_and(|c| c.is_some()),
                };
                let stride_ok = qt != t::RQ
                    || match q.striding {
                        None => (4..=9).contains(&q.log_stride),
                        Some((n, sz)) => {
                            (5..=9).contains(&q.log_stride)
                                && (1..=14).contains(&n)
                                && (6..=13).contains(&sz)
                        }
                    };
                if q.log > self.id.log_max_wq || !link_ok || !stride_ok || !encap_ok {
                    return s::BAD_PARAM;
                }
                self.queues[qt as usize][idx as usize] = Some(q);
                s::OK
            }
            o::DESTROY if exists => {
                self.queues[qt as usize][idx as usize] = None;
                s::OK
            }
            o::RESET if exists => {
                if let Some(q) = self.q(qt, idx) {
                    q.state = qstate::RDY;
                }
                s::OK
            }
            o::QUERY if exists => {
                let dbr_pc = match qt {
                    t::SQ => Some(dbr::SQ_PC),
                    t::RQ => Some(dbr::RQ_PC),
                    _ => None,
                };
                let q = self.queues[qt as usize][idx as usize]
                    .clone()
                    .unwrap_or_default();
                let pc = dbr_pc.map_or(q.pc, |f| f.get(&self.peek(q.dbr, 8)) as u32);
                let ci = if dbr_pc.is_some() { q.pc } else { q.ci };
                self.out = [q.state, pc, ci, q.synd as u32 | (q.err_wqe as u32) << 16];
                s::OK
            }
            o::DESTROY | o::RESET | o::QUERY => s::BAD_RES_STATE,
            _ => s::BAD_PARAM,
        }
    }

    // ---- completions and events ----

    /// Write the next entry of EQ (`qt` 0) or CQ (`qt` 1) `n`: the owner bit from the
    /// producer counter, the owner byte written last.
    fn produce(&mut self, qt: u32, n: u32, encode: impl FnOnce(bool) -> [u8; 64]) -> bool {
        let Some(q) = self.q(qt, n) else { return false };
        let slot = q.pc & ((1 << q.log) - 1);
        let owner = (q.pc >> q.log) & 1 == 1;
        q.pc += 1;
        let addr = q.ring + slot as u64 * 64;
        let b = encode(owner);
        self.poke(addr, &b[..63]);
        self.poke(addr + 63, &b[63..]);
        true
    }

    fn post_eqe(&mut self, eqn: u32, e: Eqe) {
        if !self.produce(0, eqn, |owner| Eqe { owner, ..e }.encode()) {
            return;
        }
        if let Some(eq) = self.q(0, eqn) {
            if std::mem::take(&mut eq.armed) {
                self.irq_pending |= 1 << eq.link;
            }
        }
    }

    /// Raise the CQ's completion event if it is armed and has a CQE beyond the arm index.
    fn cq_event(&mut self, cqn: u32) {
        let Some(cq) = self.q(1, cqn) else { return };
        if cq.armed && cq.pc & 0xFF_FFFF != cq.arm_ci {
            cq.armed = false;
            let eqn = cq.link;
            let e = Eqe {
                event_type: EventType::Completion,
                sub_type: 0,
                cqn,
                owner: false,
            };
            self.post_eqe(eqn, e);
        }
    }

    pub fn post_cqe(&mut self, cqn: u32, c: Cqe) {
        if self.produce(1, cqn, |owner| Cqe { owner, ..c }.encode()) {
            self.cq_event(cqn);
        }
    }

    pub fn blank_cqe(opcode: CqeOpcode, qpn: u32, wqe_counter: u16) -> Cqe {
        Cqe {
            opcode,
            qpn,
            wqe_counter,
            format: 0,
            ..Cqe::decode(&[0u8; 64])
        }
    }

    fn error_cqe(opcode: CqeOpcode, qpn: u32, wqe: u16, syndrome: Syndrome) -> Cqe {
        Cqe {
            error: Some(CqeError {
                syndrome,
                vendor_err_synd: 0,
            }),
            ..Self::blank_cqe(opcode, qpn, wqe)
        }
    }

    /// The last value written to tunnel register `reg` (0 before any write).
    fn tunnel_reg(&self, reg: u32) -> u32 {
        let last = self.tunnel_writes.iter().rev().find(|w| w.0 == reg);
        last.map_or(0, |w| w.1)
    }

    /// A received frame's tunnel as the CQE reports it: (tunneled, kind, VNI) for VXLAN over
    /// IPv4 (UDP to the programmed VXLAN port, I flag set), `tunneled` with
    /// `TUNNEL_CTL.inner_vxlan`.
    fn rx_tunnel(&self, f: &[u8]) -> (bool, u8, u32) {
        let port = self.tunnel_reg(tunnel::VXLAN_PORT) as u16;
        let ihl = 4 * (f.get(14).copied().unwrap_or(0) & 0xF) as usize;
        let udp = 14 + ihl;
        let vxlan = f.len() >= udp + 16
            && f[12..14] == [0x08, 0x00]
            && f[14] >> 4 == 4
            && f[23] == 17
            && u16::from_be_bytes([f[udp + 2], f[udp + 3]]) == port
            && f[udp + 8] & 0x08 != 0;
        if !vxlan {
            return (false, 0, 0);
        }
        let vni = u32::from_be_bytes([0, f[udp + 12], f[udp + 13], f[udp + 14]]);
        let ctl = self.tunnel_reg(tunnel::CTL);
        (tunnel::CTL_INNER_VXLAN.get(ctl) != 0, 1, vni)
    }

    // ---- send ----

    fn run_sq(&mut self, sqn: u32) {
        use consts::qstate;
        let Some(sq) = self.q(2, sqn).cloned() else {
            return;
        };
        let pc = dbr::SQ_PC.get(&self.peek(sq.dbr, 8)) as u16;
        let mut ci = sq.pc as u16;
        let mask = (1u16 << sq.log) - 1;
        while ci != pc {
            let first = self.peek(sq.ring + (ci & mask) as u64 * 64, 64);
            let ds = ctrl_seg::DS.get(&first) as usize;
            let n = (ds * DS_BYTES).div_ceil(WQEBB).max(1);
            let mut bytes = Vec::new();
            for k in 0..n as u16 {
                bytes.extend(self.peek(sq.ring + (ci.wrapping_add(k) & mask) as u64 * 64, 64));
            }
            self.count(stats::TX_WQES);
            self.wqe_bytes.push(bytes.clone());
            let in_error = self.q(2, sqn).is_some_and(|q| q.state == qstate::ERR);
            let result = if in_error {
                Err(Syndrome::WrFlush)
            } else {
                SendWqe::decode(&bytes)
                    .map_err(|_| Syndrome::LocalQpOp)
                    .and_then(|w| self.execute(sqn, w))
            };
            match result {
                Ok(Some(c)) => self.post_cqe(sq.link, c),
                Ok(None) => {}
                Err(s) => {
                    if let Some(q) = self.q(2, sqn) {
                        if q.state != qstate::ERR {
                            q.state = qstate::ERR;
                            q.synd = s.code();
                            q.err_wqe = ci;
                        }
                    }
                    let c = Self::error_cqe(CqeOpcode::ReqErr, sqn, ci, s);
                    self.post_cqe(sq.link, c);
                }
            }
            ci = ci.wrapping_add(n as u16);
            if let Some(q) = self.q(2, sqn) {
                q.pc = ci as u32;
            }
        }
    }

    fn execute(&mut self, sqn: u32, w: SendWqe) -> Result<Option<Cqe>, Syndrome> {
        self.sent.push(w.clone());
        if w.opcode == SendOpcode::EnhancedMpsw {
            return self.execute_mpwqe(sqn, w);
        }
        if w.opcode == SendOpcode::Lso && !Self::lso_ok(&w) {
            return Err(Syndrome::LocalQpOp);
        }
        let mut frame = Vec::new();
        if let Some(L2Header::Inline(h)) = w.eth.as_ref().map(|e| &e.header) {
            frame.extend_from_slice(h);
        }
        for g in &w.gather {
            match g {
                Gather::Inline(d) => frame.extend_from_slice(d),
                Gather::Ptr(d) => {
                    if !self.mr_ok(d.lkey, d.addr, d.byte_count as u64) {
                        return Err(Syndrome::LocalProt);
                    }
                    frame.extend(self.peek(d.addr, d.byte_count as usize));
                }
            }
        }
        if let Some(L2Header::VlanInsert(tci)) = w.eth.as_ref().map(|e| &e.header) {
            let tag = [0x81, 0x00, (tci >> 8) as u8, *tci as u8];
            frame.splice(12..12, tag);
        }
        if matches!(w.opcode, SendOpcode::Send | SendOpcode::Lso) {
            if frame.is_empty() || frame.len() > consts::misc::MAX_FRAME as usize {
                return Err(Syndrome::LocalLength);
            }
            self.count(stats::TX_FRAMES);
            let len = frame.len() as u32;
            if self.loopback_active {
                self.receive(sqn, frame);
            } else {
                self.wire.push(frame);
            }
            return Ok(w.cq_update.then(|| Cqe {
                byte_cnt: len,
                s_wqe_opcode: w.opcode.code(),
                timestamp: self.now / 4,
                ..Self::blank_cqe(CqeOpcode::Req, sqn, w.wqe_index)
            }));
        }
        Ok(w.cq_update
            .then(|| Self::blank_cqe(CqeOpcode::Req, sqn, w.wqe_index)))
    }

    /// An LSO WQE the device takes (as `sq_engine` checks it): `mss` 1..=16383, an inline
    /// header of at least 14 bytes, every software-parser offset below 128 units. The fake
    /// sends the super-frame whole (it does not segment).
    fn lso_ok(w: &SendWqe) -> bool {
        let Some(eth) = &w.eth else { return false };
        let Some(l) = eth.lso else { return false };
        let swp = [
            l.swp.outer_l4,
            l.swp.outer_l3,
            l.swp.inner_l4,
            l.swp.inner_l3,
        ];
        matches!(&eth.header, L2Header::Inline(h) if h.len() >= 14)
            && (1..1 << 14).contains(&l.mss)
            && swp.iter().all(|&o| o < 128)
    }

    /// An enhanced multi-packet send: every gather entry a frame, all checked first.
    fn execute_mpwqe(&mut self, sqn: u32, w: SendWqe) -> Result<Option<Cqe>, Syndrome> {
        if w.eth.as_ref().is_none_or(|e| e.header != L2Header::None) {
            return Err(Syndrome::LocalQpOp);
        }
        let mut frames = Vec::new();
        for g in &w.gather {
            let frame = match g {
                Gather::Inline(d) => d.clone(),
                Gather::Ptr(d) => {
                    if d.byte_count == 0 {
                        return Err(Syndrome::LocalLength);
                    }
                    if !self.mr_ok(d.lkey, d.addr, d.byte_count as u64) {
                        return Err(Syndrome::LocalProt);
                    }
                    self.peek(d.addr, d.byte_count as usize)
                }
            };
            if frame.is_empty() || frame.len() > consts::misc::MAX_FRAME as usize {
                return Err(Syndrome::LocalLength);
            }
            frames.push(frame);
        }
        if frames.is_empty() {
            return Err(Syndrome::LocalLength);
        }
        let len = frames.iter().map(Vec::len).sum::<usize>() as u32;
        for frame in frames {
            self.count(stats::TX_FRAMES);
            if self.loopback_active {
                self.receive(sqn, frame);
            } else {
                self.wire.push(frame);
            }
        }
        Ok(w.cq_update.then(|| Cqe {
            byte_cnt: len,
            s_wqe_opcode: SendOpcode::EnhancedMpsw.code(),
            timestamp: self.now / 4,
            ..Self::blank_cqe(CqeOpcode::Req, sqn, w.wqe_index)
        }))
    }

    // ---- receive ----

    /// A frame arriving on receive queue `rqn` (loopback, or injected by a test).
    pub fn receive(&mut self, rqn: u32, mut frame: Vec<u8>) {
        use consts::qstate;
        self.count(stats::RX_FRAMES);
        let Some(rq) = self.q(3, rqn).cloned() else {
            self.count(stats::RX_NO_WQE);
            return;
        };
        let posted = dbr::RQ_PC.get(&self.peek(rq.dbr, 8)) as u16;
        let ci = rq.pc as u16;
        if ci == posted || rq.state != qstate::RDY {
            self.count(stats::RX_NO_WQE);
            return;
        }
        if let Some(geometry) = rq.striding {
            return self.receive_striding(rqn, &rq, geometry, frame);
        }
        self.count(stats::RX_DELIVERED);
        let stride = 1usize << rq.log_stride;
        let slot = (ci & ((1 << rq.log) - 1)) as u64;
        let wqe = RecvWqe::decode(&self.peek(rq.ring + slot * stride as u64, stride));
        let mut vlan = None;
        if frame.len() >= 16 && frame[12..14] == [0x81, 0x00] {
            vlan = Some(u16::from_be_bytes([frame[14], frame[15]]));
            frame.drain(12..16);
            self.count(stats::RX_VLAN_STRIPPED);
        }
        let (tunneled, tunnel_kind, tunnel_id) = self.rx_tunnel(&frame);
        let mut result = Err(Syndrome::LocalLength);
        if let Ok(wqe) = wqe {
            let mut rest = &frame[..];
            for d in &wqe.scatter {
                let n = rest.len().min(d.byte_count as usize);
                if !self.mr_ok(d.lkey, d.addr, n as u64) {
                    result = Err(Syndrome::LocalProt);
                    break;
                }
                self.poke(d.addr, &rest[..n]);
                rest = &rest[n..];
                if rest.is_empty() {
                    result = Ok(());
                    break;
                }
            }
        }
        if let Some(q) = self.q(3, rqn) {
            q.pc = ci.wrapping_add(1) as u32;
        }
        self.count(stats::RX_CQES);
        let c = match result {
            Ok(()) => Cqe {
                byte_cnt: frame.len() as u32,
                l2_ok: true,
                l3_ok: true,
                l4_ok: true,
                l3_type: L3Type::Ipv4,
                l4_type: L4Type::Udp,
                check_sum: 0xBEEF,
                cv: vlan.is_some(),
                vlan_info: vlan.unwrap_or(0),
                rss_hash: 0x1234_0000 + rqn,
                rss_hash_type: RssHashType::new(1, 2),
                timestamp: self.now / 4,
                tunneled,
                tunnel_kind,
                tunnel_id,
                ..Self::blank_cqe(CqeOpcode::RespSend, rqn, ci)
            },
            Err(s) => {
                if let Some(q) = self.q(3, rqn) {
                    q.state = qstate::ERR;
                    q.synd = s.code();
                    q.err_wqe = ci;
                }
                Self::error_cqe(CqeOpcode::RespErr, rqn, ci, s)
            }
        };
        self.post_cqe(rq.link, c);
    }

    /// A frame for a striding RQ: the next strides of WQE `pc`, or a filler CQE and the next
    /// WQE when they do not suffice. No VLAN stripping or checksum verdicts: what is checked
    /// is the driver's stride accounting.
    fn receive_striding(&mut self, rqn: u32, rq: &FQueue, (n, sz): (u32, u32), frame: Vec<u8>) {
        let posted = dbr::RQ_PC.get(&self.peek(rq.dbr, 8)) as u16;
        let need = (frame.len() as u32).div_ceil(1 << sz);
        let (mut ci, mut stride) = (rq.pc as u16, rq.stride);
        if need > (1 << n) - stride {
            self.count(stats::RX_CQES);
            let byte_cnt = 1 << 31 | ((1 << n) - stride) << 16;
            let filler = Cqe {
                byte_cnt,
                wqe_id: ci,
                ..Self::blank_cqe(CqeOpcode::RespSend, rqn, stride as u16)
            };
            self.post_cqe(rq.link, filler);
            (ci, stride) = (ci.wrapping_add(1), 0);
        }
        let q = self.q(3, rqn).expect("the RQ exists");
        (q.pc, q.stride) = (ci as u32, stride);
        if ci == posted {
            self.count(stats::RX_NO_WQE);
            return;
        }
        self.count(stats::RX_DELIVERED);
        let slot = (ci & ((1 << rq.log) - 1)) as u64;
        let wqe = self.peek(rq.ring + (slot << rq.log_stride), 32);
        let d = RecvWqe::decode(&wqe[16..32]).expect("a data segment");
        let seg = d.scatter[0];
        let addr = seg.addr + ((stride as u64) << sz);
        assert!(
            self.mr_ok(seg.lkey, addr, frame.len() as u64),
            "striding WQE buffer"
        );
        self.poke(addr, &frame);
        let c = Cqe {
            byte_cnt: need << 16 | frame.len() as u32,
            wqe_id: ci,
            l2_ok: true,
            ..Self::blank_cqe(CqeOpcode::RespSend, rqn, stride as u16)
        };
        stride += need;
        if stride == 1 << n {
            (ci, stride) = (ci.wrapping_add(1), 0);
        }
        let q = self.q(3, rqn).expect("the RQ exists");
        (q.pc, q.stride) = (ci as u32, stride);
        self.count(stats::RX_CQES);
        self.post_cqe(rq.link, c);
    }

    fn tick(&mut self) {
        self.busy_ticks = self.busy_ticks.saturating_sub(1);
        if self.loopback_ticks > 0 {
            self.loopback_ticks -= 1;
            if self.loopback_ticks == 0 {
                self.loopback_active = dev::CTRL_LOOPBACK.get(self.ctrl) != 0;
            }
        }
        while let Some(sqn) = self.pending_sq.pop_front() {
            self.run_sq(sqn);
        }
    }
}

impl RegisterSpace for FakeNic {
    fn read32(&mut self, offset: u32) -> u32 {
        let bytes = |b: &[u8], k: u32| {
            let k = k as usize * 4;
            u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]])
        };
        match offset {
            id::MAGIC => self.id.magic,
            id::VERSION => id::VERSION_ABI.put(self.id.abi) | 0x00_01_02_03,
            id::DATA_BITS => 512,
            id::CLOCK_KHZ => CLOCK_KHZ,
            id::MTU => self.id.mtu,
            id::QUEUES => {
                id::QUEUES_QUEUES.put(self.id.queues)
                    | id::QUEUES_EQS.put(self.id.eqs)
                    | id::QUEUES_MRS.put(self.id.mrs)
            }
            id::LIMITS => {
                id::LIMITS_TABLE_SIZE.put(self.id.table_size)
                    | id::LIMITS_LOG_MAX_WQ.put(self.id.log_max_wq)
                    | id::LIMITS_STEER_ENTRIES.put(self.id.steer_entries)
            }
            id::CAPS => self.id.caps,
            id::OVERLAY => {
                id::OVERLAY_ENCAP_CONTEXTS.put(self.id.encap_contexts)
                    | id::OVERLAY_MAX_MSS.put(self.id.max_mss)
                    | id::OVERLAY_LOG_MAX_LSO.put(self.id.log_max_lso)
            }
            o if (id::PRESET_NAME..id::PRESET_NAME + 16).contains(&o) => {
                bytes(b"nic512\0\0\0\0\0\0\0\0\0\0", (o - id::PRESET_NAME) / 4)
            }
            o if (id::CONFIG_HASH..id::CONFIG_HASH + 8).contains(&o) => {
                bytes(&[1, 2, 3, 4, 5, 6, 7, 8], (o - id::CONFIG_HASH) / 4)
            }
            o if (id::GIT_HASH..id::GIT_HASH + 20).contains(&o) => {
                let h: Vec<u8> = (0xA0..0xB4).collect();
                bytes(&h, (o - id::GIT_HASH) / 4)
            }
            id::GIT_FLAGS => 1,
            dev::CTRL => self.ctrl,
            dev::STATUS => dev::STATUS_LOOPBACK_ACTIVE.put(self.loopback_active.into()),
            dev::HEALTH => (self.now / 4 / 1024) as u32,
            dev::SCRATCH => self.scratch,
            dev::TIMER => {
                let c = self.now / 4;
                self.timer_hi = (c >> 32) as u32;
                c as u32
            }
            o if o == dev::TIMER + 4 => self.timer_hi,
            o if (stats::BLOCK_BASE..stats::BLOCK_BASE + 17 * 8).contains(&o) => {
                let v = self.counters[((o - stats::BLOCK_BASE) / 8) as usize];
                if o % 8 == 0 {
                    v as u32
                } else {
                    (v >> 32) as u32
                }
            }
            mr::SEL => self.mr_sel,
            qcmd::STATUS => {
                qcmd::STATUS_BUSY.put((self.stuck || self.busy_ticks > 0).into()) | self.status
            }
            o if (qcmd::OUT..qcmd::OUT + 16).contains(&o) => {
                self.out[((o - qcmd::OUT) / 4) as usize]
            }
            o if (qcmd::IN..qcmd::IN + 32).contains(&o) => self.qin[((o - qcmd::IN) / 4) as usize],
            _ => 0,
        }
    }

    fn write32(&mut self, offset: u32, value: u32) {
        match offset {
            dev::CTRL => {
                self.ctrl = value;
                self.loopback_ticks = 3;
            }
            dev::SCRATCH => self.scratch = value,
            mr::SEL => self.mr_sel = value,
            o if (mr::BASE..mr::BASE + 8).contains(&o) => {
                self.mr_base[((o - mr::BASE) / 4) as usize] = value
            }
            o if (mr::LEN..mr::LEN + 8).contains(&o) => {
                self.mr_len[((o - mr::LEN) / 4) as usize] = value
            }
            mr::COMMIT => {
                let base = self.mr_base[0] as u64 | (self.mr_base[1] as u64) << 32;
                let len = self.mr_len[0] as u64 | (self.mr_len[1] as u64) << 32;
                if let Some(e) = self.mrs.get_mut(self.mr_sel as usize) {
                    *e = (mr::COMMIT_VALID.get(value) != 0).then_some((base, len));
                }
            }
            o if (qcmd::IN..qcmd::IN + 32).contains(&o) => {
                self.qin[((o - qcmd::IN) / 4) as usize] = value
            }
            qcmd::EXEC => self.exec(value),
            o if (rss::KEY..rss::KEY + 40).contains(&o) => {
                self.rss_key[((o - rss::KEY) / 4) as usize] = value
            }
            rss::ENABLES => self.rss_enables = value,
            o if (tunnel::BLOCK_BASE..tunnel::BLOCK_BASE + tunnel::BLOCK_SPAN).contains(&o) => {
                self.tunnel_writes.push((o, value))
            }
            o if (encap::BLOCK_BASE..encap::BLOCK_BASE + encap::BLOCK_SPAN).contains(&o) => {
                self.encap_writes.push((o, value))
            }
            o if (rss::TABLE..rss::TABLE + 4 * self.id.table_size).contains(&o) => {
                self.rss_table[((o - rss::TABLE) / 4) as usize] = value
            }
            uar::CQ_DB => self.cq_db_lo = value,
            o if o == uar::CQ_DB + 4 => {
                let word = be(self.cq_db_lo);
                let cqn = be(value);
                if let Some(cq) = self.q(1, cqn) {
                    cq.armed = true;
                    cq.arm_ci = word & 0xFF_FFFF;
                }
                self.cq_event(cqn);
            }
            uar::EQ_DB_ARM | uar::EQ_DB_NOARM => {
                let w = be(value);
                let (eqn, ci) = (w >> 24, w & 0xFF_FFFF);
                let arm = offset == uar::EQ_DB_ARM;
                if let Some(eq) = self.q(0, eqn) {
                    eq.ci = ci;
                    if arm {
                        eq.armed = true;
                        if eq.pc & 0xFF_FFFF != ci {
                            eq.armed = false;
                            self.irq_pending |= 1 << eq.link;
                        }
                    }
                }
            }
            o if (uar::SQ_DB..uar::SQ_DB + 256).contains(&o) => {
                let d = ((o - uar::SQ_DB) / 4) as usize;
                self.bf_window[4 * d..4 * d + 4].copy_from_slice(&value.to_le_bytes());
                self.bf_written |= 1 << d;
                if o == uar::SQ_DB {
                    self.sq_db_lo = value;
                }
                if o != uar::SQ_DB + 4 {
                    return;
                }
                let n = self.bf_written.trailing_ones() as usize;
                self.blueflame.push(self.bf_window[..4 * n].to_vec());
                self.bf_written = 0;
                let mut ctrl = [0u8; 8];
                ctrl[..4].copy_from_slice(&self.sq_db_lo.to_le_bytes());
                ctrl[4..].copy_from_slice(&value.to_le_bytes());
                self.pending_sq.push_back(ctrl_seg::QPN.get(&ctrl) as u32);
            }
            _ => {}
        }
    }
}

impl DmaMemory for FakeNic {
    fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, DmaError> {
        if !align.is_power_of_two() {
            return Err(DmaError::BadAlignment { align });
        }
        let start = self.next.next_multiple_of(align);
        if start + len > self.mem.len() {
            return Err(DmaError::OutOfMemory { len });
        }
        self.next = start + len;
        let r = DmaRegion {
            addr: MEM_BASE + start as u64,
            len,
        };
        self.mem[start..start + len].fill(0);
        self.allocated.push(r);
        Ok(r)
    }

    fn free(&mut self, region: DmaRegion) {
        let i = self.allocated.iter().position(|r| *r == region);
        self.allocated
            .remove(i.unwrap_or_else(|| panic!("double free of {region:?}")));
    }

    fn read(&mut self, addr: u64, buf: &mut [u8]) {
        let r = self.mem_range(addr, buf.len());
        buf.copy_from_slice(&self.mem[r]);
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        self.poke(addr, data);
    }
}

impl Interrupts for FakeNic {
    fn vectors(&self) -> usize {
        self.id.eqs as usize
    }

    fn wait(&mut self, mask: u64, timeout_ns: u64) -> u64 {
        let start = self.now;
        loop {
            self.tick();
            let fired = self.irq_pending & mask;
            if fired != 0 {
                self.irq_pending &= !fired;
                return fired;
            }
            if self.now - start >= timeout_ns {
                return 0;
            }
            self.now += 100;
        }
    }

    fn relax(&mut self) {
        self.now += TICK_NS;
        self.tick();
    }

    fn now_ns(&mut self) -> u64 {
        self.now
    }
}
