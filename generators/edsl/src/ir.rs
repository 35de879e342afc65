//! The netlist: what elaboration produces and what the checks and emitters read.
//!
//! A [`ModuleDef`] is a flat list of [`Node`]s (each one value of a fixed width), the ports that
//! expose some of them, the memories and the child instances. Nodes refer to each other by
//! [`NodeId`]; only wires and registers may be referenced before they are driven, which is how
//! feedback is written. Nothing here knows about Verilog; the emitters turn it into text.

use num_bigint::BigUint;
use std::fmt;
use std::rc::Rc;

/// Index of a node inside its module.
pub type NodeId = u32;

/// A Rust source location, recorded with `#[track_caller]` for every construct so that
/// elaboration errors point at the user's line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: &'static str,
    pub line: u32,
    pub col: u32,
}

impl Loc {
    #[track_caller]
    pub fn caller() -> Loc {
        let l = std::panic::Location::caller();
        Loc {
            file: l.file(),
            line: l.line(),
            col: l.column(),
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Not,
    RedAnd,
    RedOr,
    RedXor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    And,
    Or,
    Xor,
    /// Same-width wrapping add; widening adds are built from zero-extended operands.
    Add,
    Sub,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Shift left by a signal amount (width of the left operand kept).
    Shl,
    /// Logical shift right by a signal amount.
    Shr,
}

impl BinOp {
    pub fn is_compare(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

/// One assignment to a register: `if cond { reg <= value }`, later ones win.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegAssign {
    pub cond: Option<NodeId>,
    pub value: NodeId,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Input port number.
    Input(u32),
    Const(BigUint),
    /// A forward-declared value, driven exactly once.
    Wire(Option<NodeId>),
    /// A flip-flop bank clocked by the module clock. `init` is the synchronous reset value; a
    /// register without one carries no reset logic.
    Reg {
        assigns: Vec<RegAssign>,
        en: Option<NodeId>,
        init: Option<BigUint>,
    },
    Unary(UnOp, NodeId),
    Binary(BinOp, NodeId, NodeId),
    Mux {
        sel: NodeId,
        t: NodeId,
        f: NodeId,
    },
    Slice {
        a: NodeId,
        hi: u32,
        lo: u32,
    },
    /// Most significant part first, as in Verilog `{a, b}`.
    Concat(Vec<NodeId>),
    Repl {
        a: NodeId,
        n: u32,
    },
    /// Match `sel` against constants; first match wins; `default` otherwise.
    Case {
        sel: NodeId,
        arms: Vec<(BigUint, NodeId)>,
        default: NodeId,
    },
    /// First true condition wins; `default` otherwise.
    Priority {
        arms: Vec<(NodeId, NodeId)>,
        default: NodeId,
    },
    /// Read port `port` of memory `mem`.
    MemRead {
        mem: u32,
        port: u32,
    },
    /// Output port `port` of instance `inst`.
    InstOut {
        inst: u32,
        port: u32,
    },
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    pub width: u32,
    /// User-given name (made unique and escaped by the emitter).
    pub name: Option<String>,
    pub loc: Loc,
    /// The design declared that some bits of this value may go unused: the emitter then puts a
    /// lint waiver around this one signal, and the unused-bit check stays quiet.
    pub unused_ok: bool,
    /// Synthesis must keep this value as it is (`(* keep *)`): a replicated register.
    pub keep: bool,
    /// What an unnamed node stands for, for messages (e.g. the instance port a wire drives).
    pub hint: Option<String>,
    /// A constant that is a state of an enumeration: `(enum index in ModuleDef::enums, variant)`;
    /// emitted as the enumeration's `localparam`.
    pub tag: Option<(u32, u32)>,
}

/// A named enumeration used by a module (a state machine's states), emitted as `localparam`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumDef {
    /// The Rust type name (`CqState`).
    pub name: String,
    /// Bits of the encoding.
    pub width: u32,
    /// Variant names in encoding order (`Idle` is 0, ...).
    pub variants: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Input,
    Output,
}

#[derive(Clone, Debug)]
pub struct Port {
    pub name: String,
    pub dir: Dir,
    pub width: u32,
    /// For inputs: the `Input` node. For outputs: the driving node, once driven.
    pub node: Option<NodeId>,
    pub loc: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadKind {
    /// Combinational read (`assign q = mem[addr]`): LUTRAM / distributed RAM.
    Async,
    /// Registered read (`q <= mem[addr]` on the clock, optional enable): block RAM.
    Sync,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemRead {
    pub addr: NodeId,
    pub en: Option<NodeId>,
    pub kind: ReadKind,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemWrite {
    pub en: NodeId,
    pub addr: NodeId,
    pub data: NodeId,
    pub loc: Loc,
}

#[derive(Clone, Debug)]
pub struct Memory {
    pub name: String,
    pub width: u32,
    pub depth: u32,
    pub init: Option<Vec<BigUint>>,
    /// The design relies on a registered read of the word being written in the same cycle
    /// returning the old word. When false (the default) the emitter marks the memory
    /// `(* no_rw_check *)` so synthesis adds no bypass logic for that case.
    pub keep_rw_collisions: bool,
    /// Map to distributed (LUT) RAM whatever synthesis would pick: emitted
    /// `(* ram_style = "distributed" *)`. Yosys otherwise turns an asynchronous read whose
    /// address is a register into a block-RAM read port, whose clock-to-output (about 5 ns on
    /// ECP5 without the output register) then starts the reader's logic.
    pub distributed: bool,
    pub write: Option<MemWrite>,
    pub reads: Vec<MemRead>,
    pub loc: Loc,
}

#[derive(Clone, Debug)]
pub struct Instance {
    pub name: String,
    pub module: Rc<ModuleDef>,
    /// One entry per port of the child (inputs get a driver; outputs are `None`).
    pub conns: Vec<Option<NodeId>>,
    /// Child output ports the parent declared it does not use.
    pub unused_outputs: Vec<u32>,
    pub loc: Loc,
}

/// A finished, checked module.
#[derive(Debug)]
pub struct ModuleDef {
    pub name: String,
    pub doc: Vec<String>,
    pub nodes: Vec<Node>,
    pub ports: Vec<Port>,
    pub mems: Vec<Memory>,
    pub insts: Vec<Instance>,
    /// True when the module (or a child) has clocked state and so a `clk` port.
    pub has_clock: bool,
    /// True when the module (or a child) has registers with a reset value and so an `rst` port.
    pub has_reset: bool,
    /// For every output port index, the input port indices it depends on combinationally.
    pub comb_deps: Vec<(u32, Vec<u32>)>,
    /// Per node: reachable from an output, an instance input or a live memory (dead nodes are
    /// not emitted).
    pub live: Vec<bool>,
    /// Per node: emitted with a lint waiver because some of its bits are unused by design.
    pub waive: Vec<bool>,
    /// Enumerations whose states appear in this module.
    pub enums: Vec<EnumDef>,
    pub loc: Loc,
}

impl ModuleDef {
    /// Index of port `name` (as the user spelled it; keyword escaping is applied here too).
    pub fn port_index(&self, name: &str) -> Option<u32> {
        let name = crate::names::sanitize(name);
        self.ports
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u32)
    }
    pub fn inputs(&self) -> impl Iterator<Item = &Port> {
        self.ports.iter().filter(|p| p.dir == Dir::Input)
    }
    pub fn outputs(&self) -> impl Iterator<Item = &Port> {
        self.ports.iter().filter(|p| p.dir == Dir::Output)
    }
}

impl NodeKind {
    /// The operands this node reads, in a fixed order.
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            NodeKind::Input(_)
            | NodeKind::Const(_)
            | NodeKind::MemRead { .. }
            | NodeKind::InstOut { .. } => vec![],
            NodeKind::Wire(d) => d.iter().copied().collect(),
            NodeKind::Reg { assigns, en, .. } => {
                let mut v: Vec<NodeId> = en.iter().copied().collect();
                for a in assigns {
                    v.extend(a.cond);
                    v.push(a.value);
                }
                v
            }
            NodeKind::Unary(_, a) => vec![*a],
            NodeKind::Binary(_, a, b) => vec![*a, *b],
            NodeKind::Mux { sel, t, f } => vec![*sel, *t, *f],
            NodeKind::Slice { a, .. } => vec![*a],
            NodeKind::Concat(v) => v.clone(),
            NodeKind::Repl { a, .. } => vec![*a],
            NodeKind::Case { sel, arms, default } => {
                let mut v = vec![*sel];
                v.extend(arms.iter().map(|(_, n)| *n));
                v.push(*default);
                v
            }
            NodeKind::Priority { arms, default } => {
                let mut v = Vec::new();
                for (c, n) in arms {
                    v.push(*c);
                    v.push(*n);
                }
                v.push(*default);
                v
            }
        }
    }

    /// True for nodes whose value is produced by a clock edge, which therefore break
    /// combinational paths.
    pub fn is_state(&self) -> bool {
        matches!(self, NodeKind::Reg { .. })
    }
}
