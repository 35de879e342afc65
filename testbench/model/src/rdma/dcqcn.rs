//! Congestion control: the CNP notification point and the DCQCN reaction point
//! (reference/wire-formats.md §1.9), as pure state machines of ticks (µs) and bytes so the
//! hardware can be compared with them step by step.
//!
//! Rates are in Mb/s, α in 1/1024 (1024 = 1.0), as the mlx5 parameters are.
//!
//! Reaction point, per QP:
//!
//! 1. **CNP** (at most one reduction per `rate_reduce_monitor_period`): on the first, α :=
//!    `initial_alpha_value` and the limiter starts (from the line rate, or
//!    `rate_to_set_on_first_cnp`). The target RT := RC on the first CNP, when `clamp_tgt_rate`,
//!    when `clamp_tgt_rate_after_time_inc` and the last increase came from the timer, or when
//!    there was no increase since the last cut. Then RC := max(RC − RC·α >> `rpg_gd`,
//!    RC·`rpg_min_dec_fac`/100, `rpg_min_rate`); the timer, the byte counter and both stage
//!    counters T and BC restart from 0.
//! 2. **α** every `dce_tcp_rtt`: (g·α + (1024 − g)·1024)/1024 when a CNP came in the period,
//!    else g·α/1024.
//! 3. **Increase** every `rpg_time_reset` µs without a CNP (T += 1) and every `rpg_byte_reset`
//!    bytes sent (BC += 1), the counter first, then the step with F = `rpg_threshold`:
//!    max(T, BC) < F fast recovery; else min(T, BC) < F additive (RT += `rpg_ai_rate`); else
//!    hyper (RT += i·`rpg_hai_rate`, i = min(T, BC) − F + 1). Each step RC := ⌈(RT + RC)/2⌉
//!    (rounded up so RC reaches RT) and RT is capped at the maximum rate. When RC reaches the
//!    maximum the limiter is released.

use std::collections::BTreeMap;

/// The DCQCN parameters (mlx5 names; times in µs = ticks, rates in Mb/s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each field is the mlx5 parameter of the same name, §1.9's table
pub struct DcqcnParams {
    /// Line rate of the port, used when `rpg_max_rate` is 0 (not an mlx5 parameter).
    pub line_rate: u64,
    pub rpg_time_reset: u64,
    pub rpg_byte_reset: u64,
    pub rpg_threshold: u32,
    pub rpg_max_rate: u64,
    pub rpg_ai_rate: u64,
    pub rpg_hai_rate: u64,
    pub rpg_gd: u32,
    pub rpg_min_dec_fac: u64,
    pub rpg_min_rate: u64,
    pub rate_to_set_on_first_cnp: u64,
    pub dce_tcp_g: u32,
    pub dce_tcp_rtt: u64,
    pub rate_reduce_monitor_period: u64,
    pub initial_alpha_value: u32,
    pub clamp_tgt_rate: bool,
    pub clamp_tgt_rate_after_time_inc: bool,
    pub min_time_between_cnps: u64,
}

impl Default for DcqcnParams {
    /// The firmware defaults of §1.9 on a 25 Gb/s port.
    fn default() -> DcqcnParams {
        DcqcnParams {
            line_rate: 25_000,
            rpg_time_reset: 300,
            rpg_byte_reset: 32_767,
            rpg_threshold: 1,
            rpg_max_rate: 0,
            rpg_ai_rate: 5,
            rpg_hai_rate: 50,
            rpg_gd: 11,
            rpg_min_dec_fac: 50,
            rpg_min_rate: 1,
            rate_to_set_on_first_cnp: 0,
            dce_tcp_g: 1019,
            dce_tcp_rtt: 1,
            rate_reduce_monitor_period: 4,
            initial_alpha_value: 1023,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            min_time_between_cnps: 4,
        }
    }
}

impl DcqcnParams {
    /// The rate the limiter releases at: `rpg_max_rate`, or the line rate when that is 0.
    pub fn max_rate(&self) -> u64 {
        if self.rpg_max_rate == 0 {
            self.line_rate
        } else {
            self.rpg_max_rate.min(self.line_rate)
        }
    }
}

