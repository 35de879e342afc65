//! Transport tests: two nodes over ideal and lossy links, and the pieces alone.

use super::context::legal_transition;
use super::headers::{NakCode, Syndrome};
use super::link::SplitMix64;
use super::*;
use crate::roce::opcode;
use std::net::{IpAddr, Ipv4Addr};

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

/// Two nodes with `mem` bytes each, one PD and one all-access MR over all memory per node.
struct Setup {
    pair: Pair,
    mr_a: Mr,
    mr_b: Mr,
    pd_a: u32,
    pd_b: u32,
}

fn setup(mem: usize, cfg: LinkConfig, seed: u64) -> Setup {
    setup_at(mem, cfg, seed, ip(1), ip(2))
}

fn setup_at(mem: usize, cfg: LinkConfig, seed: u64, ip_a: IpAddr, ip_b: IpAddr) -> Setup {
    let mut a = Node::new(MAC_A, ip_a, mem);
    let mut b = Node::new(MAC_B, ip_b, mem);
    let pd_a = a.host.alloc_pd();
    let pd_b = b.host.alloc_pd();
    let mr_a = a.host.reg_mr(pd_a, 0, mem as u64, Access::ALL).unwrap();
    let mr_b = b.host.reg_mr(pd_b, 0, mem as u64, Access::ALL).unwrap();
    Setup {
        pair: Pair::new(a, b, cfg, seed),
        mr_a,
        mr_b,
        pd_a,
        pd_b,
    }
}

/// Connects a new QP on A with a new QP on B; A's send PSNs start just before the 24-bit wrap.
fn connect(s: &mut Setup, mtu: Mtu, tweak: impl Fn(&mut QpAttr)) -> (u32, u32) {
    let qa = s.pair.a.create_qp(s.pd_a);
    let qb = s.pair.b.create_qp(s.pd_b);
    let mut at_a = QpAttr::new(qb, s.pair.b.local.ip, MAC_B);
    let mut at_b = QpAttr::new(qa, s.pair.a.local.ip, MAC_A);
    at_a.mtu = mtu;
    at_b.mtu = mtu;
    at_a.sq_psn = 0xFF_FFF0;
    at_b.rq_psn = 0xFF_FFF0;
    at_b.sq_psn = 0x12_3456;
    at_a.rq_psn = 0x12_3456;
    tweak(&mut at_a);
    tweak(&mut at_b);
    for (node, q, at) in [(&mut s.pair.a, qa, at_a), (&mut s.pair.b, qb, at_b)] {
        let (qp, _) = node.qp_mut(q);
        qp.modify(QpState::Init, None).unwrap();
        qp.modify(QpState::Rtr, Some(at)).unwrap();
        qp.modify(QpState::Rts, None).unwrap();
    }
    (qa, qb)
}

fn fill(host: &mut Host, va: u64, len: usize, rng: &mut SplitMix64) {
    let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    host.write(va, &data);
}

/// Runs until A has `na` and B `nb` completions (collected into the vectors) or `max` ticks.
fn run(s: &mut Setup, max: u64, na: usize, nb: usize) -> (Vec<Wc>, Vec<Wc>) {
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    let ok = s.pair.run_until(max, |p| {
        ca.extend(p.a.poll_cq());
        cb.extend(p.b.poll_cq());
        ca.len() >= na && cb.len() >= nb
    });
    assert!(
        ok,
        "ran out of ticks: A {}/{na}, B {}/{nb}",
        ca.len(),
        cb.len()
    );
    assert_eq!(
        s.pair.ab.stats.bad_icrc + s.pair.ba.stats.bad_icrc,
        0,
        "ICRC"
    );
    (ca, cb)
}

fn send_wr(wr_id: u64, op: WrOp, local_va: u64, lkey: u32, len: u32) -> SendWr {
    SendWr {
        wr_id,
        op,
        local_va,
        lkey,
        len,
    }
}

#[test]
fn psn_arithmetic_wraps_at_24_bits() {
    assert_eq!(psn_add(0xFF_FFFF, 1), 0);
    assert_eq!(psn_add(0xFF_FFF0, 0x20), 0x10);
    assert_eq!(psn_diff(0, 0xFF_FFFF), 1);
    assert_eq!(psn_diff(0xFF_FFFF, 0), -1);
    assert_eq!(psn_diff(0x7F_FFFF, 0), 0x7F_FFFF);
    assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
}

