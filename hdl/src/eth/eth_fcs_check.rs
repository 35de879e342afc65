//! `eth_fcs_check`: RX MAC framing: check and strip the FCS, flag runts, oversize frames and
//! MAC control frames.
//!
//! In: frames as they came off the wire, FCS included (4 bytes, least significant first). Out:
//! the same frames without the FCS, with the verdict on `m_axis_tuser` of the `tlast` beat
//! (0 on other beats; bit numbers in [`super::rx_user`]):
//!
//! | bit | name | set when |
//! |---|---|---|
//! | 0 | `bad` | any of bits 1-4 (the next frame FIFO drops the frame) |
//! | 1 | `fcs_bad` | the CRC over frame + FCS is not the residue, or the frame has < 4 bytes |
//! | 2 | `runt` | frame length, FCS included, < 64 |
//! | 3 | `oversize` | frame length without FCS > 14 + 4 × tags + `mtu` (tags: 0, 1 or 2, below) |
//! | 4 | `mac_control` | EtherType 0x8808 at bytes 12-13, or at 16-17 behind a 0x8100/0x88A8 tag |
//!
//! | Offset | Size | Field looked at |
//! |---|---|---|
//! | 12 | 2 | EtherType, or TPID 0x8100 / 0x88A8 of one tag |
//! | 16 | 2 | EtherType behind that tag, or the TPID (0x8100 / 0x88A8) of a second tag |
//! | L−4 | 4 | FCS (checked through the CRC residue, not compared field by field) |
//!
//! `mtu` is the largest L2 payload; the frame's own tags raise its limit by 4 bytes each: a
//! TPID at bytes 12-13 is one tag, a second TPID behind it at bytes 16-17 another (a third tag is
//! payload). So at MTU 1500 the limits are 1514, 1518 and 1522 bytes without FCS.
//!
//! A field counts only when it lies inside the frame without its FCS. Every frame in gives one
//! frame out: a frame of 4 bytes or fewer (nothing left after the FCS) comes out as one zero
//! byte, marked `runt` and `bad`.
//!
//! - Ports: `s_axis_tdata/tkeep/tvalid/tready/tlast` (no `tuser`); `m_axis_tdata/tkeep/tvalid/
//!   tready/tlast/tuser[4:0]`. `s_axis_tready` is combinational from `m_axis_tready` (the
//!   whole block advances together); every `m_axis` signal comes from a flop.
//! - Internals: the CRC runs over every beat, bytes without `tkeep` counting as zero
//!   ([`super::crc32::beat_crc`], two stages). A frame that ends `z` bytes short of a full beat
//!   is good when the register equals the residue advanced over `z` zero bytes: one constant of
//!   a `W`-entry table (`W` = bytes per beat), so there is no CRC network per byte count.
//!   Stripping the FCS needs to know, before a beat goes out, whether the frame ends within the
//!   next 4 bytes: a hold line of `ceil(4/W)` beats (1 from 32 bits up) keeps the newest beats
//!   back. At `tlast` the oldest held beat is trimmed; or, when the last beat has more than 4
//!   bytes, the held beat goes out whole and the trimmed last beat waits one cycle in the hold
//!   slot (`fin`): exactly one cycle after its last input beat, every frame's last beat leaves
//!   the hold line. An emit register waits there for the CRC verdict, then the output register
//!   takes beat and verdict. The length comes from a saturating byte counter (registered before
//!   it is compared); bytes 12-17 are captured as they pass, as one match flop per byte and
//!   constant, loaded on the beat that carries the byte: the tag count is known from the beat
//!   that carries byte 17 on, and it reaches the length compare through the same register as
//!   the MAC-control match, so it costs no extra stage and no bubble. The registered length is
//!   compared with the three limits (0, 1, 2 tags) at once and the tag flags pick one.
//! - Latency: the last output beat is valid 3 cycles after the last input beat is taken; other
//!   beats 2 cycles after the beat `ceil(4/W)` behind them.
//! - Throughput: 1 beat/cycle in and out, no bubble between frames, at every width (a frame of
//!   `L` bytes takes `ceil(L/W)` input cycles and `ceil((L-4)/W)` output beats).
//! - Cost: the two-stage CRC (its data-term XOR network is most of the LUTs) and three beat
//!   registers (hold, emit, output); the size check is three constant compares of the registered
//!   length and a 2-level mux; the second tag's TPID three more header-byte match flops (bytes
//!   16-17 as 0x81 00 / 0x88 A8, beside the MAC-control check's); LUT/FF/Fmax per preset:
//!   results/AREA.md, row `eth_fcs_check`.
//! - Golden model: `nicgen_model::mac::fcs_check`; test: `testbench/tests/eth/eth_fcs_check.rs`.

