//! The register and descriptor map of the nicgen NIC: BAR 0 offsets, register fields,
//! descriptor layouts and numbered constants.
//!
//! GENERATED from `hdl/src/host/regmap.rs` by `cargo run -p nicgen -- regmap --write`; do not edit.
//! Offsets are absolute BAR 0 byte offsets. Descriptor fields are big-endian.

/// A bit field of a 32-bit register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub lsb: u32,
    pub bits: u32,
}

impl Field {
    /// The field's mask in place.
    pub const fn mask(self) -> u32 {
        (((1u64 << self.bits) - 1) as u32) << self.lsb
    }
    /// The field's value in `reg`.
    pub const fn get(self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lsb
    }
    /// `value` placed in the field (bits beyond the field are dropped).
    pub const fn put(self, value: u32) -> u32 {
        (value << self.lsb) & self.mask()
    }
}

/// A field of a descriptor: `bits` at `lsb` of the big-endian `container`-byte value at `byte`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescField {
    pub byte: usize,
    pub container: usize,
    pub lsb: u32,
    pub bits: u32,
}

impl DescField {
    fn container_value(self, buf: &[u8]) -> u64 {
        buf[self.byte..self.byte + self.container]
            .iter()
            .fold(0u64, |v, b| (v << 8) | *b as u64)
    }
    fn mask(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }
    /// The field's value in the descriptor `buf`.
    pub fn get(self, buf: &[u8]) -> u64 {
        (self.container_value(buf) >> self.lsb) & self.mask()
    }
    /// Write `value` into the field of `buf`, keeping the container's other bits.
    pub fn set(self, buf: &mut [u8], value: u64) {
        let m = self.mask() << self.lsb;
        let v = (self.container_value(buf) & !m) | ((value << self.lsb) & m);
        for i in 0..self.container {
            buf[self.byte + i] = (v >> (8 * (self.container - 1 - i))) as u8;
        }
    }
}

/// Identification: what this device is and how it was generated (read-only).
pub mod id {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x0000;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0100;
    /// 0x4E494347 ("NICG"): a nicgen NIC is behind this BAR (RO).
    pub const MAGIC: u32 = 0x0000;
    /// Versions of the generator and of this register map (RO).
    pub const VERSION: u32 = 0x0004;
    /// `VERSION.patch`: generator patch version.
    pub const VERSION_PATCH: Field = Field { lsb: 0, bits: 8 };
    /// `VERSION.minor`: generator minor version.
    pub const VERSION_MINOR: Field = Field { lsb: 8, bits: 8 };
    /// `VERSION.major`: generator major version.
    pub const VERSION_MAJOR: Field = Field { lsb: 16, bits: 8 };
    /// `VERSION.abi`: register-map ABI revision (this map: 1).
    pub const VERSION_ABI: Field = Field { lsb: 24, bits: 8 };
    /// Datapath (and DMA) width in bits (RO).
    pub const DATA_BITS: u32 = 0x0008;
    /// The preset's clock, kHz (device time base) (RO).
    pub const CLOCK_KHZ: u32 = 0x000c;
    /// Largest L2 payload accepted, bytes (frames up to 14 + 4 x VLAN tags + MTU without FCS) (RO).
    pub const MTU: u32 = 0x0010;
    /// Queue counts (RO).
    pub const QUEUES: u32 = 0x0014;
    /// `QUEUES.queues`: send, receive and completion queues (each).
    pub const QUEUES_QUEUES: Field = Field { lsb: 0, bits: 16 };
    /// `QUEUES.eqs`: event queues = interrupt vectors.
    pub const QUEUES_EQS: Field = Field { lsb: 16, bits: 8 };
    /// `QUEUES.mrs`: memory-region table entries.
    pub const QUEUES_MRS: Field = Field { lsb: 24, bits: 8 };
    /// Table and ring limits (RO).
    pub const LIMITS: u32 = 0x0018;
    /// `LIMITS.table_size`: RSS indirection-table entries.
    pub const LIMITS_TABLE_SIZE: Field = Field { lsb: 0, bits: 16 };
    /// `LIMITS.log_max_wq`: largest log2 ring size for SQs, RQs, CQs and EQs.
    pub const LIMITS_LOG_MAX_WQ: Field = Field { lsb: 16, bits: 8 };
    /// `LIMITS.steer_entries`: tunnel steering-table entries (0: no tunnel de-capsulation).
    pub const LIMITS_STEER_ENTRIES: Field = Field { lsb: 24, bits: 8 };
    /// Capabilities (RO).
    pub const CAPS: u32 = 0x001c;
    /// `CAPS.csum`: TX checksum insertion and RX verification (mlx5 cs_flags).
    pub const CAPS_CSUM: Field = Field { lsb: 0, bits: 1 };
    /// `CAPS.rss`: Toeplitz RSS with indirection table.
    pub const CAPS_RSS: Field = Field { lsb: 1, bits: 1 };
    /// `CAPS.vlan`: VLAN strip on RX, insert on TX.
    pub const CAPS_VLAN: Field = Field { lsb: 2, bits: 1 };
    /// `CAPS.loopback`: MAC-side loopback (DEV.CTRL.loopback).
    pub const CAPS_LOOPBACK: Field = Field { lsb: 3, bits: 1 };
    /// `CAPS.tunnels`: VXLAN/NVGRE recognition and de-capsulation on receive (the tunnel block).
    pub const CAPS_TUNNELS: Field = Field { lsb: 4, bits: 1 };
    /// `CAPS.encap`: VXLAN/NVGRE encapsulation on transmit (the encap block, per-SQ contexts).
    pub const CAPS_ENCAP: Field = Field { lsb: 5, bits: 1 };
    /// `CAPS.tso`: TCP segmentation offload (LSO WQEs), plain and tunnelled.
    pub const CAPS_TSO: Field = Field { lsb: 6, bits: 1 };
    /// Preset name, 16 ASCII bytes NUL-padded, byte 0 in bits 7:0 of the first register (RO).
    pub const PRESET_NAME: u32 = 0x0020;
    /// Elements of `PRESET_NAME`, 4 bytes apart.
    pub const PRESET_NAME_COUNT: u32 = 4;
    /// First 8 bytes of SHA-256 of the preset's canonical TOML, byte 0 in bits 7:0 of the first register (RO).
    pub const CONFIG_HASH: u32 = 0x0030;
    /// Elements of `CONFIG_HASH`, 4 bytes apart.
    pub const CONFIG_HASH_COUNT: u32 = 2;
    /// The generator's git commit (20 bytes, byte 0 in bits 7:0 of the first register; zero when unknown) (RO).
    pub const GIT_HASH: u32 = 0x0040;
    /// Elements of `GIT_HASH`, 4 bytes apart.
    pub const GIT_HASH_COUNT: u32 = 5;
    /// Flags of GIT_HASH (RO).
    pub const GIT_FLAGS: u32 = 0x0054;
    /// `GIT_FLAGS.dirty`: the generator's tree had uncommitted changes.
    pub const GIT_FLAGS_DIRTY: Field = Field { lsb: 0, bits: 1 };
    /// Overlay engine limits on transmit (RO).
    pub const OVERLAY: u32 = 0x0058;
    /// `OVERLAY.encap_contexts`: TX encapsulation contexts (0: no encapsulation engine).
    pub const OVERLAY_ENCAP_CONTEXTS: Field = Field { lsb: 0, bits: 8 };
    /// `OVERLAY.max_mss`: largest LSO mss (0: no TSO engine).
    pub const OVERLAY_MAX_MSS: Field = Field { lsb: 8, bits: 14 };
    /// `OVERLAY.log_max_lso`: log2 of the largest LSO send in bytes, headers included (18: 256 KiB, as mlx5's max_lso_cap; 0: no TSO engine).
    pub const OVERLAY_LOG_MAX_LSO: Field = Field { lsb: 22, bits: 5 };
}

