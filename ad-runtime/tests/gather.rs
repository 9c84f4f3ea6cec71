//! gather, scatter_add, add_at, add_row_at.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{arr1, arr2, s, Array, Array1, Array2, Array3, Axis, Dimension, RemoveAxis};

fn naive_gather<D: Dimension + RemoveAxis>(
    a: &Array<f64, D>,
    idx: &Array1<usize>,
) -> Array<f64, D> {
    a.select(Axis(0), idx.as_slice().unwrap())
}

fn naive_scatter<D: Dimension + RemoveAxis>(
    x: &Array<f64, D>,
    idx: &Array1<usize>,
    len: usize,
) -> Array<f64, D> {
    let mut dim = x.raw_dim();
    dim[0] = len;
    let mut out = Array::zeros(dim);
    for (i, &j) in idx.iter().enumerate() {
        let mut row = out.index_axis_mut(Axis(0), j);
        row += &x.index_axis(Axis(0), i);
    }
    out
}

#[test]
fn gather_ranks_and_views() {
    low_threshold();
    let x = vec1(50_000, 1);
    let idx = indices(80_000, 50_000, 2);
    assert_eq!(gather(&x, &idx), naive_gather(&x, &idx));
    let st = x.slice(s![..;2]);
    let idx2 = indices(1000, 25_000, 3);
    assert_eq!(gather(&st, &idx2), naive_gather(&st.to_owned(), &idx2));
    let m = mat(500, 70, 4);
    let idx3 = indices(2000, 500, 5);
    assert_eq!(gather(&m, &idx3), naive_gather(&m, &idx3));
    let mt = m.t();
    let idx4 = indices(300, 70, 6);
    assert_eq!(gather(&mt, &idx4), naive_gather(&mt.to_owned(), &idx4));
    let a3 = arr3(40, 5, 6, 7);
    let idx5 = indices(100, 40, 8);
    assert_eq!(gather(&a3, &idx5), naive_gather(&a3, &idx5));
    // Empty index array and length-1 input.
    let e = gather(&m, &Array1::<usize>::zeros(0));
    assert_eq!(e.shape(), &[0, 70]);
    assert_eq!(
        gather(&arr1(&[4.0]), &arr1(&[0, 0, 0])),
        arr1(&[4.0, 4.0, 4.0])
    );
    let ints = arr1(&[10usize, 20, 30]);
    assert_eq!(gather(&ints, &arr1(&[2, 0])), arr1(&[30, 10]));
    // Index array given as a strided view.
    let big = indices(10, 3, 9);
    assert_eq!(
        gather(&ints, &big.slice(s![..;2])),
        ints.select(Axis(0), &big.slice(s![..;2]).to_vec())
    );
}

#[test]
fn scatter_add_sums_duplicates() {
    low_threshold();
    // Heavy duplication, private-accumulator path.
    let x = vec1(200_000, 1);
    let idx = indices(200_000, 100, 2);
    close(
        &scatter_add(&x, &idx, 100),
        &naive_scatter(&x, &idx, 100),
        1e-12,
    );
    // Large output, few sources per row: exactly the sequential loop's bits.
    let idx = indices(200_000, 150_000, 3);
    assert_eq!(
        scatter_add(&x, &idx, 150_000).bits(),
        naive_scatter(&x, &idx, 150_000).bits()
    );
    // Rows.
    let m = mat(30_000, 8, 4);
    let idx = indices(30_000, 50, 5);
    close(
        &scatter_add(&m, &idx, 60),
        &naive_scatter(&m, &idx, 60),
        1e-12,
    );
    let idx = indices(30_000, 20_000, 6);
    assert_eq!(
        scatter_add(&m, &idx, 20_000).bits(),
        naive_scatter(&m, &idx, 20_000).bits()
    );
    let mt = m.t().to_owned();
    let idx = indices(8, 3, 7);
    close(
        &scatter_add(&mt, &idx, 3),
        &naive_scatter(&mt, &idx, 3),
        1e-12,
    );
    let a3 = arr3(5000, 3, 4, 8);
    let idx = indices(5000, 7, 9);
    close(
        &scatter_add(&a3, &idx, 7),
        &naive_scatter(&a3, &idx, 7),
        1e-12,
    );
    // Non-contiguous source and all-same index.
    let st = x.slice(s![..;4]);
    let idx = Array1::from_elem(st.len(), 3usize);
    let got = scatter_add(&st, &idx, 5);
    close1(got[3], st.sum(), 1e-12);
    assert_eq!(got[0], 0.0);
    // Edge cases.
    assert_eq!(
        scatter_add(&Array1::<f64>::zeros(0), &Array1::zeros(0), 4),
        Array1::zeros(4)
    );
    assert_eq!(scatter_add(&arr1(&[2.0]), &arr1(&[0]), 1), arr1(&[2.0]));
    assert_eq!(
        scatter_add(&arr1(&[1.0, 2.0]), &arr1(&[1, 1]), 3),
        arr1(&[0.0, 3.0, 0.0])
    );
    assert_eq!(
        scatter_add(&Array2::<f64>::zeros((3, 0)), &arr1(&[0, 1, 0]), 2).shape(),
        &[2, 0]
    );
}

