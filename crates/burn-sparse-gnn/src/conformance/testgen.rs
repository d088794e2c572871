//! One `#[test]` per operation and configuration: the assertions each generated test makes and the
//! macros that generate them.
//!
//! [`testgen_conformance!`](crate::testgen_conformance) takes a backend, its device and a list of
//! configurations, each with the [`OpKind`]s of its cases (by [`OpKind::name`]):
//!
//! ```ignore
//! use burn::backend::Autodiff;
//! use burn_sparse_gnn::conformance::ConformanceConfig;
//! use burn_sparse_gnn::Cpu;
//!
//! burn_sparse_gnn::testgen_conformance! {
//!     backend: Autodiff<Cpu>,
//!     device: Default::default(),
//!     configs: {
//!         small_groups: ConformanceConfig { group_width: 3, ..Default::default() }
//!             => [spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense,
//!                 maxpool, cbsr_spgemm],
//!     },
//! }
//! ```
//!
//! generates the module `small_groups` with one test per kind (`small_groups::spmm_sum`, ...),
//! each running the cases of its kind through [`assert_op`], and `small_groups::every_case_has_one_test`,
//! which checks that the listed kinds are exactly those of the configuration's cases, so that
//! every check of the configuration runs in one test. On a device backend (`uses_planes:`, see
//! [`with_planes`]) each configuration has two modules of tests: `plane_ops` (the kernels' plane
//! operations where the device has them) and `shared_memory` (their shared-memory fallbacks).
//! [`testgen_device_conformance!`](crate::testgen_device_conformance) is the configurations every
//! device backend runs; [`testgen_finite_differences!`](crate::testgen_finite_differences) checks
//! the reference backend's gradients the same way.

use super::{cases, finite_difference_checks, run, ConformanceConfig, OpKind, Report};
use crate::backend::SparseGnnAutodiffBackend;
use sparse_gnn_kernels::config::{KernelConfig, PlaneUse};
use sparse_gnn_kernels::spmm::hot::hot_launches;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// Held by the tests of configurations with a hot-column split while they run, so that the
/// launch counter of the hot-column pass counts the launches of one test (configurations without
/// a split never launch that pass).
static HOT_SPLIT: Mutex<()> = Mutex::new(());

/// The kind named `name` ([`OpKind::name`]); panics on an unknown name.
pub fn kind(name: &str) -> OpKind {
    OpKind::from_name(name).unwrap_or_else(|| panic!("no operation kind is named `{name}`"))
}

/// How many cases of `kind` the suite runs under `cfg`.
pub fn case_count(cfg: &ConformanceConfig, kind: OpKind) -> usize {
    cases(cfg).iter().filter(|c| c.1.kind() == kind).count()
}

/// Runs the cases of `kind` under `cfg` on `B` and asserts that each of them ran (none skipped,
/// one forward check each) and that every check passed. With `device_kernels` (a backend that
/// launches the CubeCL kernels) and a hot-column split in `cfg`, SpMM sum and mean must also have
/// launched the hot-column pass.
pub fn assert_op<B: SparseGnnAutodiffBackend>(
    device: &B::Device,
    cfg: &ConformanceConfig,
    kind: OpKind,
    device_kernels: bool,
) -> Report {
    assert!(cfg.only.is_none(), "the configuration selects no kind of its own");
    let cfg = ConformanceConfig { only: Some(kind), ..cfg.clone() };
    let expected = case_count(&cfg, kind);
    assert!(expected > 0, "the configuration has {} cases", kind.name());
    let split = cfg.hot_cols.is_some();
    let _hot = split.then(|| HOT_SPLIT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    let before = hot_launches();
    let report = run::<B>(device, &cfg);
    let launched = hot_launches() - before;
    println!("{}", report.table());
    let skipped: Vec<_> = report.results.iter().filter(|r| r.skipped.is_some()).collect();
    assert!(skipped.is_empty(), "skipped: {skipped:#?}");
    let forward = report.results.iter().filter(|r| r.check == "forward").count();
    assert_eq!(forward, expected, "forward checks of the {} cases", kind.name());
    assert!(report.passed(), "failures: {:#?}", report.failures());
    if device_kernels && split && matches!(kind, OpKind::SpmmSum | OpKind::SpmmMean) {
        assert!(launched > 0, "the hot-column pass did not run");
    }
    report
}

/// The gradients [`assert_finite_differences`] requires for a kind: those of every case, plus
/// `fd w` where some cases are weighted.
fn differentiated(kind: OpKind) -> &'static [&'static str] {
    match kind {
        OpKind::Sddmm => &["fd x", "fd a"],
        OpKind::EdgeSoftmax => &["fd scores"],
        OpKind::SpmmSum | OpKind::SpmmMean | OpKind::SpmmMax | OpKind::SampledSpmm | OpKind::CbsrSpgemm => {
            &["fd x", "fd w"]
        }
        OpKind::Maxk | OpKind::MaxkDense | OpKind::Maxpool => &["fd x"],
    }
}