#[test]
fn qp_modify_allows_only_the_verbs_transitions() {
    use QpState::*;
    let local = LocalAddr {
        mac: MAC_A,
        ip: ip(1),
    };
    let mut qp = Qp::new(5, 1, local);
    for to in [Rtr, Rts] {
        assert_eq!(
            qp.modify(to, None),
            Err(QpError::IllegalTransition { from: Reset, to })
        );
    }
    qp.modify(Init, None).unwrap();
    assert_eq!(qp.modify(Rtr, None), Err(QpError::MissingAttributes));
    let v6 = QpAttr::new(1, "fe80::2".parse().unwrap(), MAC_B);
    assert_eq!(qp.modify(Rtr, Some(v6)), Err(QpError::AddressFamily));
    qp.modify(Rtr, Some(QpAttr::new(1, ip(2), MAC_B))).unwrap();
    assert_eq!(qp.state(), Rtr);
    assert!(qp.modify(Init, None).is_err());
    qp.modify(Rts, None).unwrap();
    qp.modify(Error, None).unwrap();
    assert!(qp.modify(Rts, None).is_err());
    qp.modify(Reset, None).unwrap();
    let all = [Reset, Init, Rtr, Rts, Error];
    let legal = all
        .iter()
        .flat_map(|&f| all.iter().map(move |&t| (f, t)))
        .filter(|&(f, t)| legal_transition(f, t))
        .count();
    assert_eq!(
        legal,
        3 + 2 + 5 + 5,
        "forward chain, INIT/RTS self-loops, any → RESET/ERROR"
    );
}

#[test]
fn memory_regions_check_key_pd_bounds_and_rights() {
    let mut h = Host::new(4096);
    let pd = h.alloc_pd();
    let other = h.alloc_pd();
    let mr = h.reg_mr(pd, 1024, 1024, Access::REMOTE_READ).unwrap();
    assert!(h.reg_mr(pd, 4000, 200, Access::ALL).is_none());
    let r = Access::REMOTE_READ;
    assert!(h.check_remote(mr.rkey, pd, 1024, 1024, r).is_ok());
    assert!(h.check_remote(mr.rkey, pd, 2048, 0, r).is_ok());
    assert_eq!(
        h.check_remote(mr.rkey ^ 1, pd, 1024, 8, r),
        Err(AccessError::BadKey)
    );
    assert_eq!(
        h.check_remote(mr.rkey, other, 1024, 8, r),
        Err(AccessError::WrongPd)
    );
    assert_eq!(
        h.check_remote(mr.rkey, pd, 1023, 8, r),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        h.check_remote(mr.rkey, pd, 2041, 8, r),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        h.check_remote(mr.rkey, pd, u64::MAX, 8, r),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        h.check_remote(mr.rkey, pd, 1024, 8, Access::REMOTE_WRITE),
        Err(AccessError::NoPermission)
    );
}

#[test]
fn the_keyed_mr_table_checks_as_the_host_does() {
    let mut t = MrTable::new(16);
    let r = Access::REMOTE_READ;
    let mr = t.register(3, 0x5a, 7, 1024, 1024, r | Access::LOCAL_WRITE);
    assert_eq!((mr.lkey, mr.rkey), (0x35a, 0x35a));
    assert_eq!(t.check(0x35a, 7, 1024, 1024, r), Ok(mr));
    assert_eq!(t.check(0x35a, 7, 2048, 0, r), Ok(mr));
    // Another tag, an empty slot, a slot past the table: bad key before any other check.
    assert_eq!(t.check(0x35b, 8, 0, 8, r), Err(AccessError::BadKey));
    assert_eq!(t.check(0x45a, 7, 1024, 8, r), Err(AccessError::BadKey));
    assert_eq!(t.check(0x105a, 7, 1024, 8, r), Err(AccessError::BadKey));
    // Then PD, bounds (a carry out of 64 bits is out), rights.
    assert_eq!(
        t.check(0x35a, 8, 0, 8, Access::ALL),
        Err(AccessError::WrongPd)
    );
    assert_eq!(
        t.check(0x35a, 7, u64::MAX, 2, Access::ALL),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        t.check(0x35a, 7, 1024, 8, Access::REMOTE_WRITE),
        Err(AccessError::NoPermission)
    );
    // A re-registration under a new tag makes the old key stale; a deregistration empties.
    let again = t.register(3, 0x5b, 7, 0, 64, r);
    assert_eq!(t.check(0x35a, 7, 0, 8, r), Err(AccessError::BadKey));
    assert_eq!(t.check(again.rkey, 7, 0, 8, r), Ok(again));
    t.deregister(3);
    assert_eq!(t.check(again.rkey, 7, 0, 8, r), Err(AccessError::BadKey));
}

