//! The RC extended transport headers and a whole RoCEv2 packet as a `Repr`
//! (reference/wire-formats.md §1.3, §1.4, §1.7).
//!
//! | Header | Bytes | Layout (big-endian) |
//! |---|---|---|
//! | [`Reth`] | 16 | VA (64) · R_Key (32) · DMA length (32) |
//! | [`Aeth`] | 4 | syndrome (8) · MSN (24) |
//! | [`AtomicEth`] | 28 | VA (64) · R_Key (32) · swap-or-add (64) · compare (64) |
//! | [`AtomicAckEth`] | 8 | original remote data (64) |
//! | ImmDt, IETH | 4 | 32 opaque bits |
//!
//! Which of them follow the BTH is a function of the opcode alone ([`layout`]); they appear in
//! the order of the table in §1.4 (RETH before ImmDt, AETH before AtomicAckETH).

use crate::roce::{self, opcode, Bth, IpHeader, RoceHeaders, BTH_LEN, ICRC_LEN};
use crate::{Error, Result};

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// RDMA Extended Transport Header: the remote buffer of a WRITE (first/only packet) or READ
/// request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key of the memory region.
    pub rkey: u32,
    /// Length of the whole message in bytes.
    pub dma_len: u32,
}

impl Reth {
    /// Bytes of the header.
    pub const LEN: usize = 16;

    /// Parses the first [`Reth::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Reth> {
        Error::check_len("reth", Self::LEN, b.len())?;
        Ok(Reth {
            va: be64(&b[0..8]),
            rkey: be32(&b[8..12]),
            dma_len: be32(&b[12..16]),
        })
    }

    /// Writes the header into the first [`Reth::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.dma_len.to_be_bytes());
    }
}

/// NAK codes: the value bits of an AETH syndrome of type 11 (§1.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NakCode {
    /// 0x60: the packet's PSN is ahead of the expected one; the NAK carries the expected PSN.
    PsnSequenceError,
    /// 0x61: bad opcode sequence, unsupported operation, misaligned atomic, length error.
    InvalidRequest,
    /// 0x62: R_Key, PD, bounds or permission failure.
    RemoteAccessError,
    /// 0x63: the responder could not complete a valid request (e.g. its receive buffer is too
    /// small).
    RemoteOperationalError,
    /// Any other value (0x64 is RD's invalid RD request; the rest are reserved).
    Other(u8),
}

impl NakCode {
    fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::Other(c) => c & 0x1F,
        }
    }

    fn from_code(c: u8) -> NakCode {
        match c {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            c => NakCode::Other(c),
        }
    }
}

/// The decoded AETH syndrome byte: bit 7 reserved, bits 6:5 the type, bits 4:0 the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syndrome {
    /// Type 00: a positive acknowledgement with the responder's credit code (0x1F: no
    /// end-to-end credits, what this model sends).
    Ack {
        /// Credit code 0..=31 ([`credits`]).
        credit: u8,
    },
    /// Type 01: receiver not ready; wait the coded time ([`rnr_timer_us`]) and resend.
    RnrNak {
        /// RNR timer code 0..=31.
        timer: u8,
    },
    /// Type 10 (reserved), kept as its value so a parse/emit round trip is exact.
    Reserved(u8),
    /// Type 11: a negative acknowledgement.
    Nak(NakCode),
}

/// The credit code that says "no end-to-end credit" (rxe and this model always send it).
pub const CREDIT_UNLIMITED: u8 = 0x1F;

impl Syndrome {
    /// The syndrome byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credit } => credit & 0x1F,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1F),
            Syndrome::Reserved(v) => 0x40 | (v & 0x1F),
            Syndrome::Nak(c) => 0x60 | c.code(),
        }
    }

    /// Decodes a syndrome byte (bit 7 ignored).
    pub fn from_byte(b: u8) -> Syndrome {
        let v = b & 0x1F;
        match b >> 5 & 3 {
            0 => Syndrome::Ack { credit: v },
            1 => Syndrome::RnrNak { timer: v },
            2 => Syndrome::Reserved(v),
            _ => Syndrome::Nak(NakCode::from_code(v)),
        }
    }
}

/// Number of receive WQEs a credit code stands for; `None` for 31 (unlimited) (§1.7).
pub fn credits(code: u8) -> Option<u32> {
    match code & 0x1F {
        31 => None,
        c if c <= 4 => Some(u32::from(c)),
        // Codes 5.. alternate 1.5 × and 2 × the power of two: 6, 8, 12, 16, ...
        c => {
            let k = u32::from(c - 5);
            let p = 1u32 << (k / 2 + 2);
            Some(if k % 2 == 0 { p + p / 2 } else { p * 2 })
        }
    }
}

