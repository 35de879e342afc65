//! The finish: the record waits for its frame's length, then three stages: the length checks,
//! the verdict (the first failed check in the golden model's order), and the record registered
//! with the claims and the checksum units' byte ranges, one LUT from flops (docs/TIMING.md,
//! rule 12).

use super::capture::LenQueue;
use super::l4::{PortWord, L4};
use super::tunnel::{first_failure, GRE_CODES, VX_CODES};
use super::{code, malformed, stage, ParseMeta};
use nicgen_edsl::prelude::*;

/// The finished record.
pub(super) struct Finish {
    /// The fields written into the views' late stores (the others left out): the verdict, the
    /// fields of the parse, the claims and the checksum ranges, and `user`.
    pub rec: ParseMeta,
    /// The late stores' write enable.
    pub valid: Sig,
}

/// Wait for the length, check it, decide, register the record with its claims.
pub(super) fn finish(l4: L4, len: &LenQueue) -> Finish {
    // The finish waits here for the frame length (frames longer than the window).
    let v_pf = reg_init(1, 0u32).named("v_fin");
    let hold = (v_pf & !len.head_valid).named("hold");
    let take = !hold;
    v_pf.set_if(take, l4.valid);
    let held = |x: Sig, nm: &str| {
        let r = reg(x.width()).enable(take).named(&format!("{nm}_fin"));
        r.set(x);
        r
    };
    // The length thresholds that depend on the tags and the IP version wait here too, so
    // that each length check below compares two registers: the L3 offset 14 + 4 * tags,
    // and the end of the IP fixed header (20 more for IPv4, 40 for IPv6).
    let by_tags = |base: u32| {
        case(
            l4.carry.vc,
            &[(0, lit(8, base)), (1, lit(8, base + 4))],
            lit(8, base + 8),
        )
    };
    let l2_min = held(by_tags(14), "l2_min");
    let hdr_min = held(mux(l4.carry.v4, by_tags(34), by_tags(54)), "hdr_min");
    let c = l4.carry.map(&mut |x, nm| held(x, nm));
    let ip_proto = held(l4.ip_proto, "ip_proto");
    let l4_off = held(l4.l4_off, "l4_off");
    let l4_len = held(l4.l4_len, "l4_len");
    let frag = held(l4.frag, "frag");
    let late = held(l4.late, "late");
    let l4c = held(l4.l4c, "l4");
    let ports = held(l4.ports, "ports");
    let tun = l4.tun.as_ref().map(|t| t.map(&mut |x, nm| held(x, nm)));

    // ---------------------------------------------------------------- finish 1: lengths
    let pop = (v_pf & len.head_valid).named("len_pop");
    len.head_free.set(!len.head_valid | v_pf);
    len.head_load.set(!len.empty & (!len.head_valid | pop));
    len.head_valid
        .set(mux(len.head_load, lit(1, 1u32), len.head_valid & !pop));
    let n = len.shape.unpack(len.head).frame_len;
    // Each check only where it applies (IPv4 options and lengths: IPv4 frames; the IP
    // checks: IP frames), folded into the LUT behind its compare.
    let is_ip = c.v4 | c.v6;
    let trunc_l2 = n.lt(l2_min.zext(16));
    let trunc_hdr = is_ip & n.lt(hdr_min.zext(16));
    let trunc_opt = c.v4 & n.lt(c.hdr_end.zext(16));
    // The length is at most 0xFFFF: past that the datagram is always cut.
    let trunc_ip = is_ip & (c.ip_end.bit(16) | n.lt(c.ip_end.trunc(16)));
    let vf1 = reg_init(1, 0u32).named("v_fin1");
    vf1.set(pop);
    let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_fin1"));
    let trunc_l2 = f(trunc_l2, "trunc_l2");
    let trunc_hdr = f(trunc_hdr, "trunc_hdr");
    let trunc_opt = f(trunc_opt, "trunc_opt");
    let trunc_ip = f(trunc_ip, "trunc_ip");
    // The checks that do not need the length, and the code when no length check fails
    // (the version, else the walk's code; 0 for a frame that is not IP).
    let ihl_bad = f(c.v4 & c.ihl_bad, "ihl_bad");
    let totlen_bad = f(c.v4 & c.totlen_bad, "totlen_bad");
    let l3_pre_ok = f(
        is_ip & !c.ver_bad & !(c.v4 & (c.ihl_bad | c.totlen_bad)),
        "l3_pre_ok",
    );
    let tail = f(
        mux(
            is_ip,
            mux(c.ver_bad, code(malformed::IP_VERSION), late),
            code(0),
        ),
        "code_tail",
    );
    // Whether that code is an `EXT_*` one, and the L4 verdict's share of it, decided
    // here so that `proto_ok` below is one LUT of five flops, not a decode of the code.
    // With no length check failed, an IP frame past `l3_pre_ok` has no IHL or total-length
    // error either, so the verdict is an `EXT_*` code exactly when this code is.
    let ext_code = is_ip
        & !c.ver_bad
        & (late.eq(malformed::EXT_TRUNC as u64)
            | late.eq(malformed::EXT_LIMIT as u64)
            | late.eq(malformed::EXT_WINDOW as u64));
    let proto_pre_ok = f(
        is_ip & !c.ver_bad & !(c.v4 & (c.ihl_bad | c.totlen_bad)) & !ext_code,
        "proto_pre_ok",
    );
    // `ext_code` where no IPv4 header check failed: with the truncation flag of the IP
    // datagram (below), what `ext_bad` needs, so that it is one LUT of two flops.
    let ext_ok = f(ext_code & !(c.v4 & (c.ihl_bad | c.totlen_bad)), "ext_ok");
    let len_word1 = f(len.head, "len");
    let v4 = f(c.v4, "v4");
    let v6 = f(c.v6, "v6");
    let vc = f(c.vc, "vc");
    let opts = f(c.opts, "ipv4_opts");
    // Past the length checks only the low 16 bits of `ip_end` are reported.
    let ip_end = f(c.ip_end.trunc(16), "ip_end");
    let l3_off = f(l2_min, "l3_off");
    let ip_proto = f(ip_proto, "ip_proto");
    let l4_off = f(l4_off, "l4_off");
    let l4_len = f(l4_len, "l4_len");
    let frag = f(frag, "frag");
    let l4c = f(l4c, "l4");
    let ports = f(ports, "ports");
    // Each kind as 'no failed check', registered, so that the kind's verdict below is one
    // LUT; and each kind's reason, the first failed check, picked from the flags.
    let tun = tun.map(|t| {
        let ok = (
            f(t.vx_fail.eq(0u32), "tun_vx_ok"),
            f(t.gre_fail.eq(0u32), "tun_gre_ok"),
        );
        let codes = (
            f(first_failure(t.vx_fail, &VX_CODES), "tun_vx_code"),
            f(first_failure(t.gre_fail, &GRE_CODES), "tun_gre_code"),
        );
        (t.map(&mut |x, nm| f(x, nm)), ok, codes)
    });

    // ---------------------------------------------------------------- finish 2: verdict
    // The first failed check in the golden model's order (each flag is already limited to
    // the frames it applies to).
    let bad = select(
        &[
            (trunc_l2, code(malformed::L2_TRUNC)),
            (trunc_hdr, code(malformed::L3_TRUNC)),
            (ihl_bad, code(malformed::IPV4_IHL)),
            (trunc_opt, code(malformed::L3_TRUNC)),
            (totlen_bad, code(malformed::IPV4_TOTAL_LEN)),
            (trunc_ip, code(malformed::IP_TRUNC)),
        ],
        tail,
    );
    // Where `l3_pre_ok` holds (an IP header with a sane IHL and total length), the IP
    // datagram's end is the farthest of the length thresholds (IPv4: total length >= IHL * 4
    // >= 20; IPv6: 40 + payload length), so the other truncation flags imply `trunc_ip`,
    // and the verdicts below need only it: one LUT of two flops each, rather than the OR
    // of all six flags.
    let l3_ok = (l3_pre_ok & !trunc_ip).named("l3_ok");
    let l3 = cat(&[l3_ok & v6, l3_ok & v4]);
    let l4 = mux(l3_ok, l4c, lit(2, 0u32));
    // For the claims below: the verdict is an `EXT_*` code when no L3 check failed and
    // the walk's code (in `tail`) is one.
    let ext_bad = ext_ok & !trunc_ip;
    // The tunnel (nicgen_model::tunnel::parse_tunnel): VXLAN when the UDP header passed every
    // check on the VXLAN port, else NVGRE when the IP header passed its checks, with no
    // broken extension-header chain, not a fragment, protocol 47.
    // The kind and whether it passed are decided here and registered with the fields of both
    // kinds; the fields are picked after the register (one LUT per bit from flops), so the
    // decision does not fan out to every field's bit through its checks.
    let tunnel = tun.map(|(t, (vx_ok, gre_ok), codes)| {
        let vxlan = l3_ok & l4c.bit(1) & t.vx_port;
        let nvgre = l3_ok & !frag & !ext_bad & t.gre_proto;
        let whole = (vxlan & vx_ok) | (!vxlan & nvgre & gre_ok);
        (t, codes, vxlan, nvgre, whole)
    });

    // ---------------------------------------------------------------- finish 3: claims
    // The record is registered once more, with what the claims need, so that they are
    // one LUT from flops and the store's write data from flops too (docs/TIMING.md,
    // rule 12).
    let vf2 = reg_init(1, 0u32).named("v_fin2");
    vf2.set(vf1);
    let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_fin2"));
    let lw = len.shape.unpack(len_word1);
    let pw = PortWord::unpack(ports);
    let malformed = f(bad, "malformed");
    let l3 = f(l3, "l3");
    let l4 = f(l4, "l4");
    let vlan_count = f(vc, "vc");
    let frag = f(frag, "frag");
    let ipv4_opts = f(opts, "ipv4_opts");
    let l3_off = f(l3_off, "l3_off");
    let ip_proto_q = f(ip_proto, "ip_proto");
    let frame_len = f(lw.frame_len, "frame_len");
    let ip_end = f(ip_end, "ip_end");
    let l4_off = f(l4_off, "l4_off");
    let l4_len = f(l4_len, "l4_len");
    let src_port = f(pw.src_port, "src_port");
    let dst_port = f(pw.dst_port, "dst_port");
    let user = if lw.user.is_absent() {
        lw.user
    } else {
        f(lw.user, "user")
    };
    let l2_ok = f(!trunc_l2, "l2_ok");
    let ip_ok = f(l3_ok, "ip_ok");
    let proto_ok = f(proto_pre_ok & !trunc_ip, "proto_ok");
    let ext_bad = f(ext_bad, "ext_bad");
    let eth_v4 = f(v4, "eth_v4");
    let eth_v6 = f(v6, "eth_v6");
    let is_tcp = f(ip_proto.eq(6u32), "proto_tcp");
    let is_udp = f(ip_proto.eq(17u32), "proto_udp");
    let l4_go = proto_ok & !frag;
    let c_end = mux(ip_ok, ip_end, frame_len);
    let tunnel = tunnel.map(|(t, (vx_code, gre_code), vxlan, nvgre, whole)| {
        let (vxlan, nvgre, whole) = (
            f(vxlan, "tun_vxlan"),
            f(nvgre, "tun_nvgre"),
            f(whole, "tun_whole"),
        );
        let zero = |x: Sig| lit(x.width(), 0u32);
        let pick = |v: Sig, g: Sig, nm: &str| {
            let (v, g) = (f(v, &format!("{nm}_vx")), f(g, &format!("{nm}_gre")));
            mux(whole, mux(vxlan, v, g), zero(v))
        };
        let key = f(t.key, "tun_key");
        ParseMeta {
            tunnel: cat(&[!vxlan & nvgre, vxlan]),
            tunnel_bad: mux(
                vxlan,
                f(vx_code, "tun_vx_code"),
                mux(nvgre, f(gre_code, "tun_gre_code"), lit(3, 0u32)),
            ),
            tunnel_id: mux(
                whole,
                mux(vxlan, f(t.vni, "tun_vni"), key.slice(31, 8)),
                lit(24, 0u32),
            ),
            flow_id: mux(whole & !vxlan, key.slice(7, 0), lit(8, 0u32)),
            inner_off: pick(t.vx_inner.0, t.gre_inner.0, "inner_off"),
            inner_end: pick(t.vx_inner.1, t.gre_inner.1, "inner_end"),
            ..ParseMeta::<u32>::default().zeros()
        }
    });
    let rec = ParseMeta {
        malformed,
        l3,
        l4,
        vlan_count,
        frag,
        ipv4_opts,
        l3_off,
        ip_proto: ip_proto_q,
        frame_len,
        ip_end,
        l4_off,
        l4_len,
        src_port,
        dst_port,
        l3_claim: cat(&[l2_ok & eth_v6, l2_ok & eth_v4]),
        l4_claim: cat(&[l4_go & is_udp, l4_go & is_tcp]),
        vlan: l2_ok & vlan_count.ne(0u32),
        ext_bad,
        csum_l3_off: mux(l2_ok, l3_off.zext(16), frame_len),
        csum_l4_off: mux(proto_ok, l4_off, c_end),
        csum_end: c_end,
        user,
        // Without tunnel recognition a view that carries the tunnel fields reads 0 (none).
        ..tunnel.unwrap_or_else(|| {
            let w = ParseMeta::shape(0);
            ParseMeta {
                tunnel: lit(w.tunnel, 0u32),
                tunnel_bad: lit(w.tunnel_bad, 0u32),
                tunnel_id: lit(w.tunnel_id, 0u32),
                flow_id: lit(w.flow_id, 0u32),
                inner_off: lit(w.inner_off, 0u32),
                inner_end: lit(w.inner_end, 0u32),
                ..ParseMeta::<u32>::default().zeros()
            }
        })
    };
    Finish { rec, valid: vf2 }
}
