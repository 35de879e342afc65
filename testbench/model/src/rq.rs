//! Receive queues (mlx5 cyclic RQ, `docs/wire-formats.md` §4.6–4.7) on bytes: where a
//! delivered frame lands in host memory and the completion it gets. Offsets are written here
//! from the reference, independently of the register map.

use crate::cq::Cmpl;
use crate::sq::{syndrome, Mr};

/// What the RX path reports about a delivered frame (the fields a CQE carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxInfo {
    /// Stripped VLAN tag (TCI).
    pub vlan: Option<u16>,
    /// 0 none, 1 IPv4, 2 IPv6.
    pub l3: u8,
    /// 0 none, 1 TCP, 2 UDP.
    pub l4: u8,
    /// IP header verdict.
    pub l3_ok: bool,
    /// TCP/UDP checksum verdict.
    pub l4_ok: bool,
    /// Checksum-complete value.
    pub csum: u16,
    /// RSS type code (1 IPv4, 2 TCP/IPv4, 3 UDP/IPv4, 4 IPv6, 5 TCP/IPv6, 6 UDP/IPv6).
    pub rss_type: u8,
    /// RSS hash.
    pub rss_hash: u32,
}

/// The mlx5 CQE `rss_hash_type` byte for an RSS type code: bits 3:2 the IP fields hashed
/// (1 IPv4, 2 IPv6), bits 7:6 the L4 fields (1 TCP, 2 UDP).
pub fn cqe_rss_hash_type(t: u8) -> u8 {
    let ip = match t {
        1..=3 => 1,
        4..=6 => 2,
        _ => 0,
    };
    let l4 = match t {
        2 | 5 => 1,
        3 | 6 => 2,
        _ => 0,
    };
    ip << 2 | l4 << 6
}

/// One receive queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rq {
    /// RQ number.
    pub rqn: u32,
    /// Ring base.
    pub ring: u64,
    /// log2 WQEs in the ring.
    pub log_size: u32,
    /// log2 bytes per WQE.
    pub log_stride: u32,
    /// Its completion queue.
    pub cqn: u32,
    /// Consumer counter (WQEs).
    pub ci: u16,
    /// In error after a failed WQE.
    pub error: bool,
}

/// What receiving one frame did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes written to host memory: (address, bytes), in order.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// The completion, if the frame had a WQE.
    pub cmpl: Option<Cmpl>,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

impl Rq {
    /// Receive `frame` with `info` when the RQ's producer counter is `pc`. `None` when the RQ
    /// has no WQE for it (or is in error): the frame is dropped.
    pub fn receive(
        &mut self,
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        pc: u16,
        frame: &[u8],
        info: &RxInfo,
        mrs: &[Option<Mr>],
    ) -> Option<Received> {
        if self.error || self.ci == pc {
            return None;
        }
        let slot = (self.ci as u64) & ((1 << self.log_size) - 1);
        let stride = 1usize << self.log_stride;
        let len = stride.min(256);
        let wqe = read(self.ring + (slot << self.log_stride), len);
        let mut out = Received::default();
        let l3_type = match info.l3 {
            1 => 2,
            2 => 1,
            _ => 0,
        };
        let mut c = Cmpl {
            cqn: self.cqn,
            opcode: 2,
            qpn: self.rqn,
            wqe_counter: self.ci,
            byte_cnt: frame.len() as u32,
            rss_hash_result: info.rss_hash,
            rss_hash_type: cqe_rss_hash_type(info.rss_type),
            check_sum: info.csum,
            l2_ok: true,
            l3_ok: info.l3_ok,
            l4_ok: info.l4_ok,
            l3_type,
            l4_type: info.l4,
            cv: info.vlan.is_some(),
            vlan_info: info.vlan.unwrap_or(0),
            l3_hdr: l3_type,
            ..Cmpl::default()
        };
        let fail = |c: &mut Cmpl, synd: u8, seg: usize| {
            c.opcode = 14;
            c.syndrome = synd;
            c.vendor_err_synd = seg as u8;
            c.byte_cnt = 0;
        };
        match wqe {
            None => fail(&mut c, syndrome::LOCAL_ACCESS, 0),
            Some(wqe) => {
                let mut pos = 0;
                let mut seg = 0;
                while pos < frame.len() {
                    let s = &wqe[(16 * seg).min(len - 16)..];
                    let count = be32(&s[0..4]) as usize;
                    if seg >= len / 16 || count == 0 {
                        fail(&mut c, syndrome::LOCAL_LENGTH, seg);
                        break;
                    }
                    let lkey = be32(&s[4..8]);
                    let addr = u64::from_be_bytes(s[8..16].try_into().unwrap());
                    let n = count.min(frame.len() - pos);
                    let ok = mrs.get(lkey as usize).copied().flatten().is_some_and(|m| {
                        addr >= m.base && addr as u128 + n as u128 <= m.base as u128 + m.len as u128
                    });
                    if !ok {
                        fail(&mut c, syndrome::LOCAL_PROT, seg);
                        break;
                    }
                    out.writes.push((addr, frame[pos..pos + n].to_vec()));
                    pos += n;
                    seg += 1;
                }
            }
        }
        if c.opcode == 14 {
            self.error = true;
        }
        self.ci = self.ci.wrapping_add(1);
        out.cmpl = Some(c);
        Some(out)
    }
}
