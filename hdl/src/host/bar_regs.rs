//! `bar_regs`: the BAR 0 register file and address decoder, built from the register map
//! ([`regmap::BLOCKS`]) at elaboration (docs/DESIGN.md, decision 4). Nothing here lists
//! registers: every register of every block is decoded according to its [`Access`], so a
//! register added to the map gets its ports, its read-mux arm and its write decode with no
//! change to this file.
//!
//! - API: [`bar_regs`]`(&`[`BarCfg`]`)` builds module `bar_regs` with ports [`BarPorts`]: a
//!   parent reaches a register's ports by its typed name (`u_bar.ro(regs::dev::HEALTH)`,
//!   `.rw(..)`, `.wo(..)`, see [`BarPorts`]). [`BarCfg`] (in `bar_regs/cfg.rs`) carries the
//!   values of the `Ro` registers known at elaboration (`regs::id::MAGIC`, one `u32` per element);
//!   [`BarCfg::id`] fills the `id` block from a preset, the host-interface sizes
//!   ([`HostParams`]) and the generator's version and git commit ([`BuildInfo`]).
//! - Ports: the BAR port of [`crate::host`] ([`Axil`]: `s_axil_aw*`, `s_axil_w*`, `s_axil_b*`,
//!   `s_axil_ar*`, `s_axil_r*`; addresses of [`BAR_BITS`] bits, low two ignored), then per
//!   register, in map order, named from `<base>` = `<block>_<reg>` in lower case
//!   ([`port_base`]):
//!
//!   | access | ports | meaning |
//!   |---|---|---|
//!   | `Ro`, constant in [`BarCfg`] | none | a constant arm of the read mux |
//!   | `Ro` | in `ro_<base>` (32 x count) | element `i` at `[32i+31:32i]`, read as is |
//!   | `Ro64` | in `ro_<base>` (64 x count) | reading the low dword returns bits 31:0 and latches bits 63:32 into a shadow, which reading the high dword returns |
//!   | `Rw` | out `rw_<base>` (32 x count), `rw_<base>_we` (count) | one register per element, reset to the map's `reset`; `_we` bit `i` pulses for one cycle when element `i` is written, in the cycle its new value appears |
//!   | `Wo` | out `wo_<base>_we`, `wo_<base>_data` (32), arrays also `wo_<base>_index` (ceil log2 count) | a one-cycle strobe per write; `_data` and `_index` are valid with it; reads return 0 |
//!
//! - Responses (`bresp`, `rresp`): an address inside no register: DECERR (3), read data 0, the
//!   write ignored (DECERR wins over a bad `wstrb`); a write whose `wstrb` is not all ones:
//!   SLVERR (2), no effect; otherwise OKAY (0). Writes to `Ro` / `Ro64` registers are OKAY and
//!   ignored; reads of `Wo` registers are OKAY and return 0.
//! - Handshakes: `awready`, `wready` and `arready` are flops (one holding register per
//!   channel: `!aw_full`, `!w_full`, `!ar_full`); no input reaches an output combinationally.
//!   `aw` and `w` may come in either order or together; a write is performed once both are
//!   held and no response is pending; `b` and `r` hold until `bready` / `rready`. One write
//!   and one read are in progress at a time, independently of each other.
//! - Latency: write (the later of `aw`/`w` handshake in cycle 0) to `bvalid`: 2 cycles; its
//!   effects (new `rw_*` value, `rw_*_we` pulse, `wo_*` strobe) appear in the cycle `bvalid`
//!   rises. Read (`ar` handshake in cycle 0) to `rvalid`: 2 cycles. A read samples its
//!   `ro_*` input in the cycle after the `ar` handshake at the earliest and before `rvalid`
//!   (once `r` is free): a value stable over that window is read exactly.
//! - Throughput: one write per 2 cycles and one read per 2 cycles (with `bready` / `rready`
//!   high), at the same time.
//! - Internals: `wr_go` (both halves held, `b` free) decodes `aw_dword` per block
//!   (`wr_hit_<block>`, `wr_<block>_off`) and registers the response and the strobes;
//!   `wo_*_data` / `wo_*_index` come straight from the `w` / `aw` holding registers, which
//!   cannot change before the cycle after the strobe. `rd_go` selects `rd_<block>_data` (a
//!   `case` per block) into `rdata`. Every register has a reset, so outputs are defined after
//!   reset.
//! - Cost: per `Rw` element 33 FFs, per `Ro64` register a 32-bit shadow, per `Wo` register one
//!   strobe FF, ~110 FFs of channel state; LUTs are mostly the read mux (one `case` per block
//!   over its readable dwords, then an AND-OR over blocks); no row in results/AREA.md.
//! - Golden model: `nicgen_model::regfile::RegFile` (transactions in, responses, read data and
//!   effects out); tests: the unit tests below (ports = the map, bad configs) and
//!   `testbench/tests/host/bar_regs.rs` (every register and unmapped addresses under random
//!   timing on all five channels, against the model; Icarus replay; `verilator -Wall`).

