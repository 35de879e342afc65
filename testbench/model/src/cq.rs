//! Completion and event queues (mlx5, `docs/wire-formats.md` §4.7–4.8) on bytes: the CQEs
//! and EQEs a NIC writes for a sequence of completions and arm doorbells, and when an EQ
//! interrupts. Field offsets are written here from the reference, independently of the
//! register map the hardware and the driver are generated from.
//!
//! The CQE timestamp (bytes 0x30..0x38; 0x30..0x36 in error CQEs) is the device's cycle count:
//! the model leaves it 0 and tests mask it.
//!
//! What it models is order, not time: each call returns the ring writes in the order the NIC
//! makes them.
//!
//! CQE compression (mlx5 mini-CQE arrays) is modelled as what it must decode to: [`CqModel`]
//! keeps producing the full CQEs; [`joins`] says which completions may share a compressed
//! session, [`session_bytes`] gives the bytes a session writes, and [`CqReader`] consumes a CQ
//! ring as a driver does (full CQEs, and title + mini-CQE sessions expanded back into full
//! CQEs, as `mlx5e_decompress_cqes_start/cont` do), so a test compares what a reader gets with
//! the model's full CQEs. Session layout (mlx5): slot `S` holds the title, a full CQE of the
//! session's first completion with `format` 3 and `byte_cnt` = the session's completion count
//! `n` (2..=8); slot `S + 1` holds the eight 8-byte mini CQEs (mini `i` for completion `i`);
//! the session takes slots `S..S + n` of the ring, the slots after `S + 1` left unwritten.

/// A completion as the send and receive engines report it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cmpl {
    /// The CQ the completion goes to.
    pub cqn: u32,
    /// CQE opcode (0 REQ, 2 RESP_SEND, 13 REQ_ERR, 14 RESP_ERR).
    pub opcode: u8,
    /// Error syndrome (error CQEs).
    pub syndrome: u8,
    /// Vendor syndrome (error CQEs).
    pub vendor_err_synd: u8,
    /// SQ or RQ number (24 bits).
    pub qpn: u32,
    /// Send completions: the WQE's opcode.
    pub s_wqe_opcode: u8,
    /// The WQE completed.
    pub wqe_counter: u16,
    /// Striding RQ completions: the WQE the frame's strides are in (`wqe_id`); 0 otherwise.
    /// Not in a mini CQE: a compressed session's completions share the title's.
    pub wqe_id: u16,
    /// Bytes sent or received.
    pub byte_cnt: u32,
    /// RSS hash.
    pub rss_hash_result: u32,
    /// mlx5 RSS hash type byte.
    pub rss_hash_type: u8,
    /// Checksum-complete value.
    pub check_sum: u16,
    /// Frame good at L2.
    pub l2_ok: bool,
    /// IP header good.
    pub l3_ok: bool,
    /// TCP/UDP checksum good.
    pub l4_ok: bool,
    /// 0 none, 1 IPv6, 2 IPv4.
    pub l3_type: u8,
    /// 0 none, 1 TCP, 2 UDP.
    pub l4_type: u8,
    /// VLAN tag stripped.
    pub cv: bool,
    /// IP fragment.
    pub ip_frag: bool,
    /// Stripped TCI.
    pub vlan_info: u16,
    /// flags_rqpn L3 header type (1 IPv6, 2 IPv4).
    pub l3_hdr: u8,
    /// The frame was delivered whole with the inner offloads (byte 0x00 bit 0): `l3_ok` and
    /// `l4_ok` cover the outer and the inner headers, RSS hashed the inner ones.
    pub tunneled: bool,
    /// The frame was de-capsulated (byte 0x00 bit 1): the l3/l4 fields are the inner frame's.
    pub decapped: bool,
    /// The tunnel (bytes 0x28-0x2B, bits 28:0): VNI/VSID in 23:0, kind in 25:24, malformed
    /// reason in 28:26.
    pub tunnel_info: u32,
}

