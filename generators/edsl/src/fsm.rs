//! State machines: states declared as a Rust enum ([`states!`](crate::states!)), held in a
//! register ([`Fsm`]), and emitted as named `localparam`s, so the Verilog reads
//! `state == CQ_STATE_IDLE` and a waveform viewer can show `Idle` (the generator writes a
//! GTKWave translate-filter file per enumeration, `waves/<Enum>.txt`).
//!
//! ```
//! use nicgen_edsl::prelude::*;
//! nicgen_edsl::states! {
//!     /// A two-phase handshake.
//!     pub enum Phase { Idle, Busy }
//! }
//! let m = Module::build("phase", || {
//!     let go = input("go", 1);
//!     let done = input("done", 1);
//!     let st = Fsm::new("state", Phase::Idle);
//!     st.next(&[(st.is(Phase::Idle) & go, Phase::Busy), (st.is(Phase::Busy) & done, Phase::Idle)]);
//!     output("busy", st.is(Phase::Busy));
//! })
//! .unwrap();
//! let v = generate(&m, &EmitOptions::default());
//! assert!(v.verilog[0].1.contains("localparam PHASE_BUSY = 1'b1;"));
//! ```

use crate::builder::{clog2, enum_lit, reg_init, select, tag_state_reg, Sig};
use crate::ir::EnumDef;
use std::marker::PhantomData;

/// An enumeration of states; implemented by [`states!`](crate::states!).
pub trait States: Copy + 'static {
    /// The Rust type name.
    const NAME: &'static str;
    /// Variant names in encoding order.
    const NAMES: &'static [&'static str];
    /// This state's encoding.
    fn index(self) -> u32;

    /// Bits of the encoding (binary, at least 1).
    fn width() -> u32 {
        clog2(Self::NAMES.len() as u64)
    }

    /// The enumeration as the netlist records it.
    fn def() -> EnumDef {
        EnumDef {
            name: Self::NAME.to_string(),
            width: Self::width(),
            variants: Self::NAMES.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// This state as a constant, emitted as its `localparam`.
    #[track_caller]
    fn lit(self) -> Sig {
        enum_lit(&Self::def(), self.index())
    }
}

/// Declare an enumeration of states (a Rust enum implementing [`States`]).
#[macro_export]
macro_rules! states {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $( $(#[$vmeta:meta])* $v:ident ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name { $( $(#[$vmeta])* $v ),+ }
        impl $crate::fsm::States for $name {
            const NAME: &'static str = stringify!($name);
            const NAMES: &'static [&'static str] = &[ $( stringify!($v) ),+ ];
            fn index(self) -> u32 {
                self as u32
            }
        }
    };
}

/// A state register of enumeration `S`, reset to a given state.
#[derive(Clone, Copy, Debug)]
pub struct Fsm<S: States> {
    state: Sig,
    name: &'static str,
    _s: PhantomData<S>,
}

impl<S: States> Fsm<S> {
    /// The register `name`, reset to `reset`.
    #[track_caller]
    pub fn new(name: &'static str, reset: S) -> Fsm<S> {
        let state = reg_init(S::width(), reset.index()).named(name);
        tag_state_reg(state, &S::def(), reset.index());
        Fsm {
            state,
            name,
            _s: PhantomData,
        }
    }

    /// The current state (the register).
    pub fn q(&self) -> Sig {
        self.state
    }

    /// The machine is in state `s`.
    #[track_caller]
    pub fn is(&self, s: S) -> Sig {
        self.state.eq(s.lit())
    }

    /// The machine is in any of `states`.
    #[track_caller]
    pub fn is_any(&self, states: &[S]) -> Sig {
        let mut v = self.is(states[0]);
        for s in &states[1..] {
            v = v | self.is(*s);
        }
        v
    }

    /// Next state: the state of the first arm whose condition holds, else stay.
    #[track_caller]
    pub fn next(&self, arms: &[(Sig, S)]) {
        let arms: Vec<(Sig, Sig)> = arms.iter().map(|(c, s)| (*c, s.lit())).collect();
        let next = select(&arms, self.state).named(&format!("{}_next", self.name));
        self.state.set(next);
    }

    /// Next state computed by the caller (from [`States::lit`] constants).
    #[track_caller]
    pub fn set(&self, next: Sig) {
        self.state.set(next.named(&format!("{}_next", self.name)));
    }
}
