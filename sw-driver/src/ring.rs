//! Ring arithmetic and the memory-side handshakes of the mlx5 queues
//! (`docs/wire-formats.md` §4.2, §4.7, §4.8):
//!
//! - [`WorkQueue`]: a send or receive ring of `2^log_size` slots with 16-bit producer and
//!   consumer counters that wrap; a slot is `counter & (size - 1)`; the ring is full when
//!   `pc - cc == size`. Send queues count 64-byte WQEBBs, and a WQE of several WQEBBs may wrap
//!   from the last slot to the first ([`WorkQueue::spans`]).
//! - [`EventRing`]: a completion or event queue the device produces into. Entry `i` is valid
//!   iff its owner bit equals `(i >> log_size) & 1`, so the driver fills every entry with owner
//!   1 before the first pass ([`crate::desc::Cqe::initial`], [`crate::desc::Eqe::initial`]) and
//!   needs no producer index.
//! - [`DoorbellRecord`]: the 8 bytes per queue the device reads: RQ producer counter at +0, SQ
//!   producer counter at +4, CQ consumer index at +0 and arm word at +4 (big-endian).
//! - the doorbell payloads written to the UAR page: [`CqArm`] and [`eq_doorbell`].

use std::sync::atomic::{fence, Ordering};

use crate::desc::CQE_BYTES;
use crate::device::MiniFormat;
use crate::hw::DmaMemory;
use crate::regs::consts::{cqe_format, cqe_opcode};
use crate::regs::desc::{cqe, dbr, mini_cqe};
use crate::regs::{DescField, Field};

/// Largest log2 size of a work queue: 16-bit counters tell a full ring from an empty one only
/// while the ring has at most 2^15 slots.
pub const MAX_LOG_WQ: u8 = 15;

/// Why a ring operation is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Not enough free slots.
    #[error("ring full: {need} slots needed, {free} free")]
    Full { need: usize, free: usize },
    /// Consuming more than was produced.
    #[error("ring underflow: {n} slots consumed, {used} outstanding")]
    Underflow { n: usize, used: usize },
    /// A size the counters cannot address.
    #[error("log2 ring size {log_size} is over {max}")]
    TooLarge { log_size: u8, max: u8 },
}

/// A send or receive ring: 16-bit producer and consumer counters over `2^log_size` slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkQueue {
    log_size: u8,
    pc: u16,
    cc: u16,
}

/// A contiguous piece of a WQE placed in a ring: `len` bytes of the WQE starting at `src`
/// go to byte `ring_offset` of the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub ring_offset: usize,
    pub src: usize,
    pub len: usize,
}

impl WorkQueue {
    /// An empty ring of `2^log_size` slots.
    pub fn new(log_size: u8) -> Result<Self, RingError> {
        if log_size > MAX_LOG_WQ {
            return Err(RingError::TooLarge {
                log_size,
                max: MAX_LOG_WQ,
            });
        }
        Ok(WorkQueue {
            log_size,
            pc: 0,
            cc: 0,
        })
    }

    /// log2 slots.
    pub fn log_size(&self) -> u8 {
        self.log_size
    }

    /// Slots.
    pub fn size(&self) -> usize {
        1 << self.log_size
    }

    /// Producer counter: the next slot to fill.
    pub fn pc(&self) -> u16 {
        self.pc
    }

    /// Consumer counter: the oldest slot not yet completed.
    pub fn cc(&self) -> u16 {
        self.cc
    }

    /// Slots produced and not yet consumed.
    pub fn used(&self) -> usize {
        self.pc.wrapping_sub(self.cc) as usize
    }

    /// Slots free.
    pub fn free(&self) -> usize {
        self.size() - self.used()
    }

    /// The slot of a counter value.
    pub fn slot(&self, counter: u16) -> usize {
        counter as usize & (self.size() - 1)
    }

