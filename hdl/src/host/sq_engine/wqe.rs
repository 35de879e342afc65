//! The WQE decode stage of `sq_engine`: the fields of the fetched send WQE (control and
//! Ethernet segments) with the checks that need no memory region, and the data segment under
//! the cursor. Combinational, from the WQE register.

use crate::host::desc;
use crate::host::regs::consts::{opcode, swp_flags};
use crate::host::regs::desc::{ctrl_seg, data_seg, eth_seg};
use crate::overlay::tx_tso::TsoCmd;
use nicgen_edsl::prelude::*;

/// What the control and Ethernet segments say.
pub(super) struct Wqe {
    /// `ctrl_seg.opcode`.
    pub opcode: Sig,
    /// 16-byte segments in the WQE.
    pub ds: Sig,
    /// `ctrl_seg.fm_ce_se`.
    pub fm: Sig,
    /// One frame from the inline header and the data segments: SEND or LSO.
    pub is_send: Sig,
    /// An LSO send (one of `is_send`).
    pub is_lso: Sig,
    pub is_nop: Sig,
    /// An enhanced multi-packet send (ENHANCED_MPSW): every data segment is one packet.
    pub is_mpw: Sig,
    /// WQEBBs the WQE spans (1..=4 when `ds` is at most 16).
    pub nbb: Sig,
    /// `vlan_cmd` asks for a VLAN insert (and there is no inline header).
    pub vlan_ins: Sig,
    /// Inline header bytes.
    pub ihs: Sig,
    /// `eth_seg.cs_flags`.
    pub cs: Sig,
    pub vlan_tci: Sig,
    /// The segmentation request: a packed [`TsoCmd`] from an LSO send's Ethernet segment
    /// (`lso = 1`), all zeros for any other WQE.
    pub tso: Sig,
    /// The first data segment's index: after ctrl, eth and the inline header's 16-byte slots.
    pub first_ds: Sig,
    /// The DS count can be fetched (1..=16, at least 2 for SEND, LSO and ENHANCED_MPSW).
    pub ds_ok: Sig,
    /// The WQE is malformed (LOCAL_QP_OP).
    pub qp_bad: Sig,
}

/// Decode the WQE register `wqe` (bytes in memory order, byte 0 in bits 7:0).
pub(super) fn decode(wqe: Sig) -> Wqe {
    let ctrl = wqe.slice(127, 0);
    let eth = wqe.slice(255, 128);
    let op = desc::get(ctrl_seg::OPCODE, ctrl);
    let ds = desc::get(ctrl_seg::DS, ctrl).named("ds");
    let fm = desc::get(ctrl_seg::FM_CE_SE, ctrl);
    let is_lso = op.eq(opcode::LSO).named("is_lso");
    let is_send = (op.eq(opcode::SEND) | is_lso).named("is_send");
    let is_nop = op.eq(opcode::NOP);
    let is_mpw = op.eq(opcode::ENHANCED_MPSW).named("is_mpwqe");
    let nbb = ((ds.zext(8) + 3u32).shr(2)).trunc(3).named("wqe_bbs"); // 1..=4 when ds <= 16
                                                                      // Bytes 12-13 are the inline size, or with bit 15 set the VLAN-insert command.
    let hdr_field = desc::get(eth_seg::INLINE_HDR_SZ, eth);
    let vlan_ins = desc::get(eth_seg::VLAN_CMD, eth)
        .bit(15)
        .named("vlan_insert");
    let ihs = mux(vlan_ins, lit(16, 0u32), hdr_field).named("inline_hdr_sz");
    let cs = desc::get(eth_seg::CS_FLAGS, eth);
    let vlan_tci = desc::get(eth_seg::VLAN_TCI, eth);
    let inl_ds = mux(ihs.gt(2u32), (ihs + 13u32).shr(4), lit(16, 0u32));
    let first_ds = (inl_ds + 2u32).named("first_data_ds");
    let hdr_fits = (ihs.le(226u32) & (ihs + 30u32).le(ds.zext(16).shl(4))).named("inline_fits");
    let ds_ok = ds.ne(0u32) & ds.le(16u32) & (is_nop | ds.ge(2u32));
    let (tso, lso_ok) = lso(eth, ihs, vlan_ins);
    // A multi-packet WQE has neither an inline header nor a VLAN insert (bytes 12-13 zero).
    let qp_bad = (!(is_send | is_nop | is_mpw)
        | !ds_ok
        | (is_send & !hdr_fits)
        | (is_lso & !lso_ok)
        | (is_mpw & hdr_field.ne(0u32)))
    .named("wqe_malformed");
    Wqe {
        opcode: op,
        ds,
        fm,
        is_send,
        is_lso,
        is_nop,
        is_mpw,
        nbb,
        vlan_ins,
        ihs,
        cs,
        vlan_tci,
        tso: mux(is_lso, tso, lit(TsoCmd::WIDTH, 0u32)).named("lso_cmd"),
        first_ds,
        ds_ok,
        qp_bad,
    }
}