mod cfg;

pub use cfg::{BarCfg, BuildInfo, HostParams, MAP_ABI};

use super::regmap::{self, Access, Reg, RegRef};
use super::{Axil, BAR_BITS};
use cfg::check_cfg;
use nicgen_edsl::prelude::*;
use nicgen_edsl::{report, Loc};
use std::collections::HashMap;

/// AXI4-Lite response codes.
pub mod resp {
    pub const OKAY: u32 = 0;
    pub const SLVERR: u32 = 2;
    pub const DECERR: u32 = 3;
}

/// `<block>_<reg>` in lower case: the stem of a register's port names.
pub fn port_base(block: &regmap::Block, reg: &Reg) -> String {
    format!("{}_{}", block.name, reg.name).to_ascii_lowercase()
}

/// Width of `wo_<base>_index` for an array of `count` elements (0: no index port).
pub fn index_bits(count: u32) -> u32 {
    if count > 1 {
        clog2(count as u64)
    } else {
        0
    }
}

/// Dword-offset bits inside a block.
fn off_bits(b: &regmap::Block) -> u32 {
    b.span.trailing_zeros() - 2
}

/// The ports of a read-write register: `rw_<base>` (element `i` at `[32i+31:32i]`) and
/// `rw_<base>_we` (bit `i` pulses when element `i` is written).
#[derive(Clone, Copy, Debug)]
pub struct RwPort {
    pub value: Sig,
    pub we: Sig,
}

/// The ports of a write-only register: `wo_<base>_we` (a one-cycle strobe per write),
/// `wo_<base>_data`, and for an array `wo_<base>_index`.
#[derive(Clone, Copy, Debug)]
pub struct WoPort {
    pub we: Sig,
    pub data: Sig,
    pub index: Option<Sig>,
}

/// A register's ports, by its access (see the module doc's table).
#[derive(Clone, Copy, Debug)]
pub enum RegPort {
    /// `Ro` with a constant value in [`BarCfg`]: no port.
    Const,
    /// `Ro` / `Ro64`: `ro_<base>`, the value the hardware drives.
    Ro(Sig),
    Rw(RwPort),
    Wo(WoPort),
}

/// The ports of [`bar_regs`]: the BAR (`s_axil_*`), then every register's, in map order. A
/// parent reaches a register's ports by its typed name ([`crate::host::regs`]):
///
/// ```text
/// let u_bar = bar.instance("u_bar");
/// connect(&Axil::sink(&Io::module(), "s_axil"), &u_bar.axil);
/// u_bar.ro(regs::dev::HEALTH).set(health);          // an Ro register: drive its value
/// let ctrl = u_bar.rw(regs::dev::CTRL);            // an Rw register: ctrl.value, ctrl.we
/// let exec = u_bar.wo(regs::qcmd::EXEC);           // a Wo register: exec.we, exec.data
/// ```
///
/// Asking for a register with another access, or for an `Ro` register the [`BarCfg`] made a
/// constant, is an elaboration error at the caller's line. Every output a parent leaves
/// unread must be declared so, as for any instance ([`BarPorts::regs`] lists them all).
pub struct BarPorts {
    pub axil: Axil,
    regs: Vec<(RegRef, RegPort)>,
}

