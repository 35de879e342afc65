//! `rss_toeplitz`: receive-side scaling for one frame per request: Toeplitz hash over the
//! Microsoft input set, hash-type selection, indirection table lookup.
//!
//! A request names a flow (L3/L4 type, fragment flag, addresses, ports) and an opaque `tag`;
//! the result carries the 32-bit Toeplitz hash, the hash type (which input set was hashed), the
//! receive queue from the indirection table, and the tag back, in request order.
//!
//! ## Records
//! Fields least significant first ([`RssReq`] and [`RssRes`]; their shapes for a configuration
//! are [`RssCfg::req_layout`] and [`RssCfg::res_layout`]):
//!
//! | `s_axis_req_tdata` | bits | meaning |
//! |---|---|---|
//! | `l3` | 2 | 0 none, 1 IPv4, 2 IPv6 (3 is treated as none) |
//! | `l4` | 2 | 0 none/other, 1 TCP, 2 UDP (3 is treated as other) |
//! | `frag` | 1 | IP fragment: never hash ports |
//! | `src_ip`, `dst_ip` | 128 each | the address as a big-endian integer (`3ffe:..` = `0x3ffe..`); IPv4 in bits 31:0, bits 127:32 ignored |
//! | `src_port`, `dst_port` | 16 each | host integers (hashed in network order) |
//! | `tag` | `tag_bits` | opaque, returned unchanged (e.g. frame index) |
//!
//! | `m_axis_res_tdata` | bits | meaning |
//! |---|---|---|
//! | `hash` | 32 | Toeplitz hash (0 when nothing was hashed) |
//! | `rss_type` | 3 | [`rss_type`] code: 0 none, 1 IPV4, 2 TCP_IPV4, 3 UDP_IPV4, 4 IPV6, 5 TCP_IPV6, 6 UDP_IPV6; the mlx5 CQE byte is [`cqe_rss_hash_type`] |
//! | `queue` | `queue_bits` = clog2(`queues`) | indirection-table entry `hash & (table_size - 1)` |
//! | `tag` | `tag_bits` | the request's tag |
//!
//! ## Input sets and hash-type selection
//! Microsoft's sets in network byte order, source before destination: IPv4 2-tuple (8 bytes),
//! IPv4 4-tuple (+ source port, destination port: 12), IPv6 2-tuple (32), IPv6 4-tuple (36).
//! The hardware hashes one fixed 288-bit (36-byte) vector; a shorter set is the same vector
//! with its tail zeroed (a zero input bit adds nothing to a Toeplitz hash):
//!
//! | bytes | IPv6 4-tuple | IPv6 2-tuple | IPv4 4-tuple | IPv4 2-tuple | none |
//! |---|---|---|---|---|---|
//! | 0..4 | src\[0..4\] | src\[0..4\] | src | src | 0 |
//! | 4..8 | src\[4..8\] | src\[4..8\] | dst | dst | 0 |
//! | 8..12 | src\[8..12\] | src\[8..12\] | sport, dport | 0 | 0 |
//! | 12..16 | src\[12..16\] | src\[12..16\] | 0 | 0 | 0 |
//! | 16..32 | dst | dst | 0 | 0 | 0 |
//! | 32..36 | sport, dport | 0 | 0 | 0 | 0 |
//!
//! Selection per request, with `en` the hash-type enable register (bit `t-1` enables type `t`):
//! a 4-tuple type (TCP/UDP over the request's IP version) when the L4 is TCP/UDP, the packet is
//! not a fragment and that type is enabled; otherwise the 2-tuple type of the IP version when
//! enabled (**fallback**: a disabled TCP_IPV4 with IPV4 enabled hashes TCP/IPv4 on the
//! addresses and reports IPV4, as a Microsoft RSS NIC does for fragments and non-TCP traffic,
//! and as mlx5 does when ethtool sets `rx-flow-hash tcp4 sd`: there every traffic type has its
//! own TIR with its own field selector, so "not the ports" means "the addresses"); otherwise
//! nothing: hash 0, type none, queue = table entry 0 (hash 0 selects entry 0 — the same place
//! mlx5e sends non-IP traffic: its `TT_ANY` TIR hashes no fields).
//!
//! ## Configuration (`cfg_we`, `cfg_addr[11:0]`, `cfg_wdata[31:0]`; write-only, one word/cycle)
//! | address | register | reset value |
//! |---|---|---|
//! | 0x000..0x009 | key word k = key bytes 4k..4k+3, byte 4k in bits 31:24 (as mlx5 `rx_hash_toeplitz_key`) | Microsoft verification key ([`MICROSOFT_KEY`]) |
//! | 0x010 | hash-type enables, bit `t-1` for type `t` (bits 5:0) | 0x3F (all) |
//! | 0x100 + i | indirection entry i (`queue_bits` low bits), i < `table_size` | i mod `queues` (power-up contents, see below) |
//!
//! Other addresses are ignored. A write is in effect for every request accepted after the
//! write cycle; requests in flight may already see a new key or table entry (the key is used two
//! cycles after acceptance, the table `latency - 2` cycles after), so reprogram while no request
//! is in flight (as mlx5 modifies a TIR) to have every result use one configuration.
//! The key and enables reset with `rst`; the table is a LUTRAM whose initial (power-up)
//! contents are i mod `queues` and which `rst` does not rewrite (a RAM has no reset); the driver
//! programs it, as mlx5 programs the RQT in CREATE_RQT. Key bit 319 (the last bit of byte 39)
//! is never used: the longest input (288 bits) reaches key bits 0..318.
//!
//! ## Internals
//! - **A** (input register): `s_axis_req_tready` comes from a flop of its own, loaded with the
//!   credits' state (below); the ports feed the type decode (3 LUT levels) and flip-flops
//!   only: fields, type, tag and four masks (IPv4 / IPv6 addresses, IPv4 / IPv6 ports) are
//!   registered.
//! - **B**: the masked 288-bit input vector X (one LUT per bit), registered in `replicas`
//!   copies; the key also has `replicas` copies, each holding the key bits its trees meet, so
//!   each input or key flip-flop fans out to 32 / `replicas` trees instead of 32. Each copy is
//!   registered in phases (bits p, p + a, p + 2a, ...; a = `first_terms`; the order of the
//!   flip-flops only) and loads only with its clock enable: X when a request was accepted, the
//!   key after a configuration write. Yosys merges identical flip-flops, so the copies differ
//!   in control set only: one of two copies of the enable (`valid_a` / `valid_a_copy`,
//!   `key_load` / `key_load_copy`), with or without a synchronous reset (both free in the FF;
//!   docs/TIMING.md, rule 3). For a simulator the enables matter: the bit re-ordering into
//!   phases is evaluated in the cycles a copy loads, not in every cycle.
//! - **Trees**: hash bit (31 - j) = XOR over input bits i of `X_i & key_(i+j)` — a GF(2)-linear
//!   function of X whose coefficients are key register bits, so all 288 x 32 AND terms are
//!   hardware. Stage 1 XORs `first_terms` terms per group (2 = one LUT4, right after the
//!   high-fan-out nets), each later stage `xor_fanin` partials (16 = two LUT4 levels), with a
//!   register after every stage: 144 -> 9 -> 1 partials per hash bit by default. Stage 1 is
//!   written per phase: the partials are the XOR over the phases of `X phase & key window
//!   phase`, the same LUTs as one XOR per group, and a few wide operations for a simulator
//!   instead of 144 reductions per hash bit. The trees run freely: no clock enable, no stall
//!   fan-out.
//! - **Table and results**: the hash's low `log2(table_size)` bits read the indirection table,
//!   in banks of [`TABLE_BANK`] entries (async LUTRAM): each bank's word and the bank number
//!   are registered, then the bank select is (rule 7), and `{tag, queue, rss_type, hash}` is
//!   written into a `result_depth`-entry (default 16) LUTRAM result FIFO. Credits:
//!   `credits_used` counts requests accepted and not yet popped; requests are accepted while it
//!   is below `result_depth`, so the FIFO never overflows and backpressure never has to stop the
//!   pipeline (rule 8). `m_axis_res_tvalid` is a register.
//!
//! - Ports ([`RssPorts`]): `s_axis_req_tdata/tvalid/tready`, `m_axis_res_tdata/tvalid/tready`,
//!   `cfg_we`, `cfg_addr[11:0]`, `cfg_wdata[31:0]`. No `tkeep`/`tlast`: one record per
//!   transfer. Stream rules 1, 2 and 6 hold (no path from `m_axis_res_tready` to either
//!   `tvalid`).
//! - Latency: [`RssCfg::latency`] cycles from the request's transfer to its result's `tvalid`:
//!   A, B, the tree stages, the two registered table stages, the FIFO — **8 cycles** by default.
//! - Throughput: **1 request/cycle**, no bubbles (`result_depth` credits > latency + 1); up to
//!   `result_depth` results wait in the FIFO under backpressure. (The RX path uses 32: it pops
//!   a result only with the frame's checksum verdict, see `top::rx_cfg`.)
//! - Cost: the AND/XOR trees, about 21 LUT4 per hashed input bit (the floor for this form; one
//!   level of Karatsuba splitting or per-byte tables in block RAM, which need a fill engine,
//!   would be cheaper and are not built); LUT/FF/Fmax per preset: results/AREA.md, row
//!   `rss_toeplitz`.
//! - Golden model: `nicgen_model::rss::rss` (on `nicgen_model::toeplitz`); test:
//!   `testbench/tests/rss/rss_toeplitz.rs`.

