//! Construction: the functions a block calls while its module is being elaborated.
//!
//! `Module::build("name", || { ... })` opens a module; inside the closure the free functions
//! ([`input`], [`output`], [`reg`], [`wire`], [`memory`], [`instance`], ...) and the operators on
//! [`Sig`] add nodes to it. Builders nest (a child module may be built while a parent is open)
//! through a per-thread stack, which is what lets a signal handle be a small `Copy` value and
//! hardware code read like arithmetic. Every construct records its caller's source location;
//! mistakes become [`Diag`]nostics collected into one [`ElabError`] returned by `build`, never a
//! panic deep inside.

use crate::check;
use crate::ir::*;
use num_bigint::BigUint;
use num_traits::{One, Zero};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

/// One elaboration problem, with the Rust line that caused it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub msg: String,
    pub loc: Loc,
}

/// Everything wrong with one module, in the order found.
#[derive(Clone, Debug)]
pub struct ElabError {
    pub module: String,
    pub diags: Vec<Diag>,
}

impl fmt::Display for ElabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "elaboration of module `{}` failed with {} error(s):",
            self.module,
            self.diags.len()
        )?;
        for d in &self.diags {
            writeln!(f, "error: {}\n  --> {}", d.msg, d.loc)?;
        }
        Ok(())
    }
}

impl std::error::Error for ElabError {}

impl ElabError {
    /// An error for a parameter the block cannot be built with (say which and why).
    #[track_caller]
    pub fn config(module: &str, msg: impl Into<String>) -> ElabError {
        ElabError {
            module: module.to_string(),
            diags: vec![Diag {
                msg: msg.into(),
                loc: Loc::caller(),
            }],
        }
    }

    /// True when some diagnostic contains `needle` (for tests and tools).
    pub fn mentions(&self, needle: &str) -> bool {
        self.diags.iter().any(|d| d.msg.contains(needle))
    }
}

/// A handle to one value of a module under construction: a port, wire, register or the result
/// of an operator. Cheap to copy; only valid inside the module that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sig {
    m: u32,
    id: NodeId,
    w: u32,
}

impl Sig {
    pub fn width(self) -> u32 {
        self.w
    }
    pub fn id(self) -> NodeId {
        self.id
    }
    /// A stand-in for field `field` of record `record` when the record's shape leaves it out:
    /// any use of it is an elaboration error naming the field.
    pub fn absent(record: &'static str, field: &'static str) -> Sig {
        let id = ABSENT.with(|a| {
            let mut a = a.borrow_mut();
            match a.iter().position(|x| *x == (record, field)) {
                Some(i) => i,
                None => {
                    a.push((record, field));
                    a.len() - 1
                }
            }
        });
        Sig {
            m: ABSENT_MODULE,
            id: id as NodeId,
            w: 0,
        }
    }
    /// True for a record field left out of its shape ([`Sig::absent`]).
    pub fn is_absent(self) -> bool {
        self.m == ABSENT_MODULE
    }
}

pub(crate) struct Builder {
    id: u32,
    name: String,
    doc: Vec<String>,
    loc: Loc,
    nodes: Vec<Node>,
    ports: Vec<Port>,
    mems: Vec<Memory>,
    insts: Vec<Instance>,
    inst_outs: HashMap<(u32, u32), NodeId>,
    diags: Vec<Diag>,
    /// Where each wire / output got its driver (for the multiple-driver message).
    drive_locs: HashMap<NodeId, Loc>,
    /// Output ports that are waiting for a driver: port index -> wire node.
    pending_outputs: Vec<(u32, NodeId)>,
    enums: Vec<EnumDef>,
}

static NEXT_BUILDER: AtomicU32 = AtomicU32::new(1);

thread_local! {
    static STACK: RefCell<Vec<Builder>> = const { RefCell::new(Vec::new()) };
    /// The names of record fields left out of a shape (see [`Sig::absent`]).
    static ABSENT: RefCell<Vec<(&'static str, &'static str)>> = const { RefCell::new(Vec::new()) };
}

/// The module id of a [`Sig::absent`] handle.
const ABSENT_MODULE: u32 = u32::MAX;

/// Report an elaboration error at `loc` in the module being built (for library code that
/// checks its own arguments, such as record packing).
pub fn report(loc: Loc, msg: impl Into<String>) {
    with(|b| b.err(loc, msg))
}

fn with<R>(f: impl FnOnce(&mut Builder) -> R) -> R {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let b = s
            .last_mut()
            .expect("a hardware construct was used outside `Module::build` (no module is open)");
        f(b)
    })
}

/// Names that a module may not give its ports because the emitter adds them.
const RESERVED_PORTS: &[&str] = &["clk", "rst"];

impl Builder {
    fn err(&mut self, loc: Loc, msg: impl Into<String>) {
        self.diags.push(Diag {
            msg: msg.into(),
            loc,
        });
    }

    fn push(&mut self, kind: NodeKind, width: u32, loc: Loc) -> Sig {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(Node {
            kind,
            width,
            name: None,
            loc,
            unused_ok: false,
            keep: false,
            hint: None,
            tag: None,
        });
        Sig {
            m: self.id,
            id,
            w: width,
        }
    }

    /// Validate that `s` belongs to this module; on error return a harmless stand-in.
    fn own(&mut self, s: Sig, loc: Loc) -> Sig {
        if s.m == ABSENT_MODULE {
            let (rec, field) = ABSENT
                .with(|a| a.borrow().get(s.id as usize).copied())
                .unwrap_or(("?", "?"));
            self.err(
                loc,
                format!("field `{field}` of record `{rec}` is left out of this shape (width 0) and cannot be used"),
            );
            return self.push(NodeKind::Const(BigUint::zero()), 1, loc);
        }
        if s.m != self.id {
            self.err(
                loc,
                format!(
                    "a signal from another module was used in `{}`; connect it through a port instead",
                    self.name
                ),
            );
            return self.push(NodeKind::Const(BigUint::zero()), s.w, loc);
        }
        s
    }

    fn konst(&mut self, width: u32, v: BigUint, loc: Loc) -> Sig {
        if width == 0 {
            self.err(loc, "a constant must be at least 1 bit wide");
            return self.push(NodeKind::Const(BigUint::zero()), 1, loc);
        }
        if v.bits() > width as u64 {
            self.err(loc, format!("constant {v:#x} does not fit in {width} bits"));
            let mask = (BigUint::one() << width) - 1u32;
            return self.push(NodeKind::Const(v & mask), width, loc);
        }
        self.push(NodeKind::Const(v), width, loc)
    }