    /// Whether `counter` names a slot produced and not yet consumed (`cc <= counter < pc`,
    /// modulo 2^16).
    pub fn is_outstanding(&self, counter: u16) -> bool {
        (counter.wrapping_sub(self.cc) as usize) < self.used()
    }

    /// Take `n` slots; returns the counter of the first.
    pub fn produce(&mut self, n: usize) -> Result<u16, RingError> {
        if n > self.free() {
            return Err(RingError::Full {
                need: n,
                free: self.free(),
            });
        }
        let first = self.pc;
        self.pc = self.pc.wrapping_add(n as u16);
        Ok(first)
    }

    /// Give back the `n` oldest slots.
    pub fn consume(&mut self, n: usize) -> Result<(), RingError> {
        if n > self.used() {
            return Err(RingError::Underflow {
                n,
                used: self.used(),
            });
        }
        self.cc = self.cc.wrapping_add(n as u16);
        Ok(())
    }

    /// Where a run of `n` entries of `entry` bytes starting at counter `first` lies in the
    /// ring: one span, or two when it wraps past the last slot.
    pub fn spans(&self, first: u16, n: usize, entry: usize) -> impl Iterator<Item = Span> {
        let slot = self.slot(first);
        let head = n.min(self.size() - slot);
        let a = Span {
            ring_offset: slot * entry,
            src: 0,
            len: head * entry,
        };
        let b = Span {
            ring_offset: 0,
            src: head * entry,
            len: (n - head) * entry,
        };
        [a, b].into_iter().filter(|s| s.len > 0)
    }
}

/// Consumer side of a completion or event queue of `2^log_size` 64-byte entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRing {
    log_size: u8,
    ci: u32,
}

impl EventRing {
    /// A ring before its first entry.
    pub fn new(log_size: u8) -> Self {
        EventRing { log_size, ci: 0 }
    }

    /// log2 entries.
    pub fn log_size(&self) -> u8 {
        self.log_size
    }

    /// Entries.
    pub fn size(&self) -> usize {
        1 << self.log_size
    }

    /// Consumer index: entries consumed so far (the doorbell record and doorbells carry its
    /// low 24 bits).
    pub fn ci(&self) -> u32 {
        self.ci
    }

    /// Byte offset of the next entry in the ring.
    pub fn offset(&self) -> usize {
        (self.ci as usize & (self.size() - 1)) * CQE_BYTES
    }

    /// The owner bit the next entry has once the device wrote it: `(ci >> log_size) & 1`.
    pub fn valid_owner(&self) -> bool {
        (self.ci >> self.log_size) & 1 == 1
    }

    /// Whether an entry with this owner bit at [`EventRing::offset`] is new.
    pub fn is_valid(&self, owner: bool) -> bool {
        owner == self.valid_owner()
    }

    /// Step past the current entry.
    pub fn advance(&mut self) {
        self.ci = self.ci.wrapping_add(1);
    }

    /// The next entry of the ring at bus address `ring`, if the device has written it: reads
    /// the byte holding `owner` first and the whole entry only after an acquire fence, so a
    /// CQE is never seen half written (the device writes the owner last). Does not advance.
    pub fn peek(
        &self,
        dma: &mut impl DmaMemory,
        ring: u64,
        owner: DescField,
    ) -> Option<[u8; CQE_BYTES]> {
        let addr = ring + self.offset() as u64;
        let mut entry = [0u8; CQE_BYTES];
        let own = owner.byte..owner.byte + owner.container;
        dma.read(addr + owner.byte as u64, &mut entry[own]);
        if !self.is_valid(owner.get(&entry) != 0) {
            return None;
        }
        fence(Ordering::Acquire);
        dma.read(addr, &mut entry);
        Some(entry)
    }
}

