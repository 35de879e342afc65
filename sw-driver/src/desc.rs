//! mlx5 descriptors as typed values: send and receive WQEs, CQEs and EQEs, encoded to and
//! decoded from the bytes the NIC reads and writes in host memory
//! (`docs/wire-formats.md` §4.2-§4.8).
//!
//! Every field goes through the generated layouts of [`crate::regs::desc`] (big-endian
//! containers at fixed byte offsets); this module adds only the composition rules: which
//! segments follow which, how inline bytes continue into the following 16-byte slots, and how a
//! receive scatter list ends.
//!
//! A send WQE is a run of 16-byte segments (DS) in one or more 64-byte basic blocks (WQEBBs):
//!
//! | DS | segment | when |
//! |---|---|---|
//! | 0 | control: opcode, WQE index, SQN, DS count, `fm_ce_se` | always |
//! | 1 | Ethernet: software-parser offsets, `cs_flags`, `mss` (LSO; else 0), inline header size + its first 2 bytes, or VLAN insert | SEND, LSO, ENHANCED_MPSW |
//! | 2.. | the rest of the inline header, padded to 16 | inline header > 2 bytes |
//! | .. | data segments (byte count, lkey, address) and inline data segments | gather list |
//!
//! [`SendWqe::encode`] gives the WQE's bytes, whole WQEBBs, in WQE order; placing them in the
//! ring (where a WQE may wrap from the last slot to the first) is [`crate::ring`]'s job.

use thiserror::Error;

use crate::regs::consts::{cqe_opcode, cs_flags, event_type, fm_ce_se, misc, opcode, syndrome};
use crate::regs::desc::eth_seg::{
    SWP_INNER_L3_OFFSET, SWP_INNER_L4_OFFSET, SWP_OUTER_L3_OFFSET, SWP_OUTER_L4_OFFSET,
};
use crate::regs::desc::{cqe, ctrl_seg, data_seg, eqe, eth_seg};
use crate::regs::{DescField, Field};

/// Bytes of a send WQE basic block.
pub const WQEBB: usize = misc::WQEBB as usize;
/// Bytes of a data segment (and of every WQE segment slot).
pub const DS_BYTES: usize = data_seg::SIZE;
/// Largest send WQE in segments.
pub const MAX_SEND_DS: usize = misc::MAX_SEND_DS as usize;
/// Packets an enhanced multi-packet send WQE carries at most: one per data segment of the
/// largest WQE, less its control and Ethernet segments.
pub const MPWQE_MAX_PACKETS: usize = MAX_SEND_DS - 2;
/// Bytes of a CQE (and of an EQE).
pub const CQE_BYTES: usize = cqe::SIZE;
/// Bytes of an EQE.
pub const EQE_BYTES: usize = eqe::SIZE;
/// The lkey that ends a receive scatter list shorter than the WQE stride.
pub const INVALID_LKEY: u32 = misc::INVALID_LKEY;
/// Smallest and largest log2 receive WQE stride (`qcmd_in.log_stride`: 16 to 512 bytes).
pub const RECV_LOG_STRIDE: std::ops::RangeInclusive<u8> = 4..=9;

/// `eth_seg.vlan_cmd` value that inserts a C-VLAN tag.
///
/// Not in the generated map's constants (only in the field's doc); see the driver README.
pub const VLAN_INSERT: u16 = 0x8000;

/// First byte of inline data in an inline data segment: right after its byte-count word.
const INLINE_DATA_START: usize = data_seg::BYTE_COUNT.byte + data_seg::BYTE_COUNT.container;
/// First byte of the inline header in the Ethernet segment.
const INLINE_HDR_START: usize = eth_seg::INLINE_HDR_START.byte;
/// Inline header bytes that fit in the Ethernet segment itself.
const INLINE_HDR_IN_ETH: usize = eth_seg::SIZE - INLINE_HDR_START;

/// `rss_hash_type` bits 3:2, the IP hash type (not split out in the generated map).
const RSS_IP_TYPE: Field = Field { lsb: 2, bits: 2 };
/// `rss_hash_type` bits 7:6, the L4 hash type (not split out in the generated map).
const RSS_L4_TYPE: Field = Field { lsb: 6, bits: 2 };

/// Why a descriptor cannot be encoded or decoded.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DescError {
    /// The WQE needs more 16-byte segments than the device accepts.
    #[error("send WQE needs {ds} segments; the device takes at most {max}")]
    TooManySegments { ds: usize, max: usize },
    /// A byte count does not fit its 31-bit field.
    #[error("byte count {len} does not fit a data segment")]
    ByteCountTooLarge { len: usize },
    /// A receive WQE stride outside 16..=512 bytes.
    #[error("receive WQE log2 stride {log_stride} is outside 4..=9")]
    BadStride { log_stride: u8 },
    /// More scatter entries than the stride holds.
    #[error("receive WQE has {entries} scatter entries; a stride of {stride} bytes holds {max}")]
    ScatterTooLong {
        entries: usize,
        stride: usize,
        max: usize,
    },
    /// A receive WQE with no buffer.
    #[error("receive WQE has no scatter entry")]
    EmptyScatter,
    /// Fewer bytes than the descriptor claims.
    #[error("descriptor needs {need} bytes, only {have} given")]
    Truncated { need: usize, have: usize },
    /// Bytes that are not a well-formed WQE.
    #[error("malformed WQE: {0}")]
    Malformed(&'static str),
    /// A value that does not fit its field.
    #[error("{what} {value:#x} does not fit its field (at most {limit:#x})")]
    FieldTooLarge {
        what: &'static str,
        value: u64,
        limit: u64,
    },
}

fn put(buf: &mut [u8], field: DescField, value: impl Into<u64>) {
    field.set(buf, value.into());
}

fn flag(buf: &[u8], field: DescField) -> bool {
    field.get(buf) != 0
}

/// Segments needed for `bytes` of inline payload that start `offset` bytes into a segment.
fn ds_for(offset: usize, bytes: usize) -> usize {
    (offset + bytes).div_ceil(DS_BYTES)
}

