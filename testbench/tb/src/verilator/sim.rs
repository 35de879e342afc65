//! One running instance of a model: the per-cycle API the testbenches drive.
//!
//! A [`Sim`] keeps its input and output buffers on the Rust side in the layout's word order and
//! hands both to the shim once per cycle, so a cycle costs one FFI call however many ports are
//! touched; `set*` and `get*` only read and write those buffers, by [`PortId`] resolved once
//! from a name. After [`Sim::cycle`] the outputs are the values sampled just before that
//! cycle's rising edge, so a handshake took place in a cycle iff `valid && ready` in the
//! buffers. Tracing is a window of cycles (opened and closed by the cycle loop itself, so long
//! runs trace only the part of interest), and a recording keeps every cycle's buffers for
//! replay on another simulator (`crate::icarus`).

use super::model::Model;
use super::{io_err, Result, VerilatorError};
use crate::layout::{self, Dir, Layout, PortId};
use num_bigint::BigUint;
use std::ffi::{c_void, CString};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug)]
struct TraceWindow {
    start: u64,
    end: u64,
    path: PathBuf,
    open: bool,
}

/// Input and output buffers of every cycle, captured by [`Sim::record_inputs`], for replay on
/// another simulator (see [`crate::icarus`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Input buffer applied in each cycle.
    pub inputs: Vec<Vec<u64>>,
    /// Output buffer sampled in each cycle (pre-edge values).
    pub outputs: Vec<Vec<u64>>,
}

/// One running instance of a model. `Send` (it can move to another thread) but not `Sync`.
///
/// Inputs keep their value until set again. After [`cycle`](Self::cycle), [`get_u64`](Self::get_u64)
/// and friends return the values sampled just before that cycle's rising edge; reading an input
/// returns what was applied.
pub struct Sim {
    model: Model,
    handle: *mut c_void,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    trace: Option<TraceWindow>,
    recording: Option<Recording>,
    /// Per input word, the bits that belong to some port (for `cycle_raw`'s check).
    input_mask: Vec<u64>,
    /// The tag the model's [`InstanceHooks`](super::InstanceHooks) gave this instance.
    hook_tag: u64,
}

// SAFETY: the handle is an instance with its own VerilatedContext, touched only through
// `&mut self` (or `&self` for read-only `nicgen_cycles`), so one thread at a time uses it;
// Verilator supports driving a context from any single thread at a time.
unsafe impl Send for Sim {}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("top", &self.model.top())
            .field("cycles", &self.cycles())
            .finish()
    }
}

impl Sim {
    /// A new instance of `model` (`nicgen_new`): all inputs zero, cycle 0. The handle is freed
    /// by `Drop`, so creating and freeing it live side by side here.
    pub(super) fn new(model: Model) -> Sim {
        // SAFETY: ABI call without preconditions; it returns an owned handle.
        let handle = unsafe { (model.api().new)() };
        assert!(
            !handle.is_null(),
            "nicgen_new of model `{}` returned NULL",
            model.top()
        );
        let l = model.layout();
        let mut input_mask = vec![0u64; l.in_words];
        for p in &l.inputs {
            input_mask[p.offset..p.offset + p.words].fill(u64::MAX);
            input_mask[p.offset + p.words - 1] = layout::last_word_mask(p.width);
        }
        let (in_words, out_words) = (l.in_words, l.out_words);
        Sim {
            model,
            handle,
            inputs: vec![0; in_words],
            outputs: vec![0; out_words],
            trace: None,
            recording: None,
            input_mask,
            hook_tag: 0,
        }
    }

    pub(super) fn set_hook_tag(&mut self, tag: u64) {
        self.hook_tag = tag;
    }

    /// The model this instance belongs to.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The port layout.
    pub fn layout(&self) -> &Layout {
        self.model.layout()
    }

    /// The top module's name.
    pub fn top(&self) -> &str {
        self.model.top()
    }

    /// Lengths of the input and output buffers in words, `(in_words, out_words)`.
    pub fn layout_words(&self) -> (usize, usize) {
        (self.inputs.len(), self.outputs.len())
    }

    /// Resolves a port name; the error lists every port.
    pub fn port(&self, name: &str) -> Result<PortId> {
        self.layout()
            .find(name)
            .ok_or_else(|| VerilatorError::NoSuchPort {
                top: self.model.top().to_string(),
                name: name.to_string(),
                available: self.layout().port_list(),
            })
    }

    /// Resolves a port name, `None` if it does not exist (for optional signals).
    pub fn try_port(&self, name: &str) -> Option<PortId> {
        self.layout().find(name)
    }

    /// Width of a port in bits.
    pub fn width(&self, port: PortId) -> u32 {
        self.layout().get(port).width
    }

    /// Name of a port.
    pub fn port_name(&self, port: PortId) -> &str {
        &self.layout().get(port).name
    }

