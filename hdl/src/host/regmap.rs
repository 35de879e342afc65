//! The register and descriptor map, as data: the one source of BAR 0's layout, the descriptor
//! layouts the NIC and the driver exchange in host memory, and the numbered constants (opcodes,
//! flags, syndromes).
//!
//! From it come (docs/DESIGN.md, decision 4): the HDL address decoder
//! (`crate::host::bar_regs`, at elaboration), the driver's constants (`sw-driver/src/regs.rs`)
//! and the register document (`docs/REGISTERS.md`); the last two are committed and rendered by
//! `nicgen regmap --write`, and a test (`testbench/system/regmap.rs`) fails, naming that
//! command, when either is stale.
//!
//! Register values are little-endian numbers on the 32-bit BAR. Descriptors (WQE segments, CQEs,
//! EQEs, doorbell records) and the doorbell payloads written to the UAR page are mlx5's:
//! big-endian fields at fixed byte offsets (`docs/wire-formats.md` §4). The control plane
//! (queue creation, memory regions, RSS) is nicgen's own small register set instead of the
//! mlx5 command interface (`docs/wire-formats.md` §4.9, "the alternative").

/// How the host may access a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only: the hardware drives the value.
    Ro,
    /// Read-only 64-bit value at `offset` (low dword) and `offset + 4` (high dword); reading the
    /// low dword latches the high one, so low-then-high reads one consistent value.
    Ro64,
    /// Read-write: a register in the decoder, reset to `reset`, read back as written.
    Rw,
    /// Write-only: a write is a one-cycle strobe with its data to the hardware; reads return 0.
    Wo,
}

/// A bit field of a register (or of a descriptor field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub lsb: u32,
    pub bits: u32,
    pub doc: &'static str,
}

/// One register, or an array of `count` registers 4 bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg {
    pub name: &'static str,
    /// Byte offset inside the block.
    pub offset: u32,
    pub access: Access,
    /// Elements (1 for a plain register); element `i` is at `offset + 4 i`.
    pub count: u32,
    /// Reset value (`Rw` only).
    pub reset: u32,
    pub doc: &'static str,
    pub fields: &'static [Field],
}

/// A block of registers at a base offset of BAR 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub name: &'static str,
    pub base: u32,
    /// Bytes the block spans (a power of two; the decoder matches `base` on the bits above).
    pub span: u32,
    pub doc: &'static str,
    pub regs: &'static [Reg],
}

/// A field of a descriptor in host memory: big-endian, `bits` wide, ending at byte
/// `byte + bits/8 - 1` for whole-byte fields; sub-byte fields name their bit range in `bit`
/// (the field's lsb inside the big-endian value of `container` bytes at `byte`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescField {
    pub name: &'static str,
    /// First byte of the big-endian container.
    pub byte: u32,
    /// Bytes of the container (1, 2, 4 or 8).
    pub container: u32,
    /// Lsb of the field inside the container's value.
    pub lsb: u32,
    pub bits: u32,
    pub doc: &'static str,
}

/// A descriptor layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub name: &'static str,
    pub bytes: u32,
    pub doc: &'static str,
    pub fields: &'static [DescField],
}

/// A group of named numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstGroup {
    pub name: &'static str,
    pub doc: &'static str,
    pub values: &'static [(&'static str, u32, &'static str)],
}

const fn reg(name: &'static str, offset: u32, access: Access, doc: &'static str) -> Reg {
    Reg {
        name,
        offset,
        access,
        count: 1,
        reset: 0,
        doc,
        fields: &[],
    }
}

const fn f(name: &'static str, lsb: u32, bits: u32, doc: &'static str) -> Field {
    Field {
        name,
        lsb,
        bits,
        doc,
    }
}

const fn d(
    name: &'static str,
    byte: u32,
    container: u32,
    lsb: u32,
    bits: u32,
    doc: &'static str,
) -> DescField {
    DescField {
        name,
        byte,
        container,
        lsb,
        bits,
        doc,
    }
}

use Access::*;

/// "NICG" in ASCII, the first register of BAR 0.
pub const MAGIC: u32 = 0x4E49_4347;

/// Queue types of the queue-command interface.
pub const QTYPES: ConstGroup = ConstGroup {
    name: "qtype",
    doc: "Queue types (QCMD_EXEC.type).",
    values: &[
        ("EQ", 0, "event queue"),
        ("CQ", 1, "completion queue"),
        ("SQ", 2, "send queue"),
        ("RQ", 3, "receive queue"),
    ],
};