use super::crc32::{beat_crc, keep_onehot, onehot_value, residue_after_zeros};
use super::rx_user;
use crate::stream::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// Parameters of [`eth_fcs_check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FcsCheckCfg {
    /// Bus width: 8 or a multiple of 16 bits.
    pub data_bits: u32,
    /// Largest L2 payload ([`MTU_RANGE`]): a frame longer than 14 + 4 × its tags + `mtu` bytes
    /// without FCS is flagged `oversize`.
    pub mtu: u32,
}

/// The MTUs the check takes: from the 60-byte minimum frame (14 + 46) to a two-tag frame of
/// 65535 bytes (14 + 8 + 65513).
pub const MTU_RANGE: std::ops::RangeInclusive<u32> = 46..=65513;

impl FcsCheckCfg {
    /// The check at `data_bits` for an MTU (largest L2 payload).
    pub fn for_mtu(data_bits: u32, mtu: u32) -> FcsCheckCfg {
        FcsCheckCfg { data_bits, mtu }
    }

    /// The largest frame, without FCS, that is not `oversize` for a frame with `tags` VLAN
    /// tags (0..=2): 14 + 4 × `tags` + `mtu`.
    pub fn max_frame(&self, tags: u32) -> u32 {
        14 + 4 * tags + self.mtu
    }
}

/// The ports of [`eth_fcs_check`]: frames in (no `tuser`), frames out with the verdict on
/// `m_axis_tuser` ([`super::rx_user::BITS`] bits).
pub struct FcsCheckPorts {
    pub s_axis: Stream,
    pub m_axis: Stream,
}

impl Ports for FcsCheckPorts {
    type Cfg = FcsCheckCfg;
    fn ports(io: &Io, cfg: &FcsCheckCfg) -> Self {
        FcsCheckPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, 0)),
            m_axis: Stream::source(io, "m_axis", &StreamCfg::new(cfg.data_bits, rx_user::BITS)),
        }
    }
}

nicgen_edsl::record! {
    /// The EtherType matches, registered a stage after the header bytes pass.
    struct EtherTypeFlags {
        /// 0x8808 at bytes 12-13.
        mac_control: 1,
        /// A tag's TPID (0x8100 or 0x88A8) at bytes 12-13.
        vlan: 1,
        /// 0x8808 at bytes 16-17.
        inner_mac_control: 1,
        /// A second tag's TPID at bytes 16-17.
        inner_vlan: 1,
    }
}

nicgen_edsl::record! {
    /// The frame's length checks and its MAC-control verdict, registered a stage before the
    /// CRC compare.
    struct FrameFlags {
        /// Fewer than 4 bytes: no FCS.
        short: 1,
        runt: 1,
        oversize: 1,
        mac_control: 1,
    }
}

nicgen_edsl::record! {
    /// The verdict on the `tlast` beat's `tuser` (bit numbers: [`super::rx_user`]).
    struct Verdict {
        bad: 1,
        fcs_bad: 1,
        runt: 1,
        oversize: 1,
        mac_control: 1,
    }
}

/// Number of bits to hold values `0..=v`.
fn bits_for(v: u64) -> u32 {
    (64 - v.leading_zeros()).max(1)
}

/// Beats in the hold line at `data_bits`: enough to hold back the 4 FCS bytes, `ceil(4 / W)`.
pub fn hold_beats(data_bits: u32) -> u32 {
    4u32.div_ceil(data_bits / 8)
}

/// The most beats inside the check at once (taken, not yet on `m_axis`): the hold line (where
/// the trimmed last beat also waits) and the emit and output registers. With `m_axis_tready`
/// held at 1, every one of them comes out within `hold_beats + 2` cycles.
pub fn max_beats_inside(data_bits: u32) -> u32 {
    hold_beats(data_bits) + 2
}

