//! A netdev-like API on top of [`Device`]: queue pairs that send and receive frames.
//!
//! [`NetDev::new`] builds, per queue pair `q`: an event queue (EQ `q` on vector `q`, or one EQ
//! 0 on vector 0 for all with [`EqMode::Shared`]), completion queue `q` reporting to it, and
//! send and receive queues `q` completing to CQ `q` (a CQE's opcode tells send from receive
//! completions). Rings (4 KiB aligned), the doorbell records (8 bytes per CQ, SQ and RQ) and
//! one buffer arena come from [`DmaMemory`](crate::hw::DmaMemory); the arena — a transmit
//! buffer per SQ slot and a receive buffer per RQ slot — is registered as memory region 0, the
//! lkey of every data segment. Rings need no region: the device reaches them through the
//! queue contexts.
//!
//! Sending ([`NetDev::send`]) copies the frame into the buffer of the WQE's first slot (or,
//! up to [`NetDevConfig::tx_inline`] bytes, into the WQE itself as an inline data segment),
//! writes the WQE (wrapping at the ring end), then, as mlx5e: write barrier, the doorbell record,
//! barrier, the 8-byte UAR doorbell; a WQE of at most [`NetDevConfig::tx_blueflame`] bytes is
//! also written through the UAR page's BlueFlame window before that doorbell, so the device
//! takes it without fetching it (nor the doorbell record). [`NetDev::send_more`] batches
//! doorbells: its WQEs are rung by the next `send` or [`NetDev::flush`], and ask for no CQE
//! (but one in every [`MAX_UNSIGNALLED`]); every other WQE asks for a CQE, and send CQEs are
//! taken as cumulative (a CQE for WQE `W` completes every older WQE too). With
//! [`NetDevConfig::tx_mpwqe`], frames go in enhanced multi-packet send WQEs (mlx5e's MPWQE):
//! [`NetDev::send_more`] appends its frame to the queue's open session, a WQE not yet in the
//! ring, as one more packet; `send` and `flush` close the session, write its WQE and ring.
//! A frame sent with [`TxOffload::lso`] goes as an LSO WQE (opcode 0x0E, mlx5e's TSO send):
//! every header through the (inner) TCP header inline in the Ethernet segment with `mss` and
//! the software-parser offsets ([`crate::lso`]), the payload by a data segment; the device cuts
//! it into segments, so one frame (one [`Completion::Tx`]) may leave as many.
//! [`NetDevConfig::tx_encap`] creates every SQ with an encapsulation context.
//! Receiving keeps every
//! RQ slot posted with one buffer ([`NetDev::post_rx_buffers`], also run by [`NetDev::poll`]).
//! With [`NetDevConfig::rx_striding`] the RQ is a striding (multi-packet) RQ: each WQE's buffer
//! takes frames until its strides are used, each CQE names its WQE (`wqe_id`, as mlx5), the
//! frame's first stride and the strides it took, a filler CQE skips the strides a frame did not
//! fit in, and the driver follows the WQEs by counting the strides consumed (a WQE is reposted
//! once all are): a CQE whose `wqe_id` or first stride is not the one it counted is a device
//! error ([`Error::BadCompletion`]).
//! [`NetDev::wait`] arms the CQs and sleeps on the EQs' interrupt vectors.
//! With [`NetDevConfig::cqe_compress`] the CQs compress (mlx5 mini-CQE arrays): a title CQE
//! with format COMPRESSED and an array of mini CQEs stand for a run of completions, which
//! polling expands back into full CQEs (as `mlx5e_decompress_cqes_start/cont`) and whose slots
//! it hands back by rewriting their owner bytes.
//!
//! An error completion stops its queue ([`Error::QueueInError`] on further use) until
//! [`NetDev::reset_queue_after_error`].
//!
//! Dropping a `NetDev` leaves its queues on the device and its memory allocated (the backend,
//! owned by the device, goes with it); [`NetDev::close`] tears down in order and gives the
//! [`Device`] back.

use std::collections::VecDeque;
use std::fmt;

use thiserror::Error;

use crate::desc::{
    Cqe, CqeOpcode, CsFlags, DataSeg, DescError, Eqe, EthSeg, EventType, Gather, L2Header, L3Type,
    L4Type, RecvWqe, RssHashType, SendOpcode, SendWqe, Syndrome, CQE_BYTES, DS_BYTES, MAX_SEND_DS,
    MPWQE_MAX_PACKETS, WQEBB,
};
use crate::device::{
    CqParams, Device, DeviceError, EqParams, Lkey, MiniFormat, Moderation, QState, QueueType,
    RqParams, RqStrides, SqParams,
};
use crate::hw::{Backend, DmaError, DmaRegion};
use crate::lso::{LsoError, LsoRequest, LsoTunnel};
use crate::regs::consts::{cqe_format, misc};
use crate::regs::desc::{cqe, eqe};
use crate::regs::uar;
use crate::ring::{
    eq_doorbell, init_entries, CqArm, DoorbellRecord, EventRing, RingError, WorkQueue, MAX_LOG_WQ,
};

/// [`NetDev::send_more`] asks for a CQE at least once per this many WQEs in a row.
pub const MAX_UNSIGNALLED: usize = 16;

/// Bytes of an Ethernet header without VLAN tag.
pub const ETH_HLEN: usize = 14;
/// Bytes of an 802.1Q tag.
const VLAN_HLEN: usize = 4;
/// Bytes of the MAC addresses, where a VLAN tag goes.
const MACS_LEN: usize = 12;
/// 802.1Q TPID.
const TPID_8021Q: u16 = 0x8100;
/// Inline header size in mlx5e's L2 mode: the Ethernet header plus 4 (18 bytes).
pub const INLINE_L2: usize = ETH_HLEN + VLAN_HLEN;
/// Ring alignment the queue contexts require.
const RING_ALIGN: usize = 4096;
/// Receive WQE stride: one data segment, no terminator.
const RX_LOG_STRIDE: u8 = 4;
/// Striding receive WQE stride: the next segment and one data segment.
const RX_LOG_STRIDE_MPWRQ: u8 = 5;
/// The memory-region table entry the driver's buffers use.
const MR_INDEX: u32 = 0;
/// Smallest send ring: room for the largest WQE.
const MIN_LOG_SQ: u8 = ((MAX_SEND_DS * DS_BYTES) / WQEBB).ilog2() as u8;
/// Largest frame [`NetDevConfig::tx_inline`] may ask to carry wholly in the WQE: the largest
/// WQE less the control and Ethernet segments, one more DS for the rest of an 18-byte inline
/// header and the inline segment's byte-count word, plus the 14 frame bytes such a header
/// carries (with the driver's VLAN tag in it, the most WQE room a frame's header takes).
pub const MAX_TX_INLINE: usize = MAX_SEND_DS * DS_BYTES - 3 * DS_BYTES - 4 + ETH_HLEN;
/// With [`NetDevConfig::tx_mpwqe`], transmit buffers per send-ring slot: a multi-packet WQE
/// of `n` WQEBBs holds at most `4n - 2` packets, so packet `k` of the WQE at slot `s` takes
/// buffer `4s + k`, in one of the WQE's own slots, freed with it.
const MPWQE_BUFS_PER_SLOT: usize = 4;
/// The BlueFlame window: the largest WQE (`uar::SQ_DB` and `uar::SQ_BF`, 256 bytes).
pub const MAX_BLUEFLAME: usize = (uar::SQ_BF_COUNT as usize + 2) * 4;

/// How event queues are shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EqMode {
    /// One EQ and interrupt vector per queue pair.
    PerQueue,
    /// One EQ on vector 0 for every queue pair.
    Shared,
}

/// What [`NetDev::new`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetDevConfig {
    /// Queue pairs.
    pub queues: usize,
    /// log2 send-ring size in 64-byte WQEBBs (at least 2: the largest WQE has 4).
    pub sq_log_size: u8,
    /// log2 receive-ring size in WQEs (one buffer each).
    pub rq_log_size: u8,
    /// log2 event-ring size. Completion rings get `max(sq, rq) + 1`, room for every
    /// outstanding WQE of both.
    pub eq_log_size: u8,
    /// Bytes per receive buffer: at least the device's largest frame.
    pub rx_buf_size: usize,
    /// Bytes per transmit buffer: the largest frame `send` takes.
    pub tx_buf_size: usize,
    pub eq_mode: EqMode,
    /// Interrupt moderation of every EQ.
    pub moderation: Moderation,
    /// Frames of at most this many bytes go wholly in the WQE, as an inline data segment after
    /// the header: the device sends them without reading a buffer (one DMA round trip less),
    /// and the driver copies them into no buffer. 0: never; at most [`MAX_TX_INLINE`].
    pub tx_inline: usize,
    /// WQEs of at most this many bytes (a multiple of 64, at most [`MAX_BLUEFLAME`]) are also
    /// written through the BlueFlame window (`uar::SQ_BF`, then the doorbell commits them): the
    /// device runs such a WQE without reading it or the doorbell record, so a send whose frame
    /// is inline makes no DMA read at all. 0: never.
    pub tx_blueflame: usize,
    /// CQE compression (mlx5 mini-CQE arrays, checksum format as mlx5e): runs of like
    /// completions come as a title CQE and an array of 8-byte mini CQEs, which
    /// [`NetDev::poll`] expands back into full completions.
    pub cqe_compress: bool,
    /// Device cycles a CQ's session (completions merged into one CQE write, compressed with
    /// `cqe_compress`) waits for more completions; 0: only those already waiting. Longer
    /// sessions compress more and delay a lone completion by up to this long.
    pub cq_session: u16,
    /// Send in enhanced multi-packet send WQEs (mlx5 ENHANCED_MPSW, mlx5e's MPWQE):
    /// [`NetDev::send_more`] appends its frame to an open WQE of the queue as one more packet
    /// (inline when at most `tx_inline` bytes, else from its own buffer), and one CQE completes
    /// them all. A frame with another [`TxOffload`], the 14th packet
    /// ([`MPWQE_MAX_PACKETS`]), a WQE that would exceed 16 DS or the free ring, or packets that
    /// would overrun the device's gather buffer (each rounded up to 64 bytes; the device's
    /// largest frame rounded up to a power of two) close the session, and a new one takes the
    /// frame; `send` and `flush` close it and ring. Frames with a VLAN tag to insert or inline
    /// headers go in plain SEND WQEs (an MPWQE has neither). Each slot of the send ring gets
    /// four transmit buffers instead of one.
    pub tx_mpwqe: bool,
    /// Receive into a striding (multi-packet) RQ of this geometry: each WQE's buffer of
    /// strides takes several frames (one WQE per buffer of many frames rather than per frame),
    /// and `rx_buf_size` is not used. A WQE must hold the device's largest frame. `None`: one
    /// frame per WQE.
    pub rx_striding: Option<RqStrides>,
    /// Create every send queue with this encapsulation context ([`SqParams::encap`]): the
    /// device puts the context's outer headers in front of every frame sent (program it with
    /// [`Device::program_encap`] first). `None`: frames go as they are.
    pub tx_encap: Option<u8>,
}

impl Default for NetDevConfig {
    fn default() -> Self {
        NetDevConfig {
            queues: 1,
            sq_log_size: 6,
            rq_log_size: 6,
            eq_log_size: 6,
            rx_buf_size: 2048,
            tx_buf_size: 2048,
            eq_mode: EqMode::PerQueue,
            moderation: Moderation::default(),
            tx_inline: 0,
            tx_blueflame: 0,
            tx_mpwqe: false,
            cqe_compress: false,
            cq_session: 0,
            rx_striding: None,
            tx_encap: None,
        }
    }
}

/// Offloads requested for one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxOffload {
    /// Insert the IPv4 header checksum.
    pub csum_l3: bool,
    /// Insert the TCP/UDP checksum.
    pub csum_l4: bool,
    /// Insert a C-VLAN tag with this TCI (by the device, or in the inline header when inline
    /// headers are asked for or the device cannot insert).
    pub vlan_tci: Option<u16>,
    /// Carry the first 18 bytes of the frame in the WQE (mlx5e's L2 inline mode).
    pub inline_headers: bool,
    /// Segment the frame (a super-frame) into TCP segments of `mss` payload bytes: an LSO WQE
    /// ([`LsoRequest::for_frame`] finds the headers). The device then writes every checksum
    /// of every segment (`csum_l3`/`csum_l4` are not looked at); no VLAN insertion, no
    /// `inline_headers`, no multi-packet WQE.
    pub lso: Option<LsoRequest>,
}

/// The checksum flags mlx5e writes on an LSO send (the device writes every checksum of an LSO
/// segment whatever they say): L3|L4 for a plain frame, L3|inner L3|inner L4 (0x70) for a
/// tunnelled one.
fn lso_cs_flags(tunnel: LsoTunnel) -> CsFlags {
    let tunnelled = tunnel != LsoTunnel::None;
    CsFlags {
        l3: true,
        l4: !tunnelled,
        inner_l3: tunnelled,
        inner_l4: tunnelled,
    }
}

/// Which side of a queue pair an error completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Send,
    Receive,
}

/// A received frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxFrame {
    /// The receive queue.
    pub queue: usize,
    /// The frame as written to memory (VLAN tag stripped when `vlan` is set).
    pub data: Vec<u8>,
    /// IPv4 header checksum good (IPv6: header parsed).
    pub l3_ok: bool,
    /// TCP/UDP checksum good.
    pub l4_ok: bool,
    /// Checksum-complete: the ones'-complement sum of the bytes after the L3 header.
    pub csum: u16,
    pub rss_hash: u32,
    pub rss_type: RssHashType,
    pub l3_type: L3Type,
    pub l4_type: L4Type,
    /// The stripped VLAN TCI.
    pub vlan: Option<u16>,
    /// Device cycles at completion.
    pub timestamp: u64,
    /// The receive WQE the frame is in (its WQE counter): a striding RQ's CQE names it in
    /// `wqe_id`, a plain RQ's in `wqe_counter`.
    pub wqe: u16,
    /// The device removed the frame's VXLAN/NVGRE outer headers (the fields above are the
    /// inner frame's).
    pub decapped: bool,
    /// The frame is a tunnel delivered whole with the inner offloads
    /// ([`crate::device::InnerOffload`]): `l3_ok` and `l4_ok` cover both the outer and the
    /// inner headers, RSS hashed the inner ones; the types and `csum` are the outer headers'.
    pub tunneled: bool,
    /// The tunnel the frame's outer headers announce: 0 none, 1 VXLAN, 2 NVGRE; its VNI/VSID;
    /// why it is malformed (0 for none).
    pub tunnel_kind: u8,
    pub tunnel_id: u32,
    pub tunnel_bad: u8,
}

