//! The committed files generated from the register map (`sw-driver/src/regs.rs`,
//! `docs/REGISTERS.md`) are current: rendering the map again gives the same text.

use nicgen::regmap::{rendered, REGEN};

#[test]
fn generated_files_are_current() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (path, text) in rendered() {
        let old = std::fs::read_to_string(root.join(path)).unwrap_or_default();
        assert!(
            old == text,
            "{path} is stale (or missing): it differs from hdl/src/host/regmap.rs; run `{REGEN}` and commit the result"
        );
    }
}

#[test]
fn the_map_is_consistent() {
    assert_eq!(nicgen_hdl::host::regmap::check(), Vec::<String>::new());
}