/// The 64-byte CQE for `c` in a slot with `owner`.
pub fn cqe_bytes(c: &Cmpl, owner: bool) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0x00] = c.tunneled as u8 | (c.decapped as u8) << 7;
    b[0x02..0x04].copy_from_slice(&c.wqe_id.to_be_bytes());
    b[0x28..0x2C].copy_from_slice(&(c.tunnel_info & 0x1FFF_FFFF).to_be_bytes());
    b[0x0C..0x10].copy_from_slice(&c.rss_hash_result.to_be_bytes());
    b[0x10] = c.rss_hash_type;
    b[0x14..0x16].copy_from_slice(&c.check_sum.to_be_bytes());
    b[0x18] = c.l3_hdr & 3; // flags_rqpn bits 25:24 (byte 0x18 holds bits 31:24)
    b[0x1C] = c.l2_ok as u8 | (c.l3_ok as u8) << 1 | (c.l4_ok as u8) << 2;
    b[0x1D] = c.cv as u8 | (c.l3_type & 3) << 2 | (c.l4_type & 7) << 4 | (c.ip_frag as u8) << 7;
    b[0x1E..0x20].copy_from_slice(&c.vlan_info.to_be_bytes());
    b[0x2C..0x30].copy_from_slice(&c.byte_cnt.to_be_bytes());
    if c.opcode == 13 || c.opcode == 14 {
        // Error CQEs: the syndromes take the timestamp's last two bytes.
        b[0x36] = c.vendor_err_synd;
        b[0x37] = c.syndrome;
    }
    let sop = (c.s_wqe_opcode as u32) << 24 | (c.qpn & 0xFF_FFFF);
    b[0x38..0x3C].copy_from_slice(&sop.to_be_bytes());
    b[0x3C..0x3E].copy_from_slice(&c.wqe_counter.to_be_bytes());
    b[0x3F] = (c.opcode & 0xF) << 4 | owner as u8;
    b
}

/// CQE `format` of a compressed session's title (`MLX5_COMPRESSED`).
pub const FORMAT_COMPRESSED: u8 = 3;
/// Completions per compressed session at most (one mini-CQE array).
pub const MAX_SESSION: usize = 8;

/// The first word of a receive completion's mini CQE (the CQ's `mini_cqe_res_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiniFormat {
    /// `rx_hash_result`; a session shares its check_sum.
    Hash,
    /// `checksum` (and stride index 0); a session shares its RSS hash.
    Csum,
}

fn is_error(c: &Cmpl) -> bool {
    c.opcode == 13 || c.opcode == 14
}

/// Whether `next` may be completion `n` (n >= 1) of a compressed session that `title` opened on
/// a CQ with mini format `fmt`: error completions never join (and never open one); the opcode
/// and every field a mini CQE does not carry (`wqe_id` among them) are equal; receive completions' wqe_counter is the
/// title's plus `n` (the reader counts it up); at most [`MAX_SESSION`] completions.
pub fn joins(title: &Cmpl, next: &Cmpl, n: usize, fmt: MiniFormat) -> bool {
    if n == 0 || n >= MAX_SESSION || is_error(title) || is_error(next) {
        return false;
    }
    if title.opcode != next.opcode || title.cqn != next.cqn {
        return false;
    }
    // The fields a mini CQE carries take the title's values for the comparison.
    let mut x = next.clone();
    x.byte_cnt = title.byte_cnt;
    if next.opcode == 0 {
        x.wqe_counter = title.wqe_counter;
        x.s_wqe_opcode = title.s_wqe_opcode;
    } else {
        if next.wqe_counter != title.wqe_counter.wrapping_add(n as u16) {
            return false;
        }
        x.wqe_counter = title.wqe_counter;
        match fmt {
            MiniFormat::Hash => x.rss_hash_result = title.rss_hash_result,
            MiniFormat::Csum => x.check_sum = title.check_sum,
        }
    }
    x == *title
}

