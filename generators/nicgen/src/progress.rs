//! The command line's view of a Verilator model build, which takes minutes the first time:
//! on a terminal a spinner with the current step (files compiled of all) and the elapsed time;
//! elsewhere (a log, CI) one line per step with the time so far.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nicgen_tb::verilator::{set_build_observer, BuildStep};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One build being shown.
struct Shown {
    bar: ProgressBar,
    start: Instant,
}

/// The build being shown, if any.
static SHOWN: Mutex<Option<Shown>> = Mutex::new(None);

/// Show every model build of this process on stderr.
pub fn show_builds() {
    set_build_observer(|step| {
        let mut s = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
        let shown = s.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} nicgen: {msg} [{elapsed}]")
                    .expect("a valid template"),
            );
            bar.set_message(step.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            Shown {
                bar,
                start: Instant::now(),
            }
        });
        let elapsed = shown.start.elapsed().as_secs();
        // Without a terminal the spinner is hidden: a line per step (not per file) instead.
        let line = shown.bar.is_hidden()
            && match step {
                BuildStep::Compiling { done, .. } | BuildStep::Runtime { done, .. } => *done == 0,
                _ => true,
            };
        if line {
            eprintln!("nicgen: {step} ({elapsed} s)");
        }
        if let BuildStep::Done { top } = step {
            shown.bar.finish_and_clear();
            if !line {
                eprintln!("nicgen: built the {top} model in {elapsed} s");
            }
            *s = None;
        } else {
            shown.bar.set_message(step.to_string());
        }
    });
}

/// Take down the spinner of a build that did not finish (before an error is printed).
pub fn clear() {
    let mut s = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(shown) = s.take() {
        shown.bar.finish_and_clear();
    }
}
