//! Prints every derived function of a small example (the programs of
//! `tests/fixtures/`): `x*y + sin x` by default, or `dot` (build + sum),
//! `pow` (a loop), `sumsq` (map + sum):
//! `cargo run -p ad-core-ir --example show [dot|pow|sumsq]`.
use ad_core_ir::driver::{differentiate, Options};
use ad_core_ir::parse::parse_program;
use ad_core_ir::pretty::func_to_string;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let text = match which.as_str() {
        "sumsq" => include_str!("../tests/fixtures/sum_of_squares.linad"),
        "dot" => include_str!("../tests/fixtures/dot_by_build_and_sum.linad"),
        "pow" => include_str!("../tests/fixtures/power_by_loop.linad"),
        _ => include_str!("../tests/fixtures/x_times_y_plus_sin_x.linad"),
    };
    let p = parse_program(text).expect("a fixture parses");
    let f = &p.funcs[0];
    let wrt = vec![true; f.params.len()];
    let d = differentiate(&p, &f.name, &wrt, &Options::default()).expect("differentiable");
    for name in [&d.names.jvp, &d.names.fwd, &d.names.lin, &d.names.lin_t] {
        println!("{}", func_to_string(d.program.func(name).unwrap()));
    }
}
