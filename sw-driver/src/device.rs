//! The device: identification, control, memory regions, queue commands, RSS and counters, all
//! through BAR 0 registers ([`crate::regs`]).
//!
//! [`Device::open`] checks that a nicgen NIC of this register-map ABI is behind the BAR and
//! reads its identification block into [`DeviceInfo`]. Queue commands follow the map's
//! protocol: wait until no command runs, stage `QCMD.IN` (the `qcmd_in` layout), write
//! `QCMD.EXEC`, busy-poll `QCMD.STATUS.busy` (calling [`Interrupts::relax`] between reads, so
//! a simulated device advances) until it clears or the command timeout passes, then map
//! `STATUS.status` to [`CmdStatus`].

use std::fmt;

use thiserror::Error;

use crate::encap::EncapContext;
use crate::hw::{Backend, DmaRegion, Interrupts};
use crate::regs::consts::{mini_cqe_format, qcmd_op, qcmd_status, qstate, qtype};
use crate::regs::desc::qcmd_in;
use crate::regs::{dev, encap, id, mr, qcmd, rss, stats, tunnel, DescField, Field};

/// `id.MAGIC`'s value, "NICG" (in the map's source, not among the generated constants).
pub const MAGIC: u32 = 0x4E49_4347;
/// The register-map ABI revision this driver speaks (`id.VERSION.abi`).
pub const ABI: u32 = 1;
/// Default bound on a queue command, and on other register polls, in device nanoseconds.
pub const DEFAULT_COMMAND_TIMEOUT_NS: u64 = 1_000_000;
/// Polls after which a register poll gives up even if device time does not advance (a backend
/// whose clock stands still must not hang the driver).
const MAX_POLLS: u64 = 1 << 24;

/// `QCMD.OUT` word 3 (not split out in the generated map): the last error's syndrome and its
/// WQE counter.
const OUT_SYNDROME: Field = Field { lsb: 0, bits: 8 };
const OUT_WQE_COUNTER: Field = Field { lsb: 16, bits: 16 };

coded_enum! {
    /// Queue types of the queue commands.
    QueueType: u32 {
        Eq = qtype::EQ,
        Cq = qtype::CQ,
        Sq = qtype::SQ,
        Rq = qtype::RQ,
    }
}

coded_enum! {
    /// Queue commands.
    QueueOp: u32 {
        Create = qcmd_op::CREATE,
        Destroy = qcmd_op::DESTROY,
        Reset = qcmd_op::RESET,
        Query = qcmd_op::QUERY,
    }
}

coded_enum! {
    /// A failed command's status (`QCMD.STATUS.status`, mlx5 command status codes).
    CmdStatus: u32 {
        /// A size, stride or link out of range.
        BadParam = qcmd_status::BAD_PARAM,
        /// The queue is not in a state the command applies to.
        BadResourceState = qcmd_status::BAD_RES_STATE,
        /// The queue number is out of range.
        BadIndex = qcmd_status::BAD_INDEX,
    }
}

coded_enum! {
    /// A queue's state (`QCMD.OUT` word 0).
    QState: u32 {
        /// Not created.
        Reset = qstate::RST,
        Ready = qstate::RDY,
        /// Stopped until a RESET command.
        Error = qstate::ERR,
    }
}

impl fmt::Display for QueueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueType::Other(c) => write!(f, "queue type {c}"),
            t => write!(f, "{}", format!("{t:?}").to_uppercase()),
        }
    }
}

/// What went wrong talking to the device.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// BAR 0 does not start with the nicgen magic.
    #[error("no nicgen NIC behind BAR 0: MAGIC reads {found:#010x}, expected {MAGIC:#010x} (wrong BAR, or the device is not up)")]
    NotNicgen { found: u32 },
    /// The device speaks another register-map ABI.
    #[error("register-map ABI {found}, this driver speaks {expected}: rebuild the driver and the bitstream from one tree")]
    AbiMismatch { found: u32, expected: u32 },
    /// The identification block is unusable.
    #[error("bad identification block: {0}")]
    BadIdentification(&'static str),
    /// A queue command answered with an error status.
    #[error("{op:?} {qtype} {index} failed: {status:?}")]
    Command {
        op: QueueOp,
        qtype: QueueType,
        index: u16,
        status: CmdStatus,
    },
    /// A register never reached the awaited value.
    #[error("timeout after {waited_ns} ns waiting for {what}")]
    Timeout { what: &'static str, waited_ns: u64 },
    /// The device lacks a capability.
    #[error("the device does not support {0}")]
    Unsupported(&'static str),
    /// An argument outside what the device or the field holds.
    #[error("{what} {value} is out of range (limit {limit})")]
    OutOfRange {
        what: &'static str,
        value: u64,
        limit: u64,
    },
    /// An encapsulation context index not below `DeviceInfo::encap_contexts` (none when the
    /// device has no encapsulation engine).
    #[error("encapsulation context {index}: the device has {contexts}")]
    NoSuchEncapContext { index: u8, contexts: u8 },
    /// A value that does not fit its field in a device structure.
    #[error(transparent)]
    Desc(#[from] crate::desc::DescError),
}

/// Generator and register-map versions (`id.VERSION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub abi: u8,
    pub major: u8,
    pub minor: u8,
    pub patch: u8,
}

/// Capabilities (`id.CAPS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// TX checksum insertion and RX verification.
    pub csum: bool,
    /// Toeplitz RSS with an indirection table.
    pub rss: bool,
    /// VLAN strip on RX, insert on TX.
    pub vlan: bool,
    /// MAC-side loopback.
    pub loopback: bool,
    /// VXLAN/NVGRE recognition and de-capsulation on receive.
    pub tunnels: bool,
    /// VXLAN/NVGRE encapsulation on transmit: per-SQ contexts ([`Device::program_encap`],
    /// [`SqParams::encap`]).
    pub encap: bool,
    /// TCP segmentation offload: LSO sends, plain and tunnelled.
    pub tso: bool,
}

/// A tunnel kind, as the steering table and the CQE number it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    /// VXLAN (UDP to the VXLAN port), keyed by VNI.
    Vxlan = 1,
    /// NVGRE (GRE with key, protocol 0x6558), keyed by VSID.
    Nvgre = 2,
}

/// Which tunnels delivered whole (not de-capsulated) get the inner offloads
/// (`TUNNEL_CTL.inner_vxlan` / `inner_nvgre`): their inner headers' checksums are verified
/// with the outer ones (the CQE's `tunneled`, its `l3_ok` / `l4_ok` covering both) and RSS
/// hashes the inner headers, so that a tunnel's flows spread over the queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InnerOffload {
    pub vxlan: bool,
    pub nvgre: bool,
}

impl InnerOffload {
    /// No inner offloads: tunnels delivered whole are reported on their outer headers.
    pub const NONE: InnerOffload = InnerOffload {
        vxlan: false,
        nvgre: false,
    };
    /// Both kinds.
    pub const ALL: InnerOffload = InnerOffload {
        vxlan: true,
        nvgre: true,
    };
}

