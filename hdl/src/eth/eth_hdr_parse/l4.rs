//! Stages 18 and 19, L4: the TCP/UDP checks (compares first, on the registers the walk's last
//! read stage took in), then each protocol's code and the walk's.

use super::l3::Carry;
use super::tunnel::{checks, TunPre};
use super::walk::Walked;
use super::{code, malformed, stage, S_L4};
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// The first word of a TCP or UDP header, as read (bytes 0..4, big-endian).
    pub(super) struct PortWord {
        dst_port: 16,
        src_port: 16,
    }
}

/// What stage 19 hands to the finish.
pub(super) struct L4 {
    /// Stage 19 holds a frame.
    pub valid: Sig,
    pub carry: Carry,
    /// The code when no L3 check fails: the walk's, else (not a fragment) the TCP/UDP one.
    pub late: Sig,
    /// `{udp, tcp}`: the TCP/UDP header passed every check (and the walk ended cleanly, not in
    /// a fragment).
    pub l4c: Sig,
    pub frag: Sig,
    pub ip_proto: Sig,
    pub l4_off: Sig,
    pub l4_len: Sig,
    /// The ports ([`PortWord`]).
    pub ports: Sig,
    /// The tunnel checks (with `HdrParseCfg::tunnels`).
    pub tun: Option<TunPre>,
}

/// Stages 18 (compares) and 19 (codes); `vxlan_port` the VXLAN port input (with tunnels).
pub(super) fn decode(w: Walked, vxlan_port: Option<Sig>) -> L4 {
    let v_l4 = reg_init(1, 0u32).named(&format!("v{S_L4}"));
    v_l4.set(w.valid);
    let valid = v_l4;
    // The comparisons first, the codes in the next stage (the fields are registers: the
    // last read stage took them in).
    let walk = w.walk;
    let ports = walk.ports.expect("the last read stage takes the ports");
    let ulen = walk.ulen.expect("the last read stage takes the UDP length");
    let doff = walk
        .doff
        .expect("the last read stage takes the data offset");
    let rem = w.rem;
    let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_s{S_L4}"));
    let tcp = f(walk.nh.eq(6u32), "is_tcp");
    let udp = f(walk.nh.eq(17u32), "is_udp");
    // Per protocol: the code of the first failed check among those that compare with
    // constants, whether one failed, and the length check (an adder) on its own.
    let [t_short, t_win, u_short, u_win] = w.l4_pre;
    let doff_short = !(doff.bit(3) | (doff.bit(2) & (doff.bit(1) | doff.bit(0))));
    let t_checks = [
        (t_short, code(malformed::L4_TRUNC)),
        (t_win, code(malformed::L4_WINDOW)),
        // doff < 5 as a LUT of four bits, ulen < 8 as a zero test of its upper 13 bits: a
        // compare with a constant would be mapped to a carry chain.
        (doff_short, code(malformed::L4_BAD)),
    ];
    let u_checks = [
        (u_short, code(malformed::L4_TRUNC)),
        (u_win, code(malformed::L4_WINDOW)),
        (ulen.slice(15, 3).eq(0u32), code(malformed::L4_BAD)),
    ];
    let any = |c: &[(Sig, Sig)]| c.iter().map(|(x, _)| *x).reduce(|a, b| a | b).unwrap();
    let tcp_first = f(select(&t_checks, 0u32), "tcp_code");
    let tcp_any = f(any(&t_checks), "tcp_bad");
    let tcp_long = f(cat(&[doff, lit(2, 0u32)]).zext(16).gt(rem), "tcp_doff_long");
    let udp_first = f(select(&u_checks, 0u32), "udp_code");
    let udp_any = f(any(&u_checks), "udp_bad");
    let udp_long = f(ulen.gt(rem), "udp_len_long");
    let walk_bad = f(walk.ecode.ne(0u32), "walk_bad");
    let ecode = f(walk.ecode, "ecode");
    let wfrag = f(walk.frag, "frag");
    let ip_proto = f(walk.nh, "ip_proto");
    let l4_off = f(walk.p, "l4_off");
    let l4_len = f(rem, "l4_len");
    let ports = f(ports, "ports");
    let carry = w.carry.map(&mut |x, nm| f(x, nm));
    let tun = w.tun.as_ref().map(|t| {
        let port = vxlan_port.expect("a VXLAN port with tunnels");
        checks(t, l4_off, l4_len, ip_proto, carry.ip_end, port)
    });
    let v_codes = reg_init(1, 0u32).named(&format!("v{}", S_L4 + 1));
    v_codes.set(valid);
    let valid = v_codes;
    let proto_code = |any: Sig, first: Sig, long: Sig| {
        mux(any, first, mux(long, code(malformed::L4_TRUNC), code(0)))
    };
    let l4_code = mux(
        tcp,
        proto_code(tcp_any, tcp_first, tcp_long),
        mux(udp, proto_code(udp_any, udp_first, udp_long), code(0)),
    );
    let late = mux(walk_bad, ecode, mux(wfrag, code(0), l4_code));
    let l4_ok = !walk_bad & !wfrag & !(tcp & (tcp_any | tcp_long)) & !(udp & (udp_any | udp_long));
    let l4c = cat(&[l4_ok & udp, l4_ok & tcp]);
    L4 {
        valid,
        carry,
        late,
        l4c,
        frag: wfrag,
        ip_proto,
        l4_off,
        l4_len,
        ports,
        tun,
    }
}
