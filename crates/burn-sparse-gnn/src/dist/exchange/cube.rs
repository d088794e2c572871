//! `CubeBackend` implementation of [`super::ExchangeOps`]: the trait's default (composed) methods.

use super::ExchangeOps;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;

impl<R, F, I, BT> ExchangeOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
}
