//! The PCIe link model of the DMA service: what a PCIe Gen3 link between the NIC and the
//! host's root complex costs in bandwidth, per direction, once every transfer is cut into
//! TLPs and each TLP pays its framing, header and a share of the link's DLLPs.
//!
//! The NIC's DMA port (`hdl/src/host/mod.rs`) carries requests of up to 4 KiB; a PCIe link
//! carries them as TLPs:
//! - a read of `len` bytes at `addr` leaves upstream as one read request TLP per
//!   `mrrs`-aligned block it touches (the max read request size), and comes back downstream
//!   as one completion TLP per `mps`-aligned block (the max payload size);
//! - a write leaves upstream as one posted write TLP per `mps`-aligned block.
//!
//! Bytes each TLP costs besides its payload (PCIe Gen3 framing, no ECRC):
//! - a completion: 20 B = 4 B STP token (which carries the sequence number in Gen3) + a 3-DW
//!   (12 B) completion header + 4 B LCRC ([`CPL_TLP_OVERHEAD`]);
//! - a read request or a posted write: 24 B = 4 B STP + a 4-DW (16 B) header + 4 B LCRC, 4 DW
//!   because the host's DMA addresses are above 4 GiB (64-bit addressing) ([`REQ_TLP_OVERHEAD`]);
//! - and, on the other direction, 4 B of DLLPs: the receiver returns an ACK and a flow-control
//!   update per four TLPs, 8 B each (a 6-byte DLLP behind a 2-byte SDP token)
//!   ([`DLLP_PER_TLP`]).
//!
//! The raw rate of a direction is lanes × GT/s × 128/130 (Gen3's line code) / 8 bytes per
//! second. Not modelled: SKP ordered sets (one 130-bit block in about 370, 0.3 %), credit
//! starvation (the host's buffers are taken as large enough), and the root complex splitting
//! completions at its read completion boundary rather than at the MPS.
//!
//! The service keeps time in cycles: [`PcieLink::timing`] turns a link into bytes per cycle
//! at a clock, and a wire per direction (`Wire`) spends them.

/// Framing and header bytes of a completion TLP (see the module docs).
pub const CPL_TLP_OVERHEAD: u64 = 20;
/// Framing and header bytes of a read request or posted write TLP with a 64-bit address.
pub const REQ_TLP_OVERHEAD: u64 = 24;
/// DLLP bytes each TLP causes on the other direction (an ACK and an UpdateFC per four TLPs).
pub const DLLP_PER_TLP: u64 = 4;

/// A PCIe link: generation (as GT/s per lane with 128b/130b coding), width, and the sizes that
/// cut transfers into TLPs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcieLink {
    /// Transfers per second per lane, in GT/s (Gen3: 8).
    pub gt_per_s: f64,
    /// Lanes (8 for x8, 16 for x16).
    pub lanes: u32,
    /// Max payload size, bytes (128..=4096, a power of two): completions and writes are split
    /// at multiples of it.
    pub mps: u32,
    /// Max read request size, bytes (128..=4096, a power of two): reads are split at
    /// multiples of it.
    pub mrrs: u32,
}

impl PcieLink {
    /// PCIe Gen3 (8 GT/s, 128b/130b) with `lanes` lanes, MPS 256 B and MRRS 512 B (what a
    /// server's root complex commonly grants).
    pub const fn gen3(lanes: u32) -> PcieLink {
        PcieLink {
            gt_per_s: 8.0,
            lanes,
            mps: 256,
            mrrs: 512,
        }
    }

    /// Bytes per second on the wire in each direction, after the 128b/130b line code.
    pub fn bytes_per_second(&self) -> f64 {
        self.gt_per_s * 1e9 * f64::from(self.lanes) * 128.0 / 130.0 / 8.0
    }

    /// The link in cycles of a `clock_mhz` clock.
    pub fn timing(&self, clock_mhz: f64) -> LinkTiming {
        LinkTiming {
            bytes_per_cycle: self.bytes_per_second() / (clock_mhz * 1e6),
            mps: self.mps,
            mrrs: self.mrrs,
        }
    }
}

/// A PCIe link in the service's units: wire bytes per cycle and the TLP sizes
/// (`DmaConfig::link`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkTiming {
    /// Wire bytes per cycle in each direction.
    pub bytes_per_cycle: f64,
    /// Max payload size, bytes.
    pub mps: u32,
    /// Max read request size, bytes.
    pub mrrs: u32,
}

impl LinkTiming {
    /// Why the timing is unusable, if it is.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if !(self.bytes_per_cycle > 0.0 && self.bytes_per_cycle.is_finite()) {
            return Some((
                "link.bytes_per_cycle",
                format!("is {}, must be positive", self.bytes_per_cycle),
            ));
        }
        for (field, v) in [("link.mps", self.mps), ("link.mrrs", self.mrrs)] {
            if !(v.is_power_of_two() && (128..=4096).contains(&v)) {
                return Some((
                    field,
                    format!("is {v}, must be a power of two in 128..=4096"),
                ));
            }
        }
        None
    }

    /// Wire bytes a whole read of `len` bytes at `addr` costs: (upstream, downstream).
    pub fn read_cost(&self, addr: u64, len: u64) -> (u64, u64) {
        let reqs = tlp_starts(addr, 0, len, self.mrrs.into());
        let cpls = tlp_starts(addr, 0, len, self.mps.into());
        (
            reqs * REQ_TLP_OVERHEAD + cpls * DLLP_PER_TLP,
            len + cpls * CPL_TLP_OVERHEAD + reqs * DLLP_PER_TLP,
        )
    }

    /// Wire bytes a whole write of `len` bytes at `addr` costs: (upstream, downstream).
    pub fn write_cost(&self, addr: u64, len: u64) -> (u64, u64) {
        let tlps = tlp_starts(addr, 0, len, self.mps.into());
        (len + tlps * REQ_TLP_OVERHEAD, tlps * DLLP_PER_TLP)
    }
}

