//! A user who holds many grants (issue 25, item 1): one sign-in to one app after another, as a
//! CLI on many machines or a client that authorizes again and again does. No request's cost may
//! depend on how many grants its user holds: the records a bearer check, a refresh or an
//! exchange reads stay the same size, and an unlink ends them all in bounded steps — a page of
//! members per read and per transaction — after which everything is purged on time.

use edgegrant::*;
use edgegrant_tests::explorer::check_store;
use edgegrant_tests::*;

/// The bytes of every record `input` reads, and the largest read batch and transaction it
/// makes, run against a copy of `sim`'s store.
struct Touched {
    read_bytes: usize,
    largest_read: usize,
    largest_transaction: usize,
    transactions: usize,
}

fn touched(sim: &Sim, input: Input) -> (Touched, Store) {
    let mut store = sim.store.clone();
    let (mut request, mut step) =
        edgegrant::Request::start(sim.config.clone(), input, sim.now, entropy(7));
    let mut seen = Touched {
        read_bytes: 0,
        largest_read: 0,
        largest_transaction: 0,
        transactions: 0,
    };
    loop {
        let event = match step {
            Step::Read(keys) => {
                seen.largest_read = seen.largest_read.max(keys.len());
                let found: Vec<_> = keys
                    .into_iter()
                    .map(|key| {
                        let found = store.get(&key).cloned();
                        seen.read_bytes += found.as_ref().map_or(0, |s| s.bytes.len());
                        (key, found)
                    })
                    .collect();
                Event::Read(found)
            }
            Step::Write(transaction) => {
                seen.largest_transaction = seen.largest_transaction.max(transaction.puts.len());
                seen.transactions += 1;
                store.apply(&transaction).unwrap();
                Event::Committed
            }
            Step::Fetch(fetch) => store.fetch(&fetch),
            Step::Verify(verify) => Event::Verified(verify_signature(&verify)),
            Step::Respond(_) | Step::Serve(_) => return (seen, store),
        };
        step = request.advance(event).unwrap();
    }
}

fn bearer(access: &str) -> Input {
    Input::Http {
        request: bearer_request(GET_ACCOUNT, access),
        user: None,
    }
}

fn refresh(token: &str) -> Input {
    Input::Http {
        request: form_request(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", PKCE_APP),
        ]),
        user: None,
    }
}

#[test]
fn the_records_a_request_reads_do_not_grow_with_the_grants_its_user_holds() {
    let mut sim = Sim::new(fixture_config());
    let first = sim.pkce_offline_tokens(&alice());
    let text = |tokens: &serde_json::Value, name: &str| tokens[name].as_str().unwrap().to_owned();
    let (one_bearer, _) = touched(&sim, bearer(&text(&first, "access_token")));
    let (one_refresh, _) = touched(&sim, refresh(&text(&first, "refresh_token")));
    let mut last = first;
    for _ in 1..3_000 {
        last = sim.pkce_offline_tokens(&alice());
    }
    let (many_bearer, _) = touched(&sim, bearer(&text(&last, "access_token")));
    let (many_refresh, _) = touched(&sim, refresh(&text(&last, "refresh_token")));
    // The same records, of the same size (the link counts places; it lists nothing).
    assert_eq!(many_bearer.read_bytes, one_bearer.read_bytes);
    assert_eq!(many_refresh.read_bytes, one_refresh.read_bytes);
    let link_key = RecordKey::link(
        &fixture_key(),
        AppKey::new(PKCE_APP).unwrap(),
        alice().account_id,
    );
    let link = sim.store.get(&link_key).unwrap();
    assert!(link.bytes.len() < 128, "{} bytes", link.bytes.len());
    // The first grant still serves: nothing evicts it unless the operator bounds the count.
    assert!(matches!(
        sim.api(GET_ACCOUNT, &text(&last, "access_token")),
        Answer::Serve(_)
    ));
}

