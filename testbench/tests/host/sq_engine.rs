//! `sq_engine` (with `mr_table`) against the golden model `nicgen_model::sq`, served by the
//! simulated host's DMA (random latency, answers out of order, stalls) at 8, 64 and 512 bits:
//! random SEND, LSO and NOP WQEs (inline headers of every size, VLAN insert, checksum
//! requests, an LSO's mss, up to 14 gather segments at any alignment: pointer segments, inline
//! data segments of 0 up to the most the WQE holds, or both mixed; WQEs of up to 4 WQEBBs
//! wrapping the ring), every frame, offload request and completion compared; then each
//! bad-descriptor case: an error CQE with its syndrome and failing segment, the SQ in error
//! (QUERY), doorbells ignored and counted until RESET, and the queue working again after it.
//! LSO sends of real super-frames (plain, VXLAN, NVGRE) carry the segmentation request the
//! model's `lso_offsets` finds in the frame; an SQ created with an encapsulation context
//! stamps it on every request, and a context out of range is refused. LSO sends longer than
//! the gather ring's share, up to 256 KiB, go out in pieces as one frame; a DMA error in a
//! later piece ends that frame with the abort beat.

use nicgen::sim_tx::tso_cmd;
use nicgen_edsl::Shape;
use nicgen_hdl::eth::eth_tx::TxCmd;
use nicgen_hdl::host::cq_engine::Cmpl as CmplRec;
use nicgen_hdl::host::regs::consts::{cqe_opcode, syndrome};
use nicgen_hdl::host::sq_engine::{sq_engine_encap, SqCfg, SqDb, LSO_MAX, TURN_WQEBBS};
use nicgen_hdl::host::QcmdRes;
use nicgen_hdl::overlay::tx_tso::TsoCmd;
use nicgen_host::{DmaConfig, DmaService, HostMemory, MemoryConfig};
use nicgen_model::cq::Cmpl;
use nicgen_model::encap::{encap, EncapKind};
use nicgen_model::sq::{Mr, Sq, SqLimits, SqRun};
use nicgen_model::tcp::Flags;
use nicgen_model::tso::{lso_offsets, LsoOffsets};
use nicgen_model::tunnel::TunnelConfig;
use nicgen_model::tx::TxRequest;
use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};
use nicgen_tb::record::{PulseDriver, RecordDriver, RecordSink};
use nicgen_tb::stream::{run_until_seeded, step, Status, StreamPorts, StreamSink};
use nicgen_tb::{Model, Sim};
use nicgen_tests::dut;
use nicgen_tests::engines::{qcmd, reset_and_program_mrs, with_mr_table, Host};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

const SQS: u32 = 8;
const MRS: u32 = 4;
const MAX_FRAME: u32 = 9022;
/// The engine's limits: LSO sends up to 256 KiB, gathered in pieces of 16 KiB.
const LIMITS: SqLimits = SqLimits {
    max_frame: MAX_FRAME as usize,
    max_lso: LSO_MAX as usize,
};
const LOG_SIZE: u32 = 4; // 16 WQEBBs
const SQN: u32 = 3;
const CQN: u32 = 5;
/// Encapsulation contexts the engine under test accepts (`ID.OVERLAY.encap_contexts`; the
/// presets' most).
const ENCAP_CONTEXTS: u32 = 48;

fn model(w: u32) -> Option<Model> {
    let cfg = SqCfg {
        data_bits: w,
        sqs: SQS,
        cqs: 8,
        mrs: MRS,
        max_frame: MAX_FRAME,
        max_lso: LSO_MAX,
        log_max: 12,
    };
    let sq = sq_engine_encap(&cfg, ENCAP_CONTEXTS).unwrap();
    // The send engine only reads: the DMA write channel is idle.
    dut(&with_mr_table(&format!("sq_dut_d{w}"), &sq, MRS, Some(w))).map(|d| d.model)
}

struct Bench {
    host: Host,
    db: PulseDriver,
    qcmd: RecordDriver,
    qres: RecordSink,
    tx: StreamSink,
    txcmd: RecordSink,
    cmpl: RecordSink,
}

impl Bench {
    fn step_until(&mut self, sim: &mut Sim, seed: u64, done: impl Fn(&Bench) -> bool) {
        let mut tail = 8;
        run_until_seeded(sim, seed, 3000, |sim| {
            let Bench {
                host,
                db,
                qcmd,
                qres,
                tx,
                txcmd,
                cmpl,
            } = self;
            let p = step(sim, &mut [host, db, qcmd, qres, tx, txcmd, cmpl])?;
            let quiet = self.db.is_idle() && self.qcmd.is_idle() && done(self);
            if quiet {
                tail -= 1;
            }
            Ok(Status::new(p || quiet, quiet && tail == 0))
        })
        .unwrap();
    }
}

/// A send WQE per wire-formats §4.3-4.5 (written here by hand, not with the driver's encoder).
struct Wqe {
    opcode: u8,
    /// Ethernet-segment bytes 0-7 of an LSO: the software-parser offsets, flags and mss.
    lso: Option<Lso>,
    ds_override: Option<u8>,
    cs: u8,
    cq_update: bool,
    inline: Vec<u8>,
    vlan: Option<u16>,
    segs: Vec<Seg>,
}

/// An LSO's Ethernet-segment fields (wire-formats §4.4 bytes 0-3, 5, 6-7).
#[derive(Clone, Copy)]
struct Lso {
    /// swp_outer_l4, swp_outer_l3, swp_inner_l4, swp_inner_l3 (2-byte units).
    swp: [u8; 4],
    swp_flags: u8,
    mss: u16,
}

/// A data segment.
#[derive(Clone)]
enum Seg {
    /// Pointer: byte_count (as written, bit 31 included), lkey, addr.
    Ptr(u32, u32, u64),
    /// Inline: the byte count written (bit 31 added), and the bytes that follow it (the
    /// segment's DS units are those of the bytes, so a count above their length lies).
    Inline(u32, Vec<u8>),
}

impl Seg {
    fn inline(data: Vec<u8>) -> Seg {
        Seg::Inline(data.len() as u32, data)
    }
    /// DS units it takes.
    fn ds(&self) -> usize {
        match self {
            Seg::Ptr(..) => 1,
            Seg::Inline(_, d) => (4 + d.len()).div_ceil(16),
        }
    }
    /// Frame bytes it adds.
    fn len(&self) -> usize {
        match self {
            Seg::Ptr(n, ..) => *n as usize,
            Seg::Inline(_, d) => d.len(),
        }
    }
}

impl Wqe {
    fn bytes(&self, index: u16) -> Vec<u8> {
        let ihs = self.inline.len();
        let inl_ds = if ihs > 2 { (ihs - 2).div_ceil(16) } else { 0 };
        let real_ds = 2 + inl_ds + self.segs.iter().map(Seg::ds).sum::<usize>();
        let ds = self.ds_override.unwrap_or(real_ds as u8);
        // The WQE's real size (a wrong DS count does not change what was posted).
        let mut b = vec![0u8; 64 * real_ds.div_ceil(4)];
        b[0..4].copy_from_slice(&((index as u32) << 8 | self.opcode as u32).to_be_bytes());
        b[4..8].copy_from_slice(&(SQN << 8 | ds as u32).to_be_bytes());
        b[11] = if self.cq_update { 0x08 } else { 0 };
        b[20] = self.cs;
        if let Some(l) = self.lso {
            b[16..20].copy_from_slice(&l.swp);
            b[21] = l.swp_flags;
            b[22..24].copy_from_slice(&l.mss.to_be_bytes());
        }
        if ihs > 0 {
            b[28..30].copy_from_slice(&(ihs as u16).to_be_bytes());
            b[30..30 + ihs].copy_from_slice(&self.inline);
        } else if let Some(t) = self.vlan {
            b[28..30].copy_from_slice(&0x8000u16.to_be_bytes());
            b[30..32].copy_from_slice(&t.to_be_bytes());
        }
        let mut o = 16 * (2 + inl_ds);
        for s in &self.segs {
            match s {
                Seg::Ptr(n, lkey, addr) => {
                    b[o..o + 4].copy_from_slice(&n.to_be_bytes());
                    b[o + 4..o + 8].copy_from_slice(&lkey.to_be_bytes());
                    b[o + 8..o + 16].copy_from_slice(&addr.to_be_bytes());
                }
                Seg::Inline(n, d) => {
                    b[o..o + 4].copy_from_slice(&(n | 0x8000_0000).to_be_bytes());
                    b[o + 4..o + 4 + d.len()].copy_from_slice(d);
                }
            }
            o += 16 * s.ds();
        }
        b
    }
}

struct Queue {
    ring: u64,
    /// log2 WQEBBs in the ring.
    log_size: u32,
    dbr: u64,
    pc: u16,
    model: Sq,
}

impl Queue {
    /// Write `wqe` at the producer counter (wrapping WQEBB by WQEBB).
    fn post(&mut self, mem: &mut HostMemory, wqe: &Wqe) {
        let bytes = wqe.bytes(self.pc);
        for (j, bb) in bytes.chunks(64).enumerate() {
            let slot = (self.pc as u64 + j as u64) & ((1 << self.log_size) - 1);
            mem.write(self.ring + slot * 64, bb).unwrap();
        }
        self.pc = self.pc.wrapping_add((bytes.len() / 64) as u16);
    }
    /// Publish the producer counter in the doorbell record.
    fn publish(&self, mem: &mut HostMemory) {
        mem.write(self.dbr + 4, &(self.pc as u32).to_be_bytes())
            .unwrap();
    }
}

/// A write of dword `index` of the doorbell / BlueFlame window: `bytes` in memory order.
fn uar_write(index: usize, bytes: &[u8]) -> Vec<u8> {
    SqDb::shape().encode(&SqDb {
        index: index as u128,
        data: u32::from_le_bytes(bytes[..4].try_into().unwrap()) as u128,
    })
}

/// A plain doorbell for `sqn`: the `qpn_ds` dword (its DS count is not looked at).
fn doorbell(sqn: u32) -> Vec<u8> {
    uar_write(1, &(sqn << 8).to_be_bytes())
}

fn sq_cmd(op: u128, index: u128, ins: [u128; 8]) -> Vec<u8> {
    qcmd(op, 2, index, ins)
}

fn decode_cmpl(item: &[u8]) -> Cmpl {
    let f = CmplRec::shape().decode(item);
    Cmpl {
        cqn: f.cqn as u32,
        opcode: f.opcode as u8,
        syndrome: f.syndrome as u8,
        vendor_err_synd: f.vendor_err_synd as u8,
        qpn: f.qpn as u32,
        s_wqe_opcode: f.s_wqe_opcode as u8,
        wqe_counter: f.wqe_counter as u16,
        wqe_id: f.wqe_id as u16,
        byte_cnt: f.byte_cnt as u32,
        ..Cmpl::default()
    }
}

/// The offload request as the model states it (the encapsulation context is an index here,
/// checked by [`decode_encap`]).
fn decode_cmd(item: &[u8]) -> TxRequest {
    let f = TxCmd::shape().decode(item);
    let tso = decode_tso(item);
    TxRequest {
        csum_l3: f.csum_l3 == 1,
        csum_l4: f.csum_l4 == 1,
        vlan_tci: (f.vlan == 1).then_some(f.vlan_tci as u16),
        mss: (tso.lso == 1).then_some(tso.mss as usize),
        ..TxRequest::default()
    }
}

