//! The built plugin library exports exactly the runtime's five source symbols, and loads and
//! reports its version over the C ABI. `cargo test` builds the cdylib these tests load
//! ([`fluss_testkit::plugin_path`]), so they need no step before it.

use fluss_testkit::plugin_path as plugin_library;

#[test]
fn the_plugin_exports_exactly_the_five_source_symbols() {
    let symbols = fluss_source_runner::exported_iggy_symbols(&plugin_library())
        .expect("nm (binutils) is installed");
    assert_eq!(symbols, fluss_source_runner::SOURCE_SYMBOLS);
}

#[test]
fn the_plugin_loads_and_refuses_a_null_config() {
    let harness = fluss_source_runner::Harness::load(plugin_library()).expect("load");
    assert_eq!(harness.version(), env!("CARGO_PKG_VERSION"));
    match harness.open("null", None) {
        Err(fluss_source_runner::Error::OpenFailed { code, .. }) => assert_ne!(code, 0),
        other => panic!("open with a null config must fail, got {other:?}"),
    }
    assert!(fluss_source_runner::logs()
        .iter()
        .any(|l| l.level == fluss_source_runner::Level::Error
            && l.message.contains("no [plugin_config] section")));
}