#[test]
fn an_unlink_ends_thousands_of_grants_in_bounded_steps_and_all_of_them_go() {
    let mut sim = Sim::new(fixture_config());
    let held: Vec<serde_json::Value> = (0..1_000)
        .map(|_| sim.pkce_offline_tokens(&alice()))
        .collect();
    // One of them revoked on the way: its member goes with it.
    let revoked = sim.revoke(held[500]["access_token"].as_str().unwrap());
    assert_eq!(revoked.status, 200);

    let unlink = Input::Unlink {
        app: AppKey::new(PKCE_APP).unwrap(),
        account_id: alice().account_id,
        by: Unlinker::User,
    };
    let (steps, store) = touched(&sim, unlink.clone());
    // A page of 32 members per step: the member, its grant and its refresh token each, the
    // link, and (in the first) the account's ledger; reads of at most a page of members (or of
    // their grants, or their tokens).
    assert!(
        steps.largest_transaction <= 3 * 32 + 2,
        "{}",
        steps.largest_transaction
    );
    assert!(steps.largest_read <= 2 * 32, "{}", steps.largest_read);
    assert!(steps.transactions >= 1_000 / 32, "{}", steps.transactions);
    sim.store = store;
    check_store(&fixture_key(), &sim.store);
    // Every grant refused at once; nothing left without a purge time.
    for tokens in [&held[0], &held[999]] {
        let refused = sim.refresh(tokens["refresh_token"].as_str().unwrap(), PKCE_APP, None);
        assert_eq!(oauth_error(&refused), "invalid_grant");
    }
    let kept: Vec<String> = sim
        .store
        .iter()
        .filter(|(key, _)| sim.store.purge_after(key).is_none())
        .map(|(key, _)| key.to_string())
        .collect();
    assert!(
        kept.is_empty(),
        "{} records kept, e.g. {:?}",
        kept.len(),
        kept.first()
    );
    sim.now = UnixTime(sim.now.0 + 2 * 14_400);
    sim.store.purge(sim.now);
    assert_eq!(sim.store.len(), 0, "everything went");
}

/// The members no unlink has swept yet (no purge time).
fn unswept_members(sim: &Sim) -> usize {
    sim.store
        .iter()
        .filter(|(key, _)| matches!(key, RecordKey::Member(..)))
        .filter(|(key, _)| sim.store.purge_after(key).is_none())
        .count()
}

#[test]
fn an_unlink_the_host_stopped_midway_is_finished_by_the_next() {
    let mut sim = Sim::new(fixture_config());
    for _ in 0..100 {
        sim.pkce_offline_tokens(&alice());
    }
    let unlink = Input::Unlink {
        app: AppKey::new(PKCE_APP).unwrap(),
        account_id: alice().account_id,
        by: Unlinker::User,
    };
    // The host stops after its first transaction: the epoch moved, one page was swept.
    let (mut request, mut step) =
        edgegrant::Request::start(sim.config.clone(), unlink.clone(), sim.now, entropy(5));
    let mut written = 0;
    while written < 1 {
        let event = match step {
            Step::Read(keys) => sim.store.read(keys),
            Step::Write(transaction) => {
                sim.store.apply(&transaction).unwrap();
                written += 1;
                Event::Committed
            }
            other => panic!("ended early: {other:?}"),
        };
        step = request.advance(event).unwrap();
    }
    drop(request);
    assert_eq!(unswept_members(&sim), 100 - 32, "one page swept");
    // Access ended with the first transaction; the user unlinks again (or the host retries).
    assert_eq!(sim.run(unlink).outcome(), &Outcome::Unlinked);
    assert_eq!(unswept_members(&sim), 0);
    check_store(&fixture_key(), &sim.store);
}

