//! `--trace FILE.fst [--trace-window FROM..TO]` of every `nicgen sim` command: a waveform of
//! the run for GTKWave or Surfer.
//!
//! The model is built with FST tracing only when asked (a traced model has its own cache entry
//! and builds and runs slower), and handed to the runner with hooks that make its instance dump
//! the window ([`nicgen_tb::waves::TraceFirstInstance`]), so the runners do not know about
//! tracing. Cycles count from 0 when the simulation starts, reset included; cycle `c` is at time
//! `2c` in the file.

use crate::failure::Failure;
use anyhow::{anyhow, Result};
use nicgen_tb::waves::{check_fst, open_hint, TraceFirstInstance, Window};
use nicgen_tb::Model;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A requested waveform: where, and which cycles.
#[derive(Clone, Debug)]
pub struct Trace {
    pub path: PathBuf,
    pub window: Window,
}

impl Trace {
    /// The request of `--trace` and `--trace-window` (already parsed), checked before any model
    /// is built: the file must be named `.fst` (viewers pick the format by the extension) and
    /// be writable.
    pub fn new(path: Option<PathBuf>, window: Option<Window>) -> Result<Option<Trace>> {
        let Some(path) = path else {
            return Ok(None);
        };
        if path.extension().is_none_or(|e| e != "fst") {
            return Err(Failure::input(anyhow!(
                "--trace {} must name an .fst file (the waveform is FST, and GTKWave and Surfer \
                 choose the format by the extension); e.g. --trace run.fst",
                path.display()
            ))
            .into());
        }
        std::fs::File::create(&path)
            .map_err(|e| Failure::input(anyhow!("cannot write --trace {}: {e}", path.display())))?;
        Ok(Some(Trace {
            path,
            window: window.unwrap_or(Window::ALL),
        }))
    }

    /// `model` (built with tracing) handed out so that its first instance dumps the window.
    pub fn attach(&self, model: &Model) -> Model {
        model.with_hooks(Arc::new(TraceFirstInstance::new(&self.path, self.window)))
    }

    /// Says on stderr where the waveform is and how to open it, or why the file holds none.
    /// Called after the command, whether it passed or failed (`failed`); a command that failed
    /// before its simulation dumped anything removes the empty file and says nothing more.
    pub fn report(&self, failed: bool) {
        if failed && is_empty(&self.path) {
            let _ = std::fs::remove_file(&self.path);
            return;
        }
        eprintln!("{}", self.describe());
    }

    fn describe(&self) -> String {
        let p = self.path.display();
        match check_fst(&self.path) {
            Ok(info) => format!(
                "nicgen: waveform of cycles {}..{} in {p} (cycle c at time 2c)\nnicgen: {}",
                info.start_time / 2,
                info.end_time / 2 + 1,
                open_hint(&self.path)
            ),
            Err(_) if is_empty(&self.path) => format!(
                "nicgen: no waveform in {p}: the run ended before --trace-window {} began",
                self.window
            ),
            Err(why) => format!("nicgen: no usable waveform: {why}"),
        }
    }
}

fn is_empty(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == 0)
}

/// Builds a model with `build(trace)`, traced when `trace` is asked for and then attached.
pub fn model(trace: Option<&Trace>, build: impl FnOnce(bool) -> Result<Model>) -> Result<Model> {
    let model = build(trace.is_some())?;
    Ok(match trace {
        Some(t) => t.attach(&model),
        None => model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_file_must_be_fst_and_writable() {
        let dir = std::env::temp_dir().join(format!("nicgen-trace-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(Trace::new(None, None).unwrap().is_none());
        let e = Trace::new(Some(dir.join("x.vcd")), None).unwrap_err();
        assert_eq!(Failure::classify(e).code(), 2);
        let e = Trace::new(Some(dir.join("no/such/dir/x.fst")), None).unwrap_err();
        let f = Failure::classify(e);
        assert!(
            f.code() == 2 && f.to_string().contains("cannot write --trace"),
            "{f}"
        );
        let t = Trace::new(Some(dir.join("x.fst")), None).unwrap().unwrap();
        assert_eq!(t.window, Window::ALL);
        // Created empty before the run; a run that never reaches the window leaves it so.
        assert!(t.describe().contains("ended before --trace-window 0.."));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
