//! The emitter: every construct, at many widths, lint-clean under Verilator -Wall and accepted by
//! Icarus (-g2005) and Yosys.

mod common;
use common::*;
use nicgen_edsl::prelude::*;

/// One module that uses every construct at width `w`.
fn kitchen_sink(w: u32) -> Rc<ModuleDef> {
    Module::build(format!("sink_w{w}"), || {
        doc("Every construct of the eDSL in one module.");
        let a = input("a", w);
        let b = input("b", w);
        let sel = input("sel", 2);
        let sh = input("sh", 4);
        let en = input("en", 1);
        let x = (a & b) | (a ^ !b);
        let sum = a.add_wide(b).named("sum");
        let diff = (a - b).named("diff");
        let lt = a.lt(b);
        let eqc = a.eq(if w > 1 { 3u32 } else { 1 });
        let red = cat(&[a.and_reduce(), a.or_reduce(), b.xor_reduce(), lt, eqc]);
        let shifted = a.shl_by(sh) ^ b.shr_by(sh) ^ a.shl(1) ^ b.shr(w.min(3));
        let pick = case(sel, &[(0, a), (1, b), (2, x)], diff);
        let pri = select(&[(lt, a), (eqc, b)], shifted);
        let m = mux(en, pick, pri);
        let hi = sum.msb();
        let acc = reg(w).init(0u32).enable(en).named("acc");
        acc.set(acc + m);
        acc.set_if(hi, lit(w, 0u32));
        let pipe = delay(m ^ acc);
        let rep = a.bit(0).repl(w);
        let mem = memory("store", w, 16);
        let addr = reg_init(4, 0u32);
        addr.set(addr + 1u32);
        mem.write(en, addr, pipe ^ rep);
        let rd_a = mem.read_async(sel.zext(4));
        let rd_s = mem.read_sync(addr, Some(en));
        output("y", pipe ^ rd_a ^ rd_s ^ sum.trunc(w));
        output("flags", red);
    })
    .unwrap()
}

#[test]
fn kitchen_sink_is_lint_clean_at_every_width() {
    for w in [1u32, 63, 64, 65, 128, 512, 1024, 4096] {
        let g = generate(
            &kitchen_sink(w),
            &EmitOptions {
                preset: "test".into(),
                config_hash: "0".into(),
            },
        );
        lint_clean(&g, &format!("sink{w}"));
        iverilog_ok(&g, &format!("sink{w}"));
        if w <= 128 {
            yosys_ok(&g, &format!("sink{w}"));
        }
    }
}

#[test]
fn constants_of_any_width() {
    let big = (BigUint::from(1u8) << 4095u32) | BigUint::from(0x1234u32);
    let m = Module::build("wide_const", || {
        let a = input("a", 4096);
        output("y", a ^ lit(4096, big.clone()));
    })
    .unwrap();
    let g = generate(&m, &EmitOptions::default());
    assert!(g.verilog[0].1.contains("4096'h8000"), "{}", dump(&g));
    lint_clean(&g, "wide_const");
}

/// Yosys's `<synth> -top <top>; stat` on the generated module: whether it ran, and the
/// statistics it printed last.
fn yosys_stat(g: &Generated, synth: &str) -> (bool, String) {
    let dir = write(g, &g.top.clone());
    let script = format!(
        "read_verilog {}; {synth} -top {}; stat",
        dir.join(&g.verilog[0].0).display(),
        g.top
    );
    let out = std::process::Command::new("yosys")
        .args(["-p", &script])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let stat = text.rsplit("Printing statistics").next().unwrap_or("");
    (out.status.success(), stat.to_string())
}

/// Yosys infers the memories as RAM primitives: LUTRAM for a combinational read, block RAM for a
/// registered read.
#[test]
fn memories_infer_lutram_and_block_ram() {
    if !have("yosys") {
        return;
    }
    let mk = |name: &str, w: u32, d: u32, sync: bool| {
        Module::build(name, move || {
            let we = input("we", 1);
            let wa = input("wa", clog2(d as u64));
            let wd = input("wd", w);
            let ra = input("ra", clog2(d as u64));
            let mem = memory("ram", w, d);
            mem.write(we, wa, wd);
            let q = if sync {
                mem.read_sync(ra, None)
            } else {
                mem.read_async(ra)
            };
            output("q", q);
        })
        .unwrap()
    };
    for (def, want) in [
        (mk("lutram", 8, 16, false), "RAM32M"),
        (mk("bram", 36, 1024, true), "RAMB36E1"),
    ] {
        let g = generate(&def, &EmitOptions::default());
        let (ok, stat) = yosys_stat(&g, "synth_xilinx -noiopad");
        assert!(
            ok && stat.contains(want),
            "{} should infer {want}:\n{stat}",
            g.top
        );
    }
}

