//! `gen`, `info`, `export` and `partition`: datasets in and out, partition statistics.

use crate::cli::{ExportArgs, GenKind, InfoArgs, PartitionArgs};
use burn_sparse_gnn::BuildOptions;
use train_app::error::{AppError, Result};
use train_app::{datasets, gen, npyio};

pub fn export(a: ExportArgs) -> Result<()> {
    let d = datasets::load(&a.dataset, BuildOptions::default())?;
    let d = train_app::training::apply_split(d, a.split.as_deref(), a.seed)?;
    datasets::npy::save(&d, &a.out)?;
    let s = d.stats();
    let split =
        s.split_sizes.map(|[t, v, e]| format!("train {t}, valid {v}, test {e}")).unwrap_or_else(|| "none".into());
    eprintln!("exported {} ({} nodes, {} edges, split {split}) to {}", s.name, s.nodes, s.edges, a.out.display());
    Ok(())
}

pub fn info(a: InfoArgs) -> Result<()> {
    let d = datasets::load(&a.dataset, BuildOptions::default())?;
    let stats = d.stats();
    if a.json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| AppError::Config(e.to_string()))?;
        println!("{text}");
    } else {
        println!("{stats}");
    }
    Ok(())
}

pub fn gen(kind: GenKind) -> Result<()> {
    match kind {
        GenKind::Rmat { nodes, edges, a, b, c, seed, features, classes, out } => {
            let name = out.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "rmat".into());
            if features > 0 {
                // refuse impossible node data before spending minutes on the edges
                gen::check_node_data(&name, nodes, features, classes)?;
            }
            let start = std::time::Instant::now();
            let adj = gen::rmat(&gen::RmatSpec { nodes, edges, a, b, c, seed })?;
            let deg = adj.row_degrees();
            eprintln!(
                "R-MAT: {} nodes, {} edges, max degree {}, {} empty rows ({:.1} s)",
                adj.n_rows(),
                adj.nnz(),
                deg.iter().max().unwrap_or(&0),
                deg.iter().filter(|&&d| d == 0).count(),
                start.elapsed().as_secs_f64()
            );
            train_app::fsutil::make_out_dir(&out)?;
            if features == 0 {
                npyio::write(&out.join("num_nodes.npy"), &[], &[nodes as i64])?;
                datasets::npy::save_adjacency(&adj, &out)
            } else {
                let d = gen::random_node_data(adj, &name, features, classes, seed)?;
                datasets::npy::save(&d, &out)
            }
        }
        GenKind::Sbm { nodes, classes, avg_degree, homophily, features, seed, out } => {
            let d = gen::sbm(&gen::SbmSpec {
                nodes,
                classes,
                avg_degree,
                homophily,
                features,
                seed,
                ..Default::default()
            })?;
            datasets::npy::save(&d, &out)?;
            println!(
                "SBM: {} nodes, {} edges, {} features, {} classes written to {}",
                d.num_nodes(),
                d.adjacency().nnz(),
                features,
                classes,
                out.display()
            );
            Ok(())
        }
    }
}

pub fn partition(a: PartitionArgs) -> Result<()> {
    use burn_sparse_gnn::partition::{PartitionOptions, PartitionedGraph};
    let d = datasets::load(&a.dataset, BuildOptions::default())?;
    let adj = d.adjacency();
    let method = a.method.parse().map_err(|e| AppError::Config(format!("--method: {e}")))?;
    for &parts in &a.parts {
        let start = std::time::Instant::now();
        let p = train_app::partitioned::partition_with_progress(adj, &PartitionOptions { parts, method, seed: 1 })?;
        let seconds = start.elapsed().as_secs_f64();
        if let Some(base) = &a.cache {
            let path = std::path::PathBuf::from(format!("{}-{parts}.part", base.display()));
            p.save(adj, &path).map_err(|e| AppError::Config(format!("{}: {e}", path.display())))?;
        }
        let pg = PartitionedGraph::build(adj, &p).map_err(|e| AppError::Config(format!("partition: {e}")))?;
        let mut v = serde_json::to_value(pg.stats()).map_err(|e| AppError::Config(e.to_string()))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("graph".into(), serde_json::json!(d.name));
            o.insert("partition_seconds".into(), serde_json::json!(seconds));
        }
        println!("{v}");
    }
    Ok(())
}