    fn check_width(&mut self, what: &str, a: Sig, b: Sig, loc: Loc) -> bool {
        if a.w != b.w {
            self.err(
                loc,
                format!(
                    "width mismatch in {what}: left is {} bits, right is {} bits",
                    a.w, b.w
                ),
            );
            false
        } else {
            true
        }
    }

    fn node_mut(&mut self, s: Sig) -> &mut Node {
        &mut self.nodes[s.id as usize]
    }

    fn port_name_ok(&mut self, name: &str, loc: Loc) -> bool {
        if RESERVED_PORTS.contains(&name) {
            self.err(
                loc,
                format!("port name `{name}` is reserved for the implicit clock/reset"),
            );
            return false;
        }
        if self.ports.iter().any(|p| p.name == name) {
            self.err(loc, format!("port `{name}` is declared twice"));
            return false;
        }
        if name.is_empty() {
            self.err(loc, "a port needs a name");
            return false;
        }
        true
    }
}

/// Opens and finishes modules.
pub struct Module;

impl Module {
    /// Elaborate a module: run `body` with a fresh module open, then check it.
    #[track_caller]
    pub fn build(name: impl Into<String>, body: impl FnOnce()) -> Result<Rc<ModuleDef>, ElabError> {
        let loc = Loc::caller();
        Self::build_with(name, loc, body).map(|(m, ())| m)
    }

    /// Like [`Module::build`], returning whatever the body returns beside the module.
    #[track_caller]
    pub fn build_returning<R>(
        name: impl Into<String>,
        body: impl FnOnce() -> R,
    ) -> Result<(Rc<ModuleDef>, R), ElabError> {
        let loc = Loc::caller();
        Self::build_with(name, loc, body)
    }

    fn build_with<R>(
        name: impl Into<String>,
        loc: Loc,
        body: impl FnOnce() -> R,
    ) -> Result<(Rc<ModuleDef>, R), ElabError> {
        let name = name.into();
        let b = Builder {
            id: NEXT_BUILDER.fetch_add(1, Ordering::Relaxed),
            name: name.clone(),
            doc: Vec::new(),
            loc,
            nodes: Vec::new(),
            ports: Vec::new(),
            mems: Vec::new(),
            insts: Vec::new(),
            inst_outs: HashMap::new(),
            diags: Vec::new(),
            drive_locs: HashMap::new(),
            pending_outputs: Vec::new(),
            enums: Vec::new(),
        };
        STACK.with(|s| s.borrow_mut().push(b));
        // Pop the builder even if the body panics, so one failed test cannot poison the thread.
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                STACK.with(|s| {
                    let _ = s.try_borrow_mut().map(|mut s| s.pop());
                });
            }
        }
        let guard = Pop;
        let r = body();
        let b = STACK.with(|s| s.borrow_mut().pop()).expect("builder stack");
        std::mem::forget(guard);
        let def = finish(b)?;
        Ok((Rc::new(def), r))
    }
}

fn finish(mut b: Builder) -> Result<ModuleDef, ElabError> {
    // Output ports take the driver of their wire.
    for (pi, wire) in std::mem::take(&mut b.pending_outputs) {
        b.ports[pi as usize].node = Some(wire);
    }
    let has_clock = b
        .nodes
        .iter()
        .any(|n| matches!(n.kind, NodeKind::Reg { .. }))
        || b.mems
            .iter()
            .any(|m| m.write.is_some() || m.reads.iter().any(|r| r.kind == ReadKind::Sync))
        || b.insts.iter().any(|i| i.module.has_clock);
    let has_reset = b
        .nodes
        .iter()
        .any(|n| matches!(n.kind, NodeKind::Reg { init: Some(_), .. }))
        || b.insts.iter().any(|i| i.module.has_reset);
    let mut def = ModuleDef {
        name: b.name,
        doc: b.doc,
        nodes: b.nodes,
        ports: b.ports,
        mems: b.mems,
        insts: b.insts,
        has_clock,
        has_reset,
        comb_deps: Vec::new(),
        live: Vec::new(),
        waive: Vec::new(),
        enums: b.enums,
        loc: b.loc,
    };
    let mut diags = b.diags;
    check::check_module(&mut def, &mut diags);
    if diags.is_empty() {
        // Only live state needs a clock or a reset port.
        let live = |id: usize| def.live.get(id).copied().unwrap_or(false);
        def.has_clock = def.nodes.iter().enumerate().any(|(i, n)| live(i) && matches!(n.kind, NodeKind::Reg { .. }))
            || def.nodes.iter().enumerate().any(|(i, n)| {
                live(i) && matches!(n.kind, NodeKind::MemRead { mem, .. } if def.mems[mem as usize].write.is_some())
            })
            || def.nodes.iter().enumerate().any(|(i, n)| {
                live(i) && matches!(n.kind, NodeKind::MemRead { mem, port } if def.mems[mem as usize].reads[port as usize].kind == ReadKind::Sync)
            })
            || def.insts.iter().any(|i| i.module.has_clock);
        def.has_reset = def
            .nodes
            .iter()
            .enumerate()
            .any(|(i, n)| live(i) && matches!(n.kind, NodeKind::Reg { init: Some(_), .. }))
            || def.insts.iter().any(|i| i.module.has_reset);
    }
    if diags.is_empty() {
        Ok(def)
    } else {
        Err(ElabError {
            module: def.name,
            diags,
        })
    }
}

// ------------------------------------------------------------------------------------------
// Operands: signals and plain integers (sized to the other operand).

/// Anything that can stand where a signal is expected; integers take the width of the other
/// operand (or of the context) and must fit in it.
pub trait Operand {
    #[doc(hidden)]
    fn to_sig(self, width: u32, loc: Loc) -> Sig;
    #[doc(hidden)]
    fn sig_width(&self) -> Option<u32> {
        None
    }
}

impl Operand for Sig {
    fn to_sig(self, _width: u32, loc: Loc) -> Sig {
        with(|b| b.own(self, loc))
    }
    fn sig_width(&self) -> Option<u32> {
        Some(self.w)
    }
}

