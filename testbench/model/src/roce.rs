//! RoCEv2: the Base Transport Header, the opcodes, the invariant CRC (ICRC) and frame builders
//! (reference/wire-formats.md §1).
//!
//! A RoCEv2 frame is `Ethernet (0-2 tags) | IPv4 (20) or IPv6 (40) | UDP (dport 4791) | BTH
//! (12) | extended headers | payload | pad (PadCnt) | ICRC (4)`, then the FCS on the wire. The
//! functions here take frames without FCS, so an ICRC slot is always the last four bytes.
//!
//! BTH layout (big-endian):
//!
//! | Byte | Bits | Field |
//! |---|---|---|
//! | 0 | 7:0 | OpCode (7:5 transport, 4:0 operation; [`opcode`]) |
//! | 1 | 7, 6, 5:4, 3:0 | SE, M (MigReq), PadCnt, TVer |
//! | 2-3 | 15:0 | P_Key |
//! | 4 | 7, 6, 5:0 | FECN, BECN, reserved (the whole byte is *Resv8a*, masked by the ICRC) |
//! | 5-7 | 23:0 | DestQP |
//! | 8 | 7, 6:0 | AckReq, reserved |
//! | 9-11 | 23:0 | PSN |
//!
//! The ICRC ([`icrc`]) is the ordinary CRC-32 (zlib's) over eight 0xFF bytes (the masked IB
//! LRH) followed by everything from the first IP byte up to the ICRC, with the fields that
//! routers may change forced to all-ones ("masked"):
//!
//! | Header | Masked bytes (offsets in the header) |
//! |---|---|
//! | IPv4 | 1 (TOS), 8 (TTL), 10-11 (header checksum) |
//! | IPv6 | low nibble of 0 and 1-3 (traffic class, flow label), 7 (hop limit) |
//! | UDP | 6-7 (checksum) |
//! | BTH | 4 (FECN, BECN, reserved) |
//!
//! It goes on the wire least significant byte first, as the FCS. A frame followed by its correct
//! ICRC leaves the CRC register at the CRC-32 residue (`0xDEBB20E3`; [`ICRC_RESIDUE`]), which is
//! how a receiver may check it.

use crate::crc32::Crc32;
use crate::{Error, Result};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The UDP destination port of RoCEv2.
pub const UDP_PORT: u16 = 4791;
/// Bytes of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Bytes of the ICRC.
pub const ICRC_LEN: usize = 4;
/// The default (full-member) partition key RoCE uses.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// The CRC register (before the final XOR) after the masked stream of a frame and its correct
/// ICRC: the CRC-32 residue; `zlib.crc32(stream + icrc) == 0x2144DF1C`.
pub const ICRC_RESIDUE: u32 = 0xDEBB_20E3;
/// The CRC register after the eight 0xFF bytes of the LRH stand-in, from the 0xFFFFFFFF preset:
/// where the CRC stands at the first IP byte (Linux's `crc32_le` seed).
pub const ICRC_SEED: u32 = 0xDEBB_20E3;