use nicgen_edsl::prelude::*;

/// Microsoft's RSS verification key: the reset value of the key registers.
pub const MICROSOFT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

nicgen_edsl::record! {
    /// A request (`s_axis_req_tdata`): the flow to hash and an opaque tag (the module docs'
    /// table says what each field holds).
    pub struct RssReq(tag_bits: u32) {
        /// [`l3`] code.
        l3: 2,
        /// [`l4`] code.
        l4: 2,
        /// An IP fragment: never hash ports.
        frag: 1,
        src_ip: 128,
        dst_ip: 128,
        src_port: 16,
        dst_port: 16,
        /// Opaque, returned with the result.
        tag: tag_bits,
    }
}

nicgen_edsl::record! {
    /// A result (`m_axis_res_tdata`), in request order.
    pub struct RssRes(queue_bits: u32, tag_bits: u32) {
        /// Toeplitz hash (0 when nothing was hashed).
        hash: 32,
        /// [`rss_type`] code.
        rss_type: 3,
        /// Indirection-table entry `hash & (table_size - 1)`.
        queue: queue_bits,
        /// The request's tag.
        tag: tag_bits,
    }
}

nicgen_edsl::record! {
    /// The configuration port: one word written per cycle at `cfg_we` (ports `cfg_<field>`).
    pub struct CfgWrite {
        we: 1,
        /// [`cfg_addr`].
        addr: cfg_addr::BITS,
        wdata: 32,
    }
}

