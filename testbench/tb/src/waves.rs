//! Waveforms: FST dumps of a model's signals, for a person with GTKWave or Surfer.
//!
//! Two ways to get one:
//! - **Asked for** (`nicgen sim ... --trace FILE.fst [--trace-window FROM..TO]`): the model is
//!   built with tracing and handed out with [`TraceFirstInstance`] hooks, so the run's instance
//!   dumps the [`Window`] without the runner knowing about tracing.
//! - **On a failure** (block and path tests, no flag): the test builds its models through
//!   [`watch`]. When a check fails while a watched instance is alive, the harness writes an FST
//!   of the cycles around the first mismatch to [`wave_path`] and prints the path and the
//!   command that opens it.
//!
//! # Why a failure waveform re-runs the test
//! A traced model is slower to build and to run, so tests build untraced models and pay
//! nothing while they pass. When a check fails, the harness knows which instance ran (the
//! n-th instance of the k-th watched model of the test: the one the panic unwinds through, or
//! else the one that ended last) and the cycle it had reached; the cycle of the first mismatch
//! is the one [`mark_mismatch`] recorded, if a check knew it. The tests' stimulus is seeded, so
//! the same test run again goes through the same cycles: the harness runs the test binary
//! again for that test alone, with the plan in [`PLAN_ENV`]. In that run the k-th watched
//! model is built with tracing and its n-th instance dumps cycles `mismatch - BEFORE ..
//! mismatch + AFTER` (without a mark, the [`UNMARKED`] cycles before the failure); the re-run
//! fails at the same check, and dropping the instance closes the file. The first run then
//! checks the file ([`check_fst`]) and prints where it is and how to open it.
//!
//! # Cycles and time
//! Cycles are counted from 0 when an instance is created, reset included ([`Sim::cycles`]).
//! The shim dumps cycle `c` at time `2c` (inputs applied, outputs sampled) and `2c + 1` (after
//! the rising edge), so in the viewer cycle `c` starts at time `2c`.

use crate::verilator::{target_dir, InstanceHooks, Model, Sim};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

/// Cycles dumped before the first mismatch of a failing test.
pub const BEFORE: u64 = 5000;
/// Cycles dumped after it (the re-run stops at the failing check, so the file may end earlier).
pub const AFTER: u64 = 500;
/// Cycles dumped before the failing check when no check marked the mismatch's cycle: the
/// whole run of a block test, the last part of a long path test.
pub const UNMARKED: u64 = 50_000;
/// Set to `0` to turn failure waveforms off (no re-run on a failure).
pub const WAVES_ENV: &str = "NICGEN_WAVES";
/// The plan of a re-run: `model<TAB>instance<TAB>from<TAB>to<TAB>path`. Set by the harness in
/// the process it starts; a run with it set writes the waveform and never re-runs again.
pub const PLAN_ENV: &str = "NICGEN_WAVES_PLAN";

/// A window of cycles to dump: `from` up to but not including `to` (`None`: to the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from: u64,
    pub to: Option<u64>,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window { from: 0, to: None };
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to {
            Some(to) => write!(f, "{}..{to}", self.from),
            None => write!(f, "{}..", self.from),
        }
    }
}

/// Parses `FROM..TO` (cycles, `TO` excluded) or `FROM..` (to the end). The error says what was
/// wrong and what to write.
pub fn parse_window(s: &str) -> Result<Window, String> {
    const HOW: &str = "write FROM..TO in cycles, TO excluded (e.g. 1000..2000), or FROM.. for \
                       everything from FROM on";
    let Some((a, b)) = s.split_once("..") else {
        return Err(format!("`{s}` is not a cycle range; {HOW}"));
    };
    let num = |t: &str, what: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("{what} `{t}` of `{s}` is not a cycle number; {HOW}"))
    };
    let from = num(a, "FROM")?;
    let to = if b.trim().is_empty() {
        None
    } else {
        Some(num(b, "TO")?)
    };
    match to {
        Some(to) if from > to => Err(format!(
            "`{s}` runs backwards: FROM ({from}) is after TO ({to}); {HOW}"
        )),
        Some(to) if from == to => Err(format!("`{s}` holds no cycle (TO is excluded); {HOW}")),
        _ => Ok(Window { from, to }),
    }
}

