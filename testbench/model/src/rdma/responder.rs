//! The responder half of an RC QP: request packets in, execution against host memory and
//! ACKs, NAKs, READ responses and ATOMIC ACKs out.
//!
//! * **Expected PSN**: a packet at the expected PSN executes. One behind it (within the 2^23
//!   half-space) is a duplicate: it is not executed again; a duplicate READ replays its
//!   responses from the saved request, a duplicate atomic replays the saved ATOMIC ACK (an
//!   atomic executes exactly once), and a duplicate SEND/WRITE is answered by a re-ACK of the
//!   last executed PSN. A packet ahead of it is a gap: exactly one PSN sequence error NAK
//!   (0x60, carrying the expected PSN) is sent, further out-of-order packets are dropped
//!   until the expected PSN arrives.
//! * **ACK policy**: an ACK follows every executed packet that had AckReq set, and every
//!   duplicate SEND/WRITE gets a re-ACK (that is how a lost ACK is repaired after the
//!   requester's timeout). READs and atomics are answered by their responses. ACKs carry
//!   credit code 0x1F (no end-to-end credits).
//! * **SEND** consumes the oldest posted receive; none posted → RNR NAK with the QP's
//!   `min_rnr_timer`, the packet is not executed. A SEND longer than the receive buffer ends
//!   the receive with a local length error and NAKs 0x63. WRITE with immediate consumes a
//!   receive on its last packet.
//! * **Checks**: WRITE/READ/atomic against the MR table: R_Key, PD, bounds, access rights →
//!   NAK 0x62. Bad opcode sequence, wrong packet length, misaligned atomic → NAK 0x61. Every
//!   such NAK leaves the responder failed (the QP goes to ERROR).
//! * **MSN** counts completed messages: the last packet of a SEND/WRITE, an accepted READ, an
//!   executed atomic.

use super::context::{Access, AccessError, Host, QpAttr, QpError};
use super::headers::{Aeth, AtomicAckEth, NakCode, Packet, Syndrome, CREDIT_UNLIMITED};
use super::{chunk_len, packets_for, psn_add, psn_diff, Position, Wc, WcOpcode, WcStatus};
use crate::roce::{opcode, Bth, RoceHeaders};
use std::collections::VecDeque;

/// READ and atomic requests remembered for replaying duplicates.
pub const RESOURCES: usize = 256;

/// A receive work request with one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    /// The caller's id, returned in the completion.
    pub wr_id: u64,
    /// Buffer address.
    pub va: u64,
    /// Key of the MR holding it.
    pub lkey: u32,
    /// Buffer length.
    pub len: u32,
}

/// A message being received over several packets.
#[derive(Clone, Copy, Debug)]
enum InProgress {
    Send { offset: u64 },
    Write { va: u64, left: u64, total: u32 },
}

/// A READ or atomic request kept for duplicates.
#[derive(Clone, Copy, Debug)]
enum Resource {
    Read {
        first_psn: u32,
        npkts: u32,
        va: u64,
        len: u32,
    },
    Atomic {
        psn: u32,
        orig: u64,
    },
}

/// Event counts of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// Packets executed.
    pub executed: u64,
    /// Duplicates seen.
    pub duplicates: u64,
    /// Sequence error NAKs sent.
    pub seq_naks: u64,
    /// RNR NAKs sent.
    pub rnr_naks: u64,
    /// Atomics executed.
    pub atomics: u64,
}

/// The responder of one QP.
#[derive(Clone, Debug)]
pub struct Responder {
    qpn: u32,
    pd: u32,
    attr: Option<QpAttr>,
    headers: Option<RoceHeaders>,
    active: bool,
    failed: bool,
    epsn: u32,
    msn: u32,
    nak_sent: bool,
    rq: VecDeque<RecvWr>,
    cur: Option<InProgress>,
    resources: VecDeque<Resource>,
    cq: VecDeque<Wc>,
    /// Event counts.
    pub stats: ResponderStats,
}

