//! Send queues (mlx5 Ethernet SQ, `docs/wire-formats.md` §4.2–4.5) on bytes: what a NIC
//! sends and completes for the WQEs between its consumer and producer counters. Offsets are
//! written here from the reference, independently of the register map.
//!
//! A WQE is read from host memory through a closure (`read(addr, len)`, `None` where nothing
//! is mapped). The model executes WQEs in order and stops at the first that fails, which puts
//! the queue in error; each executed WQE may give a frame and a completion.

use crate::cq::Cmpl;
use crate::tx::TxRequest;

/// A registered memory region (lkey = index into the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    /// First byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Error syndromes (mlx5 CQE syndrome byte).
pub mod syndrome {
    /// Zero length, empty frame, or one over the maximum.
    pub const LOCAL_LENGTH: u8 = 0x01;
    /// Unknown opcode or malformed WQE.
    pub const LOCAL_QP_OP: u8 = 0x02;
    /// Gather outside the registered region.
    pub const LOCAL_PROT: u8 = 0x04;
    /// A DMA read answered with an error.
    pub const LOCAL_ACCESS: u8 = 0x11;
}

/// The NIC's size limits on sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqLimits {
    /// Largest frame a WQE may describe (bytes, without FCS).
    pub max_frame: usize,
    /// Largest LSO send (bytes, headers included). Above the gather piece
    /// ([`SqLimits::piece`]), an LSO send longer than a piece is gathered in pieces: it may
    /// have no inline data segment (LOCAL_LENGTH), and a DMA read failing in a piece after
    /// the first cuts the frame there (the pieces before it have left: `aborted` in
    /// [`Sent::req`]).
    pub max_lso: usize,
}

impl From<usize> for SqLimits {
    /// An LSO send held to `max_frame`, as a SEND is.
    fn from(max_frame: usize) -> Self {
        SqLimits {
            max_frame,
            max_lso: max_frame,
        }
    }
}

impl SqLimits {
    /// A WQE's share of the NIC's gather buffer: `max_frame` rounded up to a power of two.
    pub fn piece(&self) -> usize {
        self.max_frame.next_power_of_two()
    }

    /// LSO sends longer than a piece are taken (gathered in pieces).
    pub fn pieces(&self) -> bool {
        self.max_lso > self.piece()
    }
}

/// One send queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sq {
    /// SQ number.
    pub sqn: u32,
    /// Ring base (64-byte WQEBBs).
    pub ring: u64,
    /// log2 WQEBBs in the ring.
    pub log_size: u32,
    /// Its completion queue.
    pub cqn: u32,
    /// Consumer counter (WQEBBs).
    pub ci: u16,
    /// In error (stopped) after a failed WQE.
    pub error: bool,
}

/// A frame the SQ sends, with its offload request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The frame as handed to the TX path (no FCS); an aborted one's bytes up to the failed
    /// piece.
    pub frame: Vec<u8>,
    /// Checksum and VLAN requests; `req.aborted` for an LSO send cut by a DMA error after its
    /// first pieces left (its WQE completes in error).
    pub req: TxRequest,
}

/// What executing WQEs produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqRun {
    /// Frames, in order.
    pub sent: Vec<Sent>,
    /// Completions, in order.
    pub cmpls: Vec<Cmpl>,
}