macro_rules! int_operand {
    ($($t:ty),*) => {$(
        impl Operand for $t {
            fn to_sig(self, width: u32, loc: Loc) -> Sig {
                with(|b| b.konst(width, BigUint::from(self), loc))
            }
        }
    )*};
}
int_operand!(u8, u16, u32, u64, u128, usize);

impl Operand for bool {
    fn to_sig(self, width: u32, loc: Loc) -> Sig {
        with(|b| b.konst(width, BigUint::from(self as u8), loc))
    }
}

impl Operand for BigUint {
    fn to_sig(self, width: u32, loc: Loc) -> Sig {
        with(|b| b.konst(width, self, loc))
    }
}

impl Operand for &BigUint {
    fn to_sig(self, width: u32, loc: Loc) -> Sig {
        with(|b| b.konst(width, self.clone(), loc))
    }
}

fn binary(op: BinOp, a: Sig, b: impl Operand, loc: Loc) -> Sig {
    let bw = b.sig_width();
    let b = b.to_sig(if op.is_shift() { bw.unwrap_or(32) } else { a.w }, loc);
    with(|bl| {
        let a = bl.own(a, loc);
        if !op.is_shift() {
            let sym = match op {
                BinOp::And => "`&`",
                BinOp::Or => "`|`",
                BinOp::Xor => "`^`",
                BinOp::Add => "`+`",
                BinOp::Sub => "`-`",
                _ => "a comparison",
            };
            bl.check_width(sym, a, b, loc);
        }
        let w = if op.is_compare() { 1 } else { a.w };
        // A comparison that is constant over the operand's whole range is folded here: the
        // emitted Verilog must not contain it (Verilator -Wall flags CMPCONST).
        if op.is_compare() {
            if let NodeKind::Const(k) = &bl.nodes[b.id as usize].kind {
                let max = (BigUint::one() << a.w) - 1u32;
                let fixed = match op {
                    BinOp::Le if *k == max => Some(true),
                    BinOp::Gt if *k == max => Some(false),
                    BinOp::Ge if k.is_zero() => Some(true),
                    BinOp::Lt if k.is_zero() => Some(false),
                    _ => None,
                };
                if let Some(v) = fixed {
                    return bl.push(NodeKind::Const(BigUint::from(v as u8)), 1, loc);
                }
            }
        }
        bl.push(NodeKind::Binary(op, a.id, b.id), w, loc)
    })
}

fn unary(op: UnOp, a: Sig, loc: Loc) -> Sig {
    with(|b| {
        let a = b.own(a, loc);
        let w = if op == UnOp::Not { a.w } else { 1 };
        b.push(NodeKind::Unary(op, a.id), w, loc)
    })
}

macro_rules! binop_trait {
    ($tr:ident, $f:ident, $op:expr) => {
        impl<T: Operand> ops::$tr<T> for Sig {
            type Output = Sig;
            #[track_caller]
            fn $f(self, rhs: T) -> Sig {
                binary($op, self, rhs, Loc::caller())
            }
        }
    };
}
binop_trait!(BitAnd, bitand, BinOp::And);
binop_trait!(BitOr, bitor, BinOp::Or);
binop_trait!(BitXor, bitxor, BinOp::Xor);
binop_trait!(Add, add, BinOp::Add);
binop_trait!(Sub, sub, BinOp::Sub);

impl ops::Not for Sig {
    type Output = Sig;
    #[track_caller]
    fn not(self) -> Sig {
        unary(UnOp::Not, self, Loc::caller())
    }
}

/// `x << n`: shift left by a constant, zero-filling; the width is kept.
impl ops::Shl<u32> for Sig {
    type Output = Sig;
    #[track_caller]
    fn shl(self, n: u32) -> Sig {
        let loc = Loc::caller();
        if n == 0 {
            return self;
        }
        if n >= self.w {
            return with(|b| b.konst(self.w, BigUint::zero(), loc));
        }
        let lo = slice_at(self, self.w - 1 - n, 0, loc);
        let z = with(|b| b.konst(n, BigUint::zero(), loc));
        cat_at(&[lo, z], loc)
    }
}

/// `x >> n`: logical shift right by a constant; the width is kept.
impl ops::Shr<u32> for Sig {
    type Output = Sig;
    #[track_caller]
    fn shr(self, n: u32) -> Sig {
        let loc = Loc::caller();
        if n == 0 {
            return self;
        }
        if n >= self.w {
            return with(|b| b.konst(self.w, BigUint::zero(), loc));
        }
        let hi = slice_at(self, self.w - 1, n, loc);
        let z = with(|b| b.konst(n, BigUint::zero(), loc));
        cat_at(&[z, hi], loc)
    }
}

impl Sig {
    #[track_caller]
    pub fn eq(self, o: impl Operand) -> Sig {
        binary(BinOp::Eq, self, o, Loc::caller())
    }
    #[track_caller]
    pub fn ne(self, o: impl Operand) -> Sig {
        binary(BinOp::Ne, self, o, Loc::caller())
    }
    #[track_caller]
    pub fn lt(self, o: impl Operand) -> Sig {
        binary(BinOp::Lt, self, o, Loc::caller())
    }
    #[track_caller]
    pub fn le(self, o: impl Operand) -> Sig {
        binary(BinOp::Le, self, o, Loc::caller())
    }
    #[track_caller]
    pub fn gt(self, o: impl Operand) -> Sig {
        binary(BinOp::Gt, self, o, Loc::caller())
    }
    #[track_caller]
    pub fn ge(self, o: impl Operand) -> Sig {
        binary(BinOp::Ge, self, o, Loc::caller())
    }
    /// Logical AND of two 1-bit values (same as `&`, with a width check that both are 1 bit).
    #[track_caller]
    pub fn and(self, o: Sig) -> Sig {
        let loc = Loc::caller();
        one_bit("`and`", self, loc);
        one_bit("`and`", o, loc);
        binary(BinOp::And, self, o, loc)
    }
    #[track_caller]
    pub fn or(self, o: Sig) -> Sig {
        let loc = Loc::caller();
        one_bit("`or`", self, loc);
        one_bit("`or`", o, loc);
        binary(BinOp::Or, self, o, loc)
    }