/// The 8-byte mini CQE of `c` (`struct mlx5_mini_cqe8`).
pub fn mini_bytes(c: &Cmpl, fmt: MiniFormat) -> [u8; 8] {
    let mut b = [0u8; 8];
    if c.opcode == 0 {
        b[0..2].copy_from_slice(&c.wqe_counter.to_be_bytes());
        b[2] = c.s_wqe_opcode;
    } else {
        match fmt {
            MiniFormat::Hash => b[0..4].copy_from_slice(&c.rss_hash_result.to_be_bytes()),
            MiniFormat::Csum => b[0..2].copy_from_slice(&c.check_sum.to_be_bytes()),
        }
    }
    b[4..8].copy_from_slice(&c.byte_cnt.to_be_bytes());
    b
}

/// What a compressed session of `cmpls` (each joining the first) starting in a slot with
/// `owner` writes: one full CQE for a session of one, else the title and the mini-CQE array
/// (128 bytes).
pub fn session_bytes(cmpls: &[Cmpl], owner: bool, fmt: MiniFormat) -> Vec<u8> {
    let mut out = cqe_bytes(&cmpls[0], owner).to_vec();
    if cmpls.len() == 1 {
        return out;
    }
    out[0x2C..0x30].copy_from_slice(&(cmpls.len() as u32).to_be_bytes());
    out[0x3F] |= FORMAT_COMPRESSED << 2;
    let mut minis = [0u8; 64];
    for (i, c) in cmpls.iter().enumerate() {
        minis[8 * i..8 * i + 8].copy_from_slice(&mini_bytes(c, fmt));
    }
    out.extend_from_slice(&minis);
    out
}

/// Memory a [`CqReader`] reads its ring from.
pub trait RingMem {
    /// The 64 bytes at `addr`.
    fn read64(&self, addr: u64) -> [u8; 64];
    /// Write one byte (the reader's owner updates).
    fn write8(&mut self, addr: u64, v: u8);
}

/// Consumes a CQ ring as a driver does: a slot whose owner bit matches the pass is a full CQE,
/// or, with `format` 3, the title of a compressed session expanded into its completions. Slots
/// a session took get `op_own` = the pass's owner bit (`mlx5e_cqes_update_owner`), so they
/// read as not yet written in the next pass; a ring's slots start with owner 1 (invalid in
/// the first pass).
#[derive(Clone, Debug)]
pub struct CqReader {
    /// Ring bus address.
    pub base: u64,
    /// log2 slots.
    pub log_size: u32,
    /// Mini-CQE format of receive completions.
    pub fmt: MiniFormat,
    /// Consumer counter.
    pub cc: u32,
}

impl CqReader {
    fn slot(&self, ctr: u32) -> u64 {
        self.base + u64::from(ctr & ((1 << self.log_size) - 1)) * 64
    }

    fn pass_owner(&self, ctr: u32) -> u8 {
        (ctr >> self.log_size) as u8 & 1
    }

    /// Every completion written so far, as full CQEs.
    pub fn poll(&mut self, mem: &mut dyn RingMem) -> Vec<[u8; 64]> {
        let mut out = Vec::new();
        loop {
            let cqe = mem.read64(self.slot(self.cc));
            if cqe[0x3F] & 1 != self.pass_owner(self.cc) {
                return out;
            }
            if (cqe[0x3F] >> 2) & 3 != FORMAT_COMPRESSED {
                out.push(cqe);
                self.cc = self.cc.wrapping_add(1);
                continue;
            }
            let n = u32::from_be_bytes(cqe[0x2C..0x30].try_into().unwrap());
            let minis = mem.read64(self.slot(self.cc.wrapping_add(1)));
            let title_wqe = u16::from_be_bytes([cqe[0x3C], cqe[0x3D]]);
            for i in 0..n {
                let m = &minis[8 * i as usize..8 * i as usize + 8];
                let ctr = self.cc.wrapping_add(i);
                let mut c = cqe;
                c[0x2C..0x30].copy_from_slice(&m[4..8]);
                c[0x3F] = (cqe[0x3F] & 0xF0) | self.pass_owner(ctr);
                if cqe[0x3F] >> 4 == 0 {
                    c[0x3C..0x3E].copy_from_slice(&m[0..2]);
                    c[0x38] = m[2];
                } else {
                    let w = title_wqe.wrapping_add(i as u16);
                    c[0x3C..0x3E].copy_from_slice(&w.to_be_bytes());
                    match self.fmt {
                        MiniFormat::Hash => c[0x0C..0x10].copy_from_slice(&m[0..4]),
                        MiniFormat::Csum => c[0x14..0x16].copy_from_slice(&m[0..2]),
                    }
                }
                out.push(c);
                mem.write8(self.slot(ctr) + 0x3F, self.pass_owner(ctr));
            }
            self.cc = self.cc.wrapping_add(n);
        }
    }
}