#[test]
fn a_write_is_segmented_with_first_middle_last_and_psns_wrap() {
    let mut s = setup(1 << 16, LinkConfig::ideal(1), 1);
    let (qa, _) = connect(&mut s, Mtu::M256, |_| {});
    let lkey = s.mr_a.lkey;
    let (qp, host) = s.pair.a.qp_mut(qa);
    let wr = send_wr(
        1,
        WrOp::WriteImm {
            remote_va: 0x100,
            rkey: 77,
            imm: 0xABCD,
        },
        0,
        lkey,
        256 * 19 + 3,
    );
    qp.post_send(host, wr).unwrap();
    qp.post_send(host, send_wr(2, WrOp::SendImm(9), 0, lkey, 0))
        .unwrap();
    let frames = qp.tick(host, 1);
    let pk: Vec<Packet> = frames.iter().map(|f| Packet::parse(f).unwrap()).collect();
    assert_eq!(pk.len(), 21);
    let psns: Vec<u32> = pk.iter().map(|p| p.bth.psn).collect();
    assert_eq!(psns[..3], [0xFF_FFF0, 0xFF_FFF1, 0xFF_FFF2]);
    assert_eq!(psns[16..18], [0, 1]);
    assert_eq!(pk[0].bth.opcode, opcode::RC_WRITE_FIRST);
    assert_eq!(pk[0].reth.unwrap().dma_len, 256 * 19 + 3);
    assert!(pk[1..19]
        .iter()
        .all(|p| p.bth.opcode == opcode::RC_WRITE_MIDDLE && p.reth.is_none()));
    assert!(pk[..19].iter().all(|p| p.payload.len() == 256));
    assert_eq!(pk[19].bth.opcode, opcode::RC_WRITE_LAST_IMM);
    assert_eq!((pk[19].imm, pk[19].payload.len()), (Some(0xABCD), 3));
    assert_eq!(pk[20].bth.opcode, opcode::RC_SEND_ONLY_IMM);
    assert!(pk[20].payload.is_empty());
    let asks: Vec<usize> = (0..21).filter(|&i| pk[i].bth.ack_req).collect();
    assert_eq!(asks, [19, 20], "AckReq on each message's last packet");
}

#[test]
fn writes_reads_sends_and_atomics_of_random_sizes_land_in_both_memories() {
    let mem = 8 << 20;
    let mut s = setup(mem, LinkConfig::ideal(3), 2);
    let (qa, _qb) = connect(&mut s, Mtu::M1024, |_| {});
    let mut rng = SplitMix64(7);
    let sizes = [0u32, 1, 1023, 1024, 1025, 4096 + 77, 300_000, 1 << 20];
    let (la, rb) = (s.mr_a.lkey, s.mr_b.rkey);
    fill(&mut s.pair.a.host, 0, 2 << 20, &mut rng);
    fill(&mut s.pair.b.host, 4 << 20, 2 << 20, &mut rng);
    for &len in &sizes {
        let len_u = len as usize;
        // WRITE A[0..] → B[2M..]; READ B[4M..] → A[2M..]; SEND A[0..] → B[6M..].
        let (qp, host) = s.pair.a.qp_mut(qa);
        let w = WrOp::Write {
            remote_va: 2 << 20,
            rkey: rb,
        };
        qp.post_send(host, send_wr(1, w, 0, la, len)).unwrap();
        let r = WrOp::Read {
            remote_va: 4 << 20,
            rkey: rb,
        };
        qp.post_send(host, send_wr(2, r, 2 << 20, la, len)).unwrap();
        qp.post_send(host, send_wr(3, WrOp::SendImm(len), 0, la, len))
            .unwrap();
        let (qpb, hb) = s.pair.b.qp_mut(_qb);
        let recv = RecvWr {
            wr_id: 30,
            va: 6 << 20,
            lkey: s.mr_b.lkey,
            len: 1 << 20,
        };
        qpb.post_recv(hb, recv).unwrap();
        let (ca, cb) = run(&mut s, 100_000, 3, 1);
        let ids: Vec<(u64, WcStatus)> = ca.iter().map(|c| (c.wr_id, c.status)).collect();
        assert_eq!(
            ids,
            [
                (1, WcStatus::Success),
                (2, WcStatus::Success),
                (3, WcStatus::Success)
            ]
        );
        assert_eq!(
            (cb[0].wr_id, cb[0].byte_len, cb[0].imm),
            (30, len, Some(len))
        );
        let (a, b) = (&s.pair.a.host.mem, &s.pair.b.host.mem);
        assert!(
            a[..len_u] == b[2 << 20..(2 << 20) + len_u],
            "WRITE of {len}"
        );
        assert!(
            a[2 << 20..(2 << 20) + len_u] == b[4 << 20..(4 << 20) + len_u],
            "READ of {len}"
        );
        assert!(a[..len_u] == b[6 << 20..(6 << 20) + len_u], "SEND of {len}");
    }
    // Atomics: the original value comes back into A's buffer, the new one stays in B.
    s.pair.b.host.write_u64(8, 100);
    let (qp, host) = s.pair.a.qp_mut(qa);
    let fa = WrOp::FetchAdd {
        remote_va: 8,
        rkey: rb,
        add: u64::MAX,
    };
    qp.post_send(host, send_wr(4, fa, 64, la, 8)).unwrap();
    let cs = |compare| WrOp::CmpSwap {
        remote_va: 8,
        rkey: rb,
        compare,
        swap: 7,
    };
    qp.post_send(host, send_wr(5, cs(1), 72, la, 8)).unwrap();
    qp.post_send(host, send_wr(6, cs(99), 80, la, 8)).unwrap();
    let (ca, _) = run(&mut s, 1000, 3, 0);
    assert!(ca.iter().all(|c| c.status == WcStatus::Success));
    let st = s.pair.a.qp(qa).requester.stats;
    assert_eq!(
        (st.go_back, st.timeouts),
        (0, 0),
        "a perfect link needs no retry"
    );
    let h = &s.pair.a.host;
    assert_eq!(
        (h.read_u64(64), h.read_u64(72), h.read_u64(80)),
        (100, 99, 99)
    );
    assert_eq!(s.pair.b.host.read_u64(8), 7);
}