impl Ports for BarPorts {
    type Cfg = BarCfg;
    fn ports(io: &Io, cfg: &BarCfg) -> Self {
        let axil = Axil::sink(io, "s_axil");
        let mut regs = Vec::new();
        for b in regmap::BLOCKS {
            for r in b.regs {
                let base = port_base(b, r);
                let rr = RegRef { block: b, reg: r };
                let port = match r.access {
                    Access::Ro if cfg.get(rr).is_some() => RegPort::Const,
                    Access::Ro => RegPort::Ro(io.input(&format!("ro_{base}"), 32 * r.count)),
                    Access::Ro64 => RegPort::Ro(io.input(&format!("ro_{base}"), 64 * r.count)),
                    Access::Rw => RegPort::Rw(RwPort {
                        value: io.output(&format!("rw_{base}"), 32 * r.count),
                        we: io.output(&format!("rw_{base}_we"), r.count),
                    }),
                    Access::Wo => RegPort::Wo(WoPort {
                        we: io.output(&format!("wo_{base}_we"), 1),
                        data: io.output(&format!("wo_{base}_data"), 32),
                        index: (r.count > 1)
                            .then(|| io.output(&format!("wo_{base}_index"), index_bits(r.count))),
                    }),
                };
                regs.push((rr, port));
            }
        }
        BarPorts { axil, regs }
    }
}

impl BarPorts {
    /// Every register with its ports, in map order.
    pub fn regs(&self) -> &[(RegRef, RegPort)] {
        &self.regs
    }

    /// The ports of register `r`.
    pub fn port(&self, r: RegRef) -> Option<RegPort> {
        self.regs
            .iter()
            .find(|(x, _)| x.block.name == r.block.name && x.reg.name == r.reg.name)
            .map(|(_, p)| *p)
    }

    #[track_caller]
    fn wrong(&self, r: RegRef, want: &str) {
        let what = match self.port(r) {
            Some(RegPort::Const) => "a constant of this BarCfg, with no port".to_string(),
            Some(_) => format!("{:?}", r.reg.access),
            None => "not in the register map".to_string(),
        };
        report(
            Loc::caller(),
            format!("register `{}` is {what}; `{want}` needs another", r.path()),
        );
    }

    /// `ro_<base>` of an `Ro` / `Ro64` register without a constant: its value (32 bits per
    /// element, 64 for `Ro64`), driven by the parent.
    #[track_caller]
    pub fn ro(&self, r: RegRef) -> Sig {
        match self.port(r) {
            Some(RegPort::Ro(s)) => s,
            _ => {
                self.wrong(r, "ro");
                wire(32 * r.reg.count)
            }
        }
    }

    /// The ports of an `Rw` register.
    #[track_caller]
    pub fn rw(&self, r: RegRef) -> RwPort {
        match self.port(r) {
            Some(RegPort::Rw(p)) => p,
            _ => {
                self.wrong(r, "rw");
                RwPort {
                    value: lit(32 * r.reg.count, 0u32),
                    we: lit(r.reg.count, 0u32),
                }
            }
        }
    }

    /// The ports of a `Wo` register.
    #[track_caller]
    pub fn wo(&self, r: RegRef) -> WoPort {
        match self.port(r) {
            Some(RegPort::Wo(p)) => p,
            _ => {
                self.wrong(r, "wo");
                WoPort {
                    we: lit(1, 0u32),
                    data: lit(32, 0u32),
                    index: None,
                }
            }
        }
    }
}