/// The segmentation request (`TxCmd::tso`) of an offload request.
fn decode_tso(item: &[u8]) -> TsoCmd<u128> {
    TsoCmd::shape().decode(&TxCmd::shape().decode(item).tso.to_le_bytes())
}

/// The encapsulation of an offload request: `(encap, encap_ctx)`.
fn decode_encap(item: &[u8]) -> (u128, u128) {
    let f = TxCmd::shape().decode(item);
    (f.encap, f.encap_ctx)
}

/// Random good WQEs whose pointer segments lie in `buf` (registered as lkey 1): gather lists
/// of pointer segments only, inline data segments only, or both mixed.
fn random_wqe(rng: &mut StdRng, buf: (u64, usize), room_bbs: usize) -> Wqe {
    loop {
        let nop = rng.gen_bool(0.1);
        let ihs = [0usize, 0, 2, 14, 18, 40, 100][rng.gen_range(0..7)];
        let most = if rng.gen_bool(0.1) { 12 } else { 3 };
        let nseg = if nop {
            0
        } else {
            rng.gen_range(usize::from(ihs == 0)..=most)
        };
        // 0: pointer segments, 1: inline data segments, 2: mixed.
        let kind = rng.gen_range(0..3);
        let inl_ds = if ihs > 2 { (ihs - 2).div_ceil(16) } else { 0 };
        let mut ds = 2 + inl_ds;
        let mut segs = Vec::new();
        for _ in 0..nseg {
            if ds >= 16 {
                break;
            }
            let inline = kind == 1 || (kind == 2 && rng.gen_bool(0.5));
            let seg = if inline {
                // 0 up to all the DS units left.
                let most = 16 * (16 - ds) - 4;
                let len = match rng.gen_range(0..10) {
                    0 => 0,
                    1 | 2 => most,
                    3..=6 => rng.gen_range(1..=most.min(40)),
                    _ => rng.gen_range(0..=most),
                };
                Seg::inline((0..len).map(|_| rng.gen()).collect())
            } else {
                let len = if rng.gen_bool(0.3) {
                    rng.gen_range(1..40)
                } else {
                    rng.gen_range(40..1400)
                };
                let at = rng.gen_range(0..buf.1 - len);
                Seg::Ptr(len as u32, 1, buf.0 + at as u64)
            };
            ds += seg.ds();
            segs.push(seg);
        }
        if ds > 16 || ds.div_ceil(4) > room_bbs {
            continue;
        }
        let total: usize = ihs + segs.iter().map(Seg::len).sum::<usize>();
        if total > MAX_FRAME as usize || (!nop && total == 0) {
            continue;
        }
        let mut wqe = Wqe {
            opcode: if nop { 0x00 } else { 0x0A },
            lso: None,
            ds_override: None,
            cs: [0u8, 0x40, 0x80, 0xC0][rng.gen_range(0..4)],
            cq_update: rng.gen_bool(0.7),
            inline: (0..ihs).map(|_| rng.gen()).collect(),
            vlan: (ihs == 0 && rng.gen_bool(0.3)).then(|| rng.gen()),
            segs,
        };
        // Some sends with an inline header of an Ethernet header or more go as LSOs: any mss
        // and software-parser fields the request carries (plain or tunnelled).
        if !nop && ihs >= 14 && rng.gen_bool(0.3) {
            let mut swp = [0u8; 4];
            for o in &mut swp {
                *o = rng.gen_range(0..128);
            }
            if rng.gen() {
                swp[3] = 0; // plain
            }
            wqe.opcode = 0x0E;
            wqe.lso = Some(Lso {
                swp,
                swp_flags: rng.gen(),
                mss: rng.gen_range(1..16384),
            });
        }
        return wqe;
    }
}

struct Setup {
    sim: Sim,
    b: Bench,
    q: Queue,
    buf: (u64, usize),
    mrs: Vec<Option<Mr>>,
    answers: usize,
    /// Frames, offload requests and completions seen when the first doorbell not yet checked
    /// was rung.
    mark: Option<(usize, usize, usize)>,
}

fn setup(m: &Model, seed: u64, dma: DmaConfig, backpressure: f64) -> Setup {
    setup_sized(m, seed, dma, backpressure, LOG_SIZE)
}

/// [`setup`] with a ring of `2^log_size` WQEBBs.
fn setup_sized(m: &Model, seed: u64, dma: DmaConfig, backpressure: f64, log_size: u32) -> Setup {
    let mut s = setup_raw(m, seed, dma, backpressure, log_size);
    let create = sq_create(SQN, s.q.ring, s.q.dbr, log_size);
    assert_eq!(s.command(create, seed), 0, "CREATE");
    s
}

/// CREATE for SQ `sqn`: its ring of 2^`log_size` WQEBBs and doorbell record at `ring` and
/// `dbr`, completing to CQ `CQN`.
fn sq_create(sqn: u32, ring: u64, dbr: u64, log_size: u32) -> Vec<u8> {
    sq_create_encap(sqn, ring, dbr, log_size, None)
}

/// [`sq_create`] with an encapsulation context (`qcmd_in.encap`, `encap_ctx`: IN word 6).
fn sq_create_encap(sqn: u32, ring: u64, dbr: u64, log_size: u32, encap: Option<u8>) -> Vec<u8> {
    sq_cmd(
        1,
        sqn as u128,
        [
            (ring & 0xFFFF_FFFF) as u128,
            (ring >> 32) as u128,
            log_size as u128,
            (dbr & 0xFFFF_FFFF) as u128,
            (dbr >> 32) as u128,
            CQN as u128,
            encap.map_or(0, |c| 1 << 31 | c as u128),
            0,
        ],
    )
}

fn setup_raw(m: &Model, seed: u64, dma: DmaConfig, backpressure: f64, log_size: u32) -> Setup {
    let mut sim = m.instance();
    let mut mem = HostMemory::new(MemoryConfig::default()).unwrap();
    let ring = mem.alloc(64 << log_size, 4096).unwrap().addr;
    let dbr = mem.alloc(8, 8).unwrap().addr;
    // Room for an LSO send of 256 KiB at any alignment.
    let buf = mem.alloc(320 * 1024, 64).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let fill: Vec<u8> = (0..buf.len).map(|_| rng.gen()).collect();
    mem.write(buf.addr, &fill).unwrap();
    // lkey 1: the buffer; lkey 2: a region over unallocated memory (reads fail); 0, 3 invalid.
    let mrs = vec![
        None,
        Some(Mr {
            base: buf.addr,
            len: buf.len as u64,
        }),
        Some(Mr {
            base: buf.addr + (1 << 30),
            len: 1 << 20,
        }),
        None,
    ];
    reset_and_program_mrs(&mut sim, &mrs);
    let b = Bench {
        host: Host {
            dma: DmaService::new(&sim, dma).unwrap(),
            mem,
        },
        db: PulseDriver::new(&sim, "s_db", 3).unwrap(),
        qcmd: RecordDriver::new(&sim, "s_qcmd", seed, 0.2).unwrap(),
        qres: RecordSink::new(&sim, "m_qcmd_res", seed + 1, backpressure).unwrap(),
        tx: StreamSink::new(
            StreamPorts::new(&sim, "m_axis_tx").unwrap(),
            seed + 2,
            backpressure,
        ),
        txcmd: RecordSink::new(&sim, "m_axis_tx_cmd", seed + 3, backpressure).unwrap(),
        cmpl: RecordSink::new(&sim, "m_cmpl", seed + 4, backpressure).unwrap(),
    };
    Setup {
        sim,
        b,
        q: Queue {
            ring,
            log_size,
            dbr,
            pc: 0,
            model: Sq {
                sqn: SQN,
                ring,
                log_size,
                cqn: CQN,
                ci: 0,
                error: false,
            },
        },
        buf: (buf.addr, buf.len),
        mrs,
        answers: 0,
        mark: None,
    }
}

impl Setup {
    /// Run a queue command; its status.
    fn command(&mut self, cmd: Vec<u8>, seed: u64) -> u64 {
        self.b.qcmd.push(cmd);
        self.answers += 1;
        let n = self.answers;
        self.b
            .step_until(&mut self.sim, seed, |b| b.qres.items.len() == n);
        QcmdRes::shape().decode(&self.b.qres.items[n - 1]).status as u64
    }

    fn query(&mut self, seed: u64) -> [u64; 4] {
        self.command(sq_cmd(4, SQN as u128, [0; 8]), seed);
        let f = QcmdRes::shape().decode(self.b.qres.items.last().unwrap());
        [f.out0, f.out1, f.out2, f.out3].map(|x| x as u64)
    }

    /// CREATE another SQ, `sqn`, of 2^`log_size` WQEBBs completing to CQ `CQN`, with its ring
    /// and doorbell record in host memory.
    fn create_sq(&mut self, sqn: u32, log_size: u32, seed: u64) -> Queue {
        let mem = &mut self.b.host.mem;
        let ring = mem.alloc(64 << log_size, 4096).unwrap().addr;
        let dbr = mem.alloc(8, 8).unwrap().addr;
        let create = sq_create(sqn, ring, dbr, log_size);
        assert_eq!(self.command(create, seed), 0, "CREATE SQ {sqn}");
        Queue {
            ring,
            log_size,
            dbr,
            pc: 0,
            model: Sq {
                sqn,
                ring,
                log_size,
                cqn: CQN,
                ci: 0,
                error: false,
            },
        }
    }

    /// Post `wqes`, publish, ring, and check what the engine does against the model.
    fn round(&mut self, wqes: &[Wqe], seed: u64, what: &str) -> SqRun {
        self.ring(wqes);
        self.check(seed, what)
    }

    /// Post `wqes`, publish and ring the doorbell (without waiting).
    fn ring(&mut self, wqes: &[Wqe]) {
        for w in wqes {
            self.q.post(&mut self.b.host.mem, w);
        }
        self.q.publish(&mut self.b.host.mem);
        self.b.db.push(doorbell(SQN));
        if self.mark.is_none() {
            self.mark = Some((
                self.b.tx.frames().len(),
                self.b.txcmd.items.len(),
                self.b.cmpl.items.len(),
            ));
        }
    }

    /// Run `n` cycles.
    fn cycles(&mut self, n: usize) {
        let b = &mut self.b;
        for _ in 0..n {
            step(
                &mut self.sim,
                &mut [
                    &mut b.host,
                    &mut b.db,
                    &mut b.qcmd,
                    &mut b.qres,
                    &mut b.tx,
                    &mut b.txcmd,
                    &mut b.cmpl,
                ],
            )
            .unwrap();
        }
    }

