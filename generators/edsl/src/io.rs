//! Typed ports: a block declares its ports once, as a struct of interfaces, and the same
//! declaration makes the module's ports and binds an instance's ports in its parent.
//!
//! A block's port struct implements [`Ports`]: one function, `ports(io, cfg)`, that asks `io`
//! for every port under the naming convention. Inside the module ([`Io::module`]) an input is
//! an input port and an output a wire the module drives; for an instance ([`Block::instance`])
//! the same call returns the child's outputs as values the parent reads and its inputs as wires
//! the parent drives. So a parent reaches a child's ports as fields the compiler checks
//! (`u_fifo.m_axis`), never by a string, and a whole interface connects in one call
//! ([`connect`], as Chisel's `<>` or Amaranth's `connect`).
//!
//! ```
//! use nicgen_edsl::prelude::*;
//! struct Inc {
//!     a: Sig,
//!     q: Sig,
//! }
//! impl Ports for Inc {
//!     type Cfg = u32;
//!     fn ports(io: &Io, w: &u32) -> Inc {
//!         Inc { a: io.input("a", *w), q: io.output("q", *w) }
//!     }
//! }
//! let inc = Block::<Inc>::build("inc", 8, |p| p.q.set(p.a + 1u32)).unwrap();
//! let top = Module::build("top", || {
//!     let u = inc.instance("u_inc");
//!     u.a.set(input("a", 8));
//!     output("q", u.q);
//! })
//! .unwrap();
//! # let _ = top;
//! ```

use crate::builder::{
    input_at, output_wire_at, report, wire_at, ElabError, Flow, Inst, Module, Sig,
};
use crate::ir::{Loc, ModuleDef};
use crate::record::Shape;
use std::ops::Deref;
use std::rc::Rc;

/// Where port declarations go: the module being built, or an instance of it in its parent.
pub struct Io<'a> {
    inst: Option<&'a Inst>,
}

impl<'a> Io<'a> {
    /// The ports of the module being built.
    pub fn module() -> Io<'static> {
        Io { inst: None }
    }

    /// The ports of instance `inst`, seen from its parent.
    pub fn instance(inst: &'a Inst) -> Io<'a> {
        Io { inst: Some(inst) }
    }

    /// True when the declarations bind an instance's ports.
    pub fn is_instance(&self) -> bool {
        self.inst.is_some()
    }

    /// An input port: inside the module a value to read; for an instance a wire the parent
    /// drives (with [`Sig::set`] or [`connect`]).
    #[track_caller]
    pub fn input(&self, name: &str, width: u32) -> Sig {
        let loc = Loc::caller();
        match self.inst {
            None => input_at(name, width, loc),
            Some(inst) => {
                // Messages about this wire (never driven) point at the instance.
                let w = wire_at(width, inst.loc())
                    .hint(format!("input `{name}` of instance `{}`", inst.name()));
                inst.set_at(name, w, loc);
                w
            }
        }
    }

    /// An output port: inside the module a wire it drives; for an instance the value the
    /// parent reads.
    #[track_caller]
    pub fn output(&self, name: &str, width: u32) -> Sig {
        let loc = Loc::caller();
        match self.inst {
            None => output_wire_at(name, width, loc),
            Some(inst) => {
                let s = inst.get_at(name, loc);
                if s.width() != width {
                    report(
                        loc,
                        format!(
                            "output `{name}` of instance `{}` is {} bits, declared {width}",
                            inst.name(),
                            s.width()
                        ),
                    );
                }
                s
            }
        }
    }

    /// One input port per field of a record, named `<prefix><field>` (fields left out of the
    /// shape have no port).
    #[track_caller]
    pub fn inputs<S: Shape>(&self, prefix: &str, shape: &S) -> S::Sigs {
        self.fields(prefix, shape, Flow::Forward)
    }

    /// One output port per field of a record, named `<prefix><field>`.
    #[track_caller]
    pub fn outputs<S: Shape>(&self, prefix: &str, shape: &S) -> S::Sigs {
        self.fields(prefix, shape, Flow::Backward)
    }

    #[track_caller]
    fn fields<S: Shape>(&self, prefix: &str, shape: &S, flow: Flow) -> S::Sigs {
        S::sigs_from(|i| {
            let w = shape.field_width(i);
            let name = format!("{prefix}{}", S::NAMES[i]);
            match (w, flow) {
                (0, _) => Sig::absent(S::NAME, S::NAMES[i]),
                (_, Flow::Forward) => self.input(&name, w),
                (_, Flow::Backward) => self.output(&name, w),
            }
        })
    }

    /// A signal travelling with the data of an interface whose module side is `role`: an input
    /// when the module consumes it, an output when it produces it.
    #[track_caller]
    pub fn forward(&self, role: Role, name: &str, width: u32) -> Sig {
        match role {
            Role::Sink => self.input(name, width),
            Role::Source => self.output(name, width),
        }
    }

    /// A signal travelling against the data (a `ready`) of an interface whose module side is
    /// `role`.
    #[track_caller]
    pub fn backward(&self, role: Role, name: &str, width: u32) -> Sig {
        match role {
            Role::Sink => self.output(name, width),
            Role::Source => self.input(name, width),
        }
    }
}