/// Every block of BAR 0, in address order.
pub const BLOCKS: &[Block] = &[
    Block {
        name: "id",
        base: 0x0000,
        span: 0x100,
        doc: "Identification: what this device is and how it was generated (read-only).",
        regs: &[
            reg("MAGIC", 0x00, Ro, "0x4E494347 (\"NICG\"): a nicgen NIC is behind this BAR."),
            Reg {
                fields: &[
                    f("patch", 0, 8, "generator patch version"),
                    f("minor", 8, 8, "generator minor version"),
                    f("major", 16, 8, "generator major version"),
                    f("abi", 24, 8, "register-map ABI revision (this map: 1)"),
                ],
                ..reg("VERSION", 0x04, Ro, "Versions of the generator and of this register map.")
            },
            reg("DATA_BITS", 0x08, Ro, "Datapath (and DMA) width in bits."),
            reg("CLOCK_KHZ", 0x0C, Ro, "The preset's clock, kHz (device time base)."),
            reg("MTU", 0x10, Ro, "Largest L2 payload accepted, bytes (frames up to 14 + 4 x VLAN tags + MTU without FCS)."),
            Reg {
                fields: &[
                    f("queues", 0, 16, "send, receive and completion queues (each)"),
                    f("eqs", 16, 8, "event queues = interrupt vectors"),
                    f("mrs", 24, 8, "memory-region table entries"),
                ],
                ..reg("QUEUES", 0x14, Ro, "Queue counts.")
            },
            Reg {
                fields: &[
                    f("table_size", 0, 16, "RSS indirection-table entries"),
                    f("log_max_wq", 16, 8, "largest log2 ring size for SQs, RQs, CQs and EQs"),
                    f("steer_entries", 24, 8, "tunnel steering-table entries (0: no tunnel de-capsulation)"),
                ],
                ..reg("LIMITS", 0x18, Ro, "Table and ring limits.")
            },
            Reg {
                fields: &[
                    f("csum", 0, 1, "TX checksum insertion and RX verification (mlx5 cs_flags)"),
                    f("rss", 1, 1, "Toeplitz RSS with indirection table"),
                    f("vlan", 2, 1, "VLAN strip on RX, insert on TX"),
                    f("loopback", 3, 1, "MAC-side loopback (DEV.CTRL.loopback)"),
                    f("tunnels", 4, 1, "VXLAN/NVGRE recognition and de-capsulation on receive (the tunnel block)"),
                    f("encap", 5, 1, "VXLAN/NVGRE encapsulation on transmit (the encap block, per-SQ contexts)"),
                    f("tso", 6, 1, "TCP segmentation offload (LSO WQEs), plain and tunnelled"),
                ],
                ..reg("CAPS", 0x1C, Ro, "Capabilities.")
            },
            Reg {
                count: 4,
                ..reg("PRESET_NAME", 0x20, Ro, "Preset name, 16 ASCII bytes NUL-padded, byte 0 in bits 7:0 of the first register.")
            },
            Reg {
                count: 2,
                ..reg("CONFIG_HASH", 0x30, Ro, "First 8 bytes of SHA-256 of the preset's canonical TOML, byte 0 in bits 7:0 of the first register.")
            },
            Reg {
                count: 5,
                ..reg("GIT_HASH", 0x40, Ro, "The generator's git commit (20 bytes, byte 0 in bits 7:0 of the first register; zero when unknown).")
            },
            Reg {
                fields: &[f("dirty", 0, 1, "the generator's tree had uncommitted changes")],
                ..reg("GIT_FLAGS", 0x54, Ro, "Flags of GIT_HASH.")
            },
            Reg {
                fields: &[
                    f("encap_contexts", 0, 8, "TX encapsulation contexts (0: no encapsulation engine)"),
                    f("max_mss", 8, 14, "largest LSO mss (0: no TSO engine)"),
                    f("log_max_lso", 22, 5, "log2 of the largest LSO send in bytes, headers included (18: 256 KiB, as mlx5's max_lso_cap; 0: no TSO engine)"),
                ],
                ..reg("OVERLAY", 0x58, Ro, "Overlay engine limits on transmit.")
            },
        ],
    },
    Block {
        name: "dev",
        base: 0x0100,
        span: 0x100,
        doc: "Device control and time.",
        regs: &[
            Reg {
                fields: &[f("loopback", 0, 1, "MAC-side loopback: TX frames return through the RX path (changes between frames)")],
                ..reg("CTRL", 0x00, Rw, "Device control.")
            },
            Reg {
                fields: &[f("loopback_active", 0, 1, "the loopback mode in force")],
                ..reg("STATUS", 0x04, Ro, "Device status.")
            },
            reg("HEALTH", 0x08, Ro, "Health counter: increments every 1024 cycles while the device runs."),
            reg("SCRATCH", 0x0C, Rw, "Scratch register for the driver's access test."),
            reg("TIMER", 0x10, Ro64, "Free-running cycle counter (64 bits; CQE timestamps)."),
        ],
    },
    Block {
        name: "stats",
        base: 0x0200,
        span: 0x100,
        doc: "Counters (64 bits, reset by reset, wrapping). Read the low dword first.",
        regs: &[
            reg("RX_FRAMES", 0x00, Ro64, "Frames received from the wire (every frame, delivered or dropped)."),
            reg("RX_DELIVERED", 0x08, Ro64, "Frames the RX path delivered."),
            reg("RX_DROP_RUNT", 0x10, Ro64, "Frames dropped: shorter than 64 bytes with FCS."),
            reg("RX_DROP_OVERSIZE", 0x18, Ro64, "Frames dropped: longer than 18 + 4 x VLAN tags (0..2) + MTU bytes with FCS."),
            reg("RX_DROP_FCS", 0x20, Ro64, "Frames dropped: bad FCS."),
            reg("RX_DROP_MAC_CONTROL", 0x28, Ro64, "Frames dropped: MAC control (EtherType 0x8808, PAUSE)."),
            reg("RX_MALFORMED", 0x30, Ro64, "Delivered frames flagged malformed."),
            reg("RX_VLAN_STRIPPED", 0x38, Ro64, "Delivered frames whose VLAN tag was stripped."),
            reg("RX_L3_CSUM_BAD", 0x40, Ro64, "Delivered frames with an IP header not reported good."),
            reg("RX_L4_CSUM_BAD", 0x48, Ro64, "Delivered frames with a TCP/UDP checksum not reported good."),
            reg("TX_FRAMES", 0x50, Ro64, "Frames the TX path sent (to the wire or the loopback)."),
            reg("RX_NO_WQE", 0x58, Ro64, "Delivered frames dropped because their receive queue had no posted WQE."),
            reg("TX_WQES", 0x60, Ro64, "Send WQEs executed (each frame, and each WQE completed in error)."),
            reg("RX_CQES", 0x68, Ro64, "Receive completions written."),
            reg("DMA_RD_ERR", 0x70, Ro64, "DMA reads answered with an error."),
            reg("RX_DECAPPED", 0x78, Ro64, "Delivered frames de-capsulated (VXLAN or NVGRE outer headers removed)."),
            reg("RX_TUNNEL_MALFORMED", 0x80, Ro64, "Delivered frames whose VXLAN or NVGRE header is malformed (delivered whole)."),
            reg("TX_LSO_BAD", 0x88, Ro64, "LSO sends dropped whole: offsets, mss or header length the TSO engine cannot segment, or a send that ends inside its headers."),
            reg("TX_ENCAP_DROP", 0x90, Ro64, "Frames dropped by the encapsulation engine: shorter than an Ethernet header."),
        ],
    },
    Block {
        name: "mr",
        base: 0x0300,
        span: 0x100,
        doc: "Memory regions: the host memory the NIC may touch through a data segment's lkey (lkey = table index). A gather or scatter outside its region completes in error (local protection).",
        regs: &[
            reg("SEL", 0x00, Rw, "Table entry the next writes address."),
            Reg { count: 2, ..reg("BASE", 0x04, Rw, "Region start, bus address (low dword, then high).") },
            Reg { count: 2, ..reg("LEN", 0x0C, Rw, "Region length, bytes (low dword, then high).") },
            Reg {
                fields: &[
                    f("valid", 0, 1, "1: the entry SEL becomes BASE/LEN and valid; 0: it becomes invalid"),
                ],
                ..reg("COMMIT", 0x14, Wo, "Write the staged entry into the table.")
            },
        ],
    },
    Block {
        name: "qcmd",
        base: 0x0400,
        span: 0x100,
        doc: "Queue commands: create, destroy, reset from error and query EQs, CQs, SQs and RQs. Stage IN, write EXEC, poll STATUS.busy, read STATUS.status and OUT.",
        regs: &[
            Reg {
                count: 8,
                ..reg("IN", 0x00, Rw, "Command input words; their meaning per queue type is in the `qcmd_in` layout below.")
            },
            Reg {
                fields: &[
                    f("op", 0, 4, "1 CREATE, 2 DESTROY, 3 RESET (error or ready state back to ready, indices kept), 4 QUERY"),
                    f("qtype", 4, 4, "0 EQ, 1 CQ, 2 SQ, 3 RQ"),
                    f("index", 16, 16, "queue number"),
                ],
                ..reg("EXEC", 0x20, Wo, "Execute a command.")
            },
            Reg {
                fields: &[
                    f("busy", 0, 1, "a command is executing"),
                    f("status", 8, 8, "0 OK, 3 bad parameter, 9 bad resource state, 10 bad index (mlx5 status codes)"),
                ],
                ..reg("STATUS", 0x24, Ro, "Result of the last command.")
            },
            Reg {
                count: 4,
                ..reg("OUT", 0x30, Ro, "QUERY result: 0 state (0 reset, 1 ready, 3 error), 1 producer counter, 2 consumer counter, 3 last error syndrome (bits 7:0) and its WQE counter (bits 31:16).")
            },
        ],
    },
    Block {
        name: "rss",
        base: 0x4000,
        span: 0x4000,
        doc: "RSS configuration (write-only; reads return 0). Entry `i` of a window is at its offset + 4 i.",
        regs: &[
            Reg { count: 10, ..reg("KEY", 0x000, Wo, "Toeplitz key, 40 bytes: word k holds key bytes 4k..4k+3, byte 4k in bits 31:24.") },
            Reg {
                fields: &[
                    f("ipv4", 0, 1, "hash IPv4 2-tuple"),
                    f("tcp_ipv4", 1, 1, "hash TCP/IPv4 4-tuple"),
                    f("udp_ipv4", 2, 1, "hash UDP/IPv4 4-tuple"),
                    f("ipv6", 3, 1, "hash IPv6 2-tuple"),
                    f("tcp_ipv6", 4, 1, "hash TCP/IPv6 4-tuple"),
                    f("udp_ipv6", 5, 1, "hash UDP/IPv6 4-tuple"),
                ],
                ..reg("ENABLES", 0x040, Wo, "Hash-type enables.")
            },
            Reg { count: 2048, ..reg("TABLE", 0x400, Wo, "Indirection table: entry i (i < LIMITS.table_size) holds the receive queue for hash & (table_size - 1).") },
        ],
    },
    Block {
        name: "tunnel",
        base: 0x8000,
        span: 0x800,
        doc: "Tunnel de-capsulation on receive (write-only; reads return 0): the VXLAN port and the steering table, (kind, VNI/VSID) -> receive queue. A frame whose well-formed tunnel hits an entry (or any well-formed tunnel with CTL.decap_all) is delivered as its inner frame, with the inner checksum verdicts and RSS, and the tunnel reported in its CQE; a hit's queue overrides RSS. A well-formed tunnel delivered whole, of a kind with CTL.inner_vxlan / inner_nvgre, gets the inner offloads: inner and outer checksum verdicts, RSS on the inner headers.",
        regs: &[
            reg("VXLAN_PORT", 0x000, Wo, "UDP destination port recognised as VXLAN (bits 15:0; 4789 after reset)."),
            Reg {
                fields: &[
                    f("decap_all", 0, 1, "de-capsulate every well-formed tunnel, also without an entry (RSS picks the queue)"),
                    f("inner_vxlan", 1, 1, "inner offloads for VXLAN: a well-formed VXLAN frame delivered whole gets its inner headers parsed, their checksums verified (CQE tunneled, l3_ok/l4_ok cover both header sets) and RSS on the inner headers"),
                    f("inner_nvgre", 2, 1, "inner offloads for NVGRE, as inner_vxlan"),
                ],
                ..reg("CTL", 0x004, Wo, "Tunnel controls.")
            },
            reg("STEER_QUEUE", 0x008, Wo, "Receive queue the next STEER write gives its entry."),
            Reg {
                count: 256,
                fields: &[
                    f("id", 0, 24, "VNI (VXLAN) or VSID (NVGRE)"),
                    f("kind", 24, 2, "1 VXLAN, 2 NVGRE"),
                    f("valid", 31, 1, "1: the entry steers (kind, id) to STEER_QUEUE; 0: the entry is cleared"),
                ],
                ..reg("STEER", 0x400, Wo, "Steering entry i (i < LIMITS.steer_entries); the lowest entry holding a key wins.")
            },
        ],
    },
    Block {
        name: "encap",
        base: 0x9000,
        span: 0x1000,
        doc: "Encapsulation contexts on transmit (write-only; reads return 0). Context c (c < ID.OVERLAY.encap_contexts) is the 16 words CTX[16c .. 16c+15]: the outer Ethernet, IPv4/IPv6 and VXLAN or NVGRE headers an SQ created with that context puts in front of every frame it sends. Writing any word of a context restarts its IPv4 ID counter; write a context while no SQ that uses it sends.",
        regs: &[
            Reg {
                count: 768,
                ..reg("CTX", 0x000, Wo, "Context word 16c + w: word w of context c; their meaning is in the `encap_ctx` layout below (the outer Ethernet addresses, the outer IP header's fields and flags, the tunnel).")
            },
        ],
    },
    Block {
        name: "uar",
        base: 0x10000,
        span: 0x1000,
        doc: "User access region (mlx5 UAR page 0): doorbells. Payloads are raw descriptor bytes in memory order (big-endian fields), written as two dwords; the device acts on the second.",
        regs: &[
            Reg { count: 2, ..reg("CQ_DB", 0x020, Wo, "CQ arm doorbell: bytes 0-3 = BE32 (arm_sn << 28 | cmd | consumer index), bytes 4-7 = BE32 CQN; cmd 0 arms for the next completion.") },
            reg("EQ_DB_ARM", 0x040, Wo, "EQ doorbell, update the consumer index and arm: BE32 (eqn << 24 | consumer index)."),
            reg("EQ_DB_NOARM", 0x048, Wo, "EQ doorbell, update the consumer index only: BE32 (eqn << 24 | consumer index)."),
            Reg { count: 2, ..reg("SQ_DB", 0x800, Wo, "Send doorbell: the first 8 bytes of the last posted WQE's control segment (opmod_idx_opcode, qpn_ds); the SQ's doorbell record holds the producer counter. With SQ_BF it is also the head of the BlueFlame buffer (0x800-0x8FF): the write of its second dword commits.") },
            Reg { count: 62, ..reg("SQ_BF", 0x808, Wo, "BlueFlame: bytes 8-255 of a WQE of 64-256 bytes, written here (in any order, after the WQE into the ring and the doorbell record) before its SQ_DB doorbell, which then writes bytes 0-7. The doorbell uses the WQE without fetching it (nor the doorbell record, the producer counter being the WQE's end) when its DS count is 1-16, every dword of its 16*DS bytes was written since the previous doorbell, its SQ is ready and its wqe_index is the SQ's consumer counter; otherwise it acts as a plain doorbell (the WQE is fetched from the ring; a bad one ends in an error CQE there).") },
        ],
    },
];

