//! Limits on failed credential checks (issue 15, RFC 6749 §10.10): counted per app and per
//! source at the token endpoint, per account name and source at the host's own sign-in
//! (`Input::Attempts`), in the store, to the exact second the window ends. The per-app limit at
//! the token endpoint is also a conformance vector (`attempts/client-secret-limit`).

use edgegrant::*;
use edgegrant_tests::*;

const WINDOW: u64 = 60;

fn sim_with_limits(per_client: u32, per_source: u32, per_account: u32) -> Sim {
    let mut doc = fixture_document();
    doc.policy.attempts = AttemptLimits {
        window: Seconds(WINDOW),
        per_client,
        per_source,
        per_account,
    };
    Sim::new(Config::new(doc).unwrap())
}

/// A refresh of an unknown token by `app` with `secret`, from `source`: what is decided first
/// is the client authentication, which is what these tests are about.
fn token_request(sim: &mut Sim, app: &str, secret: &str, source: &str) -> Answer {
    let mut request = form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", "no-such-token"),
        ("client_id", app),
        ("client_secret", secret),
    ]);
    request.source = Some(source.to_owned());
    sim.token_answer(request)
}

#[test]
fn failures_are_counted_per_source_across_apps_and_unknown_keys() {
    let mut sim = sim_with_limits(0, 3, 0);
    // Three failures from one address, against three different app keys (one unknown).
    for app in [CONF_APP, TEAM_APP, "no-such-app"] {
        let answer = token_request(&mut sim, app, "guess", "198.51.100.7");
        assert_eq!(answer.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    }
    // That address is held, whatever it presents; another address is not.
    let held = token_request(&mut sim, CONF_APP, CONF_SECRET, "198.51.100.7");
    assert_eq!(
        held.refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(WINDOW)))
    );
    let response = http(held);
    assert_eq!(response.status, 429);
    assert_eq!(response.header("Retry-After"), Some("60"));
    let other = token_request(&mut sim, CONF_APP, CONF_SECRET, "203.0.113.9");
    assert_eq!(other.refusal(), Some(&Refusal::UnknownRefreshToken));
    // The unknown key created no count of its own: only the source and the two real apps'.
    let counts = sim
        .store
        .iter()
        .filter(|(key, _)| matches!(key, RecordKey::Attempts(_)))
        .count();
    assert_eq!(counts, 3);
    // Exactly at the window's end the address may try again.
    sim.now = UnixTime(T0.0 + WINDOW - 1);
    let last_second = token_request(&mut sim, CONF_APP, CONF_SECRET, "198.51.100.7");
    assert_eq!(
        last_second.refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(1)))
    );
    sim.now = UnixTime(T0.0 + WINDOW);
    let again = token_request(&mut sim, CONF_APP, CONF_SECRET, "198.51.100.7");
    assert_eq!(again.refusal(), Some(&Refusal::UnknownRefreshToken));
}

#[test]
fn a_public_app_without_a_secret_is_never_held() {
    let mut sim = sim_with_limits(1, 1, 0);
    let tokens = sim.pkce_offline_tokens(&alice());
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    // A failure from the same source holds secret-bearing requests from it...
    let failed = token_request(&mut sim, CONF_APP, "guess", "192.0.2.1");
    assert_eq!(failed.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    // ...but a public client presents nothing to guess: its refresh is not held.
    let mut request = form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", &refresh),
        ("client_id", PKCE_APP),
    ]);
    request.source = Some("192.0.2.1".into());
    assert_eq!(http(sim.token_answer(request)).status, 200);
}

#[test]
fn the_hosts_sign_in_is_limited_per_account_and_source() {
    let mut sim = sim_with_limits(0, 0, 2);
    let alice_tries = || Input::Attempts {
        attempters: vec![
            Attempter::Account("alice".into()),
            Attempter::Source("192.0.2.1".into()),
        ],
        failed: false,
    };
    let failure = || Input::Attempts {
        attempters: vec![
            Attempter::Account("alice".into()),
            Attempter::Source("192.0.2.1".into()),
        ],
        failed: true,
    };
    assert_eq!(sim.run(alice_tries()).outcome(), &Outcome::AttemptsAllowed);
    // The first failure leaves room for one more; the second reaches the limit.
    assert_eq!(sim.run(failure()).outcome(), &Outcome::AttemptsAllowed);
    assert_eq!(
        sim.run(failure()).refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(WINDOW)))
    );
    sim.now = UnixTime(T0.0 + WINDOW - 1);
    let held = sim.run(alice_tries());
    assert_eq!(held.refusal(), Some(&Refusal::TooManyAttempts(Seconds(1))));
    assert_eq!(http(held).header("Retry-After"), Some("1"));
    // Another account from the same place is not held (the source has no limit here).
    let bob = sim.run(Input::Attempts {
        attempters: vec![
            Attempter::Account("bob".into()),
            Attempter::Source("192.0.2.1".into()),
        ],
        failed: false,
    });
    assert_eq!(bob.outcome(), &Outcome::AttemptsAllowed);
    sim.now = UnixTime(T0.0 + WINDOW);
    assert_eq!(sim.run(alice_tries()).outcome(), &Outcome::AttemptsAllowed);
    // Counts expire with their window: each write carries its purge time.
    let mut request = edgegrant::Request::new(
        sim.config.clone(),
        failure(),
        sim.now,
        Entropy::new([7; ENTROPY_LEN]),
    );
    let Step::Read(keys) = request.poll() else {
        panic!("the counts are read first")
    };
    let keys = keys.to_vec();
    for key in &keys {
        request.supply(key, None).unwrap();
    }
    // One transaction per count, each in the count's own partition, one after the other.
    let mut partitions = Vec::new();
    while let Step::Write(transaction) = request.poll() {
        assert_eq!(transaction.puts.len(), 1);
        let put = &transaction.puts[0];
        assert_eq!(put.purge_after, Some(UnixTime(sim.now.0 + WINDOW)));
        assert_eq!(transaction.partition(), Some(put.key.partition()));
        partitions.push(put.key.partition());
        request.committed().unwrap();
    }
    assert_eq!(partitions.len(), 2);
    assert_ne!(partitions[0], partitions[1]);
    assert!(matches!(request.poll(), Step::Respond(_)));
}