pub fn eth_fcs_check(cfg: &FcsCheckCfg) -> Result<Block<FcsCheckPorts>, ElabError> {
    let in_cfg = StreamCfg::new(cfg.data_bits, 0);
    in_cfg.check("eth_fcs_check")?;
    if !MTU_RANGE.contains(&cfg.mtu) {
        return Err(ElabError::config(
            "eth_fcs_check",
            format!(
                "mtu {} is outside {}..={} (below, an untagged minimum-size frame would be \
                 flagged; above, a two-tag frame passes 65535 bytes)",
                cfg.mtu,
                MTU_RANGE.start(),
                MTU_RANGE.end()
            ),
        ));
    }
    let cfg = *cfg;
    Block::build(
        format!("eth_fcs_check_d{}_mtu{}", cfg.data_bits, cfg.mtu),
        cfg,
        move |p: FcsCheckPorts| {
            doc("RX MAC framing: checks and strips the FCS; tuser on tlast = {mac_control,");
            doc("oversize, runt, fcs_bad, bad}. Latency 3 cycles (last beat), 1 beat/cycle.");
            doc(&format!(
                "oversize: longer than 14 + 4 x VLAN tags (0..2) + MTU {} bytes without FCS.",
                cfg.mtu
            ));
            let w = cfg.data_bits / 8;
            let hold_n = hold_beats(cfg.data_bits);
            let (s, m) = (p.s_axis, p.m_axis);
            let ones = |n: u32| lit(n, (BigUint::from(1u32) << n) - 1u32);

            // Everything advances together unless the output beat waits.
            let out_v = reg_init(1, 0u32).named("out_valid");
            let adv = (!out_v | m.ready()).named("advance");
            s.ready().set(adv);
            let take = (s.valid() & adv).named("take");
            let data = s.data();
            let keep = s.keep();
            let last = s.last();

            // ---- Frame position: bytes before this beat (saturating) and the frame length.
            // It saturates above the largest limit (two tags, FCS included).
            let cap = (cfg.max_frame(2) as u64 + 5).max(64);
            let cw = bits_for(cap + 2 * w as u64);
            let cnt = reg_init(cw, 0u32).enable(take).named("byte_cnt");
            let sat = cnt.ge(cap).named("cnt_sat");
            cnt.set(mux(last, lit(cw, 0u32), mux(sat, cnt, cnt + w)));
            let sof = reg_init(1, 1u32).enable(take).named("sof");
            sof.set(last);
            let onehot = keep_onehot(keep, "beat");
            let n = onehot_value(&onehot, bits_for(w as u64), u64::from).named("beat_bytes");
            // The length is registered before it is compared (keeps the adders apart).
            let len = (cnt + n.zext(cw)).named("frame_len");

            // ---- Bytes 12..=17 as they pass (or from this beat when it carries them). The
            // beat that carries one is a bit of a one-hot beat index over the first beats, not
            // a compare of `byte_cnt`.
            // The last byte looked at: the inner EtherType's second (below).
            let last_hdr_byte = 17;
            let beats_hdr = last_hdr_byte / w + 1;
            let beat_at = if beats_hdr > 1 {
                let r = reg_init(beats_hdr, 1u32).enable(take).named("hdr_beat");
                r.set(mux(
                    last,
                    lit(beats_hdr, 1u32),
                    cat(&[r.slice(beats_hdr - 2, 0), lit(1, 0u32)]),
                ));
                r
            } else {
                sof
            };
            // Per header byte, the matches against the constants the EtherType checks need,
            // each one flop loaded whenever its beat is presented (a stalled beat holds its
            // data, and the index moves only with `take`: the enable is a flop, not the
            // handshake), else taken from this beat. The compares run on the bus, before the
            // select: from the beat index to a check flag is a mux and an AND (on the stored
            // bytes it would be 3 LUTs).
            let byte_is = |p: u32, v: u32| -> Sig {
                let lane = p % w;
                let here = if p / w == 0 { sof } else { beat_at.bit(p / w) };
                let hit = data.slice(8 * lane + 7, 8 * lane).eq(v as u64);
                let r = reg(1)
                    .enable(here)
                    .named(&format!("hdr_byte{p}_is_{v:02x}"));
                r.set(hit);
                mux(here, hit, r)
            };
            let b12_88 = byte_is(12, 0x88);
            let et1_mac = (b12_88 & byte_is(13, 0x08)).named("ethertype_mac_control");
            let et1_tag = ((byte_is(12, 0x81) & byte_is(13, 0x00)) | (b12_88 & byte_is(13, 0xA8)))
                .named("ethertype_vlan");
            let b16_88 = byte_is(16, 0x88);
            let et2_mac = (b16_88 & byte_is(last_hdr_byte, 0x08)).named("inner_mac_control");
            let et2_tag = ((byte_is(16, 0x81) & byte_is(last_hdr_byte, 0x00))
                | (b16_88 & byte_is(last_hdr_byte, 0xA8)))
            .named("inner_vlan");

            // ---- CRC over the beats, unused bytes counting as zero.
            let crc = beat_crc(data, keep, take, sof, adv);

            // ---- Frame facts travel two stages to meet the CRC register: the length and the
            // EtherType matches, then the flags.
            let stage = |d: Sig, name: &str| -> Sig {
                let r = reg(d.width()).enable(adv).named(name);
                r.set(d);
                r
            };
            let len1 = stage(len, "frame_len1");
            let etf = EtherTypeFlags::unpack(stage(
                EtherTypeFlags {
                    mac_control: et1_mac,
                    vlan: et1_tag,
                    inner_mac_control: et2_mac,
                    inner_vlan: et2_tag,
                }
                .pack(),
                "ethertype_flags1",
            ));
            let flags2 = FrameFlags::unpack(stage(
                FrameFlags {
                    short: len1.lt(4u32),
                    runt: len1.lt(64u32),
                    // Over the limit for its own tags (lengths here include the FCS). The
                    // tags lie inside every frame long enough to be over a limit.
                    oversize: mux(
                        etf.vlan,
                        mux(
                            etf.inner_vlan,
                            len1.gt(cfg.max_frame(2) as u64 + 4),
                            len1.gt(cfg.max_frame(1) as u64 + 4),
                        ),
                        len1.gt(cfg.max_frame(0) as u64 + 4),
                    ),
                    mac_control: (len1.ge(18u32) & etf.mac_control)
                        | (len1.ge(22u32) & etf.vlan & etf.inner_mac_control),
                }
                .pack(),
                "flags2",
            ));
            // Expected register: the residue advanced over the zero-filled tail of the beat, from
            // a table of W constants indexed by the tail length (a 32-bit OR per bit over the
            // one-hot instead cost 300 more LUTs at 512 bits).
            let table = residue_after_zeros(w as usize);
            let expect1 = if w == 1 {
                lit(32, table[0])
            } else {
                let z = onehot_value(&onehot, bits_for(w as u64 - 1), |v| (w - v) as u64)
                    .named("tail_zeros");
                let arms: Vec<(u64, Sig)> = (1..w)
                    .map(|t| (t as u64, lit(32, table[t as usize])))
                    .collect();
                stage(case(z, &arms, lit(32, table[0])), "crc_expect1")
            };
            let expect2 = stage(expect1, "crc_expect2");
            let fcs_bad = (flags2.short | crc.ne(expect2)).named("fcs_bad");
            let verdict = Verdict {
                bad: fcs_bad | flags2.runt | flags2.oversize | flags2.mac_control,
                fcs_bad,
                runt: flags2.runt,
                oversize: flags2.oversize,
                mac_control: flags2.mac_control,
            }
            .pack()
            .named("verdict");

            // ---- Hold line: the newest `hold_n` beats of the frame wait until it is known
            // whether the FCS reaches into them; `fin` marks a finished, trimmed last beat in
            // slot 0 (it leaves in the next advance-cycle, whatever arrives).
            let hw = bits_for(hold_n as u64);
            let held = reg_init(hw, 0u32).enable(adv).named("held");
            let fin = reg_init(1, 0u32).enable(adv).named("fin");
            let slots: Vec<Sig> = (0..hold_n)
                .map(|i| reg(8 * w).enable(adv).named(&format!("hold{i}")))
                .collect();
            let fin_keep = reg(w).enable(adv).named("fin_keep");
            let full = held.eq(hold_n as u64).named("hold_full");
            // The last beat has more than 4 bytes: only a bus of 5+ bytes.
            let big_tail = if w > 4 { keep.bit(4) } else { lit(1, 0u32) }.named("big_tail");
            let take_mid = (take & !last).named("take_mid");
            let take_last = (take & last).named("take_last");
            let shift = (take & full & (!last | big_tail)).named("shift");
            let emit = (fin | shift).named("emit");
            let append = (take_mid & !full).named("append");
            for (i, slot) in slots.iter().enumerate() {
                let i = i as u32;
                slot.set_if(append & held.eq(i as u64), data);
                if i + 1 < hold_n {
                    slot.set_if(shift, slots[i as usize + 1]);
                } else {
                    slot.set_if(shift, data);
                }
            }
            let slot0 = slots[0];
            slot0.set_if(take_last & !full & big_tail, data);
            // An empty frame leaves as one zero byte; only byte 0 is kept, so only it is cleared
            // (clearing the whole beat cost ~500 LUTs at 512 bits).
            let zero_byte0 = if w == 1 {
                lit(8, 0u32)
            } else {
                cat(&[data.slice(8 * w - 1, 8), lit(8, 0u32)])
            };
            slot0.set_if(take_last & !full & !big_tail, zero_byte0);
            held.set(mux(
                take_mid,
                mux(full, lit(hw, hold_n), held + 1u32),
                mux(take_last, lit(hw, 0u32), held),
            ));
            fin.set(take_last);
            // Keep of the finished beat: the last beat minus 4 bytes; or the held beat minus
            // the FCS bytes that spill into it; or the one byte of an empty frame.
            let trim_held = if w >= 4 {
                if w == 4 {
                    keep
                } else {
                    cat(&[keep.slice(3, 0), ones(w - 4)])
                }
            } else {
                keep
            };
            let fin_keep_next = mux(big_tail, keep.shr(4), mux(full, trim_held, lit(w, 1u32)));
            fin_keep.set_if(take_last, fin_keep_next);

            // ---- Emit register (waits for the verdict), then the output register.
            let e_v = reg_init(1, 0u32).enable(adv).named("emit_valid");
            e_v.set(emit);
            let e_d = stage(slot0, "emit_data");
            let e_k = stage(mux(fin, fin_keep, ones(w)), "emit_keep");
            let e_l = stage(fin, "emit_last");
            out_v.set_if(adv, e_v);
            let o_d = stage(e_d, "out_data");
            let o_k = stage(e_k, "out_keep");
            let o_l = stage(e_l, "out_last");
            let o_u = stage(mux(e_l, verdict, lit(rx_user::BITS, 0u32)), "out_user");
            m.valid().set(out_v);
            m.data().set(o_d);
            m.keep().set(o_k);
            m.last().set(o_l);
            m.user().expect("tuser").set(o_u);
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_at_every_width_and_rejects_bad_params() {
        for d in [8, 16, 32, 48, 64, 128, 512] {
            eth_fcs_check(&FcsCheckCfg::for_mtu(d, 1500)).unwrap();
        }
        for mtu in [45, 65514] {
            let e = eth_fcs_check(&FcsCheckCfg { data_bits: 64, mtu }).unwrap_err();
            assert!(e.mentions(&format!("mtu {mtu}")));
        }
        for mtu in [46, 65513] {
            eth_fcs_check(&FcsCheckCfg { data_bits: 64, mtu }).unwrap();
        }
        assert!(eth_fcs_check(&FcsCheckCfg::for_mtu(24, 1500)).is_err());
    }

    #[test]
    fn the_verdict_record_has_the_rx_user_bit_numbers() {
        let offsets: Vec<u32> = Verdict::shape().layout().iter().map(|f| f.1).collect();
        use rx_user::*;
        assert_eq!(offsets, [BAD, FCS_BAD, RUNT, OVERSIZE, MAC_CONTROL]);
        assert_eq!(Verdict::WIDTH, BITS);
    }
}