/// Device control and time.
pub mod dev {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x0100;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0100;
    /// Device control (RW).
    pub const CTRL: u32 = 0x0100;
    /// `CTRL.loopback`: MAC-side loopback: TX frames return through the RX path (changes between frames).
    pub const CTRL_LOOPBACK: Field = Field { lsb: 0, bits: 1 };
    /// Device status (RO).
    pub const STATUS: u32 = 0x0104;
    /// `STATUS.loopback_active`: the loopback mode in force.
    pub const STATUS_LOOPBACK_ACTIVE: Field = Field { lsb: 0, bits: 1 };
    /// Health counter: increments every 1024 cycles while the device runs (RO).
    pub const HEALTH: u32 = 0x0108;
    /// Scratch register for the driver's access test (RW).
    pub const SCRATCH: u32 = 0x010c;
    /// Free-running cycle counter (64 bits; CQE timestamps) (RO, 64-bit).
    pub const TIMER: u32 = 0x0110;
}

/// Counters (64 bits, reset by reset, wrapping). Read the low dword first.
pub mod stats {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x0200;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0100;
    /// Frames received from the wire (every frame, delivered or dropped) (RO, 64-bit).
    pub const RX_FRAMES: u32 = 0x0200;
    /// Frames the RX path delivered (RO, 64-bit).
    pub const RX_DELIVERED: u32 = 0x0208;
    /// Frames dropped: shorter than 64 bytes with FCS (RO, 64-bit).
    pub const RX_DROP_RUNT: u32 = 0x0210;
    /// Frames dropped: longer than 18 + 4 x VLAN tags (0..2) + MTU bytes with FCS (RO, 64-bit).
    pub const RX_DROP_OVERSIZE: u32 = 0x0218;
    /// Frames dropped: bad FCS (RO, 64-bit).
    pub const RX_DROP_FCS: u32 = 0x0220;
    /// Frames dropped: MAC control (EtherType 0x8808, PAUSE) (RO, 64-bit).
    pub const RX_DROP_MAC_CONTROL: u32 = 0x0228;
    /// Delivered frames flagged malformed (RO, 64-bit).
    pub const RX_MALFORMED: u32 = 0x0230;
    /// Delivered frames whose VLAN tag was stripped (RO, 64-bit).
    pub const RX_VLAN_STRIPPED: u32 = 0x0238;
    /// Delivered frames with an IP header not reported good (RO, 64-bit).
    pub const RX_L3_CSUM_BAD: u32 = 0x0240;
    /// Delivered frames with a TCP/UDP checksum not reported good (RO, 64-bit).
    pub const RX_L4_CSUM_BAD: u32 = 0x0248;
    /// Frames the TX path sent (to the wire or the loopback) (RO, 64-bit).
    pub const TX_FRAMES: u32 = 0x0250;
    /// Delivered frames dropped because their receive queue had no posted WQE (RO, 64-bit).
    pub const RX_NO_WQE: u32 = 0x0258;
    /// Send WQEs executed (each frame, and each WQE completed in error) (RO, 64-bit).
    pub const TX_WQES: u32 = 0x0260;
    /// Receive completions written (RO, 64-bit).
    pub const RX_CQES: u32 = 0x0268;
    /// DMA reads answered with an error (RO, 64-bit).
    pub const DMA_RD_ERR: u32 = 0x0270;
    /// Delivered frames de-capsulated (VXLAN or NVGRE outer headers removed) (RO, 64-bit).
    pub const RX_DECAPPED: u32 = 0x0278;
    /// Delivered frames whose VXLAN or NVGRE header is malformed (delivered whole) (RO, 64-bit).
    pub const RX_TUNNEL_MALFORMED: u32 = 0x0280;
    /// LSO sends dropped whole: offsets, mss or header length the TSO engine cannot segment, or a send that ends inside its headers (RO, 64-bit).
    pub const TX_LSO_BAD: u32 = 0x0288;
    /// Frames dropped by the encapsulation engine: shorter than an Ethernet header (RO, 64-bit).
    pub const TX_ENCAP_DROP: u32 = 0x0290;
}