    /// Post `wqe` into the ring, publish the producer counter, then write the WQE through the
    /// BlueFlame window: its dwords from 2 on in a random order (all of its `16 * DS` bytes, or
    /// all but one when `cut`), then dwords 0 and 1 (the doorbell). Returns what the model
    /// does for it (`Sq::run_blueflame`) and whether the BlueFlame WQE is used.
    fn ring_bf(&mut self, wqe: &Wqe, rng: &mut StdRng, cut: bool) -> (SqRun, bool) {
        let bytes = wqe.bytes(self.q.pc);
        self.q.post(&mut self.b.host.mem, wqe);
        self.q.publish(&mut self.b.host.mem);
        let ds = (bytes[7] & 0x3F) as usize;
        let n = (4 * ds).clamp(2, bytes.len() / 4);
        let mut order: Vec<usize> = (2..n).collect();
        order.shuffle(rng);
        let mut bf = bytes[..4 * n].to_vec();
        if cut {
            let k = order.remove(rng.gen_range(0..order.len()));
            bf.truncate(4 * k);
        }
        if self.mark.is_none() {
            self.mark = Some((
                self.b.tx.frames().len(),
                self.b.txcmd.items.len(),
                self.b.cmpl.items.len(),
            ));
        }
        for &i in &order {
            self.b.db.push(uar_write(i, &bytes[4 * i..4 * i + 4]));
        }
        self.b.db.push(uar_write(0, &bytes[0..4]));
        self.b.db.push(uar_write(1, &bytes[4..8]));
        let mem = &self.b.host.mem;
        let read = |addr: u64, len: usize| {
            let mut v = vec![0; len];
            mem.read(addr, &mut v).ok().map(|_| v)
        };
        self.q
            .model
            .run_blueflame(&bf, &read, self.q.pc, &self.mrs, LIMITS)
    }

    /// Check what the engine does for everything rung so far against the model.
    fn check(&mut self, seed: u64, what: &str) -> SqRun {
        let mem = &self.b.host.mem;
        let read = |addr: u64, len: usize| {
            let mut v = vec![0; len];
            mem.read(addr, &mut v).ok().map(|_| v)
        };
        let want = self.q.model.run(&read, self.q.pc, &self.mrs, LIMITS);
        self.compare(want, seed, what)
    }

    /// Check what the engine does for everything rung so far against `want`, the model's.
    fn compare(&mut self, want: SqRun, seed: u64, what: &str) -> SqRun {
        let (f0, c0, k0) = self.mark.take().unwrap_or((
            self.b.tx.frames().len(),
            self.b.txcmd.items.len(),
            self.b.cmpl.items.len(),
        ));
        let (nf, nc) = (want.sent.len(), want.cmpls.len());
        self.b.step_until(&mut self.sim, seed, |b| {
            b.tx.frames().len() >= f0 + nf
                && b.txcmd.items.len() >= c0 + nf
                && b.cmpl.items.len() >= k0 + nc
        });
        let frames: Vec<(Vec<u8>, u64)> = self.b.tx.frames()[f0..]
            .iter()
            .map(|f| (f.data.clone(), f.user))
            .collect();
        let cmds: Vec<TxRequest> = self.b.txcmd.items[c0..]
            .iter()
            .map(|x| decode_cmd(x))
            .collect();
        let cmpls: Vec<Cmpl> = self.b.cmpl.items[k0..]
            .iter()
            .map(|x| decode_cmpl(x))
            .collect();
        assert_eq!(frames.len(), nf, "{what}: frames");
        for (i, ((f, user), s)) in frames.iter().zip(&want.sent).enumerate() {
            // An aborted send ends with the abort beat: one byte more, `tuser` set.
            let sent = match s.req.aborted {
                true => &f[..f.len().saturating_sub(1)],
                false => &f[..],
            };
            if sent != &s.frame[..] {
                let at = sent.iter().zip(&s.frame).position(|(a, b)| a != b);
                let diff = sent.iter().zip(&s.frame).filter(|(a, b)| a != b).count();
                let near = at.map(|a| {
                    let e = (a + 16).min(sent.len()).min(s.frame.len());
                    (sent[a..e].to_vec(), s.frame[a..e].to_vec())
                });
                panic!(
                    "{what}: frame {i}: {} bytes against the model's {}, {diff} differ, the \
                     first at {at:?}: {near:?}",
                    sent.len(),
                    s.frame.len()
                );
            }
            assert_eq!(*user, u64::from(s.req.aborted), "{what}: frame {i} aborted");
            let req = TxRequest {
                aborted: false,
                ..s.req
            };
            assert_eq!(cmds[i], req, "{what}: offload request {i}");
        }
        assert_eq!(cmpls, want.cmpls, "{what}: completions");
        want
    }
}

#[test]
fn sq_engine_matches_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let knobs = [
            (
                DmaConfig {
                    seed: 10 + wi as u64,
                    ..DmaConfig::default()
                },
                0.0,
            ),
            (
                DmaConfig {
                    seed: 20 + wi as u64,
                    latency_min: 1,
                    latency_max: 3,
                    reorder: false,
                    req_stall: 0.3,
                    ..DmaConfig::default()
                },
                0.4,
            ),
        ];
        for (ki, (dma, bp)) in knobs.into_iter().enumerate() {
            let seed = 100 * wi as u64 + ki as u64;
            let mut s = setup(&m, seed, dma, bp);
            let mut rng = StdRng::seed_from_u64(seed);
            for round in 0..8 {
                let mut wqes = Vec::new();
                let mut room = 1usize << LOG_SIZE;
                for _ in 0..rng.gen_range(1..=5) {
                    let wq = random_wqe(&mut rng, s.buf, room);
                    room -= wq.bytes(0).len() / 64;
                    wqes.push(wq);
                    if room < 4 {
                        break;
                    }
                }
                let what = format!("w={w} knobs {ki} round {round}");
                let run = s.round(&wqes, seed, &what);
                if s.q.model.error {
                    let c = run.cmpls.last().unwrap();
                    let mut bb = vec![0u8; 64];
                    let slot = c.wqe_counter as u64 & ((1 << LOG_SIZE) - 1);
                    s.b.host.mem.read(s.q.ring + slot * 64, &mut bb).unwrap();
                    panic!("{what}: a good WQE failed: {c:?}\nWQEBB {bb:02x?}");
                }
            }
            let [state, pc, ci, _] = s.query(seed);
            assert_eq!(
                (state, pc, ci),
                (1, s.q.pc as u64, s.q.pc as u64),
                "w={w}: QUERY after the good rounds"
            );
        }
    }
}

/// The rest of a WQE of several WQEBBs comes in one read, cut where a 4 KiB page or the ring
/// ends (the simulated host refuses a read across a page): on a ring of two pages, NOPs bring
/// the producer counter 1, 2 or 3 WQEBBs short of a boundary (alternately the page end and the
/// ring end), then WQEs of 4 and 3 WQEBBs (all inline) go across it.
#[test]
fn long_wqes_across_a_page_end_and_the_ring_end() {
    let Some(m) = model(64) else { return };
    let dma = DmaConfig {
        seed: 9,
        ..DmaConfig::default()
    };
    let mut s = setup_sized(&m, 9, dma, 0.3, 7);
    let mut rng = StdRng::seed_from_u64(9);
    for round in 0..6u16 {
        let short = 1 + round % 3;
        let nops = (64 - short).wrapping_sub(s.q.pc) % 64;
        let mut wqes: Vec<Wqe> = (0..nops)
            .map(|_| Wqe {
                opcode: 0x00,
                lso: None,
                ds_override: None,
                cs: 0,
                cq_update: false,
                inline: vec![],
                vlan: None,
                segs: vec![],
            })
            .collect();
        for len in [rng.gen_range(157..=220), rng.gen_range(93..=156)] {
            wqes.push(Wqe {
                opcode: 0x0A,
                lso: None,
                ds_override: None,
                cs: 0,
                cq_update: true,
                inline: vec![],
                vlan: None,
                segs: vec![Seg::inline((0..len).map(|_| rng.gen()).collect())],
            });
        }
        let run = s.round(&wqes, 9, &format!("round {round}"));
        assert_eq!(run.sent.len(), 2, "round {round}");
        assert!(!s.q.model.error, "round {round}: {:?}", run.cmpls);
    }
}

#[test]
fn bad_descriptors_complete_in_error_and_the_queue_recovers() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 7, DmaConfig::default(), 0.2);
    let buf = s.buf;
    let good = |n: u32| Wqe {
        opcode: 0x0A,
        lso: None,
        ds_override: None,
        cs: 0xC0,
        cq_update: true,
        inline: vec![],
        vlan: None,
        segs: vec![Seg::Ptr(n, 1, buf.0 + 100)],
    };
    let with = |f: &dyn Fn(&mut Wqe)| {
        let mut w = good(60);
        f(&mut w);
        w
    };
    // A good LSO (plain TCP/IPv4 offsets, a 54-byte inline header) but for what `f` changes.
    let lso_with = |f: &dyn Fn(&mut Lso)| {
        let mut l = Lso {
            swp: [17, 7, 0, 0],
            swp_flags: 0,
            mss: 1000,
        };
        f(&mut l);
        Wqe {
            opcode: 0x0E,
            lso: Some(l),
            inline: vec![0x45; 54],
            ..good(60)
        }
    };
    let cases: Vec<(&str, Wqe, u64, u8)> = vec![
        (
            "zero-length segment",
            with(&|w| w.segs.push(Seg::Ptr(0, 1, buf.0))),
            syndrome::LOCAL_LENGTH,
            3,
        ),
        (
            "frame over the maximum",
            with(&|w| w.segs.push(Seg::Ptr(MAX_FRAME, 1, buf.0))),
            syndrome::LOCAL_LENGTH,
            3,
        ),
        ("empty frame", with(&|w| w.segs.clear()), 0x01, 2),
        (
            "invalid lkey",
            with(&|w| w.segs[0] = Seg::Ptr(60, 3, buf.0 + 100)),
            syndrome::LOCAL_PROT,
            2,
        ),
        (
            "lkey beyond the table",
            with(&|w| w.segs[0] = Seg::Ptr(60, 77, buf.0 + 100)),
            syndrome::LOCAL_PROT,
            2,
        ),
        (
            "segment outside its region",
            with(&|w| w.segs[0] = Seg::Ptr(60, 1, buf.0 + buf.1 as u64 - 10)),
            syndrome::LOCAL_PROT,
            2,
        ),
        ("unknown opcode", with(&|w| w.opcode = 0x08), 0x02, 0),
        ("DS count 0", with(&|w| w.ds_override = Some(0)), 0x02, 0),
        (
            "DS count over 16",
            with(&|w| w.ds_override = Some(20)),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "inline data segment longer than the WQE",
            with(&|w| w.segs[0] = Seg::Ptr(60 | 0x8000_0000, 1, buf.0 + 100)),
            syndrome::LOCAL_QP_OP,
            2,
        ),
        (
            "inline data beyond the DS count, after good inline data",
            with(&|w| {
                w.segs.push(Seg::inline(vec![7; 30]));
                w.segs.push(Seg::Inline(29, vec![8; 12]));
            }),
            syndrome::LOCAL_QP_OP,
            6,
        ),
        (
            "inline byte count of 2^31 - 1",
            with(&|w| w.segs.insert(0, Seg::Inline(0x7FFF_FFFF, vec![9; 40]))),
            syndrome::LOCAL_QP_OP,
            2,
        ),
        (
            "inline data over the largest frame",
            with(&|w| {
                w.segs[0] = Seg::Ptr(MAX_FRAME - 20, 1, buf.0);
                w.segs.push(Seg::inline(vec![5; 21]));
            }),
            syndrome::LOCAL_LENGTH,
            3,
        ),
        (
            "zero-length pointer segment after inline data",
            with(&|w| {
                w.segs.insert(0, Seg::inline(vec![3; 5]));
                w.segs.push(Seg::Ptr(0, 1, buf.0));
            }),
            syndrome::LOCAL_LENGTH,
            4,
        ),
        (
            "empty frame of zero-length inline segments",
            with(&|w| w.segs = vec![Seg::inline(vec![]), Seg::inline(vec![])]),
            syndrome::LOCAL_LENGTH,
            4,
        ),
        (
            "invalid lkey after inline data",
            with(&|w| {
                w.segs.insert(0, Seg::inline(vec![4; 44]));
                w.segs.push(Seg::Ptr(8, 0, buf.0));
            }),
            syndrome::LOCAL_PROT,
            6,
        ),
        (
            "LSO with mss 0",
            lso_with(&|l| l.mss = 0),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "LSO with mss over 16383",
            lso_with(&|l| l.mss = 16384),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "LSO with a software-parser offset of 256 bytes",
            lso_with(&|l| l.swp[0] = 128),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "LSO with an inline header under 14 bytes",
            with(&|w| {
                *w = lso_with(&|_| {});
                w.inline.truncate(13);
            }),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "LSO with a VLAN insert instead of an inline header",
            with(&|w| {
                *w = lso_with(&|_| {});
                w.inline.clear();
                w.vlan = Some(5);
            }),
            syndrome::LOCAL_QP_OP,
            0,
        ),
        (
            "unreadable memory",
            with(&|w| w.segs[0] = Seg::Ptr(64, 2, buf.0 + (1 << 30))),
            syndrome::LOCAL_ACCESS,
            3,
        ),
        (
            "unreadable memory between inline data",
            with(&|w| {
                w.segs.insert(0, Seg::inline(vec![6; 20]));
                w.segs.push(Seg::Ptr(64, 2, buf.0 + (1 << 30)));
                w.segs.push(Seg::inline(vec![6; 9]));
            }),
            syndrome::LOCAL_ACCESS,
            7,
        ),
    ];
    for (what, wqe, synd, seg) in cases {
        fails_then_resets(&mut s, what, wqe, good(100), synd, seg, 7);
    }
    let bad_before = |s: &Setup| s.sim.get_u64(s.sim.port("stat_db_bad").unwrap());
    // Doorbells for SQs never created, or beyond the table.
    let before = bad_before(&s);
    for sqn in [1u32, 200] {
        s.b.db.push(doorbell(sqn));
    }
    s.b.step_until(&mut s.sim, 7, |_| true);
    assert_eq!(bad_before(&s), before + 2);
    // Commands refused.
    assert_eq!(
        s.command(sq_cmd(1, SQN as u128, [0x1000, 0, 4, 0, 0, 1, 0, 0]), 7),
        0x09,
        "CREATE twice"
    );
    assert_eq!(
        s.command(sq_cmd(1, 5, [0x1000, 0, 0, 0, 0, 1, 0, 0]), 7),
        0x03,
        "log_size 0"
    );
    assert_eq!(
        s.command(sq_cmd(1, 5, [0x1000, 0, 4, 0, 0, 99, 0, 0]), 7),
        0x03,
        "CQ out of range"
    );
    assert_eq!(
        s.command(sq_cmd(1, 50, [0x1000, 0, 4, 0, 0, 1, 0, 0]), 7),
        0x0A,
        "SQ out of range"
    );
    assert_eq!(
        s.command(sq_cmd(2, 6, [0; 8]), 7),
        0x09,
        "DESTROY of nothing"
    );
}