fn need(buf: &[u8], need: usize) -> Result<(), DescError> {
    if buf.len() < need {
        Err(DescError::Truncated {
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Send WQE opcodes nicgen executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOpcode {
    /// No operation: completes without sending.
    Nop,
    /// Send a frame.
    Send,
    /// Send a super-frame the device cuts into TCP segments (mlx5 LSO, Linux TSO): the
    /// Ethernet segment's [`Lso`] gives the segment size and where the headers are, its inline
    /// header holds every header through the (inner) TCP header, the gather list the payload.
    Lso,
    /// Enhanced multi-packet send (mlx5 ENHANCED_MPSW, mlx5e's MPWQE): every gather entry is
    /// one packet, all with the Ethernet segment's checksum requests, which may have neither
    /// an inline header nor a VLAN insert; one CQE for the WQE. At most
    /// [`MPWQE_MAX_PACKETS`] packets.
    EnhancedMpsw,
}

impl SendOpcode {
    /// The `ctrl_seg.opcode` value.
    pub fn code(self) -> u8 {
        match self {
            SendOpcode::Nop => opcode::NOP as u8,
            SendOpcode::Send => opcode::SEND as u8,
            SendOpcode::Lso => opcode::LSO as u8,
            SendOpcode::EnhancedMpsw => opcode::ENHANCED_MPSW as u8,
        }
    }

    /// The opcode of a `ctrl_seg.opcode` value, if nicgen knows it.
    pub fn from_code(code: u8) -> Option<Self> {
        [
            SendOpcode::Nop,
            SendOpcode::Send,
            SendOpcode::Lso,
            SendOpcode::EnhancedMpsw,
        ]
        .into_iter()
        .find(|o| o.code() == code)
    }
}

/// Checksum insertion requests (`eth_seg.cs_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CsFlags {
    /// Insert the IPv4 header checksum.
    pub l3: bool,
    /// Insert the TCP/UDP checksum.
    pub l4: bool,
    /// Tunnelled: the inner IPv4 header checksum (mlx5e sets it; nicgen's device ignores it).
    pub inner_l3: bool,
    /// Tunnelled: the inner TCP/UDP checksum (as `inner_l3`).
    pub inner_l4: bool,
}

impl CsFlags {
    /// The `cs_flags` byte.
    pub fn bits(self) -> u8 {
        let mut b = 0;
        if self.l3 {
            b |= cs_flags::L3_CSUM;
        }
        if self.l4 {
            b |= cs_flags::L4_CSUM;
        }
        if self.inner_l3 {
            b |= cs_flags::L3_INNER_CSUM;
        }
        if self.inner_l4 {
            b |= cs_flags::L4_INNER_CSUM;
        }
        b as u8
    }

    /// The requests in a `cs_flags` byte (other bits ignored).
    pub fn from_bits(bits: u8) -> Self {
        let bits = bits as u32;
        CsFlags {
            l3: bits & cs_flags::L3_CSUM != 0,
            l4: bits & cs_flags::L4_CSUM != 0,
            inner_l3: bits & cs_flags::L3_INNER_CSUM != 0,
            inner_l4: bits & cs_flags::L4_INNER_CSUM != 0,
        }
    }
}

/// A data segment: `byte_count` bytes at bus address `addr` in memory region `lkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSeg {
    pub byte_count: u32,
    pub lkey: u32,
    pub addr: u64,
}

impl DataSeg {
    /// The scatter-list terminator (byte count 0, [`INVALID_LKEY`]).
    pub const TERMINATOR: DataSeg = DataSeg {
        byte_count: 0,
        lkey: INVALID_LKEY,
        addr: 0,
    };

    fn encode(&self, seg: &mut [u8]) -> Result<(), DescError> {
        if self.byte_count >= 1 << data_seg::BYTE_COUNT.bits {
            return Err(DescError::ByteCountTooLarge {
                len: self.byte_count as usize,
            });
        }
        put(seg, data_seg::BYTE_COUNT, self.byte_count);
        put(seg, data_seg::LKEY, self.lkey);
        put(seg, data_seg::ADDR, self.addr);
        Ok(())
    }

    fn decode(seg: &[u8]) -> Self {
        DataSeg {
            byte_count: data_seg::BYTE_COUNT.get(seg) as u32,
            lkey: data_seg::LKEY.get(seg) as u32,
            addr: data_seg::ADDR.get(seg),
        }
    }
}

/// One entry of a send WQE's gather list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gather {
    /// Bytes in host memory.
    Ptr(DataSeg),
    /// Bytes carried in the WQE itself (an inline data segment).
    Inline(Vec<u8>),
}

impl Gather {
    /// DS units the entry takes in the WQE.
    pub fn ds(&self) -> usize {
        match self {
            Gather::Ptr(_) => 1,
            Gather::Inline(d) => ds_for(INLINE_DATA_START, d.len()),
        }
    }

    /// Bytes this entry contributes to the frame.
    pub fn len(&self) -> usize {
        match self {
            Gather::Ptr(d) => d.byte_count as usize,
            Gather::Inline(d) => d.len(),
        }
    }

    /// Whether the entry contributes no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the Ethernet segment says about the frame's L2 header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum L2Header {
    /// Neither inline header nor VLAN insertion: the frame is all in the gather list.
    None,
    /// The frame's first bytes, carried in the WQE (`inline_hdr_sz` + bytes from eth_seg byte
    /// 14 on); the gather list continues the frame.
    Inline(Vec<u8>),
    /// Insert a C-VLAN tag with this TCI after the MAC addresses (no inline header).
    VlanInsert(u16),
}

/// The software-parser fields of an LSO's Ethernet segment (`eth_seg.swp_*`): header offsets
/// from the frame's start in 2-byte units, and `swp_flags`. Tunnelled (`inner_l3` != 0): the
/// outer IP and L4 (UDP or GRE) headers and the inner IP and TCP headers; plain (`inner_l3` =
/// 0, as mlx5e fills them for a frame without encapsulation): `outer_l3` and `outer_l4` are
/// the IP and TCP headers. [`crate::lso::LsoHeaders::swp`] computes them from a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Swp {
    pub outer_l4: u8,
    pub outer_l3: u8,
    pub inner_l4: u8,
    pub inner_l3: u8,
    /// `swp_flags` bits (`regs::consts::swp_flags`).
    pub flags: u8,
}

/// An LSO send's request: payload bytes per segment and where the headers are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Lso {
    /// `eth_seg.mss`.
    pub mss: u16,
    pub swp: Swp,
}

/// The Ethernet segment of a SEND, LSO or ENHANCED_MPSW.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthSeg {
    pub cs_flags: CsFlags,
    pub header: L2Header,
    /// The segmentation request: written whenever present; read back only from an LSO WQE
    /// (other opcodes leave the fields 0, and the device ignores them).
    pub lso: Option<Lso>,
}

impl EthSeg {
    fn ds(&self) -> usize {
        match &self.header {
            L2Header::Inline(h) => 1 + ds_for(0, h.len().saturating_sub(INLINE_HDR_IN_ETH)),
            _ => 1,
        }
    }
}

