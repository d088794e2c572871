//! A small graph uploaded in one buffer (`Graph::new_packed`) equals the graph uploaded array by
//! array (`Graph::new`): its arrays read back and an aggregation over it, on the CPU and on wgpu
//! (where the arrays are views of one buffer at aligned offsets).

#[cfg(feature = "testing")]
fn check<B: burn_sparse_gnn::SparseGnnBackend>(device: &B::Device) {
    let checks = burn_sparse_gnn::conformance::packed_graph_checks::<B>(device);
    assert_eq!(checks.len(), 12);
    for (what, d) in &checks {
        assert_eq!(*d, Some(0.0), "{what}");
    }
}

#[cfg(feature = "testing")]
#[test]
fn packed_graphs_equal_graphs_on_the_cpu() {
    check::<burn::backend::NdArray>(&Default::default());
}

#[cfg(all(feature = "wgpu", feature = "testing"))]
#[test]
fn packed_graphs_equal_graphs_on_wgpu() {
    check::<burn_sparse_gnn::Wgpu>(&Default::default());
}