/// Ring `wqe` (which must fail with `synd`, blaming segment `seg`) and `next` behind it:
/// the error CQE, the SQ in error (QUERY), a doorbell then ignored and counted, RESET, and
/// `next` executed after it; everything against the model.
fn fails_then_resets(
    s: &mut Setup,
    what: &str,
    wqe: Wqe,
    next: Wqe,
    synd: u64,
    seg: u8,
    seed: u64,
) {
    let bad_before = |s: &Setup| s.sim.get_u64(s.sim.port("stat_db_bad").unwrap());
    let run = s.round(&[wqe, next], seed, what);
    let last = run
        .cmpls
        .last()
        .unwrap_or_else(|| panic!("{what}: the model completed nothing: {run:?}"));
    assert_eq!(
        (
            u64::from(last.opcode),
            u64::from(last.syndrome),
            last.vendor_err_synd
        ),
        (cqe_opcode::REQ_ERR, synd, seg),
        "{what}: error CQE (opcode, syndrome, failing segment)"
    );
    assert!(s.q.model.error);
    let [state, _, ci, err] = s.query(seed);
    assert_eq!(state, 3, "{what}: SQ in error");
    assert_eq!(
        ci, s.q.model.ci as u64,
        "{what}: the failed WQE is consumed"
    );
    assert_eq!(err & 0xFF, synd, "{what}: QUERY shows the syndrome");
    // A doorbell now is ignored and counted; RESET resumes with the next WQE.
    let before = bad_before(s);
    s.b.db.push(doorbell(SQN));
    let n = s.b.cmpl.items.len();
    s.b.step_until(&mut s.sim, seed, |_| true);
    assert_eq!(
        bad_before(s),
        before + 1,
        "{what}: doorbell on an SQ in error"
    );
    assert_eq!(s.b.cmpl.items.len(), n);
    assert_eq!(
        s.command(sq_cmd(3, SQN as u128, [0; 8]), seed),
        0,
        "{what}: RESET"
    );
    s.q.model.error = false;
    s.round(&[], seed, &format!("{what}: after RESET"));
}

/// Packets an enhanced multi-packet send WQE carries at most: the engine's WQE register
/// holds 16 DS, two of them the ctrl and Ethernet segments.
const MPW_MAX_PACKETS: usize = 14;

/// A random good enhanced multi-packet send WQE (opcode 0x29): `n` packets (1..=14), pointer
/// segments in `buf` (lkey 1) or inline, small ones mostly, all fitting the DS count and, each
/// at a 64-byte start, the gather buffer.
fn random_mpwqe(rng: &mut StdRng, buf: (u64, usize), n: usize, kind: u8) -> Wqe {
    loop {
        let mut ds = 2;
        let mut segs = Vec::new();
        for i in 0..n {
            // Inline packets only while the rest can still be one DS each.
            let room = 16usize.saturating_sub(ds + (n - 1 - i));
            let inline = match kind {
                0 => false,
                1 => true,
                _ => rng.gen_bool(0.4),
            } && room >= 2;
            let seg = if inline {
                let most = 16 * room - 4;
                let len = if rng.gen_bool(0.2) {
                    most
                } else {
                    rng.gen_range(1..=most.min(60))
                };
                Seg::inline((0..len).map(|_| rng.gen()).collect())
            } else {
                let len = match rng.gen_range(0..10) {
                    0..=5 => rng.gen_range(1..=128),
                    6..=8 => rng.gen_range(129..=1514),
                    _ => rng.gen_range(1515..=MAX_FRAME as usize),
                };
                let at = rng.gen_range(0..buf.1 - len);
                Seg::Ptr(len as u32, 1, buf.0 + at as u64)
            };
            ds += seg.ds();
            segs.push(seg);
        }
        let laid: usize = segs.iter().map(|s| s.len().next_multiple_of(64)).sum();
        if ds > 16 || segs.len() != n || laid > LIMITS.piece() {
            continue;
        }
        return Wqe {
            opcode: 0x29,
            lso: None,
            ds_override: None,
            cs: [0u8, 0x40, 0x80, 0xC0][rng.gen_range(0..4)],
            cq_update: rng.gen_bool(0.8),
            inline: vec![],
            vlan: None,
            segs,
        };
    }
}

/// Enhanced multi-packet send WQEs (1 to 14 packets; pointer, inline or mixed), alone and
/// between plain sends, at every width with answers out of order, request stalls and
/// backpressure: every packet a frame with the WQE's offload request, one completion per WQE
/// (byte count: all its packets); everything against the model.
#[test]
fn multi_packet_wqes_match_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let knobs = [
            (
                DmaConfig {
                    seed: 60 + wi as u64,
                    ..DmaConfig::default()
                },
                0.0,
            ),
            (
                DmaConfig {
                    seed: 70 + wi as u64,
                    latency_min: 1,
                    latency_max: 80,
                    req_stall: 0.4,
                    ..DmaConfig::default()
                },
                0.5,
            ),
        ];
        for (ki, (dma, bp)) in knobs.into_iter().enumerate() {
            let seed = 700 + 10 * wi as u64 + ki as u64;
            let mut s = setup_sized(&m, seed, dma, bp, 7);
            let mut rng = StdRng::seed_from_u64(seed);
            for round in 0..6 {
                let wqes: Vec<Wqe> = (0..rng.gen_range(1..=4))
                    .map(|i| {
                        let n = match (round + i) % 4 {
                            0 => 1,
                            1 => MPW_MAX_PACKETS,
                            _ => rng.gen_range(1..=MPW_MAX_PACKETS),
                        };
                        if rng.gen_bool(0.2) {
                            random_wqe(&mut rng, s.buf, 4)
                        } else {
                            random_mpwqe(&mut rng, s.buf, n, (round % 3) as u8)
                        }
                    })
                    .collect();
                let what = format!("w={w} knobs {ki} round {round}");
                let run = s.round(&wqes, seed, &what);
                assert!(!s.q.model.error, "{what}: {:?}", run.cmpls.last());
            }
            let [state, pc, ci, _] = s.query(seed);
            assert_eq!((state, pc, ci), (1, s.q.pc as u64, s.q.pc as u64), "w={w}");
        }
    }
}

/// Every bad segment of a multi-packet WQE fails the whole WQE before any of its packets is
/// sent: an error CQE naming the syndrome and the segment, the SQ in error until RESET, then
/// the next WQE runs.
#[test]
fn bad_multi_packet_wqes_complete_in_error_and_the_queue_recovers() {
    for w in [8u32, 64, 512] {
        let Some(m) = model(w) else { return };
        let seed = 17 + w as u64;
        let mut s = setup(&m, seed, DmaConfig::default(), 0.2);
        let buf = s.buf;
        let good = || Wqe {
            opcode: 0x29,
            lso: None,
            ds_override: None,
            cs: 0xC0,
            cq_update: true,
            inline: vec![],
            vlan: None,
            segs: vec![
                Seg::Ptr(60, 1, buf.0 + 100),
                Seg::inline(vec![1; 20]),
                Seg::Ptr(90, 1, buf.0 + 999),
            ],
        };
        let with = |f: &dyn Fn(&mut Wqe)| {
            let mut w = good();
            f(&mut w);
            w
        };
        let big = MAX_FRAME - 100;
        let cases: Vec<(&str, Wqe, u64, u8)> = vec![
            (
                "zero-length pointer packet",
                with(&|w| w.segs.push(Seg::Ptr(0, 1, buf.0))),
                syndrome::LOCAL_LENGTH,
                6,
            ),
            (
                "zero-length inline packet",
                with(&|w| w.segs.insert(1, Seg::inline(vec![]))),
                syndrome::LOCAL_LENGTH,
                3,
            ),
            (
                "packet over the largest frame",
                with(&|w| w.segs[2] = Seg::Ptr(MAX_FRAME + 1, 1, buf.0)),
                syndrome::LOCAL_LENGTH,
                5,
            ),
            (
                "packets over the gather buffer",
                with(&|w| w.segs = vec![Seg::Ptr(big, 1, buf.0), Seg::Ptr(big, 1, buf.0)]),
                syndrome::LOCAL_LENGTH,
                3,
            ),
            (
                "invalid lkey",
                with(&|w| w.segs[2] = Seg::Ptr(60, 3, buf.0 + 100)),
                syndrome::LOCAL_PROT,
                5,
            ),
            (
                "packet outside its region",
                with(&|w| w.segs[0] = Seg::Ptr(60, 1, buf.0 + buf.1 as u64 - 10)),
                syndrome::LOCAL_PROT,
                2,
            ),
            (
                "inline packet beyond the DS count",
                with(&|w| w.segs.push(Seg::Inline(29, vec![8; 12]))),
                syndrome::LOCAL_QP_OP,
                6,
            ),
            (
                "inline header",
                with(&|w| w.inline = vec![2; 14]),
                syndrome::LOCAL_QP_OP,
                0,
            ),
            (
                "VLAN insert",
                with(&|w| w.vlan = Some(5)),
                syndrome::LOCAL_QP_OP,
                0,
            ),
            (
                "no packet",
                with(&|w| w.segs.clear()),
                syndrome::LOCAL_LENGTH,
                2,
            ),
            (
                "unreadable memory",
                with(&|w| w.segs[2] = Seg::Ptr(64, 2, buf.0 + (1 << 30))),
                syndrome::LOCAL_ACCESS,
                6,
            ),
        ];
        for (what, wqe, synd, seg) in cases {
            let what = format!("w={w} {what}");
            fails_then_resets(&mut s, &what, wqe, good(), synd, seg, seed);
        }
    }
}

