use linad::differentiable;

// Labelled loops are supported; a labelled `break` with a value, and a
// labelled block, are not.
#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    let z = 'outer: loop {
        for _ in 0..n {
            y = y * x;
            if y > 2.0 {
                break 'outer y;
            }
        }
        y += 1.0;
    };
    let w = 'b: {
        z * 2.0
    };
    w
}

fn main() {}