/// The operations of the lossy-link run, by message index.
fn lossy_op(i: usize) -> usize {
    i % 4
}

#[test]
fn many_messages_over_a_lossy_reordering_duplicating_link_complete_once_in_order() {
    const N: usize = 10_000;
    const SLOT: u64 = 1024;
    let cfg = LinkConfig {
        delay: 4,
        loss: 0.10,
        reorder: 0.10,
        reorder_ticks: 6,
        duplicate: 0.05,
        ce_mark: 0.0,
    };
    let mem = 2 * N * SLOT as usize;
    let mut s = setup(mem, cfg, 3);
    let (qa, qb) = connect(&mut s, Mtu::M256, |a| a.timeout = 3);
    let mut rng = SplitMix64(11);
    fill(&mut s.pair.a.host, 0, N * SLOT as usize, &mut rng);
    fill(&mut s.pair.b.host, 0, N * SLOT as usize, &mut rng);
    let dst = N as u64 * SLOT;
    let (la, lb, rb) = (s.mr_a.lkey, s.mr_b.lkey, s.mr_b.rkey);
    let mut lens = Vec::new();
    let mut recvs = Vec::new();
    for i in 0..N {
        let len = rng.below(700) as u32;
        lens.push(len);
        let src = i as u64 * SLOT;
        let remote_va = dst + src;
        let op = match lossy_op(i) {
            0 => WrOp::SendImm(i as u32),
            1 => WrOp::Write {
                remote_va,
                rkey: rb,
            },
            2 => WrOp::Read {
                remote_va: src,
                rkey: rb,
            },
            _ => WrOp::WriteImm {
                remote_va,
                rkey: rb,
                imm: i as u32,
            },
        };
        let local = if lossy_op(i) == 2 { dst + src } else { src };
        let (qp, host) = s.pair.a.qp_mut(qa);
        qp.post_send(host, send_wr(i as u64, op, local, la, len))
            .unwrap();
        if matches!(lossy_op(i), 0 | 3) {
            let (qpb, hb) = s.pair.b.qp_mut(qb);
            let r = RecvWr {
                wr_id: i as u64,
                va: dst + src,
                lkey: lb,
                len: SLOT as u32,
            };
            qpb.post_recv(hb, r).unwrap();
            recvs.push(i);
        }
    }
    let (ca, cb) = run(&mut s, 2_000_000, N, recvs.len());
    assert_eq!(ca.len(), N);
    for (i, c) in ca.iter().enumerate() {
        assert_eq!(
            (c.wr_id, c.status),
            (i as u64, WcStatus::Success),
            "send completion {i}"
        );
    }
    assert_eq!(cb.len(), recvs.len());
    for (c, &i) in cb.iter().zip(&recvs) {
        assert_eq!((c.wr_id, c.status), (i as u64, WcStatus::Success));
        assert_eq!((c.byte_len, c.imm), (lens[i], Some(i as u32)));
    }
    let (a, b) = (&s.pair.a.host.mem, &s.pair.b.host.mem);
    for (i, &len) in lens.iter().enumerate() {
        let src = i * SLOT as usize;
        let d = dst as usize + src;
        let l = len as usize;
        if lossy_op(i) == 2 {
            assert!(a[d..d + l] == b[src..src + l], "READ {i}");
        } else {
            assert!(b[d..d + l] == a[src..src + l], "message {i}");
        }
    }
    let st = s.pair.a.qp(qa).requester.stats;
    let link = s.pair.ab.stats;
    assert!(link.lost > 0 && link.reordered > 0 && link.duplicated > 0);
    assert!(st.go_back > 0, "losses were repaired by go-back-N");
    assert!(s.pair.b.qp(qb).responder.stats.duplicates > 0);
}