/// The [`TsoCmd`] of an LSO send's Ethernet segment `eth` with inline header `ihs` bytes
/// (`vlan_ins`: bytes 12-13 are a VLAN insert instead), and whether it may be sent: `mss`
/// 1..=16383 (the command's 14 bits), an inline header of at least an Ethernet header (the
/// segments' headers are the inline bytes), every software-parser offset below 256 bytes (the
/// command's 8 bits; the inline header ends before). The offsets are in 2-byte units; a
/// non-zero `swp_inner_l3_offset` marks a tunnelled frame, otherwise the outer fields locate
/// the only IP and TCP headers (as mlx5e fills them for a frame without encapsulation).
fn lso(eth: Sig, ihs: Sig, vlan_ins: Sig) -> (Sig, Sig) {
    let mss = desc::get(eth_seg::MSS, eth);
    let flags = desc::get(eth_seg::SWP_FLAGS, eth);
    let swp = [
        eth_seg::SWP_OUTER_L3_OFFSET,
        eth_seg::SWP_OUTER_L4_OFFSET,
        eth_seg::SWP_INNER_L3_OFFSET,
        eth_seg::SWP_INNER_L4_OFFSET,
    ]
    .map(|f| desc::get(f, eth));
    let [o3, o4, i3, i4] = swp.map(|o| o.trunc(7).zext(8).shl(1));
    let flag = |bit: u64| flags.bit(bit.trailing_zeros());
    let tun = i3.ne(0u32).named("lso_tunnelled");
    let zero = lit(8, 0u32);
    let cmd = TsoCmd {
        mss: mss.trunc(14),
        outer_l3: mux(tun, o3, zero),
        outer_l4: mux(tun, o4, zero),
        l3: mux(tun, i3, o3),
        l4: mux(tun, i4, o4),
        hdr_len: ihs.trunc(9),
        tunnel: mux(
            tun,
            mux(flag(swp_flags::OUTER_L4_UDP), lit(2, 1u32), lit(2, 2u32)),
            lit(2, 0u32),
        ),
        outer_v6: tun & flag(swp_flags::OUTER_L3_IPV6),
        v6: mux(
            tun,
            flag(swp_flags::INNER_L3_IPV6),
            flag(swp_flags::OUTER_L3_IPV6),
        ),
        lso: lit(1, 1u32),
    }
    .pack();
    let offsets_ok = !swp
        .iter()
        .map(|o| o.bit(7))
        .fold(lit(1, 0u32), |a, b| a | b);
    let ok = (mss.ne(0u32) & mss.lt(1u64 << 14) & !vlan_ins & ihs.ge(14u32) & offsets_ok)
        .named("lso_ok");
    (cmd, ok)
}

/// A data segment's fields.
pub(super) struct Seg {
    pub len: Sig,
    pub inline: Sig,
    pub lkey: Sig,
    pub addr: Sig,
}

/// Data segment `dsi` (a 5-bit index) of the WQE.
pub(super) fn segment(wqe: Sig, dsi: Sig) -> Seg {
    let ds_arms: Vec<(u64, Sig)> = (0..16u32)
        .map(|i| (i as u64, wqe.slice(128 * i + 127, 128 * i)))
        .collect();
    let dseg = case(dsi, &ds_arms, lit(128, 0u32)).named("data_seg");
    Seg {
        len: desc::get(data_seg::BYTE_COUNT, dseg).named("seg_len"),
        inline: desc::get(data_seg::INLINE, dseg),
        lkey: desc::get(data_seg::LKEY, dseg),
        addr: desc::get(data_seg::ADDR, dseg).named("seg_addr"),
    }
}