/// What executing a packet asks for.
enum Outcome {
    /// Executed; ACK if AckReq.
    Done,
    /// Executed; these responses go out instead of an ACK.
    Responses(Vec<Vec<u8>>),
    /// Not executed: RNR NAK.
    Rnr,
    /// Not executed: NAK with this code; the responder fails.
    Nak(NakCode),
}

impl Responder {
    /// An idle responder of QP `qpn` in protection domain `pd`.
    pub fn new(qpn: u32, pd: u32) -> Responder {
        Responder {
            qpn,
            pd,
            attr: None,
            headers: None,
            active: false,
            failed: false,
            epsn: 0,
            msn: 0,
            nak_sent: false,
            rq: VecDeque::new(),
            cur: None,
            resources: VecDeque::new(),
            cq: VecDeque::new(),
            stats: ResponderStats::default(),
        }
    }

    /// Starts receiving (the QP entered RTR) with `attr`, responses built on `headers`.
    pub fn activate(&mut self, attr: &QpAttr, headers: RoceHeaders) {
        self.epsn = attr.rq_psn & super::PSN_MASK;
        self.attr = Some(attr.clone());
        self.headers = Some(headers);
        self.active = true;
    }

    /// Whether a NAK'd error stopped the responder (its QP must go to ERROR).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The expected PSN.
    pub fn epsn(&self) -> u32 {
        self.epsn
    }

    /// The message sequence number.
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Receives posted and not consumed.
    pub fn posted(&self) -> usize {
        self.rq.len()
    }

    /// Takes the receive completions produced so far, oldest first.
    pub fn poll_cq(&mut self) -> Vec<Wc> {
        self.cq.drain(..).collect()
    }

    /// Checks a receive against the local MRs (local write) and queues it.
    pub fn post(&mut self, host: &Host, wr: RecvWr) -> Result<(), QpError> {
        if self.failed {
            return Err(QpError::WrongState(super::QpState::Error));
        }
        host.check_local(
            wr.lkey,
            self.pd,
            wr.va,
            u64::from(wr.len),
            Access::LOCAL_WRITE,
        )
        .map_err(QpError::LocalAccess)?;
        self.rq.push_back(wr);
        Ok(())
    }

    /// Completes every posted receive with [`WcStatus::Flushed`] and stops.
    pub fn flush(&mut self) {
        while let Some(r) = self.rq.pop_front() {
            self.recv_done(r, WcStatus::Flushed, WcOpcode::Recv, 0, None);
        }
        self.failed = true;
    }

    fn recv_done(&mut self, r: RecvWr, status: WcStatus, op: WcOpcode, len: u32, imm: Option<u32>) {
        self.cq.push_back(Wc {
            qpn: self.qpn,
            wr_id: r.wr_id,
            status,
            opcode: op,
            byte_len: len,
            imm,
        });
    }

    fn mtu(&self) -> usize {
        self.attr
            .as_ref()
            .expect("responder used before RTR")
            .mtu
            .bytes()
    }

    fn packet(&self, op: u8, psn: u32) -> Packet {
        let attr = self.attr.as_ref().expect("responder used before RTR");
        Packet::new(
            self.headers.clone().expect("responder used before RTR"),
            Bth::new(op, attr.dest_qpn, psn),
        )
    }

    fn ack_frame(&self, psn: u32, syndrome: Syndrome) -> Vec<u8> {
        let mut p = self.packet(opcode::RC_ACK, psn);
        p.aeth = Some(Aeth {
            syndrome,
            msn: self.msn,
        });
        p.emit()
    }

    /// Handles a request frame for this QP and returns the frames to send. Frames that do not
    /// parse, and everything while the responder is idle or failed, are dropped.
    pub fn on_packet(&mut self, host: &mut Host, frame: &[u8]) -> Vec<Vec<u8>> {
        match Packet::parse(frame) {
            Ok(p) => self.on_request(host, &p),
            Err(_) => Vec::new(),
        }
    }