/// TLPs that start among bytes `a..b` of a transfer at `addr` cut at multiples of `size`:
/// byte 0 starts one, and so does every byte at a multiple of `size` after it.
pub(crate) fn tlp_starts(addr: u64, a: u64, b: u64, size: u64) -> u64 {
    if a >= b {
        return 0;
    }
    let (lo, hi) = (addr + a, addr + b);
    let multiples = hi.div_ceil(size) - lo.div_ceil(size);
    multiples + u64::from(a == 0 && lo % size != 0)
}

/// Fixed-point scale of [`Wire`] credit: 1/65536 byte.
const SCALE: f64 = 65536.0;

/// One direction of the link: credit in 1/65536 bytes, `rate` a cycle. Something may go
/// while the credit is not negative, and is charged its whole cost when it goes (the credit
/// may go below zero: the wire is busy until it is paid back). Idle, the credit stops at one
/// cycle's worth, so bandwidth unused is lost, but no fraction is lost while something waits.
#[derive(Debug)]
pub(crate) struct Wire {
    rate: i64,
    credit: i64,
}

impl Wire {
    pub(crate) fn new(bytes_per_cycle: f64) -> Wire {
        let rate = (bytes_per_cycle * SCALE).round().max(1.0) as i64;
        Wire { rate, credit: 0 }
    }

    pub(crate) fn tick(&mut self) {
        self.credit = (self.credit + self.rate).min(self.rate);
    }

    pub(crate) fn free(&self) -> bool {
        self.credit >= 0
    }

    pub(crate) fn charge(&mut self, bytes: u64) {
        self.credit -= bytes as i64 * SCALE as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen3_rates() {
        // 8 GT/s x 128/130 / 8 = 984.6 MB/s per lane.
        let x8 = PcieLink::gen3(8);
        assert!((x8.bytes_per_second() - 7.876_923e9).abs() < 1e4);
        let t = x8.timing(156.25);
        assert!((t.bytes_per_cycle - 50.412).abs() < 0.001, "{t:?}");
        let t = PcieLink::gen3(16).timing(250.0);
        assert!((t.bytes_per_cycle - 63.015).abs() < 0.001, "{t:?}");
        assert_eq!((t.mps, t.mrrs), (256, 512));
    }

    #[test]
    fn transfers_are_cut_at_aligned_multiples() {
        // Aligned 4 KiB: 16 completions of 256 B, 8 requests of 512 B.
        assert_eq!(tlp_starts(0x1000, 0, 4096, 256), 16);
        assert_eq!(tlp_starts(0x1000, 0, 4096, 512), 8);
        // 64 B at 0x10f0 cross one 256-byte boundary: two TLPs.
        assert_eq!(tlp_starts(0x10f0, 0, 64, 256), 2);
        assert_eq!(tlp_starts(0x1000, 0, 1, 256), 1);
        // Per beat: bytes 0..8 start the first TLP, 8..16 none, 248..256 none, 256..264 one.
        assert_eq!(tlp_starts(0x1008, 0, 8, 256), 1);
        assert_eq!(tlp_starts(0x1008, 8, 16, 256), 0);
        assert_eq!(tlp_starts(0x1000, 248, 256, 256), 0);
        assert_eq!(tlp_starts(0x1000, 256, 264, 256), 1);
        // The per-beat counts add up to the whole.
        let whole = tlp_starts(0x1030, 0, 3000, 256);
        let beats: u64 = (0..3000u64)
            .step_by(64)
            .map(|a| tlp_starts(0x1030, a, (a + 64).min(3000), 256))
            .sum();
        assert_eq!((whole, beats), (12, 12));
        assert_eq!(tlp_starts(0x1000, 5, 5, 256), 0);
    }

    #[test]
    fn costs_of_whole_transfers() {
        let t = PcieLink::gen3(8).timing(250.0);
        // A 4 KiB read: 8 request TLPs up (24 B each) and the DLLPs of 16 completions; down,
        // the data, 16 completion headers (20 B each) and the DLLPs of the 8 requests.
        assert_eq!(
            t.read_cost(0x1000, 4096),
            (8 * 24 + 16 * 4, 4096 + 16 * 20 + 8 * 4)
        );
        assert_eq!(t.write_cost(0x1000, 4096), (4096 + 16 * 24, 16 * 4));
        assert_eq!(t.write_cost(0x1000, 64), (64 + 24, 4));
    }

    #[test]
    fn wire_spends_exactly_its_rate() {
        // 2.5 bytes a cycle, a 10-byte item whenever the wire is free: 4 cycles each.
        let mut w = Wire::new(2.5);
        let mut sent = 0;
        for _ in 0..4000 {
            w.tick();
            if w.free() {
                w.charge(10);
                sent += 1;
            }
        }
        assert!((999..=1001).contains(&sent), "{sent}");
        // Idle, the credit stops at one cycle's worth.
        for _ in 0..100 {
            w.tick();
        }
        assert_eq!(w.credit, w.rate);
    }

    #[test]
    fn bad_timing_is_named() {
        let good = PcieLink::gen3(8).timing(250.0);
        assert_eq!(good.problem(), None);
        let cases = [
            (
                LinkTiming {
                    bytes_per_cycle: 0.0,
                    ..good
                },
                "link.bytes_per_cycle",
            ),
            (LinkTiming { mps: 100, ..good }, "link.mps"),
            (LinkTiming { mrrs: 8192, ..good }, "link.mrrs"),
        ];
        for (t, field) in cases {
            assert_eq!(t.problem().map(|p| p.0), Some(field), "{t:?}");
        }
    }
}