/// Which end of an interface the module is: it consumes (`s_` ports) or produces (`m_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Sink,
    Source,
}

/// A block's ports, declared once for the module and its instances.
pub trait Ports: Sized {
    /// What the declaration depends on (widths, counts).
    type Cfg: Clone;
    /// Declare every port through `io`, in a fixed order.
    fn ports(io: &Io, cfg: &Self::Cfg) -> Self;
}

/// A finished module with typed ports `P`: instantiate it with [`Block::instance`]. Derefs to
/// its [`ModuleDef`], so it goes wherever a module does (generation, simulation).
pub struct Block<P: Ports> {
    def: Rc<ModuleDef>,
    cfg: P::Cfg,
}

impl<P: Ports> Clone for Block<P> {
    fn clone(&self) -> Self {
        Block {
            def: self.def.clone(),
            cfg: self.cfg.clone(),
        }
    }
}

impl<P: Ports> std::fmt::Debug for Block<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Block({})", self.def.name)
    }
}

impl<P: Ports> Block<P> {
    /// Build module `name`: declare the ports from `cfg`, then run `body` with them.
    #[track_caller]
    pub fn build(
        name: impl Into<String>,
        cfg: P::Cfg,
        body: impl FnOnce(P),
    ) -> Result<Block<P>, ElabError> {
        Self::build_returning(name, cfg, body).map(|(b, ())| b)
    }

    /// Like [`Block::build`], returning whatever the body returns beside the block.
    #[track_caller]
    pub fn build_returning<R>(
        name: impl Into<String>,
        cfg: P::Cfg,
        body: impl FnOnce(P) -> R,
    ) -> Result<(Block<P>, R), ElabError> {
        let c = cfg.clone();
        let (def, r) = Module::build_returning(name, move || body(P::ports(&Io::module(), &c)))?;
        Ok((Block { def, cfg }, r))
    }

    /// An instance named `name` in the module being built, with its ports as `P`.
    #[track_caller]
    pub fn instance(&self, name: &str) -> P {
        let inst = crate::builder::instance(&self.def, name);
        P::ports(&Io::instance(&inst), &self.cfg)
    }

    /// The module.
    pub fn def(&self) -> &Rc<ModuleDef> {
        &self.def
    }

    /// The module, without its typed ports (for generation and simulation).
    pub fn into_def(self) -> Rc<ModuleDef> {
        self.def
    }

    /// The configuration the ports were declared from.
    pub fn cfg(&self) -> &P::Cfg {
        &self.cfg
    }
}

impl<P: Ports> Deref for Block<P> {
    type Target = Rc<ModuleDef>;
    fn deref(&self) -> &Rc<ModuleDef> {
        &self.def
    }
}

/// A group of signals that connects as one: each signal travels with the data (`Forward`,
/// from source to sink) or against it (`Backward`, e.g. `ready`).
pub trait Interface {
    /// Every signal with its direction, in a fixed order.
    fn signals(&self) -> Vec<(Sig, Flow)>;
}

impl Interface for Sig {
    fn signals(&self) -> Vec<(Sig, Flow)> {
        vec![(*self, Flow::Forward)]
    }
}

