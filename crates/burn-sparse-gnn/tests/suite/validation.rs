//! One test per validation rule of the host graph data: a malformed graph is rejected with the
//! error naming the problem, never a panic or a silently wrong graph; and the largest buffer a
//! device can bind, against which runs check their tensors.

use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, GraphError, Split};

fn ok_csr() -> Csr {
    Csr::new(3, 3, &[0, 1, 1, 3], &[1, 0, 2], None).unwrap()
}

#[test]
fn row_ptr_must_have_rows_plus_one_entries() {
    assert_eq!(Csr::new(3, 3, &[0, 1, 3], &[1, 0, 2], None), Err(GraphError::RowPtrLength { got: 3, expected: 4 }));
}

#[test]
fn row_ptr_must_start_at_zero() {
    assert_eq!(Csr::new(2, 3, &[1, 2, 3], &[1, 0, 2], None), Err(GraphError::RowPtrStart(1)));
}

#[test]
fn row_ptr_must_be_monotone() {
    assert_eq!(
        Csr::new(3, 3, &[0, 2, 1, 3], &[1, 0, 2], None),
        Err(GraphError::RowPtrNotMonotone { row: 1, start: 2, end: 1 })
    );
}

#[test]
fn row_ptr_must_end_at_nnz() {
    assert_eq!(Csr::new(3, 3, &[0, 1, 1, 2], &[1, 0, 2], None), Err(GraphError::RowPtrEnd { end: 2, nnz: 3 }));
}

#[test]
fn columns_must_be_in_range() {
    assert_eq!(
        Csr::new(3, 3, &[0, 1, 1, 3], &[1, 3, 2], None),
        Err(GraphError::ColumnOutOfRange { edge: 1, col: 3, n_cols: 3 })
    );
    assert_eq!(
        Csr::new(3, 3, &[0, 1, 1, 3], &[1, -1, 2], None),
        Err(GraphError::ColumnOutOfRange { edge: 1, col: -1, n_cols: 3 })
    );
}

#[test]
fn owned_columns_follow_the_same_rules() {
    assert_eq!(
        Csr::from_columns(3, 3, &[0, 1, 1, 3], vec![1, 0, 2], None),
        Csr::new(3, 3, &[0, 1, 1, 3], &[1, 0, 2], None)
    );
    assert_eq!(
        Csr::from_columns(3, 3, &[0, 1, 1, 3], vec![1, 3, 2], None),
        Err(GraphError::ColumnOutOfRange { edge: 1, col: 3, n_cols: 3 })
    );
    assert_eq!(
        Csr::from_columns(3, 3, &[0, 1, 1, 2], vec![1, 0, 2], None),
        Err(GraphError::RowPtrEnd { end: 2, nnz: 3 })
    );
    assert_eq!(
        Csr::from_columns(3, 3, &[0, 1, 1, 3], vec![1, 0, 2], Some(vec![1.0])),
        Err(GraphError::WeightsLength { got: 1, nnz: 3 })
    );
}

#[test]
fn weights_must_match_edges() {
    assert_eq!(
        Csr::new(3, 3, &[0, 1, 1, 3], &[1, 0, 2], Some(vec![1.0])),
        Err(GraphError::WeightsLength { got: 1, nnz: 3 })
    );
}

#[test]
fn weights_must_be_finite() {
    let err = Csr::new(3, 3, &[0, 1, 1, 3], &[1, 0, 2], Some(vec![1.0, f32::NAN, 1.0])).unwrap_err();
    assert!(matches!(err, GraphError::NonFiniteWeight { edge: 1, .. }));
}

#[test]
fn edge_lists_must_have_equal_lengths() {
    assert_eq!(
        Csr::from_edges(3, &[0, 1], &[1], None, BuildOptions::default()),
        Err(GraphError::EdgeListLength { src: 2, dst: 1 })
    );
}

#[test]
fn edge_endpoints_must_be_nodes() {
    assert_eq!(
        Csr::from_edges(3, &[0, 5], &[1, 2], None, BuildOptions::default()),
        Err(GraphError::NodeOutOfRange { edge: 1, node: 5, n_nodes: 3 })
    );
    assert_eq!(
        Csr::from_edges(3, &[0, 1], &[1, -2], None, BuildOptions::default()),
        Err(GraphError::NodeOutOfRange { edge: 1, node: -2, n_nodes: 3 })
    );
}

#[test]
fn sizes_must_fit_32_bit_indices() {
    let err = Csr::from_edges(3_000_000_000, &[], &[], None, BuildOptions::default()).unwrap_err();
    assert!(matches!(err, GraphError::TooLarge { what: "nodes", .. }));
}

#[test]
fn dense_features_must_have_the_announced_shape() {
    assert!(matches!(Features::dense(3, 2, vec![0.0; 5]), Err(GraphError::FeatureShape(_))));
}

#[test]
fn features_must_be_finite() {
    let mut v = vec![0.0f32; 6];
    v[3] = f32::NAN;
    assert!(matches!(Features::dense(3, 2, v), Err(GraphError::NonFiniteFeature { node: 1, feature: 1, .. })));
    let err = Features::sparse(2, 4, &[0, 1, 2], &[3, 1], vec![1.0, f32::INFINITY]).unwrap_err();
    assert!(matches!(err, GraphError::NonFiniteFeature { node: 1, feature: 1, .. }));
}

