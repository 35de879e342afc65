//! Verilog-2005 emitter for one module.
//!
//! The output is meant to read like careful hand-written Verilog: ANSI port list, user names
//! kept, one `assign` per named or shared value with small single-use expressions folded into
//! their consumer, registers in `always @(posedge clk)` blocks with reset only where the design
//! asked for it, memories written in the shape Yosys and Vivado infer as RAM. Every expression is
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

fn kind_stem(k: &NodeKind) -> &'static str {
    match k {
        NodeKind::Unary(UnOp::Not, _) => "not",
        NodeKind::Unary(..) => "red",
        NodeKind::Binary(op, ..) => match op {
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Shl | BinOp::Shr => "shift",
            _ => "cmp",
        },
        NodeKind::Mux { .. } => "mux",
        NodeKind::Slice { .. } => "bits",
        NodeKind::Concat(_) => "cat",
        NodeKind::Repl { .. } => "rep",
        NodeKind::Case { .. } => "case",
        NodeKind::Priority { .. } => "sel",
        NodeKind::Reg { .. } => "r",
        NodeKind::MemRead { .. } => "rd",
        NodeKind::Wire(_) => "w",
        _ => "n",
    }
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
                    let want = node
                        .name
                        .clone()
                        .unwrap_or_else(|| format!("{}{}", kind_stem(&node.kind), id));
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
                            && !matches!(&node.kind, NodeKind::Concat(v) if v.len() > 8)
                            && !matches!(node.kind, NodeKind::Priority { .. });
                    forms[id] = if inline {
                        Form::Inline
                    } else {
                        let want = node
                            .name
                            .clone()
                            .unwrap_or_else(|| format!("{}{}", kind_stem(&node.kind), id));
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
            NodeKind::Const(v) => literal(node.width, v),
            NodeKind::Unary(op, a) => {
                let o = match op {
                    UnOp::Not => "~",
                    UnOp::RedAnd => "&",
                    UnOp::RedOr => "|",
                    UnOp::RedXor => "^",
                };
                format!("{o}{}", self.r(*a))
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
        // Port list.
        let mut ports: Vec<String> = Vec::new();
        if def.has_clock {
            ports.push("input  wire clk".into());
        }
        if def.has_reset {
            ports.push("input  wire rst".into());
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
            let decl = format!("{kind} {}{}", range(p.width), p.name);
            if waived {
                ports.push(format!("/* verilator lint_off UNUSEDSIGNAL */\n    {decl}\n    /* verilator lint_on UNUSEDSIGNAL */"));
            } else {
                ports.push(decl);
            }
        }
        let _ = writeln!(s, "module {name} (");
        for (i, p) in ports.iter().enumerate() {
            let comma = if i + 1 < ports.len() { "," } else { "" };
            // A trailing lint_on comment must come after the comma.
            if let Some(idx) = p.find("\n    /* verilator lint_on") {
                let _ = writeln!(s, "    {}{comma}{}", &p[..idx], &p[idx..]);
            } else {
                let _ = writeln!(s, "    {p}{comma}");
            }
        }
        let _ = writeln!(s, ");");

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
                "{} {}{nm};",
                if is_reg { "reg " } else { "wire" },
                range(node.width)
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
            let attr = if no_rw_check(m) {
                "(* no_rw_check *)\n    "
            } else {
                ""
            };
            let _ = writeln!(
                decls,
                "    {attr}reg  {}{} [0:{}];",
                range(m.width),
                self.mem_names[mi],
                m.depth - 1
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
            let _ = writeln!(assigns, "    assign {nm} = {rhs};");
        }
        for (pi, p) in def.ports.iter().enumerate() {
            if let (Dir::Output, Some(d)) = (p.dir, p.node) {
                let r = resolve(def, d);
                if self.owned_by_port.get(&r) != Some(&(pi as u32)) {
                    let _ = writeln!(assigns, "    assign {} = {};", p.name, self.rtop(r));
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
                body = format!(
                    "if (rst) begin\n    {nm} <= {};\nend else begin\n{}end\n",
                    literal(node.width, v),
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
                "\n    {} {} (",
                (self.child_names)(child),
                self.inst_names[ii]
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
