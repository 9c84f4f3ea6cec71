use linad::differentiable;

// A bare name that no file of the crate defines and no `use` imports: one
// error at the call (not rustc's "cannot find `__linad_helper_jvp`").
#[differentiable]
fn f(x: f64) -> f64 {
    helper(x) * 2.0
}

fn main() {}