/// How to open `path`: the commands for GTKWave and Surfer.
pub fn open_hint(path: &Path) -> String {
    let p = shell_quote(&path.display().to_string());
    format!("open it with: gtkwave {p}   (or: surfer {p})")
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,=:@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

// ---------------------------------------------------------------------------------------------
// Asked-for traces

/// Hooks that make the first instance of a model dump `window` to `path`; later instances of
/// the same handle are not traced. The model must have been built with tracing.
pub struct TraceFirstInstance {
    path: PathBuf,
    window: Window,
    created: AtomicU64,
}

impl TraceFirstInstance {
    pub fn new(path: impl Into<PathBuf>, window: Window) -> Self {
        TraceFirstInstance {
            path: path.into(),
            window,
            created: AtomicU64::new(0),
        }
    }
}

impl InstanceHooks for TraceFirstInstance {
    fn created(&self, sim: &mut Sim) -> u64 {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        if n == 0 {
            let to = self.window.to.unwrap_or(u64::MAX);
            if let Err(e) = sim.trace_window(self.window.from, to, &self.path) {
                panic!("cannot trace {}: {e}", self.path.display());
            }
        }
        n
    }
}

// ---------------------------------------------------------------------------------------------
// Checking a file

/// What the header of a complete FST file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FstInfo {
    /// First and last time dumped.
    pub start_time: u64,
    pub end_time: u64,
    /// Scopes and variables in the hierarchy.
    pub scopes: u64,
    pub vars: u64,
    /// Value-change blocks.
    pub sections: u64,
}

const FST_HDR_LEN: u64 = 329;
const FST_DOUBLE_ENDTEST: f64 = std::f64::consts::E;

/// Checks that `path` is a complete FST file a viewer can open: the header block first (with
/// FST's endianness test value), then blocks whose lengths add up to the file exactly, none
/// left unfinished by a writer that did not close, a hierarchy, a geometry and as many
/// value-change blocks as the header counts (at least one). This reads the block structure
/// gtkwave's `fstapi` reader walks; it does not decompress the blocks.
pub fn check_fst(path: &Path) -> Result<FstInfo, String> {
    let b = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let be = |at: usize| -> u64 { u64::from_be_bytes(b[at..at + 8].try_into().unwrap()) };
    if b.len() < 1 + FST_HDR_LEN as usize {
        return Err(format!(
            "{} is {} bytes, shorter than an FST header",
            path.display(),
            b.len()
        ));
    }
    if b[0] != 0 || be(1) != FST_HDR_LEN {
        return Err(format!(
            "{} does not start with an FST header",
            path.display()
        ));
    }
    let endtest = [
        f64::from_le_bytes(b[25..33].try_into().unwrap()),
        f64::from_be_bytes(b[25..33].try_into().unwrap()),
    ];
    if !endtest.contains(&FST_DOUBLE_ENDTEST) {
        return Err(format!(
            "{}: the FST header's endianness test value is wrong",
            path.display()
        ));
    }
    let info = FstInfo {
        start_time: be(9),
        end_time: be(17),
        scopes: be(41),
        vars: be(49),
        sections: be(65),
    };
    let (mut pos, mut hier, mut geom, mut vc) = (0usize, 0, 0, 0u64);
    while pos < b.len() {
        let kind = b[pos];
        if pos + 9 > b.len() {
            return Err(format!("{}: truncated block at byte {pos}", path.display()));
        }
        let len = be(pos + 1);
        match kind {
            0 | 2 => {}
            1 | 5 | 8 => vc += 1,
            3 => geom += 1,
            4 | 6 | 7 => hier += 1,
            254 => return Err(format!("{}: a gzip-wrapped FST", path.display())),
            255 => {
                return Err(format!(
                    "{}: block at byte {pos} unfinished (the writer never closed the file)",
                    path.display()
                ))
            }
            k => return Err(format!("{}: unknown FST block type {k}", path.display())),
        }
        if len < 8 || pos as u64 + 1 + len > b.len() as u64 {
            return Err(format!(
                "{}: block at byte {pos} claims {len} bytes, past the end of the file",
                path.display()
            ));
        }
        pos += 1 + len as usize;
    }
    if hier == 0 || geom == 0 {
        return Err(format!(
            "{}: no signal hierarchy (the writer never closed the file)",
            path.display()
        ));
    }
    if vc == 0 || vc != info.sections || info.vars == 0 || info.end_time < info.start_time {
        return Err(format!(
            "{}: {vc} value-change blocks, header says {} sections, {} variables, time {}..{}",
            path.display(),
            info.sections,
            info.vars,
            info.start_time,
            info.end_time
        ));
    }
    Ok(info)
}

// ---------------------------------------------------------------------------------------------
// Failure waveforms

thread_local! {
    /// Watched models built so far by this thread (one thread per test under libtest).
    static MODELS: Cell<u64> = const { Cell::new(0) };
    /// Watched instances alive on this thread.
    static ALIVE: Cell<u64> = const { Cell::new(0) };
    /// The watched instance that ended last on this thread, while nothing failed.
    static LAST: RefCell<Option<Ended>> = const { RefCell::new(None) };
    /// The cycle of the first mismatch, when a check knows it.
    static MARK: Cell<Option<u64>> = const { Cell::new(None) };
    /// This thread already handled a failure.
    static HANDLED: Cell<bool> = const { Cell::new(false) };
}