/// What the identification block says about the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub version: Version,
    /// Datapath and DMA width, bits.
    pub data_bits: u32,
    /// The device clock, kHz (time base of the timer and CQE timestamps).
    pub clock_khz: u32,
    /// Largest L2 payload, bytes.
    pub mtu: u32,
    /// Send, receive and completion queues (each).
    pub queues: u16,
    /// Event queues = interrupt vectors.
    pub eqs: u8,
    /// Memory-region table entries.
    pub mrs: u8,
    /// RSS indirection-table entries.
    pub rss_table_size: u16,
    /// Largest log2 ring size.
    pub log_max_wq: u8,
    /// Tunnel steering-table entries (0 without the tunnel stage).
    pub steer_entries: u8,
    /// Encapsulation contexts on transmit (0 without the encapsulation engine).
    pub encap_contexts: u8,
    /// Largest LSO `mss` (0 without the TSO engine).
    pub max_mss: u16,
    /// log2 of the largest LSO send, headers included (0 without the TSO engine).
    pub log_max_lso: u8,
    pub caps: Caps,
    /// The preset the device was generated from.
    pub preset: String,
    /// First 8 bytes of the SHA-256 of the preset's canonical TOML.
    pub config_hash: [u8; 8],
    /// The generator's git commit (zero when unknown).
    pub git_hash: [u8; 20],
    /// The generator's tree had uncommitted changes.
    pub git_dirty: bool,
}

impl DeviceInfo {
    /// Largest frame without FCS the device passes: MTU + 22 (header and two VLAN tags; a frame
    /// with fewer tags is held to 14 + 4 × its tags + MTU).
    pub fn max_frame(&self) -> usize {
        self.mtu as usize + 22
    }

    /// Largest LSO send, headers included: `2^log_max_lso` (256 KiB on the generated
    /// devices), at least the largest frame.
    pub fn max_lso(&self) -> usize {
        match self.log_max_lso {
            0 => self.max_frame(),
            l => (1usize << l).max(self.max_frame()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.version;
        write!(
            f,
            "nicgen {}.{}.{} (ABI {}) preset {} config {} git {}{}: {} bits at {} kHz, MTU {}, \
             {} queues, {} EQs, {} MRs, RSS table {}, rings up to 2^{}",
            v.major,
            v.minor,
            v.patch,
            v.abi,
            self.preset,
            hex(&self.config_hash),
            hex(&self.git_hash),
            if self.git_dirty { "-dirty" } else { "" },
            self.data_bits,
            self.clock_khz,
            self.mtu,
            self.queues,
            self.eqs,
            self.mrs,
            self.rss_table_size,
            self.log_max_wq
        )?;
        if self.caps.encap {
            write!(f, ", {} encapsulation contexts", self.encap_contexts)?;
        }
        if self.caps.tso {
            write!(
                f,
                ", LSO mss up to {} in sends up to {} bytes",
                self.max_mss,
                self.max_lso()
            )?;
        }
        Ok(())
    }
}

/// A memory region's key: the index of its MR table entry, used as a data segment's lkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lkey(pub u32);

/// Interrupt moderation of an event queue: raise the interrupt after `count` events (0 = 1),
/// or `period` 1024-cycle ticks after the first pending event (0 = no timer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moderation {
    pub count: u16,
    pub period: u16,
}

/// Parameters of CREATE EQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqParams {
    /// Ring base, bus address (4 KiB aligned).
    pub ring: u64,
    /// log2 64-byte entries.
    pub log_size: u8,
    /// The interrupt vector.
    pub vector: u16,
    pub moderation: Moderation,
}

/// Parameters of CREATE CQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqParams {
    pub ring: u64,
    /// log2 64-byte entries.
    pub log_size: u8,
    /// Doorbell record, bus address.
    pub dbr: u64,
    /// The EQ its completion events go to.
    pub eq: u16,
    /// CQE compression: runs of like completions as a title and mini CQEs in this format
    /// (receive completions; send completions always carry their WQE counter and opcode).
    pub compress: Option<MiniFormat>,
    /// Device cycles a session of CQEs (merged into one write, or compressed) waits for more
    /// completions; 0: it takes only those already waiting.
    pub session: u16,
}

/// Mini CQE format of a compressed CQ's receive completions (`mini_cqe_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiniFormat {
    /// Mini CQEs carry the RSS hash; a session shares the checksum.
    Hash,
    /// Mini CQEs carry the checksum; a session shares the RSS hash (mlx5e's choice).
    Csum,
}

/// Parameters of CREATE SQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqParams {
    pub ring: u64,
    /// log2 64-byte WQEBBs.
    pub log_size: u8,
    pub dbr: u64,
    /// The CQ its completions go to.
    pub cq: u16,
    /// Encapsulate every frame the SQ sends with this context (below
    /// [`DeviceInfo::encap_contexts`]); `None`: send frames as they are.
    pub encap: Option<u8>,
}

/// Parameters of CREATE RQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqParams {
    pub ring: u64,
    /// log2 WQEs.
    pub log_size: u8,
    /// log2 bytes per WQE (4..=9; striding: 5..=9).
    pub log_stride: u8,
    pub dbr: u64,
    /// The CQ its completions go to.
    pub cq: u16,
    /// A striding (multi-packet) RQ with this geometry; `None`: one frame per WQE.
    pub striding: Option<RqStrides>,
}

/// A striding RQ's geometry (`qcmd_in.log_num_strides`, `qcmd_in.log_stride_size`): each WQE
/// is a next segment and one data segment naming a buffer of `2^log_num_strides` strides of
/// `2^log_stride_size` bytes, and takes frames until its strides are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqStrides {
    /// log2 strides per WQE (1..=14).
    pub log_num_strides: u8,
    /// log2 bytes per stride (6..=13).
    pub log_stride_size: u8,
}

impl RqStrides {
    /// Bytes of one WQE's buffer.
    pub fn wqe_bytes(&self) -> usize {
        1 << (self.log_num_strides + self.log_stride_size)
    }

    /// Strides per WQE.
    pub fn strides(&self) -> u32 {
        1 << self.log_num_strides
    }
}

/// A queue as QUERY reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueState {
    pub state: QState,
    /// Producer counter.
    pub pc: u32,
    /// Consumer counter.
    pub ci: u32,
    /// Syndrome of the last error.
    pub syndrome: u8,
    /// WQE counter of the last error.
    pub wqe_counter: u16,
}

/// RSS hash-type enables (`rss.ENABLES`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RssEnables {
    pub ipv4: bool,
    pub tcp_ipv4: bool,
    pub udp_ipv4: bool,
    pub ipv6: bool,
    pub tcp_ipv6: bool,
    pub udp_ipv6: bool,
}