/// A send of exactly `bbs` WQEBBs (1 or 2) whose frame is all inline data.
fn inline_send(rng: &mut StdRng, bbs: usize) -> Wqe {
    // 2 + ceil((4 + len) / 16) DS units: up to 28 bytes in one WQEBB, 29..=92 in two.
    let len = if bbs == 1 {
        rng.gen_range(1..=28)
    } else {
        rng.gen_range(29..=92)
    };
    Wqe {
        opcode: 0x0A,
        lso: None,
        ds_override: None,
        cs: 0,
        cq_update: true,
        inline: vec![],
        vlan: None,
        segs: vec![Seg::inline((0..len).map(|_| rng.gen()).collect())],
    }
}

/// A NOP of one WQEBB, without a completion.
fn nop() -> Wqe {
    Wqe {
        opcode: 0x00,
        lso: None,
        ds_override: None,
        cs: 0,
        cq_update: false,
        inline: vec![],
        vlan: None,
        segs: vec![],
    }
}

/// WQE prefetch: many small WQEs (inline, pointer or mixed, one or two WQEBBs) posted in
/// batches, each batch's doorbell rung while the engine still works on the earlier ones, with
/// answers out of order, request stalls and backpressure; everything against the model.
#[test]
fn back_to_back_doorbells_of_small_wqes() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let knobs = [
            (
                DmaConfig {
                    seed: 30 + wi as u64,
                    latency_min: 1,
                    latency_max: 60,
                    req_stall: 0.2,
                    ..DmaConfig::default()
                },
                0.3,
            ),
            (
                DmaConfig {
                    seed: 40 + wi as u64,
                    req_stall: 0.5,
                    ..DmaConfig::default()
                },
                0.6,
            ),
        ];
        for (ki, (dma, bp)) in knobs.into_iter().enumerate() {
            let seed = 500 + 10 * wi as u64 + ki as u64;
            let mut s = setup_sized(&m, seed, dma, bp, 7);
            let mut rng = StdRng::seed_from_u64(seed);
            for round in 0..3 {
                for _ in 0..rng.gen_range(2..=5) {
                    let wqes: Vec<Wqe> = (0..rng.gen_range(1..=8))
                        .map(|_| {
                            let bbs = if rng.gen_bool(0.8) { 1 } else { 2 };
                            if rng.gen_bool(0.4) {
                                inline_send(&mut rng, bbs)
                            } else {
                                random_wqe(&mut rng, s.buf, bbs)
                            }
                        })
                        .collect();
                    s.ring(&wqes);
                    let gap = rng.gen_range(0..40);
                    s.cycles(gap);
                }
                let what = format!("w={w} knobs {ki} round {round}");
                let run = s.check(seed, &what);
                assert!(!s.q.model.error, "{what}: {:?}", run.cmpls.last());
            }
            let [state, pc, ci, _] = s.query(seed);
            assert_eq!((state, pc, ci), (1, s.q.pc as u64, s.q.pc as u64), "w={w}");
        }
    }
}

/// A prefetch window across a 4 KiB page end and across the ring end (a ring of two pages;
/// the simulated host refuses a read across a page): NOPs bring the producer counter 1..7
/// WQEBBs short of a boundary (alternately the page end and the ring end), then a batch of
/// small sends, some of two WQEBBs, is rung at once.
#[test]
fn prefetch_window_across_a_page_end_and_the_ring_end() {
    for w in [64u32, 512] {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 11,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, 11, dma, 0.3, 7);
        let mut rng = StdRng::seed_from_u64(11);
        for round in 0..8u16 {
            let short = 1 + round % 7;
            let nops = (64 - short).wrapping_sub(s.q.pc) % 64;
            let pad: Vec<Wqe> = (0..nops).map(|_| nop()).collect();
            s.round(&pad, 11, &format!("w={w} round {round}: NOPs"));
            let wqes: Vec<Wqe> = (0..10)
                .map(|i| {
                    let bbs = if rng.gen_bool(0.5) { 1 } else { 2 };
                    if i % 3 == 1 {
                        inline_send(&mut rng, bbs)
                    } else {
                        random_wqe(&mut rng, s.buf, 1)
                    }
                })
                .collect();
            let what = format!("w={w} round {round}");
            let run = s.round(&wqes, 11, &what);
            assert!(!s.q.model.error, "{what}: {:?}", run.cmpls.last());
        }
    }
}

/// An error WQE in the middle of a prefetched batch ends only itself: the WQEs after it,
/// already in the prefetch buffer, do not execute (not even on a new doorbell) until RESET,
/// and then all execute, read again from the ring (some rewritten while the SQ was in error).
#[test]
fn an_error_in_a_prefetched_batch_stops_the_rest_until_reset() {
    let Some(m) = model(64) else { return };
    let mut s = setup_sized(&m, 13, DmaConfig::default(), 0.3, 7);
    let mut rng = StdRng::seed_from_u64(13);
    let buf = s.buf;
    for at in [0usize, 1, 3, 6] {
        let what = format!("error WQE at {at}");
        let mut wqes: Vec<Wqe> = (0..7)
            .map(|i| {
                if i % 2 == 0 {
                    inline_send(&mut rng, 1)
                } else {
                    Wqe {
                        opcode: 0x0A,
                        lso: None,
                        ds_override: None,
                        cs: 0,
                        cq_update: true,
                        inline: vec![],
                        vlan: None,
                        segs: vec![Seg::Ptr(rng.gen_range(60..300), 1, buf.0 + 64)],
                    }
                }
            })
            .collect();
        // An invalid lkey: LOCAL_PROT on segment 2.
        wqes[at].segs = vec![Seg::Ptr(60, 3, buf.0)];
        let run = s.round(&wqes, 13, &what);
        assert_eq!(run.sent.len(), at, "{what}: WQEs before the error");
        assert!(s.q.model.error, "{what}");
        let [state, _, ci, _] = s.query(13);
        assert_eq!((state, ci), (3, s.q.model.ci as u64), "{what}: SQ in error");
        // Nothing more runs, not even on a doorbell.
        let (f, c) = (s.b.tx.frames().len(), s.b.cmpl.items.len());
        s.b.db.push(doorbell(SQN));
        s.cycles(600);
        assert_eq!(
            (s.b.tx.frames().len(), s.b.cmpl.items.len()),
            (f, c),
            "{what}: the prefetched rest ran in error"
        );
        if at % 2 == 1 {
            // The driver takes back the WQEs after the failed one and posts others in their
            // slots: what runs after RESET is what the ring holds then, not what was prefetched.
            s.q.pc = s.q.model.ci;
            for _ in 0..6 - at {
                let w = inline_send(&mut rng, 1);
                s.q.post(&mut s.b.host.mem, &w);
            }
        }
        assert_eq!(s.command(sq_cmd(3, SQN as u128, [0; 8]), 13), 0, "RESET");
        s.q.model.error = false;
        let run = s.round(&[], 13, &format!("{what}: after RESET"));
        assert_eq!(run.sent.len(), 6 - at, "{what}: the rest after RESET");
        assert!(!s.q.model.error);
    }
}

/// A DMA answer with an error in the middle of a batch of pointer sends whose gathers are in
/// flight together: the failed WQE ends in LOCAL_ACCESS, the WQEs after it (already gathered
/// or gathering) are neither sent nor completed, the SQ stays in error at the WQE after the
/// failed one (not even a doorbell runs it) and, after RESET, the rest runs from there.
#[test]
fn a_data_error_among_gathers_in_flight_stops_the_rest_until_reset() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 70 + wi as u64,
            latency_min: 20,
            latency_max: 90,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, 70, dma, 0.2, 7);
        let mut rng = StdRng::seed_from_u64(70 + wi as u64);
        let buf = s.buf;
        for at in [0usize, 2, 5] {
            let what = format!("w={w}: unreadable segment in WQE {at}");
            let mut wqes: Vec<Wqe> = (0..8)
                .map(|_| Wqe {
                    opcode: 0x0A,
                    lso: None,
                    ds_override: None,
                    cs: 0,
                    cq_update: true,
                    inline: vec![],
                    vlan: None,
                    segs: vec![Seg::Ptr(
                        rng.gen_range(60..200),
                        1,
                        buf.0 + rng.gen_range(0..4096),
                    )],
                })
                .collect();
            // lkey 2 covers memory the host cannot read: its answer carries the error.
            wqes[at].segs = vec![Seg::Ptr(60, 2, buf.0 + (1 << 30))];
            let run = s.round(&wqes, 70, &what);
            assert_eq!(run.sent.len(), at, "{what}: WQEs before the error");
            assert!(s.q.model.error, "{what}");
            let [state, _, ci, err] = s.query(70);
            assert_eq!((state, ci), (3, s.q.model.ci as u64), "{what}: SQ in error");
            assert_eq!(err & 0xFF, 0x11, "{what}: syndrome LOCAL_ACCESS in QUERY");
            let (f, c) = (s.b.tx.frames().len(), s.b.cmpl.items.len());
            s.b.db.push(doorbell(SQN));
            s.cycles(400);
            assert_eq!(
                (s.b.tx.frames().len(), s.b.cmpl.items.len()),
                (f, c),
                "{what}: WQEs after the failed one ran"
            );
            assert_eq!(s.command(sq_cmd(3, SQN as u128, [0; 8]), 70), 0, "RESET");
            s.q.model.error = false;
            let run = s.round(&[], 70, &format!("{what}: after RESET"));
            assert_eq!(run.sent.len(), 7 - at, "{what}: the rest after RESET");
            assert!(!s.q.model.error);
        }
    }
}