/// The wait an RNR timer code asks for, in microseconds (§1.7; code 0 is the longest).
pub fn rnr_timer_us(code: u8) -> u64 {
    const T: [u64; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560,
        3_840, 5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520,
    ];
    T[usize::from(code & 0x1F)]
}

/// ACK Extended Transport Header: the syndrome and the responder's message sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aeth {
    /// What the acknowledgement says.
    pub syndrome: Syndrome,
    /// The responder's count of completed messages, 24 bits.
    pub msn: u32,
}

impl Aeth {
    /// Bytes of the header.
    pub const LEN: usize = 4;

    /// Parses the first [`Aeth::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Aeth> {
        Error::check_len("aeth", Self::LEN, b.len())?;
        Ok(Aeth {
            syndrome: Syndrome::from_byte(b[0]),
            msn: be32(&b[0..4]) & 0xFF_FFFF,
        })
    }

    /// Writes the header into the first [`Aeth::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = self.syndrome.to_byte();
        b[1..4].copy_from_slice(&self.msn.to_be_bytes()[1..]);
    }
}

/// Atomic Extended Transport Header of CmpSwap and FetchAdd requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicEth {
    /// Remote virtual address of the 8-byte target (must be 8-byte aligned).
    pub va: u64,
    /// Remote key of the memory region.
    pub rkey: u32,
    /// The value to swap in (CmpSwap) or to add (FetchAdd).
    pub swap_add: u64,
    /// The value to compare with (CmpSwap; FetchAdd ignores it).
    pub compare: u64,
}

impl AtomicEth {
    /// Bytes of the header.
    pub const LEN: usize = 28;

    /// Parses the first [`AtomicEth::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<AtomicEth> {
        Error::check_len("atomiceth", Self::LEN, b.len())?;
        Ok(AtomicEth {
            va: be64(&b[0..8]),
            rkey: be32(&b[8..12]),
            swap_add: be64(&b[12..20]),
            compare: be64(&b[20..28]),
        })
    }

    /// Writes the header into the first [`AtomicEth::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..28].copy_from_slice(&self.compare.to_be_bytes());
    }
}

/// Atomic ACK Extended Transport Header: the remote value before the atomic executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicAckEth {
    /// The original remote data.
    pub orig: u64,
}

impl AtomicAckEth {
    /// Bytes of the header.
    pub const LEN: usize = 8;

    /// Parses the first [`AtomicAckEth::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<AtomicAckEth> {
        Error::check_len("atomicacketh", Self::LEN, b.len())?;
        Ok(AtomicAckEth { orig: be64(b) })
    }

    /// Writes the header into the first [`AtomicAckEth::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.orig.to_be_bytes());
    }
}

/// Bytes of ImmDt and of IETH.
pub const IMM_LEN: usize = 4;

/// Which extended headers follow the BTH for an opcode, in wire order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// RETH.
    pub reth: bool,
    /// AETH.
    pub aeth: bool,
    /// AtomicETH.
    pub atomic: bool,
    /// AtomicAckETH.
    pub atomic_ack: bool,
    /// ImmDt.
    pub imm: bool,
    /// IETH.
    pub ieth: bool,
    /// The 16 reserved bytes of a CNP (carried as the payload).
    pub cnp: bool,
}

impl Layout {
    /// Bytes of the extended headers.
    pub fn len(&self) -> usize {
        let n = |b: bool, l: usize| if b { l } else { 0 };
        n(self.reth, Reth::LEN)
            + n(self.aeth, Aeth::LEN)
            + n(self.atomic, AtomicEth::LEN)
            + n(self.atomic_ack, AtomicAckEth::LEN)
            + n(self.imm, IMM_LEN)
            + n(self.ieth, IMM_LEN)
    }

