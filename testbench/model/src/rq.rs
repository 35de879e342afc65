//! Receive queues (mlx5 cyclic RQ, `docs/wire-formats.md` §4.6–4.7) on bytes: where a
//! delivered frame lands in host memory and the completion it gets. Offsets are written here
//! from the reference, independently of the register map.
//!
//! A striding (multi-packet) RQ (mlx5 MPWRQ) has WQEs of a 16-byte next segment (not read:
//! the ring is used cyclically) and one data segment naming a buffer of `2^log_num` strides of
//! `2^log_size` bytes. Each frame takes the next `ceil(len / stride size)` strides of the
//! current WQE; its CQE has the first stride in `wqe_counter`, the WQE counter in `wqe_id` (fillers
//! and error CQEs too; 0 for a plain RQ) and, in `byte_cnt`, the length
//! (bits 15:0) and the strides consumed (bits 30:16). A frame needing more strides than the
//! WQE has left gets a filler CQE first (`byte_cnt` bit 31, the strides left as consumed, no
//! data) and goes to the next WQE; a WQE is used up when its strides are. The bytes a frame may
//! use are the data segment's byte count from the frame's first stride on: a frame longer than
//! that, or needing more strides than a whole WQE has, completes in error (LOCAL_LENGTH).

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
    /// The frame was de-capsulated.
    pub decap: bool,
    /// Delivered whole with the inner offloads: the fields above describe the outer headers,
    /// RSS hashed the inner ones, and the two below are the inner headers' verdicts.
    pub inner: bool,
    /// Inner IP header verdict (with `inner`).
    pub inner_l3_ok: bool,
    /// Inner TCP/UDP checksum verdict (with `inner`).
    pub inner_l4_ok: bool,
    /// The tunnel: 0 none, 1 VXLAN, 2 NVGRE.
    pub tunnel: u8,
    /// Its VNI or VSID.
    pub tunnel_id: u32,
    /// Why it is malformed (0 for none).
    pub tunnel_bad: u8,
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

/// A striding RQ's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    /// log2 strides per WQE.
    pub log_num: u32,
    /// log2 bytes per stride.
    pub log_size: u32,
}

/// The `byte_cnt` of a striding RQ's CQE: filler flag, strides consumed, length.
pub fn mpwrq_byte_cnt(filler: bool, strides: u32, len: u32) -> u32 {
    (filler as u32) << 31 | (strides & 0x7FFF) << 16 | (len & 0xFFFF)
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
    /// Striding RQ geometry (`None`: one frame per WQE).
    pub strides: Option<Strides>,
    /// Striding RQ: strides of WQE `ci` already used.
    pub stride: u16,
}

/// What receiving one frame did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes written to host memory: (address, bytes), in order.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// Striding RQ: the filler CQE made before the frame moved to the next WQE.
    pub filler: Option<Cmpl>,
    /// The completion, if the frame had a WQE.
    pub cmpl: Option<Cmpl>,
}

