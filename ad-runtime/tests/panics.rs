//! Every shape mismatch and out-of-range index panics with the kernel name.

use ad_runtime::*;
use ndarray::{arr1, Array1, Array2, Array3};

#[test]
#[should_panic(expected = "ad_runtime::zip_map: shape mismatch: [3, 4] vs [4, 3]")]
fn zip_map_shape() {
    zip_map(
        &Array2::<f64>::zeros((3, 4)),
        &Array2::<f64>::zeros((4, 3)),
        |a, b| a + b,
    );
}

#[test]
#[should_panic(expected = "ad_runtime::zip3_map: shape mismatch: [3] vs [2]")]
fn zip3_map_shape() {
    let a = Array1::<f64>::zeros(3);
    zip3_map(&a, &a, &Array1::<f64>::zeros(2), |a, b, c| a + b + c);
}

#[test]
#[should_panic(expected = "ad_runtime::sum_axis: axis 2 out of range for an array of shape [2, 3]")]
fn sum_axis_axis() {
    sum_axis(&Array2::<f64>::zeros((2, 3)), 2);
}

#[test]
#[should_panic(expected = "ad_runtime::max_arg: empty array of shape [0]")]
fn max_arg_empty() {
    max_arg(&Array1::<f64>::zeros(0));
}

#[test]
#[should_panic(expected = "ad_runtime::min_arg_axis: axis 1 has length 0 in shape [2, 0]")]
fn min_arg_axis_empty() {
    min_arg_axis(&Array2::<f64>::zeros((2, 0)), 1);
}

#[test]
#[should_panic(expected = "ad_runtime::unravel_index: index 6 out of range for length 6")]
fn unravel_out_of_range() {
    unravel_index(6, ndarray::Dim([2, 3]));
}

#[test]
#[should_panic(expected = "ad_runtime::gather: index 5 out of range for axis 0 of length 5")]
fn gather_index() {
    gather(&Array1::<f64>::zeros(5), &arr1(&[0, 5]));
}

#[test]
#[should_panic(expected = "ad_runtime::gather: index 9 out of range for axis 0 of length 4")]
fn gather_rows_index_parallel() {
    set_par_threshold(1);
    let mut idx = Array1::<usize>::zeros(100_000);
    idx[77_777] = 9;
    gather(&Array2::<f64>::zeros((4, 3)), &idx);
}

#[test]
#[should_panic(expected = "ad_runtime::scatter_add: index 3 out of range for axis 0 of length 3")]
fn scatter_index_private() {
    scatter_add(&arr1(&[1.0, 2.0]), &arr1(&[0, 3]), 3);
}

#[test]
#[should_panic(
    expected = "ad_runtime::scatter_add: index 100000 out of range for axis 0 of length 100000"
)]
fn scatter_index_large_output() {
    set_par_threshold(1);
    let mut idx = Array1::<usize>::zeros(100_000);
    idx[5] = 100_000;
    scatter_add(&Array1::<f64>::zeros(100_000), &idx, 100_000);
}

#[test]
#[should_panic(
    expected = "ad_runtime::scatter_add: shape mismatch: 2 indices vs source shape [3, 2]"
)]
fn scatter_shape() {
    scatter_add(&Array2::<f64>::zeros((3, 2)), &arr1(&[0, 1]), 4);
}

#[test]
#[should_panic(expected = "ad_runtime::add_at: index (2, 0) out of range for shape [2, 2]")]
fn add_at_index() {
    add_at(&mut Array2::<f64>::zeros((2, 2)), (2, 0), 1.0);
}

#[test]
#[should_panic(expected = "ad_runtime::add_row_at: index 3 out of range for axis 0 of length 3")]
fn add_row_at_index() {
    add_row_at(&mut Array2::<f64>::zeros((3, 2)), 3, &Array1::zeros(2));
}

#[test]
#[should_panic(expected = "ad_runtime::add_row_at: shape mismatch: [2] vs [3]")]
fn add_row_at_shape() {
    add_row_at(&mut Array2::<f64>::zeros((3, 2)), 0, &Array1::zeros(3));
}

#[test]
#[should_panic(expected = "ad_runtime::dot: shape mismatch: [3] vs [2]")]
fn dot_shape() {
    dot(&Array1::<f64>::zeros(3), &Array1::<f64>::zeros(2));
}