#[test]
fn rkey_and_bounds_violations_nak_0x62_and_spare_the_other_qp() {
    let mut s = setup(1 << 16, LinkConfig::ideal(2), 4);
    let (q1, q1b) = connect(&mut s, Mtu::M1024, |_| {});
    let (q2, q2b) = connect(&mut s, Mtu::M1024, |_| {});
    let (q3, q3b) = connect(&mut s, Mtu::M1024, |_| {});
    let small = s
        .pair
        .b
        .host
        .reg_mr(s.pd_b, 4096, 100, Access::REMOTE_WRITE)
        .unwrap();
    s.pair.ba.record = true;
    let la = s.mr_a.lkey;
    let bad_key = WrOp::Write {
        remote_va: 0,
        rkey: 0xBAD,
    };
    let (qp, host) = s.pair.a.qp_mut(q1);
    qp.post_send(host, send_wr(10, bad_key, 0, la, 16)).unwrap();
    qp.post_send(host, send_wr(11, WrOp::Send, 0, la, 16))
        .unwrap();
    let past_end = WrOp::Write {
        remote_va: 4096 + 90,
        rkey: small.rkey,
    };
    let (qp, host) = s.pair.a.qp_mut(q3);
    qp.post_send(host, send_wr(30, past_end, 0, la, 16))
        .unwrap();
    let fine = WrOp::Write {
        remote_va: 4096,
        rkey: small.rkey,
    };
    let (qp, host) = s.pair.a.qp_mut(q2);
    qp.post_send(host, send_wr(20, fine, 0, la, 100)).unwrap();
    let (ca, _) = run(&mut s, 1000, 4, 0);
    let st = |id| ca.iter().find(|c| c.wr_id == id).unwrap().status;
    assert_eq!(st(10), WcStatus::RemoteAccess);
    assert_eq!(st(11), WcStatus::Flushed);
    assert_eq!(st(30), WcStatus::RemoteAccess);
    assert_eq!(st(20), WcStatus::Success);
    let naks = s
        .pair
        .ba
        .recorded
        .iter()
        .filter_map(|f| Packet::parse(f).ok())
        .filter(|p| p.aeth.map(|a| a.syndrome) == Some(Syndrome::Nak(NakCode::RemoteAccessError)))
        .count();
    assert_eq!(naks, 2);
    for q in [q1, q3] {
        assert_eq!(s.pair.a.qp(q).state(), QpState::Error);
    }
    for q in [q1b, q3b] {
        assert_eq!(s.pair.b.qp(q).state(), QpState::Error);
    }
    assert_eq!(s.pair.a.qp(q2).state(), QpState::Rts);
    assert_eq!(s.pair.b.qp(q2b).state(), QpState::Rts);
    // The surviving QP keeps working.
    let (qp, host) = s.pair.a.qp_mut(q2);
    qp.post_send(host, send_wr(21, fine, 0, la, 100)).unwrap();
    let (ca, _) = run(&mut s, 1000, 1, 0);
    assert_eq!(ca[0].status, WcStatus::Success);
}

#[test]
fn a_send_without_a_receive_is_rnr_naked_and_completes_once_one_is_posted() {
    let mut s = setup(1 << 16, LinkConfig::ideal(2), 5);
    let (qa, qb) = connect(&mut s, Mtu::M1024, |_| {});
    let la = s.mr_a.lkey;
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(1, WrOp::Send, 0, la, 3000))
        .unwrap();
    s.pair.run_until(200, |_| false);
    assert!(s.pair.a.poll_cq().is_empty());
    let rnr = s.pair.a.qp(qa).requester.stats.rnr_naks;
    assert!(rnr >= 5, "RNR NAKs every 10 µs wait, got {rnr}");
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let r = RecvWr {
        wr_id: 9,
        va: 8192,
        lkey: s.mr_b.lkey,
        len: 4096,
    };
    qpb.post_recv(hb, r).unwrap();
    let (ca, cb) = run(&mut s, 200, 1, 1);
    assert_eq!(ca[0].status, WcStatus::Success);
    assert_eq!((cb[0].wr_id, cb[0].byte_len), (9, 3000));
    assert!(s.pair.b.host.mem[8192..8192 + 3000] == s.pair.a.host.mem[..3000]);
}

#[test]
fn exhausted_rnr_retries_and_retries_end_in_error_completions_and_flushes() {
    let mut s = setup(1 << 16, LinkConfig::ideal(2), 6);
    let (qa, _) = connect(&mut s, Mtu::M1024, |a| a.rnr_retry = 2);
    let la = s.mr_a.lkey;
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(1, WrOp::Send, 0, la, 10))
        .unwrap();
    qp.post_send(host, send_wr(2, WrOp::Send, 0, la, 10))
        .unwrap();
    let (ca, _) = run(&mut s, 1000, 2, 0);
    assert_eq!(ca[0].status, WcStatus::RnrRetryExceeded);
    assert_eq!(ca[1].status, WcStatus::Flushed);
    assert_eq!(s.pair.a.qp(qa).requester.stats.rnr_naks, 2);

    let mut cfg = LinkConfig::ideal(2);
    cfg.loss = 1.0;
    let mut s = setup(1 << 16, cfg, 6);
    let (qa, _) = connect(&mut s, Mtu::M1024, |a| a.retry_cnt = 3);
    let la = s.mr_a.lkey;
    let (qp, host) = s.pair.a.qp_mut(qa);
    let w = WrOp::Write {
        remote_va: 0,
        rkey: s.mr_b.rkey,
    };
    qp.post_send(host, send_wr(1, w, 0, la, 10)).unwrap();
    qp.post_send(host, send_wr(2, w, 0, la, 10)).unwrap();
    let (ca, _) = run(&mut s, 10_000, 2, 0);
    assert_eq!(ca[0].status, WcStatus::RetryExceeded);
    assert_eq!(ca[1].status, WcStatus::Flushed);
    assert_eq!(s.pair.a.qp(qa).requester.stats.timeouts, 3);
    assert_eq!(s.pair.a.qp(qa).state(), QpState::Error);
}