impl RssEnables {
    /// Every hash type.
    pub const ALL: RssEnables = RssEnables {
        ipv4: true,
        tcp_ipv4: true,
        udp_ipv4: true,
        ipv6: true,
        tcp_ipv6: true,
        udp_ipv6: true,
    };

    fn word(self) -> u32 {
        [
            (self.ipv4, rss::ENABLES_IPV4),
            (self.tcp_ipv4, rss::ENABLES_TCP_IPV4),
            (self.udp_ipv4, rss::ENABLES_UDP_IPV4),
            (self.ipv6, rss::ENABLES_IPV6),
            (self.tcp_ipv6, rss::ENABLES_TCP_IPV6),
            (self.udp_ipv6, rss::ENABLES_UDP_IPV6),
        ]
        .into_iter()
        .fold(0, |w, (on, f)| w | f.put(on.into()))
    }
}

/// Declares [`Stats`] from the list of counters: one field per counter, read in [`Device::stats`].
macro_rules! counters {
    ($($field:ident = $reg:ident: $doc:literal,)*) => {
        /// The device's counters (64-bit, wrapping), by name.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Stats {
            $(#[doc = $doc] pub $field: u64,)*
        }

        impl Stats {
            /// Every counter as (name, value), in register order.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($field), self.$field),)*]
            }

            fn read(hw: &mut impl crate::hw::RegisterSpace) -> Self {
                Stats { $($field: read64(hw, stats::$reg),)* }
            }
        }
    };
}

counters! {
    rx_frames = RX_FRAMES: "Frames received from the wire (delivered or dropped).",
    rx_delivered = RX_DELIVERED: "Frames the RX path delivered.",
    rx_drop_runt = RX_DROP_RUNT: "Frames dropped: shorter than 64 bytes with FCS.",
    rx_drop_oversize = RX_DROP_OVERSIZE: "Frames dropped: longer than 18 + 4 x VLAN tags (0..2) + MTU bytes with FCS.",
    rx_drop_fcs = RX_DROP_FCS: "Frames dropped: bad FCS.",
    rx_drop_mac_control = RX_DROP_MAC_CONTROL: "Frames dropped: MAC control.",
    rx_malformed = RX_MALFORMED: "Delivered frames flagged malformed.",
    rx_vlan_stripped = RX_VLAN_STRIPPED: "Delivered frames whose VLAN tag was stripped.",
    rx_l3_csum_bad = RX_L3_CSUM_BAD: "Delivered frames with an IP header not reported good.",
    rx_l4_csum_bad = RX_L4_CSUM_BAD: "Delivered frames with a TCP/UDP checksum not reported good.",
    tx_frames = TX_FRAMES: "Frames the TX path sent.",
    rx_no_wqe = RX_NO_WQE: "Frames dropped for want of a posted receive WQE.",
    tx_wqes = TX_WQES: "Send WQEs executed.",
    rx_cqes = RX_CQES: "Receive completions written.",
    dma_rd_err = DMA_RD_ERR: "DMA reads answered with an error.",
    rx_decapped = RX_DECAPPED: "Delivered frames de-capsulated.",
    rx_tunnel_malformed = RX_TUNNEL_MALFORMED: "Delivered frames with a malformed VXLAN or NVGRE header.",
    tx_lso_bad = TX_LSO_BAD: "LSO sends the TX path refused and dropped whole.",
    tx_encap_drop = TX_ENCAP_DROP: "Frames the encapsulation engine dropped (shorter than an Ethernet header).",
}

/// A 64-bit register: low dword first (it latches the high one).
fn read64(hw: &mut impl crate::hw::RegisterSpace, offset: u32) -> u64 {
    let lo = hw.read32(offset) as u64;
    let hi = hw.read32(offset + 4) as u64;
    hi << 32 | lo
}

/// `count` consecutive registers as bytes, byte 0 in bits 7:0 of the first.
fn read_bytes<const N: usize>(hw: &mut impl crate::hw::RegisterSpace, offset: u32) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, chunk) in out.chunks_mut(4).enumerate() {
        let w = hw.read32(offset + 4 * i as u32).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
    out
}

/// Call `probe` until it gives a value, relaxing between calls; a [`DeviceError::Timeout`]
/// once `timeout_ns` of device time (or an absurd number of polls) passed.
pub(crate) fn poll_until<B: Interrupts, T>(
    hw: &mut B,
    timeout_ns: u64,
    what: &'static str,
    mut probe: impl FnMut(&mut B) -> Option<T>,
) -> Result<T, DeviceError> {
    let start = hw.now_ns();
    for _ in 0..MAX_POLLS {
        if let Some(v) = probe(hw) {
            return Ok(v);
        }
        let waited_ns = hw.now_ns().saturating_sub(start);
        if waited_ns > timeout_ns {
            return Err(DeviceError::Timeout { what, waited_ns });
        }
        hw.relax();
    }
    Err(DeviceError::Timeout {
        what,
        waited_ns: hw.now_ns().saturating_sub(start),
    })
}

fn check_fits(what: &'static str, field: DescField, value: u64) -> Result<(), DeviceError> {
    let limit = (1u64 << field.bits) - 1;
    if value > limit {
        return Err(DeviceError::OutOfRange { what, value, limit });
    }
    Ok(())
}

/// A nicgen NIC behind a backend.
pub struct Device<B: Backend> {
    hw: B,
    info: DeviceInfo,
    timeout_ns: u64,
}

impl<B: Backend> fmt::Debug for Device<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("info", &self.info).finish()
    }
}