/// Descriptor and command layouts in host memory (big-endian, mlx5).
pub const DESCS: &[Desc] = &[
    Desc {
        name: "ctrl_seg",
        bytes: 16,
        doc: "Send WQE control segment (first 16 bytes of every send WQE).",
        fields: &[
            d("opcode", 0, 4, 0, 8, "send opcode (opcode group)"),
            d("wqe_index", 0, 4, 8, 16, "producer counter of the WQE's first WQEBB"),
            d("opmod", 0, 4, 24, 8, "opcode modifier"),
            d("ds", 4, 4, 0, 6, "16-byte segments in the WQE, this one included"),
            d("qpn", 4, 4, 8, 24, "send queue number"),
            d("signature", 8, 1, 0, 8, "WQE signature (0)"),
            d("fm_ce_se", 11, 1, 0, 8, "fence, completion and solicited bits (fm_ce_se group)"),
            d("imm", 12, 4, 0, 32, "immediate / TIS number << 8"),
        ],
    },
    Desc {
        name: "eth_seg",
        bytes: 16,
        doc: "Ethernet segment (after the control segment of an Ethernet send WQE).",
        fields: &[
            d("swp_outer_l4_offset", 0, 1, 0, 8, "LSO: software-parser offset, 2-byte units from the frame's start, of the outer L4 header (tunnelled: the outer UDP or GRE header) or, when swp_inner_l3_offset is 0, of the TCP header"),
            d("swp_outer_l3_offset", 1, 1, 0, 8, "LSO: software-parser offset (2-byte units) of the outer IP header, or when swp_inner_l3_offset is 0 of the only IP header"),
            d("swp_inner_l4_offset", 2, 1, 0, 8, "LSO, tunnelled: software-parser offset (2-byte units) of the inner TCP header"),
            d("swp_inner_l3_offset", 3, 1, 0, 8, "LSO: software-parser offset (2-byte units) of the inner IP header; 0: the frame is not tunnelled"),
            d("cs_flags", 4, 1, 0, 8, "checksum requests (cs_flags group)"),
            d("swp_flags", 5, 1, 0, 8, "LSO: software-parser flags (swp_flags group): tunnelled, OUTER_L4_UDP says VXLAN (else NVGRE), OUTER_L3_IPV6 and INNER_L3_IPV6 the IP versions; not tunnelled, OUTER_L3_IPV6 says the IP header is IPv6 (as mlx5e fills them); ignored by other opcodes"),
            d("mss", 6, 2, 0, 16, "LSO: payload bytes per segment, 1..=16383 (0: no LSO; other opcodes ignore it)"),
            d("inline_hdr_sz", 12, 2, 0, 16, "bytes of frame header inlined from byte 14 on (when vlan_cmd bit 15 is clear); LSO: every header through the (inner) TCP header, at least 14, the segments' header length"),
            d("vlan_cmd", 12, 2, 0, 16, "bit 15 set (0x8000, VLAN_INSERT): no inline header; insert a C-VLAN with vlan_tci"),
            d("inline_hdr_start", 14, 2, 0, 16, "first 2 inline header bytes"),
            d("vlan_tci", 14, 2, 0, 16, "with VLAN_INSERT: the TCI to insert"),
        ],
    },
    Desc {
        name: "data_seg",
        bytes: 16,
        doc: "Data segment (gather on send, scatter on receive).",
        fields: &[
            d("byte_count", 0, 4, 0, 31, "bytes (send: 1..=max; receive: buffer size)"),
            d("inline", 0, 4, 31, 1, "inline data segment (send only; data follows in the WQE)"),
            d("lkey", 4, 4, 0, 32, "memory region (MR table index); 0x100 ends a receive scatter list"),
            d("addr", 8, 8, 0, 64, "bus address"),
        ],
    },
    Desc {
        name: "cqe",
        bytes: 64,
        doc: "Completion queue entry (64 bytes).",
        fields: &[
            d("tunneled", 0x00, 1, 0, 1, "the frame was delivered whole with the inner offloads (TUNNEL_CTL inner_vxlan / inner_nvgre): l3_ok and l4_ok cover both the outer and the inner headers (an outer without TCP/UDP, NVGRE's, adds no L4 checksum), RSS hashed the inner ones; l3/l4 types and check_sum are the outer headers' (mlx5: the driver reports CHECKSUM_UNNECESSARY at level 1)"),
            d("decapped", 0x00, 1, 7, 1, "the frame was de-capsulated: l3/l4 types, verdicts, checksum and RSS are the inner frame's (nicgen's bit: mlx5 has none; bit 1 is the outer-IPv6 flag in DPDK, bits 4:3 TLS status in newer kernels)"),
            d("tunnel_id", 0x28, 4, 0, 24, "VNI (VXLAN) or VSID (NVGRE) of a well-formed tunnel, de-capsulated or not; 0 otherwise"),
            d("tunnel_kind", 0x28, 4, 24, 2, "tunnel the outer headers announce: 0 none, 1 VXLAN, 2 NVGRE"),
            d("tunnel_bad", 0x28, 4, 26, 3, "why that tunnel is malformed, 0 for none: 1 short header, 2 beyond the parser's window, 3 VXLAN I flag clear, 4 GRE version, 5 GRE flags, 6 GRE protocol, 7 inner frame too short"),
            d("wqe_id", 0x02, 2, 0, 16, "striding RQ: the WQE (RQ WQE counter) the frame's strides are in, filler and error CQEs too; 0 in other CQEs"),
            d("rss_hash_result", 0x0C, 4, 0, 32, "RSS hash (RX)"),
            d("rss_hash_type", 0x10, 1, 0, 8, "bits 3:2 IP type (1 IPv4, 2 IPv6), bits 7:6 L4 type (1 TCP, 2 UDP)"),
            d("check_sum", 0x14, 2, 0, 16, "checksum-complete: ones'-complement sum after the L3 header"),
            d("l3_hdr", 0x18, 4, 24, 2, "flags_rqpn L3 header type: 1 IPv6, 2 IPv4"),
            d("l2_ok", 0x1C, 1, 0, 1, "hds_ip_ext: frame good at L2"),
            d("l3_ok", 0x1C, 1, 1, 1, "hds_ip_ext: IPv4 header checksum good (IPv6: header parsed)"),
            d("l4_ok", 0x1C, 1, 2, 1, "hds_ip_ext: TCP/UDP checksum good"),
            d("cv", 0x1D, 1, 0, 1, "l4_l3_hdr_type: VLAN tag stripped"),
            d("ip_frag", 0x1D, 1, 7, 1, "l4_l3_hdr_type: IP fragment"),
            d("l3_type", 0x1D, 1, 2, 2, "l4_l3_hdr_type: 0 none, 1 IPv6, 2 IPv4"),
            d("l4_type", 0x1D, 1, 4, 3, "l4_l3_hdr_type: 0 none, 1 TCP, 2 UDP"),
            d("vlan_info", 0x1E, 2, 0, 16, "stripped VLAN TCI"),
            d("byte_cnt", 0x2C, 4, 0, 32, "RX: bytes written; send: bytes sent; compressed-session title: its completion count (2..=8); striding RQ: the three fields below"),
            d("mpwrq_len", 0x2C, 4, 0, 16, "striding RQ: frame length"),
            d("mpwrq_strides", 0x2C, 4, 16, 15, "striding RQ: strides consumed (filler: the strides skipped)"),
            d("mpwrq_filler", 0x2C, 4, 31, 1, "striding RQ: filler CQE, no frame (the WQE's strides left, skipped)"),
            d("timestamp", 0x30, 8, 0, 64, "device cycle counter at completion (error CQEs: bytes 0x36-0x37 hold vendor_err_synd and syndrome instead)"),
            d("vendor_err_synd", 0x36, 1, 0, 8, "error CQE: vendor syndrome (nicgen: the failing segment index)"),
            d("syndrome", 0x37, 1, 0, 8, "error CQE: syndrome (syndrome group)"),
            d("qpn", 0x38, 4, 0, 24, "SQ / RQ number"),
            d("s_wqe_opcode", 0x38, 4, 24, 8, "send completions: opcode of the completed WQE"),
            d("wqe_counter", 0x3C, 2, 0, 16, "WQE completed (send: the last of the batch; striding RQ: the frame's first stride in WQE wqe_id)"),
            d("owner", 0x3F, 1, 0, 1, "owner bit: (producer counter >> log_size) & 1"),
            d("format", 0x3F, 1, 2, 2, "CQE format (cqe_format group): FULL, or COMPRESSED in the title of a compressed session (mini_cqe array in the next slot)"),
            d("opcode", 0x3F, 1, 4, 4, "CQE opcode (cqe_opcode group)"),
        ],
    },
    Desc {
        name: "mini_cqe",
        bytes: 8,
        doc: "Mini CQE of a compressed session (mlx5_mini_cqe8): eight of them fill the slot after the title; mini i is completion i of the session. Its first word by format: receive completions hash (rx_hash_result) or checksum (checksum, stridx); send completions wqe_counter and s_wqe_opcode.",
        fields: &[
            d("rx_hash_result", 0, 4, 0, 32, "hash format: the completion's RSS hash"),
            d("checksum", 0, 2, 0, 16, "checksum format: the completion's check_sum"),
            d("stridx", 2, 2, 0, 16, "checksum format: stride index (0: no striding RQ)"),
            d("wqe_counter", 0, 2, 0, 16, "send completions: the completion's wqe_counter"),
            d("s_wqe_opcode", 2, 1, 0, 8, "send completions: the completion's s_wqe_opcode"),
            d("byte_cnt", 4, 4, 0, 32, "the completion's byte_cnt"),
        ],
    },
    Desc {
        name: "eqe",
        bytes: 64,
        doc: "Event queue entry (64 bytes).",
        fields: &[
            d("event_type", 0x01, 1, 0, 8, "event type (event_type group)"),
            d("sub_type", 0x03, 1, 0, 8, "event sub-type"),
            d("cqn", 0x38, 4, 0, 24, "completion event: the CQ"),
            d("owner", 0x3F, 1, 0, 1, "owner bit: (producer counter >> log_size) & 1"),
        ],
    },
    Desc {
        name: "dbr",
        bytes: 8,
        doc: "Doorbell record in host memory (8 bytes per queue). RQ: receive counter; SQ: send counter; CQ: set_ci and the arm word.",
        fields: &[
            d("rq_pc", 0, 4, 0, 16, "RQ producer counter (WQEs posted)"),
            d("sq_pc", 4, 4, 0, 16, "SQ producer counter (WQEBBs posted)"),
            d("cq_ci", 0, 4, 0, 24, "CQ consumer index"),
            d("cq_arm", 4, 4, 0, 32, "CQ arm word: arm_sn << 28 | cmd | ci"),
        ],
    },
    Desc {
        name: "encap_ctx",
        bytes: 64,
        doc: "encap.CTX words of one encapsulation context (little-endian register words, word k at byte 4k, as qcmd_in): what an SQ created with it puts in front of every frame, the outer Ethernet header (no VLAN tag: the TX path's VLAN insert tags the outer frame), the outer IPv4 or IPv6 header and the VXLAN (UDP) or NVGRE header. The outer lengths, the IPv4 ID (a per-context counter) and checksum and the UDP source port (a hash of the inner flow) are the device's.",
        fields: &[
            d("dst_mac_hi", 0, 4, 0, 32, "outer destination MAC bytes 0-3 (byte 0 in bits 31:24)"),
            d("dst_mac_lo", 4, 4, 16, 16, "outer destination MAC bytes 4-5"),
            d("src_mac_hi", 4, 4, 0, 16, "outer source MAC bytes 0-1"),
            d("src_mac_lo", 8, 4, 0, 32, "outer source MAC bytes 2-5"),
            d("ttl", 12, 4, 0, 8, "outer IPv4 TTL / IPv6 hop limit"),
            d("tos", 12, 4, 8, 8, "outer IPv4 TOS / IPv6 traffic class"),
            d("ipv6", 12, 4, 16, 1, "the outer IP header is IPv6"),
            d("nvgre", 12, 4, 17, 1, "the tunnel is NVGRE (GRE with key, protocol 0x6558); 0: VXLAN"),
            d("udp_checksum", 12, 4, 18, 1, "VXLAN over IPv4: compute the outer UDP checksum (over IPv6 it always is)"),
            d("df", 12, 4, 19, 1, "outer IPv4: don't fragment"),
            d("tunnel_id", 16, 4, 0, 24, "VXLAN VNI or NVGRE VSID"),
            d("flow_id", 16, 4, 24, 8, "NVGRE FlowID"),
            d("udp_port", 20, 4, 0, 16, "VXLAN: outer UDP destination port"),
            d("flow_label", 24, 4, 0, 20, "outer IPv6 flow label"),
            d("src_addr_hi", 32, 8, 0, 64, "outer source address bytes 0-7 (IPv6, big-endian)"),
            d("src_addr_lo", 40, 8, 0, 64, "outer source address bytes 8-15 (IPv6); IPv4: the address in bits 31:0"),
            d("dst_addr_hi", 48, 8, 0, 64, "outer destination address bytes 0-7 (IPv6, big-endian)"),
            d("dst_addr_lo", 56, 8, 0, 64, "outer destination address bytes 8-15 (IPv6); IPv4: the address in bits 31:0"),
        ],
    },
    Desc {
        name: "qcmd_in",
        bytes: 32,
        doc: "QCMD.IN words for CREATE, by queue type (little-endian register words, word k at byte 4k). Ring and doorbell-record addresses are bus addresses; rings are 4 KiB aligned.",
        fields: &[
            d("ring_lo", 0, 4, 0, 32, "all: ring base bits 31:0"),
            d("ring_hi", 4, 4, 0, 32, "all: ring base bits 63:32"),
            d("log_size", 8, 4, 0, 5, "all: log2 entries (EQ, CQ: 64-byte entries; SQ: 64-byte WQEBBs; RQ: WQEs)"),
            d("log_stride", 8, 4, 8, 4, "RQ: log2 bytes per receive WQE (4..=9; striding: 5..=9)"),
            d("striding", 8, 4, 16, 1, "RQ: striding (multi-packet) RQ: each WQE is a 16-byte next segment and one data segment, a buffer of strides"),
            d("log_num_strides", 8, 4, 20, 4, "RQ striding: log2 strides per WQE (1..=14)"),
            d("log_stride_size", 8, 4, 24, 4, "RQ striding: log2 bytes per stride (6..=13)"),
            d("dbr_lo", 12, 4, 0, 32, "CQ, SQ, RQ: doorbell record bits 31:0"),
            d("dbr_hi", 16, 4, 0, 32, "CQ, SQ, RQ: doorbell record bits 63:32"),
            d("link", 20, 4, 0, 16, "EQ: interrupt vector; CQ: its EQ; SQ, RQ: their CQ"),
            d("mod_count", 24, 4, 0, 16, "EQ: interrupt after this many events (0 = 1)"),
            d("mod_period", 24, 4, 16, 16, "EQ: or after this many 1024-cycle ticks since the first pending event (0 = off)"),
            d("cqe_comp", 24, 4, 0, 1, "CQ: CQE compression (runs of like completions as a title and mini CQEs)"),
            d("mini_format", 24, 4, 1, 2, "CQ: mini CQE format of receive completions (mini_cqe_format group)"),
            d("session", 24, 4, 16, 16, "CQ: cycles a session (CQEs merged into one write) waits for more completions; 0: it takes only those already waiting"),
            d("encap_ctx", 24, 4, 0, 8, "SQ: the encapsulation context (below ID.OVERLAY.encap_contexts, else bad parameter) of every frame the SQ sends, when encap is set"),
            d("encap", 24, 4, 31, 1, "SQ: encapsulate every frame (every segment of an LSO send) with context encap_ctx (encap block)"),
        ],
    },
];