#[test]
fn scatter_is_the_transpose_of_gather() {
    low_threshold();
    // <gather(x, idx), y> == <x, scatter_add(y, idx, len)>
    let x = vec1(1000, 1);
    let idx = indices(5000, 1000, 2);
    let y = vec1(5000, 3);
    close1(
        gather(&x, &idx).dot(&y),
        x.dot(&scatter_add(&y, &idx, 1000)),
        1e-12,
    );
}

#[test]
fn one_hot_adds() {
    let mut a = Array1::<f64>::zeros(4);
    add_at(&mut a, 2, 1.5);
    add_at(&mut a, 2, 1.0);
    assert_eq!(a, arr1(&[0.0, 0.0, 2.5, 0.0]));
    let mut m = Array2::<f64>::zeros((2, 3));
    add_at(&mut m, (1, 2), 4.0);
    add_at(&mut m, [0, 1], 1.0);
    assert_eq!(m, arr2(&[[0.0, 1.0, 0.0], [0.0, 0.0, 4.0]]));
    add_row_at(&mut m, 0, &arr1(&[1.0, 1.0, 1.0]));
    assert_eq!(m.row(0), arr1(&[1.0, 2.0, 1.0]));
    let mut v = m.view_mut();
    add_row_at(&mut v, 1, &arr1(&[1.0, 2.0, 3.0]).slice(s![..]));
    assert_eq!(m.row(1), arr1(&[1.0, 2.0, 7.0]));
    let mut a3 = Array3::<f64>::zeros((2, 2, 2));
    add_row_at(&mut a3, 1, &Array2::ones((2, 2)));
    assert_eq!(a3.sum(), 4.0);
    assert_eq!(a3[(1, 0, 1)], 1.0);
}

#[test]
fn gather_scatter_deterministic() {
    let x = vec1(300_000, 1);
    let heavy = indices(300_000, 100, 2);
    let spread = indices(300_000, 300_000, 3);
    let m = mat(60_000, 5, 4);
    let rows = indices(60_000, 1000, 5);
    same_bits("gather", || gather(&x, &spread));
    same_bits("gather rows", || gather(&m, &rows));
    same_bits("scatter heavy", || scatter_add(&x, &heavy, 100));
    same_bits("scatter spread", || scatter_add(&x, &spread, 300_000));
    same_bits("scatter rows", || scatter_add(&m, &rows, 1000));
    same_bits("scatter rows wide", || scatter_add(&m, &rows, 100_000));
}

#[test]
fn integer_scatter_add_sums_duplicates() {
    let idx = ndarray::array![2i64, 0, 2];
    let vals = ndarray::array![[1i64, 1], [2, 2], [3, 4]].into_dyn();
    let out = scatter_add_i64(4, idx.view(), vals.view());
    assert_eq!(
        out,
        ndarray::array![[2i64, 2], [0, 0], [4, 5], [0, 0]].into_dyn()
    );
}

#[test]
#[should_panic(expected = "scatter_add_i64: index 4 out of range for length 4")]
fn integer_scatter_add_checks_indices() {
    let idx = ndarray::array![4i64];
    let vals = ndarray::array![[1i64]].into_dyn();
    scatter_add_i64(4, idx.view(), vals.view());
}

#[test]
fn stacking_arrays_under_a_leading_shape() {
    let a = ndarray::array![1.0, 2.0];
    let b = ndarray::array![3.0, 4.0];
    let s = stack_arrays(&[2], 1, vec![a.view().into_dyn(), b.view().into_dyn()]);
    assert_eq!(s, ndarray::array![[1.0, 2.0], [3.0, 4.0]].into_dyn());
    let none = stack_arrays::<f64>(&[0, 3], 2, vec![]);
    assert_eq!(none.shape(), &[0, 3, 0, 0]);
    // A transposed (non-contiguous) value beside a contiguous one: both in
    // row-major order of their own shape.
    let m = ndarray::array![[1.0, 2.0], [3.0, 4.0]];
    let s = stack_arrays(&[2], 2, vec![m.t().into_dyn(), m.view().into_dyn()]);
    assert_eq!(
        s,
        ndarray::array![[[1.0, 3.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]].into_dyn()
    );
}
