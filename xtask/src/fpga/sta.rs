//! Static timing analysis over the SDF that nextpnr writes after routing (`--sdf`).
//!
//! nextpnr's report names one critical path per clock; to close timing one needs every
//! endpoint that misses the target: how many there are, by how much, and which paths they
//! share. This reads the post-route delays nextpnr itself uses (the `max` of each SDF triple:
//! cell `IOPATH`s, `INTERCONNECT`s, `SETUPHOLD` setup values), propagates the latest arrival
//! from every clocked output (an `IOPATH` from a pin that is some timing check's clock) through
//! the combinational cells, and reports the slack of every setup-checked pin against a period.
//!
//! As in nextpnr's own analysis of an out-of-context design, there is one clock, clock nets add
//! no skew, and paths from or to the top's ports are not timed (their pins have no driver
//! cell, or no check). `cargo xtask sta` runs it on a file; `bench-area` runs it on every seed.
//! The worst slack it finds agrees with nextpnr's own critical path; bench-area compares the
//! two on every run and warns when their Fmax differ by more than 1 %.

use anyhow::{anyhow, bail, Context, Result};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

/// A pin: interned cell name and pin name.
type Pin = u32;

/// The timing graph read from one SDF file.
pub(crate) struct Sta {
    /// "cell/pin" by pin id.
    names: Vec<(u32, String)>,
    cells: Vec<String>,
    /// Edges into each pin: (from pin, delay in ps).
    fanin: Vec<Vec<(Pin, f64)>>,
    /// Pins that launch a path (clocked outputs), with their clock-to-output delay.
    launch: HashMap<Pin, f64>,
    /// Pins with a setup check, with the setup time.
    setup: HashMap<Pin, f64>,
    /// Sinks per driving pin (fanout of the net it drives).
    fanout: Vec<u32>,
}

/// One endpoint's result.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    pub(crate) pin: Pin,
    /// Slack against the period, ps (negative = missed).
    pub(crate) slack: f64,
}

/// The timing of a design against one period.
pub(crate) struct Analysis<'a> {
    sta: &'a Sta,
    period: f64,
    arrival: Vec<f64>,
    from: Vec<Option<Pin>>,
    /// Every setup-checked pin with an arrival, worst first.
    pub(crate) endpoints: Vec<Endpoint>,
}

// ---------------------------------------------------------------------------------------------
// Reading SDF

#[derive(Debug, PartialEq)]
enum Tok<'a> {
    Open,
    Close,
    Atom(&'a str),
}

fn tokens(s: &str) -> impl Iterator<Item = Tok<'_>> {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        match b[i] {
            b'(' => {
                i += 1;
                Some(Tok::Open)
            }
            b')' => {
                i += 1;
                Some(Tok::Close)
            }
            b'"' => {
                let st = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
                Some(Tok::Atom(&s[st..i.min(b.len())]))
            }
            _ => {
                let st = i;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        b'(' | b')' => break,
                        c if c.is_ascii_whitespace() => break,
                        _ => i += 1,
                    }
                }
                let end = i.min(b.len());
                Some(Tok::Atom(&s[st..end]))
            }
        }
    })
}

/// An s-expression of the file.
#[derive(Debug)]
enum Sx<'a> {
    Atom(&'a str),
    List(Vec<Sx<'a>>),
}

impl<'a> Sx<'a> {
    fn head(&self) -> Option<&'a str> {
        match self {
            Sx::List(v) => match v.first() {
                Some(Sx::Atom(a)) => Some(a),
                _ => None,
            },
            Sx::Atom(_) => None,
        }
    }
    fn items(&self) -> &[Sx<'a>] {
        match self {
            Sx::List(v) => v,
            Sx::Atom(_) => &[],
        }
    }
    fn child(&self, head: &str) -> Option<&Sx<'a>> {
        self.items().iter().find(|x| x.head() == Some(head))
    }
}