/// Numbered constants shared by the NIC and the driver.
pub const CONSTS: &[ConstGroup] = &[
    QTYPES,
    ConstGroup {
        name: "qcmd_op",
        doc: "Queue commands (QCMD.EXEC.op).",
        values: &[
            ("CREATE", 1, "create the queue from IN; ready"),
            ("DESTROY", 2, "forget the queue"),
            ("RESET", 3, "leave the error state: ready, indices kept"),
            ("QUERY", 4, "state and indices into OUT"),
        ],
    },
    ConstGroup {
        name: "qcmd_status",
        doc: "QCMD.STATUS.status (mlx5 command status codes).",
        values: &[
            ("OK", 0x00, "done"),
            ("BAD_PARAM", 0x03, "a size, stride or link out of range"),
            (
                "BAD_RES_STATE",
                0x09,
                "the queue is not in a state the command applies to",
            ),
            ("BAD_INDEX", 0x0A, "the queue number is out of range"),
        ],
    },
    ConstGroup {
        name: "qstate",
        doc: "Queue states (QCMD.OUT word 0).",
        values: &[
            ("RST", 0, "not created"),
            ("RDY", 1, "ready"),
            ("ERR", 3, "error: stopped until RESET"),
        ],
    },
    ConstGroup {
        name: "opcode",
        doc: "Send WQE opcodes (ctrl_seg.opcode).",
        values: &[
            ("NOP", 0x00, "no operation (completes)"),
            ("SEND", 0x0A, "send a frame"),
            ("LSO", 0x0E, "send a super-frame, segmented by the TSO engine (eth_seg mss and software-parser offsets, every header through TCP inline); the super-frame is at most the largest frame, ID.MTU + 22 bytes"),
            (
                "ENHANCED_MPSW",
                0x29,
                "enhanced multi-packet send: one packet per data segment, one CQE",
            ),
        ],
    },
    ConstGroup {
        name: "fm_ce_se",
        doc: "ctrl_seg.fm_ce_se bits.",
        values: &[
            ("CQ_UPDATE", 0x08, "write a CQE for this WQE (always)"),
            ("SOLICITED", 0x02, "solicited event"),
        ],
    },
    ConstGroup {
        name: "cs_flags",
        doc: "eth_seg.cs_flags bits.",
        values: &[
            ("L3_CSUM", 0x40, "insert the IPv4 header checksum"),
            ("L4_CSUM", 0x80, "insert the TCP/UDP checksum"),
            ("L3_INNER_CSUM", 0x10, "tunnelled: the inner IPv4 header checksum (mlx5e sets it; nicgen ignores it: an LSO send's segments get every checksum from the TSO engine)"),
            ("L4_INNER_CSUM", 0x20, "tunnelled: the inner TCP/UDP checksum (ignored by nicgen, as L3_INNER_CSUM)"),
        ],
    },
    ConstGroup {
        name: "swp_flags",
        doc: "eth_seg.swp_flags bits (LSO WQEs).",
        values: &[
            ("INNER_L3_IPV6", 0x01, "tunnelled: the inner IP header is IPv6"),
            ("INNER_L4_UDP", 0x02, "tunnelled: the inner L4 header is UDP (not looked at: nicgen segments TCP only)"),
            ("OUTER_L3_IPV6", 0x10, "the outer IP header (not tunnelled: the only one) is IPv6"),
            ("OUTER_L4_UDP", 0x20, "tunnelled: the outer L4 header is UDP (VXLAN); clear: GRE (NVGRE)"),
        ],
    },
    ConstGroup {
        name: "cqe_opcode",
        doc: "CQE opcodes (cqe.opcode).",
        values: &[
            ("REQ", 0x0, "send completion"),
            ("RESP_SEND", 0x2, "receive completion"),
            ("REQ_ERR", 0xD, "send completion in error"),
            ("RESP_ERR", 0xE, "receive completion in error"),
            ("INVALID", 0xF, "never written by the NIC (initial value)"),
        ],
    },
    ConstGroup {
        name: "cqe_format",
        doc: "CQE formats (cqe.format).",
        values: &[
            ("FULL", 0, "a full CQE"),
            (
                "COMPRESSED",
                3,
                "title of a compressed session: byte_cnt completions, mini CQEs in the next slot",
            ),
        ],
    },
    ConstGroup {
        name: "mini_cqe_format",
        doc: "Mini CQE formats of receive completions (qcmd_in.mini_format).",
        values: &[
            (
                "HASH",
                0,
                "mini CQEs carry rx_hash_result; the session shares check_sum",
            ),
            (
                "CSUM",
                1,
                "mini CQEs carry check_sum; the session shares the RSS hash",
            ),
        ],
    },
    ConstGroup {
        name: "syndrome",
        doc: "Error CQE syndromes (cqe.syndrome).",
        values: &[
            (
                "LOCAL_LENGTH",
                0x01,
                "zero length or a length over the maximum",
            ),
            ("LOCAL_QP_OP", 0x02, "unknown opcode or malformed WQE"),
            (
                "LOCAL_PROT",
                0x04,
                "gather/scatter outside the registered memory region",
            ),
            ("WR_FLUSH", 0x05, "flushed: the queue was in error"),
            ("LOCAL_ACCESS", 0x11, "DMA read answered with an error"),
        ],
    },
    ConstGroup {
        name: "event_type",
        doc: "EQE event types (eqe.event_type).",
        values: &[
            ("COMPLETION", 0x00, "a CQE was written to an armed CQ"),
            ("CQ_ERROR", 0x04, "CQ overrun"),
            ("WQ_CATAS", 0x05, "a work queue went to the error state"),
        ],
    },
    ConstGroup {
        name: "misc",
        doc: "Sizes and special values.",
        values: &[
            ("WQEBB", 64, "send WQE basic block, bytes"),
            ("CQE_SIZE", 64, "CQE and EQE size, bytes"),
            ("INVALID_LKEY", 0x100, "ends a receive scatter list"),
            (
                "MAX_SEND_DS",
                16,
                "largest send WQE, 16-byte segments (4 WQEBBs)",
            ),
            (
                "MAX_FRAME",
                16384,
                "largest frame a send WQE may describe, bytes",
            ),
        ],
    },
];