/// One entry of a WQE's gather list.
enum Piece<'a> {
    /// Bytes carried in the WQE (an inline data segment).
    Inline(&'a [u8]),
    /// Bytes at a bus address.
    Ptr(u64, usize),
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

impl Sq {
    /// Bytes of WQEBB `i` positions after the consumer counter.
    fn wqebb(&self, read: &dyn Fn(u64, usize) -> Option<Vec<u8>>, i: u16) -> Option<Vec<u8>> {
        let slot = (self.ci.wrapping_add(i) as u64) & ((1u64 << self.log_size) - 1);
        read(self.ring + slot * 64, 64)
    }

    /// Execute the WQEs from `ci` up to the producer counter `pc` (WQEBBs); `max_frame` is the
    /// largest frame a WQE may describe.
    pub fn run(
        &mut self,
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        pc: u16,
        mrs: &[Option<Mr>],
        limits: impl Into<SqLimits>,
    ) -> SqRun {
        self.run_from(read, pc, mrs, limits.into(), None)
    }

    /// A BlueFlame doorbell: `bf` is what the doorbell page's buffer holds when the doorbell
    /// commits (the WQE's bytes written there since the last doorbell, in order from its
    /// control segment; shorter when not all of the WQE was written), `pc` the producer counter
    /// in the doorbell record. The WQE in `bf` is executed without reading the ring when it is
    /// whole (a DS count of 1 to 16 and all `16 * DS` bytes written) and it is the SQ's next
    /// WQE (its `wqe_index` equals the consumer counter); the producer counter is then the end
    /// of that WQE and the doorbell record is not read. Otherwise the doorbell is a plain one:
    /// the WQEs up to the record's `pc` are fetched from the ring (where the driver also wrote
    /// the WQE). An SQ in error executes nothing either way. Returns what ran and whether the
    /// BlueFlame WQE was used.
    pub fn run_blueflame(
        &mut self,
        bf: &[u8],
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        pc: u16,
        mrs: &[Option<Mr>],
        limits: impl Into<SqLimits>,
    ) -> (SqRun, bool) {
        let limits = limits.into();
        if self.error {
            return (SqRun::default(), false);
        }
        match blueflame_wqe(bf) {
            Some((index, nbb)) if index == self.ci => {
                let end = self.ci.wrapping_add(nbb);
                (self.run_from(read, end, mrs, limits, Some(bf)), true)
            }
            _ => (self.run_from(read, pc, mrs, limits, None), false),
        }
    }

    /// Execute from `ci` to `pc`; the first WQE's bytes from `bf` when given.
    fn run_from(
        &mut self,
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        pc: u16,
        mrs: &[Option<Mr>],
        limits: SqLimits,
        mut bf: Option<&[u8]>,
    ) -> SqRun {
        let mut out = SqRun::default();
        while !self.error && self.ci != pc {
            let index = self.ci;
            let from_bf = bf.take();
            let wqebb = |i: u16| match from_bf {
                Some(b) => {
                    let at = 64 * i as usize;
                    let mut v = b.get(at..b.len().min(at + 64)).unwrap_or(&[]).to_vec();
                    v.resize(64, 0);
                    Some(v)
                }
                None => self.wqebb(read, i),
            };
            let first = wqebb(0);
            let ds = first
                .as_ref()
                .map_or(0, |w| (be32(&w[4..8]) & 0x3F) as usize);
            let ds_ok = (1..=16).contains(&ds);
            let nbb = if ds_ok { ds.div_ceil(4) as u16 } else { 1 };
            let mut wqe = Vec::new();
            let mut fetch_err = first.is_none();
            for i in 0..nbb {
                match wqebb(i) {
                    Some(b) => wqe.extend(b),
                    None => {
                        fetch_err = true;
                        wqe.extend([0u8; 64]);
                    }
                }
            }
            let opcode = wqe[3];
            let fm = wqe[11];
            let verdict = if fetch_err {
                Err((syndrome::LOCAL_ACCESS, 0))
            } else {
                self.check_and_gather(&wqe, ds, read, mrs, limits)
            };
            let (frame_len, fail) = match verdict {
                Ok(frames) => {
                    let n = frames.iter().map(|s| s.frame.len() as u32).sum();
                    // An aborted send: its first pieces left, the WQE failed.
                    let aborted = frames.iter().any(|s| s.req.aborted);
                    out.sent.extend(frames);
                    match aborted {
                        true => (0, Some((syndrome::LOCAL_ACCESS, ds as u8))),
                        false => (n, None),
                    }
                }
                Err(e) => (0, Some(e)),
            };
            if fail.is_some() || fm & 0x08 != 0 {
                let (opc, synd, vendor) = match fail {
                    Some((s, v)) => (13, s, v),
                    None => (0, 0, 0),
                };
                out.cmpls.push(Cmpl {
                    cqn: self.cqn,
                    opcode: opc,
                    syndrome: synd,
                    vendor_err_synd: vendor,
                    qpn: self.sqn,
                    s_wqe_opcode: opcode,
                    wqe_counter: index,
                    byte_cnt: frame_len,
                    ..Cmpl::default()
                });
            }
            self.ci = self.ci.wrapping_add(nbb);
            if fail.is_some() {
                self.error = true;
            }
        }
        out
    }

    /// The frames of one WQE (none for a NOP, one for a SEND or an LSO, one per data segment
    /// for an ENHANCED_MPSW), or the syndrome and failing segment index.
    ///
    /// The frame is the inline header, then the gather list in WQE order: pointer segments
    /// (byte count, lkey, address) and inline data segments (byte count with bit 31 set, the
    /// bytes right after it, the segment padded to 16-byte DS units; it may span WQEBBs). A
    /// zero-length inline segment is accepted and adds nothing (one DS unit, as the kernel's
    /// mlx5_ib writes for a send whose gather entries are all empty); a zero-length pointer
    /// segment is LOCAL_LENGTH.
    ///
    /// An LSO (opcode 0x0E) is a SEND whose frame is a super-frame (`req.mss` its `mss`): an
    /// `mss` of 0 or over 16383, an inline header under 14 bytes (a VLAN insert has none), or a
    /// software-parser offset (bytes 0-3) of 128 units or more is LOCAL_QP_OP. Its frame may
    /// be up to `limits.max_lso` bytes; one longer than a piece ([`SqLimits`]) with an inline
    /// data segment is LOCAL_LENGTH blamed on the DS count.
    ///
    /// An enhanced multi-packet send (opcode 0x29) has a ctrl and an Ethernet segment whose
    /// `cs_flags` apply to every packet; bytes 12-13 (inline header size / VLAN insert) must
    /// be 0 (else LOCAL_QP_OP). Each data segment is one packet, pointer or inline: an inline
    /// segment past the DS count is LOCAL_QP_OP; a packet of 0 bytes or over `max_frame`, or
    /// packets that, each started at a multiple of 64 bytes, do not fit the NIC's gather
    /// buffer (`max_frame` rounded up to a power of two) are LOCAL_LENGTH; a pointer outside
    /// its region is LOCAL_PROT; no packet at all is LOCAL_LENGTH blamed on the DS count. A
    /// failing segment fails the whole WQE: none of its packets is sent.
    fn check_and_gather(
        &self,
        wqe: &[u8],
        ds: usize,
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        mrs: &[Option<Mr>],
        limits: SqLimits,
    ) -> Result<Vec<Sent>, (u8, u8)> {
        let max_frame = limits.max_frame;
        let opcode = wqe[3];
        let qp_op = Err((syndrome::LOCAL_QP_OP, 0));
        match opcode {
            0x00 if (1..=16).contains(&ds) => return Ok(Vec::new()),
            0x0A | 0x0E if (2..=16).contains(&ds) => {}
            0x29 if (2..=16).contains(&ds) => {
                return self.multi_packet(wqe, ds, read, mrs, limits);
            }
            _ => return qp_op,
        }
        let eth = &wqe[16..32];
        let cs = eth[4];
        // Bytes 12-13: the inline header size, or with bit 15 set the VLAN-insert command.
        let vlan = (eth[12] & 0x80 != 0).then(|| be16(&eth[14..16]));
        let ihs = if vlan.is_some() {
            0
        } else {
            be16(&eth[12..14]) as usize
        };
        if ihs > 226 || 30 + ihs > ds * 16 {
            return qp_op;
        }
        // LSO: the super-frame's headers are the inline bytes; the segment size and the
        // software-parser offsets (bytes 0-3, 2-byte units) must fit the TSO engine's request.
        let mss = be16(&eth[6..8]) as usize;
        let lso = opcode == 0x0E;
        let max_frame = match lso && limits.pieces() {
            true => limits.max_lso,
            false => max_frame,
        };
        if lso && (mss == 0 || mss > 16383 || ihs < 14 || eth[0..4].iter().any(|&o| o >= 128)) {
            return qp_op;
        }
        let first_ds = 2 + if ihs > 2 { (ihs - 2).div_ceil(16) } else { 0 };
        let mut frame = wqe[30..30 + ihs].to_vec();
        // The gather list in frame order; every check passes before any data is read.
        let mut pieces = Vec::new();
        let mut len = ihs;
        let mut i = first_ds;
        while i < ds {
            let s = &wqe[16 * i..16 * i + 16];
            let count = be32(&s[0..4]);
            let v = i as u8;
            if count & 0x8000_0000 != 0 {
                // Inline data: the bytes follow the byte-count word, the segment padded to
                // whole 16-byte DS units, all inside the WQE's DS count.
                let n = (count & 0x7FFF_FFFF) as usize;
                let start = 16 * i + 4;
                if start as u64 + n as u64 > 16 * ds as u64 {
                    return Err((syndrome::LOCAL_QP_OP, v));
                }
                if len + n > max_frame {
                    return Err((syndrome::LOCAL_LENGTH, v));
                }
                pieces.push(Piece::Inline(&wqe[start..start + n]));
                len += n;
                i += (4 + n).div_ceil(16);
                continue;
            }
            let (lkey, addr) = (be32(&s[4..8]), be64(&s[8..16]));
            if count == 0 {
                return Err((syndrome::LOCAL_LENGTH, v));
            }
            if len + count as usize > max_frame {
                return Err((syndrome::LOCAL_LENGTH, v));
            }
            if !in_region(mrs, lkey, addr, count as usize) {
                return Err((syndrome::LOCAL_PROT, v));
            }
            pieces.push(Piece::Ptr(addr, count as usize));
            len += count as usize;
            i += 1;
        }
        if len == 0 {
            return Err((syndrome::LOCAL_LENGTH, ds as u8));
        }
        // An LSO send longer than a piece is gathered piece by piece: pointer segments only.
        let in_pieces = lso && limits.pieces() && len > limits.piece();
        if in_pieces && pieces.iter().any(|p| matches!(p, Piece::Inline(_))) {
            return Err((syndrome::LOCAL_LENGTH, ds as u8));
        }
        let mut aborted = false;
        for piece in pieces {
            match piece {
                Piece::Inline(b) => frame.extend_from_slice(b),
                Piece::Ptr(addr, n) => match read_cut(read, addr, n, frame.len(), limits.piece()) {
                    Ok(b) => frame.extend(b),
                    // Read by read as the NIC does: the first that fails fails its piece; the
                    // pieces before it have left when it is not the first.
                    Err(at) if in_pieces && at >= limits.piece() => {
                        frame.truncate(at / limits.piece() * limits.piece());
                        aborted = true;
                        break;
                    }
                    Err(_) => return Err((syndrome::LOCAL_ACCESS, ds as u8)),
                },
            }
        }
        Ok(vec![Sent {
            frame,
            req: TxRequest {
                csum_l3: cs & 0x40 != 0,
                csum_l4: cs & 0x80 != 0,
                vlan_tci: vlan,
                mss: lso.then_some(mss),
                aborted,
                ..TxRequest::default()
            },
        }])
    }

    /// The packets of an enhanced multi-packet send WQE (rules at [`Sq::check_and_gather`]).
    fn multi_packet(
        &self,
        wqe: &[u8],
        ds: usize,
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
        mrs: &[Option<Mr>],
        limits: SqLimits,
    ) -> Result<Vec<Sent>, (u8, u8)> {
        let (max_frame, buffer) = (limits.max_frame, limits.piece());
        let eth = &wqe[16..32];
        if be16(&eth[12..14]) != 0 {
            return Err((syndrome::LOCAL_QP_OP, 0));
        }
        let cs = eth[4];
        let mut packets = Vec::new();
        let mut laid = 0usize;
        let mut i = 2;
        while i < ds {
            let s = &wqe[16 * i..16 * i + 16];
            let count = be32(&s[0..4]);
            let v = i as u8;
            let inline = count & 0x8000_0000 != 0;
            let n = (count & 0x7FFF_FFFF) as usize;
            if inline && 16 * i + 4 + n > 16 * ds {
                return Err((syndrome::LOCAL_QP_OP, v));
            }
            if n == 0 || n > max_frame || laid + n.next_multiple_of(64) > buffer {
                return Err((syndrome::LOCAL_LENGTH, v));
            }
            laid += n.next_multiple_of(64);
            if inline {
                packets.push(Piece::Inline(&wqe[16 * i + 4..16 * i + 4 + n]));
                i += (4 + n).div_ceil(16);
                continue;
            }
            let (lkey, addr) = (be32(&s[4..8]), be64(&s[8..16]));
            if !in_region(mrs, lkey, addr, n) {
                return Err((syndrome::LOCAL_PROT, v));
            }
            packets.push(Piece::Ptr(addr, n));
            i += 1;
        }
        if packets.is_empty() {
            return Err((syndrome::LOCAL_LENGTH, ds as u8));
        }
        let req = TxRequest {
            csum_l3: cs & 0x40 != 0,
            csum_l4: cs & 0x80 != 0,
            vlan_tci: None,
            ..TxRequest::default()
        };
        packets
            .into_iter()
            .map(|piece| {
                let frame = match piece {
                    Piece::Inline(b) => b.to_vec(),
                    Piece::Ptr(addr, n) => {
                        read(addr, n).ok_or((syndrome::LOCAL_ACCESS, ds as u8))?
                    }
                };
                Ok(Sent { frame, req })
            })
            .collect()
    }
}

/// The `n` bytes at `addr`, the frame's bytes from `at` on, read as the NIC's DMA reads
/// them: cut where a 4 KiB page or a `piece` of the frame ends. Where a read fails: the
/// frame offset of its first byte.
fn read_cut(
    read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
    addr: u64,
    n: usize,
    at: usize,
    piece: usize,
) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let a = addr + out.len() as u64;
        let pos = at + out.len();
        let len = (n - out.len())
            .min(4096 - (a % 4096) as usize)
            .min(piece - pos % piece);
        out.extend(read(a, len).ok_or(pos)?);
    }
    Ok(out)
}