/// `l3` codes.
pub mod l3 {
    pub const NONE: u8 = 0;
    pub const IPV4: u8 = 1;
    pub const IPV6: u8 = 2;
}

/// `l4` codes.
pub mod l4 {
    pub const NONE: u8 = 0;
    pub const TCP: u8 = 1;
    pub const UDP: u8 = 2;
}

/// `rss_type` codes; enable bit `t - 1` of register 0x10 enables type `t`.
pub mod rss_type {
    pub const NONE: u8 = 0;
    pub const IPV4: u8 = 1;
    pub const TCP_IPV4: u8 = 2;
    pub const UDP_IPV4: u8 = 3;
    pub const IPV6: u8 = 4;
    pub const TCP_IPV6: u8 = 5;
    pub const UDP_IPV6: u8 = 6;
}

/// Configuration addresses.
pub mod cfg_addr {
    /// Key word k (0..=9) is at `KEY + k`.
    pub const KEY: u32 = 0x000;
    /// Hash-type enables (bits 5:0).
    pub const ENABLES: u32 = 0x010;
    /// Indirection entry i is at `TABLE + i`.
    pub const TABLE: u32 = 0x100;
    /// Width of `cfg_addr`.
    pub const BITS: u32 = 12;
}

/// The mlx5 CQE `rss_hash_type` byte for an `rss_type` code: bits 3:2 IP fields hashed
/// (1 IPv4, 2 IPv6), bits 7:6 L4 fields hashed (1 TCP, 2 UDP); 0 for none (and for codes 7).
pub const fn cqe_rss_hash_type(rss_type: u8) -> u8 {
    match rss_type {
        1 => 1 << 2,
        2 => 1 << 2 | 1 << 6,
        3 => 1 << 2 | 2 << 6,
        4 => 2 << 2,
        5 => 2 << 2 | 1 << 6,
        6 => 2 << 2 | 2 << 6,
        _ => 0,
    }
}

/// [`cqe_rss_hash_type`] in hardware: the 8-bit CQE byte for a 3-bit `rss_type` signal.
#[track_caller]
pub fn cqe_rss_hash_type_sig(rss_type: Sig) -> Sig {
    let arms: Vec<(u64, Sig)> = (1u8..=6)
        .map(|t| (t as u64, lit(8, cqe_rss_hash_type(t) as u32)))
        .collect();
    case(rss_type, &arms, 0u32)
}

/// Block parameters (the module docs' Internals say what each builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RssCfg {
    /// Indirection-table entries: a power of two, 2..=2048.
    pub table_size: u32,
    /// Receive queues (>= 1): the reset table is i mod `queues`; `queue` is clog2(`queues`)
    /// bits (at least 1). Entries written through the config port are not checked against it.
    pub queues: u32,
    /// Width of the opaque `tag` (>= 1).
    pub tag_bits: u32,
    /// AND terms per first-stage group (1..=8): 2 fill a LUT4 (one LUT level right after the
    /// high-fan-out input and key bits), 3 a LUT6.
    pub first_terms: u32,
    /// Partials XORed per later pipeline stage (2..=64): 16 is two LUT4 levels.
    pub xor_fanin: u32,
    /// Copies of the input vector and the key (1, 2 or 4), each feeding 32 / `replicas` trees.
    pub replicas: u32,
    /// Entries of the result FIFO, and so the credits: requests accepted and not yet popped.
    /// A power of two of at least `latency + 2` for one request per cycle from a consumer that
    /// pops at once; a consumer that pops each result `k` cycles after its request (the RX path
    /// joins it with the checksum verdict) needs `latency + k + 2`.
    pub result_depth: u32,
}