    /// Handles a parsed request.
    pub fn on_request(&mut self, host: &mut Host, p: &Packet) -> Vec<Vec<u8>> {
        if !self.active || self.failed || p.bth.opcode >> 5 != 0 {
            return Vec::new();
        }
        let psn = p.bth.psn;
        let d = psn_diff(psn, self.epsn);
        if d > 0 {
            if self.nak_sent {
                return Vec::new();
            }
            self.nak_sent = true;
            self.stats.seq_naks += 1;
            return vec![self.ack_frame(self.epsn, Syndrome::Nak(NakCode::PsnSequenceError))];
        }
        if d < 0 {
            self.stats.duplicates += 1;
            return self.duplicate(host, p);
        }
        self.nak_sent = false;
        match self.execute(host, p) {
            Outcome::Done => {
                self.stats.executed += 1;
                self.epsn = psn_add(self.epsn, 1);
                if p.bth.ack_req {
                    vec![self.ack_frame(
                        psn,
                        Syndrome::Ack {
                            credit: CREDIT_UNLIMITED,
                        },
                    )]
                } else {
                    Vec::new()
                }
            }
            Outcome::Responses(r) => {
                self.stats.executed += 1;
                r
            }
            Outcome::Rnr => {
                self.stats.rnr_naks += 1;
                let timer = self.attr.as_ref().map_or(0, |a| a.min_rnr_timer);
                vec![self.ack_frame(psn, Syndrome::RnrNak { timer })]
            }
            Outcome::Nak(code) => {
                let f = self.ack_frame(psn, Syndrome::Nak(code));
                self.failed = true;
                self.cur = None;
                vec![f]
            }
        }
    }

    fn duplicate(&mut self, host: &Host, p: &Packet) -> Vec<Vec<u8>> {
        let psn = p.bth.psn;
        match p.bth.opcode {
            opcode::RC_READ_REQUEST => {
                let Some(reth) = p.reth else {
                    return Vec::new();
                };
                let mtu = self.mtu() as u64;
                let found = self.resources.iter().rev().find_map(|r| match *r {
                    Resource::Read {
                        first_psn,
                        npkts,
                        va,
                        len,
                    } => {
                        let k = psn_diff(psn, first_psn);
                        (k >= 0 && (k as u32) < npkts)
                            .then_some((first_psn, npkts, va, len, k as u64))
                    }
                    Resource::Atomic { .. } => None,
                });
                match found {
                    Some((_, _, va, len, k))
                        if reth.va == va + k * mtu
                            && u64::from(reth.dma_len)
                                == u64::from(len).saturating_sub(k * mtu) =>
                    {
                        self.read_responses(host, psn, reth.va, reth.dma_len)
                    }
                    _ => Vec::new(),
                }
            }
            opcode::RC_COMPARE_SWAP | opcode::RC_FETCH_ADD => {
                let orig = self.resources.iter().rev().find_map(|r| match *r {
                    Resource::Atomic { psn: q, orig } if q == psn => Some(orig),
                    _ => None,
                });
                match orig {
                    Some(orig) => vec![self.atomic_ack(psn, orig)],
                    None => Vec::new(),
                }
            }
            _ => vec![self.ack_frame(
                psn_add(self.epsn, super::PSN_MASK),
                Syndrome::Ack {
                    credit: CREDIT_UNLIMITED,
                },
            )],
        }
    }

    fn atomic_ack(&self, psn: u32, orig: u64) -> Vec<u8> {
        let mut p = self.packet(opcode::RC_ATOMIC_ACK, psn);
        p.aeth = Some(Aeth {
            syndrome: Syndrome::Ack {
                credit: CREDIT_UNLIMITED,
            },
            msn: self.msn,
        });
        p.atomic_ack = Some(AtomicAckEth { orig });
        p.emit()
    }

