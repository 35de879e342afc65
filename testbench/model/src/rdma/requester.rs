//! The requester half of an RC QP: send work requests in, request packets out; responses in,
//! completions out.
//!
//! * **PSNs** are assigned when a work request is posted: a SEND or WRITE takes one per packet,
//!   a READ one per expected response packet, an atomic one.
//! * **Segmentation**: a message of `len` bytes goes as `max(1, ceil(len / MTU))` packets,
//!   First/Middle/Last or Only; RETH rides on the first (WRITE) packet, ImmDt on the last.
//! * **AckReq policy**: set on the last packet of every message and on any packet sent when
//!   [`ACK_REQ_EVERY`] packets have gone without one, so a long message is acknowledged as it
//!   goes and the window keeps moving.
//! * **Window**: at most [`Requester::max_unacked`] PSNs in flight (a READ request may overshoot
//!   by its own length).
//! * **Acknowledgement**: an ACK for PSN n completes every SEND/WRITE whose last PSN is ≤ n; a
//!   NAK for n acknowledges everything before n. READs complete when their last response
//!   arrives, atomics on their ATOMIC ACK; completions are produced only for the oldest
//!   outstanding request, so they come in posting order.
//! * **Go-back-N** (sequence NAK, a response beyond the next expected one, an ACK that skips
//!   an unfinished READ/atomic, or the retransmit timer): transmission restarts at the first
//!   unacknowledged PSN. Packets are rebuilt from host memory, never buffered; a partly
//!   answered READ is asked again for its remainder. One go-back-N per unacknowledged PSN is
//!   triggered by packets; the timer may always trigger another. Each costs one of
//!   `retry_cnt`; forward progress refills it.
//! * **RNR NAK**: wait the coded time, then resend from the NAKed PSN; costs one `rnr_retry`
//!   (7 = forever). While it waits, the retransmit timer is off and further NAKs for the
//!   packets sent before are ignored.
//! * **Rate**: with [`Requester::rate`] set (by the DCQCN reaction point), frames go while a
//!   credit of rate × elapsed ticks, capped at [`BURST_BYTES`], is positive.
//! * **Fatal NAKs** (0x61-0x63) complete the request in error, flush the later ones and leave
//!   the QP failed ([`Requester::failed`]).

use super::context::{Access, Host, QpAttr, QpError};
use super::headers::{AtomicEth, NakCode, Packet, Reth, Syndrome};
use super::{chunk_len, packets_for, psn_add, psn_diff, Position, Wc, WcOpcode, WcStatus};
use crate::roce::{opcode, Bth, RoceHeaders};
use std::collections::VecDeque;

/// The requester asks for an ACK at least once per this many packets.
pub const ACK_REQ_EVERY: u32 = 64;

/// The most bytes the rate limiter lets go back to back after an idle time.
pub const BURST_BYTES: usize = 8192;

/// The operation of a send work request; remote addresses and keys are the peer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOp {
    /// SEND.
    Send,
    /// SEND with immediate.
    SendImm(u32),
    /// RDMA WRITE.
    Write {
        /// Remote VA.
        remote_va: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate (consumes a receive at the peer).
    WriteImm {
        /// Remote VA.
        remote_va: u64,
        /// Remote key.
        rkey: u32,
        /// The immediate.
        imm: u32,
    },
    /// RDMA READ into the local buffer.
    Read {
        /// Remote VA.
        remote_va: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap of the remote 64-bit word; the original lands in the local
    /// buffer (8 bytes).
    CmpSwap {
        /// Remote VA (8-byte aligned).
        remote_va: u64,
        /// Remote key.
        rkey: u32,
        /// Compared with the remote word.
        compare: u64,
        /// Written when equal.
        swap: u64,
    },
    /// Atomic fetch and add on the remote 64-bit word; the original lands in the local buffer.
    FetchAdd {
        /// Remote VA (8-byte aligned).
        remote_va: u64,
        /// Remote key.
        rkey: u32,
        /// Added (wrapping).
        add: u64,
    },
}

impl WrOp {
    fn wc_opcode(self) -> WcOpcode {
        match self {
            WrOp::Send | WrOp::SendImm(_) => WcOpcode::Send,
            WrOp::Write { .. } | WrOp::WriteImm { .. } => WcOpcode::RdmaWrite,
            WrOp::Read { .. } => WcOpcode::RdmaRead,
            WrOp::CmpSwap { .. } => WcOpcode::CmpSwap,
            WrOp::FetchAdd { .. } => WcOpcode::FetchAdd,
        }
    }

    /// Whether completion waits for data from the responder (READ, atomics) rather than an
    /// ACK.
    fn needs_response(self) -> bool {
        matches!(
            self,
            WrOp::Read { .. } | WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. }
        )
    }

    fn is_atomic(self) -> bool {
        matches!(self, WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. })
    }
}

