//! The `--nonlin` option's text.

use crate::error::{AppError, Result};
use gnn_models::Nonlinearity;

/// Parses `relu`, `maxk:K`, `maxpool:W`, `maxpool:WxC`, `maxpool:WxC:2d`.
pub fn parse_nonlin(s: &str) -> Result<Nonlinearity> {
    let bad = || AppError::Config(format!("--nonlin `{s}`: expected relu, maxk:K or maxpool:W[xC][:2d]"));
    let mut parts = s.split(':');
    match parts.next() {
        Some("relu") if parts.next().is_none() => Ok(Nonlinearity::Relu),
        Some("maxk") => {
            let k = parts.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
            if parts.next().is_some() {
                return Err(bad());
            }
            Ok(Nonlinearity::Maxk { k })
        }
        Some("maxpool") => {
            let wc = parts.next().ok_or_else(bad)?;
            let (w, c) = match wc.split_once('x') {
                Some((w, c)) => (w.parse().map_err(|_| bad())?, c.parse().map_err(|_| bad())?),
                None => (wc.parse().map_err(|_| bad())?, 1),
            };
            let two_d = match parts.next() {
                None => false,
                Some("2d") => true,
                Some(_) => return Err(bad()),
            };
            Ok(Nonlinearity::Maxpool { windows: w, channels: c, two_d })
        }
        _ => Err(bad()),
    }
}