    /// The responses to a READ of `len` bytes at `va` whose first response has PSN `psn`;
    /// First/Middle/Last or Only counted from this request (a re-issued READ for a remainder
    /// is a new message to the requester).
    fn read_responses(&self, host: &Host, psn: u32, va: u64, len: u32) -> Vec<Vec<u8>> {
        let mtu = self.mtu();
        let n = packets_for(len, mtu);
        (0..n)
            .map(|k| {
                let pos = Position::of(k, n);
                let op = match pos {
                    Position::Only => opcode::RC_READ_RESPONSE_ONLY,
                    Position::First => opcode::RC_READ_RESPONSE_FIRST,
                    Position::Middle => opcode::RC_READ_RESPONSE_MIDDLE,
                    Position::Last => opcode::RC_READ_RESPONSE_LAST,
                };
                let mut p = self.packet(op, psn_add(psn, k));
                if pos != Position::Middle {
                    p.aeth = Some(Aeth {
                        syndrome: Syndrome::Ack {
                            credit: CREDIT_UNLIMITED,
                        },
                        msn: self.msn,
                    });
                }
                let off = (k as usize * mtu) as u64;
                p.payload = host.read(va + off, chunk_len(len, mtu, k)).to_vec();
                p.emit()
            })
            .collect()
    }

    fn remember(&mut self, r: Resource) {
        if self.resources.len() == RESOURCES {
            self.resources.pop_front();
        }
        self.resources.push_back(r);
    }

    fn access_nak(_: AccessError) -> Outcome {
        Outcome::Nak(NakCode::RemoteAccessError)
    }