/// A send WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendWqe {
    pub opcode: SendOpcode,
    /// The producer counter of the WQE's first WQEBB.
    pub wqe_index: u16,
    /// Send queue number.
    pub sqn: u32,
    /// Ask for a CQE for this WQE (`fm_ce_se` CQ_UPDATE).
    pub cq_update: bool,
    /// The Ethernet segment (SEND, ENHANCED_MPSW); `None` for a NOP.
    pub eth: Option<EthSeg>,
    /// The gather list, in frame order (ENHANCED_MPSW: one packet per entry).
    pub gather: Vec<Gather>,
}

impl SendWqe {
    /// A NOP WQE (control segment only), completing with a CQE when `cq_update`.
    pub fn nop(wqe_index: u16, sqn: u32, cq_update: bool) -> Self {
        SendWqe {
            opcode: SendOpcode::Nop,
            wqe_index,
            sqn,
            cq_update,
            eth: None,
            gather: Vec::new(),
        }
    }

    /// Segments of the WQE, the control segment included.
    pub fn ds(&self) -> usize {
        1 + self.eth.as_ref().map_or(0, EthSeg::ds)
            + self.gather.iter().map(Gather::ds).sum::<usize>()
    }

    /// WQEBBs the WQE occupies.
    pub fn wqebbs(&self) -> usize {
        (self.ds() * DS_BYTES).div_ceil(WQEBB)
    }

    /// The WQE's bytes: whole WQEBBs, unused bytes zero.
    pub fn encode(&self) -> Result<Vec<u8>, DescError> {
        let ds = self.ds();
        if ds > MAX_SEND_DS {
            return Err(DescError::TooManySegments {
                ds,
                max: MAX_SEND_DS,
            });
        }
        let mut out = vec![0u8; self.wqebbs() * WQEBB];
        let ctrl = &mut out[..ctrl_seg::SIZE];
        put(ctrl, ctrl_seg::OPCODE, self.opcode.code());
        put(ctrl, ctrl_seg::WQE_INDEX, self.wqe_index);
        put(ctrl, ctrl_seg::QPN, self.sqn);
        put(ctrl, ctrl_seg::DS, ds as u64);
        if self.cq_update {
            put(ctrl, ctrl_seg::FM_CE_SE, fm_ce_se::CQ_UPDATE);
        }
        let mut at = ctrl_seg::SIZE;
        if let Some(eth) = &self.eth {
            let seg = &mut out[at..];
            put(seg, eth_seg::CS_FLAGS, eth.cs_flags.bits());
            put(seg, eth_seg::MSS, 0u8);
            if let Some(l) = eth.lso {
                put(seg, eth_seg::MSS, l.mss);
                put(seg, SWP_OUTER_L4_OFFSET, l.swp.outer_l4);
                put(seg, SWP_OUTER_L3_OFFSET, l.swp.outer_l3);
                put(seg, SWP_INNER_L4_OFFSET, l.swp.inner_l4);
                put(seg, SWP_INNER_L3_OFFSET, l.swp.inner_l3);
                put(seg, eth_seg::SWP_FLAGS, l.swp.flags);
            }
            match &eth.header {
                L2Header::None => {}
                L2Header::VlanInsert(tci) => {
                    put(seg, eth_seg::VLAN_CMD, VLAN_INSERT);
                    put(seg, eth_seg::VLAN_TCI, *tci);
                }
                L2Header::Inline(h) => {
                    put(seg, eth_seg::INLINE_HDR_SZ, h.len() as u64);
                    seg[INLINE_HDR_START..INLINE_HDR_START + h.len()].copy_from_slice(h);
                }
            }
            at += eth.ds() * DS_BYTES;
        }
        for g in &self.gather {
            let seg = &mut out[at..];
            match g {
                Gather::Ptr(d) => d.encode(seg)?,
                Gather::Inline(data) => {
                    if data.len() >= 1 << data_seg::BYTE_COUNT.bits {
                        return Err(DescError::ByteCountTooLarge { len: data.len() });
                    }
                    put(seg, data_seg::INLINE, 1u8);
                    put(seg, data_seg::BYTE_COUNT, data.len() as u64);
                    seg[INLINE_DATA_START..INLINE_DATA_START + data.len()].copy_from_slice(data);
                }
            }
            at += g.ds() * DS_BYTES;
        }
        Ok(out)
    }

    /// The WQE in `bytes` (at least its DS count × 16 bytes, in WQE order).
    pub fn decode(bytes: &[u8]) -> Result<Self, DescError> {
        need(bytes, ctrl_seg::SIZE)?;
        let opcode = SendOpcode::from_code(ctrl_seg::OPCODE.get(bytes) as u8)
            .ok_or(DescError::Malformed("unknown send opcode"))?;
        let ds = ctrl_seg::DS.get(bytes) as usize;
        if ds == 0 {
            return Err(DescError::Malformed("DS count 0"));
        }
        let end = ds * DS_BYTES;
        need(bytes, end)?;
        let fm = ctrl_seg::FM_CE_SE.get(bytes) as u32;
        let mut at = ctrl_seg::SIZE;
        let eth = if matches!(
            opcode,
            SendOpcode::Send | SendOpcode::Lso | SendOpcode::EnhancedMpsw
        ) {
            if at + eth_seg::SIZE > end {
                return Err(DescError::Malformed("SEND without an Ethernet segment"));
            }
            let seg = &bytes[at..end];
            let sz = eth_seg::INLINE_HDR_SZ.get(seg) as u16;
            let header = if sz & VLAN_INSERT != 0 {
                L2Header::VlanInsert(eth_seg::VLAN_TCI.get(seg) as u16)
            } else if sz == 0 {
                L2Header::None
            } else {
                let n = sz as usize;
                need(seg, INLINE_HDR_START + n)
                    .map_err(|_| DescError::Malformed("inline header beyond the DS count"))?;
                L2Header::Inline(seg[INLINE_HDR_START..INLINE_HDR_START + n].to_vec())
            };
            let byte = |f: DescField| f.get(seg) as u8;
            let eth = EthSeg {
                cs_flags: CsFlags::from_bits(eth_seg::CS_FLAGS.get(seg) as u8),
                header,
                lso: (opcode == SendOpcode::Lso).then(|| Lso {
                    mss: eth_seg::MSS.get(seg) as u16,
                    swp: Swp {
                        outer_l4: byte(SWP_OUTER_L4_OFFSET),
                        outer_l3: byte(SWP_OUTER_L3_OFFSET),
                        inner_l4: byte(SWP_INNER_L4_OFFSET),
                        inner_l3: byte(SWP_INNER_L3_OFFSET),
                        flags: byte(eth_seg::SWP_FLAGS),
                    },
                }),
            };
            at += eth.ds() * DS_BYTES;
            Some(eth)
        } else {
            None
        };
        let mut gather = Vec::new();
        while at < end {
            let seg = &bytes[at..end];
            let g = if flag(seg, data_seg::INLINE) {
                let n = data_seg::BYTE_COUNT.get(seg) as usize;
                need(seg, INLINE_DATA_START + n)
                    .map_err(|_| DescError::Malformed("inline data beyond the DS count"))?;
                Gather::Inline(seg[INLINE_DATA_START..INLINE_DATA_START + n].to_vec())
            } else {
                Gather::Ptr(DataSeg::decode(seg))
            };
            at += g.ds() * DS_BYTES;
            gather.push(g);
        }
        Ok(SendWqe {
            opcode,
            wqe_index: ctrl_seg::WQE_INDEX.get(bytes) as u16,
            sqn: ctrl_seg::QPN.get(bytes) as u32,
            cq_update: fm & fm_ce_se::CQ_UPDATE != 0,
            eth,
            gather,
        })
    }
}