/// Connect `source` to `sink` (two interfaces of the same shape): the sink's forward signals
/// are driven from the source's, the source's backward signals from the sink's. Each driven
/// signal must be a wire not yet driven: an output of the module, or an input of an instance.
#[track_caller]
pub fn connect<I: Interface + ?Sized>(source: &I, sink: &I) {
    let loc = Loc::caller();
    let (a, b) = (source.signals(), sink.signals());
    let shapes = |v: &[(Sig, Flow)]| -> Vec<(u32, Flow)> {
        v.iter().map(|(s, f)| (s.width(), *f)).collect()
    };
    if shapes(&a) != shapes(&b) {
        report(
            loc,
            format!(
                "`connect`: the interfaces differ (source {:?}, sink {:?} as (width, flow))",
                shapes(&a),
                shapes(&b)
            ),
        );
        return;
    }
    for ((s, flow), (k, _)) in a.into_iter().zip(b) {
        match flow {
            Flow::Forward => k.set_at(s, loc),
            Flow::Backward => s.set_at(k, loc),
        }
    }
}

/// A record stream: `<prefix>_tdata` (the packed record), `_tvalid`, `_tready`. One transfer
/// per record when `valid && ready`; the stream rules of `tdata` apply to the record.
#[derive(Clone, Debug)]
pub struct RecordStream<S: Shape> {
    pub data: Sig,
    pub valid: Sig,
    pub ready: Sig,
    pub shape: S,
}

impl<S: Shape> RecordStream<S> {
    /// A record stream the module consumes (`s_...` ports).
    #[track_caller]
    pub fn sink(io: &Io, prefix: &str, shape: S) -> Self {
        Self::declare(io, Role::Sink, prefix, shape)
    }

    /// A record stream the module produces (`m_...` ports).
    #[track_caller]
    pub fn source(io: &Io, prefix: &str, shape: S) -> Self {
        Self::declare(io, Role::Source, prefix, shape)
    }

    #[track_caller]
    fn declare(io: &Io, role: Role, prefix: &str, shape: S) -> Self {
        RecordStream {
            data: io.forward(role, &format!("{prefix}_tdata"), shape.width()),
            valid: io.forward(role, &format!("{prefix}_tvalid"), 1),
            ready: io.backward(role, &format!("{prefix}_tready"), 1),
            shape,
        }
    }

    /// The record's fields (read side).
    #[track_caller]
    pub fn fields(&self) -> S::Sigs {
        self.shape.unpack(self.data)
    }

    /// Drive the record from its fields (write side).
    #[track_caller]
    pub fn set_fields(&self, rec: &S::Sigs) {
        let loc = Loc::caller();
        self.data.set_at(self.shape.pack(rec), loc);
    }

    /// A record moves in this cycle (`valid && ready`).
    #[track_caller]
    pub fn fire(&self) -> Sig {
        self.valid & self.ready
    }
}

impl<S: Shape> Interface for RecordStream<S> {
    fn signals(&self) -> Vec<(Sig, Flow)> {
        vec![
            (self.data, Flow::Forward),
            (self.valid, Flow::Forward),
            (self.ready, Flow::Backward),
        ]
    }
}

/// A record flow that cannot be stalled: `<prefix>_tdata`, `_tvalid` (no `ready`); for
/// doorbells and other events the receiver must take in the cycle they come.
#[derive(Clone, Debug)]
pub struct RecordValid<S: Shape> {
    pub data: Sig,
    pub valid: Sig,
    pub shape: S,
}

impl<S: Shape> RecordValid<S> {
    /// A flow the module consumes.
    #[track_caller]
    pub fn sink(io: &Io, prefix: &str, shape: S) -> Self {
        Self::declare(io, Role::Sink, prefix, shape)
    }

    /// A flow the module produces.
    #[track_caller]
    pub fn source(io: &Io, prefix: &str, shape: S) -> Self {
        Self::declare(io, Role::Source, prefix, shape)
    }

    #[track_caller]
    fn declare(io: &Io, role: Role, prefix: &str, shape: S) -> Self {
        RecordValid {
            data: io.forward(role, &format!("{prefix}_tdata"), shape.width()),
            valid: io.forward(role, &format!("{prefix}_tvalid"), 1),
            shape,
        }
    }

    /// The record's fields (read side).
    #[track_caller]
    pub fn fields(&self) -> S::Sigs {
        self.shape.unpack(self.data)
    }

    /// Drive the record from its fields (write side).
    #[track_caller]
    pub fn set_fields(&self, rec: &S::Sigs) {
        let loc = Loc::caller();
        self.data.set_at(self.shape.pack(rec), loc);
    }
}

impl<S: Shape> Interface for RecordValid<S> {
    fn signals(&self) -> Vec<(Sig, Flow)> {
        vec![(self.data, Flow::Forward), (self.valid, Flow::Forward)]
    }
}