/// The register named `block.name` (e.g. `"dev.CTRL"`), if it exists.
pub fn find(path: &str) -> Option<(&'static Block, &'static Reg)> {
    let (b, r) = path.split_once('.')?;
    let block = BLOCKS.iter().find(|x| x.name == b)?;
    let reg = block.regs.iter().find(|x| x.name == r)?;
    Some((block, reg))
}

/// `a == b`, ignoring ASCII case (the hardware's constants are upper case, descriptor fields
/// lower case in the map), usable in constants.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !a[i].eq_ignore_ascii_case(&b[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// A register of the map with its block: the typed handle the hardware names a register by
/// (`crate::host::regs::dev::HEALTH`), resolved from [`BLOCKS`] at compile time by
/// [`RegRef::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegRef {
    pub block: &'static Block,
    pub reg: &'static Reg,
}

impl RegRef {
    /// Register `reg` of block `block`; a name the map lacks stops compilation when used in a
    /// constant ("no such register in the register map").
    pub const fn of(block: &str, reg: &str) -> RegRef {
        let mut i = 0;
        while i < BLOCKS.len() {
            let b = &BLOCKS[i];
            if str_eq(b.name, block) {
                let mut j = 0;
                while j < b.regs.len() {
                    if str_eq(b.regs[j].name, reg) {
                        return RegRef {
                            block: b,
                            reg: &b.regs[j],
                        };
                    }
                    j += 1;
                }
            }
            i += 1;
        }
        panic!("no such register in the register map")
    }