impl Default for RssCfg {
    fn default() -> Self {
        RssCfg {
            table_size: 128,
            queues: 16,
            tag_bits: 8,
            first_terms: 2,
            xor_fanin: 16,
            replicas: 2,
            result_depth: 16,
        }
    }
}

/// Bits of the hashed input vector (the IPv6 4-tuple).
pub const INPUT_BITS: u32 = 288;
/// Bits of the key.
pub const KEY_BITS: u32 = 320;
/// Entries per indirection-table bank: the depth of the smallest LUT RAM (ECP5's 16 x 4), so
/// that a bank's read is one LUT-RAM cell deep and the bank select gets a stage of its own.
pub const TABLE_BANK: u32 = 16;

impl RssCfg {
    /// Width of `queue`.
    pub fn queue_bits(&self) -> u32 {
        clog2(self.queues as u64)
    }

    /// The request record's shape ([`RssReq`] with `tag_bits`).
    pub fn req_layout(&self) -> RssReq<u32> {
        RssReq::shape(self.tag_bits)
    }

    /// The result record's shape ([`RssRes`] with `queue_bits` and `tag_bits`).
    pub fn res_layout(&self) -> RssRes<u32> {
        RssRes::shape(self.queue_bits(), self.tag_bits)
    }

    /// Partials per hash bit after each tree stage (the last is 1).
    pub fn tree_stages(&self) -> Vec<u32> {
        let mut v = vec![INPUT_BITS.div_ceil(self.first_terms)];
        while *v.last().unwrap() > 1 {
            let n = v.last().unwrap().div_ceil(self.xor_fanin);
            v.push(n);
        }
        v
    }

    /// Cycles from a request's transfer to its result's `tvalid`: the input register, the
    /// input vector, the tree stages, the table read, the result FIFO.
    pub fn latency(&self) -> u32 {
        self.tree_stages().len() as u32 + 5
    }

    /// Power-up contents of the indirection table: entry i = i mod `queues`.
    pub fn default_table(&self) -> Vec<u32> {
        (0..self.table_size).map(|i| i % self.queues).collect()
    }

    /// Reject parameters the block cannot be built with.
    #[track_caller]
    pub fn check(&self) -> Result<(), ElabError> {
        let bad = |m: String| Err(ElabError::config("rss_toeplitz", m));
        if !self.table_size.is_power_of_two() || !(2..=2048).contains(&self.table_size) {
            return bad(format!(
                "table_size {} must be a power of two in 2..=2048 (entries live at config addresses 0x100..0x8FF)",
                self.table_size
            ));
        }
        if self.queues == 0 || self.queues > 1 << 16 {
            return bad(format!("queues {} must be in 1..=65536", self.queues));
        }
        if self.tag_bits == 0 {
            return bad("tag_bits must be at least 1".into());
        }
        if !(1..=8).contains(&self.first_terms) {
            return bad(format!("first_terms {} must be in 1..=8", self.first_terms));
        }
        if !(2..=64).contains(&self.xor_fanin) {
            return bad(format!("xor_fanin {} must be in 2..=64", self.xor_fanin));
        }
        if ![1, 2, 4].contains(&self.replicas) {
            return bad(format!(
                "replicas {} must be 1, 2 or 4 (each copy needs its own flip-flop control set)",
                self.replicas
            ));
        }
        if !self.result_depth.is_power_of_two() || self.latency() + 2 > self.result_depth {
            return bad(format!(
                "result_depth {} must be a power of two of at least latency + 2 = {}",
                self.result_depth,
                self.latency() + 2
            ));
        }
        Ok(())
    }

    /// Module name.
    pub fn module_name(&self) -> String {
        format!(
            "rss_toeplitz_t{}_q{}_g{}_a{}_f{}_r{}_n{}",
            self.table_size,
            self.queues,
            self.tag_bits,
            self.first_terms,
            self.xor_fanin,
            self.replicas,
            self.result_depth
        )
    }
}

/// XOR-reduce `v` in groups of `group` bits (least significant first); returns one bit per
/// group, group 0 in bit 0.
fn xor_groups(v: Sig, group: u32) -> Sig {
    let w = v.width();
    let n = w.div_ceil(group);
    let bits: Vec<Sig> = (0..n)
        .rev()
        .map(|g| {
            let lo = g * group;
            let hi = (lo + group - 1).min(w - 1);
            let s = v.slice(hi, lo);
            if s.width() == 1 {
                s
            } else {
                s.xor_reduce()
            }
        })
        .collect();
    cat(&bits)
}