fn parse_sx(s: &str) -> Result<Sx<'_>> {
    let mut stack: Vec<Vec<Sx>> = vec![Vec::new()];
    for t in tokens(s) {
        match t {
            Tok::Open => stack.push(Vec::new()),
            Tok::Close => {
                let l = stack.pop().ok_or_else(|| anyhow!("unbalanced ')'"))?;
                stack
                    .last_mut()
                    .ok_or_else(|| anyhow!("unbalanced ')'"))?
                    .push(Sx::List(l));
            }
            Tok::Atom(a) => stack.last_mut().unwrap().push(Sx::Atom(a)),
        }
    }
    if stack.len() != 1 {
        bail!("unbalanced '(': {} lists left open", stack.len() - 1);
    }
    let mut top = stack.pop().unwrap();
    match top.len() {
        1 => Ok(top.pop().unwrap()),
        n => bail!("expected one DELAYFILE, found {n} top-level items"),
    }
}

/// An SDF identifier without its escapes (`\$x\.y` is `$x.y`).
fn unescape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut esc = false;
    for c in s.chars() {
        if esc {
            o.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            o.push(c);
        }
    }
    o
}

/// Splits `cell/pin` at the last unescaped divider.
fn split_path(s: &str) -> Result<(String, String)> {
    let b = s.as_bytes();
    let mut cut = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'/' => {
                cut = Some(i);
                i += 1
            }
            _ => i += 1,
        }
    }
    let c = cut.ok_or_else(|| anyhow!("`{s}`: no cell/pin divider"))?;
    Ok((unescape(&s[..c]), unescape(&s[c + 1..])))
}

/// The `max` of a `(min:typ:max)` triple, or of the first triple in a list of them.
fn triple_max(x: &Sx) -> Result<f64> {
    let a = match x {
        Sx::List(v) => match v.first() {
            Some(Sx::Atom(a)) => *a,
            _ => bail!("empty delay triple"),
        },
        Sx::Atom(a) => a,
    };
    let last = a.rsplit(':').next().unwrap_or(a);
    last.parse::<f64>()
        .with_context(|| format!("delay `{a}` is not a number"))
}

/// A port spec: `PIN` or `(posedge PIN)`.
fn port(x: &Sx) -> Result<String> {
    match x {
        Sx::Atom(a) => Ok(unescape(a)),
        Sx::List(v) => match v.last() {
            Some(Sx::Atom(a)) => Ok(unescape(a)),
            _ => bail!("bad port spec"),
        },
    }
}