    /// Add that keeps the carry: the result is one bit wider than the operands.
    #[track_caller]
    pub fn add_wide(self, o: impl Operand) -> Sig {
        let loc = Loc::caller();
        let o = o.to_sig(self.w, loc);
        let a = zext_at(self, self.w + 1, loc);
        let b = zext_at(o, o.w + 1, loc);
        binary(BinOp::Add, a, b, loc)
    }
    /// Subtract that keeps the borrow: the result is one bit wider; its top bit is set when
    /// `self < o`.
    #[track_caller]
    pub fn sub_wide(self, o: impl Operand) -> Sig {
        let loc = Loc::caller();
        let o = o.to_sig(self.w, loc);
        let a = zext_at(self, self.w + 1, loc);
        let b = zext_at(o, o.w + 1, loc);
        binary(BinOp::Sub, a, b, loc)
    }

    /// Shift left by a signal amount.
    #[track_caller]
    pub fn shl_by(self, amount: Sig) -> Sig {
        binary(BinOp::Shl, self, amount, Loc::caller())
    }
    /// Logical shift right by a signal amount.
    #[track_caller]
    pub fn shr_by(self, amount: Sig) -> Sig {
        binary(BinOp::Shr, self, amount, Loc::caller())
    }

    /// Bits `hi..=lo` (Verilog `x[hi:lo]`).
    #[track_caller]
    pub fn slice(self, hi: u32, lo: u32) -> Sig {
        slice_at(self, hi, lo, Loc::caller())
    }
    /// One bit.
    #[track_caller]
    pub fn bit(self, i: u32) -> Sig {
        slice_at(self, i, i, Loc::caller())
    }
    /// The most significant bit.
    #[track_caller]
    pub fn msb(self) -> Sig {
        slice_at(self, self.w - 1, self.w - 1, Loc::caller())
    }
    /// Exactly `w` bits: zero-extended when narrower, the low bits when wider (for values
    /// known to fit, whose widths come from different parameters).
    #[track_caller]
    pub fn resize(self, w: u32) -> Sig {
        let loc = Loc::caller();
        if w >= self.w {
            zext_at(self, w, loc)
        } else {
            slice_at(self, w - 1, 0, loc)
        }
    }
    /// The low `w` bits.
    #[track_caller]
    pub fn trunc(self, w: u32) -> Sig {
        let loc = Loc::caller();
        if w > self.w {
            with(|b| {
                b.err(
                    loc,
                    format!("cannot truncate a {}-bit value to {w} bits", self.w),
                )
            });
            return self;
        }
        slice_at(self, w - 1, 0, loc)
    }
    /// Zero-extend to `w` bits (must not be narrower).
    #[track_caller]
    pub fn zext(self, w: u32) -> Sig {
        zext_at(self, w, Loc::caller())
    }
    /// Sign-extend to `w` bits.
    #[track_caller]
    pub fn sext(self, w: u32) -> Sig {
        let loc = Loc::caller();
        if w < self.w {
            with(|b| {
                b.err(
                    loc,
                    format!("cannot sign-extend a {}-bit value to {w} bits", self.w),
                )
            });
            return self;
        }
        if w == self.w {
            return self;
        }
        let m = slice_at(self, self.w - 1, self.w - 1, loc);
        let r = repl_at(m, w - self.w, loc);
        cat_at(&[r, self], loc)
    }
    /// This value repeated `n` times (Verilog `{n{x}}`).
    #[track_caller]
    pub fn repl(self, n: u32) -> Sig {
        repl_at(self, n, Loc::caller())
    }
    #[track_caller]
    pub fn and_reduce(self) -> Sig {
        unary(UnOp::RedAnd, self, Loc::caller())
    }
    #[track_caller]
    pub fn or_reduce(self) -> Sig {
        unary(UnOp::RedOr, self, Loc::caller())
    }
    #[track_caller]
    pub fn xor_reduce(self) -> Sig {
        unary(UnOp::RedXor, self, Loc::caller())
    }

    /// Give this value a name that the generated Verilog keeps.
    #[track_caller]
    pub fn named(self, name: &str) -> Sig {
        let loc = Loc::caller();
        with(|b| {
            let s = b.own(self, loc);
            b.node_mut(s).name = Some(name.to_string());
            s
        })
    }

    /// Declare that some or all bits of this value are intentionally unused. The emitter puts a
    /// lint waiver around this one signal; without it, unused input or register bits are an
    /// elaboration error.
    #[track_caller]
    pub fn unused(self) -> Sig {
        let loc = Loc::caller();
        if self.is_absent() {
            return self;
        }
        with(|b| {
            let s = b.own(self, loc);
            b.node_mut(s).unused_ok = true;
            s
        })
    }

    /// Drive a wire (made by [`wire`] or [`output_wire`]) or give a register its next value.
    #[track_caller]
    pub fn set(self, v: impl Operand) {
        self.set_at(v, Loc::caller())
    }

    pub(crate) fn set_at(self, v: impl Operand, loc: Loc) {
        let v = v.to_sig(self.w, loc);
        with(|b| {
            let s = b.own(self, loc);
            if !b.check_width("an assignment", s, v, loc) {
                return;
            }
            let prev = b.drive_locs.get(&s.id).copied();
            match &mut b.nodes[s.id as usize].kind {
                NodeKind::Wire(d) => {
                    if d.is_some() {
                        let p = prev
                            .map(|p| format!(" (first driven at {p})"))
                            .unwrap_or_default();
                        b.err(
                            loc,
                            format!("wire `{}` has multiple drivers{p}", name_of(b, s.id)),
                        );
                        return;
                    }
                    *d = Some(v.id);
                    b.drive_locs.insert(s.id, loc);
                }
                NodeKind::Reg { assigns, .. } => assigns.push(RegAssign {
                    cond: None,
                    value: v.id,
                }),
                _ => b.err(loc, "only a wire or a register can be assigned with `set`"),
            }
        })
    }

    /// Register only: `if cond { reg <= v }`; later assignments take priority over earlier ones.
    #[track_caller]
    pub fn set_if(self, cond: Sig, v: impl Operand) {
        let loc = Loc::caller();
        let v = v.to_sig(self.w, loc);
        one_bit("`set_if` condition", cond, loc);
        with(|b| {
            let s = b.own(self, loc);
            let c = b.own(cond, loc);
            if !b.check_width("an assignment", s, v, loc) {
                return;
            }
            match &mut b.nodes[s.id as usize].kind {
                NodeKind::Reg { assigns, .. } => assigns.push(RegAssign {
                    cond: Some(c.id),
                    value: v.id,
                }),
                _ => b.err(
                    loc,
                    "`set_if` applies to registers only; use `mux` for a wire",
                ),
            }
        })
    }

