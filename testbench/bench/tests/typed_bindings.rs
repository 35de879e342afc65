//! The emitted typed Rust bindings and the name-based `Sim` API see the same model the same way.

use nicgen_bench::{csum512::*, csum512_model, XorShift};

#[test]
fn typed_wrapper_matches_the_dynamic_api() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let model = csum512_model().unwrap();
    let mut typed = InetCsumD512L1::new(model.instance()).unwrap();
    let mut dynamic = model.instance();
    let names = [
        "s_axis_tdata",
        "s_axis_tkeep",
        "s_axis_tvalid",
        "s_axis_tlast",
        "m_axis_csum_tready",
        "rst",
    ];
    let ports: Vec<_> = names.iter().map(|n| dynamic.port(n).unwrap()).collect();
    let (valid_o, data_o) = (
        dynamic.port("m_axis_csum_tvalid").unwrap(),
        dynamic.port("m_axis_csum_tdata").unwrap(),
    );
    let mut rng = XorShift(42);
    let mut seen = 0;
    for cyc in 0..2000 {
        let mut inp = InetCsumD512L1In::default();
        for w in inp.s_axis_tdata.iter_mut() {
            *w = rng.next_u64();
        }
        inp.s_axis_tkeep = u64::MAX;
        inp.s_axis_tvalid = rng.next_u64() & 1;
        inp.s_axis_tlast = rng.next_u64() & 1;
        inp.m_axis_csum_tready = rng.next_u64() & 1;
        inp.rst = (cyc < 2) as u64;
        let out = typed.cycle(&inp);
        let words: Vec<u8> = inp
            .s_axis_tdata
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        dynamic.set_bytes_le(ports[0], &words);
        dynamic.set(ports[1], inp.s_axis_tkeep);
        dynamic.set(ports[2], inp.s_axis_tvalid);
        dynamic.set(ports[3], inp.s_axis_tlast);
        dynamic.set(ports[4], inp.m_axis_csum_tready);
        dynamic.set(ports[5], inp.rst);
        dynamic.cycle();
        assert_eq!(
            out.m_axis_csum_tvalid,
            dynamic.get_u64(valid_o),
            "cycle {cyc}"
        );
        assert_eq!(
            out.m_axis_csum_tdata,
            dynamic.get_u64(data_o),
            "cycle {cyc}"
        );
        seen += out.m_axis_csum_tvalid;
    }
    assert!(seen > 100, "only {seen} checksums in 2000 random cycles");
}