#[test]
fn atomics_under_loss_and_duplication_execute_exactly_once() {
    let cfg = LinkConfig {
        delay: 3,
        loss: 0.1,
        reorder: 0.2,
        reorder_ticks: 5,
        duplicate: 0.5,
        ce_mark: 0.0,
    };
    let mut s = setup(1 << 16, cfg, 8);
    let (qa, qb) = connect(&mut s, Mtu::M1024, |a| a.timeout = 3);
    const N: u64 = 300;
    let (la, rb) = (s.mr_a.lkey, s.mr_b.rkey);
    for i in 0..N {
        let (qp, host) = s.pair.a.qp_mut(qa);
        let fa = WrOp::FetchAdd {
            remote_va: 0,
            rkey: rb,
            add: 1,
        };
        qp.post_send(host, send_wr(i, fa, 8 * (i + 1), la, 8))
            .unwrap();
    }
    let (ca, _) = run(&mut s, 1_000_000, N as usize, 0);
    assert!(ca
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::Success));
    assert_eq!(s.pair.b.host.read_u64(0), N);
    assert_eq!(s.pair.b.qp(qb).responder.stats.atomics, N);
    for i in 0..N {
        assert_eq!(
            s.pair.a.host.read_u64(8 * (i + 1)),
            i,
            "original of atomic {i}"
        );
    }
    assert!(s.pair.b.qp(qb).responder.stats.duplicates > 0);
}

#[test]
fn a_gap_gets_one_sequence_nak_and_duplicates_a_re_ack() {
    let mut s = setup(1 << 16, LinkConfig::ideal(1), 9);
    let (qa, qb) = connect(&mut s, Mtu::M256, |_| {});
    let la = s.mr_a.lkey;
    let w = WrOp::Write {
        remote_va: 0,
        rkey: s.mr_b.rkey,
    };
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(1, w, 0, la, 256 * 4)).unwrap();
    let frames = qp.tick(host, 1);
    assert_eq!(frames.len(), 4);
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let resp = |qp: &mut Qp, h: &mut Host, f: &[u8]| -> Vec<Packet> {
        qp.on_frame(h, 1, f)
            .iter()
            .map(|f| Packet::parse(f).unwrap())
            .collect()
    };
    assert!(resp(qpb, hb, &frames[0]).is_empty());
    // Packets 2 and 3 are ahead of the expected 1: one NAK carrying the expected PSN.
    let nak = resp(qpb, hb, &frames[2]);
    assert_eq!(nak.len(), 1);
    assert_eq!(
        nak[0].aeth.unwrap().syndrome,
        Syndrome::Nak(NakCode::PsnSequenceError)
    );
    assert_eq!(nak[0].bth.psn, 0xFF_FFF1);
    assert!(resp(qpb, hb, &frames[3]).is_empty());
    assert!(resp(qpb, hb, &frames[1]).is_empty());
    assert!(resp(qpb, hb, &frames[2]).is_empty());
    let ack = resp(qpb, hb, &frames[3]);
    assert_eq!(ack[0].bth.psn, 0xFF_FFF3, "AckReq on the last packet");
    let re = resp(qpb, hb, &frames[0]);
    assert_eq!(re[0].aeth.unwrap().syndrome, Syndrome::Ack { credit: 0x1F });
    assert_eq!((re[0].bth.psn, re[0].aeth.unwrap().msn), (0xFF_FFF3, 1));
}

/// Ticks 20 WRITEs of 64 KiB take from A to B with CE marking of probability `ce`, the
/// lowest rate A's reaction point reached, and the pair.
fn marked_run(ce: f64) -> (u64, u64, Setup, u32) {
    let cfg = LinkConfig {
        ce_mark: ce,
        ..LinkConfig::ideal(2)
    };
    let mut s = setup(1 << 20, cfg, 10);
    let (qa, _) = connect(&mut s, Mtu::M1024, |_| {});
    let la = s.mr_a.lkey;
    let w = WrOp::Write {
        remote_va: 0,
        rkey: s.mr_b.rkey,
    };
    let (qp, host) = s.pair.a.qp_mut(qa);
    for i in 0..20 {
        qp.post_send(host, send_wr(i, w, 0, la, 64 << 10)).unwrap();
    }
    let mut done = Vec::new();
    let mut min_rate = u64::MAX;
    let ok = s.pair.run_until(1_000_000, |p| {
        done.extend(p.a.poll_cq());
        min_rate = min_rate.min(p.a.rp[&qa].rate());
        done.len() == 20
    });
    assert!(ok && done.iter().all(|c| c.status == WcStatus::Success));
    assert_eq!(s.pair.ab.stats.bad_icrc + s.pair.ba.stats.bad_icrc, 0);
    (s.pair.now, min_rate, s, qa)
}

#[test]
fn ce_marked_traffic_makes_paced_cnps_that_slow_the_sender() {
    let (fast, full, s, _) = marked_run(0.0);
    assert_eq!((full, s.pair.b.stats.cnps_sent), (25_000, 0));
    let (slow, low, s, qa) = marked_run(0.05);
    let cnps = s.pair.b.stats.cnps_sent;
    assert!(
        cnps > 0 && cnps <= slow / 4 + 1,
        "{cnps} CNPs in {slow} ticks"
    );
    assert_eq!(s.pair.a.stats.cnps_received, cnps);
    assert!(low < 25_000 / 2, "rate cut to {low} Mb/s");
    assert!(slow > 2 * fast, "paced: {slow} ticks against {fast}");
    assert!(s.pair.a.rp[&qa].rate() > low, "recovering at the end");
}