impl EventRing {
    /// A compressed session at the current entry, whose title `title` the caller peeked: its
    /// completions as full CQEs ([`expand_session`], with the mini CQEs read from the next
    /// slot), and the slots it took handed back — each slot's `op_own` set to its pass's owner
    /// bit so it reads as not yet written in the next pass (`mlx5e_cqes_update_owner`).
    /// Advances past the session. `None`, not advancing, when the title's count is not 2..=8.
    pub fn take_session(
        &mut self,
        dma: &mut impl DmaMemory,
        ring: u64,
        title: &[u8; CQE_BYTES],
        fmt: MiniFormat,
    ) -> Option<Vec<[u8; CQE_BYTES]>> {
        let n = cqe::BYTE_CNT.get(title) as u32;
        if !(2..=MINI_CQES as u32).contains(&n) {
            return None;
        }
        let mask = (1u32 << self.log_size) - 1;
        let slot = |ctr: u32| ring + (u64::from(ctr & mask)) * CQE_BYTES as u64;
        let mut minis = [0u8; CQE_BYTES];
        dma.read(slot(self.ci.wrapping_add(1)), &mut minis);
        let mut out = expand_session(title, &minis, self.ci, self.log_size, fmt);
        out.truncate(n as usize);
        let own = cqe::OWNER;
        for i in 0..n {
            let ctr = self.ci.wrapping_add(i);
            let mut b = [0u8; CQE_BYTES];
            own.set(&mut b, u64::from((ctr >> self.log_size) & 1));
            cqe::OPCODE.set(&mut b, cqe_opcode::INVALID.into());
            dma.write(
                slot(ctr) + own.byte as u64,
                &b[own.byte..own.byte + own.container],
            );
        }
        self.ci = self.ci.wrapping_add(n);
        Some(out)
    }
}

/// Mini CQEs in a compressed session's array (`MLX5_MINI_CQE_ARRAY_SIZE`).
pub const MINI_CQES: usize = 8;

/// The full CQEs of a compressed session starting at consumer counter `first` in a ring of
/// `2^log_size` slots: the title's fields in each but what a mini CQE carries — `byte_cnt`;
/// send completions their `wqe_counter` and `s_wqe_opcode`; receive completions the hash or
/// the checksum (`fmt`) and a `wqe_counter` counted up from the title's — with format FULL
/// and each slot's owner bit, as if written one by one. All eight; the title's count says
/// how many are real.
pub fn expand_session(
    title: &[u8; CQE_BYTES],
    minis: &[u8; CQE_BYTES],
    first: u32,
    log_size: u8,
    fmt: MiniFormat,
) -> Vec<[u8; CQE_BYTES]> {
    let send = cqe::OPCODE.get(title) == cqe_opcode::REQ.into();
    let wqe0 = cqe::WQE_COUNTER.get(title) as u16;
    (0..MINI_CQES)
        .map(|i| {
            let m = &minis[8 * i..8 * i + 8];
            let mut c = *title;
            cqe::BYTE_CNT.set(&mut c, mini_cqe::BYTE_CNT.get(m));
            cqe::FORMAT.set(&mut c, cqe_format::FULL.into());
            let ctr = first.wrapping_add(i as u32);
            cqe::OWNER.set(&mut c, u64::from((ctr >> log_size) & 1));
            if send {
                cqe::WQE_COUNTER.set(&mut c, mini_cqe::WQE_COUNTER.get(m));
                cqe::S_WQE_OPCODE.set(&mut c, mini_cqe::S_WQE_OPCODE.get(m));
            } else {
                cqe::WQE_COUNTER.set(&mut c, wqe0.wrapping_add(i as u16).into());
                match fmt {
                    MiniFormat::Hash => {
                        cqe::RSS_HASH_RESULT.set(&mut c, mini_cqe::RX_HASH_RESULT.get(m))
                    }
                    MiniFormat::Csum => cqe::CHECK_SUM.set(&mut c, mini_cqe::CHECKSUM.get(m)),
                }
            }
            c
        })
        .collect()
}