impl<B: Backend> Device<B> {
    /// Check the device (magic, ABI) and read its identification block.
    pub fn open(mut hw: B) -> Result<Self, DeviceError> {
        let magic = hw.read32(id::MAGIC);
        if magic != MAGIC {
            return Err(DeviceError::NotNicgen { found: magic });
        }
        let v = hw.read32(id::VERSION);
        let version = Version {
            abi: id::VERSION_ABI.get(v) as u8,
            major: id::VERSION_MAJOR.get(v) as u8,
            minor: id::VERSION_MINOR.get(v) as u8,
            patch: id::VERSION_PATCH.get(v) as u8,
        };
        if version.abi as u32 != ABI {
            return Err(DeviceError::AbiMismatch {
                found: version.abi.into(),
                expected: ABI,
            });
        }
        let queues = hw.read32(id::QUEUES);
        let limits = hw.read32(id::LIMITS);
        let caps = hw.read32(id::CAPS);
        let overlay = hw.read32(id::OVERLAY);
        let name: [u8; 4 * id::PRESET_NAME_COUNT as usize] = read_bytes(&mut hw, id::PRESET_NAME);
        let name_len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let info = DeviceInfo {
            version,
            data_bits: hw.read32(id::DATA_BITS),
            clock_khz: hw.read32(id::CLOCK_KHZ),
            mtu: hw.read32(id::MTU),
            queues: id::QUEUES_QUEUES.get(queues) as u16,
            eqs: id::QUEUES_EQS.get(queues) as u8,
            mrs: id::QUEUES_MRS.get(queues) as u8,
            rss_table_size: id::LIMITS_TABLE_SIZE.get(limits) as u16,
            log_max_wq: id::LIMITS_LOG_MAX_WQ.get(limits) as u8,
            steer_entries: id::LIMITS_STEER_ENTRIES.get(limits) as u8,
            encap_contexts: id::OVERLAY_ENCAP_CONTEXTS.get(overlay) as u8,
            max_mss: id::OVERLAY_MAX_MSS.get(overlay) as u16,
            log_max_lso: id::OVERLAY_LOG_MAX_LSO.get(overlay) as u8,
            caps: Caps {
                csum: id::CAPS_CSUM.get(caps) != 0,
                rss: id::CAPS_RSS.get(caps) != 0,
                vlan: id::CAPS_VLAN.get(caps) != 0,
                loopback: id::CAPS_LOOPBACK.get(caps) != 0,
                tunnels: id::CAPS_TUNNELS.get(caps) != 0,
                encap: id::CAPS_ENCAP.get(caps) != 0,
                tso: id::CAPS_TSO.get(caps) != 0,
            },
            preset: String::from_utf8_lossy(&name[..name_len]).into_owned(),
            config_hash: read_bytes(&mut hw, id::CONFIG_HASH),
            git_hash: read_bytes(&mut hw, id::GIT_HASH),
            git_dirty: id::GIT_FLAGS_DIRTY.get(hw.read32(id::GIT_FLAGS)) != 0,
        };
        if info.clock_khz == 0 {
            return Err(DeviceError::BadIdentification("CLOCK_KHZ is 0"));
        }
        Ok(Device {
            hw,
            info,
            timeout_ns: DEFAULT_COMMAND_TIMEOUT_NS,
        })
    }

    /// What the identification block said.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend (for DMA memory and interrupts).
    pub fn backend(&mut self) -> &mut B {
        &mut self.hw
    }

    /// Give the backend back.
    pub fn into_backend(self) -> B {
        self.hw
    }

    /// Bound queue commands and other register polls to `ns` of device time.
    pub fn set_command_timeout(&mut self, ns: u64) {
        self.timeout_ns = ns;
    }

    /// The bound on queue commands and register polls, device nanoseconds.
    pub fn command_timeout(&self) -> u64 {
        self.timeout_ns
    }

    /// Switch the MAC-side loopback and wait until `DEV.STATUS` shows it in force (it changes
    /// between frames).
    pub fn set_loopback(&mut self, on: bool) -> Result<(), DeviceError> {
        if !self.info.caps.loopback {
            return Err(DeviceError::Unsupported("MAC-side loopback"));
        }
        self.hw
            .write32(dev::CTRL, dev::CTRL_LOOPBACK.put(on.into()));
        poll_until(
            &mut self.hw,
            self.timeout_ns,
            "DEV.STATUS.loopback_active",
            |hw| {
                (dev::STATUS_LOOPBACK_ACTIVE.get(hw.read32(dev::STATUS)) == on as u32).then_some(())
            },
        )
    }

    /// Whether the loopback is in force (`DEV.STATUS`).
    pub fn loopback_active(&mut self) -> bool {
        dev::STATUS_LOOPBACK_ACTIVE.get(self.hw.read32(dev::STATUS)) != 0
    }

    /// The health counter (increments every 1024 device cycles while the device runs).
    pub fn health(&mut self) -> u32 {
        self.hw.read32(dev::HEALTH)
    }

    /// Device cycles since reset (`DEV.TIMER`, the CQE timestamp base).
    pub fn cycles(&mut self) -> u64 {
        read64(&mut self.hw, dev::TIMER)
    }

    /// Device cycles converted to nanoseconds at the device clock.
    pub fn cycles_to_ns(&self, cycles: u64) -> u64 {
        (cycles as u128 * 1_000_000 / self.info.clock_khz as u128) as u64
    }

    /// Device time, nanoseconds (the timer at the device clock).
    pub fn time_ns(&mut self) -> u64 {
        let c = self.cycles();
        self.cycles_to_ns(c)
    }

    /// All counters.
    pub fn stats(&mut self) -> Stats {
        Stats::read(&mut self.hw)
    }

    /// Program RSS: the 40-byte Toeplitz key, the hash types, and the whole indirection table
    /// (`LIMITS.table_size` receive-queue numbers).
    pub fn program_rss(
        &mut self,
        key: &[u8; 4 * rss::KEY_COUNT as usize],
        enables: RssEnables,
        table: &[u16],
    ) -> Result<(), DeviceError> {
        if !self.info.caps.rss {
            return Err(DeviceError::Unsupported("RSS"));
        }
        let size = self.info.rss_table_size as usize;
        if table.len() != size || size > rss::TABLE_COUNT as usize {
            return Err(DeviceError::OutOfRange {
                what: "RSS table length",
                value: table.len() as u64,
                limit: size as u64,
            });
        }
        if let Some(&q) = table.iter().find(|&&q| q >= self.info.queues) {
            return Err(DeviceError::OutOfRange {
                what: "RSS table entry (receive queue)",
                value: q.into(),
                limit: self.info.queues.saturating_sub(1).into(),
            });
        }
        for (k, word) in key.chunks_exact(4).enumerate() {
            let w = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
            self.hw.write32(rss::KEY + 4 * k as u32, w);
        }
        self.hw.write32(rss::ENABLES, enables.word());
        for (i, &q) in table.iter().enumerate() {
            self.hw.write32(rss::TABLE + 4 * i as u32, q.into());
        }
        Ok(())
    }