    /// Register only: clock enable (the register holds when `en` is low, reset still applies).
    #[track_caller]
    pub fn enable(self, en: Sig) -> Sig {
        let loc = Loc::caller();
        one_bit("a clock enable", en, loc);
        with(|b| {
            let s = b.own(self, loc);
            let e = b.own(en, loc);
            match &mut b.nodes[s.id as usize].kind {
                NodeKind::Reg { en, .. } => *en = Some(e.id),
                _ => b.err(loc, "`enable` applies to registers only"),
            }
            s
        })
    }

    /// Register only: synchronous reset value (asserted by the module's `rst` input).
    #[track_caller]
    pub fn init(self, v: impl Into<BigUint>) -> Sig {
        let loc = Loc::caller();
        let v: BigUint = v.into();
        with(|b| {
            let s = b.own(self, loc);
            if v.bits() > s.w as u64 {
                b.err(
                    loc,
                    format!("reset value {v:#x} does not fit in {} bits", s.w),
                );
                return s;
            }
            match &mut b.nodes[s.id as usize].kind {
                NodeKind::Reg { init, .. } => *init = Some(v),
                _ => b.err(loc, "`init` applies to registers only"),
            }
            s
        })
    }
}

impl Sig {
    /// Ask synthesis to keep this register (or value) as it is, not merged with an equal one:
    /// emitted `(* keep *)`. Used by register replication ([`crate::timing`]).
    #[track_caller]
    pub fn keep(self) -> Sig {
        let loc = Loc::caller();
        with(|b| {
            let s = b.own(self, loc);
            b.node_mut(s).keep = true;
            s
        })
    }

    /// Say what an unnamed value stands for, for elaboration messages (not emitted).
    pub(crate) fn hint(self, what: String) -> Sig {
        with(|b| {
            if self.m == b.id {
                b.nodes[self.id as usize].hint = Some(what);
            }
        });
        self
    }
}

/// A constant that is state `variant` of enumeration `def`: emitted as the enumeration's
/// `localparam` (see [`crate::fsm`]).
#[track_caller]
pub(crate) fn enum_lit(def: &EnumDef, variant: u32) -> Sig {
    let loc = Loc::caller();
    with(|b| {
        let e = match b.enums.iter().position(|e| e == def) {
            Some(i) => i,
            None => {
                if let Some(other) = b.enums.iter().find(|e| e.name == def.name) {
                    let msg = format!(
                        "two enumerations named `{}` in one module ({} and {} states)",
                        def.name,
                        other.variants.len(),
                        def.variants.len()
                    );
                    b.err(loc, msg);
                }
                b.enums.push(def.clone());
                b.enums.len() - 1
            }
        };
        let s = b.konst(def.width, BigUint::from(variant), loc);
        b.nodes[s.id as usize].tag = Some((e as u32, variant));
        s
    })
}

/// Mark register `r` as holding states of `def`, reset to `variant` (its reset value is then
/// emitted as that state's `localparam`).
pub(crate) fn tag_state_reg(r: Sig, def: &EnumDef, variant: u32) {
    // Registering the enumeration through a constant keeps one code path for the table.
    let k = enum_lit(def, variant);
    with(|b| {
        let tag = b.nodes[k.id as usize].tag;
        if r.m == b.id {
            b.nodes[r.id as usize].tag = tag;
        }
    });
}

fn name_of(b: &Builder, id: NodeId) -> String {
    b.nodes[id as usize]
        .name
        .clone()
        .unwrap_or_else(|| format!("<unnamed #{id}>"))
}

fn one_bit(what: &str, s: Sig, loc: Loc) {
    if s.w != 1 {
        with(|b| b.err(loc, format!("{what} must be 1 bit, got {} bits", s.w)));
    }
}

pub(crate) fn slice_at(a: Sig, hi: u32, lo: u32, loc: Loc) -> Sig {
    with(|b| {
        let a = b.own(a, loc);
        if hi < lo || hi >= a.w {
            b.err(
                loc,
                format!("slice [{hi}:{lo}] is out of range for a {}-bit value", a.w),
            );
            return b.push(NodeKind::Const(BigUint::zero()), 1, loc);
        }
        if hi == a.w - 1 && lo == 0 {
            return a;
        }
        // Fold slices of slices and of constants right away; it keeps the netlist small.
        match b.nodes[a.id as usize].kind.clone() {
            NodeKind::Slice {
                a: inner, lo: l0, ..
            } => {
                let w = hi - lo + 1;
                b.push(
                    NodeKind::Slice {
                        a: inner,
                        hi: hi + l0,
                        lo: lo + l0,
                    },
                    w,
                    loc,
                )
            }
            NodeKind::Const(v) => {
                let w = hi - lo + 1;
                let mask = (BigUint::one() << w) - 1u32;
                b.push(NodeKind::Const((v >> lo) & mask), w, loc)
            }
            _ => b.push(NodeKind::Slice { a: a.id, hi, lo }, hi - lo + 1, loc),
        }
    })
}

fn zext_at(a: Sig, w: u32, loc: Loc) -> Sig {
    if w < a.w {
        with(|b| {
            b.err(
                loc,
                format!("cannot zero-extend a {}-bit value to {w} bits", a.w),
            )
        });
        return a;
    }
    if w == a.w {
        return a;
    }
    let z = with(|b| b.konst(w - a.w, BigUint::zero(), loc));
    cat_at(&[z, a], loc)
}

fn repl_at(a: Sig, n: u32, loc: Loc) -> Sig {
    with(|b| {
        let a = b.own(a, loc);
        if n == 0 {
            b.err(loc, "replication count must be at least 1");
            return a;
        }
        if n == 1 {
            return a;
        }
        b.push(NodeKind::Repl { a: a.id, n }, a.w * n, loc)
    })
}