/// The 8-byte doorbell (as mlx5's: the last posted WQE's control-segment bytes 0..8, dword 0
/// then dword 1) carries the producer counter: the engine takes it from there and reads no
/// doorbell record. The record is left stale here, so a read of it would find nothing posted
/// and the WQEs would never run; each batch's frames and CQEs are the model's, and the only
/// reads are the WQEBBs'.
#[test]
fn an_eight_byte_doorbell_needs_no_doorbell_record_read() {
    for w in [8u32, 64, 512] {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 90,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, 90, dma, 0.2, 7);
        let mut rng = StdRng::seed_from_u64(90);
        for round in 0..6 {
            let what = format!("w={w} round {round}");
            let wqes: Vec<Wqe> = (0..rng.gen_range(1..=4))
                .map(|_| {
                    let bbs = rng.gen_range(1..=2);
                    inline_send(&mut rng, bbs)
                })
                .collect();
            let reads = s.b.host.dma.stats().read_requests;
            let mut last = vec![];
            for wqe in &wqes {
                last = wqe.bytes(s.q.pc);
                s.q.post(&mut s.b.host.mem, wqe);
            }
            s.mark = Some((
                s.b.tx.frames().len(),
                s.b.txcmd.items.len(),
                s.b.cmpl.items.len(),
            ));
            s.b.db.push(uar_write(0, &last[0..4]));
            s.b.db.push(uar_write(1, &last[4..8]));
            let run = s.check(90, &what);
            assert_eq!(run.sent.len(), wqes.len(), "{what}");
            let bbs: usize = wqes.iter().map(|x| x.bytes(0).len() / 64).sum();
            let most = bbs.div_ceil(nicgen_hdl::host::sq_engine::PREFETCH_WQEBBS as usize) + 1;
            let made = s.b.host.dma.stats().read_requests - reads;
            assert!(
                made as usize <= most,
                "{what}: {made} reads for {bbs} WQEBBs of inline sends"
            );
        }
    }
}

/// Gathers of several WQEs in flight at once: 24 pointer sends rung together with every
/// DMA answer 100 cycles away take their data reads out together (the host sees many
/// outstanding at once) and finish in far fewer than a round trip each; every frame and CQE
/// as the model's. (At 8 bits a WQEBB takes 66 cycles into the WQE register, so fewer WQEs
/// fit in a round trip; the other tests cover that width.)
#[test]
fn the_gathers_of_many_wqes_are_in_flight_together() {
    for w in [64u32, 512] {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 80,
            latency_min: 100,
            latency_max: 100,
            max_outstanding_reads: 64,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, 80, dma, 0.0, 7);
        let mut rng = StdRng::seed_from_u64(80);
        let buf = s.buf;
        let wqes: Vec<Wqe> = (0..24)
            .map(|_| Wqe {
                opcode: 0x0A,
                lso: None,
                ds_override: None,
                cs: 0xC0,
                cq_update: true,
                inline: vec![],
                vlan: None,
                segs: vec![Seg::Ptr(64, 1, buf.0 + 64 * rng.gen_range(0..512))],
            })
            .collect();
        let t0 = s.sim.cycles();
        s.round(&wqes, 80, &format!("w={w}: 24 sends"));
        let took = s.sim.cycles() - t0;
        let most = s.b.host.dma.stats().max_outstanding;
        eprintln!("w={w}: 24 sends in {took} cycles, {most} reads outstanding at most");
        // One WQE at a time, a send's data read is the only one outstanding, and each send
        // waits a round trip for its data: over 24 * 100 cycles in all. The descriptor reads
        // (the doorbell record, then 8 WQEBBs a read) still wait their round trips in turn.
        assert!(
            most >= 6,
            "w={w}: at most {most} DMA reads were outstanding at once"
        );
        assert!(
            took < 24 * 100 * 2 / 3,
            "w={w}: 24 sends took {took} cycles"
        );
    }
}

/// Descriptor reads per WQE: N small WQEs rung at once take one read of the doorbell record
/// and one read per PREFETCH_WQEBBS WQEBBs (the batch starts page-aligned), not one per WQE.
#[test]
fn prefetch_reads_several_wqes_per_descriptor_read() {
    use nicgen_hdl::host::sq_engine::PREFETCH_WQEBBS;
    for w in [64u32, 512] {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 17,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, 17, dma, 0.0, 7);
        let mut rng = StdRng::seed_from_u64(17);
        for (n, bbs) in [(32usize, 1usize), (16, 2)] {
            let wqes: Vec<Wqe> = (0..n).map(|_| inline_send(&mut rng, bbs)).collect();
            let before = s.b.host.dma.stats().read_requests;
            let run = s.round(&wqes, 17, &format!("w={w} {n} x {bbs}"));
            assert_eq!(run.sent.len(), n);
            // All frames are inline: every read is a descriptor read (tag 0).
            let reads = s.b.host.dma.stats().read_requests - before;
            let most = (n * bbs).div_ceil(PREFETCH_WQEBBS as usize) as u64 + 1;
            assert!(
                reads <= most,
                "w={w}: {n} WQEs of {bbs} WQEBBs took {reads} descriptor reads (at most {most})"
            );
        }
    }
}

/// BlueFlame: WQEs of 1 to 4 WQEBBs written through the doorbell window as well as into the
/// ring, at 8, 64 and 512 bits, with DMA answers out of order, request stalls and backpressure,
/// against the model: whole WQEs at the consumer counter run from the window, and one whose
/// frame is all in the WQE makes no DMA read at all (not even of the doorbell record); a WQE
/// written short of its DS count, a WQE rung behind one posted without a doorbell, and a
/// second BlueFlame WQE written while the first is still in the engine fall back to the ring
/// with the same result; a bad BlueFlame WQE (a bad opcode, or a DS count over 16) ends in its
/// error CQE, a BlueFlame doorbell on the SQ in error is ignored and counted, and RESET
/// resumes.
#[test]
fn blueflame_doorbells_match_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let knobs = [
            (
                DmaConfig {
                    seed: 40 + wi as u64,
                    ..DmaConfig::default()
                },
                0.0,
            ),
            (
                DmaConfig {
                    seed: 50 + wi as u64,
                    latency_min: 1,
                    latency_max: 3,
                    req_stall: 0.3,
                    ..DmaConfig::default()
                },
                0.4,
            ),
        ];
        for (ki, (dma, bp)) in knobs.into_iter().enumerate() {
            let seed = 300 + 10 * wi as u64 + ki as u64;
            let mut s = setup(&m, seed, dma, bp);
            let mut rng = StdRng::seed_from_u64(seed);
            let mut used_bf = 0;
            for round in 0..24 {
                let what = format!("w={w} knobs {ki} round {round}");
                let kind = rng.gen_range(0..5);
                let reads = s.b.host.dma.stats().read_requests;
                let mut wqe = random_wqe(&mut rng, s.buf, 4);
                if kind == 0 {
                    // All in the WQE.
                    while wqe.segs.iter().any(|g| matches!(g, Seg::Ptr(..))) {
                        wqe = random_wqe(&mut rng, s.buf, 4);
                    }
                }
                let want = match kind {
                    0 | 1 => {
                        let (want, used) = s.ring_bf(&wqe, &mut rng, false);
                        assert!(used, "{what}: the model takes the BlueFlame WQE");
                        used_bf += 1;
                        want
                    }
                    2 => s.ring_bf(&wqe, &mut rng, true).0,
                    3 => {
                        let first = random_wqe(&mut rng, s.buf, 4);
                        s.q.post(&mut s.b.host.mem, &first);
                        let (want, used) = s.ring_bf(&wqe, &mut rng, false);
                        assert!(!used, "{what}");
                        want
                    }
                    _ => {
                        let (mut want, _) = s.ring_bf(&wqe, &mut rng, false);
                        let next = random_wqe(&mut rng, s.buf, 4);
                        let (more, _) = s.ring_bf(&next, &mut rng, false);
                        want.sent.extend(more.sent);
                        want.cmpls.extend(more.cmpls);
                        want
                    }
                };
                s.compare(want, seed, &what);
                assert!(!s.q.model.error, "{what}: a good WQE failed");
                if kind == 0 {
                    assert_eq!(
                        s.b.host.dma.stats().read_requests,
                        reads,
                        "{what}: a BlueFlame WQE with its frame inline makes no DMA read"
                    );
                }
            }
            assert!(used_bf > 0);
            let [state, pc, ci, _] = s.query(seed);
            assert_eq!(
                (state, pc, ci),
                (1, s.q.pc as u64, s.q.pc as u64),
                "w={w} knobs {ki}: QUERY after the good rounds"
            );
            // Bad BlueFlame WQEs: an unknown opcode (taken from the window), a DS count over
            // 16 (not whole: fetched from the ring, refused there).
            let bad = |opcode: u8, ds: Option<u8>| Wqe {
                opcode,
                lso: None,
                ds_override: ds,
                ..inline_send(&mut StdRng::seed_from_u64(seed), 1)
            };
            for (i, wqe) in [bad(0x55, None), bad(0x0A, Some(20))].iter().enumerate() {
                let what = format!("w={w} knobs {ki} bad BlueFlame WQE {i}");
                let (want, _) = s.ring_bf(wqe, &mut rng, false);
                let run = s.compare(want, seed, &what);
                let c = run.cmpls.last().expect("an error CQE");
                assert_eq!(
                    (u64::from(c.opcode), u64::from(c.syndrome)),
                    (cqe_opcode::REQ_ERR, syndrome::LOCAL_QP_OP),
                    "{what}"
                );
                assert!(s.q.model.error, "{what}");
                // A BlueFlame doorbell on the SQ in error: nothing runs.
                let good = inline_send(&mut rng, 1);
                let (want, _) = s.ring_bf(&good, &mut rng, false);
                assert!(want.cmpls.is_empty());
                s.compare(want, seed, &format!("{what}: doorbell in error"));
                let [state, ..] = s.query(seed);
                assert_eq!(state, 3, "{what}: SQ in error");
                assert_eq!(s.command(sq_cmd(3, SQN as u128, [0; 8]), seed), 0);
                s.q.model.error = false;
                s.round(&[], seed, &format!("{what}: after RESET"));
            }
        }
    }
}

