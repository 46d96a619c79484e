//! The request parsers (routing, query, form body, headers, Basic and Bearer credentials, the
//! consent form's origin check) through the whole host loop, on a store holding live codes and
//! tokens: no panic, no 5xx, no host misuse, and the store stays consistent.
#![no_main]
use edgegrant_fuzz::{parse_request, seeded, serve};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let seeded = seeded();
    if let Some(input) = parse_request(data, seeded) {
        let mut store = seeded.store.clone();
        if let Err(misuse) = serve(&seeded.config, &mut store, seeded.now, input, true) {
            panic!("host misuse from a well-behaved host: {misuse}");
        }
    }
});
