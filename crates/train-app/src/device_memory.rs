//! Device memory running out during a run. A run is refused before training when its estimate
//! does not fit (the train command); when the device runs out anyway (the estimate is a model,
//! other processes share the GPU), the runtime either returns an error at a synchronisation or
//! panics inside the allocating tensor op. [`catch_out_of_memory`] turns both into one error,
//! so a user sees what ran out and what to change, not a panic and a backtrace.

use crate::error::{AppError, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Whether a runtime message reports device memory running out (CubeCL: "can't allocate
/// buffer of size", CUDA: `CUDA_ERROR_OUT_OF_MEMORY`, wgpu: "out of memory").
pub fn is_out_of_memory(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["can't allocate buffer", "out of memory", "out_of_memory", "outofmemory", "buffertoobig"]
        .iter()
        .any(|s| m.contains(s))
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::new()
    }
}

/// The first line of a runtime message (its backtrace, if any, follows on later lines).
fn first_line(message: &str) -> String {
    message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("out of memory").to_string()
}

/// Runs `f`. When it panics with, or returns an [`AppError::Backend`] carrying, an
/// out-of-memory message, returns `Err(message)` (the first line; the panic is not printed);
/// any other panic goes on as before (printed and unwinding), any other result is returned.
pub fn catch_out_of_memory<T>(f: impl FnOnce() -> Result<T>) -> std::result::Result<Result<T>, String> {
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let chained = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if !is_out_of_memory(&panic_text(info.payload())) {
            chained(info);
        }
    }));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let _ours = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    match outcome {
        Ok(Err(AppError::Backend { msg, .. })) if is_out_of_memory(&msg) => Err(first_line(&msg)),
        Ok(result) => Ok(result),
        Err(payload) => {
            let text = panic_text(payload.as_ref());
            if is_out_of_memory(&text) {
                Err(first_line(&text))
            } else {
                std::panic::resume_unwind(payload)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_messages_are_recognised() {
        assert!(is_out_of_memory("can't allocate buffer of size: 123456\n   0: backtrace"));
        assert!(is_out_of_memory("CUDA allocation error: DriverError(CUDA_ERROR_OUT_OF_MEMORY)"));
        assert!(is_out_of_memory("Out of memory"));
        assert!(!is_out_of_memory("index out of bounds: the len is 3 but the index is 7"));
    }

    #[test]
    fn an_allocation_panic_becomes_an_error() {
        let r: std::result::Result<Result<()>, String> =
            catch_out_of_memory(|| panic!("can't allocate buffer of size: 1099511627776\nbacktrace line"));
        assert_eq!(r.unwrap_err(), "can't allocate buffer of size: 1099511627776");
    }

    #[test]
    fn a_backend_error_about_memory_becomes_an_error() {
        let r: std::result::Result<Result<()>, String> = catch_out_of_memory(|| {
            Err(AppError::Backend { backend: "device".into(), msg: "CUDA_ERROR_OUT_OF_MEMORY at sync".into() })
        });
        assert!(r.unwrap_err().contains("OUT_OF_MEMORY"));
    }

    #[test]
    fn other_results_and_panics_pass_through() {
        let r = catch_out_of_memory(|| Ok(7)).unwrap().unwrap();
        assert_eq!(r, 7);
        let e = catch_out_of_memory(|| -> Result<()> { Err(AppError::Config("x".into())) }).unwrap().unwrap_err();
        assert!(matches!(e, AppError::Config(_)));
        let other = std::panic::catch_unwind(|| catch_out_of_memory(|| -> Result<()> { panic!("a bug") }));
        assert!(other.is_err(), "a panic that is not about memory keeps unwinding");
    }
}