impl Sta {
    pub(crate) fn read(path: &Path) -> Result<Sta> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Sta::parse(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub(crate) fn parse(text: &str) -> Result<Sta> {
        let sx = parse_sx(text)?;
        if sx.head() != Some("DELAYFILE") {
            bail!("not an SDF file (no DELAYFILE)");
        }
        let mut sta = Sta {
            names: Vec::new(),
            cells: Vec::new(),
            fanin: Vec::new(),
            launch: HashMap::new(),
            setup: HashMap::new(),
            fanout: Vec::new(),
        };
        let mut cell_ids: HashMap<String, u32> = HashMap::new();
        let mut pins: HashMap<(u32, String), Pin> = HashMap::new();
        let mut pin = |sta: &mut Sta, cell: &str, p: &str| -> Pin {
            let c = match cell_ids.get(cell) {
                Some(&c) => c,
                None => {
                    let c = sta.cells.len() as u32;
                    sta.cells.push(cell.to_string());
                    cell_ids.insert(cell.to_string(), c);
                    c
                }
            };
            *pins.entry((c, p.to_string())).or_insert_with(|| {
                sta.names.push((c, p.to_string()));
                sta.fanin.push(Vec::new());
                sta.fanout.push(0);
                (sta.names.len() - 1) as Pin
            })
        };
        // IOPATHs are kept until every cell's clock pins are known.
        // Clock pins are known per cell type (a flop whose data pins are all driven from the
        // top's ports may have no timing check of its own).
        let mut iopaths: Vec<(Pin, Pin, f64, String, String)> = Vec::new();
        let mut clocks: HashMap<String, Vec<String>> = HashMap::new();
        for cell in sx.items().iter().filter(|x| x.head() == Some("CELL")) {
            let ctype = cell
                .child("CELLTYPE")
                .and_then(|i| i.items().get(1))
                .map(|a| match a {
                    Sx::Atom(a) => a.trim_matches('"').to_string(),
                    Sx::List(_) => String::new(),
                })
                .unwrap_or_default();
            let inst = cell
                .child("INSTANCE")
                .and_then(|i| i.items().get(1))
                .map(|a| match a {
                    Sx::Atom(a) => unescape(a),
                    Sx::List(_) => String::new(),
                })
                .unwrap_or_default();
            for d in cell.items().iter().filter(|x| x.head() == Some("DELAY")) {
                for abs in d.items().iter().filter(|x| x.head() == Some("ABSOLUTE")) {
                    for e in abs.items().iter().skip(1) {
                        let it = e.items();
                        match e.head() {
                            Some("INTERCONNECT") if it.len() >= 4 => {
                                let (Sx::Atom(a), Sx::Atom(b)) = (&it[1], &it[2]) else {
                                    bail!("INTERCONNECT without two pins");
                                };
                                let (ac, ap) = split_path(a)?;
                                let (bc, bp) = split_path(b)?;
                                let d = triple_max(&it[3])?;
                                let s = pin(&mut sta, &ac, &ap);
                                let t = pin(&mut sta, &bc, &bp);
                                sta.fanin[t as usize].push((s, d));
                                sta.fanout[s as usize] += 1;
                            }
                            Some("IOPATH") if it.len() >= 4 => {
                                let i = port(&it[1])?;
                                let o = port(&it[2])?;
                                let d = triple_max(&it[3])?;
                                let s = pin(&mut sta, &inst, &i);
                                let t = pin(&mut sta, &inst, &o);
                                iopaths.push((s, t, d, ctype.clone(), i));
                            }
                            _ => {}
                        }
                    }
                }
            }
            for tc in cell
                .items()
                .iter()
                .filter(|x| x.head() == Some("TIMINGCHECK"))
            {
                for e in tc.items().iter().skip(1) {
                    let it = e.items();
                    if matches!(e.head(), Some("SETUPHOLD") | Some("SETUP")) && it.len() >= 4 {
                        let data = port(&it[1])?;
                        let clk = port(&it[2])?;
                        let d = triple_max(&it[3])?;
                        let p = pin(&mut sta, &inst, &data);
                        let s = sta.setup.entry(p).or_insert(d);
                        *s = s.max(d);
                        let v = clocks.entry(ctype.clone()).or_default();
                        if !v.contains(&clk) {
                            v.push(clk);
                        }
                    }
                }
            }
        }
        for (s, t, d, ctype, i) in iopaths {
            let clocked = clocks.get(&ctype).is_some_and(|v| v.contains(&i));
            if clocked {
                let l = sta.launch.entry(t).or_insert(d);
                *l = l.max(d);
            } else {
                sta.fanin[t as usize].push((s, d));
            }
        }
        Ok(sta)
    }

    pub(crate) fn name(&self, p: Pin) -> String {
        let (c, pin) = &self.names[p as usize];
        format!("{}/{}", self.cells[*c as usize], pin)
    }

    fn cell_of(&self, p: Pin) -> &str {
        &self.cells[self.names[p as usize].0 as usize]
    }

    /// Latest arrivals and the slack of every checked pin against `period_ps`.
    pub(crate) fn analyse(&self, period_ps: f64) -> Result<Analysis<'_>> {
        let n = self.names.len();
        let mut arrival = vec![f64::NEG_INFINITY; n];
        let mut from: Vec<Option<Pin>> = vec![None; n];
        // Kahn's order over the fan-in edges.
        let mut indeg: Vec<u32> = self.fanin.iter().map(|v| v.len() as u32).collect();
        let mut fanout: Vec<Vec<(Pin, f64)>> = vec![Vec::new(); n];
        for (t, ins) in self.fanin.iter().enumerate() {
            for &(s, d) in ins {
                fanout[s as usize].push((t as Pin, d));
            }
        }
        let mut ready: Vec<Pin> = (0..n as Pin).filter(|&p| indeg[p as usize] == 0).collect();
        for (&p, &d) in &self.launch {
            arrival[p as usize] = arrival[p as usize].max(d);
        }
        let mut seen = 0usize;
        while let Some(p) = ready.pop() {
            seen += 1;
            let a = arrival[p as usize];
            for &(t, d) in &fanout[p as usize] {
                if a.is_finite() && a + d > arrival[t as usize] {
                    arrival[t as usize] = a + d;
                    from[t as usize] = Some(p);
                }
                indeg[t as usize] -= 1;
                if indeg[t as usize] == 0 {
                    ready.push(t);
                }
            }
        }
        if seen != n {
            bail!(
                "combinational loop in the timing graph ({} pins never became ready)",
                n - seen
            );
        }
        let mut endpoints: Vec<Endpoint> = self
            .setup
            .iter()
            .filter(|(&p, _)| arrival[p as usize].is_finite())
            .map(|(&p, &s)| Endpoint {
                pin: p,
                slack: period_ps - (arrival[p as usize] + s),
            })
            .collect();
        endpoints.sort_by(|a, b| a.slack.total_cmp(&b.slack).then(a.pin.cmp(&b.pin)));
        Ok(Analysis {
            sta: self,
            period: period_ps,
            arrival,
            from,
            endpoints,
        })
    }
}