/// [`finite_difference_checks`] of the cases of `kind` under `cfg`: asserts that the gradient of
/// each of the kind's inputs was checked and that every check passed.
pub fn assert_finite_differences(cfg: &ConformanceConfig, coords_per_input: usize, kind: OpKind) -> Report {
    assert!(cfg.only.is_none(), "the configuration selects no kind of its own");
    let cfg = ConformanceConfig { only: Some(kind), ..cfg.clone() };
    let report = finite_difference_checks(&cfg, coords_per_input);
    println!("{}", report.table());
    let checks: BTreeSet<&str> = report.results.iter().map(|r| r.check.as_str()).collect();
    for check in differentiated(kind) {
        assert!(checks.contains(check), "{check} of {} was checked", kind.name());
    }
    assert!(report.passed(), "failures: {:#?}", report.failures());
    report
}

/// Asserts that `kinds` (the tests generated for `cfg`) name each kind of `cfg`'s cases once and
/// no other kind: every check of the configuration runs in exactly one test.
pub fn assert_cases_covered(cfg: &ConformanceConfig, kinds: &[OpKind]) {
    assert!(cfg.only.is_none(), "the configuration selects no kind of its own");
    let listed: BTreeSet<OpKind> = kinds.iter().copied().collect();
    assert_eq!(listed.len(), kinds.len(), "a kind is listed twice: {kinds:?}");
    let present: BTreeSet<OpKind> = cases(cfg).iter().map(|c| c.1.kind()).collect();
    assert_eq!(listed, present, "the tests of the configuration are those of its cases' kinds");
}

/// `cfg` with plane use `planes`, for a generated test on a device whose kernels take plane
/// operations under a plane use `p` where `uses_planes(p)` (the device's
/// [`has_plane_ops`](sparse_gnn_kernels::device::has_plane_ops)). `None` for `PlaneUse::Auto` on
/// a device without plane operations: its kernels are then those of `PlaneUse::SharedMemory`,
/// which the `shared_memory` tests check.
pub fn with_planes(
    cfg: ConformanceConfig,
    planes: PlaneUse,
    uses_planes: impl Fn(PlaneUse) -> bool,
) -> Option<ConformanceConfig> {
    assert!(!uses_planes(PlaneUse::SharedMemory), "PlaneUse::SharedMemory takes no plane operations");
    if planes == PlaneUse::Auto && !uses_planes(PlaneUse::Auto) {
        println!("skipped: the device has no plane operations (the shared_memory tests run these kernels)");
        return None;
    }
    Some(ConformanceConfig { kernels: KernelConfig { planes, ..cfg.kernels }, ..cfg })
}

