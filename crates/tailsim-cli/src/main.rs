use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first Ctrl-C or SIGTERM; a second one ends the process at once.
static STOP: AtomicBool = AtomicBool::new(false);

/// Large blocks on transparent huge pages (engine/hugepages.rs).
#[global_allocator]
static ALLOC: tailsim::engine::HugePageAlloc = tailsim::engine::HugePageAlloc;

fn main() -> ExitCode {
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "tailsim".into());
    // Only `run` and `bench` poll the flag; every other command keeps the default action (Ctrl-C ends it at
    // once). Without a handler that default stays for them too: better than none.
    if matches!(std::env::args().nth(1).as_deref(), Some("run" | "bench")) {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::SeqCst) {
                std::process::exit(tailsim_cli::INTERRUPTED.into());
            }
        });
    }
    ExitCode::from(tailsim_cli::main_with(std::env::args().collect(), vec![exe], &mut || STOP.load(Ordering::Relaxed)))
}