/// Fill a new completion or event ring with `init` in every entry (owner 1; see
/// [`crate::desc::Cqe::initial`]).
pub fn init_entries(dma: &mut impl DmaMemory, base: u64, log_size: u8, init: &[u8; CQE_BYTES]) {
    let ring: Vec<u8> = init.repeat(1 << log_size);
    dma.write(base, &ring);
}

/// A queue's doorbell record in host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoorbellRecord {
    /// Bus address of the record's first byte.
    pub addr: u64,
}

impl DoorbellRecord {
    /// Bytes of a record.
    pub const SIZE: usize = dbr::SIZE;

    /// Write one field's container (and only it) of the record.
    fn write(&self, dma: &mut impl DmaMemory, field: DescField, value: u64) {
        let mut rec = [0u8; dbr::SIZE];
        field.set(&mut rec, value);
        let bytes = &rec[field.byte..field.byte + field.container];
        dma.write(self.addr + field.byte as u64, bytes);
    }

    /// RQ: the producer counter (WQEs posted).
    pub fn set_rq_pc(&self, dma: &mut impl DmaMemory, pc: u16) {
        self.write(dma, dbr::RQ_PC, pc.into());
    }

    /// SQ: the producer counter (WQEBBs posted).
    pub fn set_sq_pc(&self, dma: &mut impl DmaMemory, pc: u16) {
        self.write(dma, dbr::SQ_PC, pc.into());
    }

    /// CQ: the consumer index (low 24 bits kept).
    pub fn set_cq_ci(&self, dma: &mut impl DmaMemory, ci: u32) {
        self.write(dma, dbr::CQ_CI, ci.into());
    }

    /// CQ: the arm word.
    pub fn set_cq_arm(&self, dma: &mut impl DmaMemory, arm: CqArm) {
        self.write(dma, dbr::CQ_ARM, arm.word().into());
    }
}

/// The CQ arm word's fields (`arm_sn << 28 | cmd | ci`; not split out in the generated map).
const ARM_SN: Field = Field { lsb: 28, bits: 2 };
const ARM_CMD: Field = Field { lsb: 24, bits: 4 };
const ARM_CI: Field = Field { lsb: 0, bits: 24 };
/// `cmd` value: raise the event only for a CQE with the solicited bit.
const ARM_CMD_SOLICITED: u32 = 1;

/// A CQ arm request: the word written to the CQ's doorbell record (+4) and, with the CQN, to
/// the UAR's CQ doorbell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqArm {
    /// Arm sequence number (2 bits): incremented for each completion event the CQ raised.
    pub sn: u8,
    /// Arm for solicited completions only (nicgen arms for the next completion: false).
    pub solicited: bool,
    /// The consumer index: an event fires once a CQE exists beyond it.
    pub ci: u32,
}

impl CqArm {
    /// The arm word.
    pub fn word(&self) -> u32 {
        ARM_SN.put(self.sn.into())
            | ARM_CMD.put(if self.solicited { ARM_CMD_SOLICITED } else { 0 })
            | ARM_CI.put(self.ci)
    }

    /// The 8 bytes for the UAR CQ doorbell: BE32 arm word, BE32 CQN.
    pub fn doorbell(&self, cqn: u32) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.word().to_be_bytes());
        b[4..].copy_from_slice(&cqn.to_be_bytes());
        b
    }
}

/// The EQ doorbell word's fields (`eqn << 24 | ci`; not in the generated map).
const EQ_DB_EQN: Field = Field { lsb: 24, bits: 8 };
const EQ_DB_CI: Field = Field { lsb: 0, bits: 24 };