#[test]
fn a_send_longer_than_the_receive_buffer_naks_0x63_and_fails_both_sides() {
    let mut s = setup(1 << 16, LinkConfig::ideal(2), 12);
    let (qa, qb) = connect(&mut s, Mtu::M1024, |_| {});
    let la = s.mr_a.lkey;
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let r = |wr_id| RecvWr {
        wr_id,
        va: 0,
        lkey: s.mr_b.lkey,
        len: 1500,
    };
    qpb.post_recv(hb, r(1)).unwrap();
    qpb.post_recv(hb, r(2)).unwrap();
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(7, WrOp::Send, 0, la, 2000))
        .unwrap();
    let (ca, cb) = run(&mut s, 1000, 1, 2);
    assert_eq!(ca[0].status, WcStatus::RemoteOperational);
    assert_eq!((cb[0].wr_id, cb[0].status), (1, WcStatus::LocalLength));
    assert_eq!((cb[1].wr_id, cb[1].status), (2, WcStatus::Flushed));
    assert_eq!(s.pair.b.qp(qb).state(), QpState::Error);
}

#[test]
fn a_misaligned_atomic_naks_invalid_request() {
    let mut s = setup(1 << 16, LinkConfig::ideal(2), 13);
    let (qa, qb) = connect(&mut s, Mtu::M1024, |_| {});
    let (la, rb) = (s.mr_a.lkey, s.mr_b.rkey);
    let fa = |remote_va| WrOp::FetchAdd {
        remote_va,
        rkey: rb,
        add: 1,
    };
    let (qp, host) = s.pair.a.qp_mut(qa);
    assert_eq!(
        qp.post_send(host, send_wr(1, fa(4), 0, la, 8)),
        Err(QpError::Misaligned)
    );
    // The requester refuses it, so build the packet by hand from an aligned one.
    qp.post_send(host, send_wr(1, fa(8), 0, la, 8)).unwrap();
    let mut p = Packet::parse(&qp.tick(host, 1)[0]).unwrap();
    p.atomic.as_mut().unwrap().va = 4;
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let out = qpb.on_frame(hb, 1, &p.emit());
    let nak = Packet::parse(&out[0]).unwrap();
    assert_eq!(
        nak.aeth.unwrap().syndrome,
        Syndrome::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(nak.bth.psn, p.bth.psn);
    assert_eq!(qpb.state(), QpState::Error);
}

#[test]
fn a_write_and_a_read_work_over_ipv6() {
    let (a6, b6) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
    let mut s = setup_at(1 << 16, LinkConfig::ideal(2), 14, a6, b6);
    let (qa, _) = connect(&mut s, Mtu::M512, |_| {});
    s.pair.ab.record = true;
    let mut rng = SplitMix64(3);
    fill(&mut s.pair.a.host, 0, 3000, &mut rng);
    let (la, rb) = (s.mr_a.lkey, s.mr_b.rkey);
    let (qp, host) = s.pair.a.qp_mut(qa);
    let w = WrOp::Write {
        remote_va: 0x4000,
        rkey: rb,
    };
    qp.post_send(host, send_wr(1, w, 0, la, 3000)).unwrap();
    let r = WrOp::Read {
        remote_va: 0x4000,
        rkey: rb,
    };
    qp.post_send(host, send_wr(2, r, 0x8000, la, 3000)).unwrap();
    let (ca, _) = run(&mut s, 1000, 2, 0);
    assert!(ca.iter().all(|c| c.status == WcStatus::Success));
    let m = &s.pair.a.host.mem;
    assert!(m[..3000] == m[0x8000..0x8000 + 3000]);
    let p = Packet::parse(&s.pair.ab.recorded[0]).unwrap();
    assert!(matches!(p.headers.ip, crate::roce::IpHeader::V6 { .. }));
}

#[test]
fn a_partly_answered_read_is_asked_again_for_its_remainder() {
    let mut s = setup(1 << 16, LinkConfig::ideal(1), 15);
    let (qa, qb) = connect(&mut s, Mtu::M256, |_| {});
    let mut rng = SplitMix64(4);
    fill(&mut s.pair.b.host, 0x1000, 700, &mut rng);
    let (la, rb) = (s.mr_a.lkey, s.mr_b.rkey);
    let r = WrOp::Read {
        remote_va: 0x1000,
        rkey: rb,
    };
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(1, r, 0x2000, la, 700)).unwrap();
    let req = qp.tick(host, 1);
    assert_eq!(req.len(), 1);
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let resp = qpb.on_frame(hb, 1, &req[0]);
    let ops: Vec<u8> = resp
        .iter()
        .map(|f| Packet::parse(f).unwrap().bth.opcode)
        .collect();
    assert_eq!(
        ops,
        [
            opcode::RC_READ_RESPONSE_FIRST,
            opcode::RC_READ_RESPONSE_MIDDLE,
            opcode::RC_READ_RESPONSE_LAST
        ]
    );
    // Only the first response arrives; the timer asks again for bytes 256.. at the second PSN.
    let (qp, host) = s.pair.a.qp_mut(qa);
    assert!(qp.on_frame(host, 2, &resp[0]).is_empty());
    let timeout = qp.attr().unwrap().ack_timeout_ticks().unwrap();
    let again = qp.tick(host, 2 + timeout);
    let p = Packet::parse(&again[0]).unwrap();
    assert_eq!(p.bth.opcode, opcode::RC_READ_REQUEST);
    assert_eq!(p.bth.psn, 0xFF_FFF1);
    let reth = p.reth.unwrap();
    assert_eq!((reth.va, reth.dma_len), (0x1000 + 256, 700 - 256));
    // The responder replays from its saved READ, without executing anything new.
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    let replay = qpb.on_frame(hb, 3, &again[0]);
    let parsed = |fs: &[Vec<u8>]| -> Vec<(u32, Vec<u8>)> {
        fs.iter()
            .map(|f| Packet::parse(f).unwrap())
            .map(|p| (p.bth.psn, p.payload))
            .collect()
    };
    assert_eq!(parsed(&replay), parsed(&resp[1..]), "same PSNs and bytes");
    let first = Packet::parse(&replay[0]).unwrap().bth.opcode;
    assert_eq!(
        first,
        opcode::RC_READ_RESPONSE_FIRST,
        "counted from the new request"
    );
    assert_eq!(qpb.responder.msn(), 1);
    let (qp, host) = s.pair.a.qp_mut(qa);
    for f in &replay {
        qp.on_frame(host, 4, f);
    }
    let wc = qp.poll_cq();
    assert_eq!((wc.len(), wc[0].status), (1, WcStatus::Success));
    assert!(s.pair.a.host.mem[0x2000..0x2000 + 700] == s.pair.b.host.mem[0x1000..0x1000 + 700]);
}