    /// Program the tunnel stage: the VXLAN UDP port, `decap_all`, the inner offloads, and the
    /// steering table, entry `i` from `entries[i]` = (kind, VNI/VSID, receive queue), the
    /// other entries cleared. A frame whose well-formed tunnel (kind, id) is in the table (or
    /// any, with `decap_all`) is delivered as its inner frame, to the entry's queue (RSS's with
    /// `decap_all` alone); one delivered whole, of a kind `inner` names, gets the inner
    /// offloads ([`InnerOffload`]).
    pub fn program_tunnels(
        &mut self,
        vxlan_port: u16,
        decap_all: bool,
        inner: InnerOffload,
        entries: &[(TunnelKind, u32, u16)],
    ) -> Result<(), DeviceError> {
        if !self.info.caps.tunnels {
            return Err(DeviceError::Unsupported("tunnel de-capsulation"));
        }
        let n = self.info.steer_entries as usize;
        if entries.len() > n {
            return Err(DeviceError::OutOfRange {
                what: "steering entries",
                value: entries.len() as u64,
                limit: n as u64,
            });
        }
        for &(_, id, q) in entries {
            if id >= 1 << 24 {
                return Err(DeviceError::OutOfRange {
                    what: "VNI/VSID",
                    value: id.into(),
                    limit: (1 << 24) - 1,
                });
            }
            if q >= self.info.queues {
                return Err(DeviceError::OutOfRange {
                    what: "steering entry (receive queue)",
                    value: q.into(),
                    limit: self.info.queues.saturating_sub(1).into(),
                });
            }
        }
        self.hw.write32(tunnel::VXLAN_PORT, vxlan_port.into());
        let ctl = tunnel::CTL_DECAP_ALL.put(decap_all.into())
            | tunnel::CTL_INNER_VXLAN.put(inner.vxlan.into())
            | tunnel::CTL_INNER_NVGRE.put(inner.nvgre.into());
        self.hw.write32(tunnel::CTL, ctl);
        for i in 0..n {
            let word = match entries.get(i) {
                Some(&(kind, id, q)) => {
                    self.hw.write32(tunnel::STEER_QUEUE, q.into());
                    tunnel::STEER_VALID.put(1)
                        | tunnel::STEER_KIND.put(kind as u32)
                        | tunnel::STEER_ID.put(id)
                }
                None => 0,
            };
            self.hw.write32(tunnel::STEER + 4 * i as u32, word);
        }
        Ok(())
    }

    fn check_mr_index(&self, index: u32) -> Result<(), DeviceError> {
        if index >= self.info.mrs as u32 {
            return Err(DeviceError::OutOfRange {
                what: "memory-region index",
                value: index.into(),
                limit: (self.info.mrs as u64).saturating_sub(1),
            });
        }
        Ok(())
    }

    /// Let the device reach `region` through MR table entry `index`; its lkey is the index.
    pub fn register_mr(&mut self, index: u32, region: DmaRegion) -> Result<Lkey, DeviceError> {
        self.check_mr_index(index)?;
        let len = region.len as u64;
        self.hw.write32(mr::SEL, index);
        self.hw.write32(mr::BASE, region.addr as u32);
        self.hw.write32(mr::BASE + 4, (region.addr >> 32) as u32);
        self.hw.write32(mr::LEN, len as u32);
        self.hw.write32(mr::LEN + 4, (len >> 32) as u32);
        self.hw.write32(mr::COMMIT, mr::COMMIT_VALID.put(1));
        Ok(Lkey(index))
    }

    /// Invalidate a memory region.
    pub fn unregister_mr(&mut self, lkey: Lkey) -> Result<(), DeviceError> {
        self.check_mr_index(lkey.0)?;
        self.hw.write32(mr::SEL, lkey.0);
        self.hw.write32(mr::COMMIT, mr::COMMIT_VALID.put(0));
        Ok(())
    }

    fn wait_idle(&mut self) -> Result<u32, DeviceError> {
        poll_until(
            &mut self.hw,
            self.timeout_ns,
            "QCMD.STATUS.busy to clear",
            |hw| {
                let s = hw.read32(qcmd::STATUS);
                (qcmd::STATUS_BUSY.get(s) == 0).then_some(s)
            },
        )
    }

    /// Run one queue command with `input` staged in `QCMD.IN`.
    fn command(
        &mut self,
        op: QueueOp,
        qtype: QueueType,
        index: u16,
        input: Option<&[u8; qcmd_in::SIZE]>,
    ) -> Result<(), DeviceError> {
        self.wait_idle()?;
        if let Some(input) = input {
            for (k, w) in input.chunks_exact(4).enumerate() {
                let word = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                self.hw.write32(qcmd::IN + 4 * k as u32, word);
            }
        }
        let exec = qcmd::EXEC_OP.put(op.code())
            | qcmd::EXEC_QTYPE.put(qtype.code())
            | qcmd::EXEC_INDEX.put(index.into());
        self.hw.write32(qcmd::EXEC, exec);
        let status = self.wait_idle()?;
        match qcmd::STATUS_STATUS.get(status) {
            qcmd_status::OK => Ok(()),
            s => Err(DeviceError::Command {
                op,
                qtype,
                index,
                status: CmdStatus::from_code(s),
            }),
        }
    }

    /// The `qcmd_in` words shared by every queue type.
    fn create_input(
        ring: u64,
        log_size: u8,
        dbr: u64,
        link: u16,
    ) -> Result<[u8; qcmd_in::SIZE], DeviceError> {
        check_fits("log2 ring size", qcmd_in::LOG_SIZE, log_size.into())?;
        let mut input = [0u8; qcmd_in::SIZE];
        qcmd_in::RING_LO.set(&mut input, ring & 0xFFFF_FFFF);
        qcmd_in::RING_HI.set(&mut input, ring >> 32);
        qcmd_in::LOG_SIZE.set(&mut input, log_size.into());
        qcmd_in::DBR_LO.set(&mut input, dbr & 0xFFFF_FFFF);
        qcmd_in::DBR_HI.set(&mut input, dbr >> 32);
        qcmd_in::LINK.set(&mut input, link.into());
        Ok(input)
    }

    /// CREATE an event queue on interrupt vector `p.vector`.
    pub fn create_eq(&mut self, index: u16, p: EqParams) -> Result<(), DeviceError> {
        let mut input = Self::create_input(p.ring, p.log_size, 0, p.vector)?;
        qcmd_in::MOD_COUNT.set(&mut input, p.moderation.count.into());
        qcmd_in::MOD_PERIOD.set(&mut input, p.moderation.period.into());
        self.command(QueueOp::Create, QueueType::Eq, index, Some(&input))
    }

    /// CREATE a completion queue reporting to EQ `p.eq`.
    pub fn create_cq(&mut self, index: u16, p: CqParams) -> Result<(), DeviceError> {
        let mut input = Self::create_input(p.ring, p.log_size, p.dbr, p.eq)?;
        if let Some(f) = p.compress {
            qcmd_in::CQE_COMP.set(&mut input, 1);
            let code = match f {
                MiniFormat::Hash => mini_cqe_format::HASH,
                MiniFormat::Csum => mini_cqe_format::CSUM,
            };
            qcmd_in::MINI_FORMAT.set(&mut input, code.into());
        }
        qcmd_in::SESSION.set(&mut input, p.session.into());
        self.command(QueueOp::Create, QueueType::Cq, index, Some(&input))
    }

    /// CREATE a send queue completing to CQ `p.cq`, encapsulating with context `p.encap`.
    pub fn create_sq(&mut self, index: u16, p: SqParams) -> Result<(), DeviceError> {
        let mut input = Self::create_input(p.ring, p.log_size, p.dbr, p.cq)?;
        if let Some(c) = p.encap {
            self.check_encap(c)?;
            qcmd_in::ENCAP.set(&mut input, 1);
            qcmd_in::ENCAP_CTX.set(&mut input, c.into());
        }
        self.command(QueueOp::Create, QueueType::Sq, index, Some(&input))
    }

