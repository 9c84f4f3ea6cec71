//! Differentiates a program written in the printed IR notation and prints
//! every derived function (or the error): the tool for reproducing a failing
//! property-test case.
//!
//! `cargo run -p ad-core-ir --example repro -- FILE ENTRY WRT` where `WRT` is
//! a string of `1`/`0` per parameter (e.g. `10010`).
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::parse::parse_program;
use ad_core_ir::pretty::func_to_string;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: repro FILE ENTRY WRT (e.g. 1010)");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("readable file");
    let prog = parse_program(&text).unwrap_or_else(|e| panic!("parse error: {e}"));
    let wrt: Vec<bool> = args[3].chars().map(|c| c == '1').collect();
    let simplify = std::env::var("NO_SIMPLIFY").is_err();
    let opts = Options {
        simplify,
        check: true,
        ..Options::default()
    };
    match differentiate(&prog, &args[2], &wrt, &opts) {
        Ok(d) => {
            for n in [&d.names.jvp, &d.names.fwd, &d.names.lin, &d.names.lin_t] {
                println!("{}", func_to_string(d.program.func(n).expect("derived")));
            }
        }
        Err(e) => {
            println!("error: {e}");
            let opts = Options {
                simplify,
                check: false,
                ..Options::default()
            };
            if let Ok(d) = differentiate(&prog, &args[2], &wrt, &opts) {
                for n in [&d.names.jvp, &d.names.fwd, &d.names.lin, &d.names.lin_t] {
                    println!("{}", func_to_string(d.program.func(n).expect("derived")));
                }
            }
        }
    }
}
