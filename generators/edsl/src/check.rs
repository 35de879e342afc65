//! Elaboration checks, run when a module is finished.
//!
//! Each check reports a [`Diag`] naming the Rust line of the offending construct:
//! - undriven wires and outputs, registers that are never assigned, unconnected child inputs;
//! - unused inputs, child outputs and register bits, unless the design declared them unused
//!   (`.unused()`); partly used intermediate values get a waiver instead, since a slice is the
//!   design saying which bits it wants;
//! - combinational loops, found as strongly connected components of a petgraph graph of the
//!   netlist (registers and synchronous memory reads cut edges; child instances contribute their
//!   own input-to-output paths), printed as a chain of signal names.
//!
//! Width mismatches and multiple drivers are caught earlier, when the construct is made.

use crate::builder::Diag;
use crate::ir::*;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap};

/// A short human name for a node: its own name, the output it drives, or its kind and line.
pub fn describe(def: &ModuleDef, id: NodeId) -> String {
    let n = &def.nodes[id as usize];
    if let Some(name) = &n.name {
        return format!("`{name}`");
    }
    if let Some(h) = &n.hint {
        return h.clone();
    }
    for p in &def.ports {
        if p.dir == Dir::Output && p.node == Some(id) {
            return format!("output `{}`", p.name);
        }
    }
    let kind = match &n.kind {
        NodeKind::Input(_) => "input",
        NodeKind::Const(_) => "constant",
        NodeKind::Wire(_) => "wire",
        NodeKind::Reg { .. } => "register",
        NodeKind::Unary(..) => "reduction",
        NodeKind::Binary(op, ..) => match op {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl | BinOp::Shr => "shift",
            _ => "compare",
        },
        NodeKind::Mux { .. } => "mux",
        NodeKind::Slice { .. } => "slice",
        NodeKind::Concat(_) => "concat",
        NodeKind::Repl { .. } => "replicate",
        NodeKind::Case { .. } => "case",
        NodeKind::Priority { .. } => "select",
        NodeKind::MemRead { .. } => "memory read",
        NodeKind::InstOut { inst, port } => {
            let i = &def.insts[*inst as usize];
            return format!("`{}.{}`", i.name, i.module.ports[*port as usize].name);
        }
    };
    format!("{kind}@{}", short_loc(n.loc))
}

fn short_loc(l: Loc) -> String {
    let f = l.file.rsplit('/').next().unwrap_or(l.file);
    format!("{f}:{}", l.line)
}

/// Follow unnamed wires to the value that drives them.
pub fn resolve(def: &ModuleDef, mut id: NodeId) -> NodeId {
    for _ in 0..def.nodes.len() + 1 {
        let n = &def.nodes[id as usize];
        match (&n.kind, &n.name) {
            (NodeKind::Wire(Some(d)), None) => id = *d,
            _ => return id,
        }
    }
    id
}

/// Combinational operands of a node (the edges a loop can run along).
fn comb_operands(def: &ModuleDef, id: NodeId) -> Vec<NodeId> {
    let n = &def.nodes[id as usize];
    match &n.kind {
        NodeKind::Reg { .. } => vec![],
        NodeKind::MemRead { mem, port } => {
            let r = &def.mems[*mem as usize].reads[*port as usize];
            match r.kind {
                ReadKind::Async => vec![r.addr],
                ReadKind::Sync => vec![],
            }
        }
        NodeKind::InstOut { inst, port } => {
            let i = &def.insts[*inst as usize];
            let deps = i
                .module
                .comb_deps
                .iter()
                .find(|(o, _)| o == port)
                .map(|(_, d)| d.clone())
                .unwrap_or_default();
            deps.iter().filter_map(|ip| i.conns[*ip as usize]).collect()
        }
        k => k.operands(),
    }
}