    fn input_words(&mut self, port: PortId, what: &str) -> (&mut [u64], u32) {
        let layout = self.model.layout();
        let p = layout.get(port);
        assert!(
            port.dir == Dir::Input,
            "{what}: `{}` is an output of `{}`; only inputs can be set",
            p.name,
            layout.top
        );
        (&mut self.inputs[p.offset..p.offset + p.words], p.width)
    }

    fn words(&self, port: PortId) -> &[u64] {
        let p = self.layout().get(port);
        match port.dir {
            Dir::Input => &self.inputs[p.offset..p.offset + p.words],
            Dir::Output => &self.outputs[p.offset..p.offset + p.words],
        }
    }

    /// Sets an input (upper words of a port wider than 64 bits become zero).
    /// Panics if `port` is an output or `value` does not fit the port's width.
    pub fn set(&mut self, port: PortId, value: u64) {
        let width = self.width(port);
        assert!(
            width >= 64 || value >> width == 0,
            "set: value {value:#x} does not fit input `{}` ({width} bits)",
            self.port_name(port)
        );
        let (words, _) = self.input_words(port, "set");
        words.fill(0);
        words[0] = value;
    }

    /// Sets an input from a `bool` (1-bit ports, typically).
    pub fn set_bool(&mut self, port: PortId, value: bool) {
        self.set(port, u64::from(value));
    }

    /// Sets an input of any width. Panics if it does not fit.
    pub fn set_big(&mut self, port: PortId, value: &BigUint) {
        let (words, width) = self.input_words(port, "set_big");
        if layout::big_to_words(value, width, words).is_none() {
            panic!(
                "set_big: value {value:#x} does not fit input `{}` ({width} bits)",
                self.port_name(port)
            );
        }
    }