/// The DCQCN reaction point of one QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dcqcn {
    /// Parameters.
    pub params: DcqcnParams,
    /// Current rate RC (Mb/s).
    pub rc: u64,
    /// Target rate RT (Mb/s).
    pub rt: u64,
    /// α in 1/1024.
    pub alpha: u32,
    /// Timer stage counter T.
    pub t: u32,
    /// Byte stage counter BC.
    pub bc: u32,
    /// Whether the limiter is engaged (a CNP came and the rate has not recovered).
    pub limiting: bool,
    bytes: u64,
    cnp_in_period: bool,
    next_alpha: u64,
    next_timer: u64,
    last_cut: Option<u64>,
    last_inc_timer: bool,
    inc_since_cut: bool,
}

impl Dcqcn {
    /// A reaction point at the maximum rate, not limiting.
    pub fn new(params: DcqcnParams) -> Dcqcn {
        Dcqcn {
            params,
            rc: params.max_rate(),
            rt: params.max_rate(),
            alpha: params.initial_alpha_value,
            t: 0,
            bc: 0,
            limiting: false,
            bytes: 0,
            cnp_in_period: false,
            next_alpha: 0,
            next_timer: 0,
            last_cut: None,
            last_inc_timer: false,
            inc_since_cut: false,
        }
    }

    /// The rate the sender may use now (Mb/s).
    pub fn rate(&self) -> u64 {
        if self.limiting {
            self.rc
        } else {
            self.params.max_rate()
        }
    }

    /// A CNP arrived at `now`. Returns whether the rate was cut (not within
    /// `rate_reduce_monitor_period` of the last cut).
    pub fn on_cnp(&mut self, now: u64) -> bool {
        let p = self.params;
        self.cnp_in_period = true;
        if self
            .last_cut
            .is_some_and(|t| now < t + p.rate_reduce_monitor_period)
        {
            return false;
        }
        let first = !self.limiting;
        if first {
            self.limiting = true;
            self.alpha = p.initial_alpha_value;
            self.rc = if p.rate_to_set_on_first_cnp != 0 {
                p.rate_to_set_on_first_cnp.min(p.max_rate())
            } else {
                p.max_rate()
            };
            self.next_alpha = now + p.dce_tcp_rtt;
        }
        if first
            || p.clamp_tgt_rate
            || (p.clamp_tgt_rate_after_time_inc && self.last_inc_timer)
            || !self.inc_since_cut
        {
            self.rt = self.rc;
        }
        let cut = (self.rc * u64::from(self.alpha)) >> p.rpg_gd;
        let floor = (self.rc * p.rpg_min_dec_fac / 100).max(p.rpg_min_rate);
        self.rc = (self.rc - cut.min(self.rc)).max(floor);
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.next_timer = now + p.rpg_time_reset;
        self.last_cut = Some(now);
        self.last_inc_timer = false;
        self.inc_since_cut = false;
        true
    }

    /// `n` bytes were sent: the byte counter may trigger increase steps.
    pub fn on_bytes(&mut self, n: u64) {
        if !self.limiting || self.params.rpg_byte_reset == 0 {
            return;
        }
        self.bytes += n;
        while self.limiting && self.bytes >= self.params.rpg_byte_reset {
            self.bytes -= self.params.rpg_byte_reset;
            self.bc += 1;
            self.increase(false);
        }
    }

    /// Time is `now`: α updates and timer increase steps that fell due.
    pub fn tick(&mut self, now: u64) {
        let p = self.params;
        while self.limiting && now >= self.next_alpha {
            let g = u64::from(p.dce_tcp_g);
            let a = u64::from(self.alpha);
            self.alpha = if self.cnp_in_period {
                ((g * a + (1024 - g) * 1024) / 1024) as u32
            } else {
                (g * a / 1024) as u32
            };
            self.cnp_in_period = false;
            self.next_alpha += p.dce_tcp_rtt.max(1);
        }
        while self.limiting && now >= self.next_timer {
            self.next_timer += p.rpg_time_reset.max(1);
            self.t += 1;
            self.increase(true);
        }
    }

    fn increase(&mut self, timer: bool) {
        let p = self.params;
        let f = p.rpg_threshold;
        let (hi, lo) = (self.t.max(self.bc), self.t.min(self.bc));
        if hi >= f {
            if lo < f {
                self.rt += p.rpg_ai_rate;
            } else {
                self.rt += u64::from(lo - f + 1) * p.rpg_hai_rate;
            }
        }
        self.rt = self.rt.min(p.max_rate());
        self.rc = (self.rt + self.rc).div_ceil(2);
        self.last_inc_timer = timer;
        self.inc_since_cut = true;
        if self.rc >= p.max_rate() {
            self.rc = p.max_rate();
            self.limiting = false;
        }
    }
}