#[test]
fn a_retransmission_rereads_host_memory() {
    let mut s = setup(1 << 16, LinkConfig::ideal(1), 16);
    let (qa, _) = connect(&mut s, Mtu::M256, |_| {});
    let la = s.mr_a.lkey;
    let w = WrOp::Write {
        remote_va: 0,
        rkey: s.mr_b.rkey,
    };
    s.pair.a.host.write(0, &[1; 300]);
    let (qp, host) = s.pair.a.qp_mut(qa);
    qp.post_send(host, send_wr(1, w, 0, la, 300)).unwrap();
    let first = qp.tick(host, 1);
    // Both packets are lost; the buffer changes before the timer fires.
    host.write(0, &[2; 300]);
    let timeout = qp.attr().unwrap().ack_timeout_ticks().unwrap();
    assert!(qp.tick(host, timeout).is_empty(), "not yet due");
    let again = qp.tick(host, 1 + timeout);
    assert_eq!(again.len(), first.len());
    for (a, b) in first.iter().zip(&again) {
        let (a, b) = (Packet::parse(a).unwrap(), Packet::parse(b).unwrap());
        assert_eq!((a.bth.psn, a.bth.opcode), (b.bth.psn, b.bth.opcode));
        assert!(a.payload.iter().all(|&x| x == 1) && b.payload.iter().all(|&x| x == 2));
    }
    assert_eq!(qp.requester.stats.timeouts, 1);
}

#[test]
fn rnr_waits_longer_than_the_ack_timeout_cost_no_retries() {
    let cfg = LinkConfig {
        duplicate: 1.0,
        ..LinkConfig::ideal(2)
    };
    let mut s = setup(1 << 16, cfg, 17);
    let (qa, qb) = connect(&mut s, Mtu::M1024, |a| {
        a.min_rnr_timer = 13; // 960 µs, against a 66 µs ACK timeout
        a.retry_cnt = 0;
    });
    let la = s.mr_a.lkey;
    let (qp, host) = s.pair.a.qp_mut(qa);
    for i in 0..3 {
        qp.post_send(host, send_wr(i, WrOp::Send, 0, la, 100))
            .unwrap();
    }
    s.pair.run_until(5000, |_| false);
    assert!(s.pair.a.poll_cq().is_empty());
    let st = s.pair.a.qp(qa).requester.stats;
    assert_eq!(
        (st.rnr_naks, st.go_back),
        (6, 0),
        "one per 960 µs wait, copies ignored"
    );
    let (qpb, hb) = s.pair.b.qp_mut(qb);
    for i in 0..3 {
        let r = RecvWr {
            wr_id: i,
            va: 4096 * (i + 1),
            lkey: s.mr_b.lkey,
            len: 100,
        };
        qpb.post_recv(hb, r).unwrap();
    }
    let (ca, cb) = run(&mut s, 2000, 3, 3);
    assert!(ca.iter().chain(&cb).all(|c| c.status == WcStatus::Success));
}
