//! A reliable-connected QP: the verbs state machine around a [`Requester`] and a
//! [`Responder`], and the dispatch of incoming frames between them.
//!
//! | State | Requester | Responder | post_recv | post_send |
//! |---|---|---|---|---|
//! | RESET | idle | idle | refused | refused |
//! | INIT | idle | idle | queued | refused |
//! | RTR | idle | runs | queued | refused |
//! | RTS | runs | runs | queued | queued |
//! | ERROR | flushed | flushed | refused | refused |
//!
//! When either half fails (a fatal NAK sent or received, a retry counter exhausted) the QP
//! moves to ERROR by itself and the other half is flushed.

use super::context::{legal_transition, Host, QpAttr, QpError, QpState};
use super::headers::Packet;
use super::requester::{Requester, SendWr};
use super::responder::{RecvWr, Responder};
use super::{path_headers, LocalAddr, Wc};
use crate::roce::opcode;

/// An RC queue pair.
#[derive(Clone, Debug)]
pub struct Qp {
    qpn: u32,
    pd: u32,
    local: LocalAddr,
    state: QpState,
    attr: Option<QpAttr>,
    /// The send side.
    pub requester: Requester,
    /// The receive side.
    pub responder: Responder,
}

impl Qp {
    /// A QP in RESET with number `qpn` in protection domain `pd`, sending from `local`.
    pub fn new(qpn: u32, pd: u32, local: LocalAddr) -> Qp {
        Qp {
            qpn,
            pd,
            local,
            state: QpState::Reset,
            attr: None,
            requester: Requester::new(qpn, pd),
            responder: Responder::new(qpn, pd),
        }
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The protection domain.
    pub fn pd(&self) -> u32 {
        self.pd
    }

    /// The current state.
    pub fn state(&self) -> QpState {
        self.state
    }

    /// The attributes given at RTR.
    pub fn attr(&self) -> Option<&QpAttr> {
        self.attr.as_ref()
    }

    /// Moves the QP to `to`. RTR needs `attr` (later transitions may pass new attributes,
    /// which only the halves that start then use). Illegal transitions change nothing.
    pub fn modify(&mut self, to: QpState, attr: Option<QpAttr>) -> Result<(), QpError> {
        if !legal_transition(self.state, to) {
            return Err(QpError::IllegalTransition {
                from: self.state,
                to,
            });
        }
        if let Some(a) = attr {
            self.attr = Some(a);
        }
        match to {
            QpState::Reset => {
                let (qpn, pd) = (self.qpn, self.pd);
                self.requester = Requester::new(qpn, pd);
                self.responder = Responder::new(qpn, pd);
                self.attr = None;
            }
            QpState::Init | QpState::Rts if self.state == to => {}
            QpState::Init => {}
            QpState::Rtr | QpState::Rts => {
                let a = self.attr.as_ref().ok_or(QpError::MissingAttributes)?;
                let h = path_headers(&self.local, a).ok_or(QpError::AddressFamily)?;
                if to == QpState::Rtr {
                    self.responder.activate(a, h);
                } else {
                    self.requester.activate(a, h);
                }
            }
            QpState::Error => {
                self.requester.flush();
                self.responder.flush();
            }
        }
        self.state = to;
        Ok(())
    }

    /// Posts a send work request (RTS only).
    pub fn post_send(&mut self, host: &Host, wr: SendWr) -> Result<(), QpError> {
        if self.state != QpState::Rts {
            return Err(QpError::WrongState(self.state));
        }
        self.requester.post(host, wr)
    }

    /// Posts a receive (INIT, RTR, RTS).
    pub fn post_recv(&mut self, host: &Host, wr: RecvWr) -> Result<(), QpError> {
        if !matches!(self.state, QpState::Init | QpState::Rtr | QpState::Rts) {
            return Err(QpError::WrongState(self.state));
        }
        self.responder.post(host, wr)
    }

    /// Handles a parsed frame addressed to this QP: responses go to the requester, requests
    /// to the responder. Returns the frames to send.
    pub fn on_packet(&mut self, host: &mut Host, now: u64, p: &Packet) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        match p.bth.opcode {
            opcode::RC_READ_RESPONSE_FIRST..=opcode::RC_ATOMIC_ACK => {
                if self.state == QpState::Rts {
                    self.requester.on_response(host, now, p);
                    out = self.requester.poll(host, now);
                }
            }
            _ => {
                if matches!(self.state, QpState::Rtr | QpState::Rts) {
                    out = self.responder.on_request(host, p);
                }
            }
        }
        self.check_failed();
        out
    }

    /// Handles a frame addressed to this QP (see [`Qp::on_packet`]); unparsable frames are
    /// dropped.
    pub fn on_frame(&mut self, host: &mut Host, now: u64, frame: &[u8]) -> Vec<Vec<u8>> {
        match Packet::parse(frame) {
            Ok(p) => self.on_packet(host, now, &p),
            Err(_) => Vec::new(),
        }
    }

    /// Runs the requester's timers at `now` and returns what it sends.
    pub fn tick(&mut self, host: &mut Host, now: u64) -> Vec<Vec<u8>> {
        if self.state != QpState::Rts {
            return Vec::new();
        }
        let out = self.requester.tick(host, now);
        self.check_failed();
        out
    }

    fn check_failed(&mut self) {
        if self.state != QpState::Error && (self.requester.failed() || self.responder.failed()) {
            self.state = QpState::Error;
            self.requester.flush();
            self.responder.flush();
        }
    }

    /// Takes the completions of both halves: send completions first, then receives, each in
    /// order.
    pub fn poll_cq(&mut self) -> Vec<Wc> {
        let mut v = self.requester.poll_cq();
        v.extend(self.responder.poll_cq());
        v
    }
}
