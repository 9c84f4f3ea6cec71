//! One pass of an ndarray `Zip` writing several outputs in place: the
//! kernel of the emitter's multi-output builds and maps
//! (`Emitter::one_pass` in ad-macros), sequential or cut into pieces that run
//! as tasks of the pool.
//!
//! Generated code builds the `Zip` (its outputs and inputs) and the closure
//! writing one element of each output; this module owns the parallel path,
//! so it is compiled once per `Zip` shape in the runtime's generic code
//! rather than written out at every site of the user's crate.
//!
//! ```text
//! let mut o1 = pooled_full(shape, 0.0); let mut o2 = ..;
//! zip_pass3(Zip::indexed(&mut o1).and(&mut o2), go_parallel(work),
//!          |i, o1, o2| { let (r1, r2) = body(i); *o1 = r1; *o2 = r2; });
//! ```
//!
//! Determinism: every element is written by the same closure from the same
//! inputs whichever piece holds it, so the outputs are the same bits for
//! any number of threads and any way of cutting.

use ndarray::{Dimension, NdProducer, Zip};

/// A `Zip` of one to six producers whose elements a function visits: the
/// arities of ndarray's `Zip`.
pub trait ZipPass<F>: Sized + Send {
    /// `f` on every element, in the `Zip`'s order.
    fn run(self, f: &F);
    /// The number of elements.
    fn elements(&self) -> usize;
    /// The `Zip` cut in two (at least two elements).
    fn halves(self) -> (Self, Self);
}

macro_rules! zip_pass_impl {
    ($name:ident; $($p:ident),+) => {
        #[allow(non_snake_case)]
        impl<D, F, $($p),+> ZipPass<F> for Zip<($($p,)+), D>
        where
            D: Dimension,
            $($p: NdProducer<Dim = D>,)+
            F: Fn($($p::Item),+),
            Zip<($($p,)+), D>: Send,
        {
            #[inline]
            fn run(self, f: &F) {
                self.for_each(|$($p),+| f($($p),+));
            }
            #[inline]
            fn elements(&self) -> usize {
                self.size()
            }
            #[inline]
            fn halves(self) -> (Self, Self) {
                self.split()
            }
        }

        /// [`zip_pass`] for this arity of `Zip`: the closure's parameter
        /// types come from the `Zip` (the element of each producer).
        #[inline(always)]
        pub fn $name<D, $($p),+>(
            zip: Zip<($($p,)+), D>,
            parallel: bool,
            f: impl Fn($($p::Item),+) + Sync,
        ) where
            D: Dimension,
            $($p: NdProducer<Dim = D>,)+
            Zip<($($p,)+), D>: Send,
        {
            zip_pass(zip, parallel, f)
        }
    };
}

zip_pass_impl!(zip_pass1; P1);
zip_pass_impl!(zip_pass2; P1, P2);
zip_pass_impl!(zip_pass3; P1, P2, P3);
zip_pass_impl!(zip_pass4; P1, P2, P3, P4);
zip_pass_impl!(zip_pass5; P1, P2, P3, P4, P5);
zip_pass_impl!(zip_pass6; P1, P2, P3, P4, P5, P6);

/// `f` on every element of `zip`: in place, sequentially unless
/// `parallel` (from [`crate::go_parallel`]); in parallel, the `Zip` is cut
/// into about 8 pieces per thread of the current pool, the largest piece cut
/// first, each piece one task ([`crate::for_each_item`]: kernels called
/// inside stay sequential). Generated code calls `zip_passN` for a `Zip` of
/// N producers, whose signature types the closure.
///
/// Both paths run the pieces by one out-of-line function, `run`: the
/// site's closure is compiled into ndarray's loops once per site, not once
/// for the sequential path and again for the parallel one (the parallel
/// copies were 16% of the LLVM IR of a crate calling 100 derivatives).
#[inline(always)]
pub fn zip_pass<Z, F>(zip: Z, parallel: bool, f: F)
where
    Z: ZipPass<F>,
    F: Sync,
{
    if parallel && zip.elements() >= 2 {
        in_pieces(zip, &f);
    } else {
        run(zip, &f);
    }
}

/// `f` on every element of `zip`, in its order: the one copy of the
/// site's loop.
#[inline(never)]
fn run<Z, F>(zip: Z, f: &F)
where
    Z: ZipPass<F>,
{
    zip.run(f);
}

/// The parallel path of [`zip_pass`].
#[inline(never)]
fn in_pieces<Z, F>(zip: Z, f: &F)
where
    Z: ZipPass<F>,
    F: Sync,
{
    let target = 8 * rayon::current_num_threads();
    let mut pieces = vec![zip];
    while pieces.len() < target {
        let Some(k) = (0..pieces.len())
            .filter(|&k| pieces[k].elements() >= 2)
            .max_by_key(|&k| pieces[k].elements())
        else {
            break;
        };
        let (a, b) = pieces.swap_remove(k).halves();
        pieces.push(a);
        pieces.push(b);
    }
    crate::for_each_item(pieces, true, |z| run(z, f));
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Zip};

    /// Two outputs of an indexed build, sequential and in parallel (a pool
    /// of 4 threads), element by element the same bits.
    #[test]
    fn parallel_pass_writes_what_the_sequential_one_does() {
        let body = |(i, j): (usize, usize)| {
            let x = (i as f64 * 0.37 + j as f64).sin();
            (x * x, x.exp())
        };
        let run = |parallel: bool| {
            let mut a = Array2::<f64>::zeros((37, 11));
            let mut b = Array2::<f64>::zeros((37, 11));
            zip_pass3(Zip::indexed(&mut a).and(&mut b), parallel, |ix, a, b| {
                let (x, y) = body(ix);
                *a = x;
                *b = y;
            });
            (a, b)
        };
        let seq = run(false);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("a pool");
        let par = pool.install(|| run(true));
        assert_eq!(seq, par);
        assert_eq!(seq.0[[36, 10]], body((36, 10)).0);
    }

    /// A map with two inputs and one element: nothing to cut.
    #[test]
    fn one_element_runs_once() {
        let mut o = ndarray::Array1::<f64>::zeros(1);
        let x = ndarray::arr1(&[2.0]);
        zip_pass2(Zip::from(&mut o).and(&x), true, |o, x| *o += x * 3.0);
        assert_eq!(o[0], 6.0);
    }
}