    /// Executes the packet at the expected PSN.
    fn execute(&mut self, host: &mut Host, p: &Packet) -> Outcome {
        let op = p.bth.opcode;
        let mtu = self.mtu();
        let len = p.payload.len();
        let pos = match op {
            opcode::RC_SEND_FIRST | opcode::RC_WRITE_FIRST => Position::First,
            opcode::RC_SEND_MIDDLE | opcode::RC_WRITE_MIDDLE => Position::Middle,
            opcode::RC_SEND_LAST
            | opcode::RC_SEND_LAST_IMM
            | opcode::RC_WRITE_LAST
            | opcode::RC_WRITE_LAST_IMM => Position::Last,
            _ => Position::Only,
        };
        let is_send = op <= opcode::RC_SEND_ONLY_IMM;
        let is_write = (opcode::RC_WRITE_FIRST..=opcode::RC_WRITE_ONLY_IMM).contains(&op);
        // Opcode sequence: a continuation needs a message of its kind in progress, anything
        // else needs none.
        let seq_ok = match (self.cur, pos) {
            (Some(InProgress::Send { .. }), Position::Middle | Position::Last) => is_send,
            (Some(InProgress::Write { .. }), Position::Middle | Position::Last) => is_write,
            (None, Position::First | Position::Only) => true,
            _ => false,
        };
        if !seq_ok {
            return Outcome::Nak(NakCode::InvalidRequest);
        }
        if is_send || is_write {
            let len_ok = match pos {
                Position::First | Position::Middle => len == mtu,
                Position::Last => (1..=mtu).contains(&len),
                Position::Only => len <= mtu,
            };
            if !len_ok {
                return Outcome::Nak(NakCode::InvalidRequest);
            }
        }
        if is_send {
            let Some(&r) = self.rq.front() else {
                return Outcome::Rnr;
            };
            let offset = match self.cur {
                Some(InProgress::Send { offset }) => offset,
                _ => 0,
            };
            let end = offset + len as u64;
            if end > u64::from(r.len) {
                self.rq.pop_front();
                self.recv_done(r, WcStatus::LocalLength, WcOpcode::Recv, 0, None);
                return Outcome::Nak(NakCode::RemoteOperationalError);
            }
            host.write(r.va + offset, &p.payload);
            if pos.ends() {
                self.rq.pop_front();
                self.recv_done(r, WcStatus::Success, WcOpcode::Recv, end as u32, p.imm);
                self.msn = psn_add(self.msn, 1);
                self.cur = None;
            } else {
                self.cur = Some(InProgress::Send { offset: end });
            }
            return Outcome::Done;
        }
        if is_write {
            let (va, left, total) = match (self.cur, p.reth) {
                (Some(InProgress::Write { va, left, total }), _) => (va, left, total),
                (None, Some(reth)) => {
                    if let Err(e) = host.check_remote(
                        reth.rkey,
                        self.pd,
                        reth.va,
                        u64::from(reth.dma_len),
                        Access::REMOTE_WRITE,
                    ) {
                        return Self::access_nak(e);
                    }
                    (reth.va, u64::from(reth.dma_len), reth.dma_len)
                }
                _ => return Outcome::Nak(NakCode::InvalidRequest),
            };
            let n = len as u64;
            if n > left || (pos.ends() && n != left) {
                return Outcome::Nak(NakCode::InvalidRequest);
            }
            let with_imm = matches!(op, opcode::RC_WRITE_LAST_IMM | opcode::RC_WRITE_ONLY_IMM);
            if with_imm && self.rq.is_empty() {
                return Outcome::Rnr;
            }
            host.write(va, &p.payload);
            if pos.ends() {
                if with_imm {
                    let r = self.rq.pop_front().expect("checked above");
                    self.recv_done(
                        r,
                        WcStatus::Success,
                        WcOpcode::RecvRdmaWithImm,
                        total,
                        p.imm,
                    );
                }
                self.msn = psn_add(self.msn, 1);
                self.cur = None;
            } else {
                self.cur = Some(InProgress::Write {
                    va: va + n,
                    left: left - n,
                    total,
                });
            }
            return Outcome::Done;
        }
        match op {
            opcode::RC_READ_REQUEST => {
                let Some(reth) = p.reth else {
                    return Outcome::Nak(NakCode::InvalidRequest);
                };
                if let Err(e) = host.check_remote(
                    reth.rkey,
                    self.pd,
                    reth.va,
                    u64::from(reth.dma_len),
                    Access::REMOTE_READ,
                ) {
                    return Self::access_nak(e);
                }
                let npkts = packets_for(reth.dma_len, mtu);
                self.msn = psn_add(self.msn, 1);
                self.remember(Resource::Read {
                    first_psn: p.bth.psn,
                    npkts,
                    va: reth.va,
                    len: reth.dma_len,
                });
                let r = self.read_responses(host, p.bth.psn, reth.va, reth.dma_len);
                self.epsn = psn_add(self.epsn, npkts);
                Outcome::Responses(r)
            }
            opcode::RC_COMPARE_SWAP | opcode::RC_FETCH_ADD => {
                let Some(a) = p.atomic else {
                    return Outcome::Nak(NakCode::InvalidRequest);
                };
                if !a.va.is_multiple_of(8) {
                    return Outcome::Nak(NakCode::InvalidRequest);
                }
                if let Err(e) = host.check_remote(a.rkey, self.pd, a.va, 8, Access::REMOTE_ATOMIC) {
                    return Self::access_nak(e);
                }
                let orig = host.read_u64(a.va);
                let new = if op == opcode::RC_COMPARE_SWAP {
                    if orig == a.compare {
                        a.swap_add
                    } else {
                        orig
                    }
                } else {
                    orig.wrapping_add(a.swap_add)
                };
                host.write_u64(a.va, new);
                self.stats.atomics += 1;
                self.msn = psn_add(self.msn, 1);
                self.remember(Resource::Atomic {
                    psn: p.bth.psn,
                    orig,
                });
                self.epsn = psn_add(self.epsn, 1);
                Outcome::Responses(vec![self.atomic_ack(p.bth.psn, orig)])
            }
            _ => Outcome::Nak(NakCode::InvalidRequest),
        }
    }
}