/// Fair arbitration: SQ A floods (200 one-WQEBB sends rung at once), SQ B rings 12 a few
/// cycles later. Turns alternate once both wait, TURN_WQEBBS each, so A completes at most
/// TURN_WQEBBS per turn of B's (two) before B's last completion, where first come first served
/// would run all 200 of A's first. Every frame and completion of both queues is checked
/// against the model, in the order the turns interleave them, with answers out of order,
/// stalls and backpressure.
#[test]
fn a_flooding_sq_does_not_starve_another() {
    const SQN_B: u32 = 4;
    let (na, nb) = (200usize, 12usize);
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let seed = 900 + wi as u64;
        let dma = DmaConfig {
            seed,
            latency_min: 1,
            latency_max: 60,
            req_stall: 0.2,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, seed, dma, 0.3, 8);
        let mut qb = s.create_sq(SQN_B, 8, seed);
        let mut rng = StdRng::seed_from_u64(seed);
        let (f0, k0) = (s.b.tx.frames().len(), s.b.cmpl.items.len());
        for _ in 0..na {
            let wqe = inline_send(&mut rng, 1);
            s.q.post(&mut s.b.host.mem, &wqe);
        }
        s.q.publish(&mut s.b.host.mem);
        s.b.db.push(doorbell(SQN));
        s.cycles(5);
        for _ in 0..nb {
            let wqe = inline_send(&mut rng, 1);
            qb.post(&mut s.b.host.mem, &wqe);
        }
        qb.publish(&mut s.b.host.mem);
        s.b.db.push(doorbell(SQN_B));

        let mem = &s.b.host.mem;
        let read = |addr: u64, len: usize| {
            let mut v = vec![0; len];
            mem.read(addr, &mut v).ok().map(|_| v)
        };
        let want_a = s.q.model.run(&read, s.q.pc, &s.mrs, LIMITS);
        let want_b = qb.model.run(&read, qb.pc, &s.mrs, LIMITS);
        assert_eq!((want_a.cmpls.len(), want_b.cmpls.len()), (na, nb));
        s.b.step_until(&mut s.sim, seed, |b| {
            b.cmpl.items.len() >= k0 + na + nb && b.tx.frames().len() >= f0 + na + nb
        });
        let cmpls: Vec<Cmpl> = s.b.cmpl.items[k0..]
            .iter()
            .map(|x| decode_cmpl(x))
            .collect();
        assert_eq!(cmpls.len(), na + nb, "w={w}: completions");
        // Each queue's completions in its own order; the frames in the order the completions
        // interleave the queues (one WQE at a time: frame, then its completion).
        let (mut ia, mut ib) = (0, 0);
        let mut frames_want = Vec::new();
        for c in &cmpls {
            if c.qpn == SQN {
                assert_eq!(c, &want_a.cmpls[ia], "w={w}: A's completion {ia}");
                frames_want.push(&want_a.sent[ia]);
                ia += 1;
            } else {
                assert_eq!(c, &want_b.cmpls[ib], "w={w}: B's completion {ib}");
                frames_want.push(&want_b.sent[ib]);
                ib += 1;
            }
        }
        let frames = &s.b.tx.frames()[f0..];
        assert_eq!(frames.len(), na + nb, "w={w}: frames");
        for (i, (f, want)) in frames.iter().zip(&frames_want).enumerate() {
            assert_eq!(f.data, want.frame, "w={w}: frame {i}");
        }
        // B rang while A's first turn had barely begun: A's first turn, then B, A, B.
        let b_last = cmpls.iter().rposition(|c| c.qpn == SQN_B).unwrap();
        let a_before = cmpls[..b_last].iter().filter(|c| c.qpn == SQN).count();
        let turn = TURN_WQEBBS as usize;
        assert!(
            a_before <= turn * nb.div_ceil(turn),
            "w={w}: A completed {a_before} WQEs before B's last of {nb}"
        );
        let [state, pc, ci, _] = s.query(seed);
        assert_eq!(
            (state, pc, ci),
            (1, s.q.pc as u64, s.q.pc as u64),
            "w={w}: A"
        );
    }
}

/// Look-ahead: four SQs rung together with 8-byte doorbells (so every producer counter is
/// known without a doorbell-record read), every DMA answer 100 cycles away, inline sends only
/// (so every read is a descriptor read): while one SQ's turn runs, the next SQ's WQEBBs are
/// read, so two descriptor reads are outstanding at once (one SQ's turn at a time would have
/// one), and every frame and CQE is as the model's, per SQ in order.
#[test]
fn the_next_sqs_wqebbs_are_read_during_this_turn() {
    const OTHERS: [u32; 3] = [0, 4, 6];
    let (rounds, per) = (4usize, 3usize);
    for w in [64u32, 512] {
        let Some(m) = model(w) else { return };
        let seed = 95;
        let dma = DmaConfig {
            seed,
            latency_min: 100,
            latency_max: 100,
            max_outstanding_reads: 64,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, seed, dma, 0.0, 8);
        let mut others: Vec<Queue> = OTHERS
            .iter()
            .map(|&sqn| s.create_sq(sqn, 8, seed))
            .collect();
        let mut rng = StdRng::seed_from_u64(seed);
        let t0 = s.sim.cycles();
        for round in 0..rounds {
            let what = format!("w={w} round {round}");
            let (f0, k0) = (s.b.tx.frames().len(), s.b.cmpl.items.len());
            let mut wants = Vec::new();
            for q in std::iter::once(&mut s.q).chain(others.iter_mut()) {
                let pc0 = q.pc;
                let mut last = vec![];
                for _ in 0..per {
                    let wqe = inline_send(&mut rng, 1);
                    last = wqe.bytes(q.pc);
                    q.post(&mut s.b.host.mem, &wqe);
                }
                let mem = &s.b.host.mem;
                let read = |addr: u64, len: usize| {
                    let mut v = vec![0; len];
                    mem.read(addr, &mut v).ok().map(|_| v)
                };
                wants.push((q.model.sqn, q.model.run(&read, q.pc, &s.mrs, LIMITS)));
                assert_eq!(q.pc, pc0.wrapping_add(per as u16));
                // The WQEs name SQ `SQN`: the doorbell's dword 1 names this queue, with the
                // last WQE's DS count.
                let qpn_ds = q.model.sqn << 8 | last[7] as u32;
                s.b.db.push(uar_write(0, &last[0..4]));
                s.b.db.push(uar_write(1, &qpn_ds.to_be_bytes()));
            }
            let n = per * wants.len();
            s.b.step_until(&mut s.sim, seed, |b| {
                b.cmpl.items.len() >= k0 + n && b.tx.frames().len() >= f0 + n
            });
            let cmpls: Vec<Cmpl> = s.b.cmpl.items[k0..]
                .iter()
                .map(|x| decode_cmpl(x))
                .collect();
            assert_eq!(cmpls.len(), n, "{what}: completions");
            // Per SQ in its order; the frames in the order of the completions.
            let mut next = vec![0usize; wants.len()];
            let frames = &s.b.tx.frames()[f0..];
            for (i, c) in cmpls.iter().enumerate() {
                let qi = wants.iter().position(|(sqn, _)| *sqn == c.qpn).unwrap();
                let want = &wants[qi].1;
                assert_eq!(
                    c, &want.cmpls[next[qi]],
                    "{what}: SQ {} CQE {}",
                    c.qpn, next[qi]
                );
                assert_eq!(
                    frames[i].data, want.sent[next[qi]].frame,
                    "{what}: frame {i}"
                );
                next[qi] += 1;
            }
        }
        let took = s.sim.cycles() - t0;
        let most = s.b.host.dma.stats().max_outstanding;
        eprintln!(
            "w={w}: {rounds} rounds of {per} sends on 4 SQs in {took} cycles, {most} reads \
             outstanding at most"
        );
        assert!(
            most >= 2,
            "w={w}: at most {most} descriptor read outstanding: no SQ's WQEBBs were read \
             during another's turn"
        );
    }
}

/// Descriptor reads overlap a busy SQ's turn: 128 one-WQEBB inline sends rung at once on one
/// SQ (no data reads: every read is a descriptor read), once with every DMA answer 1 cycle away
/// and once 150 away. With the next WQEBBs read only once the current ones are used up, each
/// descriptor read of P (PREFETCH_WQEBBS) WQEBBs waits its whole round trip: the doorbell
/// record and 128 / P reads, so the 150-cycle run takes at least (1 + 128 / P) * 149 cycles
/// more than the 1-cycle one: 1341 at P = 16, 745 at P = 32. With this SQ's next WQEBBs read
/// while the current ones are consumed, only the doorbell record's and the first read's round
/// trips show (P one-WQEBB sends take longer to run than a round trip): about 2 * 149 more.
/// The bound, 3 * 150, leaves a round trip's slack and fails any design that waits for 4.
/// Every frame and CQE as the model's.
#[test]
fn a_busy_sqs_next_wqebbs_are_read_while_it_runs() {
    let n = 128usize;
    let latency = 150u64;
    for w in [64u32, 512] {
        let Some(m) = model(w) else { return };
        let mut took = [0u64; 2];
        for (i, lat) in [1u64, latency].into_iter().enumerate() {
            let seed = 130 + i as u64;
            let dma = DmaConfig {
                seed,
                latency_min: lat,
                latency_max: lat,
                max_outstanding_reads: 64,
                ..DmaConfig::default()
            };
            let mut s = setup_sized(&m, seed, dma, 0.0, 8);
            let mut rng = StdRng::seed_from_u64(seed);
            let wqes: Vec<Wqe> = (0..n).map(|_| inline_send(&mut rng, 1)).collect();
            let t0 = s.sim.cycles();
            let run = s.round(&wqes, seed, &format!("w={w} latency {lat}"));
            took[i] = s.sim.cycles() - t0;
            assert_eq!(run.sent.len(), n, "w={w} latency {lat}");
        }
        eprintln!(
            "w={w}: {n} one-WQEBB sends in {} cycles at latency 1, {} at {latency}",
            took[0], took[1]
        );
        assert!(
            took[1] < took[0] + 3 * latency,
            "w={w}: {n} sends took {} cycles at latency {latency}, {} at 1: the descriptor \
             reads wait their round trips in turn",
            took[1],
            took[0]
        );
    }
}

/// The software-parser fields mlx5e writes for a super-frame with headers at `o` (wire-formats
/// §4.4; 2-byte units): tunnelled, the outer and inner offsets and flags; plain, the one IP
/// and TCP header in the outer fields.
fn swp_of(o: &LsoOffsets) -> Lso {
    let half = |b: usize| (b / 2) as u8;
    let (swp, flags) = if o.tunnel == 0 {
        ([half(o.l4), half(o.l3), 0, 0], if o.v6 { 0x10 } else { 0 })
    } else {
        (
            [half(o.outer_l4), half(o.outer_l3), half(o.l4), half(o.l3)],
            (u8::from(o.tunnel == 1) * 0x20) | (u8::from(o.outer_v6) * 0x10) | u8::from(o.v6),
        )
    };
    Lso {
        swp,
        swp_flags: flags,
        mss: 0,
    }
}

/// Super-frames: plain TCP over IPv4 and IPv6, VXLAN (the worked example of wire-formats §2.5:
/// IPv4 in IPv4, MSS 1000, 2500 payload bytes) and NVGRE over IPv6 around IPv6.
fn super_frames() -> Vec<(&'static str, Vec<u8>, u16)> {
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0);
    let v4 = Ip {
        v6: false,
        ident: 0x1000,
    };
    let v6 = Ip { v6: true, ident: 0 };
    let inner = |ip: Ip, n: usize| tcp_frame(ip, false, 1000, flags, &pattern(n));
    vec![
        ("plain IPv4", inner(v4, 3000), 1448),
        ("plain IPv6", inner(v6, 1200), 500),
        (
            "VXLAN worked example",
            encap(
                &inner(v4, 2500),
                &ctx(false, false, EncapKind::vxlan(0x123456)),
                0x2000,
            )
            .unwrap(),
            1000,
        ),
        (
            "NVGRE over IPv6, inner IPv6",
            encap(&inner(v6, 700), &ctx(true, false, NVGRE), 0).unwrap(),
            300,
        ),
    ]
}

