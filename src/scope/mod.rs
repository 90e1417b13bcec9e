//! What one instance reads, as pure rules decided at open (and by discovery): nothing here
//! talks to Fluss.
//!
//! - [`share`]: which buckets this instance of several owns (scale-out);
//! - [`stop`]: where a bounded read stops (`stopping_offset`);
//! - [`prune`]: which partitions are read (`partitions`).

pub mod prune;
pub mod share;
pub mod stop;