/// Where a watched instance was when it ended.
struct Ended {
    model: u64,
    instance: u64,
    cycles: u64,
    top: String,
}

/// A re-run's plan, from [`PLAN_ENV`].
struct Plan {
    model: u64,
    instance: u64,
    window: Window,
    path: PathBuf,
}

impl Plan {
    fn from_env() -> Option<Plan> {
        let v = std::env::var(PLAN_ENV).ok()?;
        let mut f = v.splitn(5, '\t');
        let mut num = || f.next()?.parse::<u64>().ok();
        let (model, instance, from, to) = (num()?, num()?, num()?, num()?);
        let path = PathBuf::from(f.next()?);
        Some(Plan {
            model,
            instance,
            window: Window { from, to: Some(to) },
            path,
        })
    }
}

/// Builds a test's model so that a failing check leaves a waveform (see the module docs).
/// `build(trace)` builds the model with or without FST tracing; it is called with `false`
/// except in the re-run that writes the waveform, where the planned model gets `true`.
///
/// The failure is caught where it shows: an instance of the model dropped by the unwinding
/// panic (the check failed with it alive), or, when none is alive, by a panic hook (installed
/// once, after the one before it) that takes the instance of a watched model that ended last
/// on the test's thread (a runner that returned its results before the test checked them).
pub fn watch<E>(build: impl FnOnce(bool) -> Result<Model, E>) -> Result<Model, E> {
    let ordinal = MODELS.with(|m| {
        let n = m.get();
        m.set(n + 1);
        n
    });
    if let Some(plan) = Plan::from_env() {
        if plan.model != ordinal {
            return build(false);
        }
        let model = build(true)?;
        return Ok(model.with_hooks(Arc::new(TraceNth {
            plan,
            created: AtomicU64::new(0),
        })));
    }
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            before(info);
            if ALIVE.with(Cell::get) == 0 {
                if let Some(e) = LAST.with(|l| l.borrow_mut().take()) {
                    failed(e);
                }
            }
        }));
    });
    let model = build(false)?;
    Ok(model.with_hooks(Arc::new(Watch {
        model: ordinal,
        created: AtomicU64::new(0),
    })))
}

/// Records that the first mismatch of the running test shows at `cycle` of the instance that
/// is checked (the cycle a wrong frame completed, say). The failure waveform is centred there
/// rather than on the cycle the check failed at. Only the first mark counts.
pub fn mark_mismatch(cycle: u64) {
    MARK.with(|m| {
        if m.get().is_none() {
            m.set(Some(cycle));
        }
    });
}

/// Where the failure waveform of test `test` (its libtest name, `module::name`) of the running
/// test binary goes: `<target>/nicgen-waves/<binary>/<module.name>.fst`.
pub fn wave_path(test: &str) -> PathBuf {
    let dir = target_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("nicgen-waves");
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "test".into());
    // Test binaries are named `<name>-<hash>`.
    let bin = match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    };
    let file: String = test
        .replace("::", ".")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(bin).join(format!("{file}.fst"))
}

/// The hooks of a watched model in a normal run: number the instances, keep the last one that
/// ended, and on a failure with one alive, write the waveform.
struct Watch {
    model: u64,
    created: AtomicU64,
}

impl InstanceHooks for Watch {
    fn created(&self, _sim: &mut Sim) -> u64 {
        ALIVE.with(|a| a.set(a.get() + 1));
        self.created.fetch_add(1, Ordering::Relaxed)
    }

    fn dropped(&self, instance: u64, sim: &Sim, panicking: bool) {
        ALIVE.with(|a| a.set(a.get().saturating_sub(1)));
        let e = Ended {
            model: self.model,
            instance,
            cycles: sim.cycles(),
            top: sim.top().to_string(),
        };
        if panicking {
            failed(e);
        } else {
            LAST.with(|l| *l.borrow_mut() = Some(e));
        }
    }
}

/// A check failed after instance `e` ran: write and announce the waveform, once per thread.
fn failed(e: Ended) {
    if HANDLED.with(|h| h.replace(true)) || std::env::var(WAVES_ENV).is_ok_and(|v| v == "0") {
        return;
    }
    let mark = MARK.with(Cell::take).filter(|&c| c <= e.cycles);
    let (window, around) = match mark {
        Some(m) => (
            Window {
                from: m.saturating_sub(BEFORE),
                to: Some(m + AFTER),
            },
            format!("around the first mismatch at cycle {m}"),
        ),
        None => (
            Window {
                from: e.cycles.saturating_sub(UNMARKED),
                to: Some(e.cycles + AFTER),
            },
            format!(
                "up to cycle {}, where the instance stood at the failure",
                e.cycles
            ),
        ),
    };
    match write_failure_wave(e.model, e.instance, window) {
        Ok((path, info)) => eprintln!(
            "\nwaveform of this failure: {}\n  instance {} of `{}`, cycles {}..{} {around} \
             (cycle c at time 2c)\n  {}",
            path.display(),
            e.instance,
            e.top,
            info.start_time / 2,
            info.end_time / 2 + 1,
            open_hint(&path)
        ),
        Err(why) => eprintln!("\nno waveform of this failure: {why}"),
    }
}