/// A register's or memory's name without the cell-name suffixes synthesis and packing add,
/// so that the bits of one bus group together (`meta_q_TRELLIS_FF_Q_12` is `meta_q`).
pub(crate) fn group(cell: &str) -> String {
    let mut s = cell.split('$').next().unwrap_or(cell).to_string();
    for cut in [
        "_TRELLIS_",
        "_LUT4_",
        "_CCU2C_",
        "_PFUMX_",
        "_L6MUX21_",
        "_DP16KD_",
    ] {
        if let Some(i) = s.find(cut) {
            s.truncate(i);
        }
    }
    let s = s.trim_end_matches(['_', '.']).to_string();
    if s.is_empty() {
        "(anonymous)".into()
    } else {
        s
    }
}

/// One hop of a path: the pin reached, its arrival, and whether it was reached through a net.
pub(crate) struct Hop {
    pub(crate) pin: Pin,
    pub(crate) arrival: f64,
    pub(crate) net: bool,
}

impl Analysis<'_> {
    /// Worst slack, ps, and the worst endpoint.
    pub(crate) fn worst(&self) -> Option<&Endpoint> {
        self.endpoints.first()
    }

    pub(crate) fn failing(&self) -> impl Iterator<Item = &Endpoint> {
        self.endpoints.iter().filter(|e| e.slack < 0.0)
    }

    /// Total negative slack, ps.
    pub(crate) fn tns(&self) -> f64 {
        self.failing().map(|e| e.slack).sum()
    }

    /// The path into `p`, launch first.
    pub(crate) fn path(&self, p: Pin) -> Vec<Hop> {
        let mut v = Vec::new();
        let mut cur = Some(p);
        while let Some(c) = cur {
            let prev = self.from[c as usize];
            let net =
                prev.is_some_and(|q| self.sta.names[q as usize].0 != self.sta.names[c as usize].0);
            v.push(Hop {
                pin: c,
                arrival: self.arrival[c as usize],
                net,
            });
            cur = prev;
        }
        v.reverse();
        v
    }

    /// The launching cell's group of the path into `p`.
    fn start_group(&self, p: Pin) -> String {
        let path = self.path(p);
        group(self.sta.cell_of(path[0].pin))
    }

    /// A Markdown summary: counts, and the worst `top` (launch group -> capture group) pairs
    /// with their worst path; `rust` names the Rust line of a group (a flattened register or
    /// net name) when it is known.
    pub(crate) fn summary(&self, top: usize, rust: &dyn Fn(&str) -> Option<String>) -> String {
        let mut md = String::new();
        let fail: Vec<&Endpoint> = self.failing().collect();
        let _ = writeln!(
            md,
            "Against {:.3} ns ({:.2} MHz): {} of {} checked endpoints miss it; worst slack {:.3} ns, total negative slack {:.1} ns.",
            self.period / 1000.0,
            1e6 / self.period,
            fail.len(),
            self.endpoints.len(),
            self.worst().map(|e| e.slack / 1000.0).unwrap_or(0.0),
            self.tns() / 1000.0
        );
        // Group failing endpoints by (launch group, capture group).
        let mut groups: Vec<(String, String, usize, f64, Pin)> = Vec::new();
        let mut index: HashMap<(String, String), usize> = HashMap::new();
        for e in &fail {
            let k = (self.start_group(e.pin), group(self.sta.cell_of(e.pin)));
            match index.get(&k) {
                Some(&i) => groups[i].2 += 1,
                None => {
                    index.insert(k.clone(), groups.len());
                    groups.push((k.0, k.1, 1, e.slack, e.pin));
                }
            }
        }
        if groups.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "\n{} launch → capture groups miss it; the worst {}:\n",
            groups.len(),
            top.min(groups.len())
        );
        let _ = writeln!(md, "| slack ns | endpoints | launch | capture | path (cell/pin, arrival ns, fanout of each net) |");
        let _ = writeln!(md, "|---:|---:|---|---|---|");
        let with_rust = |g: &str| match rust(g) {
            Some(l) => format!("`{g}` ({l})"),
            None => format!("`{g}`"),
        };
        for (from, to, n, slack, p) in groups.iter().take(top) {
            let hops = self.path(*p);
            let mut desc = Vec::new();
            for (i, h) in hops.iter().enumerate() {
                // Show cell boundaries: each net's driver pin with its fanout, and the
                // endpoint.
                let is_driver = hops.get(i + 1).is_some_and(|n| n.net);
                if is_driver || i + 1 == hops.len() {
                    let fo = self.sta.fanout[h.pin as usize];
                    let name = self.sta.name(h.pin);
                    if is_driver {
                        desc.push(format!("{name} {:.2} (fo {fo})", h.arrival / 1000.0));
                    } else {
                        desc.push(format!("{name} {:.2}", h.arrival / 1000.0));
                    }
                }
            }
            let _ = writeln!(
                md,
                "| {:.3} | {n} | {} | {} | {} |",
                slack / 1000.0,
                with_rust(from),
                with_rust(to),
                desc.join(" → ")
            );
        }
        md
    }
}

