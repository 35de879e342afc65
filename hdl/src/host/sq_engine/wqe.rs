//! The WQE decode stage of `sq_engine`: the fields of the fetched send WQE (control and
//! Ethernet segments) with the checks that need no memory region, and the data segment under
//! the cursor. Combinational, from the WQE register.

use crate::host::desc;
use crate::host::regs::consts::opcode;
use crate::host::regs::desc::{ctrl_seg, data_seg, eth_seg};
use nicgen_edsl::prelude::*;

/// What the control and Ethernet segments say.
pub(super) struct Wqe {
    /// `ctrl_seg.opcode`.
    pub opcode: Sig,
    /// 16-byte segments in the WQE.
    pub ds: Sig,
    /// `ctrl_seg.fm_ce_se`.
    pub fm: Sig,
    pub is_send: Sig,
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
    /// The first data segment's index: after ctrl, eth and the inline header's 16-byte slots.
    pub first_ds: Sig,
    /// The DS count can be fetched (1..=16, at least 2 for SEND and ENHANCED_MPSW).
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
    let is_send = op.eq(opcode::SEND);
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
    // A multi-packet WQE has neither an inline header nor a VLAN insert (bytes 12-13 zero).
    let qp_bad = (!(is_send | is_nop | is_mpw)
        | !ds_ok
        | (is_send & !hdr_fits)
        | (is_mpw & hdr_field.ne(0u32)))
    .named("wqe_malformed");
    Wqe {
        opcode: op,
        ds,
        fm,
        is_send,
        is_nop,
        is_mpw,
        nbb,
        vlan_ins,
        ihs,
        cs,
        vlan_tci,
        first_ds,
        ds_ok,
        qp_bad,
    }
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