    /// Register `block.REG` (e.g. `"dev.CTRL"`), if the map has it: for callers that walk the
    /// map as data.
    pub fn find(path: &str) -> Option<RegRef> {
        find(path).map(|(block, reg)| RegRef { block, reg })
    }

    /// `block.REG`, as messages and [`find`] spell it.
    pub fn path(&self) -> String {
        format!("{}.{}", self.block.name, self.reg.name)
    }
}

/// A field of a descriptor layout: the typed handle the hardware names a descriptor field by
/// (`crate::host::regs::desc::cqe::OWNER`), resolved from [`DESCS`] at compile time by
/// [`DescRef::field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescRef {
    pub desc: &'static Desc,
    pub field: &'static DescField,
}

impl DescRef {
    /// Field `field` of descriptor `desc`; a name the map lacks stops compilation when used in
    /// a constant ("no such descriptor field in the register map").
    pub const fn field(desc: &str, field: &str) -> DescRef {
        let d = layout(desc);
        let mut j = 0;
        while j < d.fields.len() {
            if str_eq(d.fields[j].name, field) {
                return DescRef {
                    desc: d,
                    field: &d.fields[j],
                };
            }
            j += 1;
        }
        panic!("no such descriptor field in the register map")
    }
}

/// The descriptor layout named `name`; a name the map lacks stops compilation when used in a
/// constant.
pub const fn layout(name: &str) -> &'static Desc {
    let mut i = 0;
    while i < DESCS.len() {
        if str_eq(DESCS[i].name, name) {
            return &DESCS[i];
        }
        i += 1;
    }
    panic!("no such descriptor in the register map")
}

