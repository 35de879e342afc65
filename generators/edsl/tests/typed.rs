//! Typed records, ports and state machines: what the Rust compiler checks, what elaboration
//! checks, and what the emitted Verilog shows (state `localparam`s, source locations, names of
//! temporaries after the function that made them), lint-clean under Verilator -Wall, Icarus
//! and Yosys.

mod common;
use common::*;
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// A request with a parameter-free layout.
    struct Req {
        /// Byte address.
        addr: 20,
        len: 12,
        tag: 4,
    }
}

nicgen_edsl::record! {
    /// A result whose `queue` width is a parameter.
    struct Res(queue_bits: u32) {
        tag: 4,
        queue: queue_bits,
        err: 1,
    }
}

nicgen_edsl::states! {
    /// The unit's states.
    enum UnitState { Idle, Busy, WaitAck }
}

/// The unit's ports: a request stream in, a result stream out, a stall counter out.
struct UnitPorts {
    req: RecordStream<Req<u32>>,
    res: RecordStream<Res<u32>>,
    busy: Sig,
}

impl Ports for UnitPorts {
    type Cfg = u32;
    fn ports(io: &Io, queue_bits: &u32) -> Self {
        UnitPorts {
            req: RecordStream::sink(io, "s_req", Req::shape()),
            res: RecordStream::source(io, "m_res", Res::shape(*queue_bits)),
            busy: io.output("busy", 1),
        }
    }
}

/// A unit that takes a request, waits a cycle, and answers with its tag.
fn queue_of(addr: Sig, bits: u32) -> Sig {
    let mixed = addr.slice(bits - 1, 0) ^ addr.slice(2 * bits - 1, bits);
    (mixed ^ mixed.shr(1)).named("queue")
}

fn unit(queue_bits: u32) -> Block<UnitPorts> {
    Block::build("unit", queue_bits, |p: UnitPorts| {
        let st = Fsm::new("state", UnitState::Idle);
        let take = (st.is(UnitState::Idle) & p.req.valid).named("take");
        p.req.ready.set(st.is(UnitState::Idle));
        let req = p.req.fields();
        req.len.unused();
        let held = reg(Req::WIDTH).enable(take).named("held");
        held.set(p.req.data);
        let h = Req::unpack(held);
        h.len.unused();
        st.next(&[
            (take, UnitState::Busy),
            (st.is(UnitState::Busy), UnitState::WaitAck),
            (st.is(UnitState::WaitAck) & p.res.ready, UnitState::Idle),
        ]);
        p.res.valid.set(st.is(UnitState::WaitAck));
        p.res.set_fields(&Res {
            tag: h.tag,
            queue: queue_of(h.addr, queue_bits),
            err: h.addr.eq(0u32) | (h.addr + 1u32).eq(0u32),
        });
        p.busy.set(!st.is(UnitState::Idle));
    })
    .unwrap()
}

#[test]
fn records_pack_and_encode_the_same_way() {
    let shape = Res::shape(3);
    assert_eq!(shape.width(), 8);
    assert_eq!(
        shape.layout(),
        vec![("tag", 0, 4), ("queue", 4, 3), ("err", 7, 1)]
    );
    let v = Res {
        tag: 0xA,
        queue: 5,
        err: 1,
    };
    let bytes = shape.encode(&v);
    assert_eq!(bytes, vec![0xDA]);
    assert_eq!(shape.decode(&bytes), v);
    assert_eq!(Req::WIDTH, 36);
}

#[test]
#[should_panic(expected = "does not fit field `queue`")]
fn encoding_a_value_too_wide_for_its_field_panics() {
    Res::shape(3).encode(&Res {
        tag: 0,
        queue: 8,
        err: 0,
    });
}