/// A receive WQE: a scatter list of buffers, filled in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvWqe {
    pub scatter: Vec<DataSeg>,
}

impl RecvWqe {
    /// The WQE's bytes for a ring of `2^log_stride`-byte WQEs: the data segments, then (when
    /// the stride has room) the terminator, then zeros.
    pub fn encode(&self, log_stride: u8) -> Result<Vec<u8>, DescError> {
        if !RECV_LOG_STRIDE.contains(&log_stride) {
            return Err(DescError::BadStride { log_stride });
        }
        let stride = 1usize << log_stride;
        let max = stride / DS_BYTES;
        if self.scatter.is_empty() {
            return Err(DescError::EmptyScatter);
        }
        if self.scatter.len() > max {
            return Err(DescError::ScatterTooLong {
                entries: self.scatter.len(),
                stride,
                max,
            });
        }
        let mut out = vec![0u8; stride];
        let terminator = (self.scatter.len() < max).then_some(DataSeg::TERMINATOR);
        for (seg, d) in out
            .chunks_exact_mut(DS_BYTES)
            .zip(self.scatter.iter().chain(terminator.iter()))
        {
            d.encode(seg)?;
        }
        Ok(out)
    }

    /// The scatter list in a receive WQE's bytes (one stride), up to the terminator.
    pub fn decode(bytes: &[u8]) -> Result<Self, DescError> {
        let scatter: Vec<DataSeg> = bytes
            .chunks_exact(DS_BYTES)
            .map(DataSeg::decode)
            .take_while(|d| !(d.byte_count == 0 && d.lkey == INVALID_LKEY))
            .collect();
        if scatter.is_empty() {
            return Err(DescError::EmptyScatter);
        }
        Ok(RecvWqe { scatter })
    }
}

coded_enum! {
    /// CQE opcodes (`cqe.opcode`).
    CqeOpcode: u8 {
        /// Send completion.
        Req = cqe_opcode::REQ,
        /// Receive completion.
        RespSend = cqe_opcode::RESP_SEND,
        /// Send completion in error.
        ReqErr = cqe_opcode::REQ_ERR,
        /// Receive completion in error.
        RespErr = cqe_opcode::RESP_ERR,
        /// The initial value: never written by the NIC.
        Invalid = cqe_opcode::INVALID,
    }
}

impl CqeOpcode {
    /// Whether the CQE reports an error (and carries a syndrome).
    pub fn is_error(self) -> bool {
        matches!(self, CqeOpcode::ReqErr | CqeOpcode::RespErr)
    }
}

coded_enum! {
    /// Error CQE syndromes (`cqe.syndrome`).
    Syndrome: u8 {
        /// Zero length or a length over the maximum.
        LocalLength = syndrome::LOCAL_LENGTH,
        /// Unknown opcode or malformed WQE.
        LocalQpOp = syndrome::LOCAL_QP_OP,
        /// A gather or scatter outside its memory region.
        LocalProt = syndrome::LOCAL_PROT,
        /// Flushed: the queue was in error.
        WrFlush = syndrome::WR_FLUSH,
        /// A DMA read answered with an error.
        LocalAccess = syndrome::LOCAL_ACCESS,
    }
}

coded_enum! {
    /// L3 header type of a received frame (`cqe.l3_type`).
    L3Type: u8 {
        None = 0,
        Ipv6 = 1,
        Ipv4 = 2,
    }
}

coded_enum! {
    /// L4 header type of a received frame (`cqe.l4_type`).
    L4Type: u8 {
        None = 0,
        Tcp = 1,
        Udp = 2,
    }
}

/// The RSS hash type byte of a receive CQE (`cqe.rss_hash_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RssHashType(pub u8);

impl RssHashType {
    /// What the hash covered at L3: 0 nothing, 1 IPv4, 2 IPv6.
    pub fn ip(self) -> u8 {
        RSS_IP_TYPE.get(self.0 as u32) as u8
    }
    /// What the hash covered at L4: 0 nothing, 1 TCP, 2 UDP.
    pub fn l4(self) -> u8 {
        RSS_L4_TYPE.get(self.0 as u32) as u8
    }
    /// The byte for the given IP and L4 types.
    pub fn new(ip: u8, l4: u8) -> Self {
        RssHashType((RSS_IP_TYPE.put(ip as u32) | RSS_L4_TYPE.put(l4 as u32)) as u8)
    }
}

/// The error part of an error CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeError {
    pub syndrome: Syndrome,
    /// nicgen: the index of the failing segment.
    pub vendor_err_synd: u8,
}

/// A completion queue entry, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    pub opcode: CqeOpcode,
    /// The owner bit.
    pub owner: bool,
    /// CQE format (0: normal).
    pub format: u8,
    /// RX: bytes written; send: bytes sent.
    pub byte_cnt: u32,
    /// Checksum-complete: ones'-complement sum of the bytes after the L3 header.
    pub check_sum: u16,
    pub l2_ok: bool,
    pub l3_ok: bool,
    pub l4_ok: bool,
    /// `flags_rqpn` L3 header type (1 IPv6, 2 IPv4).
    pub l3_hdr: u8,
    pub l3_type: L3Type,
    pub l4_type: L4Type,
    pub ip_frag: bool,
    /// A VLAN tag was stripped; its TCI is `vlan_info`.
    pub cv: bool,
    pub vlan_info: u16,
    pub rss_hash: u32,
    pub rss_hash_type: RssHashType,
    /// The WQE completed (send: the last of a batch; receive: the consumed WQE; striding
    /// receive: the frame's first stride).
    pub wqe_counter: u16,
    /// Striding receive: the WQE the frame's strides are in (mlx5 `wqe_id`); 0 otherwise.
    pub wqe_id: u16,
    /// SQ or RQ number.
    pub qpn: u32,
    /// Send completions: the opcode of the completed WQE.
    pub s_wqe_opcode: u8,
    /// Error CQEs: syndrome and vendor syndrome.
    pub error: Option<CqeError>,
    /// Device cycle counter at completion; 0 in error CQEs, whose bytes 0x36-0x37 carry the
    /// syndromes instead.
    pub timestamp: u64,
    /// The frame was delivered whole with the inner offloads: `l3_ok` and `l4_ok` cover both
    /// the outer and the inner headers and RSS hashed the inner ones; the L3/L4 types and
    /// checksum are the outer headers' (a Linux driver reports CHECKSUM_UNNECESSARY at
    /// level 1).
    pub tunneled: bool,
    /// The frame was de-capsulated: the L3/L4 fields, verdicts, checksum and RSS are the
    /// inner frame's.
    pub decapped: bool,
    /// The tunnel the outer headers announce: 0 none, 1 VXLAN, 2 NVGRE.
    pub tunnel_kind: u8,
    /// Its VNI or VSID (well-formed tunnels).
    pub tunnel_id: u32,
    /// Why it is malformed (0 for none).
    pub tunnel_bad: u8,
}