#[test]
fn an_unlink_past_one_requests_pages_answers_within_the_bound_and_the_next_sweeps_on() {
    let mut sim = Sim::new(fixture_config());
    let page = 32;
    let held = SWEEP_PAGES_PER_REQUEST as usize * page + 40;
    let tokens: Vec<serde_json::Value> = (0..held)
        .map(|_| sim.pkce_offline_tokens(&alice()))
        .collect();
    let unlink = Input::Unlink {
        app: AppKey::new(PKCE_APP).unwrap(),
        account_id: alice().account_id,
        by: Unlinker::User,
    };
    // The harness fails any request that asks for more than `Request::max_steps`.
    assert_eq!(sim.run(unlink.clone()).outcome(), &Outcome::Unlinked);
    assert_eq!(
        unswept_members(&sim),
        40,
        "as many pages as one request may write"
    );
    // Every grant ended at once, swept or not.
    let last = &tokens[held - 1];
    let refused = sim.refresh(last["refresh_token"].as_str().unwrap(), PKCE_APP, None);
    assert_eq!(oauth_error(&refused), "invalid_grant");
    assert_eq!(sim.run(unlink).outcome(), &Outcome::Unlinked);
    assert_eq!(
        unswept_members(&sim),
        0,
        "the pair's next unlink swept the rest"
    );
    check_store(&fixture_key(), &sim.store);
}

#[test]
fn an_operator_bound_on_live_grants_revokes_the_oldest() {
    let mut doc = fixture_document();
    doc.policy.live_grants_per_link = Some(3);
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let held: Vec<serde_json::Value> = (0..5).map(|_| sim.pkce_offline_tokens(&alice())).collect();
    let evicted = sim
        .audit
        .iter()
        .filter(|e| matches!(e, AuditEvent::GrantEvicted { .. }))
        .count();
    assert_eq!(
        evicted, 2,
        "the fourth and fifth sign-ins each evicted the oldest"
    );
    for (i, tokens) in held.iter().enumerate() {
        let answer = sim.refresh(tokens["refresh_token"].as_str().unwrap(), PKCE_APP, None);
        let live = answer.status == 200;
        assert_eq!(live, i >= 2, "grant {i}: {}", answer.body);
    }
    check_store(&fixture_key(), &sim.store);
    // The bound is checked in the configuration.
    let mut doc = fixture_document().to_json_value();
    doc["policy"]["live_grants_per_link"] = serde_json::json!(0);
    let error = ConfigDocument::from_json_value(&doc)
        .unwrap_err()
        .to_string();
    assert!(error.contains("policy.live_grants_per_link"), "{error}");
}

#[test]
fn under_an_idle_lifetime_an_unused_grant_ends_and_goes_by_itself() {
    const IDLE: u64 = 86_400;
    let mut doc = fixture_document();
    doc.policy.refresh_idle_lifetime = Some(Seconds(IDLE));
    // The reference profile's refresh tokens never expire (SPEC.md): refused there.
    assert!(Config::new(doc.clone())
        .unwrap_err()
        .to_string()
        .contains("standards profile"));
    doc.profile = standards_config(Rotation::default()).profile().clone();
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let code = sim.code_for(&conf_query("offline", "i"), &alice());
    let tokens = json(&sim.exchange_confidential(&code));
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let issued = sim.now;
    // Nothing it owns is kept beyond its deadline plus an access token's lifetime.
    let deadline = issued.0 + IDLE;
    for (key, _) in sim.store.iter() {
        if matches!(key, RecordKey::Link(..)) {
            continue;
        }
        let purge = sim.store.purge_after(key).map(|t| t.0);
        assert!(
            purge.is_some_and(|t| t <= deadline + 14_400),
            "{key}: {purge:?}"
        );
    }
    // Unused to the deadline: ended; purged afterwards, and the answer stays the same.
    sim.now = UnixTime(deadline);
    let ended = sim.refresh_answer(&refresh, CONF_APP, Some(CONF_SECRET));
    assert_eq!(ended.refusal(), Some(&Refusal::RefreshTokenIdle));
    sim.now = UnixTime(deadline + 14_400);
    sim.store.purge(sim.now);
    let gone = sim.refresh(&refresh, CONF_APP, Some(CONF_SECRET));
    assert_eq!(oauth_error(&gone), "invalid_grant");
    let left: Vec<String> = sim
        .store
        .iter()
        .filter(|(key, _)| !matches!(key, RecordKey::Link(..)))
        .map(|(key, _)| key.to_string())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