/// RoCEv2 BTH opcodes (reference/wire-formats.md §1.4): bits 7:5 the transport (RC 0, UC 1,
/// UD 3, CNP 4), bits 4:0 the operation.
pub mod opcode {
    /// RC SEND First (payload PMTU).
    pub const RC_SEND_FIRST: u8 = 0x00;
    /// RC SEND Middle (payload PMTU).
    pub const RC_SEND_MIDDLE: u8 = 0x01;
    /// RC SEND Last.
    pub const RC_SEND_LAST: u8 = 0x02;
    /// RC SEND Last with Immediate (ImmDt).
    pub const RC_SEND_LAST_IMM: u8 = 0x03;
    /// RC SEND Only.
    pub const RC_SEND_ONLY: u8 = 0x04;
    /// RC SEND Only with Immediate (ImmDt).
    pub const RC_SEND_ONLY_IMM: u8 = 0x05;
    /// RC RDMA WRITE First (RETH).
    pub const RC_WRITE_FIRST: u8 = 0x06;
    /// RC RDMA WRITE Middle.
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    /// RC RDMA WRITE Last.
    pub const RC_WRITE_LAST: u8 = 0x08;
    /// RC RDMA WRITE Last with Immediate (ImmDt).
    pub const RC_WRITE_LAST_IMM: u8 = 0x09;
    /// RC RDMA WRITE Only (RETH).
    pub const RC_WRITE_ONLY: u8 = 0x0A;
    /// RC RDMA WRITE Only with Immediate (RETH, ImmDt).
    pub const RC_WRITE_ONLY_IMM: u8 = 0x0B;
    /// RC RDMA READ Request (RETH).
    pub const RC_READ_REQUEST: u8 = 0x0C;
    /// RC RDMA READ Response First (AETH).
    pub const RC_READ_RESPONSE_FIRST: u8 = 0x0D;
    /// RC RDMA READ Response Middle (no AETH).
    pub const RC_READ_RESPONSE_MIDDLE: u8 = 0x0E;
    /// RC RDMA READ Response Last (AETH).
    pub const RC_READ_RESPONSE_LAST: u8 = 0x0F;
    /// RC RDMA READ Response Only (AETH).
    pub const RC_READ_RESPONSE_ONLY: u8 = 0x10;
    /// RC ACKNOWLEDGE (AETH).
    pub const RC_ACK: u8 = 0x11;
    /// RC ATOMIC ACKNOWLEDGE (AETH, AtomicAckETH).
    pub const RC_ATOMIC_ACK: u8 = 0x12;
    /// RC CmpSwap (AtomicETH).
    pub const RC_COMPARE_SWAP: u8 = 0x13;
    /// RC FetchAdd (AtomicETH).
    pub const RC_FETCH_ADD: u8 = 0x14;
    /// RC SEND Last with Invalidate (IETH).
    pub const RC_SEND_LAST_INV: u8 = 0x16;
    /// RC SEND Only with Invalidate (IETH).
    pub const RC_SEND_ONLY_INV: u8 = 0x17;
    /// UC SEND Only: the UC operations are the RC ones plus 0x20.
    pub const UC_SEND_ONLY: u8 = 0x24;
    /// UD SEND Only (DETH).
    pub const UD_SEND_ONLY: u8 = 0x64;
    /// UD SEND Only with Immediate (DETH, ImmDt).
    pub const UD_SEND_ONLY_IMM: u8 = 0x65;
    /// Congestion notification packet (BECN set, 16 reserved zero bytes after the BTH).
    pub const CNP: u8 = 0x81;
}

mod field {
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: std::ops::Range<usize> = 2..4;
    pub const RESV8A: usize = 4;
    pub const DEST_QP: std::ops::Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8;
    pub const PSN: std::ops::Range<usize> = 9..12;
}

/// The Base Transport Header, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// OpCode ([`opcode`]).
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub mig: bool,
    /// Pad bytes after the payload (0..=3).
    pub pad_cnt: u8,
    /// Transport header version (0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN (unused by RoCEv2 data: ECN lives in IP).
    pub fecn: bool,
    /// Backward ECN (set in CNPs).
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    /// The requester asks for an ACK.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

fn be24(b: &[u8]) -> u32 {
    u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2])
}

