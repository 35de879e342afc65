//! Elaboration checks return errors naming the user's source line, never panics.

use nicgen_edsl::prelude::*;

fn err(r: Result<Rc<ModuleDef>, ElabError>) -> ElabError {
    match r {
        Ok(_) => panic!("expected an elaboration error"),
        Err(e) => e,
    }
}

#[test]
fn width_mismatch_names_the_line() {
    let line = line!() + 4;
    let e = err(Module::build("m", || {
        let a = input("a", 8);
        let b = input("b", 9);
        let y = a + b;
        output("y", y);
    }));
    assert!(
        e.mentions("width mismatch in `+`: left is 8 bits, right is 9 bits"),
        "{e}"
    );
    assert_eq!(e.diags[0].loc.line, line, "{e}");
    assert!(e.diags[0].loc.file.ends_with("checks.rs"));
    assert!(e.to_string().contains("checks.rs"), "{e}");
}

#[test]
fn undriven_output_and_wire() {
    let e = err(Module::build("m", || {
        let _a = input("a", 1).unused();
        let w = wire(4);
        let _o = output_wire("y", 4);
        output("z", w);
    }));
    assert!(e.mentions("output `y` is never driven"), "{e}");
    assert!(e.mentions("wire wire@checks.rs"), "{e}");
}

#[test]
fn multiple_drivers() {
    let e = err(Module::build("m", || {
        let a = input("a", 4);
        let w = wire(4).named("w");
        w.set(a);
        w.set(!a);
        output("y", w);
    }));
    assert!(
        e.mentions("wire `w` has multiple drivers (first driven at"),
        "{e}"
    );
}

#[test]
fn combinational_loop_is_printed_as_a_chain() {
    let e = err(Module::build("m", || {
        let a = input("a", 4);
        let p = wire(4).named("p");
        let q = (p ^ a).named("q");
        let r = (q + 1u32).named("r");
        p.set(r);
        output("y", r);
    }));
    let msg = &e.diags[0].msg;
    assert!(msg.starts_with("combinational loop: "), "{e}");
    for n in ["`p`", "`q`", "`r`"] {
        assert!(msg.contains(n), "{msg}");
    }
}

#[test]
fn loop_through_a_child_instance() {
    // The child passes `i` straight to `o`; the parent feeds `o` back into `i`.
    let child = Module::build("pass", || {
        let i = input("i", 1);
        output("o", !i);
    })
    .unwrap();
    let e = err(Module::build("top", || {
        let u = instance(&child, "u");
        let o = u.get("o");
        u.set("i", o);
        output("y", o);
    }));
    assert!(e.mentions("combinational loop: `u.o`"), "{e}");
}

#[test]
fn registers_break_loops() {
    Module::build("m", || {
        let a = input("a", 4);
        let r = reg(4);
        r.set(r ^ a);
        output("y", r);
    })
    .unwrap();
}

#[test]
fn unused_input_needs_a_declaration() {
    let e = err(Module::build("m", || {
        let _a = input("a", 4);
        output("y", lit(1, 0u32));
    }));
    assert!(e.mentions("input `a` is never used"), "{e}");
    let e = err(Module::build("m", || {
        let a = input("a", 4);
        output("y", a.slice(1, 0));
    }));
    assert!(e.mentions("bits [3:2] of `a` are never used"), "{e}");
    Module::build("m", || {
        let a = input("a", 4).unused();
        output("y", a.slice(1, 0));
    })
    .unwrap();
}

#[test]
fn keywords_are_escaped() {
    let m = Module::build("wire", || {
        let a = input("packed", 2);
        output("logic", (a + 1u32).named("reg"));
    })
    .unwrap();
    let g = generate(&m, &EmitOptions::default());
    let t = &g.verilog[0].1;
    assert!(t.contains("module wire_ ("), "{t}");
    assert!(t.contains("packed_") && t.contains("logic_"), "{t}");
    assert!(!t.contains(" reg;"), "{t}");
}

#[test]
fn identical_modules_are_emitted_once() {
    let mk = |n: u32| {
        Module::build("stage", move || {
            let a = input("a", n);
            output("y", delay(a));
        })
        .unwrap()
    };
    let (s8a, s8b, s16) = (mk(8), mk(8), mk(16));
    let top = Module::build("top", || {
        let a = input("a", 8);
        let u1 = instance(&s8a, "u1");
        u1.set("a", a);
        let u2 = instance(&s8b, "u2");
        u2.set("a", u1.get("y"));
        let u3 = instance(&s16, "u3");
        u3.set("a", cat(&[a, u2.get("y")]));
        output("y", u3.get("y"));
    })
    .unwrap();
    let g = generate(&top, &EmitOptions::default());
    assert_eq!(
        g.manifest.modules,
        vec!["stage", "stage_1", "top"],
        "{:?}",
        g.manifest.modules
    );
    let t = &g.verilog.last().unwrap().1;
    assert!(
        t.contains("stage u1 (") && t.contains("stage u2 (") && t.contains("stage_1 u3 ("),
        "{t}"
    );
}

#[test]
fn constant_must_fit() {
    let e = err(Module::build("m", || {
        output("y", lit(4, 16u32));
    }));
    assert!(e.mentions("does not fit in 4 bits"), "{e}");
}

#[test]
fn unconnected_child_input() {
    let child = Module::build("c", || {
        let i = input("i", 1);
        output("o", i);
    })
    .unwrap();
    let e = err(Module::build("top", || {
        let u = instance(&child, "u");
        output("y", u.get("o"));
    }));
    assert!(e.mentions("has unconnected inputs: i"), "{e}");
}