/// A block's address match on a dword address: `hit` (the bits above the block) and `off`
/// (the dword offset inside it).
struct Window {
    hit: Sig,
    off: Sig,
}

fn window(dword: Sig, b: &regmap::Block, side: &str) -> Window {
    let ob = off_bits(b);
    let top = dword.width() - 1;
    let hit = dword
        .slice(top, ob)
        .eq(u64::from(b.base >> 2 >> ob))
        .named(&format!("{side}_hit_{}", b.name));
    let off = dword.trunc(ob).named(&format!("{side}_{}_off", b.name));
    Window { hit, off }
}

/// `off` lies in the `n` dwords from `lo`.
fn within(off: Sig, lo: u32, n: u32) -> Sig {
    let ob = off.width();
    if n == 1 {
        return off.eq(u64::from(lo));
    }
    let lb = clog2(u64::from(n));
    if n.is_power_of_two() && lo & (n - 1) == 0 {
        return if lb == ob {
            lit(1, 1u32)
        } else {
            off.slice(ob - 1, lb).eq(u64::from(lo >> lb))
        };
    }
    let above = (lo > 0).then(|| off.ge(u64::from(lo)));
    let below = (u64::from(lo + n) < 1u64 << ob).then(|| off.lt(u64::from(lo + n)));
    match (above, below) {
        (Some(a), Some(b)) => a & b,
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => lit(1, 1u32),
    }
}

/// The element index of `off` in an array of `count` dwords from `lo`.
fn elem_index(off: Sig, lo: u32, count: u32) -> Sig {
    let ib = index_bits(count);
    if lo & ((1 << ib) - 1) == 0 {
        off.trunc(ib)
    } else {
        (off - u64::from(lo)).trunc(ib)
    }
}

/// OR of one-bit signals (`|{a, b, ...}`, the concatenation called `name`).
fn any(bits: &[Sig], name: &str) -> Sig {
    match bits {
        [] => lit(1, 0u32),
        [one] => *one,
        _ => cat(bits).named(name).or_reduce(),
    }
}