    /// Context `index` exists: the device encapsulates and has more contexts than `index`.
    fn check_encap(&self, index: u8) -> Result<(), DeviceError> {
        if !self.info.caps.encap {
            return Err(DeviceError::Unsupported("encapsulation on transmit"));
        }
        if index >= self.info.encap_contexts {
            return Err(DeviceError::NoSuchEncapContext {
                index,
                contexts: self.info.encap_contexts,
            });
        }
        Ok(())
    }

    /// Write encapsulation context `index` (its 16 `encap.CTX` words). The device restarts the
    /// context's IPv4 ID counter; write a context while no SQ that uses it sends.
    pub fn program_encap(&mut self, index: u8, ctx: &EncapContext) -> Result<(), DeviceError> {
        self.check_encap(index)?;
        let words = ctx.words()?;
        let first = words.len() as u32 * u32::from(index);
        for (w, v) in words.into_iter().enumerate() {
            self.hw.write32(encap::CTX + 4 * (first + w as u32), v);
        }
        Ok(())
    }

    /// CREATE a receive queue completing to CQ `p.cq`.
    pub fn create_rq(&mut self, index: u16, p: RqParams) -> Result<(), DeviceError> {
        check_fits(
            "log2 receive stride",
            qcmd_in::LOG_STRIDE,
            p.log_stride.into(),
        )?;
        let mut input = Self::create_input(p.ring, p.log_size, p.dbr, p.cq)?;
        qcmd_in::LOG_STRIDE.set(&mut input, p.log_stride.into());
        if let Some(s) = p.striding {
            check_fits(
                "log2 strides per WQE",
                qcmd_in::LOG_NUM_STRIDES,
                s.log_num_strides.into(),
            )?;
            check_fits(
                "log2 stride size",
                qcmd_in::LOG_STRIDE_SIZE,
                s.log_stride_size.into(),
            )?;
            qcmd_in::STRIDING.set(&mut input, 1);
            qcmd_in::LOG_NUM_STRIDES.set(&mut input, s.log_num_strides.into());
            qcmd_in::LOG_STRIDE_SIZE.set(&mut input, s.log_stride_size.into());
        }
        self.command(QueueOp::Create, QueueType::Rq, index, Some(&input))
    }

    /// DESTROY a queue.
    pub fn destroy(&mut self, qtype: QueueType, index: u16) -> Result<(), DeviceError> {
        self.command(QueueOp::Destroy, qtype, index, None)
    }

    /// RESET a queue from the error (or ready) state back to ready, indices kept.
    pub fn reset_queue(&mut self, qtype: QueueType, index: u16) -> Result<(), DeviceError> {
        self.command(QueueOp::Reset, qtype, index, None)
    }

