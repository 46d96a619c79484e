//! A web of client metadata documents as a table, for test mode (and the test harness, which
//! shares this file): what a guarded fetch of each URL gets.

use std::collections::HashMap;

use edgegrant::{Event, Fetch, FetchFailure, Fetched};

/// By URL, what a fetch gets: the answer, or why none came.
pub type Web = HashMap<String, Result<Fetched, FetchFailure>>;

/// What the host's fetch reports for `fetch` from `web`: the web's answer, held to the fetch's
/// size limit as the package's fetch is; a URL the web does not hold is unreachable.
pub fn answer(web: &Web, fetch: &Fetch) -> Event {
    match web.get(&fetch.url) {
        Some(Ok(fetched)) if fetched.body.len() > fetch.max_bytes as usize => {
            Event::FetchFailed(FetchFailure::TooLarge)
        }
        Some(Ok(fetched)) => Event::Fetched(fetched.clone()),
        Some(Err(failure)) => Event::FetchFailed(*failure),
        None => Event::FetchFailed(FetchFailure::Unreachable),
    }
}
