use linad::differentiable;
use linad::ndarray::Array2;

// A function made by a macro: linad cannot read its signature in the
// source, so an unannotated call is taken to return `f64`.
macro_rules! make_gram {
    () => {
        #[differentiable]
        fn gram(a: &Array2<f64>) -> Array2<f64> {
            a.t().dot(a)
        }
    };
}
make_gram!();

#[differentiable]
fn f(a: &Array2<f64>) -> f64 {
    let g = gram(a);
    g.nrows() as f64 + g[[0, 0]]
}

fn main() {}
