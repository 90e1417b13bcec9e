//! No code: this crate only names dependencies with the features the whole workspace's build
//! enables (see its `Cargo.toml`), so every cargo command of the workspace resolves one set of
//! features and shares one build.