/// Memory regions: the host memory the NIC may touch through a data segment's lkey (lkey = table index). A gather or scatter outside its region completes in error (local protection).
pub mod mr {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x0300;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0100;
    /// Table entry the next writes address (RW).
    pub const SEL: u32 = 0x0300;
    /// Region start, bus address (low dword, then high) (RW).
    pub const BASE: u32 = 0x0304;
    /// Elements of `BASE`, 4 bytes apart.
    pub const BASE_COUNT: u32 = 2;
    /// Region length, bytes (low dword, then high) (RW).
    pub const LEN: u32 = 0x030c;
    /// Elements of `LEN`, 4 bytes apart.
    pub const LEN_COUNT: u32 = 2;
    /// Write the staged entry into the table (WO).
    pub const COMMIT: u32 = 0x0314;
    /// `COMMIT.valid`: 1: the entry SEL becomes BASE/LEN and valid; 0: it becomes invalid.
    pub const COMMIT_VALID: Field = Field { lsb: 0, bits: 1 };
}

/// Queue commands: create, destroy, reset from error and query EQs, CQs, SQs and RQs. Stage IN, write EXEC, poll STATUS.busy, read STATUS.status and OUT.
pub mod qcmd {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x0400;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0100;
    /// Command input words; their meaning per queue type is in the `qcmd_in` layout below (RW).
    pub const IN: u32 = 0x0400;
    /// Elements of `IN`, 4 bytes apart.
    pub const IN_COUNT: u32 = 8;
    /// Execute a command (WO).
    pub const EXEC: u32 = 0x0420;
    /// `EXEC.op`: 1 CREATE, 2 DESTROY, 3 RESET (error or ready state back to ready, indices kept), 4 QUERY.
    pub const EXEC_OP: Field = Field { lsb: 0, bits: 4 };
    /// `EXEC.qtype`: 0 EQ, 1 CQ, 2 SQ, 3 RQ.
    pub const EXEC_QTYPE: Field = Field { lsb: 4, bits: 4 };
    /// `EXEC.index`: queue number.
    pub const EXEC_INDEX: Field = Field { lsb: 16, bits: 16 };
    /// Result of the last command (RO).
    pub const STATUS: u32 = 0x0424;
    /// `STATUS.busy`: a command is executing.
    pub const STATUS_BUSY: Field = Field { lsb: 0, bits: 1 };
    /// `STATUS.status`: 0 OK, 3 bad parameter, 9 bad resource state, 10 bad index (mlx5 status codes).
    pub const STATUS_STATUS: Field = Field { lsb: 8, bits: 8 };
    /// QUERY result: 0 state (0 reset, 1 ready, 3 error), 1 producer counter, 2 consumer counter, 3 last error syndrome (bits 7:0) and its WQE counter (bits 31:16) (RO).
    pub const OUT: u32 = 0x0430;
    /// Elements of `OUT`, 4 bytes apart.
    pub const OUT_COUNT: u32 = 4;
}

/// RSS configuration (write-only; reads return 0). Entry `i` of a window is at its offset + 4 i.
pub mod rss {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x4000;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x4000;
    /// Toeplitz key, 40 bytes: word k holds key bytes 4k..4k+3, byte 4k in bits 31:24 (WO).
    pub const KEY: u32 = 0x4000;
    /// Elements of `KEY`, 4 bytes apart.
    pub const KEY_COUNT: u32 = 10;
    /// Hash-type enables (WO).
    pub const ENABLES: u32 = 0x4040;
    /// `ENABLES.ipv4`: hash IPv4 2-tuple.
    pub const ENABLES_IPV4: Field = Field { lsb: 0, bits: 1 };
    /// `ENABLES.tcp_ipv4`: hash TCP/IPv4 4-tuple.
    pub const ENABLES_TCP_IPV4: Field = Field { lsb: 1, bits: 1 };
    /// `ENABLES.udp_ipv4`: hash UDP/IPv4 4-tuple.
    pub const ENABLES_UDP_IPV4: Field = Field { lsb: 2, bits: 1 };
    /// `ENABLES.ipv6`: hash IPv6 2-tuple.
    pub const ENABLES_IPV6: Field = Field { lsb: 3, bits: 1 };
    /// `ENABLES.tcp_ipv6`: hash TCP/IPv6 4-tuple.
    pub const ENABLES_TCP_IPV6: Field = Field { lsb: 4, bits: 1 };
    /// `ENABLES.udp_ipv6`: hash UDP/IPv6 4-tuple.
    pub const ENABLES_UDP_IPV6: Field = Field { lsb: 5, bits: 1 };
    /// Indirection table: entry i (i < LIMITS.table_size) holds the receive queue for hash & (table_size - 1) (WO).
    pub const TABLE: u32 = 0x4400;
    /// Elements of `TABLE`, 4 bytes apart.
    pub const TABLE_COUNT: u32 = 2048;
}

/// Tunnel de-capsulation on receive (write-only; reads return 0): the VXLAN port and the steering table, (kind, VNI/VSID) -> receive queue. A frame whose well-formed tunnel hits an entry (or any well-formed tunnel with CTL.decap_all) is delivered as its inner frame, with the inner checksum verdicts and RSS, and the tunnel reported in its CQE; a hit's queue overrides RSS. A well-formed tunnel delivered whole, of a kind with CTL.inner_vxlan / inner_nvgre, gets the inner offloads: inner and outer checksum verdicts, RSS on the inner headers.
pub mod tunnel {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x8000;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x0800;
    /// UDP destination port recognised as VXLAN (bits 15:0; 4789 after reset) (WO).
    pub const VXLAN_PORT: u32 = 0x8000;
    /// Tunnel controls (WO).
    pub const CTL: u32 = 0x8004;
    /// `CTL.decap_all`: de-capsulate every well-formed tunnel, also without an entry (RSS picks the queue).
    pub const CTL_DECAP_ALL: Field = Field { lsb: 0, bits: 1 };
    /// `CTL.inner_vxlan`: inner offloads for VXLAN: a well-formed VXLAN frame delivered whole gets its inner headers parsed, their checksums verified (CQE tunneled, l3_ok/l4_ok cover both header sets) and RSS on the inner headers.
    pub const CTL_INNER_VXLAN: Field = Field { lsb: 1, bits: 1 };
    /// `CTL.inner_nvgre`: inner offloads for NVGRE, as inner_vxlan.
    pub const CTL_INNER_NVGRE: Field = Field { lsb: 2, bits: 1 };
    /// Receive queue the next STEER write gives its entry (WO).
    pub const STEER_QUEUE: u32 = 0x8008;
    /// Steering entry i (i < LIMITS.steer_entries); the lowest entry holding a key wins (WO).
    pub const STEER: u32 = 0x8400;
    /// Elements of `STEER`, 4 bytes apart.
    pub const STEER_COUNT: u32 = 256;
    /// `STEER.id`: VNI (VXLAN) or VSID (NVGRE).
    pub const STEER_ID: Field = Field { lsb: 0, bits: 24 };
    /// `STEER.kind`: 1 VXLAN, 2 NVGRE.
    pub const STEER_KIND: Field = Field { lsb: 24, bits: 2 };
    /// `STEER.valid`: 1: the entry steers (kind, id) to STEER_QUEUE; 0: the entry is cleared.
    pub const STEER_VALID: Field = Field { lsb: 31, bits: 1 };
}