pub(crate) fn check_module(def: &mut ModuleDef, diags: &mut Vec<Diag>) {
    // 1. Drivers and connections.
    for (id, n) in def.nodes.iter().enumerate() {
        match &n.kind {
            NodeKind::Wire(None) => {
                let what = describe(def, id as NodeId);
                let what = if what.starts_with("output") || n.hint.is_some() {
                    what
                } else {
                    format!("wire {what}")
                };
                diags.push(Diag {
                    msg: format!("{what} is never driven"),
                    loc: n.loc,
                });
            }
            NodeKind::Reg { assigns, .. } if assigns.is_empty() => {
                diags.push(Diag {
                    msg: format!("register {} is never assigned", describe(def, id as NodeId)),
                    loc: n.loc,
                });
            }
            _ => {}
        }
    }
    for inst in &def.insts {
        let missing: Vec<&str> = inst
            .module
            .ports
            .iter()
            .zip(&inst.conns)
            .filter(|(p, c)| p.dir == Dir::Input && c.is_none())
            .map(|(p, _)| p.name.as_str())
            .collect();
        if !missing.is_empty() {
            diags.push(Diag {
                msg: format!(
                    "instance `{}` of `{}` has unconnected inputs: {}",
                    inst.name,
                    inst.module.name,
                    missing.join(", ")
                ),
                loc: inst.loc,
            });
        }
    }
    for m in &def.mems {
        if m.write.is_none() && m.init.is_none() {
            diags.push(Diag {
                msg: format!(
                    "memory `{}` is never written and has no initial contents",
                    m.name
                ),
                loc: m.loc,
            });
        }
    }
    if !diags.is_empty() {
        return;
    }

    // 2. Combinational loops.
    let mut g: DiGraph<NodeId, ()> = DiGraph::new();
    let idx: Vec<NodeIndex> = (0..def.nodes.len())
        .map(|i| g.add_node(i as NodeId))
        .collect();
    for id in 0..def.nodes.len() {
        for o in comb_operands(def, id as NodeId) {
            g.add_edge(idx[o as usize], idx[id], ());
        }
    }
    let mut looped = false;
    for scc in petgraph::algo::tarjan_scc(&g) {
        let self_loop = scc.len() == 1 && g.contains_edge(scc[0], scc[0]);
        if scc.len() > 1 || self_loop {
            looped = true;
            let chain = loop_chain(&g, &scc);
            let names: Vec<String> = chain.iter().map(|n| describe(def, g[*n])).collect();
            let at = chain
                .iter()
                .map(|n| g[*n])
                .find(|id| def.nodes[*id as usize].name.is_some())
                .unwrap_or(g[chain[0]]);
            diags.push(Diag {
                msg: format!("combinational loop: {} -> {}", names.join(" -> "), names[0]),
                loc: def.nodes[at as usize].loc,
            });
        }
    }
    if looped {
        return;
    }

    // 3. Liveness.
    let n = def.nodes.len();
    let mut live = vec![false; n];
    let mut mem_live = vec![false; def.mems.len()];
    let mut work: Vec<NodeId> = Vec::new();
    for p in &def.ports {
        if p.dir == Dir::Output {
            work.extend(p.node);
        }
    }
    for i in &def.insts {
        work.extend(i.conns.iter().flatten());
    }
    while let Some(id) = work.pop() {
        if live[id as usize] {
            continue;
        }
        live[id as usize] = true;
        let node = &def.nodes[id as usize];
        work.extend(node.kind.operands());
        if let NodeKind::MemRead { mem, port } = node.kind {
            let m = &def.mems[mem as usize];
            let r = &m.reads[port as usize];
            work.push(r.addr);
            work.extend(r.en);
            if !mem_live[mem as usize] {
                mem_live[mem as usize] = true;
                if let Some(w) = &m.write {
                    work.extend([w.en, w.addr, w.data]);
                }
            }
        }
    }

    // 4. Used bits of every live value.
    let words = |w: u32| (w as usize).div_ceil(64);
    let mut used: Vec<Vec<u64>> = def
        .nodes
        .iter()
        .map(|n| vec![0u64; words(n.width)])
        .collect();
    let mark = |used: &mut Vec<Vec<u64>>, id: NodeId, hi: u32, lo: u32| {
        let u = &mut used[id as usize];
        for b in lo..=hi {
            u[(b / 64) as usize] |= 1 << (b % 64);
        }
    };
    let full = |def: &ModuleDef, id: NodeId| def.nodes[id as usize].width - 1;
    for p in &def.ports {
        if let (Dir::Output, Some(d)) = (p.dir, p.node) {
            let r = resolve(def, d);
            mark(&mut used, r, full(def, r), 0);
        }
    }
    for i in &def.insts {
        for c in i.conns.iter().flatten() {
            let r = resolve(def, *c);
            mark(&mut used, r, full(def, r), 0);
        }
    }
    for (mi, m) in def.mems.iter().enumerate() {
        if !mem_live[mi] {
            continue;
        }
        let mut ids: Vec<NodeId> = Vec::new();
        if let Some(w) = &m.write {
            ids.extend([w.en, w.addr, w.data]);
        }
        for r in &m.reads {
            ids.push(r.addr);
            ids.extend(r.en);
        }
        for id in ids {
            let r = resolve(def, id);
            mark(&mut used, r, full(def, r), 0);
        }
    }
    for (id, node) in def.nodes.iter().enumerate() {
        if !live[id] {
            continue;
        }
        if let NodeKind::Slice { a, hi, lo } = node.kind {
            let r = resolve(def, a);
            mark(&mut used, r, hi, lo);
        } else if !matches!(node.kind, NodeKind::Wire(_)) || node.name.is_some() {
            for o in node.kind.operands() {
                let r = resolve(def, o);
                mark(&mut used, r, full(def, r), 0);
            }
        }
    }
    // A slice declared `.unused()` (a record field the design does not read) counts its bits
    // as accounted for; the value it slices is then emitted with a waiver.
    let mut waive = vec![false; n];
    for id in 0..n {
        let node = &def.nodes[id];
        if let (NodeKind::Slice { a, hi, lo }, true) = (&node.kind, node.unused_ok) {
            let r = resolve(def, *a);
            mark(&mut used, r, *hi, *lo);
            waive[r as usize] = true;
        }
    }
    for id in 0..n {
        let node = &def.nodes[id];
        let w = node.width;
        let u = &used[id];
        let count: u32 = u.iter().map(|x| x.count_ones()).sum();
        let is_leaf = matches!(
            node.kind,
            NodeKind::Input(_)
                | NodeKind::Reg { .. }
                | NodeKind::MemRead { .. }
                | NodeKind::InstOut { .. }
        );
        let resolved_away = resolve(def, id as NodeId) != id as NodeId;
        if resolved_away || !live[id] && !matches!(node.kind, NodeKind::Input(_)) {
            continue;
        }
        if count == w {
            continue;
        }
        if node.unused_ok {
            waive[id] = true;
            continue;
        }
        if matches!(node.kind, NodeKind::Input(_)) && count == 0 {
            diags.push(Diag {
                msg: format!(
                    "input {} is never used; use it or declare it with `.unused()`",
                    describe(def, id as NodeId)
                ),
                loc: node.loc,
            });
        } else if is_leaf {
            let unused: Vec<u32> = (0..w)
                .filter(|b| u[(*b / 64) as usize] & (1 << (b % 64)) == 0)
                .collect();
            diags.push(Diag {
                msg: format!(
                    "bits {} of {} are never used; narrow it, use them, or declare it with `.unused()`",
                    ranges(&unused),
                    describe(def, id as NodeId)
                ),
                loc: node.loc,
            });
        } else {
            waive[id] = true;
        }
    }
    // A child output read only into a signal declared `.unused()` counts as declared unused.
    let mut declared: Vec<(usize, u32)> = Vec::new();
    for (id, nd) in def.nodes.iter().enumerate() {
        if let NodeKind::InstOut { inst, port } = nd.kind {
            if !live[id] && nd.unused_ok {
                declared.push((inst as usize, port));
            }
        }
    }
    for (ii, pi) in declared {
        if !def.insts[ii].unused_outputs.contains(&pi) {
            def.insts[ii].unused_outputs.push(pi);
        }
    }
    for inst in &def.insts {
        for (pi, p) in inst.module.ports.iter().enumerate() {
            if p.dir != Dir::Output || inst.unused_outputs.contains(&(pi as u32)) {
                continue;
            }
            let node = def.nodes.iter().position(|nd| matches!(nd.kind, NodeKind::InstOut { inst: ii, port } if def.insts[ii as usize].name == inst.name && port == pi as u32));
            if node.map(|id| live[id]) != Some(true) {
                diags.push(Diag {
                    msg: format!(
                        "output `{}` of instance `{}` is never used; use it or declare it with `.unused(\"{}\")`",
                        p.name, inst.name, p.name
                    ),
                    loc: inst.loc,
                });
            }
        }
    }
    def.live = live;
    def.waive = waive;

    // 5. Which inputs each output depends on combinationally (for loops through the parent).
    let mut memo: HashMap<NodeId, BTreeSet<u32>> = HashMap::new();
    let mut deps = Vec::new();
    for (pi, p) in def.ports.iter().enumerate() {
        if let (Dir::Output, Some(d)) = (p.dir, p.node) {
            let s = comb_inputs(def, d, &mut memo);
            deps.push((pi as u32, s.into_iter().collect()));
        }
    }
    def.comb_deps = deps;
}