    /// Whether there are no extended headers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The extended headers of an RC or UC opcode, or of a CNP (§1.4); `None` for opcodes this
/// model does not carry (UD, RD, reserved).
pub fn layout(op: u8) -> Option<Layout> {
    let mut l = Layout::default();
    if op == opcode::CNP {
        l.cnp = true;
        return Some(l);
    }
    let uc = match op >> 5 {
        0 => false,
        1 => true,
        _ => return None,
    };
    let op5 = op & 0x1F;
    if uc && op5 > 0x0B {
        return None;
    }
    match op5 {
        0x00..=0x02 | 0x04 | 0x07 | 0x08 | 0x0E => {}
        0x03 | 0x05 | 0x09 => l.imm = true,
        0x06 | 0x0A | 0x0C => l.reth = true,
        0x0B => {
            l.reth = true;
            l.imm = true;
        }
        0x0D | 0x0F | 0x10 | 0x11 => l.aeth = true,
        0x12 => {
            l.aeth = true;
            l.atomic_ack = true;
        }
        0x13 | 0x14 => l.atomic = true,
        0x16 | 0x17 => l.ieth = true,
        _ => return None,
    }
    Some(l)
}

/// A whole RoCEv2 frame without FCS, parsed: the headers in front of the BTH, the BTH, the
/// extended headers and the payload (pad and ICRC are implied).
///
/// [`Packet::parse`] checks structure only; the ICRC is checked by [`roce::icrc_ok`] and
/// written by [`Packet::emit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Ethernet, VLAN, IP and UDP fields.
    pub headers: RoceHeaders,
    /// The Base Transport Header (its `pad_cnt` is recomputed by [`Packet::emit`]).
    pub bth: Bth,
    /// RETH.
    pub reth: Option<Reth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicETH.
    pub atomic: Option<AtomicEth>,
    /// AtomicAckETH.
    pub atomic_ack: Option<AtomicAckEth>,
    /// ImmDt.
    pub imm: Option<u32>,
    /// IETH (the R_Key to invalidate).
    pub ieth: Option<u32>,
    /// The payload without pad (a CNP's 16 reserved bytes).
    pub payload: Vec<u8>,
}

impl Packet {
    /// A packet with `headers` and `bth`, no extended headers and no payload.
    pub fn new(headers: RoceHeaders, bth: Bth) -> Packet {
        Packet {
            headers,
            bth,
            reth: None,
            aeth: None,
            atomic: None,
            atomic_ack: None,
            imm: None,
            ieth: None,
            payload: Vec::new(),
        }
    }

    /// Parses a RoCEv2 frame without FCS: Ethernet (0-2 VLAN tags), IPv4 without options or
    /// IPv6, UDP to port 4791, BTH, the extended headers the opcode calls for, payload, pad and
    /// the ICRC slot.
    pub fn parse(frame: &[u8]) -> Result<Packet> {
        if !roce::is_roce(frame) {
            return Err(Error::Malformed("not a RoCEv2 frame"));
        }
        let (l3, v6) = roce::l3_of(frame).ok_or(Error::Malformed("no IP header"))?;
        let mut vlans = Vec::new();
        let mut off = 12;
        while off + 2 < l3 {
            let tpid = u16::from_be_bytes([frame[off], frame[off + 1]]);
            let tci = u16::from_be_bytes([frame[off + 2], frame[off + 3]]);
            vlans.push((tpid, tci));
            off += 4;
        }
        let ip = &frame[l3..];
        let (ip_hdr, ihl) = if v6 {
            let w0 = be32(ip);
            (
                IpHeader::V6 {
                    src: <[u8; 16]>::try_from(&ip[8..24]).unwrap().into(),
                    dst: <[u8; 16]>::try_from(&ip[24..40]).unwrap().into(),
                    traffic_class: (w0 >> 20) as u8,
                    flow_label: w0 & 0xF_FFFF,
                    hop_limit: ip[7],
                },
                40,
            )
        } else {
            if ip[0] != 0x45 {
                return Err(Error::Unsupported("IPv4 options in a RoCEv2 frame"));
            }
            (
                IpHeader::V4 {
                    src: <[u8; 4]>::try_from(&ip[12..16]).unwrap().into(),
                    dst: <[u8; 4]>::try_from(&ip[16..20]).unwrap().into(),
                    tos: ip[1],
                    ident: u16::from_be_bytes([ip[4], ip[5]]),
                    ttl: ip[8],
                    dont_frag: ip[6] & 0x40 != 0,
                },
                20,
            )
        };
        let udp = &ip[ihl..];
        let headers = RoceHeaders {
            dst_mac: frame[0..6].try_into().unwrap(),
            src_mac: frame[6..12].try_into().unwrap(),
            vlans,
            ip: ip_hdr,
            src_port: u16::from_be_bytes([udp[0], udp[1]]),
            udp_checksum: u16::from_be_bytes([udp[6], udp[7]]),
        };
        let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        if udp_len < 8 + BTH_LEN + ICRC_LEN || udp_len > udp.len() {
            return Err(Error::Malformed("UDP length"));
        }
        let body = &udp[8..udp_len];
        let bth = Bth::parse(body)?;
        let lay = layout(bth.opcode).ok_or(Error::Unsupported("opcode"))?;
        let ext_end = BTH_LEN + lay.len();
        let pay_end = body.len() - ICRC_LEN;
        let pad = usize::from(bth.pad_cnt);
        if ext_end + pad > pay_end {
            return Err(Error::Truncated {
                what: "rdma extended headers",
                needed: ext_end + pad + ICRC_LEN,
                got: body.len(),
            });
        }
        let mut p = Packet::new(headers, bth);
        let mut o = BTH_LEN;
        if lay.reth {
            p.reth = Some(Reth::parse(&body[o..])?);
            o += Reth::LEN;
        }
        if lay.aeth {
            p.aeth = Some(Aeth::parse(&body[o..])?);
            o += Aeth::LEN;
        }
        if lay.atomic_ack {
            p.atomic_ack = Some(AtomicAckEth::parse(&body[o..])?);
            o += AtomicAckEth::LEN;
        }
        if lay.atomic {
            p.atomic = Some(AtomicEth::parse(&body[o..])?);
            o += AtomicEth::LEN;
        }
        if lay.imm {
            p.imm = Some(be32(&body[o..]));
            o += IMM_LEN;
        }
        if lay.ieth {
            p.ieth = Some(be32(&body[o..]));
            o += IMM_LEN;
        }
        p.payload = body[o..pay_end - pad].to_vec();
        Ok(p)
    }