impl Bth {
    /// A BTH with `opcode`, the default P_Key, everything else zero.
    pub fn new(opcode: u8, dest_qp: u32, psn: u32) -> Bth {
        Bth {
            opcode,
            se: false,
            mig: false,
            pad_cnt: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// Parses the first [`BTH_LEN`] bytes of `b` (reserved bits ignored).
    pub fn parse(b: &[u8]) -> Result<Bth> {
        Error::check_len("bth", BTH_LEN, b.len())?;
        let fl = b[field::FLAGS];
        Ok(Bth {
            opcode: b[field::OPCODE],
            se: fl & 0x80 != 0,
            mig: fl & 0x40 != 0,
            pad_cnt: fl >> 4 & 3,
            tver: fl & 0xF,
            pkey: u16::from_be_bytes([b[field::PKEY][0], b[field::PKEY][1]]),
            fecn: b[field::RESV8A] & 0x80 != 0,
            becn: b[field::RESV8A] & 0x40 != 0,
            dest_qp: be24(&b[field::DEST_QP]),
            ack_req: b[field::ACK_REQ] & 0x80 != 0,
            psn: be24(&b[field::PSN]),
        })
    }

    /// Bytes the header takes.
    pub fn buffer_len(&self) -> usize {
        BTH_LEN
    }

    /// Writes the header into the first [`BTH_LEN`] bytes of `b` (reserved bits zero).
    pub fn emit(&self, b: &mut [u8]) {
        b[field::OPCODE] = self.opcode;
        b[field::FLAGS] = u8::from(self.se) << 7
            | u8::from(self.mig) << 6
            | (self.pad_cnt & 3) << 4
            | (self.tver & 0xF);
        b[field::PKEY].copy_from_slice(&self.pkey.to_be_bytes());
        b[field::RESV8A] = u8::from(self.fecn) << 7 | u8::from(self.becn) << 6;
        b[field::DEST_QP].copy_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        b[field::ACK_REQ] = u8::from(self.ack_req) << 7;
        b[field::PSN].copy_from_slice(&self.psn.to_be_bytes()[1..]);
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; BTH_LEN] {
        let mut b = [0u8; BTH_LEN];
        self.emit(&mut b);
        b
    }
}

/// Where a frame's IP header starts and which version it is: `(l3_off, ipv6)`, behind 0, 1 or
/// 2 VLAN tags (TPID 0x8100 or 0x88A8); `None` when the EtherType is neither IPv4 nor IPv6 or
/// the frame is too short to tell.
pub fn l3_of(frame: &[u8]) -> Option<(usize, bool)> {
    let mut off = 12;
    for _ in 0..3 {
        let et = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
        match et {
            0x8100 | 0x88A8 if off < 20 => off += 4,
            0x0800 => return Some((off + 2, false)),
            0x86DD => return Some((off + 2, true)),
            _ => return None,
        }
    }
    None
}

/// The length of the IP header at `l3_off`: IHL × 4 for IPv4, 40 for IPv6 (RoCEv2 carries UDP
/// right after the fixed header).
fn ip_header_len(frame: &[u8], l3_off: usize, ipv6: bool) -> usize {
    if ipv6 {
        40
    } else {
        usize::from(frame[l3_off] & 0xF) * 4
    }
}

/// Whether `frame` (without FCS) is RoCEv2: IPv4 or IPv6 (fixed header) carrying UDP to port
/// 4791, long enough for the BTH and an ICRC.
pub fn is_roce(frame: &[u8]) -> bool {
    let Some((l3, v6)) = l3_of(frame) else {
        return false;
    };
    if frame.len() < l3 + 40 {
        return false;
    }
    let proto = if v6 { frame[l3 + 6] } else { frame[l3 + 9] };
    let ihl = ip_header_len(frame, l3, v6);
    let l4 = l3 + ihl;
    proto == 17
        && ihl >= 20
        && frame.len() >= l4 + 8 + BTH_LEN + ICRC_LEN
        && u16::from_be_bytes([frame[l4 + 2], frame[l4 + 3]]) == UDP_PORT
}

/// The masked stream the ICRC covers, without the 0xFF prefix: from `l3_off` up to the last
/// four bytes of `frame`, IP/UDP/BTH variant fields forced to 0xFF (table in the module doc).
/// Bytes a short frame lacks are not masked.
pub fn masked_stream(frame: &[u8], l3_off: usize, ipv6: bool) -> Vec<u8> {
    let end = frame.len().saturating_sub(ICRC_LEN).max(l3_off);
    let mut s = frame[l3_off.min(frame.len())..end].to_vec();
    let ihl = if s.is_empty() {
        20
    } else {
        ip_header_len(frame, l3_off, ipv6)
    };
    let mut set = |i: usize, mask: u8| {
        if let Some(b) = s.get_mut(i) {
            *b |= mask;
        }
    };
    if ipv6 {
        set(0, 0x0F);
        for i in [1, 2, 3, 7] {
            set(i, 0xFF);
        }
    } else {
        for i in [1, 8, 10, 11] {
            set(i, 0xFF);
        }
    }
    for i in [ihl + 6, ihl + 7, ihl + 8 + 4] {
        set(i, 0xFF);
    }
    s
}

/// The ICRC of `frame` (without FCS; its last four bytes are the ICRC slot, whatever they hold)
/// whose IP header starts at `l3_off`: the value (send it with `to_le_bytes`).
pub fn icrc_at(frame: &[u8], l3_off: usize, ipv6: bool) -> u32 {
    let mut c = Crc32::new();
    c.update(&[0xFF; 8]);
    c.update(&masked_stream(frame, l3_off, ipv6));
    c.finish()
}

/// The ICRC of a RoCEv2 `frame` without FCS (its last four bytes are the ICRC slot).
///
/// Panics when the frame has no IPv4/IPv6 header ([`l3_of`]); see [`icrc_at`] to give the
/// offset.
pub fn icrc(frame: &[u8]) -> u32 {
    let (l3, v6) = l3_of(frame).expect("icrc: the frame carries neither IPv4 nor IPv6");
    icrc_at(frame, l3, v6)
}

/// Whether the last four bytes of a RoCEv2 frame (without FCS) are its correct ICRC; `false`
/// for a frame that is not IP or too short to hold an ICRC.
pub fn icrc_ok(frame: &[u8]) -> bool {
    match l3_of(frame) {
        Some((l3, v6)) if frame.len() >= l3 + ICRC_LEN => {
            icrc_at(frame, l3, v6).to_le_bytes() == frame[frame.len() - ICRC_LEN..]
        }
        _ => false,
    }
}

/// `frame` with its last four bytes replaced by its ICRC (the transmit side's insertion).
pub fn icrc_insert(frame: &[u8], l3_off: usize, ipv6: bool) -> Vec<u8> {
    let mut f = frame.to_vec();
    let n = f.len();
    if n >= ICRC_LEN {
        f[n - ICRC_LEN..].copy_from_slice(&icrc_at(frame, l3_off, ipv6).to_le_bytes());
    }
    f
}

/// The IP header of a RoCEv2 frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the IP header's, named as in RFC 791/8200
pub enum IpHeader {
    /// IPv4 without options (IHL 5), protocol UDP.
    V4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        /// DSCP << 2 | ECN.
        tos: u8,
        ident: u16,
        ttl: u8,
        dont_frag: bool,
    },
    /// IPv6 with UDP as next header.
    V6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        traffic_class: u8,
        flow_label: u32,
        hop_limit: u8,
    },
}