#[test]
fn sparse_features_are_checked_like_a_csr() {
    assert!(matches!(Features::sparse(2, 4, &[0, 1, 2], &[3, 9], vec![1.0, 1.0]), Err(GraphError::FeatureShape(_))));
    assert!(matches!(Features::sparse(2, 4, &[0, 1, 2], &[3, 1], vec![1.0]), Err(GraphError::FeatureShape(_))));
}

#[test]
fn features_must_cover_every_node() {
    let f = Features::dense(2, 1, vec![0.0; 2]).unwrap();
    assert_eq!(
        GraphData::new("g", ok_csr(), f, vec![0; 3], 2, None),
        Err(GraphError::NodeCount { what: "features", got: 2, nodes: 3 })
    );
}

#[test]
fn labels_must_cover_every_node() {
    let f = Features::dense(3, 1, vec![0.0; 3]).unwrap();
    assert_eq!(GraphData::new("g", ok_csr(), f, vec![0; 2], 2, None), Err(GraphError::LabelCount { got: 2, nodes: 3 }));
}

#[test]
fn labels_must_be_below_the_class_count() {
    let f = Features::dense(3, 1, vec![0.0; 3]).unwrap();
    assert_eq!(
        GraphData::new("g", ok_csr(), f.clone(), vec![0, 2, 1], 2, None),
        Err(GraphError::LabelOutOfRange { node: 1, label: 2, classes: 2 })
    );
    assert_eq!(
        GraphData::new("g", ok_csr(), f, vec![0, -3, 1], 2, None),
        Err(GraphError::LabelOutOfRange { node: 1, label: -3, classes: 2 })
    );
}

#[test]
fn split_nodes_must_exist() {
    let f = Features::dense(3, 1, vec![0.0; 3]).unwrap();
    let split = Split { train: vec![0, 7], valid: vec![], test: vec![] };
    assert_eq!(
        GraphData::new("g", ok_csr(), f, vec![0, 1, 1], 2, Some(split)),
        Err(GraphError::SplitOutOfRange { split: "train", node: 7, n_nodes: 3 })
    );
    assert_eq!(
        GraphData::split_from_i64(&[0], &[-1], &[], 3),
        Err(GraphError::SplitOutOfRange { split: "valid", node: -1, n_nodes: 3 })
    );
}

#[test]
fn split_nodes_must_be_labeled() {
    let f = Features::dense(3, 1, vec![0.0; 3]).unwrap();
    let split = Split { train: vec![0], valid: vec![], test: vec![1] };
    assert_eq!(
        GraphData::new("g", ok_csr(), f, vec![0, -1, 1], 2, Some(split)),
        Err(GraphError::UnlabeledSplitNode { split: "test", node: 1 })
    );
}

#[test]
fn adjacency_must_be_square_for_a_dataset() {
    let rect = Csr::new(3, 4, &[0, 1, 1, 3], &[1, 0, 3], None).unwrap();
    let f = Features::dense(3, 1, vec![0.0; 3]).unwrap();
    assert_eq!(
        GraphData::new("g", rect, f, vec![0; 3], 2, None),
        Err(GraphError::NodeCount { what: "adjacency columns", got: 4, nodes: 3 })
    );
}

#[test]
fn a_valid_dataset_is_accepted_and_summarised() {
    let f = Features::dense(3, 2, vec![0.5; 6]).unwrap();
    let split = Split { train: vec![0], valid: vec![1], test: vec![2] };
    let d = GraphData::new("g", ok_csr(), f, vec![0, 1, 1], 2, Some(split)).unwrap();
    let s = d.stats();
    assert_eq!((s.nodes, s.edges, s.features, s.classes), (3, 3, 2, 2));
    assert_eq!(s.isolated, 1);
    assert_eq!(s.self_loops, 1);
    assert_eq!(s.split_sizes, Some([1, 1, 1]));
    // edges 0<-1 (0 vs 1), 2<-0 (1 vs 0), 2<-2 (1 vs 1): one of three shares its label
    assert!((s.edge_homophily - 1.0 / 3.0).abs() < 1e-12);
}

/// wgpu limits one buffer to its adapter's storage-binding size: the backend reports it, and
/// `check_buffers` refuses a tensor one byte above it and accepts one of that size; the CPU
/// reports no limit.
#[cfg(feature = "wgpu")]
#[test]
fn wgpu_reports_its_largest_buffer_and_larger_tensors_are_refused() {
    use burn_sparse_gnn::ops::device::{check_buffers, DeviceOps};
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    let limit = burn_sparse_gnn::Wgpu::max_buffer_bytes(&device).expect("wgpu limits its buffers");
    assert!(limit >= 1 << 20, "{limit}");
    assert!(check_buffers::<burn_sparse_gnn::Wgpu>(&device, &[("a", limit)]).is_ok());
    let e = check_buffers::<burn_sparse_gnn::Wgpu>(&device, &[("a", 1), ("the big one", limit + 1)]).unwrap_err();
    assert_eq!((e.what.as_str(), e.bytes, e.limit), ("the big one", limit + 1, limit));
    assert!(e.to_string().contains("the big one takes"), "{e}");
    assert_eq!(burn_sparse_gnn::Cpu::max_buffer_bytes(&Default::default()), None);
}