/// The notification point's pacing: at most one CNP per QP per `interval` ticks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CnpPacer {
    /// Minimum ticks between two CNPs to the same QP (`min_time_between_cnps`).
    pub interval: u64,
    last: BTreeMap<u32, u64>,
}

impl CnpPacer {
    /// A pacer with `interval` ticks between CNPs per QP.
    pub fn new(interval: u64) -> CnpPacer {
        CnpPacer {
            interval,
            last: BTreeMap::new(),
        }
    }

    /// Whether a CNP to `qpn` may go at `now` (and if so, records it).
    pub fn admit(&mut self, qpn: u32, now: u64) -> bool {
        match self.last.get(&qpn) {
            Some(&t) if now < t + self.interval => false,
            _ => {
                self.last.insert(qpn, now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_falls_on_cnps_and_recovers_without_them() {
        let p = DcqcnParams::default();
        let mut rp = Dcqcn::new(p);
        assert_eq!(rp.rate(), 25_000);
        assert!(rp.on_cnp(0));
        // α = 1023/1024: the cut is almost half.
        assert_eq!(rp.rate(), 25_000 - ((25_000 * 1023) >> 11));
        assert!(!rp.on_cnp(2), "within rate_reduce_monitor_period");
        let mut last = rp.rate();
        for t in (4..40).step_by(4) {
            rp.tick(t);
            assert!(rp.on_cnp(t));
            assert!(rp.rate() < last);
            assert!(rp.rate() >= last * p.rpg_min_dec_fac / 100);
            last = rp.rate();
        }
        let cut_alpha = rp.alpha;
        rp.tick(100);
        assert!(rp.alpha < cut_alpha, "α decays without CNPs");
        let mut prev = rp.rate();
        let mut t = 100;
        while rp.limiting {
            t += 1;
            rp.tick(t);
            if t % 10 == 0 {
                rp.on_bytes(20_000);
            }
            assert!(rp.rate() >= prev, "never falls without a CNP");
            prev = rp.rate();
            assert!(t < 1_000_000, "recovers");
        }
        assert_eq!(rp.rate(), 25_000);

        let mut np = CnpPacer::new(4);
        assert!(np.admit(1, 10) && !np.admit(1, 13) && np.admit(2, 13) && np.admit(1, 14));
    }

    #[test]
    fn increase_steps_follow_the_stage_counters() {
        let p = DcqcnParams::default();
        let mut rp = Dcqcn::new(p);
        rp.on_cnp(0);
        let rc0 = 25_000 - ((25_000 * 1023) >> 11);
        assert_eq!((rp.rt, rp.rc), (25_000, rc0));
        // No increase since the first cut: the second one sets the target to the current rate.
        rp.tick(10);
        let alpha = rp.alpha;
        rp.on_cnp(10);
        let rc1 = rc0 - ((rc0 * u64::from(alpha)) >> 11);
        assert_eq!((rp.rt, rp.rc), (rc0, rc1));
        // α: one period with a CNP, then one without.
        let mut a = Dcqcn::new(p);
        a.on_cnp(0);
        a.cnp_in_period = true;
        a.tick(1);
        assert_eq!(a.alpha, (1019 * 1023 + 5 * 1024) / 1024);
        let before = a.alpha;
        a.tick(2);
        assert_eq!(a.alpha, 1019 * before / 1024);
        // Timer event (T = 1 ≥ F, BC = 0 < F): additive increase.
        rp.tick(310);
        assert_eq!((rp.t, rp.bc), (1, 0));
        assert_eq!(rp.rt, rc0 + 5);
        let rc2 = (rc0 + 5 + rc1).div_ceil(2);
        assert_eq!(rp.rc, rc2);
        // Byte event (T = BC = 1 ≥ F): hyper increase by 1 × 50.
        rp.on_bytes(32_767);
        assert_eq!(rp.rt, rc0 + 55);
        assert_eq!(rp.rc, (rc0 + 55 + rc2).div_ceil(2));
    }
}