    /// The extended headers as bytes, in wire order.
    fn ext_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let mut put = |n: usize, f: &dyn Fn(&mut [u8])| {
            let s = b.len();
            b.resize(s + n, 0);
            f(&mut b[s..]);
        };
        if let Some(h) = self.reth {
            put(Reth::LEN, &|d| h.emit(d));
        }
        if let Some(h) = self.aeth {
            put(Aeth::LEN, &|d| h.emit(d));
        }
        if let Some(h) = self.atomic_ack {
            put(AtomicAckEth::LEN, &|d| h.emit(d));
        }
        if let Some(h) = self.atomic {
            put(AtomicEth::LEN, &|d| h.emit(d));
        }
        if let Some(v) = self.imm {
            put(IMM_LEN, &|d| d.copy_from_slice(&v.to_be_bytes()));
        }
        if let Some(v) = self.ieth {
            put(IMM_LEN, &|d| d.copy_from_slice(&v.to_be_bytes()));
        }
        b
    }

    /// The frame without FCS: lengths, IPv4 header checksum, PadCnt and ICRC filled in.
    pub fn emit(&self) -> Vec<u8> {
        let mut body = self.ext_bytes();
        body.extend_from_slice(&self.payload);
        let mut bth = self.bth;
        bth.pad_cnt = (self.payload.len().wrapping_neg() & 3) as u8;
        roce::roce_frame(&self.headers, &bth, &body)
    }

    /// Whether the IP header's ECN field says congestion experienced (11).
    pub fn ecn_ce(&self) -> bool {
        ip_ecn(&self.headers.ip) == 3
    }
}

/// The ECN field (low two bits of the IPv4 TOS or IPv6 traffic class).
pub fn ip_ecn(ip: &IpHeader) -> u8 {
    match *ip {
        IpHeader::V4 { tos, .. } => tos & 3,
        IpHeader::V6 { traffic_class, .. } => traffic_class & 3,
    }
}