/// Whether `n` bytes at `addr` lie in the region of `lkey`.
fn in_region(mrs: &[Option<Mr>], lkey: u32, addr: u64, n: usize) -> bool {
    let mr = mrs.get(lkey as usize).copied().flatten();
    mr.is_some_and(|m| {
        addr >= m.base && (addr as u128 + n as u128) <= m.base as u128 + m.len as u128
    })
}

/// The `wqe_index` and WQEBB count of a whole WQE in a BlueFlame buffer: a DS count of 1 to
/// 16 and all `16 * DS` bytes present.
fn blueflame_wqe(bf: &[u8]) -> Option<(u16, u16)> {
    let ctrl = bf.get(0..8)?;
    let ds = (be32(&ctrl[4..8]) & 0x3F) as usize;
    let whole = (1..=16).contains(&ds) && bf.len() >= 16 * ds;
    whole.then(|| (be16(&ctrl[1..3]), ds.div_ceil(4) as u16))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RING: u64 = 0x1000;
    const DATA: u64 = 0x8000;

    /// A SEND WQE of `ds` DS units with no inline header, `segs` written from DS 2 on, run on
    /// an SQ whose ring is at `RING` and whose one memory region (lkey 0) is 64 bytes at
    /// `DATA` holding 0, 1, 2, ...
    fn run(ds: u32, segs: &[u8]) -> SqRun {
        run_op(0x0A, ds, segs)
    }

    /// [`run`] with opcode `op`.
    fn run_op(op: u8, ds: u32, segs: &[u8]) -> SqRun {
        run_eth(op, ds, &[0; 16], segs)
    }

    /// [`run_op`] with Ethernet segment `eth` (WQE bytes 16-31).
    fn run_eth(op: u8, ds: u32, eth: &[u8; 16], segs: &[u8]) -> SqRun {
        let mut ring = vec![0u8; 4 * 64];
        ring[3] = op;
        ring[16..32].copy_from_slice(eth);
        ring[4..8].copy_from_slice(&(7 << 8 | ds).to_be_bytes());
        ring[11] = 0x08;
        ring[32..32 + segs.len()].copy_from_slice(segs);
        let data: Vec<u8> = (0..64).collect();
        let read = |addr: u64, len: usize| {
            let within = |base: u64, mem: &[u8]| {
                let at = addr.checked_sub(base)? as usize;
                mem.get(at..at + len).map(<[u8]>::to_vec)
            };
            within(RING, &ring).or_else(|| within(DATA, &data))
        };
        let mut sq = sq7();
        let mrs = [Some(Mr {
            base: DATA,
            len: 64,
        })];
        sq.run(&read, (ds as u16).div_ceil(4), &mrs, 1514)
    }

    /// SQ 7 on a ring of 4 WQEBBs at `RING`, completing to CQ 1.
    fn sq7() -> Sq {
        Sq {
            sqn: 7,
            ring: RING,
            log_size: 2,
            cqn: 1,
            ci: 0,
            error: false,
        }
    }

    fn inline(bytes: &[u8]) -> Vec<u8> {
        let mut s = (0x8000_0000u32 | bytes.len() as u32).to_be_bytes().to_vec();
        s.extend(bytes);
        s.resize(s.len().next_multiple_of(16), 0);
        s
    }

    fn ptr(len: u32, at: u64) -> Vec<u8> {
        let mut s = len.to_be_bytes().to_vec();
        s.extend(0u32.to_be_bytes());
        s.extend((DATA + at).to_be_bytes());
        s
    }

    #[test]
    fn inline_and_pointer_segments_build_the_frame_in_wqe_order() {
        // DS 2-4: 40 inline bytes (crossing into the second WQEBB at WQE byte 64); DS 5: 5
        // bytes from memory; DS 6: an empty inline segment; DS 7: 3 inline bytes.
        let text: Vec<u8> = (100..140).collect();
        let segs = [inline(&text), ptr(5, 10), inline(&[]), inline(&[1, 2, 3])].concat();
        let r = run(8, &segs);
        let mut want = text.clone();
        want.extend([10, 11, 12, 13, 14, 1, 2, 3]);
        assert_eq!(r.sent.len(), 1);
        assert_eq!(r.sent[0].frame, want);
        assert_eq!((r.cmpls[0].opcode, r.cmpls[0].byte_cnt), (0, 48));
    }

    #[test]
    fn a_whole_blueflame_wqe_for_the_next_index_runs_without_the_ring() {
        // The ring is empty (a read of it fails): a BlueFlame WQE that is whole and at the
        // consumer counter still runs; one that is cut short, or for another index, falls back
        // to the ring (which here fails to read: LOCAL_ACCESS).
        let mut bf = vec![0u8; 64];
        bf[3] = 0x0A;
        bf[4..8].copy_from_slice(&(7 << 8 | 3u32).to_be_bytes());
        bf[11] = 0x08;
        bf[32..48].copy_from_slice(&inline(&[5, 6, 7]));
        let none = |_: u64, _: usize| None;
        let mrs = [None];
        let mut sq = sq7();
        let (r, used) = sq.clone().run_blueflame(&bf, &none, 9, &mrs, 1514);
        assert!(used);
        assert_eq!(r.sent[0].frame, vec![5, 6, 7]);
        assert_eq!((r.cmpls.len(), r.cmpls[0].wqe_counter), (1, 0));
        let (r, used) = sq.clone().run_blueflame(&bf[..47], &none, 1, &mrs, 1514);
        assert!(!used);
        assert_eq!(r.cmpls[0].syndrome, syndrome::LOCAL_ACCESS);
        sq.ci = 1;
        let (r, used) = sq.run_blueflame(&bf, &none, 2, &mrs, 1514);
        assert!(!used);
        assert_eq!(r.cmpls[0].syndrome, syndrome::LOCAL_ACCESS);
    }

    #[test]
    fn inline_errors_name_their_segment() {
        let fail = |r: SqRun| (r.cmpls[0].syndrome, r.cmpls[0].vendor_err_synd);
        // 20 bytes need DS 3-4 but the WQE ends after DS 3.
        let segs = [ptr(5, 0), inline(&[9; 20])].concat();
        assert_eq!(fail(run(4, &segs)), (syndrome::LOCAL_QP_OP, 3));
        assert_eq!(fail(run(5, &segs)).0, 0);
        // Only empty inline segments: an empty frame, blamed on the DS count.
        let segs = [inline(&[]), inline(&[])].concat();
        assert_eq!(fail(run(4, &segs)), (syndrome::LOCAL_LENGTH, 4));
    }

    #[test]
    fn an_lso_is_a_send_with_its_mss_unless_its_request_cannot_carry_it() {
        // A 14-byte inline header (bytes 0-1 in the Ethernet segment, 2-13 in DS 2), then 6
        // bytes from memory.
        let lso = |swp: [u8; 4], mss: u16, ihs: u16| {
            let mut eth = [0u8; 16];
            eth[0..4].copy_from_slice(&swp);
            eth[6..8].copy_from_slice(&mss.to_be_bytes());
            eth[12..14].copy_from_slice(&ihs.to_be_bytes());
            eth[14..16].copy_from_slice(&[0xA0, 0xA1]);
            let mut hdr: Vec<u8> = (0xA2..0xAE).collect();
            hdr.resize(16, 0);
            run_eth(0x0E, 4, &eth, &[hdr, ptr(6, 0)].concat())
        };
        let r = lso([7, 10, 0, 0], 1000, 14);
        let mut want: Vec<u8> = (0xA0..0xAE).collect();
        want.extend(0..6);
        assert_eq!(r.sent.len(), 1);
        assert_eq!(r.sent[0].frame, want);
        assert_eq!(r.sent[0].req.mss, Some(1000));
        let c = &r.cmpls[0];
        assert_eq!((c.opcode, c.s_wqe_opcode, c.byte_cnt), (0, 0x0E, 20));
        let fail = |r: SqRun| {
            (
                r.cmpls[0].syndrome,
                r.cmpls[0].vendor_err_synd,
                r.sent.len(),
            )
        };
        let qp_op = (syndrome::LOCAL_QP_OP, 0, 0);
        assert_eq!(fail(lso([7, 10, 0, 0], 0, 14)), qp_op);
        assert_eq!(fail(lso([7, 10, 0, 0], 16384, 14)), qp_op);
        assert_eq!(fail(lso([7, 10, 0, 0], 1000, 12)), qp_op);
        assert_eq!(fail(lso([7, 128, 0, 0], 1000, 14)), qp_op);
        // With the VLAN-insert command in bytes 12-13 there is no inline header.
        assert_eq!(fail(lso([7, 10, 0, 0], 1000, 0x8000)), qp_op);
        // The same WQE as a SEND is not looked at for these fields.
        let mut eth = [0xFFu8; 16];
        eth[12..14].copy_from_slice(&14u16.to_be_bytes());
        let r = run_eth(0x0A, 4, &eth, &[vec![0; 16], ptr(6, 0)].concat());
        assert_eq!((r.sent.len(), r.sent[0].req.mss), (1, None));
    }

    #[test]
    fn a_multi_packet_wqe_sends_each_segment_and_completes_once() {
        let segs = [ptr(5, 0), inline(&[1, 2, 3]), ptr(7, 20)].concat();
        let r = run_op(0x29, 5, &segs);
        let frames: Vec<&[u8]> = r.sent.iter().map(|s| &s.frame[..]).collect();
        assert_eq!(
            frames,
            [
                &[0, 1, 2, 3, 4][..],
                &[1, 2, 3],
                &[20, 21, 22, 23, 24, 25, 26]
            ]
        );
        assert_eq!(r.cmpls.len(), 1);
        assert_eq!((r.cmpls[0].opcode, r.cmpls[0].byte_cnt), (0, 15));
        assert_eq!(r.cmpls[0].s_wqe_opcode, 0x29);
        // An empty inline packet fails the whole WQE, blamed on its segment: nothing is sent.
        let segs = [ptr(5, 0), inline(&[])].concat();
        let r = run_op(0x29, 4, &segs);
        assert!(r.sent.is_empty());
        let c = &r.cmpls[0];
        assert_eq!(
            (c.opcode, c.syndrome, c.vendor_err_synd),
            (13, syndrome::LOCAL_LENGTH, 3)
        );
    }
}