/// The value of constant `name` in group `group` (e.g. `value("qstate", "RDY")`); a name the
/// map lacks stops compilation when used in a constant (`crate::host::regs::consts`).
pub const fn value(group: &str, name: &str) -> u64 {
    let mut i = 0;
    while i < CONSTS.len() {
        let g = &CONSTS[i];
        if str_eq(g.name, group) {
            let mut j = 0;
            while j < g.values.len() {
                if str_eq(g.values[j].0, name) {
                    return g.values[j].1 as u64;
                }
                j += 1;
            }
        }
        i += 1;
    }
    panic!("no such constant in the register map")
}

/// Bytes a register occupies (4 per element; 8 for `Ro64`).
pub fn reg_bytes(r: &Reg) -> u32 {
    r.count * if r.access == Ro64 { 8 } else { 4 }
}

/// Problems with the map itself (overlaps, fields outside their register, blocks not aligned):
/// empty for a good map.
pub fn check() -> Vec<String> {
    let mut errs = Vec::new();
    let mut prev_end = 0u32;
    for b in BLOCKS {
        if !b.span.is_power_of_two() || b.base % b.span != 0 {
            errs.push(format!(
                "block {}: span {:#x} must be a power of two dividing base {:#x}",
                b.name, b.span, b.base
            ));
        }
        if b.base < prev_end {
            errs.push(format!(
                "block {} at {:#x} overlaps the previous block",
                b.name, b.base
            ));
        }
        prev_end = b.base + b.span;
        let mut taken: Vec<(u32, u32, &str)> = Vec::new();
        for r in b.regs {
            let (lo, hi) = (r.offset, r.offset + reg_bytes(r));
            if r.offset % 4 != 0 || hi > b.span {
                errs.push(format!(
                    "{}.{}: offset {:#x} unaligned or beyond the block",
                    b.name, r.name, r.offset
                ));
            }
            if let Some(o) = taken.iter().find(|(a, z, _)| lo < *z && *a < hi) {
                errs.push(format!("{}.{} overlaps {}.{}", b.name, r.name, b.name, o.2));
            }
            taken.push((lo, hi, r.name));
            let mut bits = 0u64;
            for fl in r.fields {
                if fl.bits == 0 || fl.lsb + fl.bits > 32 {
                    errs.push(format!(
                        "{}.{}.{}: bits {}+{} outside 32",
                        b.name, r.name, fl.name, fl.lsb, fl.bits
                    ));
                    continue;
                }
                let m = ((1u64 << fl.bits) - 1) << fl.lsb;
                if bits & m != 0 {
                    errs.push(format!(
                        "{}.{}.{} overlaps another field",
                        b.name, r.name, fl.name
                    ));
                }
                bits |= m;
            }
        }
    }
    for desc in DESCS {
        for fl in desc.fields {
            if ![1, 2, 4, 8].contains(&fl.container)
                || fl.byte % fl.container != 0
                || fl.byte + fl.container > desc.bytes
                || fl.lsb + fl.bits > 8 * fl.container
            {
                errs.push(format!(
                    "{}.{}: container or bits out of range",
                    desc.name, fl.name
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_is_consistent() {
        assert_eq!(check(), Vec::<String>::new());
        assert_eq!(find("id.MAGIC").unwrap().1.offset, 0);
        assert_eq!(
            find("uar.SQ_DB").unwrap().0.base + find("uar.SQ_DB").unwrap().1.offset,
            0x10800
        );
        let last = BLOCKS.last().unwrap();
        assert!(last.base + last.span <= 1 << super::super::BAR_BITS);
    }

    /// The `encap_ctx` layout the driver writes is the one `tx_encap` reads: each field in the
    /// word and at the bit the block takes it from.
    #[test]
    fn the_encap_context_layout_is_tx_encaps() {
        use crate::overlay::tx_encap::{ctx_flag, ctx_word};
        let at = |field: &str| {
            let f = DescRef::field("encap_ctx", field).field;
            // Word k at byte 4k, a container's last word holding its low bits.
            let word = (f.byte + f.container - 1 - f.lsb / 8) / 4;
            (word, f.lsb % 32)
        };
        let flag = |bit: u32| (ctx_word::IP, bit.trailing_zeros());
        assert_eq!(layout("encap_ctx").bytes, 4 * ctx_word::WORDS);
        assert_eq!(at("dst_mac_hi"), (ctx_word::DST_MAC_HI, 0));
        assert_eq!(at("dst_mac_lo"), (ctx_word::MACS_MID, 16));
        assert_eq!(at("src_mac_hi"), (ctx_word::MACS_MID, 0));
        assert_eq!(at("src_mac_lo"), (ctx_word::SRC_MAC_LO, 0));
        assert_eq!(at("ttl"), (ctx_word::IP, 0));
        assert_eq!(at("tos"), (ctx_word::IP, 8));
        assert_eq!(at("ipv6"), flag(ctx_flag::IPV6));
        assert_eq!(at("nvgre"), flag(ctx_flag::NVGRE));
        assert_eq!(at("udp_checksum"), flag(ctx_flag::UDP_CHECKSUM));
        assert_eq!(at("df"), flag(ctx_flag::DF));
        assert_eq!(at("tunnel_id"), (ctx_word::TUNNEL, 0));
        assert_eq!(at("flow_id"), (ctx_word::TUNNEL, 24));
        assert_eq!(at("udp_port"), (ctx_word::UDP_PORT, 0));
        assert_eq!(at("flow_label"), (ctx_word::FLOW_LABEL, 0));
        assert_eq!(at("src_addr_hi").0, ctx_word::SRC_ADDR + 1);
        assert_eq!(at("src_addr_lo").0, ctx_word::SRC_ADDR + 3);
        assert_eq!(at("dst_addr_hi").0, ctx_word::DST_ADDR + 1);
        assert_eq!(at("dst_addr_lo").0, ctx_word::DST_ADDR + 3);
    }
}
