//! One operation of the native benchmarks, run `N` times in the same bench host, for profilers:
//! `perf record`, or valgrind's callgrind for instruction counts that do not move with the
//! machine's load (a shared 2-core machine makes timings noisy; counts are exact).
//!
//! ```sh
//! cargo build --release -p edgegrant-tests --example profile_loop
//! target/release/examples/profile_loop bearer 20000        # ns and allocations per operation
//! valgrind --tool=callgrind --toggle-collect='profile_loop::run' \
//!     target/release/examples/profile_loop bearer 20000    # the loop alone, not the set-up
//! callgrind_annotate --inclusive=yes callgrind.out.*
//! ```
//!
//! Operations: `bearer` (bearer validation), `refresh` (the reusable refresh token), `exchange`
//! (the token request redeeming a fresh code; codes are made beforehand, outside `run`), and
//! `registered-bearer`, `document-bearer`: the bearer check of an app that registered itself
//! and of a metadata-document client, whose records are stored ([`AppKinds`]). The
//! writing operations put the store back as it was every
//! [`RESTORE_EVERY`](edgegrant_tests::bench_host::RESTORE_EVERY) operations, as the benchmarks do.
//! Under valgrind SHA-256 runs in software (about 3 600 instructions per block), where the
//! benchmarks' machines use the CPU's SHA extensions. Count allocations with the loop's own
//! counter, not with callgrind's call counts: those include the set-up outside `run`.
use std::alloc::System;
use std::hint::black_box;
use std::time::{Duration, Instant};

use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

use edgegrant::{HttpRequest, Input, Outcome, Step};
use edgegrant_tests::bench_host::{exchange_request, AppKinds, Host, Populated, RESTORE_EVERY};
use edgegrant_tests::{bearer_request, form_request, user, GET_ACCOUNT, PKCE_APP};

/// The system allocator, counting: how many allocations an operation makes is printed beside its
/// time (each is a call into the allocator; in wasm, into talc).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    let operation = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "bearer".to_owned());
    let count: u64 = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    // A stored app's bearer check runs in the world of the three kinds of app.
    let stored = ["registered-bearer", "document-bearer"]
        .iter()
        .position(|op| *op == operation);
    let Populated {
        mut host,
        mut access,
        refresh,
        query,
    } = Populated::new();
    if let Some(index) = stored {
        let mut kinds = AppKinds::new(10_000);
        access = kinds.tokens(index + 1).0;
        host = kinds.host;
    }
    let snapshot = host.store.clone();
    let mut timed = Duration::ZERO;
    let mut allocations = 0;
    let mut done = 0;
    while done < count {
        let batch = (count - done).min(RESTORE_EVERY);
        let requests: Vec<HttpRequest> = match operation.as_str() {
            "bearer" | "registered-bearer" | "document-bearer" => {
                vec![bearer_request(GET_ACCOUNT, &access)]
            }
            "refresh" => vec![form_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("client_id", PKCE_APP),
            ])],
            "exchange" => (0..batch)
                .map(|i| {
                    let who = user(&format!("dbid:AAProfile{i:030}"), &format!("p{i}"));
                    exchange_request(&host.consented_code(&query, who))
                })
                .collect(),
            other => panic!(
                "unknown operation {other}: bearer, refresh, exchange, registered-bearer or \
                 document-bearer"
            ),
        };
        let (start, region) = (Instant::now(), Region::new(GLOBAL));
        run(&mut host, &requests, batch);
        timed += start.elapsed();
        let change = region.change();
        allocations += change.allocations + change.reallocations;
        done += batch;
        host.store = snapshot.clone();
    }
    println!(
        "{operation}: {:.0} ns and {:.1} allocations per operation ({count} operations)",
        timed.as_nanos() as f64 / count as f64,
        allocations as f64 / count as f64
    );
}

/// The profiled part: `batch` operations, each request cloned in as a host receives it (one
/// request used for all of them, or one each).
#[inline(never)]
fn run(host: &mut Host, requests: &[HttpRequest], batch: u64) {
    for i in 0..batch as usize {
        let request = requests.get(i).unwrap_or(&requests[0]).clone();
        let finished = host.serve(Input::Http {
            request,
            user: None,
        });
        match &finished {
            Step::Serve(_) => {}
            Step::Respond(reply) if reply.outcome == Outcome::Tokens => {}
            other => panic!("the operation failed: {other:?}"),
        }
        black_box(finished);
    }
}
