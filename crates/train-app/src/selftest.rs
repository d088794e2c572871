//! `selftest`: the conformance suite on the chosen device, as a pass / fail table.

use crate::backend::Job;
use crate::error::{AppError, Result};
use burn_sparse_gnn::conformance::{run, ConformanceConfig};
use burn_sparse_gnn::{KernelPolicy, SparseGnnAutodiffBackend, SspmmStrategy};

/// What `selftest` runs.
pub struct SelfTest {
    pub quick: bool,
    pub filter: Option<String>,
}

impl Job for SelfTest {
    type Output = ();

    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        let base = ConformanceConfig {
            hub_degree: if self.quick { 2_000 } else { 10_000 },
            filter: self.filter.clone(),
            ..Default::default()
        };
        let mut runs = vec![("default kernels", base.clone())];
        runs.push((
            "split rows (group width 7)",
            ConformanceConfig { group_width: 7, widths: vec![7, 64], ..base.clone() },
        ));
        runs.push((
            "atomic CBSR variants",
            ConformanceConfig {
                filter: Some(self.filter.clone().unwrap_or_else(|| "cbsr".into())),
                group_width: 16,
                policy: KernelPolicy { sspmm: SspmmStrategy::OuterAtomic, spgemm_atomic: true },
                ..base.clone()
            },
        ));
        for (name, dtype) in
            [("f16 storage", burn::tensor::FloatDType::F16), ("bf16 storage", burn::tensor::FloatDType::BF16)]
        {
            runs.push((
                name,
                ConformanceConfig {
                    dtype: Some(dtype),
                    tolerance: 2e-2,
                    hub_degree: 4_000,
                    widths: vec![7, 64],
                    ..base.clone()
                },
            ));
        }
        let plane_fallback =
            ("shared-memory fallbacks (SGNN_NO_PLANE=1)", ConformanceConfig { widths: vec![7, 64], ..base.clone() });
        runs.push(plane_fallback);
        let mut failed = 0;
        let mut total = 0;
        for (name, cfg) in runs {
            let start = std::time::Instant::now();
            let no_plane = name.contains("SGNN_NO_PLANE");
            if no_plane {
                std::env::set_var("SGNN_NO_PLANE", "1");
            }
            let report = run::<B>(&device, &cfg);
            if no_plane {
                std::env::remove_var("SGNN_NO_PLANE");
            }
            println!("== {backend}: {name} ({:.1} s)", start.elapsed().as_secs_f64());
            println!("{}", report.table());
            failed += report.failures().len();
            total += report.results.len();
        }
        if failed > 0 {
            return Err(AppError::SelfTest(format!("{failed} of {total} checks failed on {backend}")));
        }
        println!("selftest {backend}: all {total} checks passed");
        Ok(())
    }
}