/// A send work request with one local buffer (one SGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// The caller's id, returned in the completion.
    pub wr_id: u64,
    /// What to do.
    pub op: WrOp,
    /// Local buffer: source of SEND/WRITE, destination of READ and of an atomic's original.
    pub local_va: u64,
    /// Key of the MR holding the local buffer.
    pub lkey: u32,
    /// Message length in bytes (8 for atomics).
    pub len: u32,
}

/// A posted send work request and the PSNs it owns.
#[derive(Clone, Copy, Debug)]
struct Wqe {
    wr: SendWr,
    first_psn: u32,
    npkts: u32,
}

impl Wqe {
    fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts - 1)
    }

    fn contains(&self, psn: u32) -> bool {
        let d = psn_diff(psn, self.first_psn);
        d >= 0 && (d as u32) < self.npkts
    }
}

/// Event counts of a requester.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequesterStats {
    /// Request packets sent, retransmissions included.
    pub packets: u64,
    /// Go-back-N restarts.
    pub go_back: u64,
    /// Of these, triggered by the retransmit timer.
    pub timeouts: u64,
    /// RNR NAKs obeyed.
    pub rnr_naks: u64,
}

/// Why a go-back-N happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retry {
    Timer,
    Packet,
}

/// The requester of one QP.
#[derive(Clone, Debug)]
pub struct Requester {
    qpn: u32,
    pd: u32,
    attr: Option<QpAttr>,
    headers: Option<RoceHeaders>,
    active: bool,
    failed: bool,
    wqes: VecDeque<Wqe>,
    /// PSN the next posted work request gets.
    post_psn: u32,
    /// First unacknowledged PSN.
    una: u32,
    /// Next PSN to transmit and the index in `wqes` of the request that owns it.
    cursor: u32,
    cursor_idx: usize,
    /// One past the highest PSN ever transmitted.
    sent_hi: u32,
    deadline: Option<u64>,
    retry_left: u8,
    rnr_left: u8,
    rnr_until: Option<u64>,
    retried_at: Option<u32>,
    since_ack_req: u32,
    cq: VecDeque<Wc>,
    /// PSNs allowed in flight.
    pub max_unacked: u32,
    /// Rate limit in Mb/s (the DCQCN reaction point's rate); `None` sends as fast as the
    /// window allows.
    pub rate: Option<u64>,
    /// Byte credit of the rate limiter, in bits so that refills are exact.
    credit_bits: i64,
    /// Tick of the last refill.
    credit_at: u64,
    /// Event counts.
    pub stats: RequesterStats,
}

impl Requester {
    /// An idle requester of QP `qpn` in protection domain `pd`.
    pub fn new(qpn: u32, pd: u32) -> Requester {
        Requester {
            qpn,
            pd,
            attr: None,
            headers: None,
            active: false,
            failed: false,
            wqes: VecDeque::new(),
            post_psn: 0,
            una: 0,
            cursor: 0,
            cursor_idx: 0,
            sent_hi: 0,
            deadline: None,
            retry_left: 0,
            rnr_left: 0,
            rnr_until: None,
            retried_at: None,
            since_ack_req: 0,
            cq: VecDeque::new(),
            max_unacked: 128,
            rate: None,
            credit_bits: 0,
            credit_at: 0,
            stats: RequesterStats::default(),
        }
    }

    /// Starts sending (the QP entered RTS) with `attr` towards the peer, frames built on
    /// `headers`.
    pub fn activate(&mut self, attr: &QpAttr, headers: RoceHeaders) {
        let psn = attr.sq_psn & super::PSN_MASK;
        self.post_psn = psn;
        self.una = psn;
        self.cursor = psn;
        self.sent_hi = psn;
        self.retry_left = attr.retry_cnt & 7;
        self.rnr_left = attr.rnr_retry & 7;
        self.attr = Some(attr.clone());
        self.headers = Some(headers);
        self.active = true;
    }

