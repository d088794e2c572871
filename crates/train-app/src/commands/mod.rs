//! One module per command; [`run`] dispatches the parsed command line.

pub mod bench;
pub mod data;
pub mod eval;
mod folds;
pub mod graph;
pub mod link;
mod memory;
pub mod train;

use crate::cli::{Cli, Command};
use clap::ArgMatches;
use train_app::backend::dispatch;
use train_app::error::Result;
use train_app::selftest;

/// Runs the parsed command (`train` with its defaults when none is given); `matches` tells
/// which `train` flags were given on the command line.
pub fn run(cli: Cli, matches: &ArgMatches) -> Result<()> {
    match cli.command {
        None => {
            use clap::{CommandFactory, FromArgMatches};
            let defaults = Cli::command()
                .try_get_matches_from(["train-app", "train"])
                .map_err(|e| train_app::AppError::Config(e.to_string()))?;
            let cli = Cli::from_arg_matches(&defaults).map_err(|e| train_app::AppError::Config(e.to_string()))?;
            match cli.command {
                Some(Command::Train(a)) => train::run(a, None),
                _ => Ok(()),
            }
        }
        Some(Command::Train(a)) => train::run(a, matches.subcommand_matches("train")),
        Some(Command::Eval(a)) => eval::eval(a),
        Some(Command::Predict(a)) => eval::predict(a),
        Some(Command::Selftest(a)) => dispatch(a.backend, selftest::SelfTest { quick: a.quick, filter: a.filter }),
        Some(Command::BenchTrain(a)) => bench::bench_train(a),
        Some(Command::Export(a)) => data::export(a),
        Some(Command::Partition(a)) => data::partition(a),
        Some(Command::Info(a)) => data::info(a),
        Some(Command::Gen { kind }) => data::gen(kind),
        Some(Command::Bench(a)) => bench::bench(a),
    }
}