/// Generates one `#[test]` per operation kind and configuration of the conformance suite (see
/// [`conformance::testgen`](crate::conformance::testgen)).
///
/// ```ignore
/// testgen_conformance! {
///     backend: Autodiff<Cpu>,          // the backend under test
///     device: Default::default(),      // its device (an expression evaluated in each test)
///     // on a device backend: which plane uses take plane operations there (`Fn(PlaneUse) -> bool`);
///     // each configuration then runs once per plane use
///     // uses_planes: |p| has_plane_ops(&client(), p),
///     // attributes of every generated test (optional, device backends), e.g. `[#[ignore]]`
///     // attributes: [#[ignore = "needs a CUDA device"]],
///     configs: {
///         name: ConformanceConfig { .. } => [spmm_sum, sddmm, ...],
///     },
/// }
/// ```
#[macro_export]
macro_rules! testgen_conformance {
    (
        backend: $B:ty,
        device: $device:expr,
        configs: { $($name:ident: $cfg:expr => $ops:tt),+ $(,)? } $(,)?
    ) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn base_config() -> $crate::conformance::ConformanceConfig {
                    $cfg
                }

                fn config() -> ::core::option::Option<$crate::conformance::ConformanceConfig> {
                    ::core::option::Option::Some(base_config())
                }

                $crate::testgen_conformance!(@cover [], $ops);
                $crate::testgen_conformance!(@ops [], $B, $device, false, $ops);
            }
        )+
    };
    (
        backend: $B:ty,
        device: $device:expr,
        uses_planes: $planes:expr,
        attributes: $attrs:tt,
        configs: { $($name:ident: $cfg:expr => $ops:tt),+ $(,)? } $(,)?
    ) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn base_config() -> $crate::conformance::ConformanceConfig {
                    $cfg
                }

                $crate::testgen_conformance!(@cover $attrs, $ops);

                /// The kernels' plane operations where the device has them.
                mod plane_ops {
                    #[allow(unused_imports)]
                    use super::*;

                    fn config() -> ::core::option::Option<$crate::conformance::ConformanceConfig> {
                        $crate::conformance::testgen::with_planes(base_config(), $crate::PlaneUse::Auto, $planes)
                    }

                    $crate::testgen_conformance!(@ops $attrs, $B, $device, true, $ops);
                }

                /// The shared-memory fallbacks of the plane operations.
                mod shared_memory {
                    #[allow(unused_imports)]
                    use super::*;

                    fn config() -> ::core::option::Option<$crate::conformance::ConformanceConfig> {
                        $crate::conformance::testgen::with_planes(
                            base_config(),
                            $crate::PlaneUse::SharedMemory,
                            $planes,
                        )
                    }

                    $crate::testgen_conformance!(@ops $attrs, $B, $device, true, $ops);
                }
            }
        )+
    };
    (
        backend: $B:ty,
        device: $device:expr,
        uses_planes: $planes:expr,
        configs: $configs:tt $(,)?
    ) => {
        $crate::testgen_conformance! {
            backend: $B,
            device: $device,
            uses_planes: $planes,
            attributes: [],
            configs: $configs,
        }
    };
    (@cover [$(#[$attr:meta])*], [$($op:ident),+ $(,)?]) => {
        #[test]
        $(#[$attr])*
        fn every_case_has_one_test() {
            $crate::conformance::testgen::assert_cases_covered(
                &base_config(),
                &[$($crate::conformance::testgen::kind(stringify!($op))),+],
            );
        }
    };
    (@ops $attrs:tt, $B:ty, $device:expr, $device_kernels:expr, [$($op:ident),+ $(,)?]) => {
        $($crate::testgen_conformance!(@test $attrs, $B, $device, $device_kernels, $op);)+
    };
    (@test [$(#[$attr:meta])*], $B:ty, $device:expr, $device_kernels:expr, $op:ident) => {
        #[test]
        $(#[$attr])*
        fn $op() {
            if let ::core::option::Option::Some(cfg) = config() {
                $crate::conformance::testgen::assert_op::<$B>(
                    &$device,
                    &cfg,
                    $crate::conformance::testgen::kind(stringify!($op)),
                    $device_kernels,
                );
            }
        }
    };
}

/// The configurations of the conformance suite that every device backend runs, through
/// [`testgen_conformance!`](crate::testgen_conformance): `defaults`, `split_rows` (edge groups
/// of 3), `atomic_cbsr` and `atomic_cbsr_f16` (the atomic SpGEMM and outer-product SSpMM, the
/// second on f16 storage: the SSpMM accumulates a half gradient in f32), and the hot-column split
/// with 16 hot columns and cold groups of 3 and of 64 (`hot_columns_group_width_3`, `_64`: the
/// SpMM sum / mean run as the cold pass plus the shared-memory pass, forward and the gradients
/// over the split transpose; groups of 3 send the cold split rows through the staging pass too),
/// and `staged_passes` (groups of 3 with a staging buffer of one vector per slot: the SpMM runs
/// its features in one pass per vector, as it does where a graph's staging would pass the
/// kernels' 32-bit index range).
///
/// ```ignore
/// testgen_device_conformance! {
///     backend: Autodiff<Wgpu>,
///     device: WgpuDevice::DefaultDevice,
///     uses_planes: |p| has_plane_ops(&WgpuRuntime::client(&WgpuDevice::DefaultDevice), p),
///     attributes: [],   // optional
/// }
/// ```
#[macro_export]
macro_rules! testgen_device_conformance {
    (backend: $B:ty, device: $device:expr, uses_planes: $planes:expr $(, attributes: $attrs:tt)? $(,)?) => {
        $crate::testgen_conformance! {
            backend: $B,
            device: $device,
            uses_planes: $planes,
            $(attributes: $attrs,)?
            configs: {
                defaults: $crate::conformance::ConformanceConfig::default() => [
                    spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense, maxpool,
                    cbsr_spgemm,
                ],
                split_rows: $crate::conformance::ConformanceConfig {
                    group_width: 3,
                    hub_degree: 2_000,
                    widths: vec![5, 64],
                    ..::core::default::Default::default()
                } => [
                    spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense, maxpool,
                    cbsr_spgemm,
                ],
                atomic_cbsr: $crate::conformance::ConformanceConfig {
                    filter: ::core::option::Option::Some("cbsr".into()),
                    group_width: 16,
                    policy: $crate::KernelPolicy { sspmm: $crate::SspmmStrategy::OuterAtomic, spgemm_atomic: true },
                    ..::core::default::Default::default()
                } => [cbsr_spgemm],
                atomic_cbsr_f16: $crate::conformance::ConformanceConfig {
                    filter: ::core::option::Option::Some("cbsr".into()),
                    group_width: 16,
                    policy: $crate::KernelPolicy { sspmm: $crate::SspmmStrategy::OuterAtomic, spgemm_atomic: true },
                    dtype: ::core::option::Option::Some(::burn::tensor::FloatDType::F16),
                    tolerance: 2e-2,
                    ..::core::default::Default::default()
                } => [cbsr_spgemm],
                hot_columns_group_width_3: $crate::conformance::ConformanceConfig {
                    filter: ::core::option::Option::Some("spmm".into()),
                    group_width: 3,
                    hub_degree: 2_000,
                    widths: vec![1, 5, 64],
                    hot_cols: ::core::option::Option::Some(16),
                    ..::core::default::Default::default()
                } => [spmm_sum, spmm_mean, spmm_max, sampled_spmm],
                staged_passes: $crate::conformance::ConformanceConfig {
                    filter: ::core::option::Option::Some("spmm".into()),
                    group_width: 3,
                    hub_degree: 2_000,
                    widths: vec![5, 64],
                    kernels: $crate::kernels::config::KernelConfig {
                        spmm: $crate::kernels::config::SpmmConfig {
                            stage_vectors: $crate::kernels::config::Choice::Forced(1),
                            ..::core::default::Default::default()
                        },
                        ..::core::default::Default::default()
                    },
                    ..::core::default::Default::default()
                } => [spmm_sum, spmm_mean, spmm_max, sampled_spmm],
                hot_columns_group_width_64: $crate::conformance::ConformanceConfig {
                    filter: ::core::option::Option::Some("spmm".into()),
                    group_width: 64,
                    hub_degree: 2_000,
                    widths: vec![1, 5, 64],
                    hot_cols: ::core::option::Option::Some(16),
                    ..::core::default::Default::default()
                } => [spmm_sum, spmm_mean, spmm_max, sampled_spmm],
            },
        }
    };
}

/// One `#[test]` per operation kind of the finite-difference checks of the f64 CPU backend
/// ([`assert_finite_differences`]), in the module `finite_differences`, with its
/// `every_case_has_one_test`.
///
/// ```ignore
/// testgen_finite_differences! {
///     config: ConformanceConfig { hub_degree: 1_500, ..Default::default() },
///     coords_per_input: 12,
///     ops: [spmm_sum, sddmm, ...],
/// }
/// ```
#[macro_export]
macro_rules! testgen_finite_differences {
    (config: $cfg:expr, coords_per_input: $coords:expr, ops: [$($op:ident),+ $(,)?] $(,)?) => {
        mod finite_differences {
            #[allow(unused_imports)]
            use super::*;

            fn base_config() -> $crate::conformance::ConformanceConfig {
                $cfg
            }

            $crate::testgen_conformance!(@cover [], [$($op),+]);

            $(
                #[test]
                fn $op() {
                    $crate::conformance::testgen::assert_finite_differences(
                        &base_config(),
                        $coords,
                        $crate::conformance::testgen::kind(stringify!($op)),
                    );
                }
            )+
        }
    };
}