impl Received {
    /// The completions in the order the NIC makes them.
    pub fn cmpls(&self) -> impl Iterator<Item = &Cmpl> {
        self.filler.iter().chain(self.cmpl.iter())
    }
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
        let mut filler = None;
        if let Some(st) = self.strides {
            let num = 1u32 << st.log_num;
            let need = (frame.len() as u32).div_ceil(1 << st.log_size).max(1);
            let left = num - self.stride as u32;
            if need <= num && need > left {
                filler = Some(Cmpl {
                    cqn: self.cqn,
                    opcode: 2,
                    qpn: self.rqn,
                    wqe_counter: self.stride,
                    wqe_id: self.ci,
                    byte_cnt: mpwrq_byte_cnt(true, left, 0),
                    ..Cmpl::default()
                });
                self.ci = self.ci.wrapping_add(1);
                self.stride = 0;
                if self.ci == pc {
                    return Some(Received {
                        filler,
                        ..Received::default()
                    });
                }
            }
        }
        let slot = (self.ci as u64) & ((1 << self.log_size) - 1);
        let stride = 1usize << self.log_stride;
        let len = stride.min(256);
        let wqe = read(self.ring + (slot << self.log_stride), len);
        let mut out = Received {
            filler,
            ..Received::default()
        };
        let l3_type = match info.l3 {
            1 => 2,
            2 => 1,
            _ => 0,
        };
        let mut c = Cmpl {
            cqn: self.cqn,
            opcode: 2,
            qpn: self.rqn,
            wqe_counter: if self.strides.is_some() {
                self.stride
            } else {
                self.ci
            },
            wqe_id: if self.strides.is_some() { self.ci } else { 0 },
            byte_cnt: frame.len() as u32,
            rss_hash_result: info.rss_hash,
            rss_hash_type: cqe_rss_hash_type(info.rss_type),
            check_sum: info.csum,
            l2_ok: true,
            // With the inner offloads the verdicts cover both header sets (mlx5 `tunneled`);
            // an outer without TCP/UDP (NVGRE's GRE) has no L4 checksum to add.
            l3_ok: info.l3_ok && (!info.inner || info.inner_l3_ok),
            l4_ok: if info.inner {
                (info.l4_ok || info.l4 == 0) && info.inner_l4_ok
            } else {
                info.l4_ok
            },
            l3_type,
            l4_type: info.l4,
            cv: info.vlan.is_some(),
            vlan_info: info.vlan.unwrap_or(0),
            l3_hdr: l3_type,
            tunneled: info.inner,
            decapped: info.decap,
            tunnel_info: u32::from(info.tunnel_bad) << 26
                | u32::from(info.tunnel) << 24
                | info.tunnel_id,
            ..Cmpl::default()
        };
        let fail = |c: &mut Cmpl, synd: u8, seg: usize| {
            c.opcode = 14;
            c.syndrome = synd;
            c.vendor_err_synd = seg as u8;
            c.byte_cnt = 0;
        };
        match wqe {
            None => fail(
                &mut c,
                syndrome::LOCAL_ACCESS,
                self.strides.is_some() as usize,
            ),
            Some(wqe) if self.strides.is_some() => {
                let st = self.strides.unwrap();
                let need = (frame.len() as u32).div_ceil(1 << st.log_size).max(1);
                // The one data segment after the next segment.
                let s = &wqe[16..32];
                let count = be32(&s[0..4]) as u64;
                let lkey = be32(&s[4..8]);
                let off = (self.stride as u64) << st.log_size;
                let addr = u64::from_be_bytes(s[8..16].try_into().unwrap()).wrapping_add(off);
                let room = count.saturating_sub(off);
                let n = (frame.len() as u64).min(room) as usize;
                let ok = mrs.get(lkey as usize).copied().flatten().is_some_and(|m| {
                    addr >= m.base && addr as u128 + n as u128 <= m.base as u128 + m.len as u128
                });
                if need > 1 << st.log_num || room == 0 {
                    fail(&mut c, syndrome::LOCAL_LENGTH, 1);
                } else if !ok {
                    fail(&mut c, syndrome::LOCAL_PROT, 1);
                } else {
                    out.writes.push((addr, frame[..n].to_vec()));
                    if n < frame.len() {
                        fail(&mut c, syndrome::LOCAL_LENGTH, 2);
                    } else {
                        c.byte_cnt = mpwrq_byte_cnt(false, need, frame.len() as u32);
                    }
                }
            }
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
        match self.strides {
            Some(st) if c.opcode != 14 => {
                let need = (frame.len() as u32).div_ceil(1 << st.log_size).max(1);
                self.stride += need as u16;
                if self.stride as u32 == 1 << st.log_num {
                    self.stride = 0;
                    self.ci = self.ci.wrapping_add(1);
                }
            }
            _ => {
                self.stride = 0;
                self.ci = self.ci.wrapping_add(1);
            }
        }
        out.cmpl = Some(c);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CQE of one 60-byte frame with `info` on a plain RQ with one posted WQE.
    fn cqe_of(info: &RxInfo) -> Cmpl {
        let mut rq = Rq {
            rqn: 1,
            ring: 0,
            log_size: 2,
            log_stride: 4,
            cqn: 3,
            ci: 0,
            error: false,
            strides: None,
            stride: 0,
        };
        let mut seg = 64u32.to_be_bytes().to_vec();
        seg.extend_from_slice(&0u32.to_be_bytes());
        seg.extend_from_slice(&0x1000u64.to_be_bytes());
        let read = move |_: u64, n: usize| Some(seg[..n].to_vec());
        let mrs = [Some(Mr {
            base: 0x1000,
            len: 4096,
        })];
        let r = rq.receive(&read, 1, &[0; 60], info, &mrs).unwrap();
        r.cmpl.unwrap()
    }

    #[test]
    fn the_inner_offloads_verdicts_cover_both_header_sets() {
        let ok = RxInfo {
            l3: 1,
            l4: 1,
            l3_ok: true,
            l4_ok: true,
            ..RxInfo::default()
        };
        // De-capsulated: `decapped`, the verdicts as given (the inner frame's).
        let c = cqe_of(&RxInfo { decap: true, ..ok });
        assert_eq!(
            (c.tunneled, c.decapped, c.l3_ok, c.l4_ok),
            (false, true, true, true)
        );
        // Delivered whole with the inner offloads: `tunneled`, each verdict outer AND inner.
        for (outer, inner, l3_ok, l4_ok) in [
            ((true, true), (true, true), true, true),
            ((true, true), (true, false), true, false),
            ((true, true), (false, true), false, true),
            ((false, true), (true, true), false, true),
            ((true, false), (true, true), true, false),
        ] {
            let info = RxInfo {
                l3_ok: outer.0,
                l4_ok: outer.1,
                inner: true,
                inner_l3_ok: inner.0,
                inner_l4_ok: inner.1,
                ..ok
            };
            let c = cqe_of(&info);
            assert_eq!(
                (c.tunneled, c.decapped, c.l3_ok, c.l4_ok),
                (true, false, l3_ok, l4_ok),
                "{info:?}"
            );
        }
        // An outer without TCP/UDP (NVGRE): l4_ok is the inner verdict.
        for inner_l4_ok in [true, false] {
            let info = RxInfo {
                l4: 0,
                l4_ok: false,
                inner: true,
                inner_l3_ok: true,
                inner_l4_ok,
                ..ok
            };
            assert_eq!(cqe_of(&info).l4_ok, inner_l4_ok, "{info:?}");
        }
        // Without the inner offloads it stays the frame's own verdict.
        let c = cqe_of(&RxInfo {
            l4: 0,
            l4_ok: false,
            ..ok
        });
        assert!(!c.tunneled && !c.l4_ok);
    }
}