/// The register value for an EQ doorbell (`EQ_DB_ARM` / `EQ_DB_NOARM`): the payload is
/// BE32 `(eqn << 24 | ci)` in memory order, so the little-endian register value is its
/// byte-swapped form.
pub fn eq_doorbell(eqn: u8, ci: u32) -> u32 {
    let word = EQ_DB_EQN.put(eqn.into()) | EQ_DB_CI.put(ci);
    u32::from_le_bytes(word.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::{Cqe, Eqe};
    use crate::hw::{DmaError, DmaRegion};

    /// Flat memory at bus address 0.
    struct Mem(Vec<u8>);

    impl DmaMemory for Mem {
        fn alloc(&mut self, len: usize, _align: usize) -> Result<DmaRegion, DmaError> {
            Err(DmaError::OutOfMemory { len })
        }
        fn free(&mut self, _region: DmaRegion) {}
        fn read(&mut self, addr: u64, buf: &mut [u8]) {
            let a = addr as usize;
            buf.copy_from_slice(&self.0[a..a + buf.len()]);
        }
        fn write(&mut self, addr: u64, data: &[u8]) {
            let a = addr as usize;
            self.0[a..a + data.len()].copy_from_slice(data);
        }
    }

    #[test]
    fn counters_wrap_at_16_bits() {
        let mut wq = WorkQueue::new(3).unwrap();
        for _ in 0..8190 {
            wq.produce(8).unwrap();
            wq.consume(8).unwrap();
        }
        assert_eq!((wq.pc(), wq.cc()), (65520, 65520));
        wq.produce(8).unwrap();
        wq.consume(8).unwrap();
        assert_eq!(wq.produce(5), Ok(65528));
        wq.consume(3).unwrap();
        assert_eq!((wq.cc(), wq.used(), wq.free()), (65531, 2, 6));
        assert_eq!(wq.produce(6), Ok(65533));
        assert_eq!(wq.pc(), 3, "the producer counter wrapped");
        assert_eq!((wq.used(), wq.free()), (8, 0));
        assert_eq!(wq.produce(1), Err(RingError::Full { need: 1, free: 0 }));
        assert!(wq.is_outstanding(65531) && wq.is_outstanding(2));
        assert!(!wq.is_outstanding(3) && !wq.is_outstanding(65530));
        assert_eq!(wq.slot(65533), 5);
        assert_eq!(wq.slot(2), 2);
        wq.consume(5).unwrap();
        assert_eq!((wq.cc(), wq.used(), wq.free()), (0, 3, 5));
        assert_eq!(wq.consume(4), Err(RingError::Underflow { n: 4, used: 3 }));
        assert_eq!(
            WorkQueue::new(16),
            Err(RingError::TooLarge {
                log_size: 16,
                max: 15
            })
        );
    }

    #[test]
    fn full_ring_of_the_largest_size_is_not_empty() {
        let mut wq = WorkQueue::new(MAX_LOG_WQ).unwrap();
        wq.produce(1 << 15).unwrap();
        assert_eq!((wq.used(), wq.free()), (1 << 15, 0));
    }

    #[test]
    fn wqe_spans_wrap_at_the_ring_end() {
        let wq = WorkQueue::new(3).unwrap();
        let s: Vec<Span> = wq.spans(6, 3, 64).collect();
        assert_eq!(
            s,
            vec![
                Span {
                    ring_offset: 384,
                    src: 0,
                    len: 128
                },
                Span {
                    ring_offset: 0,
                    src: 128,
                    len: 64
                },
            ]
        );
        let s: Vec<Span> = wq.spans(0xFFF0 + 2, 2, 64).collect();
        assert_eq!(
            s,
            vec![Span {
                ring_offset: 128,
                src: 0,
                len: 128
            }]
        );
        let s: Vec<Span> = wq.spans(7, 1, 16).collect();
        assert_eq!(
            s,
            vec![Span {
                ring_offset: 112,
                src: 0,
                len: 16
            }]
        );
        let s: Vec<Span> = wq.spans(7, 8, 64).collect();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].len, s[1].ring_offset, s[1].len), (64, 0, 448));
    }

    #[test]
    fn a_compressed_session_expands_to_exactly_its_full_cqes() {
        use crate::desc::{CqeOpcode, L3Type};
        // Ring of 8; a full CQE at slot 0, then a session of 5 receive completions at 1..=5,
        // then one of 3 send completions at 6, 7 and 0 (second pass), each owner bit its own.
        let log = 3;
        let mut mem = Mem(vec![0; 8 * 64]);
        init_entries(&mut mem, 0, log, &Cqe::initial());
        let rx = |i: u16, ctr: u32| Cqe {
            opcode: CqeOpcode::RespSend,
            owner: (ctr >> log) & 1 == 1,
            byte_cnt: 60 + u32::from(i),
            check_sum: 0x1000 + i,
            wqe_counter: 0xFFFE_u16.wrapping_add(i),
            // A striding RQ's WQE: not in a mini CQE, the session's completions share it.
            wqe_id: 0x0102,
            rss_hash: 0xABCD,
            l3_type: L3Type::Ipv4,
            qpn: 3,
            timestamp: 77,
            ..Cqe::decode(&Cqe::initial())
        };
        let tx = |i: u16, ctr: u32| Cqe {
            opcode: CqeOpcode::Req,
            owner: (ctr >> log) & 1 == 1,
            byte_cnt: 100 + u32::from(i),
            wqe_counter: 9 * i,
            s_wqe_opcode: 0x0A,
            qpn: 3,
            timestamp: 77,
            ..Cqe::decode(&Cqe::initial())
        };
        // What the device writes for a session: the title (the first completion, format 3,
        // byte_cnt = count) and the mini CQEs (mlx5_mini_cqe8, big-endian) in the next slot.
        let write_session = |mem: &mut Mem, first: u32, full: &[Cqe], send: bool| {
            let mut title = full[0];
            title.format = 3;
            title.byte_cnt = full.len() as u32;
            let mut minis = [0u8; 64];
            for (i, c) in full.iter().enumerate() {
                let m = &mut minis[8 * i..8 * i + 8];
                if send {
                    m[0..2].copy_from_slice(&c.wqe_counter.to_be_bytes());
                    m[2] = c.s_wqe_opcode;
                } else {
                    m[0..2].copy_from_slice(&c.check_sum.to_be_bytes());
                }
                m[4..8].copy_from_slice(&c.byte_cnt.to_be_bytes());
            }
            mem.write(u64::from((first + 1) % 8) * 64, &minis);
            mem.write(u64::from(first % 8) * 64, &title.encode());
        };
        let mut ring = EventRing::new(log);
        let owner = crate::regs::desc::cqe::OWNER;
        mem.write(0, &rx(0, 0).encode());
        assert_eq!(ring.peek(&mut mem, 0, owner), Some(rx(0, 0).encode()));
        ring.advance();
        let five: Vec<Cqe> = (1..6).map(|i| rx(i, u32::from(i))).collect();
        write_session(&mut mem, 1, &five, false);
        let title = ring.peek(&mut mem, 0, owner).unwrap();
        let got = ring
            .take_session(&mut mem, 0, &title, MiniFormat::Csum)
            .unwrap();
        let want: Vec<[u8; 64]> = five.iter().map(Cqe::encode).collect();
        assert_eq!(got, want);
        assert_eq!(ring.ci(), 6);
        let three: Vec<Cqe> = (0..3).map(|i| tx(i, 6 + u32::from(i))).collect();
        write_session(&mut mem, 6, &three, true);
        let title = ring.peek(&mut mem, 0, owner).unwrap();
        let got = ring
            .take_session(&mut mem, 0, &title, MiniFormat::Csum)
            .unwrap();
        assert_eq!(got, three.iter().map(Cqe::encode).collect::<Vec<_>>());
        assert_eq!(ring.ci(), 9);
        // Every slot the sessions took reads as not yet written now and in the next pass.
        assert_eq!(ring.peek(&mut mem, 0, owner), None);
        for slot in 0..8u64 {
            let mut b = [0u8; 64];
            mem.read(slot * 64, &mut b);
            assert_eq!(b[0x3F], 0xF0 | u8::from(slot == 0), "slot {slot}");
        }
        // A count outside 2..=8 is refused.
        let mut bad = rx(9, 9);
        bad.format = 3;
        bad.byte_cnt = 9;
        assert!(ring
            .take_session(&mut mem, 0, &bad.encode(), MiniFormat::Csum)
            .is_none());
    }

    #[test]
    fn owner_rule_over_two_passes() {
        // Device side: pc counts CQEs written; owner = (pc >> log) & 1.
        let log = 2;
        let mut mem = Mem(vec![0; 4 * 64]);
        init_entries(&mut mem, 0, log, &Cqe::initial());
        let mut ring = EventRing::new(log);
        let owner = crate::regs::desc::cqe::OWNER;
        // Nothing valid before the device writes (owner 1 in pass 0).
        assert_eq!(ring.peek(&mut mem, 0, owner), None);
        for pc in 0u32..11 {
            let cqe = Cqe {
                owner: (pc >> log) & 1 == 1,
                wqe_counter: pc as u16,
                ..Cqe::decode(&Cqe::initial())
            };
            mem.write(((pc & 3) * 64) as u64, &cqe.encode());
            let got = ring.peek(&mut mem, 0, owner).map(|b| Cqe::decode(&b));
            assert_eq!(got, Some(cqe), "pc {pc}");
            ring.advance();
            // the next slot still holds the previous pass's entry
            if pc < 10 {
                assert_eq!(ring.peek(&mut mem, 0, owner), None, "pc {pc}");
            }
        }
        assert_eq!(ring.ci(), 11);
        assert_eq!(ring.offset(), 3 * 64);
        // EQEs start at owner 1 too.
        let e = Eqe::initial();
        assert!(!EventRing::new(4).is_valid(Eqe::decode(&e).owner));
    }

    #[test]
    fn doorbell_records_are_big_endian_at_their_offsets() {
        let mut mem = Mem(vec![0xEE; 24]);
        let rq = DoorbellRecord { addr: 0 };
        let sq = DoorbellRecord { addr: 8 };
        let cq = DoorbellRecord { addr: 16 };
        rq.set_rq_pc(&mut mem, 0x1234);
        sq.set_sq_pc(&mut mem, 6);
        cq.set_cq_ci(&mut mem, 0x1AB_CDEF);
        cq.set_cq_arm(
            &mut mem,
            CqArm {
                sn: 2,
                solicited: false,
                ci: 0xABCDEF,
            },
        );
        assert_eq!(&mem.0[0..8], &[0, 0, 0x12, 0x34, 0xEE, 0xEE, 0xEE, 0xEE]);
        assert_eq!(&mem.0[8..16], &[0xEE, 0xEE, 0xEE, 0xEE, 0, 0, 0, 6]);
        assert_eq!(
            &mem.0[16..24],
            &[0, 0xAB, 0xCD, 0xEF, 0x20, 0xAB, 0xCD, 0xEF]
        );
    }

    #[test]
    fn doorbell_payloads() {
        let arm = CqArm {
            sn: 3,
            solicited: false,
            ci: 0x1_000_005,
        };
        assert_eq!(arm.word(), 0x3000_0005);
        assert_eq!(arm.doorbell(0x12), [0x30, 0, 0, 5, 0, 0, 0, 0x12]);
        let sol = CqArm {
            sn: 0,
            solicited: true,
            ci: 1,
        };
        assert_eq!(sol.word(), 0x0100_0001);
        // EQ 2, ci 0x345: bytes 02 00 03 45 in memory order
        assert_eq!(
            eq_doorbell(2, 0x345).to_le_bytes(),
            [0x02, 0x00, 0x03, 0x45]
        );
    }
}
