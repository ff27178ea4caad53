use std::process::ExitCode;

fn main() -> ExitCode {
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "tailsim".into());
    ExitCode::from(tailsim_cli::main_with(std::env::args().collect(), vec![exe]))
}