/// The 64-byte completion EQE for CQ `cqn` in a slot with `owner`.
pub fn eqe_bytes(cqn: u32, owner: bool) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0x01] = 0x00; // completion event
    b[0x38..0x3C].copy_from_slice(&(cqn & 0xFF_FFFF).to_be_bytes());
    b[0x3F] = owner as u8;
    b
}

/// One 64-byte write to a ring in host memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingWrite {
    /// Bus address of the entry.
    pub addr: u64,
    /// The entry.
    pub bytes: [u8; 64],
}

#[derive(Clone, Debug)]
struct Ring {
    base: u64,
    log_size: u32,
    pc: u32,
}

impl Ring {
    fn next(&mut self) -> (u64, bool) {
        let mask = (1u32 << self.log_size) - 1;
        let addr = self.base + ((self.pc & mask) as u64) * 64;
        let owner = (self.pc >> self.log_size) & 1 == 1;
        self.pc = self.pc.wrapping_add(1) & 0xFF_FFFF;
        (addr, owner)
    }
}

#[derive(Clone, Debug)]
struct Cq {
    ring: Ring,
    eqn: u32,
    armed: bool,
}

#[derive(Clone, Debug)]
struct Eq {
    ring: Ring,
    vector: u32,
    mod_count: u32,
    armed: bool,
    pending: u32,
    ci: u32,
}

/// The CQs and EQs of one device.
#[derive(Clone, Debug, Default)]
pub struct CqModel {
    cqs: Vec<Option<Cq>>,
    eqs: Vec<Option<Eq>>,
    /// Interrupt messages per vector so far.
    pub irqs: Vec<u32>,
    /// Completions for CQs that do not exist (dropped).
    pub dropped: u32,
}

impl CqModel {
    /// A device with `cqs` CQs and `eqs` EQs, none created.
    pub fn new(cqs: usize, eqs: usize) -> CqModel {
        CqModel {
            cqs: vec![None; cqs],
            eqs: vec![None; eqs],
            irqs: vec![0; eqs],
            dropped: 0,
        }
    }

    /// CREATE for an EQ (interrupts on `vector` after `mod_count` events; 0 counts as 1).
    pub fn create_eq(&mut self, eqn: u32, base: u64, log_size: u32, vector: u32, mod_count: u32) {
        self.eqs[eqn as usize] = Some(Eq {
            ring: Ring {
                base,
                log_size,
                pc: 0,
            },
            vector,
            mod_count: mod_count.max(1),
            armed: false,
            pending: 0,
            ci: 0,
        });
    }

    /// CREATE for a CQ reporting to EQ `eqn`.
    pub fn create_cq(&mut self, cqn: u32, base: u64, log_size: u32, eqn: u32) {
        self.cqs[cqn as usize] = Some(Cq {
            ring: Ring {
                base,
                log_size,
                pc: 0,
            },
            eqn,
            armed: false,
        });
    }

    /// DESTROY for a CQ.
    pub fn destroy_cq(&mut self, cqn: u32) {
        self.cqs[cqn as usize] = None;
    }

    /// Producer counter of CQ `cqn` (what QUERY reports).
    pub fn cq_pc(&self, cqn: u32) -> Option<u32> {
        self.cqs[cqn as usize].as_ref().map(|c| c.ring.pc)
    }

    /// Producer counter of EQ `eqn`.
    pub fn eq_pc(&self, eqn: u32) -> Option<u32> {
        self.eqs[eqn as usize].as_ref().map(|e| e.ring.pc)
    }

