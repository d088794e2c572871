//! The results of a conformance run: one [`CaseResult`] per check, gathered in a [`Report`].

use std::fmt::Write as _;

/// One checked case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Operation.
    pub op: String,
    /// Case description.
    pub case: String,
    /// What was compared (`forward`, `grad x`, ...).
    pub check: String,
    /// Normwise error: `max |a - b| / max(max |b|, 1)`.
    pub error: f64,
    /// Passed?
    pub passed: bool,
    /// Why it was skipped, if it was.
    pub skipped: Option<String>,
}

/// The results of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Backend name.
    pub backend: String,
    /// Every check.
    pub results: Vec<CaseResult>,
}

impl Report {
    /// Whether every check that ran passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.passed || r.skipped.is_some())
    }
    /// Checks that failed.
    pub fn failures(&self) -> Vec<&CaseResult> {
        self.results.iter().filter(|r| !r.passed && r.skipped.is_none()).collect()
    }
    /// A pass / fail table, one line per check, and a summary line.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{:<14} {:<46} {:<10} {:>10}  status", "op", "case", "check", "error");
        for r in &self.results {
            let status = match (&r.skipped, r.passed) {
                (Some(why), _) => format!("skipped: {why}"),
                (None, true) => "ok".into(),
                (None, false) => "FAIL".into(),
            };
            let _ = writeln!(s, "{:<14} {:<46} {:<10} {:>10.2e}  {status}", r.op, r.case, r.check, r.error);
        }
        let fails = self.failures().len();
        let _ = writeln!(
            s,
            "{}: {} checks, {} failed, {} skipped",
            self.backend,
            self.results.len(),
            fails,
            self.results.iter().filter(|r| r.skipped.is_some()).count()
        );
        s
    }
}