/// `cargo xtask sta FILE.sdf [--mhz F] [--top N] [--verilog DIR [--module M]]`: with the
/// generated Verilog of the design (`DIR/files.f`, top `M` or the manifest's), each register
/// group is followed by the Rust line that made it.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut file = None;
    let mut mhz = 156.25;
    let mut top = 30;
    let mut verilog: Option<String> = None;
    let mut module: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--verilog" => {
                verilog = Some(
                    it.next()
                        .ok_or_else(|| anyhow!("--verilog needs the directory `nicgen generate` wrote"))?
                        .clone(),
                )
            }
            "--module" => {
                module = Some(
                    it.next()
                        .ok_or_else(|| anyhow!("--module needs the name of the synthesised top"))?
                        .clone(),
                )
            }
            "--mhz" => {
                mhz = it
                    .next()
                    .ok_or_else(|| anyhow!("--mhz needs a frequency in MHz"))?
                    .parse()
                    .context("--mhz: not a number")?
            }
            "--top" => {
                top = it
                    .next()
                    .ok_or_else(|| anyhow!("--top needs a count"))?
                    .parse()
                    .context("--top: not a count")?
            }
            f if !f.starts_with('-') && file.is_none() => file = Some(f.to_string()),
            other => bail!("sta: unknown argument `{other}` (usage: cargo xtask sta FILE.sdf [--mhz F] [--top N] [--verilog DIR [--module M]])"),
        }
    }
    let file = file.ok_or_else(|| {
        anyhow!("sta: no SDF file given (usage: cargo xtask sta FILE.sdf [--mhz F] [--top N]; bench-area writes target/bench-area/<preset>/<module>/pnr_seed<s>.sdf)")
    })?;
    let sta = Sta::read(Path::new(&file))?;
    let a = sta.analyse(1e6 / mhz)?;
    let lines = verilog
        .as_ref()
        .map(|d| crate::rust_lines::RustLines::read_dir(Path::new(d)));
    let module = match (&module, &verilog) {
        (Some(m), _) => m.clone(),
        (None, Some(d)) => std::fs::read_to_string(Path::new(d).join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["top"].as_str().map(String::from))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let rust = |g: &str| lines.as_ref().and_then(|l| l.of_path(&module, g));
    print!("{}", a.summary(top, &rust));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two flops into a LUT into a third flop, with the second input later; and a flop from
    /// a port, which is not timed.
    const SDF: &str = r#"(DELAYFILE (SDFVERSION "3.0") (DIVIDER /) (TIMESCALE 1ps)
  (CELL (CELLTYPE "top") (INSTANCE )
    (DELAY (ABSOLUTE
      (INTERCONNECT a\$x/Q l/A (100:150:200) (100:150:200))
      (INTERCONNECT b/Q l/B (300:400:500) (300:400:500))
      (INTERCONNECT l/F c/DI (50:60:70) (50:60:70))
      (INTERCONNECT c/Q d/CE (10:10:10) (10:10:10))
    )))
  (CELL (CELLTYPE "TRELLIS_FF") (INSTANCE a\$x)
    (DELAY (ABSOLUTE (IOPATH CLK Q (400:450:500) (400:450:500))))
    (TIMINGCHECK (SETUPHOLD (posedge M) (posedge CLK) (0:0:0) (1:2:3))))
  (CELL (CELLTYPE "TRELLIS_FF") (INSTANCE b)
    (DELAY (ABSOLUTE (IOPATH CLK Q (400:450:500) (400:450:500)))))
  (CELL (CELLTYPE "TRELLIS_COMB") (INSTANCE l)
    (DELAY (ABSOLUTE (IOPATH A F (200:210:220) (200:210:220)) (IOPATH B F (200:230:240) (200:230:240)))))
  (CELL (CELLTYPE "TRELLIS_FF") (INSTANCE c)
    (DELAY (ABSOLUTE (IOPATH CLK Q (400:450:500) (400:450:500))))
    (TIMINGCHECK (SETUPHOLD (posedge DI) (posedge CLK) (100:100:100) (0:0:0))))
  (CELL (CELLTYPE "TRELLIS_FF") (INSTANCE d)
    (TIMINGCHECK (SETUPHOLD (posedge CE) (posedge CLK) (30:30:30) (0:0:0))))
)"#;

    #[test]
    fn arrivals_follow_the_latest_input() {
        let sta = Sta::parse(SDF).unwrap();
        let a = sta.analyse(1000.0).unwrap();
        // c/DI: b's clk-to-q 500 + net 500 + LUT B->F 240 + net 70 = 1310, setup 100.
        let w = a.worst().unwrap();
        assert_eq!(sta.name(w.pin), "c/DI");
        assert_eq!(w.slack, 1000.0 - 1410.0);
        let path: Vec<String> = a.path(w.pin).iter().map(|h| sta.name(h.pin)).collect();
        assert_eq!(path, ["b/Q", "l/B", "l/F", "c/DI"]);
        // d/CE: 500 + 10 + 30; a's M input has no driver in the file (a port): not timed.
        assert_eq!(a.endpoints.len(), 2);
        assert_eq!(a.endpoints[1].slack, 1000.0 - 540.0);
        assert_eq!(a.failing().count(), 1);
        assert_eq!(a.tns(), -410.0);
        assert!(a.summary(5, &|_| None).contains("1 of 2 checked endpoints"));
        let named = a.summary(5, &|g| (g == "b").then(|| "hdl/src/x.rs:7".to_string()));
        assert!(named.contains("`b` (hdl/src/x.rs:7)"), "{named}");
    }

    #[test]
    fn names_are_unescaped_and_grouped() {
        assert_eq!(
            split_path(r"u\.x\$y/Q").unwrap(),
            ("u.x$y".into(), "Q".into())
        );
        assert_eq!(split_path(r"a\/b/F").unwrap(), ("a/b".into(), "F".into()));
        assert_eq!(group("meta_q_TRELLIS_FF_Q_12"), "meta_q");
        assert_eq!(group("u_parse.meta_rd_p4_LUT4_Z$x"), "u_parse.meta_rd_p4");
    }

    #[test]
    fn bad_files_say_why() {
        assert!(Sta::parse("(DELAYFILE (CELL").is_err());
        assert!(Sta::parse("(FOO)").is_err());
    }
}