/// Runs the current test again in a child process with the plan; returns the checked file.
fn write_failure_wave(
    model: u64,
    instance: u64,
    window: Window,
) -> Result<(PathBuf, FstInfo), String> {
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(n) if n != "main" => n.to_string(),
        _ => return Err("not inside a libtest test thread (its name names the test)".into()),
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let path = wave_path(&test);
    let log = path.with_extension("log");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let _ = std::fs::remove_file(&path);
    let out =
        std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let plan = format!(
        "{model}\t{instance}\t{}\t{}\t{}",
        window.from,
        window.to.unwrap_or(u64::MAX),
        path.display()
    );
    Command::new(&exe)
        .args([&test, "--exact", "--include-ignored", "--test-threads=1"])
        .arg("--nocapture")
        .env(PLAN_ENV, plan)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot re-run {} {test}: {e}", exe.display()))?;
    let info = check_fst(&path)
        .map_err(|e| format!("{e} (the re-run's output is in {})", log.display()))?;
    let _ = std::fs::remove_file(&log);
    Ok((path, info))
}

/// The hooks of the planned model in a re-run: its n-th instance dumps the window.
struct TraceNth {
    plan: Plan,
    created: AtomicU64,
}

impl InstanceHooks for TraceNth {
    fn created(&self, sim: &mut Sim) -> u64 {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        if n == self.plan.instance {
            let w = self.plan.window;
            if let Err(e) = sim.trace_window(w.from, w.to.unwrap_or(u64::MAX), &self.plan.path) {
                panic!("cannot trace {}: {e}", self.plan.path.display());
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_and_bad_ones_say_what_to_write() {
        assert_eq!(
            parse_window("10..20"),
            Ok(Window {
                from: 10,
                to: Some(20)
            })
        );
        assert_eq!(parse_window("5.."), Ok(Window { from: 5, to: None }));
        for bad in ["20..10", "7..7", "x..3", "3..y", "12", "-1..4"] {
            let e = parse_window(bad).unwrap_err();
            assert!(
                e.contains(&format!("`{bad}`")) && e.contains("FROM..TO"),
                "{e}"
            );
        }
        assert!(parse_window("20..10").unwrap_err().contains("is after TO"));
        assert!(parse_window("7..7").unwrap_err().contains("holds no cycle"));
    }

    #[test]
    fn wave_paths_name_the_binary_and_the_test() {
        let p = wave_path("waves::broken_block");
        assert!(p.ends_with("waves.broken_block.fst"), "{}", p.display());
        assert!(
            p.parent()
                .unwrap()
                .parent()
                .unwrap()
                .ends_with("nicgen-waves"),
            "{}",
            p.display()
        );
    }

    #[test]
    fn open_hint_quotes_odd_paths() {
        assert_eq!(
            open_hint(Path::new("/t/a.fst")),
            "open it with: gtkwave /t/a.fst   (or: surfer /t/a.fst)"
        );
        assert!(open_hint(Path::new("/t/a b.fst")).contains("gtkwave '/t/a b.fst'"));
    }

    #[test]
    fn check_fst_refuses_what_is_not_a_closed_fst() {
        let dir = std::env::temp_dir().join(format!("nicgen-waves-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.fst");
        std::fs::write(&p, b"not an fst").unwrap();
        assert!(check_fst(&p)
            .unwrap_err()
            .contains("shorter than an FST header"));
        let mut hdr = vec![0u8; 330];
        hdr[1..9].copy_from_slice(&FST_HDR_LEN.to_be_bytes());
        hdr[25..33].copy_from_slice(&FST_DOUBLE_ENDTEST.to_le_bytes());
        // A header alone: no hierarchy, as a writer that never closed leaves it.
        std::fs::write(&p, &hdr).unwrap();
        assert!(check_fst(&p).unwrap_err().contains("no signal hierarchy"));
        // A block being written.
        let mut open = hdr.clone();
        open.extend([255u8, 0, 0, 0, 0, 0, 0, 0, 8]);
        std::fs::write(&p, &open).unwrap();
        assert!(check_fst(&p).unwrap_err().contains("unfinished"));
        // A block longer than the file.
        let mut long = hdr.clone();
        long.extend([4u8, 0, 0, 0, 0, 0, 0, 1, 0]);
        std::fs::write(&p, &long).unwrap();
        assert!(check_fst(&p).unwrap_err().contains("past the end"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