    /// Sets an input from little-endian bytes (byte 0 = bits 7..0). Missing high bytes are zero.
    /// Panics if the bytes hold bits beyond the port's width.
    pub fn set_bytes_le(&mut self, port: PortId, bytes: &[u8]) {
        let width = self.width(port);
        let nbytes = (width as usize).div_ceil(8);
        let fits = bytes.len() <= nbytes
            && (bytes.len() < nbytes
                || width.is_multiple_of(8)
                || bytes[nbytes - 1] >> (width % 8) == 0);
        assert!(
            fits,
            "set_bytes_le: {} bytes do not fit input `{}` ({width} bits)",
            bytes.len(),
            self.port_name(port)
        );
        let (words, _) = self.input_words(port, "set_bytes_le");
        words.fill(0);
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= u64::from(*b) << ((i % 8) * 8);
        }
    }

    /// Value of a port of at most 64 bits. Panics for wider ports (use [`get_big`](Self::get_big)
    /// or [`get_bytes_le`](Self::get_bytes_le)).
    pub fn get_u64(&self, port: PortId) -> u64 {
        let p = self.layout().get(port);
        assert!(
            p.width <= 64,
            "get_u64: port `{}` is {} bits wide; use get_big or get_bytes_le",
            p.name,
            p.width
        );
        self.words(port)[0]
    }

    /// Value of a port as a `bool`: true iff non-zero.
    pub fn get_bool(&self, port: PortId) -> bool {
        self.words(port).iter().any(|w| *w != 0)
    }

    /// Value of a port of any width.
    pub fn get_big(&self, port: PortId) -> BigUint {
        layout::words_to_big(self.words(port))
    }

    /// Value of a port as `ceil(width / 8)` little-endian bytes.
    pub fn get_bytes_le(&self, port: PortId) -> Vec<u8> {
        layout::words_to_bytes_le(self.words(port), self.width(port))
    }

    /// The raw input buffer (as applied in the last cycle, plus any `set` since).
    pub fn input_words_raw(&self) -> &[u64] {
        &self.inputs
    }

    /// The raw output buffer sampled by the last `cycle` or `eval`.
    pub fn output_words_raw(&self) -> &[u64] {
        &self.outputs
    }

    /// One clock cycle: apply inputs, sample outputs before the rising edge, clock.
    pub fn cycle(&mut self) {
        let now = self.cycles();
        if let Some(w) = &mut self.trace {
            if !w.open && now >= w.start {
                let (path, model) = (w.path.clone(), self.model.clone());
                if let Err(e) = open_trace(&model, self.handle, &path) {
                    panic!("trace window [{}, {}): {e}", w.start, w.end);
                }
                w.open = true;
            }
        }
        let api = self.model.api();
        // SAFETY: the buffers have the layout's lengths, which the shim indexes within.
        unsafe { (api.cycle)(self.handle, self.inputs.as_ptr(), self.outputs.as_mut_ptr()) };
        if let Some(r) = &mut self.recording {
            r.inputs.push(self.inputs.clone());
            r.outputs.push(self.outputs.clone());
        }
        if self
            .trace
            .as_ref()
            .is_some_and(|w| w.open && now + 1 >= w.end)
        {
            self.stop_trace();
        }
    }

    /// One cycle on whole buffers, for generated typed bindings: copies `inputs` into the input
    /// buffer, runs [`cycle`](Self::cycle) (so trace windows and recording apply), and copies
    /// the sampled outputs into `outputs`. Panics if a length differs from the layout, or if
    /// `inputs` has bits set above a port's width or between ports.
    pub fn cycle_raw(&mut self, inputs: &[u64], outputs: &mut [u64]) {
        let (iw, ow) = self.layout_words();
        assert!(
            inputs.len() == iw && outputs.len() == ow,
            "cycle_raw: buffers of {}/{} words for model `{}` with {iw}/{ow}",
            inputs.len(),
            outputs.len(),
            self.top()
        );
        self.check_clean(inputs);
        self.inputs.copy_from_slice(inputs);
        self.cycle();
        outputs.copy_from_slice(&self.outputs);
    }

    fn check_clean(&self, inputs: &[u64]) {
        if let Some(k) = inputs
            .iter()
            .zip(&self.input_mask)
            .position(|(w, a)| w & !a != 0)
        {
            panic!(
                "cycle_raw: input word {k} of `{}` has bits set outside every port",
                self.top()
            );
        }
    }

    /// Runs `n` cycles with unchanged inputs.
    pub fn cycles_n(&mut self, n: u64) {
        for _ in 0..n {
            self.cycle();
        }
    }

    /// Applies inputs and evaluates without a clock edge (combinational outputs update).
    pub fn eval(&mut self) {
        let api = self.model.api();
        // SAFETY: as in `cycle`.
        unsafe { (api.eval)(self.handle, self.inputs.as_ptr(), self.outputs.as_mut_ptr()) };
    }

    /// Number of cycles run so far.
    pub fn cycles(&self) -> u64 {
        // SAFETY: read-only ABI call on a live handle.
        unsafe { (self.model.api().cycles)(self.handle) }
    }

    /// Writes an FST trace of cycles `start..end` to `path`: the file is opened when cycle `start`
    /// begins (now, if that has passed) and closed after cycle `end - 1`. Replaces a pending or
    /// open window. Fails if the model was built without tracing.
    pub fn trace_window(&mut self, start: u64, end: u64, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref().to_path_buf();
        if self.model.traced() == Some(false) {
            return Err(VerilatorError::TraceUnavailable {
                top: self.model.top().to_string(),
            });
        }
        if start >= end {
            return Err(VerilatorError::Invalid(format!(
                "empty trace window [{start}, {end})"
            )));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        self.stop_trace();
        let mut w = TraceWindow {
            start,
            end,
            path,
            open: false,
        };
        if self.cycles() >= start {
            open_trace(&self.model, self.handle, &w.path)?;
            w.open = true;
        }
        self.trace = Some(w);
        Ok(())
    }

    /// Closes the trace file now (if open) and drops any pending window.
    pub fn stop_trace(&mut self) {
        if let Some(w) = self.trace.take() {
            if w.open {
                // SAFETY: live handle.
                unsafe { (self.model.api().trace_close)(self.handle) };
            }
        }
    }

    /// Starts (`true`) or stops recording every cycle's input and output buffers. Starting
    /// clears a previous recording.
    pub fn record_inputs(&mut self, on: bool) {
        self.recording = if on { Some(Recording::default()) } else { None };
    }

    /// Input buffers recorded so far, one per cycle.
    pub fn recorded(&self) -> Vec<Vec<u64>> {
        self.recording
            .as_ref()
            .map(|r| r.inputs.clone())
            .unwrap_or_default()
    }

    /// Output buffers recorded so far, one per cycle.
    pub fn recorded_outputs(&self) -> Vec<Vec<u64>> {
        self.recording
            .as_ref()
            .map(|r| r.outputs.clone())
            .unwrap_or_default()
    }

    /// Takes the recording so far and keeps recording into a fresh one (if recording).
    pub fn take_recording(&mut self) -> Recording {
        match &mut self.recording {
            Some(r) => std::mem::take(r),
            None => Recording::default(),
        }
    }
}

fn open_trace(model: &Model, handle: *mut c_void, path: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        VerilatorError::Invalid(format!("trace path {} contains NUL", path.display()))
    })?;
    // SAFETY: live handle, NUL-terminated path.
    let code = unsafe { (model.api().trace_open)(handle, c.as_ptr()) };
    match code {
        0 => Ok(()),
        -1 => Err(VerilatorError::TraceUnavailable {
            top: model.top().to_string(),
        }),
        code => Err(VerilatorError::TraceOpen {
            path: path.to_path_buf(),
            code,
        }),
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(h) = self.model.hooks().cloned() {
            h.dropped(self.hook_tag, self, std::thread::panicking());
        }
        self.stop_trace();
        // SAFETY: the handle came from nicgen_new and is freed exactly once.
        unsafe { (self.model.api().free)(self.handle) };
    }
}