/// The block's ports.
pub struct RssPorts {
    /// `cfg_we`, `cfg_addr`, `cfg_wdata`.
    pub cfg: CfgWrite,
    /// Requests (`s_axis_req_*`).
    pub req: RecordStream<RssReq<u32>>,
    /// Results (`m_axis_res_*`), in request order.
    pub res: RecordStream<RssRes<u32>>,
}

impl Ports for RssPorts {
    type Cfg = RssCfg;
    fn ports(io: &Io, cfg: &RssCfg) -> Self {
        RssPorts {
            cfg: io.inputs("cfg_", &CfgWrite::shape()),
            req: RecordStream::sink(io, "s_axis_req", cfg.req_layout()),
            res: RecordStream::source(io, "m_axis_res", cfg.res_layout()),
        }
    }
}

/// Build the block.
pub fn rss_toeplitz(cfg: &RssCfg) -> Result<Block<RssPorts>, ElabError> {
    cfg.check()?;
    let cfg = *cfg;
    Block::build(cfg.module_name(), cfg, move |p: RssPorts| {
        doc("RSS: Toeplitz hash over the Microsoft input sets, hash-type selection and");
        doc(&format!(
            "indirection table ({} x {} bits); 1 request/cycle, latency {} cycles.",
            cfg.table_size,
            cfg.queue_bits(),
            cfg.latency()
        ));
        let qb = cfg.queue_bits();
        let lg = clog2(cfg.table_size as u64);

        // ---- Configuration registers.
        let (cfg_we, cfg_a, cfg_d) = (p.cfg.we, p.cfg.addr, p.cfg.wdata);
        let key_words: Vec<Sig> = (0..10u32)
            .map(|k| {
                let b = &MICROSOFT_KEY[4 * k as usize..4 * k as usize + 4];
                let init = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let r = reg(32).init(init).named(&format!("key_w{k}"));
                r.set_if(cfg_we & cfg_a.eq((cfg_addr::KEY + k) as u64), cfg_d);
                r
            })
            .collect();
        // Key bit 319 (bit 0 of word 9) is beyond the longest input's reach.
        key_words[9].unused();
        let key = cat(&key_words).named("key"); // key bit m is key[319 - m]
        let en = reg(6).init(0x3Fu32).named("hash_en");
        en.set_if(
            cfg_we & cfg_a.eq(cfg_addr::ENABLES as u64),
            cfg_d.slice(5, 0),
        );
        // The table in banks of `TABLE_BANK` entries (the depth of the smallest LUT RAMs), so
        // that the read can register each bank's word before the bank select (below).
        let bank = TABLE_BANK.min(cfg.table_size);
        let bank_bits = clog2(bank as u64);
        let init = cfg.default_table();
        let t_hit = (cfg_we
            & cfg_a.ge(cfg_addr::TABLE as u64)
            & cfg_a.lt((cfg_addr::TABLE + cfg.table_size) as u64))
        .named("cfg_table_hit");
        let t_idx = (cfg_a - cfg_addr::TABLE as u64).named("cfg_table_off");
        let banks: Vec<Mem> = (0..cfg.table_size / bank)
            .map(|b| {
                let m = memory(&format!("indir_b{b}"), qb, bank);
                m.init(
                    init[(b * bank) as usize..((b + 1) * bank) as usize]
                        .iter()
                        .map(|&q| BigUint::from(q))
                        .collect(),
                );
                let here = if bank_bits < lg {
                    t_idx.slice(lg - 1, bank_bits).eq(b as u64)
                } else {
                    lit(1, 1u32)
                };
                m.write(
                    t_hit & here,
                    t_idx.slice(bank_bits - 1, 0),
                    cfg_d.slice(qb - 1, 0),
                );
                m
            })
            .collect();

        // ---- Request side and credits.
        let (s_valid, s_ready, m_ready) = (p.req.valid, p.req.ready, p.res.ready);
        // Requests accepted and not yet popped as results (0..=result_depth): ready while
        // below `result_depth`, i.e. while the top bit is clear.
        let cw = clog2(cfg.result_depth as u64) + 1;
        let credits_used = reg_init(cw, 0u32).named("credits_used");
        let ready = (!credits_used.bit(cw - 1)).named("credit_free");
        // The port's ready is a flop of its own, loaded with the same value as the counter's
        // top bit (inverted, so that synthesis keeps both): it goes only to the requester,
        // whose register slice it enables (146 loads), so the placer is free to put it there
        // rather than among the credit logic (docs/TIMING.md, rule 3).
        let ready_port = reg_init(1, 1u32).named("req_ready");
        s_ready.set(ready_port);
        let accept = (s_valid & ready).named("accept");

        // Copies of a register: Yosys merges identical flip-flops, so every copy gets its own
        // control set (flavor bit 0: clock enable `ce`; bit 1: synchronous reset to 0, both
        // free in the FF); the copies agree wherever their values are used.
        let replica = |d: Sig, flavor: u32, ce: Sig, name: String| {
            let q = reg(d.width());
            if flavor & 1 != 0 {
                q.enable(ce);
            }
            if flavor & 2 != 0 {
                q.init(0u32);
            }
            q.set(d);
            q.named(&name)
        };

        // ---- Stage A: decode the type from the ports; register the fields and the masks
        // (the ports drive a few LUT levels and flip-flops only).
        let r = p.req.fields();
        let (l3f, l4f, frag) = (r.l3, r.l4, r.frag);
        let v4 = l3f.eq(l3::IPV4 as u64).named("is_v4");
        let v6 = l3f.eq(l3::IPV6 as u64).named("is_v6");
        let tcp = l4f.eq(l4::TCP as u64).named("is_tcp");
        let udp = l4f.eq(l4::UDP as u64).named("is_udp");
        // Enable bits of the request's IP version: 2-tuple, TCP 4-tuple, UDP 4-tuple.
        let en_ip = mux(v6, en.bit(3), en.bit(0));
        let en_tcp = mux(v6, en.bit(4), en.bit(1));
        let en_udp = mux(v6, en.bit(5), en.bit(2));
        let ip = (v4 | v6).named("is_ip");
        let four = (ip & !frag & ((tcp & en_tcp) | (udp & en_udp))).named("use_ports");
        let two = (ip & en_ip).named("two_tuple_en");
        let hashed = (four | two).named("use_ip");
        let valid_a = reg_init(1, 0u32).named("valid_a");
        valid_a.set(accept);
        let m4 = delay(v4 & hashed).named("mask_v4");
        // The IPv6 mask gates both addresses, 256 bits of the hash input: four copies, each
        // over 64 of them, so that no copy is pulled away from the decode that feeds it by a
        // net of 256 loads (docs/TIMING.md, rules 3 and 4). Their control sets differ (see
        // `replica`); all four hold the request's mask whenever `valid_a` does, the only cycles
        // whose hash input is used.
        let m6: Vec<Sig> = (0..4)
            .map(|k| {
                let name = if k == 0 {
                    "mask_v6".to_string()
                } else {
                    format!("mask_v6_r{k}")
                };
                replica(v6 & hashed, k, accept, name)
            })
            .collect();
        let p4 = delay(v4 & four).named("mask_v4_ports");
        let p6 = delay(v6 & four).named("mask_v6_ports");
        let src = delay(r.src_ip).named("src_a");
        let dst = delay(r.dst_ip).named("dst_a");
        let ports = delay(cat(&[r.src_port, r.dst_port])).named("ports_a");
        let tcp_a = delay(tcp).named("is_tcp_a");
        // rss_type from the stage's mask flops: 4-tuple types are 2 (TCP) / 3 (UDP), 2-tuple 1,
        // +3 for IPv6; none 0: one LUT, where a decode from the ports and the enables would be
        // five deep.
        let base = mux(
            p4 | p6,
            mux(tcp_a, lit(3, 2u32), lit(3, 3u32)),
            mux(m4 | m6[0], lit(3, 1u32), lit(3, 0u32)),
        );
        let ty_a = mux(m6[0], base + 3u32, base).named("rss_type");
        let tag_a = delay(r.tag).named("tag_a");

        // ---- Stage B: the masked 288-bit input vector, one copy per tree group.
        let f = |s: Sig, m: Sig| s & m.repl(s.width());
        // X as a big-endian integer: input byte 0 in bits 287:280 (input bit i is X[287 - i]).
        let x = cat(&[
            f(src.slice(127, 96), m6[0]) | f(src.slice(31, 0), m4),
            f(src.slice(95, 64), m6[0]) | f(dst.slice(31, 0), m4),
            f(src.slice(63, 32), m6[1]) | f(ports, p4),
            f(src.slice(31, 0), m6[1]),
            f(dst.slice(127, 64), m6[2]),
            f(dst.slice(63, 0), m6[3]),
            f(ports, p6),
        ])
        .named("hash_in");
        // Copies cut the fan-out of each input and key bit to 32 / replicas trees. Yosys merges
        // identical flip-flops, so every copy gets its own control set: one of two copies of
        // its enable (different flip-flops: their inputs differ) with or without a synchronous
        // reset, up to four sets; each enable flip-flop drives the clock enables of two copies
        // at most. The copies load only with their enables, so a simulator re-orders a vector
        // into its phases (below) when a request or a key write comes, not every cycle.
        let key_load = reg_init(1, 1u32).named("key_load");
        key_load.set(cfg_we);
        // High whenever `key_load` is and in the cycle after (a second load of the same key),
        // so that its input differs from `key_load`'s.
        let key_load_copy = reg_init(1, 1u32).named("key_load_copy");
        key_load_copy.set(cfg_we | key_load);
        // Not reset, unlike `valid_a`, so that the two stay two flip-flops.
        let valid_a_copy = reg(1).named("valid_a_copy");
        valid_a_copy.set(accept);
        // Copy q: enable copy q & 1, a reset when q & 2.
        let loaded = |d: Sig, q: u32, ce: [Sig; 2], name: String| {
            replica(d, (q & 2) | 1, ce[(q & 1) as usize], name)
        };
        let per = 32 / cfg.replicas;
        // Stage 1 XORs the AND terms of `first_terms` adjacent input bits. Input and key are
        // registered taken apart into phases (phase p: bits p, p + a, p + 2a, ... of a copy,
        // a = `first_terms`), so that a tree's stage-1 partials are whole-vector expressions:
        // the XOR over p of `X phase p & key window phase`. The same flip-flops and LUTs as one
        // XOR per group (the phases are wiring), and a simulator evaluates a few wide
        // operations instead of one reduction per group, and re-orders the bits only when a
        // register loads.
        let stages = cfg.tree_stages();
        let a = cfg.first_terms;
        let n1 = stages[0];
        let phases = |v: Sig| -> Vec<Sig> {
            (0..a.min(v.width()))
                .map(|p| {
                    let bits: Vec<Sig> = (p..v.width())
                        .step_by(a as usize)
                        .rev()
                        .map(|b| v.bit(b))
                        .collect();
                    cat(&bits)
                })
                .collect()
        };
        let x_ph: Vec<Vec<Sig>> = (0..cfg.replicas)
            .map(|q| {
                phases(x)
                    .into_iter()
                    .enumerate()
                    .map(|(p, d)| {
                        loaded(d, q, [valid_a, valid_a_copy], format!("hash_in_r{q}_p{p}"))
                    })
                    .collect()
            })
            .collect();
        // Trees j in group q meet key bits per*q .. per*q + per - 1 + 287.
        let key_ph: Vec<Vec<Sig>> = (0..cfg.replicas)
            .map(|q| {
                let hi = KEY_BITS - 1 - per * q;
                let lo = KEY_BITS - INPUT_BITS - (per * q + per - 1);
                phases(key.slice(hi, lo))
                    .into_iter()
                    .enumerate()
                    .map(|(p, d)| loaded(d, q, [key_load, key_load_copy], format!("key_r{q}_p{p}")))
                    .collect()
            })
            .collect();
        let mut valid = reg_init(1, 0u32).named("valid_b");
        valid.set(valid_a);
        let mut ty_q = delay(ty_a).named("rss_type_b");
        let mut tag_q = delay(tag_a).named("tag_b");

        // ---- Toeplitz AND/XOR trees, one per hash bit, registered every stage.
        // Groups g0 .. g0 + n1 - 1 of a phase vector, zero past its end.
        let window = |v: Sig, g0: u32| -> Sig {
            let hi = (g0 + n1).min(v.width()) - 1;
            v.slice(hi, g0).zext(n1)
        };
        let mut parts: Vec<Sig> = (0..32u32)
            .map(|j| {
                // Key bits j .. j+287 aligned with X: X[287 - i] meets key bit i + j. The copy
                // for group q starts at key bit per*q (its msb), so replica bit b of X meets
                // replica bit lo + b of the key.
                let q = (j / per) as usize;
                let lo = per - 1 - (j - per * q as u32);
                let terms: Vec<Sig> = (0..a.min(INPUT_BITS))
                    .map(|p| {
                        let k = key_ph[q][((lo + p) % a) as usize];
                        (window(x_ph[q][p as usize], 0) & window(k, (lo + p) / a))
                            .named(&format!("terms_b{}_p{p}", 31 - j))
                    })
                    .collect();
                let part = terms[1..].iter().fold(terms[0], |acc, t| acc ^ *t);
                delay(part).named(&format!("part1_b{}", 31 - j))
            })
            .collect();
        let v = reg_init(1, 0u32).named("valid_s1");
        v.set(valid);
        valid = v;
        ty_q = delay(ty_q).named("rss_type_s1");
        tag_q = delay(tag_q).named("tag_s1");
        for (s, n) in stages.iter().enumerate().skip(1) {
            parts = parts
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    let g = xor_groups(*p, cfg.xor_fanin);
                    debug_assert_eq!(g.width(), *n);
                    delay(g).named(&format!("part{}_b{}", s + 1, 31 - j))
                })
                .collect();
            let v = reg_init(1, 0u32).named(&format!("valid_s{}", s + 1));
            v.set(valid);
            valid = v;
            ty_q = delay(ty_q).named(&format!("rss_type_s{}", s + 1));
            tag_q = delay(tag_q).named(&format!("tag_s{}", s + 1));
        }
        // Hash bit 31 - j is tree j.
        let hash = cat(&parts).named("hash");

        // ---- Indirection table read in two registered stages, then into the result FIFO:
        // each bank's word and the bank number, then the bank select, so that the LUT RAM and
        // the 8:1 bank mux are not one cycle (docs/TIMING.md, rule 7).
        let words: Vec<Sig> = banks
            .iter()
            .enumerate()
            .map(|(b, m)| {
                delay(m.read_async(hash.slice(bank_bits - 1, 0))).named(&format!("indir_word_b{b}"))
            })
            .collect();
        let queue = if words.len() == 1 {
            words[0]
        } else {
            let sel = delay(hash.slice(lg - 1, bank_bits)).named("indir_bank_t1");
            select(
                &words[1..]
                    .iter()
                    .enumerate()
                    .map(|(b, w)| (sel.eq((b + 1) as u64), *w))
                    .collect::<Vec<_>>(),
                words[0],
            )
        };
        let hash1 = delay(hash).named("hash_t1");
        let ty1 = delay(ty_q).named("rss_type_t1");
        let tag1 = delay(tag_q).named("tag_t1");
        let v1 = reg_init(1, 0u32).named("valid_t1");
        v1.set(valid);
        let word = p.res.shape.pack(&RssRes {
            hash: delay(hash1).named("hash_t"),
            rss_type: delay(ty1).named("rss_type_t"),
            queue: delay(queue).named("queue_t"),
            tag: delay(tag1).named("tag_t"),
        });
        let v = reg_init(1, 0u32).named("valid_t");
        v.set(v1);
        let valid = v;
        let fifo = memory("results", word.width(), cfg.result_depth);
        let aw = clog2(cfg.result_depth as u64);
        let wr = reg_init(aw, 0u32).named("res_wr_ptr");
        let rd = reg_init(aw, 0u32).named("res_rd_ptr");
        fifo.write(valid, wr, word);
        wr.set_if(valid, wr + 1u32);
        // Counters step by +1/-1 from precomputed neighbours, and `tvalid` is a register, so
        // `m_axis_res_tready` reaches flip-flops through two LUT levels.
        let step = |c: Sig, up: Sig, down: Sig| {
            select(&[(up & !down, c + 1u32), (down & !up, c - 1u32)], c)
        };
        let count = reg_init(cw, 0u32).named("res_count");
        let m_valid = reg_init(1, 0u32).named("res_valid");
        let pop = (m_valid & m_ready).named("pop");
        rd.set_if(pop, rd + 1u32);
        count.set(step(count, valid, pop));
        m_valid.set(valid | count.gt(1u32) | (count.eq(1u32) & !pop));
        let credits_next = step(credits_used, accept, pop).named("credits_next");
        credits_used.set(credits_next);
        ready_port.set(!credits_next.bit(cw - 1));
        p.res.data.set(fifo.read_async(rd));
        p.res.valid.set(m_valid);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_rejects_bad_parameters() {
        rss_toeplitz(&RssCfg::default()).unwrap();
        let e = rss_toeplitz(&RssCfg {
            table_size: 100,
            ..RssCfg::default()
        })
        .unwrap_err();
        assert!(e.mentions("power of two"), "{e}");
        let e = rss_toeplitz(&RssCfg {
            tag_bits: 0,
            ..RssCfg::default()
        })
        .unwrap_err();
        assert!(e.mentions("tag_bits"), "{e}");
    }

    #[test]
    fn layouts_and_latency() {
        let c = RssCfg::default();
        assert_eq!(c.req_layout().width(), 293 + 8);
        assert_eq!(c.res_layout().width(), 32 + 3 + 4 + 8);
        assert_eq!(c.tree_stages(), vec![144, 9, 1]);
        assert_eq!(c.latency(), 8);
        assert_eq!(cqe_rss_hash_type(rss_type::TCP_IPV6), 0x48);
        assert_eq!(cqe_rss_hash_type(rss_type::UDP_IPV4), 0x84);
        assert_eq!(cqe_rss_hash_type(7), 0);
        let m = Module::build("cqe_hash_type", || {
            let t = input("rss_type", 3);
            output("cqe_byte", cqe_rss_hash_type_sig(t));
        })
        .unwrap();
        assert_eq!(m.ports[1].width, 8);
    }

    #[test]
    fn deeper_and_replicated_shapes_build() {
        let c = RssCfg {
            table_size: 64,
            queues: 3,
            tag_bits: 5,
            first_terms: 3,
            xor_fanin: 8,
            replicas: 4,
            result_depth: 32,
        };
        assert_eq!(c.tree_stages(), vec![96, 12, 2, 1]);
        assert_eq!(c.latency(), 9);
        assert_eq!(c.queue_bits(), 2);
        rss_toeplitz(&c).unwrap();
        let e = rss_toeplitz(&RssCfg { replicas: 3, ..c }).unwrap_err();
        assert!(e.mentions("replicas"), "{e}");
    }
}