pub(crate) fn cat_at(parts: &[Sig], loc: Loc) -> Sig {
    with(|b| {
        if parts.is_empty() {
            b.err(loc, "concatenation of nothing");
            return b.push(NodeKind::Const(BigUint::zero()), 1, loc);
        }
        if parts.len() == 1 {
            return b.own(parts[0], loc);
        }
        let ids: Vec<NodeId> = parts.iter().map(|p| b.own(*p, loc).id).collect();
        let w = parts.iter().map(|p| p.w).sum();
        b.push(NodeKind::Concat(ids), w, loc)
    })
}

// ------------------------------------------------------------------------------------------
// Free functions: the vocabulary of a block.

/// A constant of `width` bits (any width; `v` from an integer or a `BigUint`).
#[track_caller]
pub fn lit(width: u32, v: impl Into<BigUint>) -> Sig {
    let loc = Loc::caller();
    let v = v.into();
    with(|b| b.konst(width, v, loc))
}

/// Concatenation, most significant part first (Verilog `{a, b, c}`).
#[track_caller]
pub fn cat(parts: &[Sig]) -> Sig {
    cat_at(parts, Loc::caller())
}

/// `sel ? t : f`. Integers take the width of the other arm.
#[track_caller]
pub fn mux(sel: Sig, t: impl Operand, f: impl Operand) -> Sig {
    let loc = Loc::caller();
    one_bit("a mux select", sel, loc);
    let w = t.sig_width().or(f.sig_width()).unwrap_or(1);
    let t = t.to_sig(w, loc);
    let f = f.to_sig(w, loc);
    with(|b| {
        let sel = b.own(sel, loc);
        b.check_width("a mux", t, f, loc);
        b.push(
            NodeKind::Mux {
                sel: sel.id,
                t: t.id,
                f: f.id,
            },
            t.w,
            loc,
        )
    })
}

/// Priority select: the value of the first arm whose condition is true, else `default`.
#[track_caller]
pub fn select(arms: &[(Sig, Sig)], default: impl Operand) -> Sig {
    let loc = Loc::caller();
    let w = arms
        .first()
        .map(|a| a.1.w)
        .or(default.sig_width())
        .unwrap_or(1);
    let d = default.to_sig(w, loc);
    for (c, _) in arms {
        one_bit("a select condition", *c, loc);
    }
    with(|b| {
        let d = b.own(d, loc);
        let mut v = Vec::new();
        for (c, x) in arms {
            let c = b.own(*c, loc);
            let x = b.own(*x, loc);
            b.check_width("a select arm", x, d, loc);
            v.push((c.id, x.id));
        }
        if v.is_empty() {
            return d;
        }
        b.push(
            NodeKind::Priority {
                arms: v,
                default: d.id,
            },
            w,
            loc,
        )
    })
}

/// Case: the value of the arm whose constant equals `sel`, else `default`.
#[track_caller]
pub fn case(sel: Sig, arms: &[(u64, Sig)], default: impl Operand) -> Sig {
    let loc = Loc::caller();
    let w = arms
        .first()
        .map(|a| a.1.w)
        .or(default.sig_width())
        .unwrap_or(1);
    let d = default.to_sig(w, loc);
    with(|b| {
        let sel = b.own(sel, loc);
        let d = b.own(d, loc);
        let mut v = Vec::new();
        let mut seen = HashSet::new();
        for (k, x) in arms {
            let x = b.own(*x, loc);
            b.check_width("a case arm", x, d, loc);
            if BigUint::from(*k).bits() > sel.w as u64 {
                b.err(
                    loc,
                    format!("case label {k} does not fit the {}-bit selector", sel.w),
                );
                continue;
            }
            if !seen.insert(*k) {
                b.err(loc, format!("case label {k} appears twice"));
                continue;
            }
            v.push((BigUint::from(*k), x.id));
        }
        if v.is_empty() {
            return d;
        }
        b.push(
            NodeKind::Case {
                sel: sel.id,
                arms: v,
                default: d.id,
            },
            w,
            loc,
        )
    })
}

/// Add a line to the module's documentation header in the generated Verilog.
pub fn doc(line: &str) {
    with(|b| b.doc.push(line.to_string()))
}

/// An input port.
#[track_caller]
pub fn input(name: &str, width: u32) -> Sig {
    let loc = Loc::caller();
    input_at(name, width, loc)
}

/// An output port driven by `v`.
#[track_caller]
pub fn output(name: &str, v: Sig) {
    let loc = Loc::caller();
    let w = output_wire_at(name, v.w, loc);
    w.set(v);
}

/// An output port whose driver is given later with [`Sig::set`].
#[track_caller]
pub fn output_wire(name: &str, width: u32) -> Sig {
    output_wire_at(name, width, Loc::caller())
}

pub(crate) fn output_wire_at(name: &str, width: u32, loc: Loc) -> Sig {
    let name = &crate::names::sanitize(name);
    with(|b| {
        b.port_name_ok(name, loc);
        let w = width.max(1);
        let pi = b.ports.len() as u32;
        let s = b.push(NodeKind::Wire(None), w, loc);
        b.ports.push(Port {
            name: name.to_string(),
            dir: Dir::Output,
            width: w,
            node: None,
            loc,
        });
        b.pending_outputs.push((pi, s.id));
        s
    })
}

/// A wire to be driven later with [`Sig::set`] (forward reference).
#[track_caller]
pub fn wire(width: u32) -> Sig {
    wire_at(width, Loc::caller())
}

pub(crate) fn wire_at(width: u32, loc: Loc) -> Sig {
    with(|b| {
        if width == 0 {
            b.err(loc, "a wire must be at least 1 bit wide");
        }
        b.push(NodeKind::Wire(None), width.max(1), loc)
    })
}

/// A register of `width` bits on the module clock, without reset until [`Sig::init`] is called,
/// holding its value until assigned with [`Sig::set`] / [`Sig::set_if`].
#[track_caller]
pub fn reg(width: u32) -> Sig {
    reg_at(width, Loc::caller())
}

pub(crate) fn reg_at(width: u32, loc: Loc) -> Sig {
    with(|b| {
        if width == 0 {
            b.err(loc, "a register must be at least 1 bit wide");
        }
        b.push(
            NodeKind::Reg {
                assigns: Vec::new(),
                en: None,
                init: None,
            },
            width.max(1),
            loc,
        )
    })
}

/// `reg(width).init(v)`: a register with a synchronous reset value.
#[track_caller]
pub fn reg_init(width: u32, v: impl Into<BigUint>) -> Sig {
    reg_init_at(width, v, Loc::caller())
}