    /// Whether a fatal NAK or an exhausted retry counter stopped the requester (its QP must go
    /// to ERROR).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Work requests posted and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.wqes.len()
    }

    /// The first unacknowledged PSN.
    pub fn una(&self) -> u32 {
        self.una
    }

    /// Takes the completions produced so far, oldest first.
    pub fn poll_cq(&mut self) -> Vec<Wc> {
        self.cq.drain(..).collect()
    }

    fn attr(&self) -> &QpAttr {
        self.attr.as_ref().expect("requester used before RTS")
    }

    fn mtu(&self) -> usize {
        self.attr().mtu.bytes()
    }

    /// Checks `wr` against the local MRs and queues it, assigning its PSNs.
    pub fn post(&mut self, host: &Host, wr: SendWr) -> Result<(), QpError> {
        if !self.active || self.failed {
            return Err(QpError::WrongState(super::QpState::Error));
        }
        let need = match wr.op {
            WrOp::Read { .. } | WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. } => Access::LOCAL_WRITE,
            _ => Access::default(),
        };
        if wr.op.is_atomic() {
            let remote = match wr.op {
                WrOp::CmpSwap { remote_va, .. } | WrOp::FetchAdd { remote_va, .. } => remote_va,
                _ => 0,
            };
            if wr.len != 8 || !wr.local_va.is_multiple_of(8) || !remote.is_multiple_of(8) {
                return Err(QpError::Misaligned);
            }
        }
        host.check_local(wr.lkey, self.pd, wr.local_va, u64::from(wr.len), need)
            .map_err(QpError::LocalAccess)?;
        let npkts = match wr.op {
            WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. } => 1,
            _ => packets_for(wr.len, self.mtu()),
        };
        self.wqes.push_back(Wqe {
            wr,
            first_psn: self.post_psn,
            npkts,
        });
        self.post_psn = psn_add(self.post_psn, npkts);
        Ok(())
    }

    fn complete(&mut self, w: &Wqe, status: WcStatus) {
        self.cq.push_back(Wc {
            qpn: self.qpn,
            wr_id: w.wr.wr_id,
            status,
            opcode: w.wr.op.wc_opcode(),
            byte_len: if status == WcStatus::Success {
                w.wr.len
            } else {
                0
            },
            imm: None,
        });
    }

    /// Completes the oldest request with `status`, flushes the rest and stops.
    fn fail(&mut self, status: WcStatus) {
        if let Some(w) = self.wqes.pop_front() {
            self.complete(&w, status);
        }
        self.flush();
        self.failed = true;
    }

    /// Completes every queued request with [`WcStatus::Flushed`] (the QP went to ERROR).
    pub fn flush(&mut self) {
        while let Some(w) = self.wqes.pop_front() {
            self.complete(&w, WcStatus::Flushed);
        }
        self.failed = true;
        self.deadline = None;
    }

    fn outstanding_psns(&self) -> bool {
        psn_diff(self.sent_hi, self.una) > 0
    }

    /// `una` moved forward: refill the retry counters and restart the timer.
    fn progress(&mut self, now: u64) {
        self.retry_left = self.attr().retry_cnt & 7;
        self.rnr_left = self.attr().rnr_retry & 7;
        self.retried_at = None;
        self.deadline = if self.outstanding_psns() {
            self.attr().ack_timeout_ticks().map(|t| now + t)
        } else {
            None
        };
    }

    /// Moves `una` to `psn` after the oldest requests were popped or partly acknowledged, and
    /// keeps the transmit cursor at or after it.
    fn set_una(&mut self, psn: u32, popped: usize, now: u64) {
        self.una = psn;
        if psn_diff(self.cursor, self.una) < 0 {
            self.cursor = self.una;
            self.cursor_idx = 0;
        } else {
            self.cursor_idx -= popped;
        }
        if psn_diff(self.sent_hi, self.una) < 0 {
            self.sent_hi = self.una;
        }
        self.progress(now);
    }

    /// Acknowledges every PSN ≤ `psn`: completes SEND/WRITE requests, stops at a READ or
    /// atomic that still waits for its response. Returns whether `psn` reaches into or past
    /// such an unfinished request (its responses were lost: an implicit NAK).
    fn ack_upto(&mut self, psn: u32, now: u64) -> bool {
        if psn_diff(psn, self.una) < 0 || psn_diff(psn, self.sent_hi) >= 0 {
            return false;
        }
        let mut popped = 0;
        let mut una = self.una;
        let mut blocked = false;
        while let Some(w) = self.wqes.front().copied() {
            if psn_diff(psn, w.first_psn) < 0 {
                break;
            }
            if w.wr.op.needs_response() {
                blocked = true;
                break;
            }
            if psn_diff(psn, w.last_psn()) >= 0 {
                self.wqes.pop_front();
                self.complete(&w, WcStatus::Success);
                popped += 1;
                una = psn_add(w.last_psn(), 1);
            } else {
                una = psn_add(psn, 1);
                break;
            }
        }
        if una != self.una {
            self.set_una(una, popped, now);
        }
        blocked
    }

    /// Restarts transmission at the first unacknowledged PSN.
    fn go_back(&mut self, now: u64, why: Retry) {
        if why == Retry::Packet && self.retried_at == Some(self.una) {
            return;
        }
        if self.rnr_until.is_some() {
            // Waiting out an RNR NAK: the resend from `una` is already scheduled, and NAKs
            // for packets sent before the RNR NAK are no new failure.
            return;
        }
        if self.wqes.is_empty() {
            return;
        }
        if self.retry_left == 0 {
            self.fail(WcStatus::RetryExceeded);
            return;
        }
        self.retry_left -= 1;
        self.stats.go_back += 1;
        if why == Retry::Timer {
            self.stats.timeouts += 1;
        }
        self.retried_at = Some(self.una);
        self.cursor = self.una;
        self.cursor_idx = 0;
        self.deadline = self.attr().ack_timeout_ticks().map(|t| now + t);
    }

    /// Index in `wqes` of the request that owns `psn`, among those transmitted.
    fn find(&self, psn: u32) -> Option<usize> {
        if psn_diff(psn, self.una) < 0 || psn_diff(psn, self.sent_hi) >= 0 {
            return None;
        }
        self.wqes.iter().position(|w| w.contains(psn))
    }

    /// Handles a response frame (ACK, NAK, READ response, ATOMIC ACK) for this QP and returns
    /// the frames to send now. Frames that are not RC responses or fail to parse are ignored.
    pub fn on_packet(&mut self, host: &mut Host, now: u64, frame: &[u8]) -> Vec<Vec<u8>> {
        if let Ok(p) = Packet::parse(frame) {
            self.on_response(host, now, &p);
        }
        self.poll(host, now)
    }

    /// Handles a parsed response.
    pub fn on_response(&mut self, host: &mut Host, now: u64, p: &Packet) {
        if !self.active || self.failed {
            return;
        }
        let psn = p.bth.psn;
        match p.bth.opcode {
            opcode::RC_ACK => {
                let Some(aeth) = p.aeth else { return };
                match aeth.syndrome {
                    Syndrome::Ack { .. } => {
                        if self.ack_upto(psn, now) {
                            self.go_back(now, Retry::Packet);
                        }
                    }
                    Syndrome::RnrNak { timer } => {
                        self.ack_upto(psn_add(psn, super::PSN_MASK), now);
                        if psn == self.una && !self.wqes.is_empty() {
                            self.rnr(now, timer);
                        }
                    }
                    Syndrome::Nak(code) => {
                        self.ack_upto(psn_add(psn, super::PSN_MASK), now);
                        if psn != self.una || self.wqes.is_empty() {
                            return;
                        }
                        match code {
                            NakCode::PsnSequenceError => self.go_back(now, Retry::Packet),
                            NakCode::InvalidRequest => self.fail(WcStatus::RemoteInvalidRequest),
                            NakCode::RemoteAccessError => self.fail(WcStatus::RemoteAccess),
                            NakCode::RemoteOperationalError | NakCode::Other(_) => {
                                self.fail(WcStatus::RemoteOperational)
                            }
                        }
                    }
                    Syndrome::Reserved(_) => {}
                }
            }
            opcode::RC_READ_RESPONSE_FIRST..=opcode::RC_READ_RESPONSE_ONLY
            | opcode::RC_ATOMIC_ACK => self.on_data_response(host, now, p),
            _ => {}
        }
    }

    fn rnr(&mut self, now: u64, timer: u8) {
        if self.rnr_until.is_some() {
            // A copy of the RNR NAK being waited out.
            return;
        }
        if self.rnr_left == 0 {
            self.fail(WcStatus::RnrRetryExceeded);
            return;
        }
        if self.attr().rnr_retry & 7 != 7 {
            self.rnr_left -= 1;
        }
        self.stats.rnr_naks += 1;
        self.rnr_until = Some(now + super::rnr_timer_us(timer));
        self.cursor = self.una;
        self.cursor_idx = 0;
        self.deadline = None;
    }

    /// A READ response or ATOMIC ACK.
    fn on_data_response(&mut self, host: &mut Host, now: u64, p: &Packet) {
        let psn = p.bth.psn;
        let Some(i) = self.find(psn) else { return };
        let w = self.wqes[i];
        let atomic_ack = p.bth.opcode == opcode::RC_ATOMIC_ACK;
        let fits = match w.wr.op {
            WrOp::Read { .. } => !atomic_ack,
            WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. } => atomic_ack,
            _ => false,
        };
        if !fits {
            return;
        }
        // A response acknowledges every request before its own.
        self.ack_upto(psn_add(w.first_psn, super::PSN_MASK), now);
        if self.wqes.front().map(|h| h.first_psn) != Some(w.first_psn) {
            // An older READ/atomic is still unanswered: its responses were lost.
            self.go_back(now, Retry::Packet);
            return;
        }
        let d = psn_diff(psn, self.una);
        if d > 0 {
            self.go_back(now, Retry::Packet);
            return;
        }
        if d < 0 {
            return;
        }
        let k = psn_diff(psn, w.first_psn) as u32;
        if atomic_ack {
            let Some(ack) = p.atomic_ack else { return };
            host.write_u64(w.wr.local_va, ack.orig);
        } else {
            let mtu = self.mtu();
            if p.payload.len() != chunk_len(w.wr.len, mtu, k) {
                return;
            }
            host.write(w.wr.local_va + (k as usize * mtu) as u64, &p.payload);
        }
        let done = k + 1 == w.npkts;
        if done {
            self.wqes.pop_front();
            self.complete(&w, WcStatus::Success);
        }
        self.set_una(psn_add(psn, 1), usize::from(done), now);
    }

    /// Runs the retransmit timer at time `now`, then sends what the window allows.
    pub fn tick(&mut self, host: &mut Host, now: u64) -> Vec<Vec<u8>> {
        if self.active && !self.failed {
            if let Some(d) = self.deadline {
                if now >= d {
                    if self.outstanding_psns() {
                        self.go_back(now, Retry::Timer);
                    } else {
                        self.deadline = None;
                    }
                }
            }
        }
        self.poll(host, now)
    }

    /// The request packets the window, the RNR wait and the queue allow at `now`.
    pub fn poll(&mut self, host: &Host, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if !self.active || self.failed {
            return out;
        }
        if let Some(t) = self.rnr_until {
            if now < t {
                return out;
            }
            self.rnr_until = None;
            // Re-armed by the resend below.
            self.deadline = None;
        }
        self.refill(now);
        while self.cursor_idx < self.wqes.len()
            && psn_diff(self.cursor, self.una) < self.max_unacked as i32
            && (self.rate.is_none() || self.credit_bits > 0)
        {
            let w = self.wqes[self.cursor_idx];
            let k = psn_diff(self.cursor, w.first_psn) as u32;
            let frame = self.build(host, &w, k).emit();
            if self.rate.is_some() {
                self.credit_bits -= frame.len() as i64 * 8;
            }
            out.push(frame);
            self.stats.packets += 1;
            if matches!(w.wr.op, WrOp::Read { .. }) || k + 1 == w.npkts {
                self.cursor = psn_add(w.last_psn(), 1);
                self.cursor_idx += 1;
            } else {
                self.cursor = psn_add(self.cursor, 1);
            }
            if psn_diff(self.cursor, self.sent_hi) > 0 {
                self.sent_hi = self.cursor;
            }
        }
        if !out.is_empty() && self.deadline.is_none() {
            self.deadline = self.attr().ack_timeout_ticks().map(|t| now + t);
        }
        out
    }

    /// Adds the credit the rate limit earned since the last refill: rate (Mb/s) × ticks (µs)
    /// bits, at most [`BURST_BYTES`]. A frame may go while the credit is positive, so the
    /// credit may end negative by less than one frame; without a limit it stays full.
    fn refill(&mut self, now: u64) {
        let cap = BURST_BYTES as i64 * 8;
        let earned = match self.rate {
            Some(r) => (now.saturating_sub(self.credit_at) as i64).saturating_mul(r as i64),
            None => cap,
        };
        self.credit_bits = self.credit_bits.saturating_add(earned).min(cap);
        self.credit_at = now;
    }

    /// Packet `k` of request `w` (for a READ: the request for the part from response `k` on).
    fn build(&mut self, host: &Host, w: &Wqe, k: u32) -> Packet {
        let mtu = self.mtu();
        let attr = self.attr();
        let psn = psn_add(w.first_psn, k);
        let mut p = Packet::new(
            self.headers.clone().expect("requester used before RTS"),
            Bth::new(0, attr.dest_qpn, psn),
        );
        let off = (k as usize * mtu) as u64;
        let pos = Position::of(k, w.npkts);
        let (first, middle, last, only) = match w.wr.op {
            WrOp::Send | WrOp::SendImm(_) => (
                opcode::RC_SEND_FIRST,
                opcode::RC_SEND_MIDDLE,
                opcode::RC_SEND_LAST,
                opcode::RC_SEND_ONLY,
            ),
            _ => (
                opcode::RC_WRITE_FIRST,
                opcode::RC_WRITE_MIDDLE,
                opcode::RC_WRITE_LAST,
                opcode::RC_WRITE_ONLY,
            ),
        };
        let mut ends = pos.ends();
        match w.wr.op {
            WrOp::Send | WrOp::SendImm(_) | WrOp::Write { .. } | WrOp::WriteImm { .. } => {
                let imm = match w.wr.op {
                    WrOp::SendImm(i) | WrOp::WriteImm { imm: i, .. } => Some(i),
                    _ => None,
                };
                // The *_IMM opcode is the plain one plus one.
                let with_imm = u8::from(imm.is_some());
                p.bth.opcode = match pos {
                    Position::First => first,
                    Position::Middle => middle,
                    Position::Last => last + with_imm,
                    Position::Only => only + with_imm,
                };
                if pos.ends() {
                    p.imm = imm;
                }
                if let (
                    WrOp::Write { remote_va, rkey }
                    | WrOp::WriteImm {
                        remote_va, rkey, ..
                    },
                    true,
                ) = (w.wr.op, pos.starts())
                {
                    p.reth = Some(Reth {
                        va: remote_va,
                        rkey,
                        dma_len: w.wr.len,
                    });
                }
                let n = chunk_len(w.wr.len, mtu, k);
                p.payload = host.read(w.wr.local_va + off, n).to_vec();
            }
            WrOp::Read { remote_va, rkey } => {
                p.bth.opcode = opcode::RC_READ_REQUEST;
                p.reth = Some(Reth {
                    va: remote_va + off,
                    rkey,
                    dma_len: w.wr.len.saturating_sub(off as u32),
                });
                ends = true;
            }
            WrOp::CmpSwap {
                remote_va,
                rkey,
                compare,
                swap,
            } => {
                p.bth.opcode = opcode::RC_COMPARE_SWAP;
                p.atomic = Some(AtomicEth {
                    va: remote_va,
                    rkey,
                    swap_add: swap,
                    compare,
                });
            }
            WrOp::FetchAdd {
                remote_va,
                rkey,
                add,
            } => {
                p.bth.opcode = opcode::RC_FETCH_ADD;
                p.atomic = Some(AtomicEth {
                    va: remote_va,
                    rkey,
                    swap_add: add,
                    compare: 0,
                });
            }
        }
        self.since_ack_req += 1;
        if ends || self.since_ack_req >= ACK_REQ_EVERY {
            p.bth.ack_req = true;
            self.since_ack_req = 0;
        }
        p
    }
}