/// The BAR 0 register file for the whole map (see the module doc).
pub fn bar_regs(cfg: &BarCfg) -> Result<Block<BarPorts>, ElabError> {
    check_cfg(cfg)?;
    let cfg = cfg.clone();
    Block::build("bar_regs", cfg.clone(), move |p: BarPorts| {
        doc("BAR 0 register file and address decoder, generated from the register map");
        doc("(hdl/src/host/regmap.rs). AXI4-Lite slave, 32-bit data; one write and one read");
        doc("at a time, each 2 cycles from handshake to response.");
        let dw_bits = BAR_BITS - 2;
        let ax = &p.axil;
        let (awaddr, awvalid, awready) = (ax.awaddr.unused(), ax.awvalid, ax.awready);
        let (wdata, wstrb, wvalid, wready) = (ax.wdata, ax.wstrb, ax.wvalid, ax.wready);
        let (bresp_o, bvalid_o, bready) = (ax.bresp, ax.bvalid, ax.bready);
        let (araddr, arvalid, arready) = (ax.araddr.unused(), ax.arvalid, ax.arready);
        let (rdata_o, rresp_o, rvalid_o, rready) = (ax.rdata, ax.rresp, ax.rvalid, ax.rready);

        // Ports per register, in map order; the element registers of the Rw ones.
        let mut sigs: HashMap<(usize, usize), RegPort> = HashMap::new();
        let mut regs = p.regs().iter();
        for (bi, b) in regmap::BLOCKS.iter().enumerate() {
            for ri in 0..b.regs.len() {
                let (_, port) = regs.next().expect("a port entry per register");
                sigs.insert((bi, ri), *port);
            }
        }
        let mut rw_elems: HashMap<(usize, usize), Vec<Sig>> = HashMap::new();

        // ---- Write: hold aw and w, perform when both are held and b is free.
        let aw_full = reg_init(1, 0u32).named("aw_full");
        let aw_dword = reg_init(dw_bits, 0u32).named("aw_dword");
        let w_full = reg_init(1, 0u32).named("w_full");
        let w_data = reg_init(32, 0u32).named("w_data");
        let w_strb_ok = reg_init(1, 0u32).named("w_strb_ok");
        let bvalid = reg_init(1, 0u32).named("bvalid");
        let bresp = reg_init(2, 0u32).named("bresp");
        let aw_take = (awvalid & !aw_full).named("aw_take");
        let w_take = (wvalid & !w_full).named("w_take");
        let wr_go = (aw_full & w_full & !bvalid).named("wr_go");
        awready.set(!aw_full);
        wready.set(!w_full);
        aw_full.set_if(wr_go, 0u32);
        aw_full.set_if(aw_take, 1u32);
        aw_dword.set_if(aw_take, awaddr.slice(BAR_BITS - 1, 2));
        w_full.set_if(wr_go, 0u32);
        w_full.set_if(w_take, 1u32);
        w_data.set_if(w_take, wdata);
        w_strb_ok.set_if(w_take, wstrb.and_reduce());
        // The effects of a mapped write with a full wstrb.
        let wr_commit = (wr_go & w_strb_ok).named("wr_commit");
        let mut wr_mapped = Vec::new();
        for (bi, b) in regmap::BLOCKS.iter().enumerate() {
            let win = window(aw_dword, b, "wr");
            let mut regs_hit = Vec::new();
            for (ri, r) in b.regs.iter().enumerate() {
                let base = port_base(b, r);
                let lo = r.offset / 4;
                regs_hit.push(within(win.off, lo, regmap::reg_bytes(r) / 4));
                match sigs[&(bi, ri)] {
                    RegPort::Rw(port) => {
                        let mut elems = Vec::new();
                        let mut pulses = Vec::new();
                        for e in 0..r.count {
                            let suffix = if r.count > 1 {
                                e.to_string()
                            } else {
                                String::new()
                            };
                            let sel = (wr_commit & win.hit & win.off.eq(u64::from(lo + e)))
                                .named(&format!("{base}{suffix}_wr"));
                            let x = reg_init(32, r.reset).named(&format!("{base}{suffix}_q"));
                            x.set_if(sel, w_data);
                            let p = reg_init(1, 0u32).named(&format!("{base}{suffix}_we_q"));
                            p.set(sel);
                            elems.push(x);
                            pulses.push(p);
                        }
                        let msb_first =
                            |v: &[Sig]| cat(&v.iter().rev().copied().collect::<Vec<_>>());
                        port.value.set(msb_first(&elems));
                        port.we.set(msb_first(&pulses));
                        rw_elems.insert((bi, ri), elems);
                    }
                    RegPort::Wo(WoPort { we, data, index }) => {
                        let sel = (wr_commit & win.hit & within(win.off, lo, r.count))
                            .named(&format!("{base}_wr"));
                        let p = reg_init(1, 0u32).named(&format!("{base}_we_q"));
                        p.set(sel);
                        we.set(p);
                        // Held until the cycle after the strobe (w_full is clear only then).
                        data.set(w_data);
                        if let Some(i) = index {
                            i.set(elem_index(win.off, lo, r.count));
                        }
                    }
                    RegPort::Const | RegPort::Ro(_) => {}
                }
            }
            let regs = any(&regs_hit, &format!("wr_{}_regs", b.name));
            wr_mapped.push((win.hit & regs).named(&format!("wr_{}_mapped", b.name)));
        }
        let wr_mapped = any(&wr_mapped, "wr_blocks").named("wr_mapped");
        let wr_resp = mux(
            wr_mapped,
            mux(w_strb_ok, lit(2, resp::OKAY), lit(2, resp::SLVERR)),
            lit(2, resp::DECERR),
        );
        bvalid.set_if(bready, 0u32);
        bvalid.set_if(wr_go, 1u32);
        bresp.set_if(wr_go, wr_resp);
        bvalid_o.set(bvalid);
        bresp_o.set(bresp);

        // ---- Read: hold ar, then select the word into r when r is free.
        let ar_full = reg_init(1, 0u32).named("ar_full");
        let ar_dword = reg_init(dw_bits, 0u32).named("ar_dword");
        let rvalid = reg_init(1, 0u32).named("rvalid");
        let rdata = reg_init(32, 0u32).named("rdata");
        let rresp = reg_init(2, 0u32).named("rresp");
        let ar_take = (arvalid & !ar_full).named("ar_take");
        let rd_go = (ar_full & (!rvalid | rready)).named("rd_go");
        arready.set(!ar_full);
        ar_full.set_if(rd_go, 0u32);
        ar_full.set_if(ar_take, 1u32);
        ar_dword.set_if(ar_take, araddr.slice(BAR_BITS - 1, 2));
        let mut rd_mapped = Vec::new();
        let mut rd_words = Vec::new();
        for (bi, b) in regmap::BLOCKS.iter().enumerate() {
            let win = window(ar_dword, b, "rd");
            let mut regs_hit = Vec::new();
            let mut arms: Vec<(u64, Sig)> = Vec::new();
            for (ri, r) in b.regs.iter().enumerate() {
                let base = port_base(b, r);
                let lo = r.offset / 4;
                regs_hit.push(within(win.off, lo, regmap::reg_bytes(r) / 4));
                let at = |k: u32| u64::from(lo + k);
                match sigs[&(bi, ri)] {
                    RegPort::Const => {
                        let v = cfg.get(RegRef { block: b, reg: r }).unwrap_or(&[]);
                        for (e, x) in v.iter().enumerate() {
                            arms.push((at(e as u32), lit(32, *x)));
                        }
                    }
                    RegPort::Ro(port) if r.access == Access::Ro64 => {
                        for e in 0..r.count {
                            let suffix = if r.count > 1 {
                                e.to_string()
                            } else {
                                String::new()
                            };
                            let hi = reg_init(32, 0u32).named(&format!("{base}{suffix}_hi_q"));
                            let latch = (rd_go & win.hit & win.off.eq(at(2 * e)))
                                .named(&format!("{base}{suffix}_latch"));
                            hi.set_if(latch, port.slice(64 * e + 63, 64 * e + 32));
                            arms.push((at(2 * e), port.slice(64 * e + 31, 64 * e)));
                            arms.push((at(2 * e + 1), hi));
                        }
                    }
                    RegPort::Ro(port) => {
                        for e in 0..r.count {
                            arms.push((at(e), port.slice(32 * e + 31, 32 * e)));
                        }
                    }
                    RegPort::Rw(_) => {
                        for (e, x) in rw_elems[&(bi, ri)].iter().enumerate() {
                            arms.push((at(e as u32), *x));
                        }
                    }
                    RegPort::Wo(_) => {}
                }
            }
            let regs = any(&regs_hit, &format!("rd_{}_regs", b.name));
            rd_mapped.push((win.hit & regs).named(&format!("rd_{}_mapped", b.name)));
            if !arms.is_empty() {
                let word = case(win.off, &arms, 0u32).named(&format!("rd_{}_data", b.name));
                rd_words.push(mux(win.hit, word, 0u32));
            }
        }
        let rd_mapped = any(&rd_mapped, "rd_blocks").named("rd_mapped");
        let rd_word = rd_words
            .into_iter()
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| lit(32, 0u32))
            .named("rd_word");
        rvalid.set_if(rready, 0u32);
        rvalid.set_if(rd_go, 1u32);
        rdata.set_if(rd_go, rd_word);
        rresp.set_if(
            rd_go,
            mux(rd_mapped, lit(2, resp::OKAY), lit(2, resp::DECERR)),
        );
        rvalid_o.set(rvalid);
        rdata_o.set(rdata);
        rresp_o.set(rresp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::regs::{dev, id};
    use crate::preset::Preset;
    use nicgen_edsl::Dir;

    fn nic64_cfg() -> BarCfg {
        BarCfg::id(
            &Preset::builtin("nic64").unwrap(),
            &HostParams {
                queues: 64,
                eqs: 8,
                mrs: 16,
                log_max_wq: 12,
                caps: vec!["csum", "rss", "vlan", "loopback"],
            },
            &BuildInfo::unknown(),
        )
        .unwrap()
    }

    /// The ports the map asks for, worked out independently of the builder.
    fn expected_ports(cfg: &BarCfg) -> Vec<(String, Dir, u32)> {
        use Dir::*;
        let mut v: Vec<(String, Dir, u32)> = [
            ("s_axil_awaddr", Input, BAR_BITS),
            ("s_axil_awvalid", Input, 1),
            ("s_axil_awready", Output, 1),
            ("s_axil_wdata", Input, 32),
            ("s_axil_wstrb", Input, 4),
            ("s_axil_wvalid", Input, 1),
            ("s_axil_wready", Output, 1),
            ("s_axil_bresp", Output, 2),
            ("s_axil_bvalid", Output, 1),
            ("s_axil_bready", Input, 1),
            ("s_axil_araddr", Input, BAR_BITS),
            ("s_axil_arvalid", Input, 1),
            ("s_axil_arready", Output, 1),
            ("s_axil_rdata", Output, 32),
            ("s_axil_rresp", Output, 2),
            ("s_axil_rvalid", Output, 1),
            ("s_axil_rready", Input, 1),
        ]
        .into_iter()
        .map(|(n, d, w)| (n.to_string(), d, w))
        .collect();
        for b in regmap::BLOCKS {
            for r in b.regs {
                let n = format!("{}_{}", b.name, r.name).to_lowercase();
                match r.access {
                    Access::Ro if cfg.get(RegRef { block: b, reg: r }).is_some() => {}
                    Access::Ro => v.push((format!("ro_{n}"), Input, 32 * r.count)),
                    Access::Ro64 => v.push((format!("ro_{n}"), Input, 64 * r.count)),
                    Access::Rw => {
                        v.push((format!("rw_{n}"), Output, 32 * r.count));
                        v.push((format!("rw_{n}_we"), Output, r.count));
                    }
                    Access::Wo => {
                        v.push((format!("wo_{n}_we"), Output, 1));
                        v.push((format!("wo_{n}_data"), Output, 32));
                        if r.count > 1 {
                            let bits = 32 - (r.count - 1).leading_zeros();
                            v.push((format!("wo_{n}_index"), Output, bits));
                        }
                    }
                }
            }
        }
        v
    }

    fn ports(def: &ModuleDef) -> Vec<(String, Dir, u32)> {
        def.ports
            .iter()
            .map(|p| (p.name.clone(), p.dir, p.width))
            .collect()
    }

    #[test]
    fn ports_follow_the_map() {
        for cfg in [BarCfg::new(), nic64_cfg()] {
            let def = bar_regs(&cfg).unwrap();
            assert_eq!(ports(&def), expected_ports(&cfg));
            assert!(def.has_clock && def.has_reset);
        }
        // Every id register but none of the others became a constant.
        let cfg = nic64_cfg();
        let id = regmap::BLOCKS.iter().find(|b| b.name == "id").unwrap();
        assert_eq!(cfg.consts.len(), id.regs.len());
        assert!(ports(&bar_regs(&cfg).unwrap())
            .iter()
            .all(|(n, _, _)| !n.starts_with("ro_id_")));
        assert!(ports(&bar_regs(&BarCfg::new()).unwrap())
            .iter()
            .any(|(n, _, w)| n == "ro_id_git_hash" && *w == 160));
    }

    #[test]
    fn id_constants() {
        let cfg = nic64_cfg();
        assert_eq!(cfg.get(id::MAGIC), Some(&[0x4E49_4347][..]));
        assert_eq!(cfg.get(id::DATA_BITS), Some(&[64][..]));
        assert_eq!(cfg.get(id::CLOCK_KHZ), Some(&[156_250][..]));
        assert_eq!(cfg.get(id::MTU), Some(&[9000][..]));
        assert_eq!(cfg.get(id::QUEUES), Some(&[64 | 8 << 16 | 16 << 24][..]));
        assert_eq!(cfg.get(id::LIMITS), Some(&[128 | 12 << 16 | 16 << 24][..]));
        assert_eq!(cfg.get(id::CAPS), Some(&[0xF][..]));
        // "nic64" little-endian, NUL-padded.
        assert_eq!(
            cfg.get(id::PRESET_NAME),
            Some(&[0x3663_696E, 0x34, 0, 0][..])
        );
        let h = Preset::builtin("nic64").unwrap().config_hash();
        let w0 = u32::from_str_radix(&h[0..8], 16).unwrap().swap_bytes();
        assert_eq!(cfg.get(id::CONFIG_HASH).unwrap()[0], w0);
        assert_eq!(cfg.get(id::GIT_HASH), Some(&[0; 5][..]));
        let v = cfg.get(id::VERSION).unwrap()[0];
        assert_eq!(v >> 24, MAP_ABI);
        let b = BuildInfo {
            version: [1, 2, 3],
            git_hash: std::array::from_fn(|i| i as u8 + 1),
            git_dirty: true,
        };
        let p = Preset::builtin("nic64").unwrap();
        let host = HostParams {
            queues: 1,
            eqs: 1,
            mrs: 1,
            log_max_wq: 1,
            caps: vec![],
        };
        let c = BarCfg::id(&p, &host, &b).unwrap();
        assert_eq!(c.get(id::VERSION), Some(&[0x0101_0203][..]));
        assert_eq!(c.get(id::GIT_HASH).unwrap()[0], 0x0403_0201);
        assert_eq!(c.get(id::GIT_HASH).unwrap()[4], 0x1413_1211);
        assert_eq!(c.get(id::GIT_FLAGS), Some(&[1][..]));
        assert_eq!(c.get(id::CAPS), Some(&[0][..]));
        // The build script's commit, when there is one, is 20 bytes.
        let cur = BuildInfo::current();
        let hex = env!("NICGEN_GIT_HASH");
        assert!(hex.is_empty() || cur.git_hash != [0; 20], "{hex}");
    }

    #[test]
    fn bad_configs_are_refused_with_a_reason() {
        let e = bar_regs(&BarCfg::new().with(dev::CTRL, vec![1])).unwrap_err();
        assert!(e.mentions("only Ro registers"), "{e}");
        let e = bar_regs(&BarCfg::new().with(id::GIT_HASH, vec![1])).unwrap_err();
        assert!(e.mentions("1 values for 5 elements"), "{e}");
        let e = bar_regs(&BarCfg::new().with(id::MTU, vec![1]).with(id::MTU, vec![2])).unwrap_err();
        assert!(e.mentions("given twice"), "{e}");
        let host = HostParams {
            queues: 1 << 16,
            eqs: 1,
            mrs: 1,
            log_max_wq: 1,
            caps: vec![],
        };
        let p = Preset::builtin("nic64").unwrap();
        let e = BarCfg::id(&p, &host, &BuildInfo::unknown()).unwrap_err();
        assert!(e.mentions("id.QUEUES.queues = 65536"), "{e}");
        let host = HostParams {
            queues: 1,
            caps: vec!["teleport"],
            ..host
        };
        let e = BarCfg::id(&p, &host, &BuildInfo::unknown()).unwrap_err();
        assert!(e.mentions("no field `teleport`"), "{e}");
    }
}