pub(crate) fn reg_init_at(width: u32, v: impl Into<BigUint>, loc: Loc) -> Sig {
    let r = with(|b| {
        b.push(
            NodeKind::Reg {
                assigns: Vec::new(),
                en: None,
                init: None,
            },
            width.max(1),
            loc,
        )
    });
    let v: BigUint = v.into();
    with(|b| {
        if v.bits() > r.w as u64 {
            b.err(
                loc,
                format!("reset value {v:#x} does not fit in {} bits", r.w),
            );
        } else if let NodeKind::Reg { init, .. } = &mut b.nodes[r.id as usize].kind {
            *init = Some(v);
        }
    });
    r
}

/// Register `d` for one cycle (no reset): a pipeline stage.
#[track_caller]
pub fn delay(d: Sig) -> Sig {
    let loc = Loc::caller();
    let r = with(|b| {
        b.push(
            NodeKind::Reg {
                assigns: Vec::new(),
                en: None,
                init: None,
            },
            d.w,
            loc,
        )
    });
    r.set(d);
    r
}

/// Number of address bits for `depth` entries (at least 1).
pub fn clog2(depth: u64) -> u32 {
    if depth <= 2 {
        1
    } else {
        64 - (depth - 1).leading_zeros()
    }
}

/// A memory handle.
#[derive(Clone, Copy, Debug)]
pub struct Mem {
    m: u32,
    idx: u32,
    width: u32,
    addr_width: u32,
}

/// A memory of `depth` words of `width` bits with one synchronous write port and any number of
/// read ports; written so that Yosys and Vivado infer LUTRAM (async read) or block RAM (sync read).
#[track_caller]
pub fn memory(name: &str, width: u32, depth: u32) -> Mem {
    let loc = Loc::caller();
    with(|b| {
        if width == 0 || depth < 2 {
            b.err(
                loc,
                format!("memory `{name}` needs width >= 1 and depth >= 2 (got {width} x {depth})"),
            );
        }
        let idx = b.mems.len() as u32;
        b.mems.push(Memory {
            name: name.to_string(),
            width: width.max(1),
            depth: depth.max(2),
            init: None,
            keep_rw_collisions: false,
            distributed: false,
            write: None,
            reads: Vec::new(),
            loc,
        });
        Mem {
            m: b.id,
            idx,
            width: width.max(1),
            addr_width: clog2(depth.max(2) as u64),
        }
    })
}

impl Mem {
    pub fn addr_width(self) -> u32 {
        self.addr_width
    }
    pub fn width(self) -> u32 {
        self.width
    }
    fn own(self, b: &mut Builder, loc: Loc) -> bool {
        if self.m != b.id {
            b.err(loc, "a memory from another module was used");
            return false;
        }
        true
    }
    /// The write port: `if en { mem[addr] <= data }` on the clock.
    #[track_caller]
    pub fn write(self, en: Sig, addr: Sig, data: Sig) {
        let loc = Loc::caller();
        one_bit("a memory write enable", en, loc);
        with(|b| {
            if !self.own(b, loc) {
                return;
            }
            let (en, addr, data) = (b.own(en, loc), b.own(addr, loc), b.own(data, loc));
            if addr.w != self.addr_width {
                b.err(
                    loc,
                    format!(
                        "memory address must be {} bits, got {}",
                        self.addr_width, addr.w
                    ),
                );
            }
            if data.w != self.width {
                b.err(
                    loc,
                    format!("memory data must be {} bits, got {}", self.width, data.w),
                );
            }
            let m = &mut b.mems[self.idx as usize];
            if let Some(w) = &m.write {
                let first = w.loc;
                b.err(
                    loc,
                    format!("memory already has a write port (at {first}); one is supported"),
                );
                return;
            }
            b.mems[self.idx as usize].write = Some(MemWrite {
                en: en.id,
                addr: addr.id,
                data: data.id,
                loc,
            });
        })
    }
    fn read(self, addr: Sig, en: Option<Sig>, kind: ReadKind, loc: Loc) -> Sig {
        with(|b| {
            if !self.own(b, loc) {
                return b.push(NodeKind::Const(BigUint::zero()), self.width, loc);
            }
            let addr = b.own(addr, loc);
            if addr.w != self.addr_width {
                b.err(
                    loc,
                    format!(
                        "memory address must be {} bits, got {}",
                        self.addr_width, addr.w
                    ),
                );
            }
            let en = en.map(|e| b.own(e, loc).id);
            let m = &mut b.mems[self.idx as usize];
            let port = m.reads.len() as u32;
            m.reads.push(MemRead {
                addr: addr.id,
                en,
                kind,
                loc,
            });
            b.push(
                NodeKind::MemRead {
                    mem: self.idx,
                    port,
                },
                self.width,
                loc,
            )
        })
    }
    /// Combinational read (distributed RAM).
    #[track_caller]
    pub fn read_async(self, addr: Sig) -> Sig {
        self.read(addr, None, ReadKind::Async, Loc::caller())
    }
    /// Registered read (block RAM): data appears the cycle after the address; `en` holds it.
    #[track_caller]
    pub fn read_sync(self, addr: Sig, en: Option<Sig>) -> Sig {
        let loc = Loc::caller();
        if let Some(e) = en {
            one_bit("a memory read enable", e, loc);
        }
        self.read(addr, en, ReadKind::Sync, loc)
    }
    /// Declare that the design relies on a registered read of the word being written in the
    /// same cycle returning the old word (Verilog's nonblocking semantics). Without this the
    /// memory is emitted `(* no_rw_check *)`: synthesis may return anything for such a read and
    /// adds no collision bypass, and the simulation returns the complement of the old word so
    /// that a design that does rely on it fails its tests.
    #[track_caller]
    pub fn keep_rw_collisions(self) {
        self.mark(Loc::caller(), |m| m.keep_rw_collisions = true);
    }
    /// Keep the memory in distributed (LUT) RAM ([`crate::ir::Memory::distributed`]): for a
    /// small queue read asynchronously, whose reader's logic must start at a LUT-RAM read.
    #[track_caller]
    pub fn distributed(self) {
        self.mark(Loc::caller(), |m| m.distributed = true);
    }
    /// Set a property of this memory (a design's declaration about it).
    fn mark(self, loc: Loc, f: impl FnOnce(&mut crate::ir::Memory)) {
        with(|b| {
            if self.own(b, loc) {
                f(&mut b.mems[self.idx as usize]);
            }
        })
    }
    /// Initial contents (power-up values; missing entries are zero).
    #[track_caller]
    pub fn init(self, words: Vec<BigUint>) {
        let loc = Loc::caller();
        with(|b| {
            if !self.own(b, loc) {
                return;
            }
            let m = &b.mems[self.idx as usize];
            if words.len() > m.depth as usize || words.iter().any(|w| w.bits() > m.width as u64) {
                let (d, w) = (m.depth, m.width);
                b.err(
                    loc,
                    format!("initial contents do not fit a {d} x {w} memory"),
                );
                return;
            }
            b.mems[self.idx as usize].init = Some(words);
        })
    }
}