impl RxFrame {
    /// The checksum level a Linux driver reports the frame's checksums verified at
    /// (CHECKSUM_UNNECESSARY, `skb->csum_level`), as mlx5e decides it: with `l3_ok` and
    /// `l4_ok`, 1 for a tunnel delivered whole with the inner offloads (the outer and the inner
    /// headers verified; the skb is marked as encapsulated), else 0; `None` when a checksum
    /// is not verified good (the stack checks it, from `csum` or itself).
    pub fn csum_unnecessary(&self) -> Option<u8> {
        (self.l3_ok && self.l4_ok).then_some(u8::from(self.tunneled))
    }
}

/// What [`NetDev::poll`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A frame was sent.
    Tx {
        queue: usize,
        /// The WQE index [`NetDev::send`] returned (shared by the packets of a multi-packet
        /// WQE, each completing as its own `Tx`).
        wqe_counter: u16,
        /// Bytes of the frame as given to `send`.
        bytes: usize,
        /// Device cycles at completion (0 for WQEs completed by a later CQE).
        timestamp: u64,
    },
    /// A frame was received.
    Rx(RxFrame),
    /// A WQE completed in error; its queue stopped (unless the syndrome is a flush).
    Error {
        queue: usize,
        kind: Direction,
        syndrome: Syndrome,
        /// nicgen: the failing segment.
        vendor_syndrome: u8,
        wqe_counter: u16,
    },
}

/// An event other than a completion, as the EQ reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncEvent {
    /// The EQ it came from.
    pub eq: usize,
    pub event_type: EventType,
    pub sub_type: u8,
    /// The EQE's CQN field (meaningful for completion events).
    pub cqn: u32,
}

/// What went wrong.
#[derive(Debug, Error)]
pub enum Error {
    /// Not enough free WQEBBs in the send ring; poll for completions and retry.
    #[error("queue {queue}: send ring full ({need} WQEBBs needed, {free} free)")]
    QueueFull {
        queue: usize,
        need: usize,
        free: usize,
    },
    /// A frame over the transmit buffer or the device's largest frame.
    #[error("frame of {len} bytes is over the {max}-byte limit")]
    FrameTooLarge { len: usize, max: usize },
    /// A frame shorter than an Ethernet header.
    #[error("frame of {len} bytes is shorter than an Ethernet header ({min} bytes)")]
    FrameTooShort { len: usize, min: usize },
    /// The queue stopped on an error completion.
    #[error("queue {queue}: the {kind:?} queue is in error; call reset_queue_after_error")]
    QueueInError { queue: usize, kind: Direction },
    /// Nothing happened in time.
    #[error("timeout after {waited_ns} ns waiting for {what}")]
    Timeout { what: &'static str, waited_ns: u64 },
    /// A queue number beyond the netdev's.
    #[error("no queue {queue}: the netdev has {queues}")]
    NoSuchQueue { queue: usize, queues: usize },
    /// A configuration the device cannot serve.
    #[error("bad configuration: {0}")]
    Config(String),
    /// A CQE that does not match what the driver posted (a device or driver bug); the
    /// completions polled before it are returned by the next poll.
    #[error("queue {queue}: {what} (CQE opcode {opcode:?}, WQE counter {wqe_counter})")]
    BadCompletion {
        queue: usize,
        what: &'static str,
        opcode: CqeOpcode,
        wqe_counter: u16,
    },
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Dma(#[from] DmaError),
    #[error(transparent)]
    Desc(#[from] DescError),
    #[error(transparent)]
    Lso(#[from] LsoError),
}

/// An operation that consumed the [`Device`] failed; here it is back (boxed: a device holds
/// its backend).
pub struct ErrorWithDevice<B: Backend> {
    pub error: Error,
    pub device: Box<Device<B>>,
}

impl<B: Backend> fmt::Debug for ErrorWithDevice<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.error, f)
    }
}

impl<B: Backend> fmt::Display for ErrorWithDevice<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<B: Backend> std::error::Error for ErrorWithDevice<B> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<B: Backend> From<ErrorWithDevice<B>> for Error {
    fn from(e: ErrorWithDevice<B>) -> Self {
        e.error
    }
}

/// A send WQE in flight.
#[derive(Clone, Debug)]
struct TxInflight {
    index: u16,
    wqebbs: usize,
    /// Bytes of each of its frames (one for a SEND, one per packet for a multi-packet WQE,
    /// none for the NOP that [`NetDev::flush`] posts, which completes without a
    /// [`Completion::Tx`]).
    frames: Vec<usize>,
}

/// An enhanced multi-packet send WQE being filled ([`NetDevConfig::tx_mpwqe`]), not yet in
/// the ring: its WQEBBs are produced when it closes.
#[derive(Clone, Debug)]
struct MpwSession {
    /// Its WQE index: the producer counter when it opened.
    index: u16,
    off: TxOffload,
    /// One packet per entry.
    gather: Vec<Gather>,
    /// Bytes of each packet.
    frames: Vec<usize>,
    /// Bytes the packets take in the device's gather buffer, each rounded up to 64.
    laid: usize,
}

impl MpwSession {
    /// DS units of its WQE.
    fn ds(&self) -> usize {
        2 + self.gather.iter().map(Gather::ds).sum::<usize>()
    }
}

struct Sq {
    ring: u64,
    dbr: DoorbellRecord,
    wq: WorkQueue,
    inflight: VecDeque<TxInflight>,
    in_error: bool,
    bufs: u64,
    /// The doorbell (first 8 bytes) of the newest WQE posted by [`NetDev::send_more`] and not
    /// yet rung.
    unrung: Option<[u8; 8]>,
    /// WQEs posted in a row without asking for a CQE.
    unsignalled: usize,
    /// The open multi-packet WQE.
    mpw: Option<MpwSession>,
}

struct Rq {
    ring: u64,
    dbr: DoorbellRecord,
    wq: WorkQueue,
    in_error: bool,
    bufs: u64,
    /// Striding RQ: strides of the oldest posted WQE the device has used.
    stride: u32,
    /// The data segment [`NetDev::post_rx_raw`] gave, for the next WQE posted.
    raw_next: Option<DataSeg>,
    /// WQEs posted with a raw data segment: their WQE counter and the segment's address,
    /// where their frames are.
    raw: Vec<(u16, u64)>,
}

impl Rq {
    /// Where WQE `index`'s frames are: its raw segment's address, or the driver's buffer at
    /// `offset` in `bufs`.
    fn buffer(&self, index: u16, offset: u64) -> u64 {
        self.raw
            .iter()
            .find(|r| r.0 == index)
            .map_or(self.bufs + offset, |r| r.1)
    }