/// Marks a RoCEv2 frame (without FCS) congestion experienced when it is ECN-capable, as a
/// switch does: ECN := 11, the IPv4 header checksum updated. The ICRC masks these fields, so
/// it stays valid. Returns whether the frame was marked.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Some((l3, v6)) = roce::l3_of(frame) else {
        return false;
    };
    let ecn_byte = l3 + 1;
    let ecn = if v6 {
        frame[ecn_byte] >> 4 & 3
    } else {
        frame[ecn_byte] & 3
    };
    if ecn == 0 {
        return false;
    }
    if v6 {
        frame[ecn_byte] |= 0x30;
    } else {
        frame[ecn_byte] |= 3;
        frame[l3 + 10] = 0;
        frame[l3 + 11] = 0;
        let c = crate::checksum::checksum(&frame[l3..l3 + 20]);
        frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::{hex, T1, T2, T3, T4, T5, T6, T8};

    #[test]
    fn published_frames_parse_and_emit_byte_exact() {
        for v in [T1, T2, T3, T4, T5, T6, T8] {
            let f = hex(v);
            let p = Packet::parse(&f).unwrap();
            assert_eq!(p.emit(), f);
        }
    }

    #[test]
    fn published_frames_decode_to_their_fields() {
        let p = Packet::parse(&hex(T4)).unwrap();
        assert_eq!(
            p.reth,
            Some(Reth {
                va: 0x7f00_0000_1000,
                rkey: 0x1234,
                dma_len: 5
            })
        );
        assert_eq!(p.payload, b"hello");
        assert_eq!((p.bth.psn, p.bth.ack_req), (0x12_3456, true));
        let p = Packet::parse(&hex(T5)).unwrap();
        assert_eq!(
            p.aeth,
            Some(Aeth {
                syndrome: Syndrome::Ack { credit: 0x1F },
                msn: 1
            })
        );
        let p = Packet::parse(&hex(T6)).unwrap();
        assert_eq!(p.bth.psn, 0x105);
        assert_eq!(
            p.aeth.unwrap().syndrome,
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        let p = Packet::parse(&hex(T1)).unwrap();
        assert_eq!(
            (p.bth.opcode, p.bth.dest_qp, p.payload.len()),
            (0x81, 0x118, 16)
        );
        let p = Packet::parse(&hex(T2)).unwrap();
        assert_eq!(p.payload.len(), 18);
    }

    #[test]
    fn syndromes_round_trip_through_their_byte() {
        for b in 0u8..0x80 {
            assert_eq!(Syndrome::from_byte(b).to_byte(), b);
        }
        assert_eq!(Syndrome::from_byte(0x1F), Syndrome::Ack { credit: 31 });
        assert_eq!(Syndrome::from_byte(0x2C), Syndrome::RnrNak { timer: 12 });
        for (b, c) in [
            (0x60, NakCode::PsnSequenceError),
            (0x61, NakCode::InvalidRequest),
            (0x62, NakCode::RemoteAccessError),
            (0x63, NakCode::RemoteOperationalError),
        ] {
            assert_eq!(Syndrome::from_byte(b), Syndrome::Nak(c));
            assert_eq!(Syndrome::Nak(c).to_byte(), b);
        }
    }

    #[test]
    fn credit_and_rnr_tables_match_the_reference() {
        let want = [
            0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
            1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
        ];
        for (c, w) in want.iter().enumerate() {
            assert_eq!(credits(c as u8), Some(*w), "code {c}");
        }
        assert_eq!(credits(31), None);
        assert_eq!(
            (rnr_timer_us(0), rnr_timer_us(1), rnr_timer_us(25)),
            (655_360, 10, 61_440)
        );
    }

    #[test]
    fn every_rc_header_combination_round_trips() {
        let base = Packet::parse(&hex(T3)).unwrap();
        for op in 0u8..=0x17 {
            let Some(l) = layout(op) else { continue };
            let mut p = base.clone();
            p.bth.opcode = op;
            p.reth = l.reth.then_some(Reth {
                va: 0x0123_4567_89AB_CDEF,
                rkey: 0xDEAD_BEEF,
                dma_len: 0x1_0000,
            });
            p.aeth = l.aeth.then_some(Aeth {
                syndrome: Syndrome::RnrNak { timer: 3 },
                msn: 0xAB_CDEF,
            });
            p.atomic = l.atomic.then_some(AtomicEth {
                va: 8,
                rkey: 7,
                swap_add: u64::MAX,
                compare: 0x5555,
            });
            p.atomic_ack = l.atomic_ack.then_some(AtomicAckEth { orig: 42 });
            p.imm = l.imm.then_some(0xCAFE_F00D);
            p.ieth = l.ieth.then_some(0x1111);
            p.payload = (0..usize::from(op) * 3).map(|i| i as u8).collect();
            let f = p.emit();
            assert!(roce::icrc_ok(&f));
            let mut q = Packet::parse(&f).unwrap();
            q.bth.pad_cnt = p.bth.pad_cnt;
            assert_eq!(q, p, "opcode {op:#x}");
        }
    }

    #[test]
    fn vlan_tags_survive_a_round_trip() {
        let mut p = Packet::parse(&hex(T3)).unwrap();
        for vlans in [
            vec![(0x8100, 0x2005)],
            vec![(0x88A8, 0x0064), (0x8100, 0x6007)],
        ] {
            p.headers.vlans = vlans;
            let f = p.emit();
            assert!(roce::icrc_ok(&f));
            assert_eq!(Packet::parse(&f).unwrap(), p);
        }
    }

    #[test]
    fn ce_marking_keeps_the_icrc_and_the_ip_checksum() {
        for v in [T3, T4] {
            let mut f = hex(v);
            let ect = mark_ce(&mut f);
            assert!(roce::icrc_ok(&f));
            let p = Packet::parse(&f).unwrap();
            assert_eq!(p.ecn_ce(), ect);
            if let IpHeader::V4 { .. } = p.headers.ip {
                assert_eq!(p.emit(), f, "checksum recomputed the same");
            }
        }
    }
}