    /// QUERY a queue's state and indices.
    pub fn query_queue(&mut self, qtype: QueueType, index: u16) -> Result<QueueState, DeviceError> {
        self.command(QueueOp::Query, qtype, index, None)?;
        let mut out = [0u32; qcmd::OUT_COUNT as usize];
        for (k, w) in out.iter_mut().enumerate() {
            *w = self.hw.read32(qcmd::OUT + 4 * k as u32);
        }
        Ok(QueueState {
            state: QState::from_code(out[0]),
            pc: out[1],
            ci: out[2],
            syndrome: OUT_SYNDROME.get(out[3]) as u8,
            wqe_counter: OUT_WQE_COUNTER.get(out[3]) as u16,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdev::{FakeId, FakeNic, MEM_BASE};

    fn open() -> Device<FakeNic> {
        Device::open(FakeNic::new(FakeId::default())).unwrap()
    }

    #[test]
    fn open_reads_the_identification_block() {
        let d = open();
        let i = d.info();
        assert_eq!(
            i.version,
            Version {
                abi: 1,
                major: 1,
                minor: 2,
                patch: 3
            }
        );
        assert_eq!((i.data_bits, i.clock_khz, i.mtu), (512, 250_000, 1500));
        assert_eq!((i.queues, i.eqs, i.mrs), (4, 4, 8));
        assert_eq!((i.rss_table_size, i.log_max_wq), (16, 10));
        assert_eq!(
            i.caps,
            Caps {
                csum: true,
                rss: true,
                vlan: true,
                loopback: true,
                tunnels: true,
                encap: true,
                tso: true,
            }
        );
        assert_eq!(
            (i.encap_contexts, i.max_mss, i.max_lso()),
            (4, 9000, 262_144)
        );
        assert!(i.to_string().ends_with(
            "rings up to 2^10, 4 encapsulation contexts, LSO mss up to 9000 in sends up to 262144 bytes"
        ));
        assert_eq!(i.preset, "nic512");
        assert_eq!(i.config_hash, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(i.git_hash[0], 0xA0);
        assert_eq!(i.git_hash[19], 0xB3);
        assert!(i.git_dirty);
        assert_eq!(i.max_frame(), 1522);
        let s = i.to_string();
        assert!(
            s.contains("preset nic512") && s.contains("config 0102030405060708"),
            "{s}"
        );
        assert!(s.contains("git a0a1a2") && s.contains("-dirty"), "{s}");
    }

    #[test]
    fn open_refuses_other_devices_and_abis() {
        let id = FakeId {
            magic: 0xFFFF_FFFF,
            ..FakeId::default()
        };
        let e = Device::open(FakeNic::new(id)).unwrap_err();
        assert_eq!(e, DeviceError::NotNicgen { found: 0xFFFF_FFFF });
        assert!(e.to_string().contains("0xffffffff"), "{e}");
        let id = FakeId {
            abi: 2,
            ..FakeId::default()
        };
        let e = Device::open(FakeNic::new(id)).unwrap_err();
        assert_eq!(
            e,
            DeviceError::AbiMismatch {
                found: 2,
                expected: 1
            }
        );
    }

    #[test]
    fn tunnels_are_programmed_entry_by_entry() {
        let mut d = open();
        assert_eq!(d.info().steer_entries, 4);
        d.program_tunnels(
            4790,
            true,
            InnerOffload::NONE,
            &[(TunnelKind::Vxlan, 42, 3), (TunnelKind::Nvgre, 0xABCDEF, 1)],
        )
        .unwrap();
        assert_eq!(
            d.backend().tunnel_writes,
            [
                (tunnel::VXLAN_PORT, 4790),
                (tunnel::CTL, 1),
                (tunnel::STEER_QUEUE, 3),
                (tunnel::STEER, 1 << 31 | 1 << 24 | 42),
                (tunnel::STEER_QUEUE, 1),
                (tunnel::STEER + 4, 1 << 31 | 2 << 24 | 0xAB_CDEF),
                (tunnel::STEER + 8, 0),
                (tunnel::STEER + 12, 0),
            ]
        );
        // The inner offloads: CTL bits 1 (VXLAN) and 2 (NVGRE).
        for (inner, ctl) in [
            (InnerOffload::ALL, 6),
            (
                InnerOffload {
                    vxlan: true,
                    nvgre: false,
                },
                2,
            ),
            (
                InnerOffload {
                    vxlan: false,
                    nvgre: true,
                },
                4,
            ),
        ] {
            d.backend().tunnel_writes.clear();
            d.program_tunnels(4789, false, inner, &[]).unwrap();
            assert_eq!(
                d.backend().tunnel_writes[1],
                (tunnel::CTL, ctl),
                "{inner:?}"
            );
        }
        let five = [(TunnelKind::Vxlan, 1, 0); 5];
        assert!(matches!(
            d.program_tunnels(4789, false, InnerOffload::NONE, &five),
            Err(DeviceError::OutOfRange {
                what: "steering entries",
                ..
            })
        ));
        assert!(matches!(
            d.program_tunnels(
                4789,
                false,
                InnerOffload::NONE,
                &[(TunnelKind::Vxlan, 1 << 24, 0)]
            ),
            Err(DeviceError::OutOfRange {
                what: "VNI/VSID",
                ..
            })
        ));
        assert!(matches!(
            d.program_tunnels(
                4789,
                false,
                InnerOffload::NONE,
                &[(TunnelKind::Vxlan, 1, 4)]
            ),
            Err(DeviceError::OutOfRange { .. })
        ));
        let id = FakeId {
            caps: 0xF,
            ..FakeId::default()
        };
        let mut d = Device::open(FakeNic::new(id)).unwrap();
        assert_eq!(
            d.program_tunnels(4789, false, InnerOffload::NONE, &[]),
            Err(DeviceError::Unsupported("tunnel de-capsulation"))
        );
    }

    #[test]
    fn loopback_waits_for_the_status() {
        let mut d = open();
        assert!(!d.loopback_active());
        d.set_loopback(true).unwrap();
        assert!(d.loopback_active());
        assert!(d.backend().now > 0, "polled with relax()");
        d.set_loopback(false).unwrap();
        assert!(!d.loopback_active());
        let id = FakeId {
            caps: 0b0111,
            ..FakeId::default()
        };
        let mut d = Device::open(FakeNic::new(id)).unwrap();
        assert_eq!(
            d.set_loopback(true),
            Err(DeviceError::Unsupported("MAC-side loopback"))
        );
    }

    #[test]
    fn memory_regions_are_staged_and_committed() {
        let mut d = open();
        let r = DmaRegion {
            addr: 0x12_3456_7000,
            len: 0x1_0000_2000,
        };
        assert_eq!(d.register_mr(2, r), Ok(Lkey(2)));
        assert_eq!(d.backend().mrs[2], Some((0x12_3456_7000, 0x1_0000_2000)));
        d.unregister_mr(Lkey(2)).unwrap();
        assert_eq!(d.backend().mrs[2], None);
        assert_eq!(
            d.register_mr(8, r),
            Err(DeviceError::OutOfRange {
                what: "memory-region index",
                value: 8,
                limit: 7
            })
        );
    }

    #[test]
    fn program_encap_writes_the_contexts_sixteen_words() {
        let mut d = open();
        let ctx = crate::encap::tests::vxlan();
        d.program_encap(2, &ctx).unwrap();
        let want: Vec<(u32, u32)> = ctx
            .words()
            .unwrap()
            .into_iter()
            .enumerate()
            .map(|(w, v)| (encap::CTX + 4 * (32 + w as u32), v))
            .collect();
        assert_eq!(d.backend().encap_writes, want);
        assert_eq!(
            d.program_encap(4, &ctx),
            Err(DeviceError::NoSuchEncapContext {
                index: 4,
                contexts: 4
            })
        );
        let mut plain = Device::open(FakeNic::new(FakeId {
            caps: 0x1F,
            encap_contexts: 0,
            ..FakeId::default()
        }))
        .unwrap();
        assert_eq!(
            plain.program_encap(0, &ctx),
            Err(DeviceError::Unsupported("encapsulation on transmit"))
        );
        assert!(plain.backend().encap_writes.is_empty());
        assert_eq!(d.backend().encap_writes.len(), 16);
    }

    #[test]
    fn create_sq_stages_its_encapsulation_context() {
        let mut d = open();
        d.create_eq(
            0,
            EqParams {
                ring: MEM_BASE,
                log_size: 4,
                vector: 0,
                moderation: Moderation::default(),
            },
        )
        .unwrap();
        let cq = CqParams {
            ring: MEM_BASE + 0x1000,
            log_size: 4,
            dbr: MEM_BASE + 0x800,
            eq: 0,
            compress: None,
            session: 0,
        };
        d.create_cq(0, cq).unwrap();
        let sq = |encap| SqParams {
            ring: MEM_BASE + 0x2000,
            log_size: 4,
            dbr: MEM_BASE + 0x808,
            cq: 0,
            encap,
        };
        d.create_sq(1, sq(Some(3))).unwrap();
        // qcmd_in word 6: encap (bit 31) and the context.
        assert_eq!(d.backend().queues[2][1].as_ref().unwrap().encap, Some(3));
        d.create_sq(2, sq(None)).unwrap();
        assert_eq!(d.backend().queues[2][2].as_ref().unwrap().encap, None);
        let n = d.backend().commands.len();
        assert_eq!(
            d.create_sq(3, sq(Some(4))),
            Err(DeviceError::NoSuchEncapContext {
                index: 4,
                contexts: 4
            })
        );
        assert_eq!(d.backend().commands.len(), n, "refused before any command");
    }

    #[test]
    fn queue_commands_stage_their_inputs() {
        let mut d = open();
        let ring = 0x0000_0002_0000_1000;
        d.create_eq(
            1,
            EqParams {
                ring,
                log_size: 6,
                vector: 3,
                moderation: Moderation {
                    count: 4,
                    period: 9,
                },
            },
        )
        .unwrap();
        d.create_cq(
            2,
            CqParams {
                ring: ring + 0x1000,
                log_size: 7,
                dbr: MEM_BASE + 0x40,
                eq: 1,
                compress: None,
                session: 0,
            },
        )
        .unwrap();
        d.create_sq(
            2,
            SqParams {
                ring: ring + 0x3000,
                log_size: 5,
                dbr: MEM_BASE + 0x48,
                cq: 2,
                encap: None,
            },
        )
        .unwrap();
        d.create_rq(
            2,
            RqParams {
                ring: ring + 0x5000,
                log_size: 4,
                log_stride: 5,
                dbr: MEM_BASE + 0x50,
                cq: 2,
                striding: None,
            },
        )
        .unwrap();
        let fake = d.backend();
        let eq = fake.queues[0][1].clone().unwrap();
        assert_eq!((eq.ring, eq.log, eq.link, eq.mod_count), (ring, 6, 3, 4));
        let cq = fake.queues[1][2].clone().unwrap();
        assert_eq!(
            (cq.ring, cq.log, cq.dbr, cq.link),
            (ring + 0x1000, 7, MEM_BASE + 0x40, 1)
        );
        let rq = fake.queues[3][2].clone().unwrap();
        assert_eq!((rq.log, rq.log_stride, rq.link), (4, 5, 2));
        let st = d.query_queue(QueueType::Rq, 2).unwrap();
        assert_eq!(st.state, QState::Ready);
        d.destroy(QueueType::Rq, 2).unwrap();
        assert_eq!(
            d.query_queue(QueueType::Rq, 2),
            Err(DeviceError::Command {
                op: QueueOp::Query,
                qtype: QueueType::Rq,
                index: 2,
                status: CmdStatus::BadResourceState
            })
        );
    }

    #[test]
    fn command_errors_are_typed() {
        let mut d = open();
        let eq = EqParams {
            ring: MEM_BASE,
            log_size: 4,
            vector: 0,
            moderation: Moderation::default(),
        };
        d.create_eq(0, eq).unwrap();
        let err = |status| DeviceError::Command {
            op: QueueOp::Create,
            qtype: QueueType::Eq,
            index: 0,
            status,
        };
        assert_eq!(d.create_eq(0, eq), Err(err(CmdStatus::BadResourceState)));
        let e = d.create_eq(9, eq).unwrap_err();
        assert!(matches!(
            e,
            DeviceError::Command {
                status: CmdStatus::BadIndex,
                index: 9,
                ..
            }
        ));
        assert_eq!(e.to_string(), "Create EQ 9 failed: BadIndex");
        let e = d.create_eq(1, EqParams { log_size: 11, ..eq }).unwrap_err();
        assert!(matches!(
            e,
            DeviceError::Command {
                status: CmdStatus::BadParam,
                ..
            }
        ));
        let e = d.create_cq(
            0,
            CqParams {
                ring: MEM_BASE,
                log_size: 4,
                dbr: MEM_BASE,
                eq: 3,
                compress: None,
                session: 0,
            },
        );
        assert!(matches!(
            e,
            Err(DeviceError::Command {
                status: CmdStatus::BadParam,
                ..
            })
        ));
        // values that do not fit their field never reach the device
        let before = d.backend().commands.len();
        assert_eq!(
            d.create_eq(1, EqParams { log_size: 32, ..eq }),
            Err(DeviceError::OutOfRange {
                what: "log2 ring size",
                value: 32,
                limit: 31
            })
        );
        assert_eq!(d.backend().commands.len(), before);
    }

    #[test]
    fn a_command_that_never_finishes_times_out() {
        let mut d = open();
        d.set_command_timeout(5_000);
        d.backend().stuck = true;
        let e = d.reset_queue(QueueType::Sq, 0).unwrap_err();
        match e {
            DeviceError::Timeout { what, waited_ns } => {
                assert_eq!(what, "QCMD.STATUS.busy to clear");
                assert!(waited_ns > 5_000 && waited_ns < 6_000, "{waited_ns}");
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(d.backend().commands.len(), 0, "EXEC not written while busy");
    }

    #[test]
    fn query_decodes_the_out_words() {
        let mut d = open();
        let eq = EqParams {
            ring: MEM_BASE,
            log_size: 4,
            vector: 0,
            moderation: Moderation::default(),
        };
        d.create_eq(0, eq).unwrap();
        d.create_cq(
            0,
            CqParams {
                ring: MEM_BASE,
                log_size: 4,
                dbr: MEM_BASE + 0x800,
                eq: 0,
                compress: None,
                session: 0,
            },
        )
        .unwrap();
        d.create_sq(
            0,
            SqParams {
                ring: MEM_BASE,
                log_size: 4,
                dbr: MEM_BASE + 0x808,
                cq: 0,
                encap: None,
            },
        )
        .unwrap();
        {
            let sq = d.backend().queues[2][0].as_mut().unwrap();
            sq.state = qstate::ERR;
            sq.synd = 0x04;
            sq.err_wqe = 0xBEEF;
            sq.pc = 7;
        }
        assert_eq!(
            d.query_queue(QueueType::Sq, 0).unwrap(),
            QueueState {
                state: QState::Error,
                pc: 0,
                ci: 7,
                syndrome: 4,
                wqe_counter: 0xBEEF
            }
        );
        d.reset_queue(QueueType::Sq, 0).unwrap();
        assert_eq!(
            d.query_queue(QueueType::Sq, 0).unwrap().state,
            QState::Ready
        );
    }

    #[test]
    fn stats_read_64_bit_counters_by_name() {
        let mut d = open();
        d.backend().counters[0] = 0x1_0000_0002;
        d.backend().counters[14] = 77;
        assert_eq!(d.backend().counter(stats::DMA_RD_ERR), 77);
        let s = d.stats();
        assert_eq!(s.rx_frames, 0x1_0000_0002);
        assert_eq!(s.dma_rd_err, 77);
        let named = s.named();
        assert_eq!(named.len(), 19);
        assert_eq!(named[0], ("rx_frames", 0x1_0000_0002));
        assert_eq!(named[11], ("rx_no_wqe", 0));
        assert_eq!(named[14], ("dma_rd_err", 77));
        assert_eq!(named[16], ("rx_tunnel_malformed", 0));
        assert_eq!(named[18], ("tx_encap_drop", 0));
    }

    #[test]
    fn time_is_the_timer_at_the_device_clock() {
        let mut d = open();
        d.backend().now = 40_000_000_000; // 1e10 cycles at 250 MHz: the high dword matters
        assert_eq!(d.cycles(), 10_000_000_000);
        assert_eq!(d.time_ns(), 40_000_000_000);
        assert_eq!(d.cycles_to_ns(250), 1000);
    }

    #[test]
    fn rss_key_enables_and_table() {
        let mut d = open();
        let key: [u8; 40] = std::array::from_fn(|i| i as u8);
        let table: Vec<u16> = (0..16).map(|i| i % 4).collect();
        d.program_rss(
            &key,
            RssEnables {
                ipv4: true,
                udp_ipv6: true,
                ..Default::default()
            },
            &table,
        )
        .unwrap();
        let f = d.backend();
        assert_eq!(f.rss_key[0], 0x0001_0203);
        assert_eq!(f.rss_key[9], 0x2425_2627);
        assert_eq!(f.rss_enables, 0b10_0001);
        assert_eq!(f.rss_table[5], 1);
        assert_eq!(RssEnables::ALL.word(), 0x3F);
        assert!(matches!(
            d.program_rss(&key, RssEnables::ALL, &table[..8]),
            Err(DeviceError::OutOfRange {
                what: "RSS table length",
                value: 8,
                limit: 16
            })
        ));
        let mut bad = table.clone();
        bad[3] = 4;
        assert!(matches!(
            d.program_rss(&key, RssEnables::ALL, &bad),
            Err(DeviceError::OutOfRange {
                value: 4,
                limit: 3,
                ..
            })
        ));
    }
}
