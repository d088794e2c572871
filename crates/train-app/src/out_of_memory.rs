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

/// The first line of a runtime message (its backtrace, if any, follows on later lines),
/// without the `unwrap` wording of a runtime panic.
fn first_line(message: &str) -> String {
    let line = message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("out of memory");
    line.trim_start_matches("called `Result::unwrap()` on an `Err` value: ").to_string()
}

/// Runs `f`. When it panics with, or returns an [`AppError::Backend`] carrying, an
/// out-of-memory message, or any thread panics with one while `f` runs, returns `Err(message)` (the first line; the panic is not printed);
/// any other panic goes on as before (printed and unwinding), any other result is returned.
///
/// The CUDA runtime allocates on its device thread: there the allocation panics, and the
/// calling thread then fails with an unrelated message ("CallError", a missing memory page).
/// So an out-of-memory panic on any thread while `f` runs is remembered, and the panics that
/// follow it are its consequences: not printed, and reported as that out-of-memory.
pub fn catch_out_of_memory<T>(f: impl FnOnce() -> Result<T>) -> std::result::Result<Result<T>, String> {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let previous = Arc::new(std::panic::take_hook());
    let (chained, record) = (previous.clone(), seen.clone());
    std::panic::set_hook(Box::new(move |info| {
        let text = panic_text(info.payload());
        let mut first = record.lock().unwrap_or_else(|e| e.into_inner());
        if is_out_of_memory(&text) {
            first.get_or_insert_with(|| first_line(&text));
        } else if first.is_none() {
            drop(first);
            chained(info);
        }
    }));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let _ours = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match outcome {
        Ok(Err(AppError::Backend { msg, .. })) if is_out_of_memory(&msg) || seen.is_some() => {
            Err(seen.unwrap_or_else(|| first_line(&msg)))
        }
        // the device thread's allocation failed but the caller went on: its results are not
        // to be trusted
        Ok(_) if seen.is_some() => Err(seen.unwrap_or_default()),
        Ok(result) => Ok(result),
        Err(payload) => {
            let text = panic_text(payload.as_ref());
            match seen {
                Some(first) => Err(first),
                None if is_out_of_memory(&text) => Err(first_line(&text)),
                None => std::panic::resume_unwind(payload),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The panic hook is process-wide: the tests that install it run one at a time.
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn hook() -> std::sync::MutexGuard<'static, ()> {
        HOOK.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn runtime_messages_are_recognised() {
        assert!(is_out_of_memory("can't allocate buffer of size: 123456\n   0: backtrace"));
        assert!(is_out_of_memory("CUDA allocation error: DriverError(CUDA_ERROR_OUT_OF_MEMORY)"));
        assert!(is_out_of_memory("Out of memory"));
        assert!(!is_out_of_memory("index out of bounds: the len is 3 but the index is 7"));
    }

    #[test]
    fn an_allocation_panic_becomes_an_error() {
        let _one = hook();
        let r: std::result::Result<Result<()>, String> = catch_out_of_memory(|| {
            panic!(
                "called `Result::unwrap()` on an `Err` value: can't allocate buffer of size: 1099511627776\nbacktrace"
            )
        });
        assert_eq!(r.unwrap_err(), "can't allocate buffer of size: 1099511627776");
    }

    #[test]
    fn a_backend_error_about_memory_becomes_an_error() {
        let _one = hook();
        let r: std::result::Result<Result<()>, String> = catch_out_of_memory(|| {
            Err(AppError::Backend { backend: "device".into(), msg: "CUDA_ERROR_OUT_OF_MEMORY at sync".into() })
        });
        assert!(r.unwrap_err().contains("OUT_OF_MEMORY"));
    }

    #[test]
    fn a_panic_after_an_allocation_panic_on_another_thread_is_that_out_of_memory() {
        let _one = hook();
        let r: std::result::Result<Result<()>, String> = catch_out_of_memory(|| {
            let worker = std::thread::spawn(|| panic!("can't allocate buffer of size: 11370869760"));
            assert!(worker.join().is_err());
            panic!("called `Result::unwrap()` on an `Err` value: CallError")
        });
        assert_eq!(r.unwrap_err(), "can't allocate buffer of size: 11370869760");
    }

    #[test]
    fn a_run_that_goes_on_after_an_allocation_panic_elsewhere_is_that_out_of_memory() {
        let _one = hook();
        let r = catch_out_of_memory(|| {
            let worker = std::thread::spawn(|| panic!("can't allocate buffer of size: 3280035840"));
            assert!(worker.join().is_err());
            Ok(5)
        });
        assert_eq!(r.unwrap_err(), "can't allocate buffer of size: 3280035840");
    }

    #[test]
    fn other_results_and_panics_pass_through() {
        let _one = hook();
        let r = catch_out_of_memory(|| Ok(7)).unwrap().unwrap();
        assert_eq!(r, 7);
        let e = catch_out_of_memory(|| -> Result<()> { Err(AppError::Config("x".into())) }).unwrap().unwrap_err();
        assert!(matches!(e, AppError::Config(_)));
        let other = std::panic::catch_unwind(|| catch_out_of_memory(|| -> Result<()> { panic!("a bug") }));
        assert!(other.is_err(), "a panic that is not about memory keeps unwinding");
    }
}