#[test]
fn a_typed_block_instantiates_connects_and_lints_clean() {
    let u = unit(4);
    let top = Module::build("two_units", || {
        let s = RecordStream::sink(&Io::module(), "s_req", Req::shape());
        let m = RecordStream::source(&Io::module(), "m_res", Res::shape(4));
        let a = u.instance("u_a");
        let b = u.instance("u_b");
        connect(&s, &a.req);
        // b takes a's result as a request: tag from the result, the rest zero.
        let r = a.res.fields();
        b.req.set_fields(&Req {
            tag: r.tag,
            addr: cat(&[lit(15, 0u32), r.err, r.queue]),
            ..Req::zeros()
        });
        b.req.valid.set(a.res.valid);
        a.res.ready.set(b.req.ready);
        connect(&b.res, &m);
        output("busy", a.busy | b.busy);
    })
    .unwrap();
    let g = generate(&top, &EmitOptions::default());
    let unit_v = &g.verilog.iter().find(|(n, _)| n == "unit.v").unwrap().1;
    // States are localparams, used by name.
    assert!(
        unit_v.contains("localparam [1:0] UNIT_STATE_IDLE = 2'd0;"),
        "{unit_v}"
    );
    assert!(
        unit_v.contains("localparam [1:0] UNIT_STATE_WAIT_ACK = 2'd2;"),
        "{unit_v}"
    );
    assert!(unit_v.contains("state <= UNIT_STATE_IDLE;"), "{unit_v}");
    assert!(unit_v.contains("== UNIT_STATE_BUSY"), "{unit_v}");
    // Declarations say where they come from.
    assert!(
        unit_v.contains("reg  [35:0] held; // @[generators/edsl/tests/typed.rs:"),
        "{unit_v}"
    );
    // A temporary is named after the function that made it, not a counter.
    assert!(unit_v.contains("wire [3:0] queue_of_l"), "{unit_v}");
    assert!(unit_v.contains("state <= state_next;"), "{unit_v}");
    assert!(!unit_v.contains(" and1"), "{unit_v}");
    lint_clean(&g, "typed_units");
    iverilog_ok(&g, "typed_units");
    yosys_ok(&g, "typed_units");
}

#[test]
fn a_field_left_out_of_the_shape_is_an_error_where_it_is_used() {
    let e = Module::build("absent", || {
        let shape = Res::shape(0);
        let r = shape.unpack(input("r", shape.width()));
        output("q", r.queue);
        r.tag.unused();
        r.err.unused();
    })
    .unwrap_err();
    assert!(
        e.mentions("field `queue` of record `Res` is left out of this shape"),
        "{e}"
    );
    assert!(e.diags[0].loc.file.ends_with("typed.rs"));
}

#[test]
fn packing_a_field_of_the_wrong_width_names_the_field() {
    let e = Module::build("bad_pack", || {
        let r = Req {
            addr: input("a", 20),
            len: input("l", 11),
            tag: input("t", 4),
        };
        output("q", r.pack());
    })
    .unwrap_err();
    assert!(
        e.mentions("field `len` is 12 bits, the value is 11 bits"),
        "{e}"
    );
}

#[test]
fn an_undriven_instance_input_names_the_port() {
    let u = unit(2);
    let e = Module::build("loose", || {
        let a = u.instance("u_a");
        a.req.data.set(input("d", Req::WIDTH));
        a.req.valid.set(input("v", 1));
        a.res.ready.set(lit(1, 1u32));
        output("r", a.res.data);
        output("rv", a.res.valid);
        output("q", a.req.ready);
        a.busy.unused();
        let _ = a;
    });
    assert!(e.is_ok(), "{e:?}");
    let e = Module::build("loose2", || {
        let a = u.instance("u_a");
        a.req.valid.set(input("v", 1));
        a.res.ready.set(lit(1, 1u32));
        output("r", a.res.data);
        output("rv", a.res.valid);
        output("q", a.req.ready);
        a.busy.unused();
    })
    .unwrap_err();
    assert!(e.mentions("input `s_req_tdata` of instance `u_a`"), "{e}");
}

#[test]
fn replicated_registers_keep_their_copies() {
    let m = Module::build("rep", || {
        let d = input("d", 1);
        let e = input("e", 1);
        let r = Replicated::new("flag", 2, 1, Some(0));
        r.set(d);
        output("a", r.get(0) & e);
        output("b", r.get_n(1) | e);
    })
    .unwrap();
    let g = generate(&m, &EmitOptions::default());
    let v = &g.verilog[0].1;
    assert!(
        v.contains("(* keep *) reg  flag; // @[generators/edsl/tests/typed.rs:"),
        "{v}"
    );
    assert!(v.contains("(* keep *) reg  flag_n1;"), "{v}");
    assert!(v.contains("flag_n1 <= 1'b1;"), "{v}");
    lint_clean(&g, "replicated");
}