impl Cqe {
    /// The stripped VLAN TCI, if a tag was stripped.
    pub fn vlan(&self) -> Option<u16> {
        self.cv.then_some(self.vlan_info)
    }

    /// Decode a CQE.
    pub fn decode(b: &[u8; CQE_BYTES]) -> Self {
        let opcode = CqeOpcode::from_code(cqe::OPCODE.get(b) as u8);
        let error = opcode.is_error().then(|| CqeError {
            syndrome: Syndrome::from_code(cqe::SYNDROME.get(b) as u8),
            vendor_err_synd: cqe::VENDOR_ERR_SYND.get(b) as u8,
        });
        Cqe {
            opcode,
            owner: flag(b, cqe::OWNER),
            format: cqe::FORMAT.get(b) as u8,
            byte_cnt: cqe::BYTE_CNT.get(b) as u32,
            check_sum: cqe::CHECK_SUM.get(b) as u16,
            l2_ok: flag(b, cqe::L2_OK),
            l3_ok: flag(b, cqe::L3_OK),
            l4_ok: flag(b, cqe::L4_OK),
            l3_hdr: cqe::L3_HDR.get(b) as u8,
            l3_type: L3Type::from_code(cqe::L3_TYPE.get(b) as u8),
            l4_type: L4Type::from_code(cqe::L4_TYPE.get(b) as u8),
            ip_frag: flag(b, cqe::IP_FRAG),
            cv: flag(b, cqe::CV),
            vlan_info: cqe::VLAN_INFO.get(b) as u16,
            rss_hash: cqe::RSS_HASH_RESULT.get(b) as u32,
            rss_hash_type: RssHashType(cqe::RSS_HASH_TYPE.get(b) as u8),
            wqe_counter: cqe::WQE_COUNTER.get(b) as u16,
            wqe_id: cqe::WQE_ID.get(b) as u16,
            qpn: cqe::QPN.get(b) as u32,
            s_wqe_opcode: cqe::S_WQE_OPCODE.get(b) as u8,
            timestamp: if error.is_some() {
                0
            } else {
                cqe::TIMESTAMP.get(b)
            },
            error,
            tunneled: flag(b, cqe::TUNNELED),
            decapped: flag(b, cqe::DECAPPED),
            tunnel_kind: cqe::TUNNEL_KIND.get(b) as u8,
            tunnel_id: cqe::TUNNEL_ID.get(b) as u32,
            tunnel_bad: cqe::TUNNEL_BAD.get(b) as u8,
        }
    }

    /// Encode the CQE (what the device writes; for tests and device models).
    pub fn encode(&self) -> [u8; CQE_BYTES] {
        let mut b = [0u8; CQE_BYTES];
        put(&mut b, cqe::RSS_HASH_RESULT, self.rss_hash);
        put(&mut b, cqe::TUNNELED, self.tunneled);
        put(&mut b, cqe::DECAPPED, self.decapped);
        put(&mut b, cqe::TUNNEL_KIND, self.tunnel_kind);
        put(&mut b, cqe::TUNNEL_ID, self.tunnel_id);
        put(&mut b, cqe::TUNNEL_BAD, self.tunnel_bad);
        put(&mut b, cqe::RSS_HASH_TYPE, self.rss_hash_type.0);
        put(&mut b, cqe::CHECK_SUM, self.check_sum);
        put(&mut b, cqe::L3_HDR, self.l3_hdr);
        put(&mut b, cqe::L2_OK, self.l2_ok);
        put(&mut b, cqe::L3_OK, self.l3_ok);
        put(&mut b, cqe::L4_OK, self.l4_ok);
        put(&mut b, cqe::CV, self.cv);
        put(&mut b, cqe::IP_FRAG, self.ip_frag);
        put(&mut b, cqe::L3_TYPE, self.l3_type.code());
        put(&mut b, cqe::L4_TYPE, self.l4_type.code());
        put(&mut b, cqe::VLAN_INFO, self.vlan_info);
        put(&mut b, cqe::BYTE_CNT, self.byte_cnt);
        match self.error {
            Some(e) => {
                put(&mut b, cqe::VENDOR_ERR_SYND, e.vendor_err_synd);
                put(&mut b, cqe::SYNDROME, e.syndrome.code());
            }
            None => put(&mut b, cqe::TIMESTAMP, self.timestamp),
        }
        put(&mut b, cqe::QPN, self.qpn);
        put(&mut b, cqe::S_WQE_OPCODE, self.s_wqe_opcode);
        put(&mut b, cqe::WQE_COUNTER, self.wqe_counter);
        put(&mut b, cqe::WQE_ID, self.wqe_id);
        put(&mut b, cqe::OWNER, self.owner);
        put(&mut b, cqe::FORMAT, self.format);
        put(&mut b, cqe::OPCODE, self.opcode.code());
        b
    }

    /// The bytes every CQE of a new ring starts with: opcode INVALID, owner 1 (`op_own` 0xF1,
    /// as Linux), so the first pass through the ring is not taken for new entries.
    pub fn initial() -> [u8; CQE_BYTES] {
        let mut b = [0u8; CQE_BYTES];
        put(&mut b, cqe::OPCODE, cqe_opcode::INVALID);
        put(&mut b, cqe::OWNER, true);
        b
    }
}

coded_enum! {
    /// EQE event types (`eqe.event_type`).
    EventType: u8 {
        /// A CQE was written to an armed CQ (`Eqe::cqn` names it).
        Completion = event_type::COMPLETION,
        /// CQ overrun.
        CqError = event_type::CQ_ERROR,
        /// A work queue went to the error state.
        WqCatas = event_type::WQ_CATAS,
    }
}

/// An event queue entry, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eqe {
    pub event_type: EventType,
    pub sub_type: u8,
    /// Completion events: the CQ.
    pub cqn: u32,
    pub owner: bool,
}