    fn event(&mut self, eqn: u32, cqn: u32, out: &mut Vec<RingWrite>) {
        let Some(eq) = self.eqs.get_mut(eqn as usize).and_then(|e| e.as_mut()) else {
            return;
        };
        let (addr, owner) = eq.ring.next();
        out.push(RingWrite {
            addr,
            bytes: eqe_bytes(cqn, owner),
        });
        eq.pending += 1;
        Self::moderate(eq, &mut self.irqs);
    }

    fn moderate(eq: &mut Eq, irqs: &mut [u32]) {
        if eq.armed && eq.pending >= eq.mod_count {
            irqs[eq.vector as usize] += 1;
            eq.armed = false;
            eq.pending = 0;
        }
    }

    /// A completion: its CQE, then an EQE when the CQ was armed.
    pub fn complete(&mut self, c: &Cmpl) -> Vec<RingWrite> {
        let mut out = Vec::new();
        let Some(cq) = self.cqs.get_mut(c.cqn as usize).and_then(|q| q.as_mut()) else {
            self.dropped += 1;
            return out;
        };
        let (addr, owner) = cq.ring.next();
        out.push(RingWrite {
            addr,
            bytes: cqe_bytes(c, owner),
        });
        if cq.armed {
            cq.armed = false;
            let eqn = cq.eqn;
            self.event(eqn, c.cqn, &mut out);
        }
        out
    }

    /// CQ arm doorbell with consumer index `ci`: an EQE at once if CQEs exist beyond it.
    pub fn arm_cq(&mut self, cqn: u32, ci: u32) -> Vec<RingWrite> {
        let mut out = Vec::new();
        let Some(cq) = self.cqs.get_mut(cqn as usize).and_then(|q| q.as_mut()) else {
            return out;
        };
        if cq.ring.pc != ci & 0xFF_FFFF {
            cq.armed = false;
            let eqn = cq.eqn;
            self.event(eqn, cqn, &mut out);
        } else {
            cq.armed = true;
        }
        out
    }