#[test]
#[should_panic(expected = "ad_runtime::matvec: shape mismatch: [2, 3] vs [2]")]
fn matvec_shape() {
    matvec(&Array2::<f64>::zeros((2, 3)), &Array1::<f64>::zeros(2));
}

#[test]
#[should_panic(expected = "ad_runtime::matvec_t: shape mismatch: [2, 3] vs [3]")]
fn matvec_t_shape() {
    matvec_t(&Array2::<f64>::zeros((2, 3)), &Array1::<f64>::zeros(3));
}

#[test]
#[should_panic(expected = "ad_runtime::vecmat: shape mismatch: [3] vs [2, 3]")]
fn vecmat_shape() {
    vecmat(&Array1::<f64>::zeros(3), &Array2::<f64>::zeros((2, 3)));
}

#[test]
#[should_panic(expected = "ad_runtime::matmul: shape mismatch: [2, 3] vs [2, 3]")]
fn matmul_shape() {
    matmul(&Array2::<f64>::zeros((2, 3)), &Array2::<f64>::zeros((2, 3)));
}

#[test]
#[should_panic(expected = "ad_runtime::matmul_tn: shape mismatch: [3, 2] vs [3, 4]")]
fn matmul_tn_shape() {
    matmul_tn(&Array2::<f64>::zeros((2, 3)), &Array2::<f64>::zeros((3, 4)));
}

#[test]
#[should_panic(expected = "ad_runtime::matmul_nt: shape mismatch: [2, 3] vs [2, 3]")]
fn matmul_nt_shape() {
    matmul_nt(&Array2::<f64>::zeros((2, 3)), &Array2::<f64>::zeros((3, 2)));
}

#[test]
#[should_panic(expected = "ad_runtime::broadcast_to: cannot broadcast [3] to [2, 4]")]
fn broadcast_shape() {
    broadcast_to(&Array1::<f64>::zeros(3), (2, 4));
}

#[test]
#[should_panic(expected = "ad_runtime::broadcast_axis: axis 3 out of range")]
fn broadcast_axis_axis() {
    broadcast_axis(&Array1::<f64>::zeros(3), 3, 2);
}

#[test]
#[should_panic(expected = "ad_runtime::sum_to_shape: cannot sum [2, 3] to [2]")]
fn sum_to_shape_shape() {
    sum_to_shape(&Array2::<f64>::zeros((2, 3)), 2);
}

#[test]
#[should_panic(expected = "ad_runtime::add_scaled: shape mismatch: [2, 3] vs [3, 2]")]
fn add_scaled_shape() {
    add_scaled(
        &mut Array2::<f64>::zeros((2, 3)),
        1.0,
        &Array2::zeros((3, 2)),
    );
}

#[test]
#[should_panic(expected = "ad_runtime::add_assign: shape mismatch: [4] vs [5]")]
fn add_assign_shape() {
    add_assign(&mut Array1::<f64>::zeros(4), &Array1::zeros(5));
}

#[test]
#[should_panic(
    expected = "ad_runtime::scan_axis: axis 3 out of range for an array of shape [1, 2, 3]"
)]
fn scan_axis_axis() {
    scan_axis(&Array3::<f64>::zeros((1, 2, 3)), 3, ScanKind::Inclusive);
}

#[test]
#[should_panic(
    expected = "ad_runtime::ResidualStack::push: iteration 2 out of range for trip count 2"
)]
fn stack_push_overflow() {
    let mut s = ResidualStack::<f64>::new(2);
    s.push(1.0);
    s.push(2.0);
    s.push(3.0);
}

#[test]
#[should_panic(
    expected = "ad_runtime::ResidualStack::get: iteration 5 out of range for trip count 5"
)]
fn stack_get() {
    ResidualStack::<f64>::new(5).get(5);
}

#[test]
#[should_panic(expected = "ad_runtime::ResidualStack::pop: stack is empty")]
fn stack_pop_empty() {
    ResidualStack::<f64>::new(5).pop();
}

#[test]
#[should_panic(
    expected = "ad_runtime::ArrayResidualStack::set: shape mismatch: stack rows are [3], got [4]"
)]
fn array_stack_shape() {
    let mut s = ArrayResidualStack::<f64, ndarray::Ix1>::new(2, 3);
    s.push(&Array1::zeros(4));
}

#[test]
#[should_panic(
    expected = "ad_runtime::ArrayResidualStack::get: iteration 2 out of range for trip count 2"
)]
fn array_stack_get() {
    ArrayResidualStack::<f64, ndarray::Ix1>::new(2, 3).get(2);
}
