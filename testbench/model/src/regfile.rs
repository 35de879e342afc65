//! The BAR register file on transactions: what a read or a write of one address does, given
//! the registers (their addresses, access kinds and reset values) and the values the hardware
//! presents on the read-only registers.
//!
//! Models `bar_regs` (`hdl/src/host/bar_regs.rs`). Like the rest of this crate it knows no
//! clocks or channels: a transaction in, a response, read data and at most one effect out. It
//! does not read the register map itself (that lives in the hardware crate); the caller passes
//! the registers as [`RegSpec`]s.
//!
//! Rules (the BAR port contract, `hdl/src/host/mod.rs`):
//! 1. Addresses are byte addresses of `addr_bits` bits; the low two bits are ignored.
//! 2. An address inside no register: [`Resp::DecErr`], read data 0, the write has no effect
//!    (even when `wstrb` is also bad).
//! 3. A write whose `wstrb` is not all ones (`0xF`): [`Resp::SlvErr`], no effect.
//! 4. `Ro`: reads return the element's value; writes are accepted and ignored.
//! 5. `Ro64`: element `i` spans two dwords; reading the low one returns bits 31:0 and latches
//!    bits 63:32, which reading the high one returns (0 before any latch). Writes are ignored.
//! 6. `Rw`: reads return the element's value (its reset value until written); a write stores
//!    the data and is reported as an [`Effect`].
//! 7. `Wo`: reads return 0; a write is reported as an [`Effect`] (the strobe with its data and
//!    element index).

/// How the host may access a register (as in the register map).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only, one dword per element.
    Ro,
    /// Read-only 64-bit value per element (low dword, then high dword).
    Ro64,
    /// Read-write.
    Rw,
    /// Write-only strobe.
    Wo,
}

/// One register (or array of registers) at an absolute byte address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegSpec {
    /// A name for messages (`"dev.CTRL"`).
    pub name: String,
    /// Byte address of element 0 (a multiple of 4).
    pub addr: u32,
    /// Access kind.
    pub access: Access,
    /// Elements, 4 bytes apart (8 for `Ro64`).
    pub count: u32,
    /// Reset value of each element (`Rw`).
    pub reset: u32,
}

impl RegSpec {
    /// Dwords the register occupies.
    pub fn dwords(&self) -> u32 {
        self.count * if self.access == Access::Ro64 { 2 } else { 1 }
    }
}

/// An AXI response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resp {
    /// 0: done.
    Okay = 0,
    /// 2: refused by the register file (partial `wstrb`).
    SlvErr = 2,
    /// 3: no register at this address.
    DecErr = 3,
}

/// Where an address lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    /// Index of the register in the spec list.
    pub reg: usize,
    /// Element.
    pub index: u32,
    /// The high dword of an `Ro64` element.
    pub high: bool,
}

/// What a write does to the hardware's outputs: an `Rw` element takes `data` (and pulses its
/// write enable), or a `Wo` register strobes with `data` and `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// Index of the register in the spec list.
    pub reg: usize,
    /// Element (0 for a plain register).
    pub index: u32,
    /// The written data.
    pub data: u32,
}

/// The register file's state: `Rw` values and `Ro64` shadows.
#[derive(Clone, Debug)]
pub struct RegFile {
    specs: Vec<RegSpec>,
    addr_bits: u32,
    rw: Vec<Vec<u32>>,
    shadow: Vec<Vec<u32>>,
}

impl RegFile {
    /// The register file after reset. Panics if two registers overlap (a map problem the
    /// caller's own check should have caught).
    pub fn new(specs: Vec<RegSpec>, addr_bits: u32) -> RegFile {
        for (i, a) in specs.iter().enumerate() {
            for b in &specs[..i] {
                let (a0, a1) = (a.addr, a.addr + 4 * a.dwords());
                let (b0, b1) = (b.addr, b.addr + 4 * b.dwords());
                assert!(a1 <= b0 || b1 <= a0, "{} overlaps {}", a.name, b.name);
            }
        }
        let rw = specs
            .iter()
            .map(|s| vec![s.reset; s.count as usize])
            .collect();
        let shadow = specs.iter().map(|s| vec![0; s.count as usize]).collect();
        RegFile {
            specs,
            addr_bits,
            rw,
            shadow,
        }
    }

    /// The registers.
    pub fn specs(&self) -> &[RegSpec] {
        &self.specs
    }

    /// The register, element and half at `addr`, if any.
    pub fn decode(&self, addr: u32) -> Option<Hit> {
        let mask = if self.addr_bits >= 32 {
            u32::MAX
        } else {
            (1 << self.addr_bits) - 1
        };
        let a = addr & mask & !3;
        self.specs.iter().enumerate().find_map(|(reg, s)| {
            let dw = a.checked_sub(s.addr)? / 4;
            let ro64 = s.access == Access::Ro64;
            (dw < s.dwords()).then_some(Hit {
                reg,
                index: if ro64 { dw / 2 } else { dw },
                high: ro64 && dw % 2 == 1,
            })
        })
    }

