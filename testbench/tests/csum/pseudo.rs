//! `csum::pseudo::address_sum_pipelined` (the parser's `ip_sum`) and
//! `pseudo_from_address_sum` (the checksum units' pseudo-header sum from it) against the golden
//! model's sums (`nicgen_model::checksum::address_sum`, `pseudo_header_v4/_v6`): random and
//! all-ones addresses, protocols and lengths, one request per cycle or with gaps; every address
//! sum comes `ADDRESS_SUM_STAGES` cycles after its addresses and every pseudo-header sum
//! `PSEUDO_FROM_SUM_STAGES` after that, in order.

use nicgen_edsl::prelude::*;
use nicgen_hdl::csum::pseudo::{
    address_sum_pipelined, pseudo_from_address_sum, ADDRESS_SUM_STAGES, PSEUDO_FROM_SUM_STAGES,
};
use nicgen_model::checksum::{address_sum, pseudo_header_v4, pseudo_header_v6};
use nicgen_model::IpProtocol;
use nicgen_tests::*;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr};

#[test]
fn pipelined_pseudo_header_sum_matches_the_model() {
    let def = Module::build("pseudo_pipe", || {
        let valid = input("valid", 1);
        let src = input("src", 128);
        let dst = input("dst", 128);
        let proto = input("proto", 8);
        let len = input("len", 16);
        // The parser's view: the addresses' sum, with the request's valid, protocol and
        // length delayed alongside (as the record store carries them).
        let ip_sum = address_sum_pipelined(cat(&[dst, src]), "ip_sum");
        let (mut v, mut p, mut n) = (valid, proto, len);
        for _ in 0..ADDRESS_SUM_STAGES {
            let r = reg_init(1, 0u32);
            r.set(v);
            v = r;
            p = delay(p);
            n = delay(n);
        }
        output("ip_sum", ip_sum);
        let (sum, sv) = pseudo_from_address_sum(v, ip_sum, p, n);
        output("sum", sum);
        output("sum_valid", sv);
    })
    .unwrap();
    let Some(d) = dut(&def) else { return };
    lint_clean(&d.gen);
    let mut sim = d.model.instance();
    reset(&mut sim);
    let p = |n: &str| sim.port(n).unwrap();
    let (pv, pis, ps, pd, pp, pn, psum, psv) = (
        p("valid"),
        p("ip_sum"),
        p("src"),
        p("dst"),
        p("proto"),
        p("len"),
        p("sum"),
        p("sum_valid"),
    );
    let mut rng = StdRng::seed_from_u64(7);
    let mut want: VecDeque<(u32, u16)> = VecDeque::new();
    let mut sums: VecDeque<(u32, u16)> = VecDeque::new();
    let mut seen = 0;
    for cycle in 0..4000u32 {
        let v6 = rng.gen_bool(0.5);
        let ones = rng.gen_bool(0.1);
        let addr = |rng: &mut StdRng| -> u128 {
            if ones {
                u128::MAX
            } else {
                rng.gen()
            }
        };
        let (mut s, mut t) = (addr(&mut rng), addr(&mut rng));
        if !v6 {
            s &= 0xFFFF_FFFF;
            t &= 0xFFFF_FFFF;
        }
        let proto: u8 = if ones { 0xFF } else { rng.gen() };
        let len: u16 = if ones { 0xFFFF } else { rng.gen() };
        let valid = rng.gen_bool(0.8);
        let to_le = |x: u128| x.to_le_bytes().to_vec();
        sim.set_bool(pv, valid);
        sim.set_bytes_le(ps, &to_le(s));
        sim.set_bytes_le(pd, &to_le(t));
        sim.set(pp, proto as u64);
        sim.set(pn, len as u64);
        sim.eval();
        // The address sum has no valid: every cycle's addresses come out.
        if let Some(&(at, w)) = sums.front() {
            if cycle - at == ADDRESS_SUM_STAGES {
                assert_eq!(sim.get_u64(pis) as u16, w, "address sum of cycle {at}");
                sums.pop_front();
            }
        }
        if sim.get_bool(psv) {
            let (at, w) = want.pop_front().expect("a result without a request");
            assert_eq!(
                cycle - at,
                ADDRESS_SUM_STAGES + PSEUDO_FROM_SUM_STAGES,
                "latency"
            );
            assert_eq!(sim.get_u64(psum) as u16, w, "request of cycle {at}");
            seen += 1;
        }
        sums.push_back((cycle, address_sum(s, t)));
        if valid {
            let w = if v6 {
                pseudo_header_v6(
                    Ipv6Addr::from(s),
                    Ipv6Addr::from(t),
                    IpProtocol::from(proto),
                    len as u32,
                )
            } else {
                pseudo_header_v4(
                    Ipv4Addr::from(s as u32),
                    Ipv4Addr::from(t as u32),
                    IpProtocol::from(proto),
                    len,
                )
            };
            want.push_back((cycle, w));
        }
        sim.cycle();
    }
    assert!(seen > 3000, "only {seen} results");
}