/// Encapsulation contexts on transmit (write-only; reads return 0). Context c (c < ID.OVERLAY.encap_contexts) is the 16 words CTX[16c .. 16c+15]: the outer Ethernet, IPv4/IPv6 and VXLAN or NVGRE headers an SQ created with that context puts in front of every frame it sends. Writing any word of a context restarts its IPv4 ID counter; write a context while no SQ that uses it sends.
pub mod encap {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x9000;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x1000;
    /// Context word 16c + w: word w of context c; their meaning is in the `encap_ctx` layout below (the outer Ethernet addresses, the outer IP header's fields and flags, the tunnel) (WO).
    pub const CTX: u32 = 0x9000;
    /// Elements of `CTX`, 4 bytes apart.
    pub const CTX_COUNT: u32 = 768;
}

/// User access region (mlx5 UAR page 0): doorbells. Payloads are raw descriptor bytes in memory order (big-endian fields), written as two dwords; the device acts on the second.
pub mod uar {
    #[allow(unused_imports)]
    use super::Field;
    /// First byte of the block.
    pub const BLOCK_BASE: u32 = 0x10000;
    /// Bytes the block spans.
    pub const BLOCK_SPAN: u32 = 0x1000;
    /// CQ arm doorbell: bytes 0-3 = BE32 (arm_sn << 28 | cmd | consumer index), bytes 4-7 = BE32 CQN; cmd 0 arms for the next completion (WO).
    pub const CQ_DB: u32 = 0x10020;
    /// Elements of `CQ_DB`, 4 bytes apart.
    pub const CQ_DB_COUNT: u32 = 2;
    /// EQ doorbell, update the consumer index and arm: BE32 (eqn << 24 | consumer index) (WO).
    pub const EQ_DB_ARM: u32 = 0x10040;
    /// EQ doorbell, update the consumer index only: BE32 (eqn << 24 | consumer index) (WO).
    pub const EQ_DB_NOARM: u32 = 0x10048;
    /// Send doorbell: the first 8 bytes of the last posted WQE's control segment (opmod_idx_opcode, qpn_ds); the SQ's doorbell record holds the producer counter. With SQ_BF it is also the head of the BlueFlame buffer (0x800-0x8FF): the write of its second dword commits (WO).
    pub const SQ_DB: u32 = 0x10800;
    /// Elements of `SQ_DB`, 4 bytes apart.
    pub const SQ_DB_COUNT: u32 = 2;
    /// BlueFlame: bytes 8-255 of a WQE of 64-256 bytes, written here (in any order, after the WQE into the ring and the doorbell record) before its SQ_DB doorbell, which then writes bytes 0-7. The doorbell uses the WQE without fetching it (nor the doorbell record, the producer counter being the WQE's end) when its DS count is 1-16, every dword of its 16*DS bytes was written since the previous doorbell, its SQ is ready and its wqe_index is the SQ's consumer counter; otherwise it acts as a plain doorbell (the WQE is fetched from the ring; a bad one ends in an error CQE there) (WO).
    pub const SQ_BF: u32 = 0x10808;
    /// Elements of `SQ_BF`, 4 bytes apart.
    pub const SQ_BF_COUNT: u32 = 62;
}