impl Eqe {
    /// Decode an EQE.
    pub fn decode(b: &[u8; EQE_BYTES]) -> Self {
        Eqe {
            event_type: EventType::from_code(eqe::EVENT_TYPE.get(b) as u8),
            sub_type: eqe::SUB_TYPE.get(b) as u8,
            cqn: eqe::CQN.get(b) as u32,
            owner: flag(b, eqe::OWNER),
        }
    }

    /// Encode the EQE (for tests and device models).
    pub fn encode(&self) -> [u8; EQE_BYTES] {
        let mut b = [0u8; EQE_BYTES];
        put(&mut b, eqe::EVENT_TYPE, self.event_type.code());
        put(&mut b, eqe::SUB_TYPE, self.sub_type);
        put(&mut b, eqe::CQN, self.cqn);
        put(&mut b, eqe::OWNER, self.owner);
        b
    }

    /// The bytes every EQE of a new ring starts with: owner 1.
    pub fn initial() -> [u8; EQE_BYTES] {
        let mut b = [0u8; EQE_BYTES];
        put(&mut b, eqe::OWNER, true);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// wire-formats.md §4.4, the worked example: Ethernet SEND of a 60-byte frame, SQN 0x123,
    /// producer counter 5, L2 inline (18 bytes), cs_flags 0xC0, lkey 0x1234.
    fn worked_example() -> (SendWqe, Vec<u8>) {
        let header = hex("02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00 00 30");
        let wqe = SendWqe {
            opcode: SendOpcode::Send,
            wqe_index: 5,
            sqn: 0x123,
            cq_update: true,
            eth: Some(EthSeg {
                cs_flags: CsFlags {
                    l3: true,
                    l4: true,
                    ..CsFlags::default()
                },
                header: L2Header::Inline(header),
                lso: None,
            }),
            gather: vec![Gather::Ptr(DataSeg {
                byte_count: 42,
                lkey: 0x1234,
                addr: 0x1_2345_6000,
            })],
        };
        let bytes = hex("00 00 05 0a 00 01 23 04 00 00 00 08 00 00 00 00
             00 00 00 00 c0 00 00 00 00 00 00 00 00 12 02 00
             00 00 00 02 02 00 00 00 00 01 08 00 45 00 00 30
             00 00 00 2a 00 00 12 34 00 00 00 01 23 45 60 00");
        (wqe, bytes)
    }

    #[test]
    fn worked_example_encodes_byte_for_byte() {
        let (wqe, bytes) = worked_example();
        assert_eq!(wqe.ds(), 4);
        assert_eq!(wqe.wqebbs(), 1);
        assert_eq!(wqe.encode().unwrap(), bytes);
        // The doorbell payload is the first 8 bytes of the control segment.
        assert_eq!(&bytes[..8], &hex("00 00 05 0a 00 01 23 04")[..]);
    }

    #[test]
    fn worked_example_decodes() {
        let (wqe, bytes) = worked_example();
        assert_eq!(SendWqe::decode(&bytes).unwrap(), wqe);
    }

    #[test]
    fn vlan_insert_has_no_inline_and_gathers_several_buffers() {
        let wqe = SendWqe {
            opcode: SendOpcode::Send,
            wqe_index: 0xFFFF,
            sqn: 7,
            cq_update: true,
            eth: Some(EthSeg {
                cs_flags: CsFlags {
                    l4: true,
                    ..CsFlags::default()
                },
                header: L2Header::VlanInsert(0x6064),
                lso: None,
            }),
            gather: vec![
                Gather::Ptr(DataSeg {
                    byte_count: 14,
                    lkey: 0,
                    addr: 0x1000,
                }),
                Gather::Ptr(DataSeg {
                    byte_count: 100,
                    lkey: 0,
                    addr: 0x2000,
                }),
                Gather::Ptr(DataSeg {
                    byte_count: 5,
                    lkey: 1,
                    addr: 0xFFFF_FFFF_0000,
                }),
            ],
        };
        let b = wqe.encode().unwrap();
        assert_eq!(wqe.ds(), 5);
        assert_eq!(b.len(), 2 * WQEBB);
        // eth seg: cs 0x80, vlan_cmd 0x8000, TCI 0x6064
        assert_eq!(
            &b[16..32],
            &hex("00 00 00 00 80 00 00 00 00 00 00 00 80 00 60 64")[..]
        );
        assert_eq!(
            &b[64..80],
            &hex("00 00 00 05 00 00 00 01 00 00 ff ff ff ff 00 00")[..]
        );
        assert!(b[80..].iter().all(|&x| x == 0));
        assert_eq!(SendWqe::decode(&b).unwrap(), wqe);
    }

    #[test]
    fn long_inline_header_and_inline_data_span_wqebbs() {
        // 50-byte inline header: 2 in the eth seg + 48 in 3 more slots; inline data of 13
        // bytes: 4 + 13 = 17 bytes -> 2 slots; one pointer.
        let hdr: Vec<u8> = (0..50).collect();
        let data: Vec<u8> = (100..113).collect();
        let wqe = SendWqe {
            opcode: SendOpcode::Send,
            wqe_index: 9,
            sqn: 1,
            cq_update: false,
            eth: Some(EthSeg {
                cs_flags: CsFlags::default(),
                header: L2Header::Inline(hdr.clone()),
                lso: None,
            }),
            gather: vec![
                Gather::Inline(data.clone()),
                Gather::Ptr(DataSeg {
                    byte_count: 3,
                    lkey: 2,
                    addr: 0x40,
                }),
            ],
        };
        assert_eq!(wqe.ds(), 1 + 4 + 2 + 1);
        let b = wqe.encode().unwrap();
        assert_eq!(b.len(), 2 * WQEBB);
        assert_eq!(b[11], 0, "no CQ_UPDATE");
        assert_eq!(&b[16 + 12..16 + 16], &[0, 50, 0, 1]);
        assert_eq!(&b[32..80], &hdr[2..]);
        // inline data segment at DS 5 (byte 80): 0x8000000d then the bytes
        assert_eq!(&b[80..84], &[0x80, 0, 0, 13]);
        assert_eq!(&b[84..97], &data[..]);
        assert_eq!(&b[97..112], &[0u8; 15]);
        assert_eq!(&b[112..116], &[0, 0, 0, 3]);
        assert_eq!(SendWqe::decode(&b).unwrap(), wqe);
    }

    #[test]
    fn nop_is_one_segment() {
        let b = SendWqe::nop(3, 0x42, true).encode().unwrap();
        assert_eq!(
            &b[..16],
            &hex("00 00 03 00 00 00 42 01 00 00 00 08 00 00 00 00")[..]
        );
        assert_eq!(b.len(), WQEBB);
        assert_eq!(SendWqe::decode(&b).unwrap(), SendWqe::nop(3, 0x42, true));
    }

    #[test]
    fn oversized_wqes_are_refused() {
        let wqe = SendWqe {
            gather: vec![
                Gather::Ptr(DataSeg {
                    byte_count: 1,
                    lkey: 0,
                    addr: 0
                });
                MAX_SEND_DS
            ],
            ..SendWqe::nop(0, 0, true)
        };
        assert_eq!(
            wqe.encode(),
            Err(DescError::TooManySegments {
                ds: MAX_SEND_DS + 1,
                max: MAX_SEND_DS
            })
        );
        let wqe = SendWqe {
            gather: vec![Gather::Ptr(DataSeg {
                byte_count: 1 << 31,
                lkey: 0,
                addr: 0,
            })],
            ..SendWqe::nop(0, 0, true)
        };
        assert_eq!(
            wqe.encode(),
            Err(DescError::ByteCountTooLarge { len: 1 << 31 })
        );
    }

    #[test]
    fn malformed_wqes_are_refused() {
        let mut b = SendWqe::nop(0, 0, true).encode().unwrap();
        b[3] = 0x33;
        assert_eq!(
            SendWqe::decode(&b),
            Err(DescError::Malformed("unknown send opcode"))
        );
        b[3] = 0x0A; // SEND with ds 1: no room for the Ethernet segment
        assert!(matches!(SendWqe::decode(&b), Err(DescError::Malformed(_))));
        b[7] = 9; // claims 9 segments, 64 bytes given
        assert_eq!(
            SendWqe::decode(&b),
            Err(DescError::Truncated {
                need: 144,
                have: 64
            })
        );
    }

    #[test]
    fn receive_wqe_terminates_short_scatter_lists() {
        let one = RecvWqe {
            scatter: vec![DataSeg {
                byte_count: 2048,
                lkey: 0,
                addr: 0x1_0000_0800,
            }],
        };
        // stride 16: exactly one entry, no terminator
        assert_eq!(
            one.encode(4).unwrap(),
            hex("00 00 08 00 00 00 00 00 00 00 00 01 00 00 08 00")
        );
        // stride 64: entry, terminator, zeros
        let b = one.encode(6).unwrap();
        assert_eq!(b.len(), 64);
        assert_eq!(
            &b[16..32],
            &hex("00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00")[..]
        );
        assert!(b[32..].iter().all(|&x| x == 0));
        assert_eq!(RecvWqe::decode(&b).unwrap(), one);
        // a full list of 4 in a 64-byte stride: no terminator
        let four = RecvWqe {
            scatter: (0..4)
                .map(|i| DataSeg {
                    byte_count: 100 + i,
                    lkey: i,
                    addr: 0x100 * i as u64,
                })
                .collect(),
        };
        let b = four.encode(6).unwrap();
        assert_eq!(RecvWqe::decode(&b).unwrap(), four);
        assert_eq!(
            four.encode(5),
            Err(DescError::ScatterTooLong {
                entries: 4,
                stride: 32,
                max: 2
            })
        );
        assert_eq!(four.encode(3), Err(DescError::BadStride { log_stride: 3 }));
        assert_eq!(
            four.encode(10),
            Err(DescError::BadStride { log_stride: 10 })
        );
        assert_eq!(
            RecvWqe { scatter: vec![] }.encode(4),
            Err(DescError::EmptyScatter)
        );
    }

    /// A receive CQE built by hand from the §4.7 table.
    #[test]
    fn receive_cqe_decodes() {
        let mut b = [0u8; 64];
        b[0x02..0x04].copy_from_slice(&[0x03, 0x04]); // wqe_id
        b[0x0C..0x10].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // rss hash
        b[0x10] = 0x44; // IPv4 (1 << 2), TCP (1 << 6)
        b[0x14..0x16].copy_from_slice(&[0x12, 0x34]); // check_sum
        b[0x18] = 0x02; // l3_hdr IPv4 in bits 25:24
        b[0x1C] = 0x07; // l2, l3, l4 ok
        b[0x1D] = 0x19; // L4 TCP (1 << 4), L3 IPv4 (2 << 2), cv
        b[0x1E..0x20].copy_from_slice(&[0x20, 0x05]); // TCI
        b[0x2C..0x30].copy_from_slice(&[0, 0, 0x05, 0xEA]); // 1514 bytes
        b[0x30..0x38].copy_from_slice(&[0, 0, 0, 1, 2, 3, 4, 5]);
        b[0x38..0x3C].copy_from_slice(&[0, 0, 0, 3]); // RQ 3
        b[0x3C..0x3E].copy_from_slice(&[0x01, 0x02]);
        b[0x3F] = 0x21; // RESP_SEND, owner 1
        b[0x00] = 0x80; // decapped
        b[0x28..0x2C].copy_from_slice(&[0x01, 0x00, 0x12, 0x34]); // VXLAN, VNI 0x1234
        let c = Cqe::decode(&b);
        assert_eq!(
            c,
            Cqe {
                opcode: CqeOpcode::RespSend,
                owner: true,
                format: 0,
                byte_cnt: 1514,
                check_sum: 0x1234,
                l2_ok: true,
                l3_ok: true,
                l4_ok: true,
                l3_hdr: 2,
                l3_type: L3Type::Ipv4,
                l4_type: L4Type::Tcp,
                ip_frag: false,
                cv: true,
                vlan_info: 0x2005,
                rss_hash: 0xdeadbeef,
                rss_hash_type: RssHashType(0x44),
                wqe_counter: 0x0102,
                wqe_id: 0x0304,
                qpn: 3,
                s_wqe_opcode: 0,
                error: None,
                timestamp: 0x01_0203_0405,
                tunneled: false,
                decapped: true,
                tunnel_kind: 1,
                tunnel_id: 0x00_1234,
                tunnel_bad: 0,
            }
        );
        assert_eq!(c.vlan(), Some(0x2005));
        assert_eq!((c.rss_hash_type.ip(), c.rss_hash_type.l4()), (1, 1));
        assert_eq!(RssHashType::new(2, 2), RssHashType(0x88));
        assert_eq!(c.encode(), b);
        // Byte 0x00 bit 0: delivered whole with the inner offloads.
        b[0x00] = 0x01;
        let t = Cqe::decode(&b);
        assert!(t.tunneled && !t.decapped);
        assert_eq!(t.encode(), b);
    }

    #[test]
    fn error_cqes_decode_with_syndromes() {
        let mut b = [0u8; 64];
        b[0x36] = 0x02; // vendor: segment 2
        b[0x37] = 0x04; // local protection
        b[0x38..0x3C].copy_from_slice(&[0x0A, 0x00, 0x00, 0x05]); // SEND, SQ 5
        b[0x3C..0x3E].copy_from_slice(&[0x00, 0x09]);
        b[0x3F] = 0xD0; // REQ_ERR, owner 0
        let c = Cqe::decode(&b);
        assert_eq!(c.opcode, CqeOpcode::ReqErr);
        assert!(!c.owner);
        assert_eq!(
            c.error,
            Some(CqeError {
                syndrome: Syndrome::LocalProt,
                vendor_err_synd: 2
            })
        );
        assert_eq!(
            (c.qpn, c.s_wqe_opcode, c.wqe_counter, c.timestamp),
            (5, 0x0A, 9, 0)
        );
        assert_eq!(c.encode(), b);

        b[0x37] = 0x05;
        b[0x3F] = 0xE1; // RESP_ERR, flushed
        let c = Cqe::decode(&b);
        assert_eq!(c.opcode, CqeOpcode::RespErr);
        assert_eq!(c.error.map(|e| e.syndrome), Some(Syndrome::WrFlush));
        b[0x37] = 0x77;
        assert_eq!(
            Cqe::decode(&b).error.map(|e| e.syndrome),
            Some(Syndrome::Other(0x77))
        );
        // a normal CQE has no error even with those bytes set
        b[0x3F] = 0x00;
        assert_eq!(Cqe::decode(&b).error, None);
    }

    #[test]
    fn initial_entries_are_invalid_and_owned_by_pass_one() {
        let c = Cqe::initial();
        assert_eq!(c[63], 0xF1);
        assert_eq!(Cqe::decode(&c).opcode, CqeOpcode::Invalid);
        let e = Eqe::initial();
        assert_eq!(e[63], 0x01);
        assert!(Eqe::decode(&e).owner);
    }

    /// An LSO WQE's Ethernet segment carries its request; it decodes back, and the same
    /// fields in a SEND are not read as one.
    #[test]
    fn lso_wqes_carry_mss_and_software_parser_fields() {
        let hdr: Vec<u8> = (0..54).collect();
        let lso = Lso {
            mss: 1448,
            swp: Swp {
                outer_l4: 17,
                outer_l3: 7,
                inner_l4: 0,
                inner_l3: 0,
                flags: 0x10,
            },
        };
        let mut wqe = SendWqe {
            opcode: SendOpcode::Lso,
            wqe_index: 3,
            sqn: 2,
            cq_update: true,
            eth: Some(EthSeg {
                cs_flags: CsFlags::from_bits(0xC0),
                header: L2Header::Inline(hdr),
                lso: Some(lso),
            }),
            gather: vec![Gather::Ptr(DataSeg {
                byte_count: 4000,
                lkey: 1,
                addr: 0x9000,
            })],
        };
        let b = wqe.encode().unwrap();
        assert_eq!((b[3], b[7]), (0x0E, 7));
        assert_eq!(
            &b[16..30],
            &hex("11 07 00 00 c0 10 05 a8 00 00 00 00 00 36")[..]
        );
        assert_eq!(SendWqe::decode(&b).unwrap(), wqe);
        let mut send = b.clone();
        send[3] = 0x0A;
        wqe.opcode = SendOpcode::Send;
        if let Some(e) = wqe.eth.as_mut() {
            e.lso = None;
        }
        assert_eq!(SendWqe::decode(&send).unwrap(), wqe);
    }

    #[test]
    fn codes_round_trip() {
        for c in 0..16 {
            assert_eq!(CqeOpcode::from_code(c).code(), c);
        }
        for c in 0..=255 {
            assert_eq!(Syndrome::from_code(c).code(), c);
            assert_eq!(EventType::from_code(c).code(), c);
            // L3, L4, inner L3, inner L4; the low nibble is not a checksum request.
            assert_eq!(CsFlags::from_bits(c).bits(), c & 0xF0);
        }
        assert_eq!(SendOpcode::from_code(0x0A), Some(SendOpcode::Send));
        assert_eq!(SendOpcode::from_code(0x0E), Some(SendOpcode::Lso));
        assert_eq!(SendOpcode::Lso.code(), 0x0E);
        assert_eq!(SendOpcode::from_code(0x0B), None);
    }

    #[test]
    fn eqe_round_trips() {
        let e = Eqe {
            event_type: EventType::Completion,
            sub_type: 0,
            cqn: 0x12_3456,
            owner: true,
        };
        let b = e.encode();
        assert_eq!(b[1], 0x00);
        assert_eq!(&b[0x38..0x3C], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(b[0x3F], 1);
        assert_eq!(Eqe::decode(&b), e);
        let w = Eqe {
            event_type: EventType::WqCatas,
            sub_type: 3,
            cqn: 0,
            owner: false,
        };
        assert_eq!(w.encode()[1], 0x05);
        assert_eq!(Eqe::decode(&w.encode()), w);
    }

    #[test]
    fn cqes_round_trip() {
        // A walk over varied values; every field must survive encode -> decode.
        for i in 0..64u32 {
            let err = i % 3 == 0;
            let c = Cqe {
                opcode: if err {
                    CqeOpcode::RespErr
                } else {
                    CqeOpcode::Req
                },
                owner: i % 2 == 1,
                format: 0,
                byte_cnt: i * 977,
                check_sum: (i * 4099) as u16,
                l2_ok: i & 1 != 0,
                l3_ok: i & 2 != 0,
                l4_ok: i & 4 != 0,
                l3_hdr: (i % 3) as u8,
                l3_type: L3Type::from_code((i % 4) as u8),
                l4_type: L4Type::from_code((i % 8) as u8),
                ip_frag: i & 8 != 0,
                cv: i & 16 != 0,
                vlan_info: (i * 31) as u16,
                rss_hash: i.wrapping_mul(0x9E37_79B9),
                rss_hash_type: RssHashType::new((i % 3) as u8, (i % 4) as u8),
                wqe_counter: (i * 1031) as u16,
                wqe_id: (i * 2053) as u16,
                qpn: i * 0x1_0101,
                s_wqe_opcode: i as u8,
                error: err.then_some(CqeError {
                    syndrome: Syndrome::from_code(i as u8),
                    vendor_err_synd: (i * 7) as u8,
                }),
                timestamp: if err { 0 } else { (i as u64) << 40 | 0xABCD },
                tunneled: i & 32 != 0,
                decapped: i % 5 == 1,
                tunnel_kind: (i % 3) as u8,
                tunnel_id: i.wrapping_mul(0x0001_3579) & 0xFF_FFFF,
                tunnel_bad: (i % 8) as u8,
            };
            assert_eq!(Cqe::decode(&c.encode()), c, "case {i}");
        }
    }
}