    /// EQ doorbell: consumer index `ci`, and arm. Arming with events beyond `ci` interrupts at
    /// once.
    pub fn eq_doorbell(&mut self, eqn: u32, ci: u32, arm: bool) {
        let Some(eq) = self.eqs.get_mut(eqn as usize).and_then(|e| e.as_mut()) else {
            return;
        };
        eq.ci = ci & 0xFF_FFFF;
        if arm {
            eq.armed = true;
            // Events beyond ci interrupt at once; with none, only new events count.
            eq.pending = if eq.ring.pc != eq.ci {
                eq.pending.max(eq.mod_count)
            } else {
                0
            };
            Self::moderate(eq, &mut self.irqs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Mem(HashMap<u64, [u8; 64]>);

    impl RingMem for Mem {
        fn read64(&self, addr: u64) -> [u8; 64] {
            let mut b = self.0.get(&(addr & !63)).copied().unwrap_or([0; 64]);
            if !self.0.contains_key(&(addr & !63)) {
                b[0x3F] = 0xF1;
            }
            b
        }
        fn write8(&mut self, addr: u64, v: u8) {
            let mut b = self.read64(addr);
            b[(addr & 63) as usize] = v;
            self.0.insert(addr & !63, b);
        }
    }

    #[test]
    fn a_compressed_session_reads_back_as_its_full_cqes() {
        for fmt in [MiniFormat::Hash, MiniFormat::Csum] {
            let rx = |i: u16| Cmpl {
                cqn: 1,
                opcode: 2,
                qpn: 5,
                wqe_counter: 0xFFFE_u16.wrapping_add(i),
                byte_cnt: 60 + u32::from(i),
                rss_hash_result: if fmt == MiniFormat::Hash {
                    7 * u32::from(i)
                } else {
                    9
                },
                check_sum: if fmt == MiniFormat::Csum { 3 * i } else { 4 },
                l3_type: 2,
                ..Cmpl::default()
            };
            let tx = |i: u16| Cmpl {
                cqn: 1,
                opcode: 0,
                wqe_counter: 5 * i,
                s_wqe_opcode: i as u8,
                byte_cnt: 100 + u32::from(i),
                ..Cmpl::default()
            };
            for make in [&rx as &dyn Fn(u16) -> Cmpl, &tx] {
                let all: Vec<Cmpl> = (0..8).map(make).collect();
                assert!((1..8).all(|n| joins(&all[0], &all[n], n, fmt)));
                // A ring of 16: a session of 5 after 2 full CQEs, then one of 8 in the second
                // half, then wrapping into the second pass with one of 3.
                let mut mem = Mem(HashMap::new());
                let mut r = CqReader {
                    base: 0x1000,
                    log_size: 4,
                    fmt,
                    cc: 0,
                };
                let mut want = Vec::new();
                let mut pc = 0u32;
                for n in [1usize, 1, 5, 8, 1, 3] {
                    let owner = (pc >> 4) & 1 == 1;
                    let bytes = session_bytes(&all[..n], owner, fmt);
                    for (i, chunk) in bytes.chunks(64).enumerate() {
                        let a = 0x1000 + u64::from((pc + i as u32) & 15) * 64;
                        mem.0.insert(a, chunk.try_into().unwrap());
                    }
                    for (i, c) in all[..n].iter().enumerate() {
                        want.push(cqe_bytes(c, ((pc + i as u32) >> 4) & 1 == 1));
                    }
                    pc += n as u32;
                    assert_eq!(r.poll(&mut mem), want, "{fmt:?}, {n}");
                    want.clear();
                }
            }
        }
        // Errors never join; nor a gap in a receive queue's WQE counter, nor another CQ.
        let a = Cmpl {
            opcode: 2,
            ..Cmpl::default()
        };
        let err = Cmpl {
            opcode: 14,
            ..Cmpl::default()
        };
        assert!(!joins(&a, &err, 1, MiniFormat::Csum));
        assert!(!joins(&err, &err, 1, MiniFormat::Csum));
        assert!(!joins(
            &a,
            &Cmpl {
                wqe_counter: 2,
                ..a.clone()
            },
            1,
            MiniFormat::Csum
        ));
        assert!(!joins(
            &a,
            &Cmpl {
                cqn: 1,
                wqe_counter: 1,
                ..a.clone()
            },
            1,
            MiniFormat::Csum
        ));
    }

    #[test]
    fn tunneled_and_decapped_are_bits_0_and_7_of_byte_0() {
        for (tunneled, decapped, byte) in [(false, false, 0), (true, false, 1), (false, true, 0x80)]
        {
            let c = Cmpl {
                opcode: 2,
                tunneled,
                decapped,
                ..Cmpl::default()
            };
            assert_eq!(cqe_bytes(&c, false)[0x00], byte);
        }
    }

    #[test]
    fn owner_bit_flips_each_pass_and_arming_raises_one_event() {
        let mut m = CqModel::new(2, 1);
        m.create_eq(0, 0x10000, 2, 0, 1);
        m.create_cq(1, 0x20000, 1, 0);
        m.eq_doorbell(0, 0, true);
        let c = Cmpl {
            cqn: 1,
            opcode: 2,
            byte_cnt: 60,
            ..Cmpl::default()
        };
        let w: Vec<RingWrite> = (0..3).flat_map(|_| m.complete(&c)).collect();
        assert_eq!(w.len(), 3);
        assert_eq!(
            w.iter()
                .map(|x| (x.addr, x.bytes[0x3F]))
                .collect::<Vec<_>>(),
            vec![(0x20000, 0x20), (0x20040, 0x20), (0x20000, 0x21)]
        );
        // Armed at ci 3 with pc 3: nothing yet; the next completion adds an EQE and fires.
        assert!(m.arm_cq(1, 3).is_empty());
        let w = m.complete(&c);
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].addr, 0x10000);
        assert_eq!(&w[1].bytes[0x38..0x3C], &[0, 0, 0, 1]);
        assert_eq!(m.irqs, vec![1]);
        // Disarmed: more events do not interrupt until the EQ is armed again.
        assert_eq!(m.arm_cq(1, 3).len(), 1);
        assert_eq!(m.irqs, vec![1]);
        m.eq_doorbell(0, 1, true);
        assert_eq!(m.irqs, vec![2]);
    }
}