/// An LSO WQE for `frame` as mlx5e writes it: every header through the (inner) TCP header
/// inline, the payload by one pointer segment (lkey 1) at `addr`, where it is written.
fn lso_wqe(frame: &[u8], mss: u16, addr: u64, mem: &mut HostMemory) -> (Wqe, LsoOffsets) {
    let o = lso_offsets(frame, &TunnelConfig::default()).expect("a super-frame");
    mem.write(addr, &frame[o.hdr_len..]).unwrap();
    let wqe = Wqe {
        opcode: 0x0E,
        lso: Some(Lso { mss, ..swp_of(&o) }),
        ds_override: None,
        cs: if o.tunnel == 0 { 0xC0 } else { 0x70 },
        cq_update: true,
        inline: frame[..o.hdr_len].to_vec(),
        vlan: None,
        segs: vec![Seg::Ptr((frame.len() - o.hdr_len) as u32, 1, addr)],
    };
    (wqe, o)
}

/// LSO sends (plain and tunnelled software-parser offsets): each super-frame goes out whole
/// with the segmentation request the offsets locate (compared with the headers the model
/// finds in the frame), as the model sends it, and completes with opcode 0x0E.
#[test]
fn lso_wqes_send_their_super_frame_with_its_segmentation_request() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let seed = 1100 + wi as u64;
        let dma = DmaConfig {
            seed,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, seed, dma, 0.3, 6);
        let k0 = s.b.txcmd.items.len();
        let mut wants = Vec::new();
        let mut wqes = Vec::new();
        for (i, (what, frame, mss)) in super_frames().into_iter().enumerate() {
            let addr = s.buf.0 + 8192 * i as u64 + 3;
            let (wqe, o) = lso_wqe(&frame, mss, addr, &mut s.b.host.mem);
            wants.push((what, tso_cmd(&o, mss.into())));
            wqes.push(wqe);
        }
        let run = s.round(&wqes, seed, &format!("w={w}: LSO"));
        assert_eq!(
            run.sent.len(),
            wqes.len(),
            "w={w}: a good LSO failed: {run:?}"
        );
        assert!(run.cmpls.iter().all(|c| c.s_wqe_opcode == 0x0E));
        let items = &s.b.txcmd.items[k0..];
        for ((what, want), item) in wants.iter().zip(items) {
            assert_eq!(&decode_tso(item), want, "w={w}: {what}: TsoCmd");
            assert_eq!(
                decode_encap(item),
                (0, 0),
                "w={w}: {what}: no encapsulation"
            );
        }
        // A SEND after them asks for no segmentation.
        let k1 = s.b.txcmd.items.len();
        s.round(
            &[inline_send(&mut StdRng::seed_from_u64(seed), 1)],
            seed,
            "SEND",
        );
        assert_eq!(decode_tso(&s.b.txcmd.items[k1]), TsoCmd::default());
    }
}

/// An SQ created with an encapsulation context stamps it on the request of every frame it
/// sends (SEND, LSO, every packet of a multi-packet WQE); a context not below
/// `encap_contexts` is refused (bad parameter) and creates nothing.
#[test]
fn an_sq_created_with_an_encapsulation_context_stamps_it_on_every_frame() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let seed = 1200 + wi as u64;
        let dma = DmaConfig {
            seed,
            ..DmaConfig::default()
        };
        let mut s = setup_raw(&m, seed, dma, 0.3, 6);
        let ctx_index = ENCAP_CONTEXTS as u8 - 3;
        let (ring, dbr) = (s.q.ring, s.q.dbr);
        for bad in [ENCAP_CONTEXTS as u8, 255] {
            let create = sq_create_encap(SQN, ring, dbr, 6, Some(bad));
            assert_eq!(s.command(create, seed), 0x03, "w={w}: context {bad}");
        }
        // Nothing was created: the same index is free for a good CREATE.
        let create = sq_create_encap(SQN, ring, dbr, 6, Some(ctx_index));
        assert_eq!(s.command(create, seed), 0, "w={w}: context {ctx_index}");
        let mut rng = StdRng::seed_from_u64(seed);
        let (frame, mss) = (super_frames()[2].1.clone(), super_frames()[2].2);
        let (lso, _) = lso_wqe(&frame, mss, s.buf.0 + 64, &mut s.b.host.mem);
        let wqes = [
            inline_send(&mut rng, 1),
            lso,
            random_mpwqe(&mut rng, s.buf, 3, 2),
        ];
        let k0 = s.b.txcmd.items.len();
        let run = s.round(&wqes, seed, "encapsulating SQ");
        assert_eq!(run.sent.len(), 5, "w={w}: {run:?}");
        let items = &s.b.txcmd.items[k0..];
        assert_eq!(items.len(), 5);
        for (i, item) in items.iter().enumerate() {
            assert_eq!(
                decode_encap(item),
                (1, ctx_index as u128),
                "w={w}: frame {i}: encapsulation"
            );
        }
        // Another SQ without a context sends without one.
        let mut qb = s.create_sq(5, 4, seed);
        let k1 = s.b.txcmd.items.len();
        qb.post(&mut s.b.host.mem, &inline_send(&mut rng, 1));
        qb.publish(&mut s.b.host.mem);
        s.b.db.push(doorbell(5));
        s.b.step_until(&mut s.sim, seed, |b| b.txcmd.items.len() > k1);
        assert_eq!(decode_encap(&s.b.txcmd.items[k1]), (0, 0), "w={w}");
    }
}

/// A super-frame of exactly `len` bytes: plain TCP over IPv4, or (`vxlan`) VXLAN around it.
/// Past 64 KiB its IP length fields cannot hold its length (Linux's BIG TCP writes 0 there);
/// the segmentation writes every segment's own, so the headers here are those of a 1000-byte
/// payload and the rest of the payload follows them.
fn long_super_frame(len: usize, vxlan: bool) -> Vec<u8> {
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0);
    let v4 = Ip {
        v6: false,
        ident: 0x1000,
    };
    let inner = tcp_frame(v4, false, 1000, flags, &pattern(1000));
    let mut frame = match vxlan {
        true => encap(&inner, &ctx(false, false, EncapKind::vxlan(0x42)), 0x2000).unwrap(),
        false => inner,
    };
    let more: Vec<u8> = (frame.len()..len).map(|i| (i * 13) as u8).collect();
    frame.extend(more);
    assert_eq!(frame.len(), len);
    frame
}

/// An LSO WQE for `frame` (mss 1448): its headers inline, its payload written at a random
/// place of the buffer and gathered by one to four pointer segments (lkey 1) cut at random.
fn long_lso_wqe(s: &mut Setup, frame: &[u8], rng: &mut StdRng) -> Wqe {
    let addr = s.buf.0 + rng.gen_range(0..4096u64);
    let (mut wqe, o) = lso_wqe(frame, 1448, addr, &mut s.b.host.mem);
    let n = frame.len() - o.hdr_len;
    let mut cuts: Vec<usize> = (0..rng.gen_range(0..4))
        .map(|_| rng.gen_range(1..n))
        .collect();
    cuts.extend([0, n]);
    cuts.sort_unstable();
    cuts.dedup();
    wqe.segs = cuts
        .windows(2)
        .map(|c| Seg::Ptr((c[1] - c[0]) as u32, 1, addr + c[0] as u64))
        .collect();
    wqe
}

/// LSO sends longer than a WQE's share of the gather ring (16 KiB here) up to the 256 KiB
/// limit, plain and VXLAN, their payload in one to four pointer segments at any alignment,
/// under DMA latency and backpressure: each leaves as one frame (the pieces' beats in order)
/// with one segmentation request and one CQE, as the model sends it. Then the failures: a
/// send over 256 KiB and a long one with an inline data segment are LOCAL_LENGTH; a DMA error
/// in a later piece ends the frame with the abort beat after the pieces before it, one in the
/// first piece fails the send whole (both LOCAL_ACCESS); the SQ resumes after RESET.
#[test]
fn lso_sends_longer_than_the_gather_buffer_go_in_pieces() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let seed = 1300 + wi as u64;
        let dma = DmaConfig {
            seed,
            latency_min: 20,
            latency_max: 120,
            ..DmaConfig::default()
        };
        let mut s = setup_sized(&m, seed, dma, 0.3, 7);
        let mut rng = StdRng::seed_from_u64(seed);
        // The 8-bit bus takes a byte a cycle: one send there.
        let sizes: &[usize] = match w {
            8 => &[20_000],
            _ => &[16_385, 70_000, LSO_MAX as usize],
        };
        for (i, &len) in sizes.iter().enumerate() {
            let what = format!("w={w}: LSO of {len} bytes");
            let frame = long_super_frame(len, i % 2 == 1);
            let wqe = long_lso_wqe(&mut s, &frame, &mut rng);
            let small = inline_send(&mut rng, 1);
            let run = s.round(&[wqe, small], seed, &what);
            assert_eq!(run.sent.len(), 2, "{what}: {:?}", run.cmpls);
            assert_eq!(run.sent[0].frame, frame, "{what}: the model's frame");
            assert!(run.cmpls.iter().all(|c| c.opcode == 0), "{what}");
        }
        if w == 8 {
            continue;
        }
        let frame = long_super_frame(60_000, false);
        let good = || inline_send(&mut StdRng::seed_from_u64(seed), 1);
        // Over the limit: the segment that crosses it.
        let mut wqe = long_lso_wqe(&mut s, &frame, &mut rng);
        wqe.segs.push(Seg::Ptr(LSO_MAX - 60_000 + 1, 1, s.buf.0));
        let n = wqe.segs.len() as u8;
        let first = 2 + (wqe.inline.len() as u8 - 2).div_ceil(16);
        fails_then_resets(
            &mut s,
            &format!("w={w}: LSO over 256 KiB"),
            wqe,
            good(),
            syndrome::LOCAL_LENGTH,
            first + n - 1,
            seed,
        );
        // An inline data segment in a send gathered in pieces: the DS count is blamed.
        let mut wqe = long_lso_wqe(&mut s, &frame, &mut rng);
        wqe.segs.push(Seg::inline(vec![0x5A; 20]));
        let ds = first + wqe.segs.iter().map(Seg::ds).sum::<usize>() as u8;
        fails_then_resets(
            &mut s,
            &format!("w={w}: inline data in a long LSO"),
            wqe,
            good(),
            syndrome::LOCAL_LENGTH,
            ds,
            seed,
        );
        // A read that fails in the third piece, then one in the first (lkey 2: unreadable).
        for (at, what) in [(40_000u32, "a later piece"), (0, "the first piece")] {
            let mut wqe = long_lso_wqe(&mut s, &frame, &mut rng);
            let tail = wqe.segs.split_off(1);
            let head = match (&wqe.segs[0], at) {
                (_, 0) => vec![],
                (Seg::Ptr(_, k, a), _) => vec![Seg::Ptr(at, *k, *a)],
                _ => unreachable!(),
            };
            wqe.segs = [head, vec![Seg::Ptr(1000, 2, s.buf.0 + (1 << 30))], tail].concat();
            let ds = first + wqe.segs.len() as u8;
            let before = s.b.tx.frames().len();
            fails_then_resets(
                &mut s,
                &format!("w={w}: a DMA error in {what}"),
                wqe,
                good(),
                syndrome::LOCAL_ACCESS,
                ds,
                seed,
            );
            let sent = &s.b.tx.frames()[before..];
            let aborted = sent.iter().filter(|f| f.user == 1).count();
            assert_eq!(aborted, usize::from(at != 0), "w={w}: {what}: abort beats");
        }
    }
}