fn comb_inputs(
    def: &ModuleDef,
    id: NodeId,
    memo: &mut HashMap<NodeId, BTreeSet<u32>>,
) -> BTreeSet<u32> {
    // Iterative post-order to stay safe on deep netlists.
    let mut stack = vec![(id, false)];
    while let Some((n, done)) = stack.pop() {
        if memo.contains_key(&n) {
            continue;
        }
        let ops = comb_operands(def, n);
        if done {
            let mut s = BTreeSet::new();
            if let NodeKind::Input(p) = def.nodes[n as usize].kind {
                s.insert(p);
            }
            for o in ops {
                s.extend(memo[&o].iter().copied());
            }
            memo.insert(n, s);
        } else {
            stack.push((n, true));
            for o in ops {
                if !memo.contains_key(&o) {
                    stack.push((o, false));
                }
            }
        }
    }
    memo[&id].clone()
}

/// A cycle through the strongly connected component, as a list of graph nodes.
fn loop_chain(g: &DiGraph<NodeId, ()>, scc: &[NodeIndex]) -> Vec<NodeIndex> {
    let inside: std::collections::HashSet<NodeIndex> = scc.iter().copied().collect();
    let start = *scc.iter().min_by_key(|n| g[**n]).unwrap();
    // BFS from start's successors back to start, inside the component.
    let mut prev: HashMap<NodeIndex, NodeIndex> = HashMap::new();
    let mut q = std::collections::VecDeque::new();
    for s in g.neighbors(start) {
        if inside.contains(&s) && !prev.contains_key(&s) {
            prev.insert(s, start);
            q.push_back(s);
        }
    }
    while let Some(n) = q.pop_front() {
        if n == start {
            break;
        }
        for s in g.neighbors(n) {
            if inside.contains(&s) && !prev.contains_key(&s) {
                prev.insert(s, n);
                q.push_back(s);
            }
        }
    }
    let mut chain = vec![];
    let mut cur = start;
    loop {
        let p = prev[&cur];
        if p == start {
            break;
        }
        chain.push(p);
        cur = p;
        if chain.len() > scc.len() {
            break;
        }
    }
    chain.push(start);
    chain.reverse();
    chain
}

fn ranges(bits: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bits.len() {
        let lo = bits[i];
        let mut hi = lo;
        while i + 1 < bits.len() && bits[i + 1] == hi + 1 {
            i += 1;
            hi = bits[i];
        }
        out.push(if hi == lo {
            format!("[{lo}]")
        } else {
            format!("[{hi}:{lo}]")
        });
        i += 1;
    }
    out.join(", ")
}