    /// The oldest WQE is used up.
    fn consume_wqe(&mut self) -> Result<(), crate::ring::RingError> {
        let cc = self.wq.cc();
        self.raw.retain(|r| r.0 != cc);
        self.wq.consume(1)
    }
}

struct Cq {
    ring: u64,
    dbr: DoorbellRecord,
    ev: EventRing,
    arm_sn: u8,
    armed: bool,
}

struct Eq {
    ring: u64,
    ev: EventRing,
    vector: usize,
}

struct QueuePair {
    eq: usize,
    cq: Cq,
    sq: Sq,
    rq: Rq,
}

/// Queue pairs on a [`Device`].
pub struct NetDev<B: Backend> {
    dev: Device<B>,
    cfg: NetDevConfig,
    lkey: Lkey,
    eqs: Vec<Eq>,
    qps: Vec<QueuePair>,
    /// Device objects created, in order (destroyed in reverse).
    created: Vec<(QueueType, u16)>,
    /// DMA memory allocated, in order.
    regions: Vec<DmaRegion>,
    mr_registered: bool,
    pending: Vec<Completion>,
    events: Vec<AsyncEvent>,
    /// Compressed sessions expanded, and the completions they held.
    compressed: (u64, u64),
}

impl<B: Backend> fmt::Debug for NetDev<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetDev")
            .field("device", &self.dev)
            .field("config", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> NetDev<B> {
    /// Build the queues of `cfg` on `device`. On failure everything built is torn down and
    /// the device comes back in the error.
    pub fn new(device: Device<B>, cfg: NetDevConfig) -> Result<Self, ErrorWithDevice<B>> {
        let mut nd = NetDev {
            dev: device,
            cfg,
            lkey: Lkey(MR_INDEX),
            eqs: Vec::new(),
            qps: Vec::new(),
            created: Vec::new(),
            regions: Vec::new(),
            mr_registered: false,
            pending: Vec::new(),
            events: Vec::new(),
            compressed: (0, 0),
        };
        match nd.validate().and_then(|()| nd.build()) {
            Ok(()) => Ok(nd),
            Err(error) => {
                // The first error is the one to report; teardown is best effort.
                let _ = nd.teardown();
                Err(ErrorWithDevice {
                    error,
                    device: Box::new(nd.dev),
                })
            }
        }
    }

    /// Event queues: one per queue pair, or one.
    fn eq_count(&self) -> usize {
        match self.cfg.eq_mode {
            EqMode::PerQueue => self.cfg.queues,
            EqMode::Shared => 1,
        }
    }

    fn cq_log_size(&self) -> u8 {
        self.cfg.sq_log_size.max(self.cfg.rq_log_size) + 1
    }

    fn validate(&mut self) -> Result<(), Error> {
        let c = self.cfg;
        let info = self.dev.info().clone();
        let vectors = self.dev.backend().vectors();
        if c.queues == 0 || c.queues > info.queues as usize {
            return Err(Error::Config(format!(
                "{} queue pairs; the device has {}",
                c.queues, info.queues
            )));
        }
        let eqs = self.eq_count();
        if eqs > info.eqs as usize || eqs > vectors {
            return Err(Error::Config(format!(
                "{eqs} event queues needed; the device has {} EQs and {vectors} vectors \
                 (use EqMode::Shared)",
                info.eqs
            )));
        }
        let max_log = info.log_max_wq.min(MAX_LOG_WQ);
        for (what, log) in [
            ("sq_log_size", c.sq_log_size),
            ("rq_log_size", c.rq_log_size),
            ("eq_log_size", c.eq_log_size),
            ("completion ring (max(sq, rq) + 1)", self.cq_log_size()),
        ] {
            if log > max_log {
                return Err(Error::Config(format!(
                    "{what} {log} is over the device's log_max_wq {max_log}"
                )));
            }
        }
        if c.sq_log_size < MIN_LOG_SQ {
            return Err(Error::Config(format!(
                "sq_log_size {} cannot hold a WQE of {MAX_SEND_DS} segments (at least {MIN_LOG_SQ})",
                c.sq_log_size
            )));
        }
        // Per CQ, an EQ holds at most one completion event per arm plus error events.
        let cqs_per_eq = c.queues / eqs;
        if (1usize << c.eq_log_size) < 4 * cqs_per_eq {
            return Err(Error::Config(format!(
                "eq_log_size {} is too small for {cqs_per_eq} completion queues per EQ",
                c.eq_log_size
            )));
        }
        if c.rx_buf_size < info.max_frame() || c.rx_buf_size > i32::MAX as usize {
            return Err(Error::Config(format!(
                "rx_buf_size {} must hold the device's largest frame ({} bytes)",
                c.rx_buf_size,
                info.max_frame()
            )));
        }
        if c.tx_inline > MAX_TX_INLINE {
            return Err(Error::Config(format!(
                "tx_inline {} is over {MAX_TX_INLINE}, the largest frame a WQE holds whole",
                c.tx_inline
            )));
        }
        if c.tx_blueflame > MAX_BLUEFLAME || !c.tx_blueflame.is_multiple_of(WQEBB) {
            return Err(Error::Config(format!(
                "tx_blueflame {} is not a multiple of {WQEBB} up to {MAX_BLUEFLAME}",
                c.tx_blueflame
            )));
        }
        if let Some(s) = c.rx_striding {
            if !(1..=14).contains(&s.log_num_strides)
                || !(6..=13).contains(&s.log_stride_size)
                || s.wqe_bytes() < info.max_frame()
            {
                return Err(Error::Config(format!(
                    "rx_striding {s:?}: 2..=16384 strides of 64..=8192 bytes, a WQE of at \
                     least the device's largest frame ({} bytes)",
                    info.max_frame()
                )));
            }
        }
        if c.tx_buf_size < ETH_HLEN + 1 || c.tx_buf_size > misc::MAX_FRAME as usize {
            return Err(Error::Config(format!(
                "tx_buf_size {} is outside {}..={}",
                c.tx_buf_size,
                ETH_HLEN + 1,
                misc::MAX_FRAME
            )));
        }
        Ok(())
    }

    fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, Error> {
        let r = self.dev.backend().alloc(len, align)?;
        self.regions.push(r);
        Ok(r)
    }

    fn tx_ring_bytes(&self) -> usize {
        (self.tx_bufs_per_slot() * self.cfg.tx_buf_size) << self.cfg.sq_log_size
    }

    fn tx_bufs_per_slot(&self) -> usize {
        if self.cfg.tx_mpwqe {
            MPWQE_BUFS_PER_SLOT
        } else {
            1
        }
    }

    /// Bytes of the buffer each receive WQE names.
    fn rx_slot_bytes(&self) -> usize {
        self.cfg
            .rx_striding
            .map_or(self.cfg.rx_buf_size, |s| s.wqe_bytes())
    }

    fn rx_log_stride(&self) -> u8 {
        if self.cfg.rx_striding.is_some() {
            RX_LOG_STRIDE_MPWRQ
        } else {
            RX_LOG_STRIDE
        }
    }

    fn per_queue_bytes(&self) -> usize {
        self.tx_ring_bytes() + (self.rx_slot_bytes() << self.cfg.rq_log_size)
    }

    fn build(&mut self) -> Result<(), Error> {
        let c = self.cfg;
        let arena = self.alloc(c.queues * self.per_queue_bytes(), RING_ALIGN)?;
        self.lkey = self.dev.register_mr(MR_INDEX, arena)?;
        self.mr_registered = true;
        let dbrs = self.alloc(3 * c.queues * DoorbellRecord::SIZE, 64)?;
        let dbr = |k: usize| DoorbellRecord {
            addr: dbrs.addr + (k * DoorbellRecord::SIZE) as u64,
        };

        for e in 0..self.eq_count() {
            let ring = self.alloc(CQE_BYTES << c.eq_log_size, RING_ALIGN)?;
            init_entries(
                self.dev.backend(),
                ring.addr,
                c.eq_log_size,
                &Eqe::initial(),
            );
            let p = EqParams {
                ring: ring.addr,
                log_size: c.eq_log_size,
                vector: e as u16,
                moderation: c.moderation,
            };
            self.dev.create_eq(e as u16, p)?;
            self.created.push((QueueType::Eq, e as u16));
            self.eqs.push(Eq {
                ring: ring.addr,
                ev: EventRing::new(c.eq_log_size),
                vector: e,
            });
            self.arm_eq(e);
        }

        let cq_log = self.cq_log_size();
        for q in 0..c.queues {
            let n = q as u16;
            let eq = if c.eq_mode == EqMode::Shared { 0 } else { q };
            let cq_ring = self.alloc(CQE_BYTES << cq_log, RING_ALIGN)?;
            init_entries(self.dev.backend(), cq_ring.addr, cq_log, &Cqe::initial());
            let cq = Cq {
                ring: cq_ring.addr,
                dbr: dbr(3 * q),
                ev: EventRing::new(cq_log),
                arm_sn: 0,
                armed: false,
            };
            let p = CqParams {
                ring: cq.ring,
                log_size: cq_log,
                dbr: cq.dbr.addr,
                eq: eq as u16,
                compress: self.cfg.cqe_compress.then_some(MiniFormat::Csum),
                session: self.cfg.cq_session,
            };
            self.dev.create_cq(n, p)?;
            self.created.push((QueueType::Cq, n));

            let sq_ring = self.alloc(WQEBB << c.sq_log_size, RING_ALIGN)?;
            let sq = Sq {
                ring: sq_ring.addr,
                dbr: dbr(3 * q + 1),
                wq: WorkQueue::new(c.sq_log_size).map_err(|e| Error::Config(e.to_string()))?,
                inflight: VecDeque::new(),
                in_error: false,
                bufs: arena.addr + (q * self.per_queue_bytes()) as u64,
                unrung: None,
                unsignalled: 0,
                mpw: None,
            };
            let p = SqParams {
                ring: sq.ring,
                log_size: c.sq_log_size,
                dbr: sq.dbr.addr,
                cq: n,
                encap: c.tx_encap,
            };
            self.dev.create_sq(n, p)?;
            self.created.push((QueueType::Sq, n));

            let rq_ring = self.alloc((1 << self.rx_log_stride()) << c.rq_log_size, RING_ALIGN)?;
            let rq = Rq {
                ring: rq_ring.addr,
                dbr: dbr(3 * q + 2),
                wq: WorkQueue::new(c.rq_log_size).map_err(|e| Error::Config(e.to_string()))?,
                in_error: false,
                bufs: sq.bufs + self.tx_ring_bytes() as u64,
                stride: 0,
                raw_next: None,
                raw: Vec::new(),
            };
            let p = RqParams {
                ring: rq.ring,
                log_size: c.rq_log_size,
                log_stride: self.rx_log_stride(),
                dbr: rq.dbr.addr,
                cq: n,
                striding: c.rx_striding,
            };
            self.dev.create_rq(n, p)?;
            self.created.push((QueueType::Rq, n));
            self.qps.push(QueuePair { eq, cq, sq, rq });
            self.post_rx_buffers(q)?;
        }
        Ok(())
    }

    /// Destroy what was created (newest first), unregister the MR, free the memory. Runs to
    /// the end and reports the first failure.
    fn teardown(&mut self) -> Result<(), Error> {
        let mut first: Result<(), Error> = Ok(());
        while let Some((t, n)) = self.created.pop() {
            if let Err(e) = self.dev.destroy(t, n) {
                first = first.and(Err(e.into()));
            }
        }
        if std::mem::take(&mut self.mr_registered) {
            if let Err(e) = self.dev.unregister_mr(self.lkey) {
                first = first.and(Err(e.into()));
            }
        }
        while let Some(r) = self.regions.pop() {
            self.dev.backend().free(r);
        }
        self.qps.clear();
        self.eqs.clear();
        first
    }

    /// Tear down every queue, the memory region and the memory, and give the device back.
    pub fn close(mut self) -> Result<Device<B>, ErrorWithDevice<B>> {
        match self.teardown() {
            Ok(()) => Ok(self.dev),
            Err(error) => Err(ErrorWithDevice {
                error,
                device: Box::new(self.dev),
            }),
        }
    }

    /// The device (counters, loopback, RSS, time).
    pub fn device(&mut self) -> &mut Device<B> {
        &mut self.dev
    }

    /// Compressed CQE sessions polled so far, and the completions they held.
    pub fn compressed(&self) -> (u64, u64) {
        self.compressed
    }

    /// The configuration.
    pub fn config(&self) -> &NetDevConfig {
        &self.cfg
    }

    /// The memory region of the driver's buffers.
    pub fn lkey(&self) -> Lkey {
        self.lkey
    }

    /// Events other than completions seen by [`NetDev::wait`] since the last call.
    pub fn take_async_events(&mut self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.events)
    }

    fn qp(&mut self, queue: usize) -> Result<&mut QueuePair, Error> {
        let queues = self.qps.len();
        self.qps
            .get_mut(queue)
            .ok_or(Error::NoSuchQueue { queue, queues })
    }

    /// Largest frame on the wire: the device's, and what one send WQE may describe.
    fn wire_max(&self) -> usize {
        self.dev.info().max_frame().min(misc::MAX_FRAME as usize)
    }

    /// Largest frame [`NetDev::send`] takes without VLAN insertion (4 bytes less with it).
    pub fn max_frame(&self) -> usize {
        self.cfg.tx_buf_size.min(self.wire_max())
    }

    /// Post a frame on send queue `queue` and ring the doorbell (for it and every WQE
    /// [`NetDev::send_more`] posted before it); returns its WQE index (the `wqe_counter` of its
    /// [`Completion::Tx`]).
    pub fn send(&mut self, queue: usize, frame: &[u8], off: TxOffload) -> Result<u16, Error> {
        self.send_frame(queue, frame, off, false)
    }

    /// Doorbell batching (Linux's `xmit_more`): post a frame on send queue `queue` like
    /// [`NetDev::send`] but ring no doorbell, because more frames follow; the next
    /// [`NetDev::send`] or [`NetDev::flush`] rings once for the whole batch (one doorbell-record
    /// write and one UAR write, and the device fetches the batch's WQEs together). Such a WQE
    /// asks for no CQE (send CQEs are cumulative), except every [`MAX_UNSIGNALLED`]th in a row,
    /// so the ring is reclaimed during a long batch.
    pub fn send_more(&mut self, queue: usize, frame: &[u8], off: TxOffload) -> Result<u16, Error> {
        self.send_frame(queue, frame, off, true)
    }

    /// Ring the doorbell of send queue `queue` for the WQEs [`NetDev::send_more`] posted since
    /// the last doorbell; when the newest of them asked for no CQE, a NOP WQE that asks for one
    /// closes the batch, so every frame gets its [`Completion::Tx`] (the NOP itself reports
    /// none). Nothing to ring: no-op.
    pub fn flush(&mut self, queue: usize) -> Result<(), Error> {
        let qp = self.qp(queue)?;
        if qp.sq.mpw.is_some() {
            return self.mpw_close(queue, false);
        }
        if qp.sq.unrung.is_none() {
            return Ok(());
        }
        if qp.sq.unsignalled > 0 {
            let nop = SendWqe::nop(qp.sq.wq.pc(), queue as u32, true);
            self.post_wqe(queue, &nop.encode()?, Vec::new(), false, true)?;
        } else {
            self.ring(queue)?;
        }
        Ok(())
    }

    fn send_frame(
        &mut self,
        queue: usize,
        frame: &[u8],
        off: TxOffload,
        more: bool,
    ) -> Result<u16, Error> {
        let caps = self.dev.info().caps;
        let vlan_extra = if off.vlan_tci.is_some() { VLAN_HLEN } else { 0 };
        let max = self
            .cfg
            .tx_buf_size
            .min(self.wire_max().saturating_sub(vlan_extra));
        if frame.len() > max {
            return Err(Error::FrameTooLarge {
                len: frame.len(),
                max,
            });
        }
        if frame.len() < ETH_HLEN {
            return Err(Error::FrameTooShort {
                len: frame.len(),
                min: ETH_HLEN,
            });
        }
        if (off.csum_l3 || off.csum_l4) && !caps.csum && off.lso.is_none() {
            return Err(DeviceError::Unsupported("checksum offload").into());
        }
        if self.qp(queue)?.sq.in_error {
            return Err(Error::QueueInError {
                queue,
                kind: Direction::Send,
            });
        }
        if self.cfg.tx_mpwqe && off.vlan_tci.is_none() && !off.inline_headers && off.lso.is_none() {
            return self.mpw_send(queue, frame, off, more);
        }
        let lso = off
            .lso
            .map(|l| self.lso_segment(frame, &off, l))
            .transpose()?;
        self.mpw_close(queue, true)?;
        let (lkey, tx_buf_size) = (self.lkey.0, self.cfg.tx_buf_size);
        let bufs_per_slot = self.tx_bufs_per_slot();
        let qp = self.qp(queue)?;
        let index = qp.sq.wq.pc();
        let slot = qp.sq.wq.slot(index);
        let buf = qp.sq.bufs + (slot * bufs_per_slot * tx_buf_size) as u64;
        let cq_update = !more || qp.sq.unsignalled + 1 >= MAX_UNSIGNALLED;

        // The L2 header: in the WQE (with the tag spliced in when the driver inserts it), by
        // the device's VLAN insert, or all in the buffer; an LSO's every header through TCP.
        let (header, rest) = match (off.lso, off.vlan_tci) {
            (Some(l), _) => {
                let h = l.headers.hdr_len;
                (L2Header::Inline(frame[..h].to_vec()), h)
            }
            (None, Some(tci)) if off.inline_headers || !caps.vlan => {
                let mut h = frame[..MACS_LEN].to_vec();
                h.extend_from_slice(&TPID_8021Q.to_be_bytes());
                h.extend_from_slice(&tci.to_be_bytes());
                // Through the EtherType when the frame has more; the data segment keeps >= 1 byte.
                let hdr_end = if frame.len() > ETH_HLEN {
                    ETH_HLEN
                } else {
                    MACS_LEN
                };
                h.extend_from_slice(&frame[MACS_LEN..hdr_end]);
                (L2Header::Inline(h), hdr_end)
            }
            (None, Some(tci)) => (L2Header::VlanInsert(tci), 0),
            (None, None) if off.inline_headers && frame.len() > INLINE_L2 => {
                (L2Header::Inline(frame[..INLINE_L2].to_vec()), INLINE_L2)
            }
            (None, None) => (L2Header::None, 0),
        };
        let (opcode, cs_flags) = match off.lso {
            Some(l) => (SendOpcode::Lso, lso_cs_flags(l.headers.tunnel)),
            None => (
                SendOpcode::Send,
                CsFlags {
                    l3: off.csum_l3,
                    l4: off.csum_l4,
                    ..CsFlags::default()
                },
            ),
        };
        let wqe = SendWqe {
            opcode,
            wqe_index: index,
            sqn: queue as u32,
            cq_update,
            eth: Some(EthSeg {
                cs_flags,
                header,
                lso,
            }),
            gather: vec![if frame.len() <= self.cfg.tx_inline {
                Gather::Inline(frame[rest..].to_vec())
            } else {
                Gather::Ptr(DataSeg {
                    byte_count: (frame.len() - rest) as u32,
                    lkey,
                    addr: buf + rest as u64,
                })
            }],
        };
        if let Some(Gather::Ptr(_)) = wqe.gather.first() {
            self.dev.backend().write(buf, frame);
        }
        self.post_wqe(queue, &wqe.encode()?, vec![frame.len()], more, cq_update)
    }

    /// The Ethernet segment's LSO fields for `frame` sent with `req`, once the device and
    /// `off` allow it: the device segments, `mss` is within its `max_mss`, no VLAN insertion
    /// or L2-only inline header is asked for, the headers end inside the frame and their
    /// offsets fit the software parser.
    fn lso_segment(
        &self,
        frame: &[u8],
        off: &TxOffload,
        req: LsoRequest,
    ) -> Result<crate::desc::Lso, Error> {
        let info = self.dev.info();
        if !info.caps.tso {
            return Err(DeviceError::Unsupported("TCP segmentation offload").into());
        }
        if off.vlan_tci.is_some() || off.inline_headers {
            return Err(Error::Config(
                "an LSO send carries its headers inline: no VLAN insertion, no L2 inline mode"
                    .into(),
            ));
        }
        if req.mss == 0 || req.mss > info.max_mss {
            return Err(DeviceError::OutOfRange {
                what: "LSO mss",
                value: req.mss.into(),
                limit: info.max_mss.into(),
            }
            .into());
        }
        let hdr_len = req.headers.hdr_len;
        if hdr_len >= frame.len() {
            return Err(LsoError::NoPayload {
                len: frame.len(),
                hdr_len,
            }
            .into());
        }
        Ok(crate::desc::Lso {
            mss: req.mss,
            swp: req.headers.swp()?,
        })
    }

    /// [`NetDevConfig::tx_mpwqe`]: `frame` as one more packet of queue `queue`'s open
    /// multi-packet WQE (a new one when it does not fit the open one); unless `more`, close it
    /// and ring. Returns the WQE's index.
    fn mpw_send(
        &mut self,
        queue: usize,
        frame: &[u8],
        off: TxOffload,
        more: bool,
    ) -> Result<u16, Error> {
        let gather_buf = self.dev.info().max_frame().next_power_of_two();
        let (lkey, tx_buf_size, tx_inline) =
            (self.lkey.0, self.cfg.tx_buf_size, self.cfg.tx_inline);
        let laid = frame.len().next_multiple_of(64);
        let inline = frame.len() <= tx_inline;
        let entry_ds = if inline {
            Gather::Inline(frame.to_vec()).ds()
        } else {
            1
        };
        let sq = &self.qp(queue)?.sq;
        let fits = sq.mpw.as_ref().is_some_and(|s| {
            let ds = s.ds() + entry_ds;
            s.off == off
                && s.frames.len() < MPWQE_MAX_PACKETS
                && ds <= MAX_SEND_DS
                && (ds * DS_BYTES).div_ceil(WQEBB) <= sq.wq.free()
                && s.laid + laid <= gather_buf
        });
        if !fits {
            self.mpw_close(queue, true)?;
        }
        let sq = &mut self.qp(queue)?.sq;
        if sq.mpw.is_none() {
            let (free, need) = (sq.wq.free(), ((2 + entry_ds) * DS_BYTES).div_ceil(WQEBB));
            if free < need {
                return Err(Error::QueueFull { queue, need, free });
            }
            sq.mpw = Some(MpwSession {
                index: sq.wq.pc(),
                off,
                gather: Vec::new(),
                frames: Vec::new(),
                laid: 0,
            });
        }
        let bufs = MPWQE_BUFS_PER_SLOT << self.cfg.sq_log_size;
        let sq = &mut self.qp(queue)?.sq;
        let s = sq.mpw.as_mut().expect("opened above");
        let index = s.index;
        let entry = if inline {
            Gather::Inline(frame.to_vec())
        } else {
            let k = (MPWQE_BUFS_PER_SLOT * sq.wq.slot(index) + s.frames.len()) % bufs;
            let addr = sq.bufs + (k * tx_buf_size) as u64;
            Gather::Ptr(DataSeg {
                byte_count: frame.len() as u32,
                lkey,
                addr,
            })
        };
        s.gather.push(entry);
        s.frames.push(frame.len());
        s.laid += laid;
        if let Some(Gather::Ptr(d)) = s.gather.last() {
            let addr = d.addr;
            self.dev.backend().write(addr, frame);
        }
        if !more {
            self.mpw_close(queue, false)?;
        }
        Ok(index)
    }

    /// Write queue `queue`'s open multi-packet WQE into the ring, if there is one; unless
    /// `more`, ring (the WQE then asks for a CQE).
    fn mpw_close(&mut self, queue: usize, more: bool) -> Result<(), Error> {
        let sq = &mut self.qp(queue)?.sq;
        let Some(s) = sq.mpw.take() else {
            return Ok(());
        };
        let cq_update = !more || sq.unsignalled + 1 >= MAX_UNSIGNALLED;
        let wqe = SendWqe {
            opcode: SendOpcode::EnhancedMpsw,
            wqe_index: s.index,
            sqn: queue as u32,
            cq_update,
            eth: Some(EthSeg {
                cs_flags: CsFlags {
                    l3: s.off.csum_l3,
                    l4: s.off.csum_l4,
                    ..CsFlags::default()
                },
                header: L2Header::None,
                lso: None,
            }),
            gather: s.gather,
        };
        self.post_wqe(queue, &wqe.encode()?, s.frames, more, cq_update)?;
        Ok(())
    }

    /// Post a send WQE exactly as given (its `wqe_index` and `sqn` are set here), with no
    /// frame buffer of its own: for diagnostics and for testing how the device handles bad
    /// descriptors (its data segments may point anywhere, with any lkey and length). Returns
    /// its WQE index; a bad WQE completes as [`Completion::Error`].
    pub fn post_raw(&mut self, queue: usize, mut wqe: SendWqe) -> Result<u16, Error> {
        let qp = self.qp(queue)?;
        if qp.sq.in_error {
            return Err(Error::QueueInError {
                queue,
                kind: Direction::Send,
            });
        }
        self.mpw_close(queue, true)?;
        let qp = self.qp(queue)?;
        wqe.wqe_index = qp.sq.wq.pc();
        wqe.sqn = queue as u32;
        let lens = wqe.gather.iter().map(Gather::len);
        let frames = match wqe.opcode {
            SendOpcode::EnhancedMpsw => lens.collect(),
            _ => vec![lens.sum()],
        };
        let signalled = wqe.cq_update;
        self.post_wqe(queue, &wqe.encode()?, frames, false, signalled)
    }

    /// Write encoded WQE `bytes` (which asks for a CQE when `signalled`) at the producer
    /// counter of SQ `queue` (wrapping); unless `more`, publish the counter in the doorbell
    /// record and ring the UAR doorbell, as mlx5e does ([`NetDev::ring`]).
    fn post_wqe(
        &mut self,
        queue: usize,
        bytes: &[u8],
        frames: Vec<usize>,
        more: bool,
        signalled: bool,
    ) -> Result<u16, Error> {
        let n = bytes.len() / WQEBB;
        let bf_max = self.cfg.tx_blueflame;
        let qp = self.qp(queue)?;
        let first = qp.sq.wq.produce(n).map_err(|e| match e {
            RingError::Full { need, free } => Error::QueueFull { queue, need, free },
            e => Error::Config(e.to_string()),
        })?;
        let ring = qp.sq.ring;
        let spans: Vec<_> = qp.sq.wq.spans(first, n, WQEBB).collect();
        qp.sq.inflight.push_back(TxInflight {
            index: first,
            wqebbs: n,
            frames,
        });
        qp.sq.unsignalled = if signalled { 0 } else { qp.sq.unsignalled + 1 };
        // BlueFlame only for a WQE rung alone: the device takes a BlueFlame WQE only when it is
        // the SQ's next one, so after a batch it would fetch it anyway.
        let blueflame = !more && qp.sq.unrung.is_none() && bytes.len() <= bf_max;
        let mut db = [0u8; 8];
        db.copy_from_slice(&bytes[..8]);
        qp.sq.unrung = Some(db);
        let hw = self.dev.backend();
        for s in spans {
            hw.write(ring + s.ring_offset as u64, &bytes[s.src..s.src + s.len]);
        }
        if blueflame {
            // BlueFlame: bytes 8 up to the DS count's end into the window (a dword a BAR
            // write, so none for the WQEBB's padding); the doorbell below writes bytes 0-7 and
            // commits them. The window is written after the ring, and the doorbell after both
            // (`ring`'s barriers).
            hw.wmb();
            let end = DS_BYTES * (bytes[7] & 0x3F) as usize;
            for (i, d) in bytes[8..end].chunks(4).enumerate() {
                let v = u32::from_le_bytes(d.try_into().expect("WQEs are whole dwords"));
                hw.write32(uar::SQ_BF + 4 * i as u32, v);
            }
        }
        if !more {
            self.ring(queue)?;
        }
        Ok(first)
    }

    /// Ring SQ `queue`'s doorbell for the WQEs written since the last one: write barrier, the
    /// producer counter into the doorbell record, barrier, the newest WQE's first 8 bytes to
    /// the UAR doorbell.
    fn ring(&mut self, queue: usize) -> Result<(), Error> {
        let qp = self.qp(queue)?;
        let Some(db) = qp.sq.unrung.take() else {
            return Ok(());
        };
        let (dbr, pc) = (qp.sq.dbr, qp.sq.wq.pc());
        let hw = self.dev.backend();
        hw.wmb();
        dbr.set_sq_pc(hw, pc);
        hw.wmb();
        hw.write64(uar::SQ_DB, db);
        Ok(())
    }

    /// Make the next receive WQE the driver posts on queue `queue` carry `seg` exactly as
    /// given (striding RQ: after its next segment) in place of its own buffer: for diagnostics
    /// and for testing how the device handles a bad receive descriptor (any address, lkey and
    /// length). The driver keeps its RQ full, so the WQE takes the first slot the device frees
    /// (at a later [`NetDev::poll`], or at once if one is free); a frame in it is read from
    /// `seg.addr` (striding: plus its stride offset), and a bad one completes as
    /// [`Completion::Error`] and stops the RQ until [`NetDev::reset_queue_after_error`].
    pub fn post_rx_raw(&mut self, queue: usize, seg: DataSeg) -> Result<(), Error> {
        self.qp(queue)?.rq.raw_next = Some(seg);
        match self.post_rx_buffers(queue) {
            Err(Error::QueueInError { .. }) => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Fill every free slot of receive queue `queue` with its buffer; returns how many WQEs
    /// were posted.
    pub fn post_rx_buffers(&mut self, queue: usize) -> Result<usize, Error> {
        let (lkey, size) = (self.lkey.0, self.rx_slot_bytes());
        let striding = self.cfg.rx_striding.is_some();
        let log_stride = self.rx_log_stride();
        let qp = self.qp(queue)?;
        if qp.rq.in_error {
            return Err(Error::QueueInError {
                queue,
                kind: Direction::Receive,
            });
        }
        let mut writes = Vec::new();
        while qp.rq.wq.free() > 0 {
            let index = qp
                .rq
                .wq
                .produce(1)
                .map_err(|e| Error::Config(e.to_string()))?;
            let slot = qp.rq.wq.slot(index);
            let seg = match qp.rq.raw_next.take() {
                Some(d) => {
                    qp.rq.raw.push((index, d.addr));
                    d
                }
                None => DataSeg {
                    byte_count: size as u32,
                    lkey,
                    addr: qp.rq.bufs + (slot * size) as u64,
                },
            };
            let wqe = RecvWqe { scatter: vec![seg] };
            // Striding: a next segment (unused, the ring is cyclic), then the data segment.
            let mut bytes = if striding {
                vec![0u8; DS_BYTES]
            } else {
                Vec::new()
            };
            bytes.extend(wqe.encode(RX_LOG_STRIDE)?);
            writes.push((qp.rq.ring + ((slot as u64) << log_stride), bytes));
        }
        let (dbr, pc, n) = (qp.rq.dbr, qp.rq.wq.pc(), writes.len());
        if n > 0 {
            let hw = self.dev.backend();
            for (addr, bytes) in writes {
                hw.write(addr, &bytes);
            }
            hw.wmb();
            dbr.set_rq_pc(hw, pc);
        }
        Ok(n)
    }

    /// Every completion of queue pair `queue` the device has written, in order; refills the
    /// receive queue.
    pub fn poll(&mut self, queue: usize) -> Result<Vec<Completion>, Error> {
        self.poll_budget(queue, usize::MAX)
    }

    /// [`NetDev::poll`] with a NAPI-like budget: stops reading CQEs once `budget` received
    /// frames were taken (a compressed session is taken whole, so up to 7 more), leaving the
    /// rest for the next call; send completions do not count, as in NAPI. Fewer received
    /// frames than `budget` means the CQ was emptied (NAPI's "done": time to re-arm and wait).
    pub fn poll_budget(&mut self, queue: usize, budget: usize) -> Result<Vec<Completion>, Error> {
        self.qp(queue)?;
        let mut out = std::mem::take(&mut self.pending);
        let polled = self.drain_cq(queue, &mut out, budget);
        let refill = match self.post_rx_buffers(queue) {
            Err(Error::QueueInError { .. }) => Ok(0),
            r => r,
        };
        if let Err(e) = polled.and(refill) {
            self.pending = out;
            return Err(e);
        }
        Ok(out)
    }

    /// Read CQ `queue`'s completions into `out` until it is empty or `budget` received frames
    /// were added.
    fn drain_cq(
        &mut self,
        queue: usize,
        out: &mut Vec<Completion>,
        budget: usize,
    ) -> Result<(), Error> {
        let mut result = Ok(());
        let (mut consumed, mut received) = (0, 0);
        while received < budget {
            let (ring, ev) = {
                let cq = &self.qp(queue)?.cq;
                (cq.ring, cq.ev)
            };
            let Some(bytes) = ev.peek(self.dev.backend(), ring, cqe::OWNER) else {
                break;
            };
            // A compressed session: its completions, expanded, and its slots handed back.
            let entries = if cqe::FORMAT.get(&bytes) == cqe_format::COMPRESSED.into() {
                let mut ev = ev;
                let Some(v) = ev.take_session(self.dev.backend(), ring, &bytes, MiniFormat::Csum)
                else {
                    let c = Cqe::decode(&bytes);
                    result = Err(Error::BadCompletion {
                        queue,
                        what: "compressed session count not 2..=8",
                        opcode: c.opcode,
                        wqe_counter: c.wqe_counter,
                    });
                    break;
                };
                self.qp(queue)?.cq.ev = ev;
                consumed += v.len();
                self.compressed.0 += 1;
                self.compressed.1 += v.len() as u64;
                v
            } else {
                self.qp(queue)?.cq.ev.advance();
                consumed += 1;
                vec![bytes]
            };
            let rx = (self.rx_slot_bytes(), self.cfg.rx_striding);
            for bytes in entries {
                let c = Cqe::decode(&bytes);
                let qp = self.qp(queue)?;
                match Self::complete(qp, queue, &c, out, rx) {
                    Ok(Some((addr, len))) => {
                        self.read_rx(queue, addr, len, &c, out);
                        received += 1;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            if result.is_err() {
                break;
            }
        }
        if consumed > 0 {
            let qp = self.qp(queue)?;
            let (dbr, ci) = (qp.cq.dbr, qp.cq.ev.ci());
            dbr.set_cq_ci(self.dev.backend(), ci);
        }
        result
    }

    /// Account one CQE against the queue pair's rings; a receive completion comes back as
    /// its frame's address and length for [`NetDev::read_rx`]. `rx` is the bytes of a receive
    /// WQE's buffer and the striding geometry.
    fn complete(
        qp: &mut QueuePair,
        queue: usize,
        c: &Cqe,
        out: &mut Vec<Completion>,
        rx: (usize, Option<RqStrides>),
    ) -> Result<Option<(u64, usize)>, Error> {
        let (rx_buf_size, striding) = rx;
        let bad = |what| Error::BadCompletion {
            queue,
            what,
            opcode: c.opcode,
            wqe_counter: c.wqe_counter,
        };
        let error = |kind, e: crate::desc::CqeError| Completion::Error {
            queue,
            kind,
            syndrome: e.syndrome,
            vendor_syndrome: e.vendor_err_synd,
            wqe_counter: c.wqe_counter,
        };
        match (c.opcode, c.error) {
            (CqeOpcode::Req, _) | (CqeOpcode::ReqErr, Some(_)) => {
                let sq = &mut qp.sq;
                let pos = sq
                    .inflight
                    .iter()
                    .position(|t| t.index == c.wqe_counter)
                    .ok_or_else(|| bad("send completion for no WQE in flight"))?;
                for (k, t) in sq.inflight.drain(..=pos).enumerate() {
                    sq.wq
                        .consume(t.wqebbs)
                        .map_err(|_| bad("send ring underflow"))?;
                    match c.error {
                        Some(e) if k == pos => {
                            sq.in_error |= e.syndrome != Syndrome::WrFlush;
                            out.push(error(Direction::Send, e));
                        }
                        _ => {
                            for bytes in t.frames {
                                out.push(Completion::Tx {
                                    queue,
                                    wqe_counter: t.index,
                                    bytes,
                                    timestamp: if k == pos { c.timestamp } else { 0 },
                                });
                            }
                        }
                    }
                }
                Ok(None)
            }
            (CqeOpcode::RespSend, _) | (CqeOpcode::RespErr, Some(_)) if striding.is_some() => {
                let s = striding.expect("guarded");
                let rq = &mut qp.rq;
                // The CQE names the WQE it is in (`wqe_id`), the oldest one, and the first
                // stride it covers, that WQE's next.
                if rq.wq.used() == 0 {
                    return Err(bad("striding receive completion with no WQE posted"));
                }
                if c.wqe_id != rq.wq.cc() {
                    return Err(bad("striding receive completion for another WQE (wqe_id)"));
                }
                if u32::from(c.wqe_counter) != rq.stride {
                    return Err(bad("striding receive completion out of order"));
                }
                let wqe = rq.wq.cc();
                let slot = rq.wq.slot(wqe);
                let base = rq.buffer(wqe, (slot * rx_buf_size) as u64);
                let first = rq.stride;
                if let Some(e) = c.error {
                    // An error consumes the WQE.
                    rq.stride = 0;
                    rq.consume_wqe()
                        .map_err(|_| bad("receive ring underflow"))?;
                    rq.in_error |= e.syndrome != Syndrome::WrFlush;
                    out.push(error(Direction::Receive, e));
                    return Ok(None);
                }
                // The byte_cnt word's striding fields, at their bit positions in it.
                let bc = |f: crate::regs::DescField| {
                    let mut w = [0u8; CQE_BYTES];
                    cqe::BYTE_CNT.set(&mut w, c.byte_cnt.into());
                    f.get(&w) as u32
                };
                let (len, used, filler) = (
                    bc(cqe::MPWRQ_LEN),
                    bc(cqe::MPWRQ_STRIDES),
                    bc(cqe::MPWRQ_FILLER) == 1,
                );
                if used == 0 || first + used > s.strides() {
                    return Err(bad("striding receive completion over the WQE's strides"));
                }
                if !filler && (len as usize).div_ceil(1 << s.log_stride_size) != used as usize {
                    return Err(bad("striding receive byte count and strides disagree"));
                }
                rq.stride += used;
                if rq.stride == s.strides() {
                    rq.stride = 0;
                    rq.consume_wqe()
                        .map_err(|_| bad("receive ring underflow"))?;
                }
                if filler {
                    return Ok(None);
                }
                Ok(Some((
                    base + ((first as u64) << s.log_stride_size),
                    len as usize,
                )))
            }
            (CqeOpcode::RespSend, _) | (CqeOpcode::RespErr, Some(_)) => {
                let rq = &mut qp.rq;
                if rq.wq.used() == 0 || c.wqe_counter != rq.wq.cc() {
                    return Err(bad("receive completion out of order"));
                }
                let slot = rq.wq.slot(c.wqe_counter);
                let base = rq.buffer(c.wqe_counter, (slot * rx_buf_size) as u64);
                rq.consume_wqe()
                    .map_err(|_| bad("receive ring underflow"))?;
                if let Some(e) = c.error {
                    rq.in_error |= e.syndrome != Syndrome::WrFlush;
                    out.push(error(Direction::Receive, e));
                    return Ok(None);
                }
                if c.byte_cnt as usize > rx_buf_size {
                    return Err(bad("receive byte count over the buffer"));
                }
                Ok(Some((base, c.byte_cnt as usize)))
            }
            _ => Err(bad("unexpected CQE opcode")),
        }
    }

    /// Copy a received frame of `len` bytes out of its buffer at `addr`.
    fn read_rx(&mut self, queue: usize, addr: u64, len: usize, c: &Cqe, out: &mut Vec<Completion>) {
        let mut data = vec![0u8; len];
        self.dev.backend().read(addr, &mut data);
        out.push(Completion::Rx(RxFrame {
            queue,
            data,
            l3_ok: c.l3_ok,
            l4_ok: c.l4_ok,
            csum: c.check_sum,
            rss_hash: c.rss_hash,
            rss_type: c.rss_hash_type,
            l3_type: c.l3_type,
            l4_type: c.l4_type,
            vlan: c.vlan(),
            timestamp: c.timestamp,
            wqe: if self.cfg.rx_striding.is_some() {
                c.wqe_id
            } else {
                c.wqe_counter
            },
            decapped: c.decapped,
            tunneled: c.tunneled,
            tunnel_kind: c.tunnel_kind,
            tunnel_id: c.tunnel_id,
            tunnel_bad: c.tunnel_bad,
        }));
    }

    fn arm_eq(&mut self, e: usize) {
        if let Some(eq) = self.eqs.get(e) {
            let v = eq_doorbell(e as u8, eq.ev.ci());
            self.dev.backend().write32(uar::EQ_DB_ARM, v);
        }
    }

    fn arm_cq(&mut self, q: usize) -> Result<(), Error> {
        let qp = self.qp(q)?;
        if qp.cq.armed {
            return Ok(());
        }
        qp.cq.armed = true;
        let arm = CqArm {
            sn: qp.cq.arm_sn,
            solicited: false,
            ci: qp.cq.ev.ci(),
        };
        let dbr = qp.cq.dbr;
        let hw = self.dev.backend();
        dbr.set_cq_arm(hw, arm);
        hw.wmb();
        hw.write64(uar::CQ_DB, arm.doorbell(q as u32));
        Ok(())
    }

    /// Whether queue pair `q`'s CQ holds an unread CQE.
    fn cq_ready(&mut self, q: usize) -> Result<bool, Error> {
        let cq = &self.qp(q)?.cq;
        let (ring, ev) = (cq.ring, cq.ev);
        Ok(ev.peek(self.dev.backend(), ring, cqe::OWNER).is_some())
    }

    fn ready_mask(&mut self, queues: &[usize]) -> Result<u64, Error> {
        let mut m = 0;
        for &q in queues {
            if self.cq_ready(q)? {
                m |= 1 << q;
            }
        }
        Ok(m)
    }

    /// Consume EQ `e`'s events: completion events disarm their CQ and mark its queue in the
    /// returned mask; other events are kept for [`NetDev::take_async_events`]. Re-arms the EQ.
    fn drain_eq(&mut self, e: usize) -> u64 {
        let mut fired = 0;
        while let Some(eq) = self.eqs.get(e) {
            let (ring, ev) = (eq.ring, eq.ev);
            let Some(bytes) = ev.peek(self.dev.backend(), ring, eqe::OWNER) else {
                break;
            };
            self.eqs[e].ev.advance();
            let ev = Eqe::decode(&bytes);
            match (ev.event_type, self.qps.get_mut(ev.cqn as usize)) {
                (EventType::Completion, Some(qp)) => {
                    qp.cq.armed = false;
                    qp.cq.arm_sn = qp.cq.arm_sn.wrapping_add(1) & 3;
                    fired |= 1 << ev.cqn;
                }
                _ => self.events.push(AsyncEvent {
                    eq: e,
                    event_type: ev.event_type,
                    sub_type: ev.sub_type,
                    cqn: ev.cqn,
                }),
            }
        }
        self.arm_eq(e);
        fired
    }

    /// Sleep until a queue pair in `queues` (bit q = queue pair q) has completions, at most
    /// `timeout_ns`; returns the queue pairs to poll. Arms their CQs (one event each until
    /// the next arm) and re-arms the EQs that fired.
    pub fn wait(&mut self, queues: u64, timeout_ns: u64) -> Result<u64, Error> {
        let list: Vec<usize> = (0..self.qps.len())
            .filter(|q| queues >> q & 1 == 1)
            .collect();
        if list.is_empty() {
            return Err(Error::NoSuchQueue {
                queue: queues.trailing_zeros() as usize,
                queues: self.qps.len(),
            });
        }
        let ready = self.ready_mask(&list)?;
        if ready != 0 {
            return Ok(ready);
        }
        let mut vectors = 0u64;
        for &q in &list {
            self.arm_cq(q)?;
            vectors |= 1 << self.eqs[self.qps[q].eq].vector;
        }
        let start = self.dev.backend().now_ns();
        let fired = self.dev.backend().wait(vectors, timeout_ns);
        let mut found = 0;
        for e in 0..self.eqs.len() {
            if fired >> self.eqs[e].vector & 1 == 1 {
                found |= self.drain_eq(e);
            }
        }
        let found = (found | self.ready_mask(&list)?) & queues;
        if found == 0 {
            return Err(Error::Timeout {
                what: "completion events",
                waited_ns: self.dev.backend().now_ns().saturating_sub(start),
            });
        }
        Ok(found)
    }

    /// Bring queue pair `queue` back after an error completion: RESET its send and receive
    /// queues where the device has them in error (indices kept, so WQEs still posted run or
    /// flush with their own completions), and refill the receive queue.
    pub fn reset_queue_after_error(&mut self, queue: usize) -> Result<(), Error> {
        self.qp(queue)?;
        let n = queue as u16;
        for t in [QueueType::Sq, QueueType::Rq] {
            if self.dev.query_queue(t, n)?.state == QState::Error {
                self.dev.reset_queue(t, n)?;
            }
        }
        let qp = self.qp(queue)?;
        qp.sq.in_error = false;
        qp.rq.in_error = false;
        self.post_rx_buffers(queue)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::Interrupts;
    use crate::regs::stats;
    use crate::testdev::{FakeId, FakeNic};

    const T: u64 = 1_000_000;

    fn netdev_with(id: FakeId, cfg: NetDevConfig, loopback: bool) -> NetDev<FakeNic> {
        let mut dev = Device::open(FakeNic::new(id)).unwrap();
        if loopback {
            dev.set_loopback(true).unwrap();
        }
        NetDev::new(dev, cfg).unwrap()
    }

    fn netdev(cfg: NetDevConfig) -> NetDev<FakeNic> {
        netdev_with(FakeId::default(), cfg, true)
    }

    fn fake(nd: &mut NetDev<FakeNic>) -> &mut FakeNic {
        nd.device().backend()
    }

    /// A UDP/IPv4 frame of `len` bytes whose bytes after the header count up from `seed`.
    fn frame(len: usize, seed: u8) -> Vec<u8> {
        let mut f = vec![
            0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 0x30,
        ];
        f.extend((0..len - f.len()).map(|i| seed.wrapping_add(i as u8)));
        f
    }

    /// Wait for and poll queue pairs until `n` completions arrived.
    fn collect(nd: &mut NetDev<FakeNic>, queues: u64, n: usize) -> Vec<Completion> {
        let mut got = Vec::new();
        while got.len() < n {
            let ready = nd.wait(queues, T).unwrap();
            for q in 0..64 {
                if ready >> q & 1 == 1 {
                    got.extend(nd.poll(q).unwrap());
                }
            }
        }
        got
    }

    /// The receive completions, in order (send and receive completions of one queue pair
    /// interleave in whatever order the device wrote them).
    fn rxs(got: &[Completion]) -> Vec<&RxFrame> {
        got.iter()
            .filter_map(|c| match c {
                Completion::Rx(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// The send completions, in order.
    fn txs(got: &[Completion]) -> Vec<&Completion> {
        got.iter()
            .filter(|c| matches!(c, Completion::Tx { .. }))
            .collect()
    }

    #[test]
    fn loopback_frame_with_inline_header_and_checksum_offload() {
        let mut nd = netdev(NetDevConfig {
            queues: 2,
            ..NetDevConfig::default()
        });
        let f = frame(60, 7);
        let off = TxOffload {
            csum_l3: true,
            csum_l4: true,
            inline_headers: true,
            vlan_tci: None,
            lso: None,
        };
        assert_eq!(nd.send(1, &f, off).unwrap(), 0);
        let got = collect(&mut nd, 0b10, 2);
        let tx = txs(&got)[0];
        assert_eq!(
            *tx,
            Completion::Tx {
                queue: 1,
                wqe_counter: 0,
                bytes: 60,
                timestamp: got_ts(tx)
            }
        );
        let r = rxs(&got)[0];
        assert_eq!(r.queue, 1);
        assert_eq!(r.data, f);
        assert!(r.l3_ok && r.l4_ok);
        assert_eq!((r.csum, r.rss_hash, r.vlan), (0xBEEF, 0x1234_0001, None));
        assert_eq!((r.l3_type, r.l4_type), (L3Type::Ipv4, L4Type::Udp));
        assert_eq!((r.rss_type.ip(), r.rss_type.l4()), (1, 2));
        // What the device was given: SQN 1, checksum flags, 18 inline bytes, 42 by pointer.
        let w = &fake(&mut nd).sent[0];
        assert_eq!((w.sqn, w.wqe_index, w.cq_update), (1, 0, true));
        let eth = w.eth.as_ref().unwrap();
        assert_eq!(eth.cs_flags.bits(), 0xC0);
        assert_eq!(eth.header, L2Header::Inline(f[..18].to_vec()));
        match &w.gather[..] {
            [Gather::Ptr(d)] => assert_eq!((d.byte_count, d.lkey), (42, 0)),
            g => panic!("{g:?}"),
        }
        assert_eq!(nd.device().stats().rx_no_wqe, 0);
    }

    #[test]
    fn a_tunnel_with_the_inner_offloads_is_checksum_unnecessary_at_level_1() {
        use crate::device::InnerOffload;
        let mut nd = netdev(NetDevConfig::default());
        // VXLAN over IPv4 to port 4789, VNI 0x123456, around a 60-byte inner frame.
        let mut f = frame(34, 0);
        f[23] = 17; // UDP
        f.extend_from_slice(&[0x30, 0x39, 0x12, 0xB5, 0, 76, 0, 0]);
        f.extend_from_slice(&[0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0]);
        f.extend(frame(60, 3));
        for (inner, tunneled, level) in
            [(InnerOffload::NONE, false, 0), (InnerOffload::ALL, true, 1)]
        {
            nd.device()
                .program_tunnels(4789, false, inner, &[])
                .unwrap();
            nd.send(0, &f, TxOffload::default()).unwrap();
            let got = collect(&mut nd, 1, 2);
            let r = rxs(&got)[0];
            assert_eq!(r.data, f);
            assert_eq!(
                (r.tunneled, r.decapped, r.tunnel_kind, r.tunnel_id),
                (tunneled, false, 1, 0x12_3456),
                "{inner:?}"
            );
            assert_eq!(r.csum_unnecessary(), Some(level), "{inner:?}");
            let bad = RxFrame {
                l4_ok: false,
                ..r.clone()
            };
            assert_eq!(bad.csum_unnecessary(), None);
        }
    }

    fn got_ts(c: &Completion) -> u64 {
        match c {
            Completion::Tx { timestamp, .. } => {
                assert!(*timestamp > 0);
                *timestamp
            }
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn vlan_tags_go_by_device_insert_or_in_the_inline_header() {
        let f = frame(64, 1);
        let mut tagged = f.clone();
        tagged.splice(12..12, [0x81, 0x00, 0x20, 0x05]);
        for (caps, inline, expect_inline) in [
            (0xF, false, false),
            (0xF, true, true),
            (0b1011, false, true),
        ] {
            let id = FakeId {
                caps,
                ..FakeId::default()
            };
            let mut nd = netdev_with(id, NetDevConfig::default(), true);
            let off = TxOffload {
                vlan_tci: Some(0x2005),
                inline_headers: inline,
                ..TxOffload::default()
            };
            nd.send(0, &f, off).unwrap();
            let got = collect(&mut nd, 1, 2);
            let r = rxs(&got)[0];
            assert_eq!(r.vlan, Some(0x2005), "stripped on receive");
            assert_eq!(r.data, f);
            let w = fake(&mut nd).sent[0].clone();
            let header = w.eth.map(|e| e.header);
            if expect_inline {
                assert_eq!(header, Some(L2Header::Inline(tagged[..18].to_vec())));
            } else {
                assert_eq!(header, Some(L2Header::VlanInsert(0x2005)));
            }
        }
    }

    /// With `tx_inline`, a frame up to that size goes wholly in the WQE in every header mode
    /// (the largest allowed in the largest WQE), and a longer one by pointer as before.
    /// With `tx_blueflame`, a WQE up to that size is written whole through the BlueFlame window
    /// before its doorbell (the same bytes as in the ring); a longer one gets the plain
    /// 8-byte doorbell only.
    #[test]
    fn short_wqes_go_through_blueflame() {
        let mut nd = netdev(NetDevConfig {
            tx_inline: MAX_TX_INLINE,
            tx_blueflame: 128,
            ..NetDevConfig::default()
        });
        for (i, len) in [60usize, 100, 200].into_iter().enumerate() {
            let f = frame(len, i as u8);
            nd.send(0, &f, TxOffload::default()).unwrap();
            let got = collect(&mut nd, 1, 2);
            assert_eq!(rxs(&got)[0].data, f);
            let fk = fake(&mut nd);
            let wqe = fk.sent[i].encode().unwrap();
            let bf = fk.blueflame[i].clone();
            if wqe.len() <= 128 {
                let ds = (wqe[7] & 0x3F) as usize;
                assert_eq!(bf, wqe[..16 * ds], "{len} bytes");
            } else {
                assert_eq!(bf, wqe[..8], "{len} bytes: a plain doorbell");
            }
        }
        for bad in [100, MAX_BLUEFLAME + 64] {
            let e = NetDev::new(
                nd.close().unwrap(),
                NetDevConfig {
                    tx_blueflame: bad,
                    ..NetDevConfig::default()
                },
            );
            assert!(matches!(
                e,
                Err(ErrorWithDevice {
                    error: Error::Config(_),
                    ..
                })
            ));
            nd = NetDev::new(*e.err().unwrap().device, NetDevConfig::default()).unwrap();
        }
    }

    #[test]
    fn a_batch_rings_one_doorbell_and_asks_for_one_cqe() {
        let mut nd = netdev(NetDevConfig {
            tx_blueflame: 128,
            ..NetDevConfig::default()
        });
        let frames: Vec<_> = (0..4).map(|i| frame(60 + i, i as u8)).collect();
        for f in &frames[..3] {
            nd.send_more(0, f, TxOffload::default()).unwrap();
        }
        assert!(
            fake(&mut nd).pending_sq.is_empty(),
            "no doorbell before the batch ends"
        );
        nd.send(0, &frames[3], TxOffload::default()).unwrap();
        let got = collect(&mut nd, 1, 8);
        let fk = fake(&mut nd);
        assert_eq!(fk.blueflame.len(), 1, "one doorbell for the batch");
        assert_eq!(
            fk.blueflame[0].len(),
            8,
            "a plain doorbell: no BlueFlame after a batch"
        );
        let signalled: Vec<bool> = fk.sent.iter().map(|w| w.cq_update).collect();
        assert_eq!(signalled, [false, false, false, true]);
        let data: Vec<_> = rxs(&got).iter().map(|r| r.data.clone()).collect();
        assert_eq!(data, frames);
        assert_eq!(
            txs(&got).len(),
            4,
            "every frame completes, from the one CQE"
        );
    }

    /// With `tx_mpwqe`, a batch goes in multi-packet WQEs, up to 14 packets a WQE, one CQE
    /// each; every frame is received and completes as its own `Tx` under its WQE's index.
    #[test]
    fn mpwqe_sessions_carry_a_batch_in_few_wqes() {
        let mut nd = netdev(NetDevConfig {
            tx_mpwqe: true,
            sq_log_size: 7,
            ..NetDevConfig::default()
        });
        let frames: Vec<_> = (0..20).map(|i| frame(64 + 3 * i, i as u8)).collect();
        let mut indices = Vec::new();
        for f in &frames[..19] {
            indices.push(nd.send_more(0, f, TxOffload::default()).unwrap());
        }
        assert!(
            fake(&mut nd).pending_sq.is_empty(),
            "no doorbell before the batch ends"
        );
        indices.push(nd.send(0, &frames[19], TxOffload::default()).unwrap());
        let got = collect(&mut nd, 1, 40);
        let fk = fake(&mut nd);
        assert_eq!(fk.blueflame.len(), 1, "one doorbell for the batch");
        let wqes: Vec<(SendOpcode, usize, bool)> = fk
            .sent
            .iter()
            .map(|w| (w.opcode, w.gather.len(), w.cq_update))
            .collect();
        let m = SendOpcode::EnhancedMpsw;
        assert_eq!(wqes, [(m, MPWQE_MAX_PACKETS, false), (m, 6, true)]);
        assert_eq!(indices[..14], [0; 14]);
        assert_eq!(indices[14..], [4; 6], "after the first WQE's 4 WQEBBs");
        let data: Vec<_> = rxs(&got).iter().map(|r| r.data.clone()).collect();
        assert_eq!(data, frames);
        let tx: Vec<(u16, usize)> = txs(&got)
            .iter()
            .map(|c| match c {
                Completion::Tx {
                    wqe_counter, bytes, ..
                } => (*wqe_counter, *bytes),
                _ => unreachable!(),
            })
            .collect();
        let want: Vec<(u16, usize)> = indices
            .iter()
            .copied()
            .zip(frames.iter().map(Vec::len))
            .collect();
        assert_eq!(tx, want);
    }

    /// Frames up to `tx_inline` bytes go inline in the session; the WQE's 16 DS close it.
    #[test]
    fn mpwqe_small_frames_go_inline_until_the_wqe_is_full() {
        let mut nd = netdev(NetDevConfig {
            tx_mpwqe: true,
            tx_inline: 64,
            ..NetDevConfig::default()
        });
        let lens = [60, 100, 60, 100, 60, 60];
        let frames: Vec<_> = lens.iter().map(|&n| frame(n, n as u8)).collect();
        for f in &frames {
            nd.send_more(0, f, TxOffload::default()).unwrap();
        }
        nd.flush(0).unwrap();
        let got = collect(&mut nd, 1, 12);
        let data: Vec<_> = rxs(&got).iter().map(|r| r.data.clone()).collect();
        assert_eq!(data, frames);
        let fk = fake(&mut nd);
        let inline: Vec<Vec<bool>> = fk
            .sent
            .iter()
            .map(|w| {
                w.gather
                    .iter()
                    .map(|g| matches!(g, Gather::Inline(_)))
                    .collect()
            })
            .collect();
        // 4 + 1 + 4 + 1 + 4 data DS: the sixth frame's 4 more do not fit 16.
        assert_eq!(inline, [vec![true, false, true, false, true], vec![true]]);
    }

    /// A frame whose new session the free ring cannot hold is refused (queue full) before
    /// anything is written; the earlier session still goes out, and the frame fits later.
    #[test]
    fn mpwqe_a_full_ring_refuses_the_frame_and_keeps_the_session() {
        let mut nd = netdev(NetDevConfig {
            tx_mpwqe: true,
            tx_inline: MAX_TX_INLINE,
            sq_log_size: 2,
            ..NetDevConfig::default()
        });
        let (small, big) = (frame(300, 1), frame(MAX_TX_INLINE, 2));
        nd.send_more(0, &small, TxOffload::default()).unwrap();
        // The inline frame needs a WQE of 16 DS (4 WQEBBs); 3 are free once the first closes.
        let e = nd.send_more(0, &big, TxOffload::default()).unwrap_err();
        assert!(
            matches!(
                e,
                Error::QueueFull {
                    need: 4,
                    free: 3,
                    ..
                }
            ),
            "{e:?}"
        );
        nd.flush(0).unwrap();
        let got = collect(&mut nd, 1, 2);
        assert_eq!(rxs(&got)[0].data, small);
        nd.send(0, &big, TxOffload::default()).unwrap();
        let got = collect(&mut nd, 1, 2);
        assert_eq!(rxs(&got)[0].data, big);
    }

    /// What closes a session: another offload request, a frame that must go as a plain SEND
    /// (a VLAN tag to insert), the device's gather buffer (two 1500-byte frames do not fit
    /// 2048 bytes), `flush`.
    #[test]
    fn mpwqe_sessions_close_where_the_wqe_cannot_take_the_frame() {
        let mut nd = netdev(NetDevConfig {
            tx_mpwqe: true,
            ..NetDevConfig::default()
        });
        let csum = TxOffload {
            csum_l3: true,
            csum_l4: true,
            ..TxOffload::default()
        };
        let vlan = TxOffload {
            vlan_tci: Some(7),
            ..TxOffload::default()
        };
        let plain = TxOffload::default();
        let sends = [
            (100, plain),
            (200, plain),
            (300, csum),
            (80, vlan),
            (90, plain),
            (1500, plain),
            (1500, plain),
            (70, plain),
        ];
        for (i, (len, off)) in sends.iter().enumerate() {
            nd.send_more(0, &frame(*len, i as u8), *off).unwrap();
        }
        nd.flush(0).unwrap();
        let got = collect(&mut nd, 1, 2 * sends.len());
        assert_eq!(rxs(&got).len(), sends.len());
        let fk = fake(&mut nd);
        let wqes: Vec<(SendOpcode, Vec<usize>)> = fk
            .sent
            .iter()
            .map(|w| (w.opcode, w.gather.iter().map(Gather::len).collect()))
            .collect();
        let m = SendOpcode::EnhancedMpsw;
        assert_eq!(
            wqes,
            [
                (m, vec![100, 200]),
                (m, vec![300]),
                (SendOpcode::Send, vec![80]),
                (m, vec![90, 1500]),
                (m, vec![1500, 70]),
            ]
        );
        assert_eq!(fk.sent[1].eth.as_ref().unwrap().cs_flags.bits(), 0xC0);
        assert!(fk.sent.last().unwrap().cq_update, "flush asks for the CQE");
    }

    #[test]
    fn flush_closes_a_batch_with_a_signalled_nop() {
        let mut nd = netdev(NetDevConfig::default());
        nd.flush(0).unwrap();
        assert!(fake(&mut nd).pending_sq.is_empty(), "nothing to ring");
        let frames: Vec<_> = (0..2).map(|i| frame(64, i as u8)).collect();
        for f in &frames {
            nd.send_more(0, f, TxOffload::default()).unwrap();
        }
        nd.flush(0).unwrap();
        let got = collect(&mut nd, 1, 4);
        let fk = fake(&mut nd);
        assert_eq!(fk.blueflame.len(), 1, "one doorbell");
        let kinds: Vec<(SendOpcode, bool)> =
            fk.sent.iter().map(|w| (w.opcode, w.cq_update)).collect();
        assert_eq!(
            kinds,
            [
                (SendOpcode::Send, false),
                (SendOpcode::Send, false),
                (SendOpcode::Nop, true)
            ]
        );
        assert_eq!(rxs(&got).len(), 2);
        let tx_bytes: Vec<usize> = txs(&got)
            .iter()
            .map(|c| match c {
                Completion::Tx { bytes, .. } => *bytes,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            tx_bytes,
            [64, 64],
            "both frames complete; the NOP reports nothing"
        );
    }

    #[test]
    fn a_long_batch_asks_for_a_cqe_every_max_unsignalled_wqes() {
        let mut nd = netdev(NetDevConfig::default());
        let n = 2 * MAX_UNSIGNALLED + 3;
        for i in 0..n {
            nd.send_more(0, &frame(60, i as u8), TxOffload::default())
                .unwrap();
        }
        nd.flush(0).unwrap();
        let got = collect(&mut nd, 1, 2 * n);
        let signalled: Vec<usize> = fake(&mut nd)
            .sent
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.cq_update.then_some(i))
            .collect();
        assert_eq!(signalled, [MAX_UNSIGNALLED - 1, 2 * MAX_UNSIGNALLED - 1, n]);
        assert_eq!(rxs(&got).len(), n);
    }

    #[test]
    fn poll_budget_takes_at_most_budget_frames_and_leaves_the_rest() {
        let mut nd = netdev(NetDevConfig::default());
        let frames: Vec<_> = (0..5).map(|i| frame(60, i as u8)).collect();
        for f in &frames {
            nd.send(0, f, TxOffload::default()).unwrap();
        }
        let mut got = Vec::new();
        let mut polls = Vec::new();
        while rxs(&got).len() < 5 {
            let _ = nd.wait(1, T);
            let c = nd.poll_budget(0, 2).unwrap();
            let n = rxs(&c).len();
            assert!(n <= 2, "a poll took {n} frames over a budget of 2");
            polls.push(n);
            got.extend(c);
        }
        assert!(polls.iter().filter(|&&n| n == 2).count() >= 2, "{polls:?}");
        let data: Vec<_> = rxs(&got).iter().map(|r| r.data.clone()).collect();
        assert_eq!(data, frames, "in order, none lost between polls");
        assert!(nd
            .poll_budget(0, 0)
            .unwrap()
            .iter()
            .all(|c| !matches!(c, Completion::Rx(_))));
    }

    #[test]
    fn small_frames_go_inline() {
        let mut nd = netdev(NetDevConfig {
            tx_inline: MAX_TX_INLINE,
            ..NetDevConfig::default()
        });
        let modes = [
            TxOffload::default(),
            TxOffload {
                inline_headers: true,
                ..TxOffload::default()
            },
            TxOffload {
                vlan_tci: Some(0x123),
                inline_headers: true,
                ..TxOffload::default()
            },
            TxOffload {
                vlan_tci: Some(0x123),
                ..TxOffload::default()
            },
        ];
        let mut sent = 0;
        for (m, off) in modes.into_iter().enumerate() {
            for len in [14, 60, MAX_TX_INLINE, MAX_TX_INLINE + 1] {
                let f = frame(len.max(18), m as u8)[..len].to_vec();
                nd.send(0, &f, off).unwrap();
                let got = collect(&mut nd, 1, 2);
                assert_eq!(rxs(&got)[0].data, f, "mode {m}, {len} bytes");
                let w = fake(&mut nd).sent[sent].clone();
                sent += 1;
                let header = match w.eth.map(|e| e.header) {
                    Some(L2Header::Inline(h)) => h.len() - usize::from(off.vlan_tci.is_some()) * 4,
                    _ => 0,
                };
                match &w.gather[..] {
                    [Gather::Inline(d)] if len <= MAX_TX_INLINE => assert_eq!(d, &f[header..]),
                    [Gather::Ptr(d)] if len > MAX_TX_INLINE => {
                        assert_eq!(d.byte_count as usize, len - header)
                    }
                    g => panic!("mode {m}, {len} bytes: {g:?}"),
                }
            }
        }
        let e = NetDev::new(
            nd.close().unwrap(),
            NetDevConfig {
                tx_inline: MAX_TX_INLINE + 1,
                ..NetDevConfig::default()
            },
        );
        assert!(matches!(
            e,
            Err(ErrorWithDevice {
                error: Error::Config(_),
                ..
            })
        ));
    }

    /// A striding RQ: frames of every size share WQEs, a frame that does not fit in a WQE's
    /// strides left is preceded by a filler CQE (skipped), WQEs are reposted once used up and
    /// the ring wraps several times; every frame comes back whole and in order.
    #[test]
    fn striding_rq_packs_frames_and_skips_fillers() {
        let strides = RqStrides {
            log_num_strides: 5,
            log_stride_size: 6,
        };
        let mut nd = netdev(NetDevConfig {
            rq_log_size: 2,
            rx_striding: Some(strides),
            ..NetDevConfig::default()
        });
        let mut want = Vec::new();
        // The WQE each frame lands in, counted as the device fills strides.
        let (mut wqe, mut stride) = (0u16, 0u32);
        for i in 0..120usize {
            let len = [60, 64, 65, 200, 1000, 1514, 700][i % 7];
            let f = frame(len, i as u8);
            nd.send(0, &f, TxOffload::default()).unwrap();
            want.push(f);
            let got = collect(&mut nd, 1, 2);
            assert_eq!(rxs(&got).len(), 1, "frame {i}");
            assert_eq!(rxs(&got)[0].data, want[i], "frame {i}");
            let need = (len as u32).div_ceil(64);
            if need > 32 - stride {
                (wqe, stride) = (wqe.wrapping_add(1), 0);
            }
            assert_eq!(rxs(&got)[0].wqe, wqe, "frame {i}: its WQE");
            stride += need;
            if stride == 32 {
                (wqe, stride) = (wqe.wrapping_add(1), 0);
            }
        }
        assert!(wqe > 8, "the ring of 4 WQEs wrapped");
        let fillers = fake(&mut nd).counter(stats::RX_CQES) - 120;
        assert!(fillers > 0, "no filler CQE");
        assert_eq!(fake(&mut nd).counter(stats::RX_NO_WQE), 0);
    }

    /// A raw receive WQE with an lkey the device does not know takes the first slot freed;
    /// the frame that reaches it completes in error, the RQ stops, and after the reset the
    /// driver's own buffers take frames again.
    #[test]
    fn a_raw_receive_wqe_with_a_bad_lkey_errors_and_the_rq_recovers() {
        let mut nd = netdev(NetDevConfig {
            rq_log_size: 2,
            ..NetDevConfig::default()
        });
        let lkey = nd.lkey().0;
        nd.post_rx_raw(
            0,
            DataSeg {
                byte_count: 2048,
                lkey: lkey + 5,
                addr: 0x1_0000_0000,
            },
        )
        .unwrap();
        let mut got = Vec::new();
        for i in 0..5u8 {
            nd.send(0, &frame(100, i), TxOffload::default()).unwrap();
            got.extend(collect(&mut nd, 1, 2));
        }
        let rx: Vec<u16> = rxs(&got).iter().map(|r| r.wqe).collect();
        assert_eq!(rx, [0, 1, 2, 3], "the four WQEs posted before it");
        let errs: Vec<_> = got
            .iter()
            .filter_map(|c| match c {
                Completion::Error {
                    kind,
                    syndrome,
                    wqe_counter,
                    ..
                } => Some((*kind, *syndrome, *wqe_counter)),
                _ => None,
            })
            .collect();
        assert_eq!(errs, [(Direction::Receive, Syndrome::LocalProt, 4)]);
        nd.reset_queue_after_error(0).unwrap();
        nd.send(0, &frame(100, 9), TxOffload::default()).unwrap();
        let got = collect(&mut nd, 1, 2);
        assert_eq!(rxs(&got).len(), 1, "{got:?}");
        assert_eq!(rxs(&got)[0].data, frame(100, 9));
    }

    /// A striding receive CQE whose `wqe_id` is not the oldest posted WQE is a device error;
    /// the one naming it is taken.
    #[test]
    fn a_striding_cqe_for_another_wqe_is_an_error() {
        let mut nd = netdev_with(
            FakeId::default(),
            NetDevConfig {
                rq_log_size: 2,
                rx_striding: Some(RqStrides {
                    log_num_strides: 5,
                    log_stride_size: 6,
                }),
                ..NetDevConfig::default()
            },
            false,
        );
        let cqe = |wqe_id| Cqe {
            byte_cnt: 1 << 16 | 60,
            wqe_id,
            ..FakeNic::blank_cqe(CqeOpcode::RespSend, 0, 0)
        };
        fake(&mut nd).post_cqe(0, cqe(1));
        let e = nd.poll(0).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BadCompletion {
                    queue: 0,
                    what,
                    ..
                } if what.contains("wqe_id")
            ),
            "{e}"
        );
        fake(&mut nd).post_cqe(0, cqe(0));
        let got = nd.poll(0).unwrap();
        assert!(matches!(rxs(&got)[..], [RxFrame { wqe: 0, .. }]), "{got:?}");
    }

    #[test]
    fn striding_geometry_must_hold_the_largest_frame() {
        let nd = netdev(NetDevConfig::default());
        let mut dev = nd.close().unwrap();
        for (n, sz) in [(4u8, 6u8), (0, 11), (15, 6), (8, 5), (1, 14)] {
            let e = NetDev::new(
                dev,
                NetDevConfig {
                    rx_striding: Some(RqStrides {
                        log_num_strides: n,
                        log_stride_size: sz,
                    }),
                    ..NetDevConfig::default()
                },
            );
            match e {
                Err(ErrorWithDevice {
                    error: Error::Config(_),
                    device,
                }) => dev = *device,
                Err(e) => panic!("2^{n} strides of 2^{sz}: {}", e.error),
                Ok(_) => panic!("2^{n} strides of 2^{sz} bytes accepted"),
            }
        }
    }

    /// The §2.5 worked example's super-frame: its headers (VXLAN over IPv4, inner IPv4/TCP,
    /// 104 bytes) and 2500 payload bytes (7k + 3).
    fn vxlan_super_frame() -> Vec<u8> {
        let mut f = crate::lso::tests::vxlan_example()[..104].to_vec();
        f.extend((0..2500).map(|k| (7 * k + 3) as u8));
        f
    }

    /// A netdev on a device with a 9000-byte MTU (room for a super-frame), sending to the wire.
    fn lso_netdev(id: FakeId) -> NetDev<FakeNic> {
        let cfg = NetDevConfig {
            tx_buf_size: 4096,
            rx_buf_size: 9216,
            ..NetDevConfig::default()
        };
        netdev_with(FakeId { mtu: 9000, ..id }, cfg, false)
    }

    /// wire-formats.md §2.5's mlx5 descriptor: opcode LSO, mss 1000, the 104 header bytes
    /// inline, cs_flags 0x70, DS count 10 (3 WQEBBs), the software-parser fields of §4.4.
    #[test]
    fn an_lso_send_writes_the_worked_examples_wqe() {
        let mut nd = lso_netdev(FakeId::default());
        let f = vxlan_super_frame();
        let lso = LsoRequest::for_frame(&f, 1000, 4789).unwrap();
        let off = TxOffload {
            lso: Some(lso),
            ..TxOffload::default()
        };
        assert_eq!(nd.send(0, &f, off).unwrap(), 0);
        let got = collect(&mut nd, 1, 1);
        assert!(matches!(txs(&got)[0], Completion::Tx { bytes: 2604, .. }));
        let fk = fake(&mut nd);
        let b = fk.wqe_bytes[0].clone();
        assert_eq!(b.len(), 3 * WQEBB);
        assert_eq!(
            &b[0..8],
            &[0, 0, 0, 0x0E, 0, 0, 0, 10],
            "opcode LSO, SQ 0, DS 10"
        );
        assert_eq!(b[11], 0x08, "CQ_UPDATE");
        // eth: swp outer L4 34/2, outer L3 14/2, inner L4 84/2, inner L3 64/2; cs_flags 0x70;
        // swp_flags OUTER_L4_UDP; mss 1000; inline 104 and its first 2 bytes.
        assert_eq!(
            &b[16..32],
            &[17, 7, 42, 32, 0x70, 0x20, 0x03, 0xE8, 0, 0, 0, 0, 0, 104, 0x02, 0x00]
        );
        assert_eq!(&b[32..134], &f[2..104]);
        assert!(b[134..144].iter().all(|&x| x == 0), "inline padding");
        // DS 9: the payload by pointer (lkey 0), after the header in the frame's buffer.
        let seg = &b[144..160];
        assert_eq!(&seg[0..8], &[0, 0, 0x09, 0xC4, 0, 0, 0, 0]);
        let addr = u64::from_be_bytes(seg[8..16].try_into().unwrap());
        assert_eq!(fk.peek(addr, 2500), f[104..]);
        assert!(b[160..].iter().all(|&x| x == 0));
        // The fake decodes the request back and sends the super-frame whole.
        let w = &fk.sent[0];
        assert_eq!(w.opcode, SendOpcode::Lso);
        let eth = w.eth.as_ref().unwrap();
        assert_eq!(eth.lso.map(|l| l.mss), Some(1000));
        assert_eq!(eth.lso.unwrap().swp, lso.headers.swp().unwrap());
        assert_eq!(fk.wire, vec![f]);
    }

    #[test]
    fn a_plain_lso_puts_ip_and_tcp_in_the_outer_fields() {
        let mut nd = lso_netdev(FakeId::default());
        // The worked example's inner frame: IPv4/TCP, 54 header bytes.
        let f = vxlan_super_frame()[50..].to_vec();
        let off = TxOffload {
            lso: Some(LsoRequest::for_frame(&f, 1448, 4789).unwrap()),
            ..TxOffload::default()
        };
        nd.send(0, &f, off).unwrap();
        collect(&mut nd, 1, 1);
        let b = &fake(&mut nd).wqe_bytes[0];
        // DS: ctrl, eth, 4 of inline header (52 bytes after the first 2), 1 data.
        assert_eq!((b[3], b[7]), (0x0E, 7));
        assert_eq!(
            &b[16..32],
            &[17, 7, 0, 0, 0xC0, 0, 0x05, 0xA8, 0, 0, 0, 0, 0, 54, 0x02, 0x00]
        );
    }

    #[test]
    fn lso_sends_the_device_or_the_request_cannot_take_are_refused() {
        let f = vxlan_super_frame();
        let req = LsoRequest::for_frame(&f, 1000, 4789).unwrap();
        let with = |lso: LsoRequest| TxOffload {
            lso: Some(lso),
            ..TxOffload::default()
        };
        let no_tso = FakeId {
            caps: 0x3F,
            max_mss: 0,
            ..FakeId::default()
        };
        let e = lso_netdev(no_tso).send(0, &f, with(req)).unwrap_err();
        assert!(
            matches!(e, Error::Device(DeviceError::Unsupported(_))),
            "{e}"
        );
        let mut nd = lso_netdev(FakeId::default());
        for mss in [0, 9001] {
            let e = nd.send(0, &f, with(LsoRequest { mss, ..req })).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Device(DeviceError::OutOfRange {
                        what: "LSO mss",
                        limit: 9000,
                        ..
                    })
                ),
                "{e}"
            );
        }
        let vlan = TxOffload {
            vlan_tci: Some(5),
            ..with(req)
        };
        assert!(matches!(nd.send(0, &f, vlan), Err(Error::Config(_))));
        let e = nd.send(0, &f[..104], with(req)).unwrap_err();
        assert!(matches!(e, Error::Lso(LsoError::NoPayload { .. })), "{e}");
        // Nothing reached the ring.
        assert!(fake(&mut nd).wqe_bytes.is_empty());
    }

    #[test]
    fn every_send_queue_takes_the_configured_encapsulation_context() {
        let mut nd = netdev(NetDevConfig {
            queues: 2,
            tx_encap: Some(3),
            ..NetDevConfig::default()
        });
        let sqs = &fake(&mut nd).queues[2];
        assert_eq!(sqs[0].as_ref().unwrap().encap, Some(3));
        assert_eq!(sqs[1].as_ref().unwrap().encap, Some(3));
        let dev = Device::open(FakeNic::new(FakeId::default())).unwrap();
        let cfg = NetDevConfig {
            tx_encap: Some(4),
            ..NetDevConfig::default()
        };
        let e = NetDev::new(dev, cfg).unwrap_err().error;
        assert!(
            matches!(
                e,
                Error::Device(DeviceError::NoSuchEncapContext {
                    index: 4,
                    contexts: 4
                })
            ),
            "{e}"
        );
    }

    #[test]
    fn frame_limits() {
        let mut nd = netdev(NetDevConfig::default());
        assert_eq!(nd.max_frame(), 1522);
        let e = nd
            .send(0, &frame(1523, 0), TxOffload::default())
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::FrameTooLarge {
                    len: 1523,
                    max: 1522
                }
            ),
            "{e}"
        );
        let vlan = TxOffload {
            vlan_tci: Some(1),
            ..TxOffload::default()
        };
        let e = nd.send(0, &frame(1519, 0), vlan).unwrap_err();
        assert!(
            matches!(
                e,
                Error::FrameTooLarge {
                    len: 1519,
                    max: 1518
                }
            ),
            "{e}"
        );
        let e = nd.send(0, &[0; 13], TxOffload::default()).unwrap_err();
        assert!(
            matches!(e, Error::FrameTooShort { len: 13, min: 14 }),
            "{e}"
        );
        let e = nd.send(2, &frame(60, 0), TxOffload::default()).unwrap_err();
        assert!(
            matches!(
                e,
                Error::NoSuchQueue {
                    queue: 2,
                    queues: 1
                }
            ),
            "{e}"
        );
        // A header-only frame with a VLAN tag in the inline header keeps a data segment.
        let inline_vlan = TxOffload {
            vlan_tci: Some(3),
            inline_headers: true,
            ..TxOffload::default()
        };
        nd.send(0, &frame(1518, 0), vlan).unwrap();
        nd.send(0, &frame(18, 0)[..14], inline_vlan).unwrap();
        let got = collect(&mut nd, 1, 4);
        assert_eq!(rxs(&got)[1].data.len(), 14);
    }

    #[test]
    fn send_ring_fills_drains_and_wraps_its_counter() {
        let cfg = NetDevConfig {
            sq_log_size: 2,
            ..NetDevConfig::default()
        };
        let mut nd = netdev_with(FakeId::default(), cfg, false);
        let f = frame(60, 0);
        let mut expected = 0u16;
        for round in 0..16_500u32 {
            for k in 0..4u16 {
                assert_eq!(
                    nd.send(0, &f, TxOffload::default()).unwrap(),
                    expected.wrapping_add(k)
                );
            }
            if round == 0 {
                let e = nd.send(0, &f, TxOffload::default()).unwrap_err();
                assert!(
                    matches!(
                        e,
                        Error::QueueFull {
                            queue: 0,
                            need: 1,
                            free: 0
                        }
                    ),
                    "{e}"
                );
            }
            let got = collect(&mut nd, 1, 4);
            let counters: Vec<u16> = got
                .iter()
                .map(|c| match c {
                    Completion::Tx {
                        wqe_counter,
                        bytes: 60,
                        ..
                    } => *wqe_counter,
                    c => panic!("{c:?}"),
                })
                .collect();
            assert_eq!(
                counters,
                (0..4).map(|k| expected.wrapping_add(k)).collect::<Vec<_>>()
            );
            expected = expected.wrapping_add(4);
        }
        assert_eq!(
            expected,
            (16_500u32 * 4 % 65_536) as u16,
            "the 16-bit counter wrapped"
        );
        assert_eq!(fake(&mut nd).wire.len(), 66_000);
    }

    #[test]
    fn send_completions_are_cumulative() {
        let mut nd = netdev_with(FakeId::default(), NetDevConfig::default(), false);
        for _ in 0..3 {
            nd.send(0, &frame(60, 0), TxOffload::default()).unwrap();
        }
        // The device answers the batch with one CQE for its last WQE.
        let f = fake(&mut nd);
        f.pending_sq.clear();
        let c = Cqe {
            timestamp: 99,
            ..FakeNic::blank_cqe(CqeOpcode::Req, 0, 2)
        };
        f.post_cqe(0, c);
        let got = nd.poll(0).unwrap();
        let ts: Vec<(u16, u64)> = got
            .iter()
            .map(|c| match c {
                Completion::Tx {
                    wqe_counter,
                    timestamp,
                    ..
                } => (*wqe_counter, *timestamp),
                c => panic!("{c:?}"),
            })
            .collect();
        assert_eq!(ts, vec![(0, 0), (1, 0), (2, 99)]);
    }

    #[test]
    fn a_send_error_stops_the_queue_until_reset() {
        let mut nd = netdev(NetDevConfig::default());
        let mr = fake(&mut nd).mrs[0].take();
        nd.send(0, &frame(60, 0), TxOffload::default()).unwrap();
        let got = collect(&mut nd, 1, 1);
        assert_eq!(
            got,
            vec![Completion::Error {
                queue: 0,
                kind: Direction::Send,
                syndrome: Syndrome::LocalProt,
                vendor_syndrome: 0,
                wqe_counter: 0
            }]
        );
        let e = nd.send(0, &frame(60, 0), TxOffload::default()).unwrap_err();
        assert!(
            matches!(
                e,
                Error::QueueInError {
                    queue: 0,
                    kind: Direction::Send
                }
            ),
            "{e}"
        );
        fake(&mut nd).mrs[0] = mr;
        nd.reset_queue_after_error(0).unwrap();
        let sq = QueueType::Sq.code();
        assert!(fake(&mut nd)
            .commands
            .contains(&(crate::regs::consts::qcmd_op::RESET, sq, 0)));
        assert_eq!(nd.send(0, &frame(60, 3), TxOffload::default()).unwrap(), 1);
        let got = collect(&mut nd, 1, 2);
        assert!(matches!(
            txs(&got)[..],
            [Completion::Tx { wqe_counter: 1, .. }]
        ));
        assert_eq!(rxs(&got)[0].data, frame(60, 3));
    }

    #[test]
    fn a_receive_error_stops_the_receive_queue_until_reset() {
        let mut nd = netdev(NetDevConfig::default());
        fake(&mut nd).receive(0, frame(3000, 0));
        let got = nd.poll(0).unwrap();
        assert!(matches!(
            got[..],
            [Completion::Error {
                kind: Direction::Receive,
                syndrome: Syndrome::LocalLength,
                wqe_counter: 0,
                ..
            }]
        ));
        let e = nd.post_rx_buffers(0).unwrap_err();
        assert!(
            matches!(
                e,
                Error::QueueInError {
                    queue: 0,
                    kind: Direction::Receive
                }
            ),
            "{e}"
        );
        nd.reset_queue_after_error(0).unwrap();
        assert_eq!(nd.post_rx_buffers(0).unwrap(), 0, "refilled by the reset");
        fake(&mut nd).receive(0, frame(100, 9));
        assert_eq!(rxs(&nd.poll(0).unwrap())[0].data, frame(100, 9));
    }

    #[test]
    fn the_receive_ring_is_kept_full() {
        let cfg = NetDevConfig {
            rq_log_size: 2,
            ..NetDevConfig::default()
        };
        let mut nd = netdev(cfg);
        for i in 0..25u8 {
            let f = frame(60 + i as usize, i);
            nd.send(0, &f, TxOffload::default()).unwrap();
            let got = collect(&mut nd, 1, 2);
            assert_eq!(rxs(&got)[0].data, f);
        }
        assert_eq!(nd.device().stats().rx_no_wqe, 0);
        assert_eq!(fake(&mut nd).counter(stats::RX_CQES), 25);
    }

    #[test]
    fn an_unexpected_cqe_is_an_error_and_earlier_completions_survive() {
        let mut nd = netdev_with(FakeId::default(), NetDevConfig::default(), false);
        nd.send(0, &frame(60, 0), TxOffload::default()).unwrap();
        nd.device().backend().relax();
        fake(&mut nd).post_cqe(0, FakeNic::blank_cqe(CqeOpcode::Other(7), 0, 0));
        let e = nd.poll(0).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BadCompletion {
                    queue: 0,
                    opcode: CqeOpcode::Other(7),
                    ..
                }
            ),
            "{e}"
        );
        let got = nd.poll(0).unwrap();
        assert!(
            matches!(got[..], [Completion::Tx { wqe_counter: 0, .. }]),
            "{got:?}"
        );
        // a send CQE for a WQE never posted
        fake(&mut nd).post_cqe(0, FakeNic::blank_cqe(CqeOpcode::Req, 0, 5));
        assert!(matches!(
            nd.poll(0),
            Err(Error::BadCompletion { wqe_counter: 5, .. })
        ));
    }

    #[test]
    fn wait_times_out_then_sees_events_on_a_shared_eq() {
        let cfg = NetDevConfig {
            queues: 3,
            eq_mode: EqMode::Shared,
            ..NetDevConfig::default()
        };
        let mut nd = netdev(cfg);
        let e = nd.wait(0b111, 5_000).unwrap_err();
        assert!(
            matches!(e, Error::Timeout { what: "completion events", waited_ns } if waited_ns >= 5_000),
            "{e}"
        );
        assert!(matches!(
            nd.wait(0b1000, 5_000),
            Err(Error::NoSuchQueue {
                queue: 3,
                queues: 3
            })
        ));
        nd.send(0, &frame(60, 0), TxOffload::default()).unwrap();
        nd.send(2, &frame(60, 0), TxOffload::default()).unwrap();
        let mut seen = 0;
        while seen != 0b101 {
            let ready = nd.wait(0b111, T).unwrap();
            assert_eq!(ready & 0b010, 0);
            for q in [0, 2] {
                if ready >> q & 1 == 1 {
                    assert!(!nd.poll(q).unwrap().is_empty());
                    seen |= 1 << q;
                }
            }
        }
        // One event per arm: the CQs that fired are disarmed with their sequence number
        // advanced, the EQ re-armed.
        let f = fake(&mut nd);
        assert!(f.queues[0][0].as_ref().unwrap().armed, "EQ re-armed");
        assert!(
            f.queues[0][1].is_none() && f.queues[0][2].is_none(),
            "one EQ"
        );
        assert_eq!(nd.qps[0].cq.arm_sn, 1);
        assert!(!nd.qps[0].cq.armed && nd.qps[1].cq.armed);
        assert!(nd.take_async_events().is_empty());
    }

    #[test]
    fn close_tears_everything_down() {
        let cfg = NetDevConfig {
            queues: 2,
            ..NetDevConfig::default()
        };
        let mut nd = netdev(cfg);
        nd.send(1, &frame(60, 0), TxOffload::default()).unwrap();
        collect(&mut nd, 2, 2);
        let mut dev = nd.close().unwrap();
        let f = dev.backend();
        assert!(f.queues.iter().flatten().all(Option::is_none));
        assert_eq!(f.mrs[0], None);
        assert!(f.allocated.is_empty());
        let destroys: Vec<u32> = f
            .commands
            .iter()
            .filter(|c| c.0 == 2)
            .map(|c| c.1)
            .collect();
        assert_eq!(
            destroys,
            vec![3, 2, 1, 3, 2, 1, 0, 0],
            "RQ, SQ, CQ per queue, then EQs"
        );
        NetDev::new(dev, cfg).unwrap();
    }

    #[test]
    fn configurations_the_device_cannot_serve() {
        let open = |id| Device::open(FakeNic::new(id)).unwrap();
        let bad = |id, cfg| NetDev::new(open(id), cfg).unwrap_err();
        let d = NetDevConfig::default();
        let e = bad(FakeId::default(), NetDevConfig { queues: 5, ..d });
        assert!(
            e.to_string().contains("5 queue pairs; the device has 4"),
            "{e}"
        );
        let id = FakeId {
            eqs: 2,
            ..FakeId::default()
        };
        let e = bad(id.clone(), NetDevConfig { queues: 3, ..d });
        assert!(e.to_string().contains("EqMode::Shared"), "{e}");
        NetDev::new(
            open(id),
            NetDevConfig {
                queues: 3,
                eq_mode: EqMode::Shared,
                ..d
            },
        )
        .unwrap();
        let e = bad(
            FakeId::default(),
            NetDevConfig {
                rx_buf_size: 1500,
                ..d
            },
        );
        assert!(e.to_string().contains("largest frame (1522"), "{e}");
        let e = bad(
            FakeId::default(),
            NetDevConfig {
                sq_log_size: 1,
                ..d
            },
        );
        assert!(matches!(e.error, Error::Config(_)), "{e}");
        let e = bad(
            FakeId::default(),
            NetDevConfig {
                rq_log_size: 10,
                ..d
            },
        );
        assert!(e.to_string().contains("completion ring"), "{e}");
        // A device failure half way: everything built so far is torn down, the device returned.
        let e = bad(
            FakeId {
                mrs: 0,
                ..FakeId::default()
            },
            d,
        );
        assert!(
            matches!(e.error, Error::Device(DeviceError::OutOfRange { .. })),
            "{e}"
        );
        assert!(e.device.into_backend().allocated.is_empty());
        let mut dev2 = open(FakeId::default());
        dev2.backend().id.log_max_wq = 5; // the device refuses what the driver thought fine
        let e = NetDev::new(
            dev2,
            NetDevConfig {
                sq_log_size: 6,
                rq_log_size: 3,
                ..d
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                e.error,
                Error::Device(DeviceError::Command {
                    status: crate::device::CmdStatus::BadParam,
                    ..
                })
            ),
            "{e}"
        );
        let mut dev2 = *e.device;
        assert!(dev2.backend().allocated.is_empty());
        assert!(dev2.backend().queues.iter().flatten().all(Option::is_none));
    }
}
