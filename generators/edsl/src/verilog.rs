//! Verilog-2005 emitter for one module.
//!
//! The output is meant to read like careful hand-written Verilog: ANSI port list, user names
//! kept, one `assign` per named or shared value with small single-use expressions folded into
//! their consumer (a long concatenation gets a wire of its own, except as the value of a
//! register that loads under an enable or condition: Verilator evaluates an `assign` in every
//! cycle, an expression inside the `if` only when the register loads), registers in
//! `always @(posedge clk)` blocks with reset only where the design asked for it, memories
//! written in the shape Yosys and Vivado infer as RAM. Every expression is
//! width-exact so that `verilator --lint-only -Wall` has nothing to say; the only waivers are
//! `UNUSEDSIGNAL` around single signals whose bits the design declared unused.

use crate::check::resolve;
use crate::ir::*;
use crate::names::Namer;
use num_bigint::BigUint;
use std::collections::HashMap;
use std::fmt::Write;

/// How a node appears in the text.
#[derive(Clone, Debug, PartialEq)]
enum Form {
    /// Not emitted (dead, or an alias resolved to another node).
    Skip,
    /// Declared and referred to by this identifier.
    Named(String),
    /// Folded into its single consumer.
    Inline,
}

pub(crate) struct Emitter<'a> {
    def: &'a ModuleDef,
    child_names: &'a dyn Fn(&ModuleDef) -> String,
    forms: Vec<Form>,
    /// Output ports that own a node (declared as the port itself).
    owned_by_port: HashMap<NodeId, u32>,
    mem_names: Vec<String>,
    inst_names: Vec<String>,
}

fn literal(w: u32, v: &BigUint) -> String {
    if w == 1 {
        return format!("1'b{}", if v.bits() == 0 { 0 } else { 1 });
    }
    if w <= 32 {
        format!("{w}'d{v}")
    } else {
        format!("{w}'h{}", v.to_str_radix(16))
    }
}

fn range(w: u32) -> String {
    if w == 1 {
        String::new()
    } else {
        format!("[{}:0] ", w - 1)
    }
}

/// The name of a value the design did not name: the Rust function that made it and the line,
/// as SpinalHDL's `when_Stream_l368` (`crate::srcmap`).
fn origin_name(node: &Node) -> String {
    format!(
        "{}_l{}",
        crate::srcmap::origin(node.loc.file, node.loc.line),
        node.loc.line
    )
}

/// `// @[file:line]`: where the Rust that made a declaration is, as Chisel writes it.
fn at(loc: Loc) -> String {
    format!("// @[{}:{}]", loc.file, loc.line)
}

/// The `localparam` name of state `variant` of enumeration `e`: `CqState::CqeReq` ->
/// `CQ_STATE_CQE_REQ`.
pub(crate) fn state_name(e: &EnumDef, variant: u32) -> String {
    format!(
        "{}_{}",
        upper_snake(&e.name),
        upper_snake(&e.variants[variant as usize])
    )
}