/// A memory marked `distributed` stays LUT RAM in ECP5 synthesis even where its asynchronous
/// read is addressed by a register, which Yosys may otherwise turn into a block-RAM read port.
#[test]
fn distributed_memories_stay_lut_ram() {
    if !have("yosys") {
        return;
    }
    let def = Module::build("queue_lutram", || {
        let we = input("we", 1);
        let wa = input("wa", 6);
        let wd = input("wd", 25);
        let step = input("step", 1);
        let rd = reg_init(6, 0u32);
        rd.set_if(step, rd + 1u32);
        let mem = memory("items", 25, 64);
        mem.distributed();
        mem.write(we, wa, wd);
        output("q", mem.read_async(rd));
    })
    .unwrap();
    let g = generate(&def, &EmitOptions::default());
    assert!(
        g.verilog[0].1.contains("(* ram_style = \"distributed\" *)"),
        "{}",
        dump(&g)
    );
    lint_clean(&g, &g.top.clone());
    let (ok, stat) = yosys_stat(&g, "synth_ecp5");
    assert!(
        ok && stat.contains("TRELLIS_DPR16X4") && !stat.contains("DP16KD"),
        "queue_lutram should be LUT RAM only:\n{stat}"
    );
}

/// A written memory with a registered read is emitted `(* no_rw_check *)` unless the design keeps
/// read-during-write semantics, and then a colliding read simulates as the complement of the old
/// word (hardware may return anything), so a design that relies on the old word fails its tests.
#[test]
fn registered_read_collisions_are_undefined_unless_kept() {
    let mk = |name: &str, keep: bool| {
        Module::build(name, move || {
            let we = input("we", 1);
            let wa = input("wa", 4);
            let wd = input("wd", 8);
            let ra = input("ra", 4);
            let mem = memory("ram", 8, 16);
            if keep {
                mem.keep_rw_collisions();
            }
            mem.write(we, wa, wd);
            output("q", mem.read_sync(ra, None));
        })
        .unwrap()
    };
    for (keep, want_attr, want_q) in [(false, true, "q=a5"), (true, false, "q=5a")] {
        let def = mk(if keep { "rw_kept" } else { "rw_free" }, keep);
        let g = generate(&def, &EmitOptions::default());
        let text = &g.verilog[0].1;
        assert_eq!(
            text.contains("(* no_rw_check *)"),
            want_attr,
            "{}",
            dump(&g)
        );
        lint_clean(&g, &g.top.clone());
        if !have("iverilog") {
            continue;
        }
        // Write 0x5a to word 3, then write 0x77 to word 3 while reading it.
        let tb = format!(
            "module tb; reg clk = 0, we = 0; reg [3:0] wa = 0, ra = 0; reg [7:0] wd = 0; wire [7:0] q;\n\
             {top} dut(.clk(clk), .we(we), .wa(wa), .wd(wd), .ra(ra), .q(q));\n\
             initial begin\n\
               we = 1; wa = 3; wd = 8'h5a; #1 clk = 1; #1 clk = 0;\n\
               wd = 8'h77; ra = 3; #1 clk = 1; #1 clk = 0;\n\
               $display(\"q=%h\", q); $finish;\n\
             end\nendmodule\n",
            top = g.top
        );
        let dir = write(&g, &format!("{}-sim", g.top));
        std::fs::write(dir.join("tb.v"), tb).unwrap();
        let exe = dir.join("sim.vvp");
        let st = std::process::Command::new("iverilog")
            .args(["-g2005", "-o"])
            .arg(&exe)
            .arg(dir.join("tb.v"))
            .arg(dir.join(&g.verilog[0].0))
            .status()
            .unwrap();
        assert!(st.success());
        let out = std::process::Command::new("vvp")
            .arg(&exe)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&out.stdout);
        assert!(out.contains(want_q), "{}: want {want_q}, got {out}", g.top);
    }
}

/// A reduction of a unary expression keeps the operand in parentheses: written together,
/// `|` and `|a` would lex as the logical `||`, and `^` and `~a` as the XNOR reduction `^~a`
/// (the wrong value for an even width).
#[test]
fn reductions_of_unary_expressions_are_parenthesised() {
    let m = Module::build("nested_reduce", || {
        let a = input("a", 4);
        output(
            "y",
            cat(&[
                a.or_reduce().or_reduce(),
                (!a).xor_reduce(),
                (!a).and_reduce(),
                !a.or_reduce(),
            ]),
        );
    })
    .unwrap();
    let g = generate(&m, &EmitOptions::default());
    let text = &g.verilog[0].1;
    for want in ["|(|a)", "^(~a)", "&(~a)", "~|a"] {
        assert!(text.contains(want), "no `{want}` in:\n{}", dump(&g));
    }
    lint_clean(&g, "nested_reduce");
    iverilog_ok(&g, "nested_reduce");
}
