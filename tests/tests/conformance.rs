//! Runner 1 of the conformance corpus: every vector of `conformance/vectors/` against the core.
//! A vector the core cannot run says why in the vector; it is reported, never skipped silently.

use std::time::Instant;

use edgegrant_tests::conformance::{load_corpus, run_vector};
use edgegrant_tests::report;

#[test]
fn every_vector_passes_against_the_core() {
    let started = Instant::now();
    let corpus = load_corpus().expect("the corpus loads");
    assert!(!corpus.is_empty(), "no vectors found");
    let (mut passed, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for vector in &corpus {
        if let Some(reason) = &vector.unsupported {
            skipped.push(format!("{} ({}): {reason}", vector.id, vector.file));
            continue;
        }
        match run_vector(vector) {
            Ok(()) => passed += 1,
            Err(failure) => failures.push(format!("{} ({}): {failure}", vector.id, vector.file)),
        }
    }
    for skip in &skipped {
        println!("skipped {skip}");
    }
    report(&format!(
        "conformance (core): {passed} passed, {} skipped, {} failed, of {} vectors in {:.2?}",
        skipped.len(),
        failures.len(),
        corpus.len(),
        started.elapsed()
    ));
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
