//! Replays a recorded per-cycle input trace on Icarus Verilog and compares the outputs with
//! Verilator's, cycle by cycle.
//!
//! # Why
//! Verilator is fast but 2-state and does its own scheduling; Icarus is an independent,
//! event-driven, 4-state simulator. Running the *same* Verilog with the *same* per-cycle inputs
//! on both catches emitter output that only one simulator interprets as intended (races,
//! width/sign surprises, reads of uninitialised state that show up as X in Icarus).
//!
//! # How
//! [`testbench_verilog`] writes a Verilog-2005 testbench that instantiates the top, reads the
//! inputs of every cycle from a `$readmemh` file and, per cycle, with the clock low: applies the
//! cycle's input buffer, waits 1 time unit for combinational logic to settle, samples all
//! outputs into an output buffer image and `$fwrite`s it as hex, then raises the clock (rising
//! edge) and lowers it again. This is exactly what the Verilator shim's `nicgen_cycle` does,
//! so the recorded output buffers are comparable 1:1 with [`Sim::cycle`](crate::Sim::cycle)'s.
//!
//! Both buffers use the layout of [`crate::layout`]; one `$readmemh` line per cycle holds the
//! whole input buffer as `in_words * 16` hex digits, most significant word first, and one
//! output line the whole output buffer the same way. X and Z digits in Icarus's output are kept
//! as a per-bit mask ([`IcarusTrace::xmask`]) and compared according to an [`XPolicy`].

use crate::layout::{self, Layout};
use crate::verilator::Recording;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Errors of an Icarus replay.
#[derive(Debug, thiserror::Error)]
pub enum IcarusError {
    /// `iverilog` or `vvp` is missing.
    #[error("Icarus Verilog not found ({0}): install it (Debian/Ubuntu: `apt-get install iverilog`) or set IVERILOG/VVP")]
    NotFound(String),
    /// Compilation or simulation failed.
    #[error("{what} failed: `{command}` ({status})\n--- output ---\n{output}\n--- files kept in {dir} ---")]
    Failed {
        /// Which step.
        what: String,
        /// Command line.
        command: String,
        /// Exit status or timeout.
        status: String,
        /// Tail of stdout and stderr.
        output: String,
        /// Work directory, kept for inspection.
        dir: PathBuf,
    },
    /// The inputs do not match the layout, or the simulator's output could not be parsed.
    #[error("{0}")]
    Invalid(String),
    /// A file system operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The replay disagrees with Verilator.
    #[error(transparent)]
    Mismatch(#[from] ReplayMismatch),
}

type Result<T, E = IcarusError> = std::result::Result<T, E>;

/// The outputs Icarus produced, one buffer per cycle, in the layout's word format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcarusTrace {
    /// Output buffer of each cycle (X/Z bits read as 0).
    pub outputs: Vec<Vec<u64>>,
    /// Per cycle, the bits Icarus showed as X or Z (a whole hex digit is marked when any of its
    /// bits is unknown, because `%h` prints `X` for a partly unknown digit).
    pub xmask: Vec<Vec<u64>>,
}

/// How X/Z bits from Icarus compare with Verilator's 2-state values (Verilator starts every
/// register at 0; Icarus at X unless the Verilog initialises it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XPolicy {
    /// An X is a mismatch: the design shows state it never initialised.
    Fail,
    /// An X matches anything.
    Wildcard,
    /// An X matches anything in cycles before the given one (typically the cycles up to and
    /// including the first reset edge, whose pre-edge samples show unreset registers), and is a
    /// mismatch from then on.
    WildcardBefore(usize),
    /// As `WildcardBefore(before)`, and also: an X on a stream's payload output
    /// (`<p>_tdata/_tkeep/_tlast/_tuser`) matches anything in cycles where that stream's
    /// `<p>_tvalid` output is low in both simulators. Payload registers without reset are
    /// normal hardware and read X in Icarus until first loaded; this is the policy for
    /// designs built from streams.
    StreamPayload {
        /// Cycles before this one allow X everywhere.
        before: usize,
    },
}