/// Everything in front of the BTH of a RoCEv2 frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoceHeaders {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// VLAN tags outermost first as (TPID, TCI), 0..=2 of them.
    pub vlans: Vec<(u16, u16)>,
    /// The IP header (lengths and IPv4 checksum are computed).
    pub ip: IpHeader,
    /// UDP source port (per-flow entropy, 0xC000..=0xFFFF by convention).
    pub src_port: u16,
    /// The UDP checksum as sent (RoCEv2 sends 0).
    pub udp_checksum: u16,
}

/// A RoCEv2 frame without FCS: `headers`, `bth`, `body` (extended headers and payload), then
/// `bth.pad_cnt` zero pad bytes and the ICRC. IP and UDP lengths count everything up to and
/// including the ICRC; the IPv4 header checksum is filled in.
pub fn roce_frame(headers: &RoceHeaders, bth: &Bth, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&headers.dst_mac);
    f.extend_from_slice(&headers.src_mac);
    for (tpid, tci) in &headers.vlans {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    let pad = usize::from(bth.pad_cnt & 3);
    let udp_len = 8 + BTH_LEN + body.len() + pad + ICRC_LEN;
    let l3 = f.len() + 2;
    let ipv6 = matches!(headers.ip, IpHeader::V6 { .. });
    match headers.ip {
        IpHeader::V4 {
            src,
            dst,
            tos,
            ident,
            ttl,
            dont_frag,
        } => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[1] = tos;
            h[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&ident.to_be_bytes());
            h[6] = if dont_frag { 0x40 } else { 0 };
            h[8] = ttl;
            h[9] = 17;
            h[12..16].copy_from_slice(&src.octets());
            h[16..20].copy_from_slice(&dst.octets());
            let c = crate::checksum::checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            f.extend_from_slice(&h);
        }
        IpHeader::V6 {
            src,
            dst,
            traffic_class,
            flow_label,
            hop_limit,
        } => {
            f.extend_from_slice(&0x86DDu16.to_be_bytes());
            let w0 = 6u32 << 28 | u32::from(traffic_class) << 20 | (flow_label & 0xF_FFFF);
            f.extend_from_slice(&w0.to_be_bytes());
            f.extend_from_slice(&(udp_len as u16).to_be_bytes());
            f.push(17);
            f.push(hop_limit);
            f.extend_from_slice(&src.octets());
            f.extend_from_slice(&dst.octets());
        }
    }
    f.extend_from_slice(&headers.src_port.to_be_bytes());
    f.extend_from_slice(&UDP_PORT.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&headers.udp_checksum.to_be_bytes());
    f.extend_from_slice(&bth.to_bytes());
    f.extend_from_slice(body);
    f.extend(std::iter::repeat_n(0u8, pad));
    f.extend_from_slice(&[0; ICRC_LEN]);
    icrc_insert(&f, l3, ipv6)
}