fn upper_snake(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(def: &'a ModuleDef, child_names: &'a dyn Fn(&ModuleDef) -> String) -> Self {
        let n = def.nodes.len();
        let mut namer = Namer::default();
        for r in ["clk", "rst"] {
            namer.reserve(r);
        }
        for p in &def.ports {
            namer.reserve(&p.name);
        }
        for e in &def.enums {
            for k in 0..e.variants.len() as u32 {
                namer.reserve(&state_name(e, k));
            }
        }
        // Use counts over live consumers, on resolved ids.
        let mut uses = vec![0u32; n];
        let mut sliced = vec![false; n];
        let mut pinned = vec![false; n];
        for (id, node) in def.nodes.iter().enumerate() {
            if !def.live[id] || (matches!(node.kind, NodeKind::Wire(_)) && node.name.is_none()) {
                continue;
            }
            for o in node.kind.operands() {
                let r = resolve(def, o) as usize;
                uses[r] += 1;
                if matches!(node.kind, NodeKind::Slice { .. }) {
                    sliced[r] = true;
                }
            }
        }
        // Values loaded by a register only when its enable or an assignment's condition holds:
        // a long concatenation there stays in the `always` block (below), where a simulator
        // evaluates it only in the cycles the register loads, not in every cycle as a wire.
        let mut gated = vec![false; n];
        for (id, node) in def.nodes.iter().enumerate() {
            if let (true, NodeKind::Reg { assigns, en, .. }) = (def.live[id], &node.kind) {
                for a in assigns {
                    if en.is_some() || a.cond.is_some() {
                        gated[resolve(def, a.value) as usize] = true;
                    }
                }
            }
        }
        let extra = |id: NodeId, uses: &mut Vec<u32>, pinned: &mut Vec<bool>| {
            let r = resolve(def, id) as usize;
            uses[r] += 1;
            pinned[r] = true;
        };
        for m in &def.mems {
            if let Some(w) = &m.write {
                for id in [w.en, w.addr, w.data] {
                    extra(id, &mut uses, &mut pinned);
                }
            }
            for r in &m.reads {
                extra(r.addr, &mut uses, &mut pinned);
                if let Some(e) = r.en {
                    extra(e, &mut uses, &mut pinned);
                }
            }
        }
        for i in &def.insts {
            for c in i.conns.iter().flatten() {
                extra(*c, &mut uses, &mut pinned);
            }
        }
        let mut owned_by_port = HashMap::new();
        for (pi, p) in def.ports.iter().enumerate() {
            if let (Dir::Output, Some(d)) = (p.dir, p.node) {
                let r = resolve(def, d);
                let k = &def.nodes[r as usize].kind;
                let ownable = !matches!(k, NodeKind::Input(_) | NodeKind::Const(_))
                    && !owned_by_port.contains_key(&r);
                if ownable {
                    owned_by_port.insert(r, pi as u32);
                } else {
                    uses[r as usize] += 1;
                }
            }
        }
        let mut forms = vec![Form::Skip; n];
        // Ports keep their names; then named nodes; then the rest get a stem and their index.
        for (id, node) in def.nodes.iter().enumerate() {
            if let NodeKind::Input(p) = node.kind {
                forms[id] = Form::Named(def.ports[p as usize].name.clone());
            }
        }
        for (&id, &pi) in &owned_by_port {
            forms[id as usize] = Form::Named(def.ports[pi as usize].name.clone());
        }
        let mem_names = def.mems.iter().map(|m| namer.fresh(&m.name)).collect();
        let inst_names = def.insts.iter().map(|i| namer.fresh(&i.name)).collect();
        for (id, node) in def.nodes.iter().enumerate() {
            if forms[id] != Form::Skip || !def.live[id] {
                continue;
            }
            if resolve(def, id as NodeId) != id as NodeId {
                continue;
            }
            match &node.kind {
                NodeKind::Const(_) => forms[id] = Form::Inline,
                NodeKind::InstOut { inst, port } => {
                    let i = &def.insts[*inst as usize];
                    let want = node.name.clone().unwrap_or_else(|| {
                        format!("{}_{}", i.name, i.module.ports[*port as usize].name)
                    });
                    forms[id] = Form::Named(namer.fresh(&want));
                }
                NodeKind::Reg { .. }
                | NodeKind::MemRead { .. }
                | NodeKind::Case { .. }
                | NodeKind::Wire(_) => {
                    let want = node.name.clone().unwrap_or_else(|| origin_name(node));
                    forms[id] = Form::Named(namer.fresh(&want));
                }
                _ => {
                    let trivial = matches!(node.kind, NodeKind::Slice { .. });
                    let inline = node.name.is_none() && trivial && !def.waive[id]
                        || node.name.is_none()
                            && uses[id] <= 1
                            && !sliced[id]
                            && !pinned[id]
                            && !def.waive[id]
                            && !matches!(&node.kind, NodeKind::Concat(v) if v.len() > 8 && !gated[id])
                            && !matches!(node.kind, NodeKind::Priority { .. });
                    forms[id] = if inline {
                        Form::Inline
                    } else {
                        let want = node.name.clone().unwrap_or_else(|| origin_name(node));
                        Form::Named(namer.fresh(&want))
                    };
                }
            }
        }
        // Unused child outputs still need a wire to connect to.
        Emitter {
            def,
            child_names,
            forms,
            owned_by_port,
            mem_names,
            inst_names,
        }
    }

    /// State `k` of enumeration `e` appears in the text (a live constant or a reset value).
    fn state_used(&self, e: u32, k: u32) -> bool {
        self.def.nodes.iter().enumerate().any(|(id, n)| {
            n.tag == Some((e, k))
                && match n.kind {
                    NodeKind::Const(_) => self.forms[id] != Form::Skip,
                    NodeKind::Reg { .. } => matches!(self.forms[id], Form::Named(_)),
                    _ => false,
                }
        })
    }

    /// An expression for node `id` suitable as an operand (parenthesised when compound).
    fn r(&self, id: NodeId) -> String {
        let id = resolve(self.def, id);
        match &self.forms[id as usize] {
            Form::Named(s) => s.clone(),
            Form::Inline => {
                let e = self.expr(id);
                let node = &self.def.nodes[id as usize];
                let simple = matches!(
                    node.kind,
                    NodeKind::Const(_)
                        | NodeKind::Concat(_)
                        | NodeKind::Repl { .. }
                        | NodeKind::Slice { .. }
                        | NodeKind::Unary(..)
                );
                if simple {
                    e
                } else {
                    format!("({e})")
                }
            }
            Form::Skip => {
                // A dead node referenced by a live one cannot happen; keep the text obvious.
                format!("/* dead #{id} */ 1'b0")
            }
        }
    }

    /// Like [`Self::r`] but without outer parentheses: for the right-hand side of a statement.
    fn rtop(&self, id: NodeId) -> String {
        let id = resolve(self.def, id);
        match &self.forms[id as usize] {
            Form::Inline => self.expr(id),
            _ => self.r(id),
        }
    }

    /// The defining expression of an expression node.
    fn expr(&self, id: NodeId) -> String {
        let node = &self.def.nodes[id as usize];
        match &node.kind {
            NodeKind::Const(v) => match node.tag {
                Some((e, k)) => state_name(&self.def.enums[e as usize], k),
                None => literal(node.width, v),
            },
            NodeKind::Unary(op, a) => {
                let o = match op {
                    UnOp::Not => "~",
                    UnOp::RedAnd => "&",
                    UnOp::RedOr => "|",
                    UnOp::RedXor => "^",
                };
                // A reduction of a unary expression keeps its operand in parentheses: `|` then
                // `|x` would lex as `||`, and `^` then `~x` as the XNOR reduction `^~`.
                let inner = resolve(self.def, *a);
                let nested = *op != UnOp::Not
                    && self.forms[inner as usize] == Form::Inline
                    && matches!(self.def.nodes[inner as usize].kind, NodeKind::Unary(..));
                if nested {
                    format!("{o}({})", self.expr(inner))
                } else {
                    format!("{o}{}", self.r(*a))
                }
            }
            NodeKind::Binary(op, a, b) => {
                let o = match op {
                    BinOp::And => "&",
                    BinOp::Or => "|",
                    BinOp::Xor => "^",
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    BinOp::Ge => ">=",
                    BinOp::Shl => "<<",
                    BinOp::Shr => ">>",
                };
                // `a & b & c` needs no parentheses for a left operand of the same associative op.
                let left = match (
                    &self.forms[resolve(self.def, *a) as usize],
                    &self.def.nodes[resolve(self.def, *a) as usize].kind,
                ) {
                    (Form::Inline, NodeKind::Binary(op2, ..))
                        if op2 == op
                            && matches!(op, BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Add) =>
                    {
                        self.expr(resolve(self.def, *a))
                    }
                    _ => self.r(*a),
                };
                format!("{left} {o} {}", self.r(*b))
            }
            NodeKind::Mux { sel, t, f } => {
                format!("{} ? {} : {}", self.r(*sel), self.r(*t), self.r(*f))
            }
            NodeKind::Slice { a, hi, lo } => {
                let base = self.r(*a);
                if hi == lo {
                    format!("{base}[{hi}]")
                } else {
                    format!("{base}[{hi}:{lo}]")
                }
            }
            NodeKind::Concat(parts) => {
                let v: Vec<String> = parts.iter().map(|p| self.r(*p)).collect();
                wrap_list("{", &v, "}")
            }
            NodeKind::Repl { a, n } => format!("{{{n}{{{}}}}}", self.r(*a)),
            NodeKind::Priority { arms, default } => {
                let mut s = String::new();
                for (c, v) in arms {
                    let _ = write!(s, "{} ? {} :\n        ", self.r(*c), self.r(*v));
                }
                s.push_str(&self.r(*default));
                s
            }
            NodeKind::Wire(Some(d)) => self.r(*d),
            NodeKind::MemRead { mem, port } => {
                let r = &self.def.mems[*mem as usize].reads[*port as usize];
                format!("{}[{}]", self.mem_names[*mem as usize], self.r(r.addr))
            }
            _ => unreachable!("expr of a non-expression node"),
        }
    }

    pub(crate) fn module_text(&self, name: &str) -> String {
        let def = self.def;
        let mut s = String::new();
        // Port list: (declaration, source comment, lint waiver).
        let mut ports: Vec<(String, String, bool)> = Vec::new();
        if def.has_clock {
            ports.push(("input  wire clk".into(), String::new(), false));
        }
        if def.has_reset {
            ports.push(("input  wire rst".into(), String::new(), false));
        }
        for (pi, p) in def.ports.iter().enumerate() {
            let kind = match p.dir {
                Dir::Input => "input  wire",
                Dir::Output => {
                    let owned = self
                        .owned_by_port
                        .iter()
                        .find(|(_, &q)| q == pi as u32)
                        .map(|(n, _)| *n);
                    match owned.map(|n| &def.nodes[n as usize].kind) {
                        Some(NodeKind::Reg { .. }) | Some(NodeKind::Case { .. }) => "output reg ",
                        Some(NodeKind::MemRead { mem, port })
                            if def.mems[*mem as usize].reads[*port as usize].kind
                                == ReadKind::Sync =>
                        {
                            "output reg "
                        }
                        _ => "output wire",
                    }
                }
            };
            let waived =
                p.dir == Dir::Input && p.node.map(|n| def.waive[n as usize]).unwrap_or(false);
            let keep = p.dir == Dir::Output
                && self
                    .owned_by_port
                    .iter()
                    .any(|(n, &q)| q == pi as u32 && def.nodes[*n as usize].keep);
            let decl = format!(
                "{}{kind} {}{}",
                if keep { "(* keep *) " } else { "" },
                range(p.width),
                p.name
            );
            ports.push((decl, format!(" {}", at(p.loc)), waived));
        }
        let _ = writeln!(s, "module {name} (");
        for (i, (decl, src, waived)) in ports.iter().enumerate() {
            let comma = if i + 1 < ports.len() { "," } else { "" };
            if *waived {
                let _ = writeln!(
                    s,
                    "    /* verilator lint_off UNUSEDSIGNAL */\n    {decl}{comma}{src}\n    /* verilator lint_on UNUSEDSIGNAL */"
                );
            } else {
                let _ = writeln!(s, "    {decl}{comma}{src}");
            }
        }
        let _ = writeln!(s, ");");

        // States of the module's state machines.
        let mut params = String::new();
        for (ei, e) in def.enums.iter().enumerate() {
            for k in 0..e.variants.len() as u32 {
                if self.state_used(ei as u32, k) {
                    let _ = writeln!(
                        params,
                        "    localparam {}{} = {};",
                        range(e.width),
                        state_name(e, k),
                        literal(e.width, &BigUint::from(k))
                    );
                }
            }
        }
        if !params.is_empty() {
            s.push('\n');
            s.push_str(&params);
        }

        // Declarations.
        let mut decls = String::new();
        for (id, node) in def.nodes.iter().enumerate() {
            let Form::Named(nm) = &self.forms[id] else {
                continue;
            };
            if matches!(node.kind, NodeKind::Input(_))
                || self.owned_by_port.contains_key(&(id as NodeId))
            {
                continue;
            }
            let is_reg = match &node.kind {
                NodeKind::Reg { .. } | NodeKind::Case { .. } => true,
                NodeKind::MemRead { mem, port } => {
                    def.mems[*mem as usize].reads[*port as usize].kind == ReadKind::Sync
                }
                _ => false,
            };
            let d = format!(
                "{}{} {}{nm}; {}",
                if node.keep { "(* keep *) " } else { "" },
                if is_reg { "reg " } else { "wire" },
                range(node.width),
                at(node.loc)
            );
            if def.waive[id] {
                let _ = writeln!(decls, "    // verilator lint_off UNUSEDSIGNAL\n    {d}\n    // verilator lint_on UNUSEDSIGNAL");
            } else {
                let _ = writeln!(decls, "    {d}");
            }
        }
        for (ii, inst) in def.insts.iter().enumerate() {
            for &pi in &inst.unused_outputs {
                let p = &inst.module.ports[pi as usize];
                let _ = writeln!(
                    decls,
                    "    // verilator lint_off UNUSEDSIGNAL\n    wire {}{}_{}; // unused by design\n    // verilator lint_on UNUSEDSIGNAL",
                    range(p.width),
                    self.inst_names[ii],
                    p.name
                );
            }
        }
        for (mi, m) in def.mems.iter().enumerate() {
            let mut attr = String::new();
            if no_rw_check(m) {
                attr.push_str("(* no_rw_check *)\n    ");
            }
            if m.distributed {
                attr.push_str("(* ram_style = \"distributed\" *)\n    ");
            }
            let _ = writeln!(
                decls,
                "    {attr}reg  {}{} [0:{}]; {}",
                range(m.width),
                self.mem_names[mi],
                m.depth - 1,
                at(m.loc)
            );
        }
        if !decls.is_empty() {
            s.push('\n');
            s.push_str(&decls);
        }

        // Continuous assignments, in node order (a topological order of the expression DAG).
        let mut assigns = String::new();
        for (id, node) in def.nodes.iter().enumerate() {
            let Form::Named(nm) = &self.forms[id] else {
                continue;
            };
            let rhs = match &node.kind {
                NodeKind::Input(_)
                | NodeKind::Reg { .. }
                | NodeKind::InstOut { .. }
                | NodeKind::Case { .. } => continue,
                NodeKind::MemRead { mem, port } => {
                    if def.mems[*mem as usize].reads[*port as usize].kind == ReadKind::Sync {
                        continue;
                    }
                    self.expr(id as NodeId)
                }
                NodeKind::Wire(Some(d)) => self.rtop(*d),
                _ => self.expr(id as NodeId),
            };
            let _ = writeln!(assigns, "    assign {nm} = {rhs}; {}", at(node.loc));
        }
        for (pi, p) in def.ports.iter().enumerate() {
            if let (Dir::Output, Some(d)) = (p.dir, p.node) {
                let r = resolve(def, d);
                if self.owned_by_port.get(&r) != Some(&(pi as u32)) {
                    let _ = writeln!(
                        assigns,
                        "    assign {} = {}; {}",
                        p.name,
                        self.rtop(r),
                        at(def.nodes[r as usize].loc)
                    );
                }
            }
        }
        if !assigns.is_empty() {
            s.push('\n');
            s.push_str(&assigns);
        }

        // Case statements.
        for (id, node) in def.nodes.iter().enumerate() {
            let (Form::Named(nm), NodeKind::Case { sel, arms, default }) =
                (&self.forms[id], &node.kind)
            else {
                continue;
            };
            let sw = def.nodes[resolve(def, *sel) as usize].width;
            let _ = writeln!(
                s,
                "\n    always @(*) begin\n        case ({})",
                self.r(*sel)
            );
            for (k, v) in arms {
                let _ = writeln!(s, "            {}: {nm} = {};", literal(sw, k), self.r(*v));
            }
            let _ = writeln!(
                s,
                "            default: {nm} = {};\n        endcase\n    end",
                self.r(*default)
            );
        }

        // Registers: plain pipeline registers share one block; the rest get their own.
        let mut plain = String::new();
        let mut blocks = String::new();
        for (id, node) in def.nodes.iter().enumerate() {
            let (Form::Named(nm), NodeKind::Reg { assigns, en, init }) =
                (&self.forms[id], &node.kind)
            else {
                continue;
            };
            if en.is_none() && init.is_none() && assigns.len() == 1 && assigns[0].cond.is_none() {
                let _ = writeln!(plain, "        {nm} <= {};", self.rtop(assigns[0].value));
                continue;
            }
            let mut body = String::new();
            for a in assigns {
                match a.cond {
                    None => {
                        let _ = writeln!(body, "{nm} <= {};", self.rtop(a.value));
                    }
                    Some(c) => {
                        let _ = writeln!(
                            body,
                            "if ({}) {nm} <= {};",
                            self.rtop(c),
                            self.rtop(a.value)
                        );
                    }
                }
            }
            if let Some(e) = en {
                body = format!("if ({}) begin\n{}end\n", self.r(*e), indent(&body, 4));
            }
            if let Some(v) = init {
                let reset = match node.tag {
                    Some((e, k)) => state_name(&def.enums[e as usize], k),
                    None => literal(node.width, v),
                };
                body = format!(
                    "if (rst) begin\n    {nm} <= {reset};\nend else begin\n{}end\n",
                    indent(&body, 4)
                );
            }
            let _ = write!(
                blocks,
                "\n    always @(posedge clk) begin\n{}    end\n",
                indent(&body, 8)
            );
        }
        if !plain.is_empty() {
            let _ = write!(s, "\n    always @(posedge clk) begin\n{plain}    end\n");
        }
        s.push_str(&blocks);

        // Memories.
        for (mi, m) in def.mems.iter().enumerate() {
            let mn = &self.mem_names[mi];
            let live_reads: Vec<(usize, &MemRead)> = m
                .reads
                .iter()
                .enumerate()
                .filter(|(pi, _)| {
                    def.nodes.iter().enumerate().any(|(id, n)| {
                        def.live[id] && matches!(n.kind, NodeKind::MemRead { mem, port } if mem == mi as u32 && port == *pi as u32)
                    })
                })
                .collect();
            if live_reads.is_empty() {
                continue;
            }
            if let Some(init) = &m.init {
                let _ = writeln!(s, "\n    integer {mn}_i;\n    initial begin");
                let _ = writeln!(
                    s,
                    "        for ({mn}_i = 0; {mn}_i < {}; {mn}_i = {mn}_i + 1) {mn}[{mn}_i] = {};",
                    m.depth,
                    literal(m.width, &BigUint::from(0u8))
                );
                for (i, v) in init.iter().enumerate() {
                    if v.bits() != 0 {
                        let _ = writeln!(s, "        {mn}[{i}] = {};", literal(m.width, v));
                    }
                }
                let _ = writeln!(s, "    end");
            }
            if let Some(w) = &m.write {
                let _ = write!(
                    s,
                    "\n    always @(posedge clk) begin\n        if ({}) {mn}[{}] <= {};\n    end\n",
                    self.r(w.en),
                    self.r(w.addr),
                    self.r(w.data)
                );
            }
            for (pi, r) in live_reads {
                if r.kind != ReadKind::Sync {
                    continue;
                }
                let id = def
                    .nodes
                    .iter()
                    .position(|n| matches!(n.kind, NodeKind::MemRead { mem, port } if mem == mi as u32 && port == pi as u32))
                    .unwrap();
                let Form::Named(q) = &self.forms[id] else {
                    continue;
                };
                let read = format!("{q} <= {mn}[{}];", self.r(r.addr));
                // Hardware may return anything for a read of the word being written
                // (no_rw_check); the simulation returns the complement so that a design relying
                // on the old word fails its tests.
                let poison = match (no_rw_check(m), &m.write) {
                    (true, Some(w)) => Some(format!(
                        "`ifndef SYNTHESIS\nif ({} && {} == {}) {q} <= ~{mn}[{}]; // read of the word being written: undefined\n`endif\n",
                        self.r(w.en),
                        self.r(w.addr),
                        self.r(r.addr),
                        self.r(r.addr)
                    )),
                    _ => None,
                };
                let body = match (r.en, poison) {
                    (Some(e), None) => format!("if ({}) {read}\n", self.r(e)),
                    (None, None) => format!("{read}\n"),
                    (Some(e), Some(p)) => format!(
                        "if ({}) begin\n{}end\n",
                        self.r(e),
                        indent(&format!("{read}\n{p}"), 4)
                    ),
                    (None, Some(p)) => format!("{read}\n{p}"),
                };
                let _ = write!(
                    s,
                    "\n    always @(posedge clk) begin\n{}    end\n",
                    indent(&body, 8)
                );
            }
        }

        // Instances.
        for (ii, inst) in def.insts.iter().enumerate() {
            let child = &inst.module;
            let mut conns: Vec<String> = Vec::new();
            if child.has_clock {
                conns.push(".clk(clk)".into());
            }
            if child.has_reset {
                conns.push(".rst(rst)".into());
            }
            for (pi, p) in child.ports.iter().enumerate() {
                let e = match p.dir {
                    Dir::Input => self.r(inst.conns[pi].expect("checked")),
                    Dir::Output => {
                        if inst.unused_outputs.contains(&(pi as u32)) {
                            format!("{}_{}", self.inst_names[ii], p.name)
                        } else {
                            let id = def
                                .nodes
                                .iter()
                                .position(|n| matches!(n.kind, NodeKind::InstOut { inst: x, port } if x == ii as u32 && port == pi as u32))
                                .expect("checked");
                            self.r(id as NodeId)
                        }
                    }
                };
                conns.push(format!(".{}({e})", p.name));
            }
            let _ = writeln!(
                s,
                "\n    {} {} ( {}",
                (self.child_names)(child),
                self.inst_names[ii],
                at(inst.loc)
            );
            for (i, c) in conns.iter().enumerate() {
                let comma = if i + 1 < conns.len() { "," } else { "" };
                let _ = writeln!(s, "        {c}{comma}");
            }
            let _ = writeln!(s, "    );");
        }
        let _ = writeln!(s, "\nendmodule");
        s
    }
}

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines().map(|l| format!("{pad}{l}\n")).collect()
}

fn wrap_list(open: &str, items: &[String], close: &str) -> String {
    let mut s = String::from(open);
    let mut line = 0usize;
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
            line += 2;
        }
        if line + it.len() > 100 {
            s.push_str("\n        ");
            line = 0;
        }
        s.push_str(it);
        line += it.len();
    }
    s.push_str(close);
    s
}

/// Whether `m` is emitted `(* no_rw_check *)`: it is written, has a registered read, and the
/// design did not ask to keep read-during-write semantics ([`Memory::keep_rw_collisions`]).
fn no_rw_check(m: &Memory) -> bool {
    !m.keep_rw_collisions && m.write.is_some() && m.reads.iter().any(|r| r.kind == ReadKind::Sync)
}
