//! The running statistics of a batch normalisation after a training batch: the means and the
//! variances blended with the batch's in one launch.

use crate::device::per_entry;
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn running_blend(
    old_mean: &Array<f32>,
    old_var: &Array<f32>,
    mean: &Array<f32>,
    var: &Array<f32>,
    new_mean: &mut Array<f32>,
    new_var: &mut Array<f32>,
    momentum: f32,
    c: usize,
) {
    let j = ABSOLUTE_POS;
    if j >= c {
        terminate!();
    }
    let keep = 1.0 - momentum;
    new_mean[j] = old_mean[j] * keep + mean[j] * momentum;
    new_var[j] = old_var[j] * keep + var[j] * momentum;
}

/// Writes the running statistics `new = old * (1 - momentum) + batch * momentum` of the means
/// and of the variances (all `[c]` f32) in one launch: the update after each training batch,
/// which Burn's tensor ops make six launches.
pub fn launch_running_stats<R: Runtime>(
    client: &ComputeClient<R>,
    old: [TensorBinding<R>; 2],
    batch: [TensorBinding<R>; 2],
    new: [TensorBinding<R>; 2],
    momentum: f32,
) {
    let c = old[0].shape[0];
    let Some((count, dim)) = per_entry(client, c) else {
        return;
    };
    let [old_mean, old_var] = old;
    let [mean, var] = batch;
    let [new_mean, new_var] = new;
    unsafe {
        running_blend::launch_unchecked::<R>(
            client,
            count,
            dim,
            old_mean.into_array_arg(),
            old_var.into_array_arg(),
            mean.into_array_arg(),
            var.into_array_arg(),
            new_mean.into_array_arg(),
            new_var.into_array_arg(),
            momentum,
            c,
        );
    }
}