/// Descriptor layouts in host memory (big-endian, mlx5).
pub mod desc {
    /// Send WQE control segment (first 16 bytes of every send WQE).
    pub mod ctrl_seg {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 16;
        /// send opcode (opcode group).
        pub const OPCODE: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 8,
        };
        /// producer counter of the WQE's first WQEBB.
        pub const WQE_INDEX: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 8,
            bits: 16,
        };
        /// opcode modifier.
        pub const OPMOD: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 24,
            bits: 8,
        };
        /// 16-byte segments in the WQE, this one included.
        pub const DS: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 6,
        };
        /// send queue number.
        pub const QPN: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 8,
            bits: 24,
        };
        /// WQE signature (0).
        pub const SIGNATURE: DescField = DescField {
            byte: 0x08,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// fence, completion and solicited bits (fm_ce_se group).
        pub const FM_CE_SE: DescField = DescField {
            byte: 0x0b,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// immediate / TIS number << 8.
        pub const IMM: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 0,
            bits: 32,
        };
    }
    /// Ethernet segment (after the control segment of an Ethernet send WQE).
    pub mod eth_seg {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 16;
        /// LSO: software-parser offset, 2-byte units from the frame's start, of the outer L4 header (tunnelled: the outer UDP or GRE header) or, when swp_inner_l3_offset is 0, of the TCP header.
        pub const SWP_OUTER_L4_OFFSET: DescField = DescField {
            byte: 0x00,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// LSO: software-parser offset (2-byte units) of the outer IP header, or when swp_inner_l3_offset is 0 of the only IP header.
        pub const SWP_OUTER_L3_OFFSET: DescField = DescField {
            byte: 0x01,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// LSO, tunnelled: software-parser offset (2-byte units) of the inner TCP header.
        pub const SWP_INNER_L4_OFFSET: DescField = DescField {
            byte: 0x02,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// LSO: software-parser offset (2-byte units) of the inner IP header; 0: the frame is not tunnelled.
        pub const SWP_INNER_L3_OFFSET: DescField = DescField {
            byte: 0x03,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// checksum requests (cs_flags group).
        pub const CS_FLAGS: DescField = DescField {
            byte: 0x04,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// LSO: software-parser flags (swp_flags group): tunnelled, OUTER_L4_UDP says VXLAN (else NVGRE), OUTER_L3_IPV6 and INNER_L3_IPV6 the IP versions; not tunnelled, OUTER_L3_IPV6 says the IP header is IPv6 (as mlx5e fills them); ignored by other opcodes.
        pub const SWP_FLAGS: DescField = DescField {
            byte: 0x05,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// LSO: payload bytes per segment, 1..=16383 (0: no LSO; other opcodes ignore it).
        pub const MSS: DescField = DescField {
            byte: 0x06,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// bytes of frame header inlined from byte 14 on (when vlan_cmd bit 15 is clear); LSO: every header through the (inner) TCP header, at least 14, the segments' header length.
        pub const INLINE_HDR_SZ: DescField = DescField {
            byte: 0x0c,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// bit 15 set (0x8000, VLAN_INSERT): no inline header; insert a C-VLAN with vlan_tci.
        pub const VLAN_CMD: DescField = DescField {
            byte: 0x0c,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// first 2 inline header bytes.
        pub const INLINE_HDR_START: DescField = DescField {
            byte: 0x0e,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// with VLAN_INSERT: the TCI to insert.
        pub const VLAN_TCI: DescField = DescField {
            byte: 0x0e,
            container: 2,
            lsb: 0,
            bits: 16,
        };
    }
    /// Data segment (gather on send, scatter on receive).
    pub mod data_seg {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 16;
        /// bytes (send: 1..=max; receive: buffer size).
        pub const BYTE_COUNT: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 31,
        };
        /// inline data segment (send only; data follows in the WQE).
        pub const INLINE: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 31,
            bits: 1,
        };
        /// memory region (MR table index); 0x100 ends a receive scatter list.
        pub const LKEY: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// bus address.
        pub const ADDR: DescField = DescField {
            byte: 0x08,
            container: 8,
            lsb: 0,
            bits: 64,
        };
    }
    /// Completion queue entry (64 bytes).
    pub mod cqe {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 64;
        /// the frame was delivered whole with the inner offloads (TUNNEL_CTL inner_vxlan / inner_nvgre): l3_ok and l4_ok cover both the outer and the inner headers (an outer without TCP/UDP, NVGRE's, adds no L4 checksum), RSS hashed the inner ones; l3/l4 types and check_sum are the outer headers' (mlx5: the driver reports CHECKSUM_UNNECESSARY at level 1).
        pub const TUNNELED: DescField = DescField {
            byte: 0x00,
            container: 1,
            lsb: 0,
            bits: 1,
        };
        /// the frame was de-capsulated: l3/l4 types, verdicts, checksum and RSS are the inner frame's (nicgen's bit: mlx5 has none; bit 1 is the outer-IPv6 flag in DPDK, bits 4:3 TLS status in newer kernels).
        pub const DECAPPED: DescField = DescField {
            byte: 0x00,
            container: 1,
            lsb: 7,
            bits: 1,
        };
        /// VNI (VXLAN) or VSID (NVGRE) of a well-formed tunnel, de-capsulated or not; 0 otherwise.
        pub const TUNNEL_ID: DescField = DescField {
            byte: 0x28,
            container: 4,
            lsb: 0,
            bits: 24,
        };
        /// tunnel the outer headers announce: 0 none, 1 VXLAN, 2 NVGRE.
        pub const TUNNEL_KIND: DescField = DescField {
            byte: 0x28,
            container: 4,
            lsb: 24,
            bits: 2,
        };
        /// why that tunnel is malformed, 0 for none: 1 short header, 2 beyond the parser's window, 3 VXLAN I flag clear, 4 GRE version, 5 GRE flags, 6 GRE protocol, 7 inner frame too short.
        pub const TUNNEL_BAD: DescField = DescField {
            byte: 0x28,
            container: 4,
            lsb: 26,
            bits: 3,
        };
        /// striding RQ: the WQE (RQ WQE counter) the frame's strides are in, filler and error CQEs too; 0 in other CQEs.
        pub const WQE_ID: DescField = DescField {
            byte: 0x02,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// RSS hash (RX).
        pub const RSS_HASH_RESULT: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// bits 3:2 IP type (1 IPv4, 2 IPv6), bits 7:6 L4 type (1 TCP, 2 UDP).
        pub const RSS_HASH_TYPE: DescField = DescField {
            byte: 0x10,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// checksum-complete: ones'-complement sum after the L3 header.
        pub const CHECK_SUM: DescField = DescField {
            byte: 0x14,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// flags_rqpn L3 header type: 1 IPv6, 2 IPv4.
        pub const L3_HDR: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 24,
            bits: 2,
        };
        /// hds_ip_ext: frame good at L2.
        pub const L2_OK: DescField = DescField {
            byte: 0x1c,
            container: 1,
            lsb: 0,
            bits: 1,
        };
        /// hds_ip_ext: IPv4 header checksum good (IPv6: header parsed).
        pub const L3_OK: DescField = DescField {
            byte: 0x1c,
            container: 1,
            lsb: 1,
            bits: 1,
        };
        /// hds_ip_ext: TCP/UDP checksum good.
        pub const L4_OK: DescField = DescField {
            byte: 0x1c,
            container: 1,
            lsb: 2,
            bits: 1,
        };
        /// l4_l3_hdr_type: VLAN tag stripped.
        pub const CV: DescField = DescField {
            byte: 0x1d,
            container: 1,
            lsb: 0,
            bits: 1,
        };
        /// l4_l3_hdr_type: IP fragment.
        pub const IP_FRAG: DescField = DescField {
            byte: 0x1d,
            container: 1,
            lsb: 7,
            bits: 1,
        };
        /// l4_l3_hdr_type: 0 none, 1 IPv6, 2 IPv4.
        pub const L3_TYPE: DescField = DescField {
            byte: 0x1d,
            container: 1,
            lsb: 2,
            bits: 2,
        };
        /// l4_l3_hdr_type: 0 none, 1 TCP, 2 UDP.
        pub const L4_TYPE: DescField = DescField {
            byte: 0x1d,
            container: 1,
            lsb: 4,
            bits: 3,
        };
        /// stripped VLAN TCI.
        pub const VLAN_INFO: DescField = DescField {
            byte: 0x1e,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// RX: bytes written; send: bytes sent; compressed-session title: its completion count (2..=8); striding RQ: the three fields below.
        pub const BYTE_CNT: DescField = DescField {
            byte: 0x2c,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// striding RQ: frame length.
        pub const MPWRQ_LEN: DescField = DescField {
            byte: 0x2c,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// striding RQ: strides consumed (filler: the strides skipped).
        pub const MPWRQ_STRIDES: DescField = DescField {
            byte: 0x2c,
            container: 4,
            lsb: 16,
            bits: 15,
        };
        /// striding RQ: filler CQE, no frame (the WQE's strides left, skipped).
        pub const MPWRQ_FILLER: DescField = DescField {
            byte: 0x2c,
            container: 4,
            lsb: 31,
            bits: 1,
        };
        /// device cycle counter at completion (error CQEs: bytes 0x36-0x37 hold vendor_err_synd and syndrome instead).
        pub const TIMESTAMP: DescField = DescField {
            byte: 0x30,
            container: 8,
            lsb: 0,
            bits: 64,
        };
        /// error CQE: vendor syndrome (nicgen: the failing segment index).
        pub const VENDOR_ERR_SYND: DescField = DescField {
            byte: 0x36,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// error CQE: syndrome (syndrome group).
        pub const SYNDROME: DescField = DescField {
            byte: 0x37,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// SQ / RQ number.
        pub const QPN: DescField = DescField {
            byte: 0x38,
            container: 4,
            lsb: 0,
            bits: 24,
        };
        /// send completions: opcode of the completed WQE.
        pub const S_WQE_OPCODE: DescField = DescField {
            byte: 0x38,
            container: 4,
            lsb: 24,
            bits: 8,
        };
        /// WQE completed (send: the last of the batch; striding RQ: the frame's first stride in WQE wqe_id).
        pub const WQE_COUNTER: DescField = DescField {
            byte: 0x3c,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// owner bit: (producer counter >> log_size) & 1.
        pub const OWNER: DescField = DescField {
            byte: 0x3f,
            container: 1,
            lsb: 0,
            bits: 1,
        };
        /// CQE format (cqe_format group): FULL, or COMPRESSED in the title of a compressed session (mini_cqe array in the next slot).
        pub const FORMAT: DescField = DescField {
            byte: 0x3f,
            container: 1,
            lsb: 2,
            bits: 2,
        };
        /// CQE opcode (cqe_opcode group).
        pub const OPCODE: DescField = DescField {
            byte: 0x3f,
            container: 1,
            lsb: 4,
            bits: 4,
        };
    }
    /// Mini CQE of a compressed session (mlx5_mini_cqe8): eight of them fill the slot after the title; mini i is completion i of the session. Its first word by format: receive completions hash (rx_hash_result) or checksum (checksum, stridx); send completions wqe_counter and s_wqe_opcode.
    pub mod mini_cqe {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 8;
        /// hash format: the completion's RSS hash.
        pub const RX_HASH_RESULT: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// checksum format: the completion's check_sum.
        pub const CHECKSUM: DescField = DescField {
            byte: 0x00,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// checksum format: stride index (0: no striding RQ).
        pub const STRIDX: DescField = DescField {
            byte: 0x02,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// send completions: the completion's wqe_counter.
        pub const WQE_COUNTER: DescField = DescField {
            byte: 0x00,
            container: 2,
            lsb: 0,
            bits: 16,
        };
        /// send completions: the completion's s_wqe_opcode.
        pub const S_WQE_OPCODE: DescField = DescField {
            byte: 0x02,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// the completion's byte_cnt.
        pub const BYTE_CNT: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 32,
        };
    }
    /// Event queue entry (64 bytes).
    pub mod eqe {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 64;
        /// event type (event_type group).
        pub const EVENT_TYPE: DescField = DescField {
            byte: 0x01,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// event sub-type.
        pub const SUB_TYPE: DescField = DescField {
            byte: 0x03,
            container: 1,
            lsb: 0,
            bits: 8,
        };
        /// completion event: the CQ.
        pub const CQN: DescField = DescField {
            byte: 0x38,
            container: 4,
            lsb: 0,
            bits: 24,
        };
        /// owner bit: (producer counter >> log_size) & 1.
        pub const OWNER: DescField = DescField {
            byte: 0x3f,
            container: 1,
            lsb: 0,
            bits: 1,
        };
    }
    /// Doorbell record in host memory (8 bytes per queue). RQ: receive counter; SQ: send counter; CQ: set_ci and the arm word.
    pub mod dbr {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 8;
        /// RQ producer counter (WQEs posted).
        pub const RQ_PC: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// SQ producer counter (WQEBBs posted).
        pub const SQ_PC: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// CQ consumer index.
        pub const CQ_CI: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 24,
        };
        /// CQ arm word: arm_sn << 28 | cmd | ci.
        pub const CQ_ARM: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 32,
        };
    }
    /// encap.CTX words of one encapsulation context (little-endian register words, word k at byte 4k, as qcmd_in): what an SQ created with it puts in front of every frame, the outer Ethernet header (no VLAN tag: the TX path's VLAN insert tags the outer frame), the outer IPv4 or IPv6 header and the VXLAN (UDP) or NVGRE header. The outer lengths, the IPv4 ID (a per-context counter) and checksum and the UDP source port (a hash of the inner flow) are the device's.
    pub mod encap_ctx {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 64;
        /// outer destination MAC bytes 0-3 (byte 0 in bits 31:24).
        pub const DST_MAC_HI: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// outer destination MAC bytes 4-5.
        pub const DST_MAC_LO: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 16,
            bits: 16,
        };
        /// outer source MAC bytes 0-1.
        pub const SRC_MAC_HI: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// outer source MAC bytes 2-5.
        pub const SRC_MAC_LO: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// outer IPv4 TTL / IPv6 hop limit.
        pub const TTL: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 0,
            bits: 8,
        };
        /// outer IPv4 TOS / IPv6 traffic class.
        pub const TOS: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 8,
            bits: 8,
        };
        /// the outer IP header is IPv6.
        pub const IPV6: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 16,
            bits: 1,
        };
        /// the tunnel is NVGRE (GRE with key, protocol 0x6558); 0: VXLAN.
        pub const NVGRE: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 17,
            bits: 1,
        };
        /// VXLAN over IPv4: compute the outer UDP checksum (over IPv6 it always is).
        pub const UDP_CHECKSUM: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 18,
            bits: 1,
        };
        /// outer IPv4: don't fragment.
        pub const DF: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 19,
            bits: 1,
        };
        /// VXLAN VNI or NVGRE VSID.
        pub const TUNNEL_ID: DescField = DescField {
            byte: 0x10,
            container: 4,
            lsb: 0,
            bits: 24,
        };
        /// NVGRE FlowID.
        pub const FLOW_ID: DescField = DescField {
            byte: 0x10,
            container: 4,
            lsb: 24,
            bits: 8,
        };
        /// VXLAN: outer UDP destination port.
        pub const UDP_PORT: DescField = DescField {
            byte: 0x14,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// outer IPv6 flow label.
        pub const FLOW_LABEL: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 0,
            bits: 20,
        };
        /// outer source address bytes 0-7 (IPv6, big-endian).
        pub const SRC_ADDR_HI: DescField = DescField {
            byte: 0x20,
            container: 8,
            lsb: 0,
            bits: 64,
        };
        /// outer source address bytes 8-15 (IPv6); IPv4: the address in bits 31:0.
        pub const SRC_ADDR_LO: DescField = DescField {
            byte: 0x28,
            container: 8,
            lsb: 0,
            bits: 64,
        };
        /// outer destination address bytes 0-7 (IPv6, big-endian).
        pub const DST_ADDR_HI: DescField = DescField {
            byte: 0x30,
            container: 8,
            lsb: 0,
            bits: 64,
        };
        /// outer destination address bytes 8-15 (IPv6); IPv4: the address in bits 31:0.
        pub const DST_ADDR_LO: DescField = DescField {
            byte: 0x38,
            container: 8,
            lsb: 0,
            bits: 64,
        };
    }
    /// QCMD.IN words for CREATE, by queue type (little-endian register words, word k at byte 4k). Ring and doorbell-record addresses are bus addresses; rings are 4 KiB aligned.
    pub mod qcmd_in {
        use super::super::DescField;
        /// Bytes of the layout.
        pub const SIZE: usize = 32;
        /// all: ring base bits 31:0.
        pub const RING_LO: DescField = DescField {
            byte: 0x00,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// all: ring base bits 63:32.
        pub const RING_HI: DescField = DescField {
            byte: 0x04,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// all: log2 entries (EQ, CQ: 64-byte entries; SQ: 64-byte WQEBBs; RQ: WQEs).
        pub const LOG_SIZE: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 0,
            bits: 5,
        };
        /// RQ: log2 bytes per receive WQE (4..=9; striding: 5..=9).
        pub const LOG_STRIDE: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 8,
            bits: 4,
        };
        /// RQ: striding (multi-packet) RQ: each WQE is a 16-byte next segment and one data segment, a buffer of strides.
        pub const STRIDING: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 16,
            bits: 1,
        };
        /// RQ striding: log2 strides per WQE (1..=14).
        pub const LOG_NUM_STRIDES: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 20,
            bits: 4,
        };
        /// RQ striding: log2 bytes per stride (6..=13).
        pub const LOG_STRIDE_SIZE: DescField = DescField {
            byte: 0x08,
            container: 4,
            lsb: 24,
            bits: 4,
        };
        /// CQ, SQ, RQ: doorbell record bits 31:0.
        pub const DBR_LO: DescField = DescField {
            byte: 0x0c,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// CQ, SQ, RQ: doorbell record bits 63:32.
        pub const DBR_HI: DescField = DescField {
            byte: 0x10,
            container: 4,
            lsb: 0,
            bits: 32,
        };
        /// EQ: interrupt vector; CQ: its EQ; SQ, RQ: their CQ.
        pub const LINK: DescField = DescField {
            byte: 0x14,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// EQ: interrupt after this many events (0 = 1).
        pub const MOD_COUNT: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 0,
            bits: 16,
        };
        /// EQ: or after this many 1024-cycle ticks since the first pending event (0 = off).
        pub const MOD_PERIOD: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 16,
            bits: 16,
        };
        /// CQ: CQE compression (runs of like completions as a title and mini CQEs).
        pub const CQE_COMP: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 0,
            bits: 1,
        };
        /// CQ: mini CQE format of receive completions (mini_cqe_format group).
        pub const MINI_FORMAT: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 1,
            bits: 2,
        };
        /// CQ: cycles a session (CQEs merged into one write) waits for more completions; 0: it takes only those already waiting.
        pub const SESSION: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 16,
            bits: 16,
        };
        /// SQ: the encapsulation context (below ID.OVERLAY.encap_contexts, else bad parameter) of every frame the SQ sends, when encap is set.
        pub const ENCAP_CTX: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 0,
            bits: 8,
        };
        /// SQ: encapsulate every frame (every segment of an LSO send) with context encap_ctx (encap block).
        pub const ENCAP: DescField = DescField {
            byte: 0x18,
            container: 4,
            lsb: 31,
            bits: 1,
        };
    }
}

/// Numbered constants shared with the NIC.
pub mod consts {
    /// Queue types (QCMD_EXEC.type).
    pub mod qtype {
        /// event queue.
        pub const EQ: u32 = 0x0;
        /// completion queue.
        pub const CQ: u32 = 0x1;
        /// send queue.
        pub const SQ: u32 = 0x2;
        /// receive queue.
        pub const RQ: u32 = 0x3;
    }
    /// Queue commands (QCMD.EXEC.op).
    pub mod qcmd_op {
        /// create the queue from IN; ready.
        pub const CREATE: u32 = 0x1;
        /// forget the queue.
        pub const DESTROY: u32 = 0x2;
        /// leave the error state: ready, indices kept.
        pub const RESET: u32 = 0x3;
        /// state and indices into OUT.
        pub const QUERY: u32 = 0x4;
    }
    /// QCMD.STATUS.status (mlx5 command status codes).
    pub mod qcmd_status {
        /// done.
        pub const OK: u32 = 0x0;
        /// a size, stride or link out of range.
        pub const BAD_PARAM: u32 = 0x3;
        /// the queue is not in a state the command applies to.
        pub const BAD_RES_STATE: u32 = 0x9;
        /// the queue number is out of range.
        pub const BAD_INDEX: u32 = 0xa;
    }
    /// Queue states (QCMD.OUT word 0).
    pub mod qstate {
        /// not created.
        pub const RST: u32 = 0x0;
        /// ready.
        pub const RDY: u32 = 0x1;
        /// error: stopped until RESET.
        pub const ERR: u32 = 0x3;
    }
    /// Send WQE opcodes (ctrl_seg.opcode).
    pub mod opcode {
        /// no operation (completes).
        pub const NOP: u32 = 0x0;
        /// send a frame.
        pub const SEND: u32 = 0xa;
        /// send a super-frame, segmented by the TSO engine (eth_seg mss and software-parser offsets, every header through TCP inline); the super-frame is at most the largest frame, ID.MTU + 22 bytes.
        pub const LSO: u32 = 0xe;
        /// enhanced multi-packet send: one packet per data segment, one CQE.
        pub const ENHANCED_MPSW: u32 = 0x29;
    }
    /// ctrl_seg.fm_ce_se bits.
    pub mod fm_ce_se {
        /// write a CQE for this WQE (always).
        pub const CQ_UPDATE: u32 = 0x8;
        /// solicited event.
        pub const SOLICITED: u32 = 0x2;
    }
    /// eth_seg.cs_flags bits.
    pub mod cs_flags {
        /// insert the IPv4 header checksum.
        pub const L3_CSUM: u32 = 0x40;
        /// insert the TCP/UDP checksum.
        pub const L4_CSUM: u32 = 0x80;
        /// tunnelled: the inner IPv4 header checksum (mlx5e sets it; nicgen ignores it: an LSO send's segments get every checksum from the TSO engine).
        pub const L3_INNER_CSUM: u32 = 0x10;
        /// tunnelled: the inner TCP/UDP checksum (ignored by nicgen, as L3_INNER_CSUM).
        pub const L4_INNER_CSUM: u32 = 0x20;
    }
    /// eth_seg.swp_flags bits (LSO WQEs).
    pub mod swp_flags {
        /// tunnelled: the inner IP header is IPv6.
        pub const INNER_L3_IPV6: u32 = 0x1;
        /// tunnelled: the inner L4 header is UDP (not looked at: nicgen segments TCP only).
        pub const INNER_L4_UDP: u32 = 0x2;
        /// the outer IP header (not tunnelled: the only one) is IPv6.
        pub const OUTER_L3_IPV6: u32 = 0x10;
        /// tunnelled: the outer L4 header is UDP (VXLAN); clear: GRE (NVGRE).
        pub const OUTER_L4_UDP: u32 = 0x20;
    }
    /// CQE opcodes (cqe.opcode).
    pub mod cqe_opcode {
        /// send completion.
        pub const REQ: u32 = 0x0;
        /// receive completion.
        pub const RESP_SEND: u32 = 0x2;
        /// send completion in error.
        pub const REQ_ERR: u32 = 0xd;
        /// receive completion in error.
        pub const RESP_ERR: u32 = 0xe;
        /// never written by the NIC (initial value).
        pub const INVALID: u32 = 0xf;
    }
    /// CQE formats (cqe.format).
    pub mod cqe_format {
        /// a full CQE.
        pub const FULL: u32 = 0x0;
        /// title of a compressed session: byte_cnt completions, mini CQEs in the next slot.
        pub const COMPRESSED: u32 = 0x3;
    }
    /// Mini CQE formats of receive completions (qcmd_in.mini_format).
    pub mod mini_cqe_format {
        /// mini CQEs carry rx_hash_result; the session shares check_sum.
        pub const HASH: u32 = 0x0;
        /// mini CQEs carry check_sum; the session shares the RSS hash.
        pub const CSUM: u32 = 0x1;
    }
    /// Error CQE syndromes (cqe.syndrome).
    pub mod syndrome {
        /// zero length or a length over the maximum.
        pub const LOCAL_LENGTH: u32 = 0x1;
        /// unknown opcode or malformed WQE.
        pub const LOCAL_QP_OP: u32 = 0x2;
        /// gather/scatter outside the registered memory region.
        pub const LOCAL_PROT: u32 = 0x4;
        /// flushed: the queue was in error.
        pub const WR_FLUSH: u32 = 0x5;
        /// DMA read answered with an error.
        pub const LOCAL_ACCESS: u32 = 0x11;
    }
    /// EQE event types (eqe.event_type).
    pub mod event_type {
        /// a CQE was written to an armed CQ.
        pub const COMPLETION: u32 = 0x0;
        /// CQ overrun.
        pub const CQ_ERROR: u32 = 0x4;
        /// a work queue went to the error state.
        pub const WQ_CATAS: u32 = 0x5;
    }
    /// Sizes and special values.
    pub mod misc {
        /// send WQE basic block, bytes.
        pub const WQEBB: u32 = 0x40;
        /// CQE and EQE size, bytes.
        pub const CQE_SIZE: u32 = 0x40;
        /// ends a receive scatter list.
        pub const INVALID_LKEY: u32 = 0x100;
        /// largest send WQE, 16-byte segments (4 WQEBBs).
        pub const MAX_SEND_DS: u32 = 0x10;
        /// largest frame a send WQE may describe, bytes.
        pub const MAX_FRAME: u32 = 0x4000;
    }
}