impl XPolicy {
    fn x_allowed(self, cycle: usize) -> bool {
        match self {
            XPolicy::Fail => false,
            XPolicy::Wildcard => true,
            XPolicy::WildcardBefore(n) | XPolicy::StreamPayload { before: n } => cycle < n,
        }
    }
}

/// For each output, the output index of its stream's `tvalid` if it is a stream payload port.
fn payload_valids(layout: &Layout) -> Vec<Option<usize>> {
    layout
        .outputs
        .iter()
        .map(|p| {
            let prefix = ["_tdata", "_tkeep", "_tlast", "_tuser"]
                .iter()
                .find_map(|s| p.name.strip_suffix(s))?;
            let valid = format!("{prefix}_tvalid");
            layout
                .outputs
                .iter()
                .position(|q| q.name == valid && q.width == 1)
        })
        .collect()
}

/// The first cycle and port where two output traces differ.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Icarus and Verilator disagree first at cycle {cycle}, output `{port}`: Verilator {verilator}, Icarus {icarus} ({differing_cycles} of {cycles} cycles differ)")]
pub struct ReplayMismatch {
    /// Cycle index.
    pub cycle: usize,
    /// Output port name.
    pub port: String,
    /// Verilator's value in hex.
    pub verilator: String,
    /// Icarus's value in hex, `x` for unknown digits.
    pub icarus: String,
    /// How many cycles differ in total.
    pub differing_cycles: usize,
    /// Cycles compared.
    pub cycles: usize,
}

/// Are `iverilog` and `vvp` usable?
pub fn icarus_available() -> bool {
    tool("IVERILOG", "iverilog").is_ok() && tool("VVP", "vvp").is_ok()
}

/// Gate for tests that need Icarus, like [`crate::verilator::verilator_required`]: `true` when
/// usable; otherwise [`crate::require::require`] decides between failing (under
/// `NICGEN_REQUIRE_TOOLS=1`) and skipping.
pub fn icarus_required() -> bool {
    let probe = tool("IVERILOG", "iverilog")
        .and_then(|_| tool("VVP", "vvp"))
        .map(|_| ())
        .map_err(|e| e.to_string());
    crate::require::require("Icarus Verilog (iverilog, vvp)", probe)
}