    /// The current value of `Rw` element `index` of register `reg`.
    pub fn rw(&self, reg: usize, index: u32) -> u32 {
        self.rw[reg][index as usize]
    }

    /// A write of `data` with byte strobes `strb` to `addr`.
    pub fn write(&mut self, addr: u32, data: u32, strb: u8) -> (Resp, Option<Effect>) {
        let Some(h) = self.decode(addr) else {
            return (Resp::DecErr, None);
        };
        if strb & 0xF != 0xF {
            return (Resp::SlvErr, None);
        }
        let effect = Effect {
            reg: h.reg,
            index: h.index,
            data,
        };
        match self.specs[h.reg].access {
            Access::Ro | Access::Ro64 => (Resp::Okay, None),
            Access::Rw => {
                self.rw[h.reg][h.index as usize] = data;
                (Resp::Okay, Some(effect))
            }
            Access::Wo => (Resp::Okay, Some(effect)),
        }
    }

    /// A read of `addr`; `ro(reg, index)` is the value the hardware presents on `Ro` (low 32
    /// bits) and `Ro64` registers at the time of the read.
    pub fn read(&mut self, addr: u32, ro: impl Fn(usize, u32) -> u64) -> (Resp, u32) {
        let Some(h) = self.decode(addr) else {
            return (Resp::DecErr, 0);
        };
        let i = h.index as usize;
        let data = match self.specs[h.reg].access {
            Access::Ro => ro(h.reg, h.index) as u32,
            Access::Ro64 if h.high => self.shadow[h.reg][i],
            Access::Ro64 => {
                let v = ro(h.reg, h.index);
                self.shadow[h.reg][i] = (v >> 32) as u32;
                v as u32
            }
            Access::Rw => self.rw[h.reg][i],
            Access::Wo => 0,
        };
        (Resp::Okay, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> RegFile {
        let r = |name: &str, addr, access, count, reset| RegSpec {
            name: name.into(),
            addr,
            access,
            count,
            reset,
        };
        RegFile::new(
            vec![
                r("ID", 0x00, Access::Ro, 2, 0),
                r("CTRL", 0x10, Access::Rw, 2, 0x55),
                r("TIMER", 0x18, Access::Ro64, 1, 0),
                r("DB", 0x40, Access::Wo, 4, 0),
            ],
            8,
        )
    }

    #[test]
    fn every_rule() {
        let mut f = file();
        let ro = |reg: usize, i: u32| match reg {
            0 => 0x100 + u64::from(i),
            2 => 0x1122_3344_5566_7788,
            _ => panic!("not read-only"),
        };
        // Rule 1: low bits and bits above addr_bits are ignored.
        assert_eq!(f.read(0x04, ro), (Resp::Okay, 0x101));
        assert_eq!(f.read(0x107, ro), (Resp::Okay, 0x101));
        // Rule 2: holes and the space past the last register.
        assert_eq!(f.read(0x08, ro), (Resp::DecErr, 0));
        assert_eq!(f.read(0x50, ro), (Resp::DecErr, 0));
        assert_eq!(f.write(0x08, 1, 0x3), (Resp::DecErr, None));
        // Rules 3 and 6.
        assert_eq!(f.read(0x14, ro), (Resp::Okay, 0x55));
        assert_eq!(f.write(0x14, 7, 0x7), (Resp::SlvErr, None));
        assert_eq!(f.read(0x14, ro), (Resp::Okay, 0x55));
        let e = Effect {
            reg: 1,
            index: 1,
            data: 7,
        };
        assert_eq!(f.write(0x14, 7, 0xF), (Resp::Okay, Some(e)));
        assert_eq!(
            (f.read(0x14, ro), f.rw(1, 1), f.rw(1, 0)),
            ((Resp::Okay, 7), 7, 0x55)
        );
        // Rule 4.
        assert_eq!(f.write(0x00, 9, 0xF), (Resp::Okay, None));
        // Rule 5: the high dword is the one latched by the last low read.
        assert_eq!(f.read(0x1C, ro), (Resp::Okay, 0));
        assert_eq!(f.read(0x18, ro), (Resp::Okay, 0x5566_7788));
        assert_eq!(f.read(0x1C, |_, _| 0), (Resp::Okay, 0x1122_3344));
        // Rule 7.
        let e = Effect {
            reg: 3,
            index: 2,
            data: 0xAB,
        };
        assert_eq!(f.write(0x48, 0xAB, 0xF), (Resp::Okay, Some(e)));
        assert_eq!(f.read(0x48, ro), (Resp::Okay, 0));
        assert_eq!(
            f.decode(0x4C),
            Some(Hit {
                reg: 3,
                index: 3,
                high: false
            })
        );
    }

    #[test]
    #[should_panic(expected = "B overlaps A")]
    fn overlaps_are_refused() {
        let r = |name: &str, addr| RegSpec {
            name: name.into(),
            addr,
            access: Access::Ro64,
            count: 1,
            reset: 0,
        };
        RegFile::new(vec![r("A", 0), r("B", 4)], 8);
    }
}
