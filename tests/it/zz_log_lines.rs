//! Runs last (libtest orders tests by name, and the suite runs them one at a time): every
//! ERROR and WARN line the plugin logged during the whole integration run states each cause
//! once. A cause printed by an error and again by its chain shows up as a repeated segment.

use fluss_source_runner::{logs, Level};

use crate::bad_input::assert_no_repeated_cause;

#[test]
fn zz_no_error_or_warn_line_of_the_suite_repeats_a_cause() {
    let lines: Vec<String> = logs()
        .into_iter()
        .filter(|l| matches!(l.level, Level::Error | Level::Warn))
        .map(|l| l.message)
        .collect();
    for line in &lines {
        assert_no_repeated_cause(line);
    }
    eprintln!(
        "zz_no_error_or_warn_line_of_the_suite_repeats_a_cause: {} ERROR/WARN lines checked",
        lines.len()
    );
}