/// A handle to a child instance.
#[derive(Clone, Debug)]
pub struct Inst {
    m: u32,
    idx: u32,
    def: Rc<ModuleDef>,
}

/// Instantiate a finished module; connect its inputs with [`Inst::set`] and read its outputs
/// with [`Inst::get`]. Clock and reset are connected implicitly.
#[track_caller]
pub fn instance(def: &Rc<ModuleDef>, name: &str) -> Inst {
    let loc = Loc::caller();
    with(|b| {
        if b.insts.iter().any(|i| i.name == name) {
            b.err(loc, format!("instance name `{name}` is used twice"));
        }
        let idx = b.insts.len() as u32;
        b.insts.push(Instance {
            name: name.to_string(),
            module: def.clone(),
            conns: vec![None; def.ports.len()],
            unused_outputs: Vec::new(),
            loc,
        });
        Inst {
            m: b.id,
            idx,
            def: def.clone(),
        }
    })
}

impl Inst {
    fn port(&self, b: &mut Builder, name: &str, dir: Dir, loc: Loc) -> Option<u32> {
        if self.m != b.id {
            b.err(loc, "an instance from another module was used");
            return None;
        }
        match self.def.port_index(name) {
            Some(i) if self.def.ports[i as usize].dir == dir => Some(i),
            Some(_) => {
                let d = if dir == Dir::Input {
                    "an input"
                } else {
                    "an output"
                };
                b.err(
                    loc,
                    format!("port `{name}` of `{}` is not {d}", self.def.name),
                );
                None
            }
            None => {
                let names: Vec<&str> = self.def.ports.iter().map(|p| p.name.as_str()).collect();
                b.err(
                    loc,
                    format!(
                        "module `{}` has no port `{name}` (ports: {})",
                        self.def.name,
                        names.join(", ")
                    ),
                );
                None
            }
        }
    }
    /// Connect input port `name` of the child to `v`.
    #[track_caller]
    pub fn set(&self, name: &str, v: impl Operand) {
        self.set_at(name, v, Loc::caller())
    }

    pub(crate) fn set_at(&self, name: &str, v: impl Operand, loc: Loc) {
        let w = self
            .def
            .port_index(name)
            .map(|i| self.def.ports[i as usize].width)
            .unwrap_or(1);
        let v = v.to_sig(w, loc);
        with(|b| {
            let Some(pi) = self.port(b, name, Dir::Input, loc) else {
                return;
            };
            let v = b.own(v, loc);
            if v.w != w {
                b.err(loc, format!("width mismatch on port `{name}` of `{}`: port is {w} bits, value is {} bits", self.def.name, v.w));
                return;
            }
            let inst = &mut b.insts[self.idx as usize];
            if inst.conns[pi as usize].is_some() {
                let n = inst.name.clone();
                b.err(
                    loc,
                    format!("input `{name}` of instance `{n}` is connected twice"),
                );
                return;
            }
            inst.conns[pi as usize] = Some(v.id);
        })
    }
    /// The value of output port `name` of the child.
    #[track_caller]
    pub fn get(&self, name: &str) -> Sig {
        self.get_at(name, Loc::caller())
    }

    pub(crate) fn get_at(&self, name: &str, loc: Loc) -> Sig {
        with(|b| {
            let Some(pi) = self.port(b, name, Dir::Output, loc) else {
                return b.push(NodeKind::Const(BigUint::zero()), 1, loc);
            };
            if let Some(&id) = b.inst_outs.get(&(self.idx, pi)) {
                return Sig {
                    m: b.id,
                    id,
                    w: self.def.ports[pi as usize].width,
                };
            }
            let w = self.def.ports[pi as usize].width;
            let s = b.push(
                NodeKind::InstOut {
                    inst: self.idx,
                    port: pi,
                },
                w,
                loc,
            );
            b.inst_outs.insert((self.idx, pi), s.id);
            s
        })
    }

    /// The instance's name in its parent.
    pub fn name(&self) -> String {
        with(|b| b.insts[self.idx as usize].name.clone())
    }

    /// Where the instance was made.
    pub(crate) fn loc(&self) -> Loc {
        with(|b| b.insts[self.idx as usize].loc)
    }

    /// Declare that output `name` of the child is intentionally left unused.
    #[track_caller]
    pub fn unused(&self, name: &str) {
        let loc = Loc::caller();
        with(|b| {
            if let Some(pi) = self.port(b, name, Dir::Output, loc) {
                b.insts[self.idx as usize].unused_outputs.push(pi);
            }
        })
    }
    pub fn def(&self) -> &Rc<ModuleDef> {
        &self.def
    }
}

// ------------------------------------------------------------------------------------------
// Interfaces: the direction of a signal in a group that connects as one ([`crate::io`]).

/// Direction of a signal of an interface relative to the interface's flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Travels with the data (`tdata`, `tvalid`, ...).
    Forward,
    /// Travels against it (`tready`).
    Backward,
}

pub(crate) fn input_at(name: &str, width: u32, loc: Loc) -> Sig {
    let name = &crate::names::sanitize(name);
    with(|b| {
        if width == 0 {
            b.err(loc, format!("port `{name}` must be at least 1 bit wide"));
        }
        b.port_name_ok(name, loc);
        let w = width.max(1);
        let pi = b.ports.len() as u32;
        let s = b.push(NodeKind::Input(pi), w, loc);
        b.node_mut(s).name = Some(name.to_string());
        b.ports.push(Port {
            name: name.to_string(),
            dir: Dir::Input,
            width: w,
            node: Some(s.id),
            loc,
        });
        s
    })
}