/// A CNP (BTH opcode 0x81, BECN, 16 reserved zero bytes) to `dest_qp`.
pub fn cnp_frame(headers: &RoceHeaders, dest_qp: u32) -> Vec<u8> {
    let mut bth = Bth::new(opcode::CNP, dest_qp, 0);
    bth.becn = true;
    roce_frame(headers, &bth, &[0; 16])
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::vectors::{hex, ROCE_ICRC};

    /// The vectors of reference/wire-formats.md §1.6 (`crate::vectors::ROCE_ICRC`): (name,
    /// frame without FCS, ICRC value).
    fn vectors() -> Vec<(&'static str, Vec<u8>, u32)> {
        ROCE_ICRC
            .iter()
            .map(|&(name, h, value)| (name, hex(h), value))
            .collect()
    }

    fn macs() -> ([u8; 6], [u8; 6]) {
        ([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1])
    }

    fn v4(src: [u8; 4], dst: [u8; 4], tos: u8, ident: u16) -> IpHeader {
        IpHeader::V4 {
            src: src.into(),
            dst: dst.into(),
            tos,
            ident,
            ttl: 64,
            dont_frag: true,
        }
    }

    fn headers(ip: IpHeader, src_port: u16, vlans: Vec<(u16, u16)>) -> RoceHeaders {
        let (dst_mac, src_mac) = macs();
        RoceHeaders {
            dst_mac,
            src_mac,
            vlans,
            ip,
            src_port,
            udp_checksum: 0,
        }
    }

    #[test]
    fn every_published_vector_reproduces_its_icrc() {
        for (name, f, value) in vectors() {
            assert!(is_roce(&f), "{name}: recognised as RoCEv2");
            assert_eq!(icrc(&f), value, "{name}: ICRC value");
            assert_eq!(
                f[f.len() - 4..],
                value.to_le_bytes(),
                "{name}: wire bytes, least significant first"
            );
            assert!(icrc_ok(&f), "{name}");
            // The register over the masked stream and the ICRC is the residue.
            let mut c = Crc32::new();
            c.update(&[0xFF; 8]);
            let (l3, v6) = l3_of(&f).unwrap();
            c.update(&masked_stream(&f, l3, v6));
            assert_eq!(c.finish(), value, "{name}: zlib form");
            c.update(&f[f.len() - 4..]);
            assert_eq!(c.finish() ^ 0xFFFF_FFFF, ICRC_RESIDUE, "{name}: residue");
        }
    }

    #[test]
    fn the_seed_is_the_register_after_eight_ff_bytes() {
        let mut c = Crc32::new();
        c.update(&[0xFF; 8]);
        assert_eq!(c.finish() ^ 0xFFFF_FFFF, ICRC_SEED);
    }

    #[test]
    fn the_builders_reproduce_the_cnp_vectors_and_t3() {
        let v = vectors();
        // T1, the captured CX-4 Lx CNP: MACs, ID and sport as captured.
        let t1 = RoceHeaders {
            dst_mac: [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2],
            src_mac: [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32],
            vlans: vec![],
            ip: v4([10, 0, 17, 1], [10, 0, 18, 1], 0xC2, 0x718C),
            src_port: 0,
            udp_checksum: 0,
        };
        assert_eq!(cnp_frame(&t1, 0x118), v[0].1, "T1");
        // T8: CNP over IPv6, TC 0xC2.
        let t8 = headers(
            IpHeader::V6 {
                src: "fe80::2".parse().unwrap(),
                dst: "fe80::1".parse().unwrap(),
                traffic_class: 0xC2,
                flow_label: 0,
                hop_limit: 64,
            },
            0xC000,
            vec![],
        );
        assert_eq!(cnp_frame(&t8, 0x44), v[7].1, "T8");
        // The IPv4 CNP equivalent of T8: ICRC wire bytes 63 bd c9 ad.
        let c4 = cnp_frame(
            &headers(v4([10, 0, 0, 2], [10, 0, 0, 1], 0xC2, 0), 0xC000, vec![]),
            0x44,
        );
        assert_eq!(c4[c4.len() - 4..], hex("63bd c9ad"), "IPv4 CNP");
        // The same frame as the published one but for the IP checksum (0 there, masked).
        let mut pubd = v[8].1.clone();
        pubd[24..26].copy_from_slice(&c4[24..26]);
        assert_eq!(c4, pubd, "IPv4 CNP");
        assert_eq!(c4.len(), 14 + 60);
        // T3: RC SEND Only with AckReq, M.
        let mut bth = Bth::new(opcode::RC_SEND_ONLY, 0x11, 0x100);
        bth.ack_req = true;
        bth.mig = true;
        let body: Vec<u8> = (0..16).collect();
        let h3 = headers(
            v4([192, 168, 1, 1], [192, 168, 1, 2], 0x02, 0),
            0xC000,
            vec![],
        );
        assert_eq!(roce_frame(&h3, &bth, &body), v[2].1, "T3");
    }

    #[test]
    fn bth_parse_and_emit_agree_with_the_vectors() {
        let v = vectors();
        let t2 = Bth::parse(&v[1].1[14 + 20 + 8..]).unwrap();
        assert_eq!(
            t2,
            Bth {
                opcode: opcode::UC_SEND_ONLY,
                se: false,
                mig: true,
                pad_cnt: 2,
                tver: 0,
                pkey: 0xFFFF,
                fecn: false,
                becn: false,
                dest_qp: 0xD3,
                ack_req: false,
                psn: 13_571_856,
            }
        );
        let t4 = Bth::parse(&v[3].1[14 + 40 + 8..]).unwrap();
        assert_eq!(
            (t4.opcode, t4.pad_cnt, t4.dest_qp, t4.ack_req, t4.psn),
            (opcode::RC_WRITE_ONLY, 3, 0x22, true, 0x123456)
        );
        let t1 = Bth::parse(&v[0].1[14 + 20 + 8..]).unwrap();
        assert!(t1.becn && !t1.fecn && t1.opcode == opcode::CNP);
        // Emit writes every byte (a junk-filled buffer comes back as the header).
        for (_, f, _) in &v {
            let (l3, v6) = l3_of(f).unwrap();
            let at = l3 + if v6 { 40 } else { 20 } + 8;
            let b = Bth::parse(&f[at..]).unwrap();
            let mut buf = [0xA5u8; BTH_LEN];
            b.emit(&mut buf);
            assert_eq!(buf[..], f[at..at + BTH_LEN]);
            assert_eq!(b.buffer_len(), BTH_LEN);
        }
        assert!(matches!(
            Bth::parse(&[0; 11]),
            Err(Error::Truncated {
                needed: 12,
                got: 11,
                ..
            })
        ));
    }

    #[test]
    fn a_flipped_bit_fails_and_masked_fields_do_not_count() {
        for (name, f, value) in vectors() {
            let (l3, v6) = l3_of(&f).unwrap();
            let l4 = l3 + if v6 { 40 } else { 20 };
            let bth = l4 + 8;
            // Every covered, unmasked bit matters: flip each bit of the last payload byte and of
            // the BTH opcode, the UDP length and the IP addresses.
            for at in [f.len() - 5, bth, l4 + 5, l3 + 15] {
                for b in 0..8 {
                    let mut g = f.clone();
                    g[at] ^= 1 << b;
                    assert!(!icrc_ok(&g), "{name}: byte {at} bit {b}");
                }
            }
            // Masked fields: IP TOS/TTL/checksum or TC/flow label/hop limit, UDP checksum,
            // FECN/BECN and the reserved bits of BTH byte 4.
            let masked: Vec<(usize, u8)> = if v6 {
                vec![
                    (l3, 0x0F),
                    (l3 + 1, 0xFF),
                    (l3 + 2, 0xFF),
                    (l3 + 3, 0xFF),
                    (l3 + 7, 0xFF),
                ]
            } else {
                vec![
                    (l3 + 1, 0xFF),
                    (l3 + 8, 0xFF),
                    (l3 + 10, 0xFF),
                    (l3 + 11, 0xFF),
                ]
            };
            for (at, m) in
                masked
                    .into_iter()
                    .chain([(l4 + 6, 0xFF), (l4 + 7, 0xFF), (bth + 4, 0xFF)])
            {
                let mut g = f.clone();
                g[at] ^= m & 0x5B;
                assert_eq!(icrc(&g), value, "{name}: masked byte {at}");
                assert!(icrc_ok(&g), "{name}: masked byte {at}");
            }
            // The Ethernet header is not covered.
            let mut g = f.clone();
            g[3] ^= 0xFF;
            assert!(icrc_ok(&g), "{name}: MAC address");
        }
    }

    #[test]
    fn vlan_tags_do_not_change_the_icrc() {
        let mut bth = Bth::new(opcode::RC_WRITE_FIRST, 0x1234, 77);
        bth.fecn = true;
        let body: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(7)).collect();
        let ip = v4([1, 2, 3, 4], [5, 6, 7, 8], 0x03, 9);
        let plain = roce_frame(&headers(ip, 0xC001, vec![]), &bth, &body);
        for vlans in [vec![(0x8100, 5)], vec![(0x88A8, 7), (0x8100, 3)]] {
            let n = vlans.len();
            let f = roce_frame(&headers(ip, 0xC001, vlans), &bth, &body);
            assert_eq!(l3_of(&f), Some((14 + 4 * n, false)));
            assert!(icrc_ok(&f) && is_roce(&f));
            assert_eq!(f[f.len() - 4..], plain[plain.len() - 4..]);
        }
    }

    /// `zlib.crc32` in python3 over the masked stream, as reference/wire-formats.md §1.5
    /// builds it, agrees with [`icrc`] on the vectors and on built frames with tags, pads and
    /// set FECN/BECN.
    #[test]
    fn python_zlib_agrees() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let required = std::env::var("NICGEN_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
        if Command::new(&py).arg("--version").output().is_err() {
            assert!(
                !required,
                "{py} is required (NICGEN_REQUIRE_TOOLS=1) but does not run"
            );
            println!("skipped: {py} does not run (set NICGEN_REQUIRE_TOOLS=1 to fail instead)");
            return;
        }
        let mut frames: Vec<Vec<u8>> = vectors().into_iter().map(|v| v.1).collect();
        for (i, vlans) in [
            vec![],
            vec![(0x8100u16, 9u16)],
            vec![(0x88A8, 1), (0x8100, 2)],
        ]
        .into_iter()
        .enumerate()
        {
            let mut bth = Bth::new(opcode::RC_READ_RESPONSE_ONLY, 0xABCDE, 0xFFFFFF);
            bth.pad_cnt = 3;
            bth.becn = i == 1;
            bth.fecn = i == 2;
            let body: Vec<u8> = (0..(61 + i * 100)).map(|k| (k * 31 + i) as u8).collect();
            let ip6 = IpHeader::V6 {
                src: "2001:db8::1".parse().unwrap(),
                dst: "2001:db8::2".parse().unwrap(),
                traffic_class: 0x12,
                flow_label: 0xABCDE,
                hop_limit: 3,
            };
            for ip in [v4([10, 1, 2, 3], [10, 3, 2, 1], 0xFD, 0xBEEF), ip6] {
                frames.push(roce_frame(&headers(ip, 0xE000, vlans.clone()), &bth, &body));
            }
        }
        // The reference of §1.5, extended to a second tag (the same rule once more).
        let script = r#"
import sys, zlib
def roce_icrc(f):
    et = int.from_bytes(f[12:14], 'big'); off = 14
    while et in (0x8100, 0x88A8): et = int.from_bytes(f[off+2:off+4], 'big'); off += 4
    if et == 0x0800:
        ihl = (f[off] & 0xF) * 4
        ip = bytearray(f[off:off+ihl]); ip[1] = ip[8] = ip[10] = ip[11] = 0xFF
    else:
        ihl = 40
        ip = bytearray(f[off:off+40]); ip[0] |= 0x0F; ip[1:4] = b'\xff\xff\xff'; ip[7] = 0xFF
    l4 = off + ihl
    udp = bytearray(f[l4:l4+8]); udp[6] = udp[7] = 0xFF
    rest = bytearray(f[l4+8:-4]); rest[4] = 0xFF
    return zlib.crc32(b'\xff'*8 + ip + udp + rest)
for line in sys.stdin:
    print('%08x' % roce_icrc(bytes.fromhex(line.strip())))
"#;
        let mut child = Command::new(&py)
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input: String = frames
            .iter()
            .map(|f| f.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
            .collect();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<u32> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| u32::from_str_radix(l, 16).unwrap())
            .collect();
        let want: Vec<u32> = frames.iter().map(|f| icrc(f)).collect();
        assert_eq!(got, want);
        assert!(frames.iter().all(|f| icrc_ok(f)));
    }
}