fn tool(env: &str, default: &str) -> Result<PathBuf> {
    let name = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    if name.components().count() > 1 {
        return if name.is_file() {
            Ok(name)
        } else {
            Err(IcarusError::NotFound(format!(
                "{} does not exist",
                name.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .ok_or_else(|| IcarusError::NotFound(format!("`{}` is not on PATH", name.display())))
}

fn escape_ident(name: &str) -> String {
    let simple = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if simple {
        name.to_string()
    } else {
        format!("\\{name} ")
    }
}

/// The Verilog-2005 testbench for `cycles` cycles, reading `inputs.hex` and writing
/// `outputs.hex` in the current directory. Module name `nicgen_icarus_tb`.
pub fn testbench_verilog(layout: &Layout, cycles: usize) -> String {
    let in_bits = layout.in_words.max(1) * 64;
    let out_bits = layout.out_words.max(1) * 64;
    let mut v = String::new();
    let w = &mut v;
    writeln!(
        w,
        "// Generated by nicgen-tb: replays {cycles} cycles of recorded inputs on `{}`.",
        layout.top
    )
    .unwrap();
    writeln!(w, "`default_nettype none").unwrap();
    writeln!(w, "module nicgen_icarus_tb;").unwrap();
    writeln!(w, "    reg nicgen_clk;").unwrap();
    writeln!(w, "    reg [{}:0] nicgen_in;", in_bits - 1).unwrap();
    writeln!(w, "    reg [{}:0] nicgen_out;", out_bits - 1).unwrap();
    writeln!(
        w,
        "    reg [{}:0] nicgen_mem [0:{}];",
        in_bits - 1,
        cycles.max(1) - 1
    )
    .unwrap();
    writeln!(w, "    integer nicgen_i;").unwrap();
    writeln!(w, "    integer nicgen_fd;").unwrap();
    for (i, p) in layout.outputs.iter().enumerate() {
        writeln!(w, "    wire [{}:0] nicgen_o{i};", p.width - 1).unwrap();
    }
    let mut conns = Vec::new();
    if let Some(clk) = &layout.clock {
        conns.push(format!("        .{}(nicgen_clk)", escape_ident(clk)));
    }
    for p in &layout.inputs {
        conns.push(format!(
            "        .{}(nicgen_in[{} +: {}])",
            escape_ident(&p.name),
            p.offset * 64,
            p.width
        ));
    }
    for (i, p) in layout.outputs.iter().enumerate() {
        conns.push(format!("        .{}(nicgen_o{i})", escape_ident(&p.name)));
    }
    writeln!(
        w,
        "    {} dut (\n{}\n    );",
        escape_ident(&layout.top),
        conns.join(",\n")
    )
    .unwrap();
    writeln!(w, "    initial begin").unwrap();
    writeln!(w, "        nicgen_clk = 1'b0;").unwrap();
    writeln!(w, "        nicgen_in = {in_bits}'d0;").unwrap();
    writeln!(w, "        $readmemh(\"inputs.hex\", nicgen_mem);").unwrap();
    writeln!(w, "        nicgen_fd = $fopen(\"outputs.hex\", \"w\");").unwrap();
    writeln!(
        w,
        "        for (nicgen_i = 0; nicgen_i < {cycles}; nicgen_i = nicgen_i + 1) begin"
    )
    .unwrap();
    writeln!(w, "            nicgen_in = nicgen_mem[nicgen_i];").unwrap();
    writeln!(w, "            #1;").unwrap();
    writeln!(w, "            nicgen_out = {out_bits}'d0;").unwrap();
    for (i, p) in layout.outputs.iter().enumerate() {
        writeln!(
            w,
            "            nicgen_out[{} +: {}] = nicgen_o{i};",
            p.offset * 64,
            p.width
        )
        .unwrap();
    }
    writeln!(w, "            $fwrite(nicgen_fd, \"%h\\n\", nicgen_out);").unwrap();
    writeln!(w, "            #4 nicgen_clk = 1'b1;").unwrap();
    writeln!(w, "            #5 nicgen_clk = 1'b0;").unwrap();
    writeln!(w, "        end").unwrap();
    writeln!(w, "        $fclose(nicgen_fd);").unwrap();
    writeln!(w, "        $finish;").unwrap();
    writeln!(w, "    end").unwrap();
    writeln!(w, "endmodule").unwrap();
    writeln!(w, "`default_nettype wire").unwrap();
    v
}

/// Formats input buffers as `$readmemh` lines (most significant word first).
pub fn inputs_hex(layout: &Layout, inputs: &[Vec<u64>]) -> Result<String> {
    let words = layout.in_words.max(1);
    let mut s = String::with_capacity(inputs.len() * (words * 16 + 1));
    for (c, buf) in inputs.iter().enumerate() {
        if buf.len() != layout.in_words {
            return Err(IcarusError::Invalid(format!(
                "cycle {c}: input buffer has {} words, layout `{}` has {}",
                buf.len(),
                layout.top,
                layout.in_words
            )));
        }
        for i in (0..words).rev() {
            write!(s, "{:016x}", buf.get(i).copied().unwrap_or(0)).unwrap();
        }
        s.push('\n');
    }
    Ok(s)
}

/// Parses the testbench's output file into buffers and X masks.
pub fn parse_outputs(layout: &Layout, text: &str) -> Result<IcarusTrace> {
    let words = layout.out_words.max(1);
    let mut trace = IcarusTrace {
        outputs: Vec::new(),
        xmask: Vec::new(),
    };
    for (c, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.len() != words * 16 {
            return Err(IcarusError::Invalid(format!(
                "output line {c} has {} hex digits, expected {}: {line:?}",
                line.len(),
                words * 16
            )));
        }
        let mut out = vec![0u64; layout.out_words];
        let mut xm = vec![0u64; layout.out_words];
        for (k, ch) in line.chars().enumerate() {
            let digit = words * 16 - 1 - k; // digit index from the least significant end
            let (word, shift) = (digit / 16, (digit % 16) * 4);
            let (value, unknown) = match ch {
                'x' | 'X' | 'z' | 'Z' => (0, 0xf),
                _ => (
                    ch.to_digit(16).ok_or_else(|| {
                        IcarusError::Invalid(format!("output line {c}: bad hex digit {ch:?}"))
                    })? as u64,
                    0,
                ),
            };
            if word < layout.out_words {
                out[word] |= value << shift;
                xm[word] |= unknown << shift;
            }
        }
        trace.outputs.push(out);
        trace.xmask.push(xm);
    }
    Ok(trace)
}

/// Compares Verilator's output buffers with Icarus's, port by port, and reports the first
/// differing cycle and port.
pub fn compare_outputs(
    layout: &Layout,
    verilator: &[Vec<u64>],
    icarus: &IcarusTrace,
    policy: XPolicy,
) -> Result<(), ReplayMismatch> {
    let cycles = verilator.len().max(icarus.outputs.len());
    let mut first: Option<ReplayMismatch> = None;
    let mut differing = 0;
    let valids = payload_valids(layout);
    for c in 0..cycles {
        let (Some(v), Some(i), Some(x)) =
            (verilator.get(c), icarus.outputs.get(c), icarus.xmask.get(c))
        else {
            differing += 1;
            first.get_or_insert_with(|| ReplayMismatch {
                cycle: c,
                port: "<whole buffer>".into(),
                verilator: if verilator.get(c).is_some() {
                    "a value".into()
                } else {
                    "no cycle".into()
                },
                icarus: if icarus.outputs.get(c).is_some() {
                    "a value".into()
                } else {
                    "no cycle".into()
                },
                differing_cycles: 0,
                cycles,
            });
            continue;
        };
        let mut cycle_differs = false;
        for (p, valid) in layout.outputs.iter().zip(&valids) {
            let r = p.offset..p.offset + p.words;
            let payload_idle = matches!(policy, XPolicy::StreamPayload { .. })
                && valid.is_some_and(|vi| {
                    let w = layout.outputs[vi].offset;
                    v[w] == 0 && i[w] == 0 && x[w] == 0
                });
            let x_ok = policy.x_allowed(c) || payload_idle;
            let differs = r.clone().any(|k| {
                if x_ok {
                    (v[k] ^ i[k]) & !x[k] != 0
                } else {
                    v[k] != i[k] || x[k] != 0
                }
            });
            if differs {
                cycle_differs = true;
                if first.is_none() {
                    let mut ihex: Vec<char> = layout::words_to_hex(&i[r.clone()], p.width)
                        .chars()
                        .collect();
                    let xhex = layout::words_to_hex(&x[r.clone()], p.width);
                    for (d, m) in ihex.iter_mut().zip(xhex.chars()) {
                        if m != '0' {
                            *d = 'x';
                        }
                    }
                    first = Some(ReplayMismatch {
                        cycle: c,
                        port: p.name.clone(),
                        verilator: format!("0x{}", layout::words_to_hex(&v[r.clone()], p.width)),
                        icarus: format!("0x{}", ihex.into_iter().collect::<String>()),
                        differing_cycles: 0,
                        cycles,
                    });
                }
            }
        }
        if cycle_differs {
            differing += 1;
        }
    }
    match first {
        None => Ok(()),
        Some(mut m) => {
            m.differing_cycles = differing;
            Err(m)
        }
    }
}

/// Runs `inputs` (one input buffer per cycle) through Icarus on `files` (name, Verilog text)
/// with top `layout.top`, and returns the sampled outputs of every cycle.
pub fn run_icarus(
    files: &[(String, String)],
    layout: &Layout,
    inputs: &[Vec<u64>],
) -> Result<IcarusTrace> {
    let iverilog = tool("IVERILOG", "iverilog")?;
    let vvp = tool("VVP", "vvp")?;
    let dir = work_dir()?;
    let io = |context: String| move |source| IcarusError::Io { context, source };
    let mut paths = Vec::new();
    for (name, text) in files {
        if name.contains('/') || name.is_empty() || name.starts_with("nicgen_icarus") {
            return Err(IcarusError::Invalid(format!(
                "`{name}` is not a plain Verilog file name"
            )));
        }
        let p = dir.join(name);
        fs::write(&p, text).map_err(io(format!("writing {}", p.display())))?;
        paths.push(p);
    }
    let tb = dir.join("nicgen_icarus_tb.v");
    fs::write(&tb, testbench_verilog(layout, inputs.len()))
        .map_err(io(format!("writing {}", tb.display())))?;
    let hex = dir.join("inputs.hex");
    fs::write(&hex, inputs_hex(layout, inputs)?)
        .map_err(io(format!("writing {}", hex.display())))?;

    let mut compile = Command::new(&iverilog);
    compile
        .current_dir(&dir)
        .args(["-g2005", "-s", "nicgen_icarus_tb", "-o", "sim.vvp"])
        .arg(&tb)
        .args(&paths);
    run_tool(compile, "iverilog", &dir, Duration::from_secs(300))?;
    let mut sim = Command::new(&vvp);
    sim.current_dir(&dir).args(["-n", "sim.vvp"]);
    // Generous: Icarus runs some 10k-100k cycles/s on small designs.
    let budget = Duration::from_secs(120 + inputs.len() as u64 / 1000);
    run_tool(sim, "vvp", &dir, budget)?;
    let out_path = dir.join("outputs.hex");
    let text =
        fs::read_to_string(&out_path).map_err(io(format!("reading {}", out_path.display())))?;
    let trace = parse_outputs(layout, &text)?;
    if trace.outputs.len() != inputs.len() {
        return Err(IcarusError::Invalid(format!(
            "Icarus wrote {} cycles of output for {} cycles of input (files kept in {})",
            trace.outputs.len(),
            inputs.len(),
            dir.display()
        )));
    }
    let _ = fs::remove_dir_all(&dir);
    Ok(trace)
}

/// Replays a Verilator [`Recording`] on Icarus and compares every cycle.
pub fn replay(
    files: &[(String, String)],
    layout: &Layout,
    recording: &Recording,
    policy: XPolicy,
) -> Result<()> {
    let trace = run_icarus(files, layout, &recording.inputs)?;
    compare_outputs(layout, &recording.outputs, &trace, policy)?;
    Ok(())
}

fn work_dir() -> Result<PathBuf> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "nicgen-icarus-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|source| IcarusError::Io {
        context: format!("creating {}", dir.display()),
        source,
    })?;
    Ok(dir)
}

/// Runs a tool with a time budget, killing it when the budget is spent (a design that
/// oscillates would otherwise hang `vvp`).
fn run_tool(mut cmd: Command, what: &str, dir: &Path, budget: Duration) -> Result<()> {
    let line = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let log_path = dir.join(format!("{what}.log"));
    let log = fs::File::create(&log_path).map_err(|source| IcarusError::Io {
        context: format!("creating {}", log_path.display()),
        source,
    })?;
    let log2 = log.try_clone().map_err(|source| IcarusError::Io {
        context: "dup log".into(),
        source,
    })?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| IcarusError::NotFound(format!("cannot start {what}: {e}")))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|source| IcarusError::Io {
            context: format!("waiting for {what}"),
            source,
        })? {
            break s.to_string();
        }
        if start.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            break format!("killed after {budget:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = fs::read_to_string(&log_path).unwrap_or_default();
    let ok = status == "exit status: 0";
    // vvp exits 0 even after a runtime error such as an unreadable $readmemh file.
    let errors = output.lines().any(|l| l.starts_with("ERROR"));
    if ok && !errors {
        return Ok(());
    }
    let lines: Vec<&str> = output.lines().collect();
    Err(IcarusError::Failed {
        what: what.to_string(),
        command: line,
        status,
        output: lines[lines.len().saturating_sub(40)..].join("\n"),
        dir: dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::from_json(
            r#"{"top":"t","in_words":3,"out_words":3,
            "inputs":[{"name":"rst","width":1,"offset":0,"words":1},{"name":"d","width":100,"offset":1,"words":2}],
            "outputs":[{"name":"q","width":100,"offset":0,"words":2},{"name":"v","width":4,"offset":2,"words":1}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn testbench_connects_every_port() {
        let tb = testbench_verilog(&layout(), 7);
        assert!(tb.contains(".clk(nicgen_clk)"));
        assert!(tb.contains(".d(nicgen_in[64 +: 100])"));
        assert!(tb.contains(".q(nicgen_o0)"));
        assert!(tb.contains("nicgen_out[128 +: 4] = nicgen_o1;"));
        assert!(tb.contains("nicgen_i < 7;"));
        assert!(tb.contains("reg [191:0] nicgen_mem [0:6];"));
    }

    #[test]
    fn inputs_hex_is_most_significant_word_first() {
        let s = inputs_hex(&layout(), &[vec![1, 2, 3]]).unwrap();
        assert_eq!(s, "000000000000000300000000000000020000000000000001\n");
        assert!(inputs_hex(&layout(), &[vec![1, 2]])
            .unwrap_err()
            .to_string()
            .contains("2 words"));
    }

    #[test]
    fn parse_and_compare_with_x() {
        let l = layout();
        let line = format!("{:016x}{:016x}{:016x}\n", 5, 0xf, 0x1234);
        let t = parse_outputs(&l, &line).unwrap();
        assert_eq!(t.outputs, vec![vec![0x1234, 0xf, 5]]);
        assert!(compare_outputs(&l, &[vec![0x1234, 0xf, 5]], &t, XPolicy::Fail).is_ok());
        let m = compare_outputs(&l, &[vec![0x1234, 0xe, 5]], &t, XPolicy::Fail).unwrap_err();
        assert_eq!((m.cycle, m.port.as_str()), (0, "q"));
        assert_eq!(m.verilator, "0x00000000e0000000000001234");
        assert!(m.to_string().contains("cycle 0, output `q`"), "{m}");

        let xline = "000000000000000x".to_string() + &format!("{:016x}{:016x}\n", 0xf, 0x1234);
        let tx = parse_outputs(&l, &xline).unwrap();
        assert_eq!(tx.xmask[0], vec![0, 0, 0xf]);
        let m = compare_outputs(&l, &[vec![0x1234, 0xf, 5]], &tx, XPolicy::Fail).unwrap_err();
        assert_eq!((m.port.as_str(), m.icarus.as_str()), ("v", "0xx"));
        assert!(compare_outputs(&l, &[vec![0x1234, 0xf, 5]], &tx, XPolicy::Wildcard).is_ok());
        assert!(
            compare_outputs(&l, &[vec![0x1234, 0xf, 5]], &tx, XPolicy::WildcardBefore(1)).is_ok()
        );
        assert!(
            compare_outputs(&l, &[vec![0x1234, 0xf, 5]], &tx, XPolicy::WildcardBefore(0)).is_err()
        );
        // Stream payload X is fine while the stream's tvalid is low, not while it is high.
        let sl = Layout::from_json(
            r#"{"top":"t","in_words":0,"out_words":2,"inputs":[],
            "outputs":[{"name":"m_axis_tdata","width":8,"offset":0,"words":1},
                       {"name":"m_axis_tvalid","width":1,"offset":1,"words":1}]}"#,
        )
        .unwrap();
        let st = parse_outputs(
            &sl,
            &format!(
                "{:016x}{}\n{:016x}{}\n",
                0, "00000000000000xx", 1, "00000000000000xx"
            ),
        )
        .unwrap();
        let policy = XPolicy::StreamPayload { before: 0 };
        let m = compare_outputs(&sl, &[vec![0, 0], vec![0, 1]], &st, policy).unwrap_err();
        assert_eq!(
            (m.cycle, m.port.as_str(), m.differing_cycles),
            (1, "m_axis_tdata", 1)
        );
        // Missing cycles are mismatches too.
        assert!(compare_outputs(
            &l,
            &[vec![0x1234, 0xf, 5], vec![0, 0, 0]],
            &t,
            XPolicy::Fail
        )
        .is_err());
        assert!(parse_outputs(&l, "12\n").is_err());
    }

    #[test]
    fn escapes_odd_identifiers() {
        assert_eq!(escape_ident("s_axis_tdata"), "s_axis_tdata");
        assert_eq!(escape_ident("a.b"), "\\a.b ");
    }
}
