//! Limits on failed credential checks (issue 15, RFC 6749 §10.10; issue 25): at the token
//! endpoint a failure is counted per source, a source at its limit has its failures answered
//! 429, and no count ever holds back a correct client secret; at the host's own sign-in
//! (`Input::Attempts`) per account name and source; in the store, to the exact second the
//! window ends. The token endpoint's rule is also a conformance vector
//! (`attempts/client-secret-limit`).

use edgegrant::*;
use edgegrant_tests::explorer::*;
use edgegrant_tests::*;

const WINDOW: u64 = 60;

fn sim_with_limits(per_source: u32, per_account: u32) -> Sim {
    let mut doc = fixture_document();
    doc.policy.attempts = AttemptLimits {
        window: Seconds(WINDOW),
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
fn failures_are_counted_per_source_and_never_hold_a_correct_secret() {
    let mut sim = sim_with_limits(3, 0);
    // Three failures from one address, against three different app keys (one unknown).
    for app in [CONF_APP, TEAM_APP, "no-such-app"] {
        let answer = token_request(&mut sim, app, "guess", "198.51.100.7");
        assert_eq!(answer.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    }
    // That address's next failure is answered 429, not counted; another address's is counted.
    let held = token_request(&mut sim, CONF_APP, "guess", "198.51.100.7");
    assert_eq!(
        held.refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(WINDOW)))
    );
    let response = http(held);
    assert_eq!(response.status, 429);
    assert_eq!(response.header("Retry-After"), Some("60"));
    let other = token_request(&mut sim, CONF_APP, "guess", "203.0.113.9");
    assert_eq!(other.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    // The right secret passes from the held address all the same.
    let right = token_request(&mut sim, CONF_APP, CONF_SECRET, "198.51.100.7");
    assert_eq!(right.refusal(), Some(&Refusal::UnknownRefreshToken));
    // Counts exist per source only: none per app, none for the unknown key.
    let counts = sim
        .store
        .iter()
        .filter(|(key, _)| matches!(key, RecordKey::Attempts(_)))
        .count();
    assert_eq!(counts, 2);
    // Exactly at the window's end the address's failures are counted again.
    sim.now = UnixTime(T0.0 + WINDOW - 1);
    let last_second = token_request(&mut sim, CONF_APP, "guess", "198.51.100.7");
    assert_eq!(
        last_second.refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(1)))
    );
    sim.now = UnixTime(T0.0 + WINDOW);
    let again = token_request(&mut sim, CONF_APP, "guess", "198.51.100.7");
    assert_eq!(again.refusal(), Some(&Refusal::ClientAuthenticationFailed));
}

#[test]
fn no_ones_failures_make_an_apps_correct_secret_fail() {
    // Anyone knows an app's key: failures in its name from many addresses (each under its own
    // limit, default policy) must not make the app's own requests wait.
    let mut sim = Sim::new(fixture_config());
    for i in 0..150 {
        let source = format!("198.51.{}.{}", i / 250, i % 250);
        let answer = token_request(&mut sim, CONF_APP, "guess", &source);
        assert_eq!(answer.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    }
    let right = token_request(&mut sim, CONF_APP, CONF_SECRET, "203.0.113.9");
    assert_eq!(right.refusal(), Some(&Refusal::UnknownRefreshToken));
}

#[test]
fn a_public_app_without_a_secret_is_never_held() {
    let mut sim = sim_with_limits(1, 0);
    let tokens = sim.pkce_offline_tokens(&alice());
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    // A failure from a source puts it at its limit...
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

/// A sign-in check of `name` from `source`, at `step`.
fn sign_in(name: &str, source: &str, step: AttemptStep) -> Input {
    Input::Attempts {
        attempters: vec![
            Attempter::Account(name.into()),
            Attempter::Source(source.into()),
        ],
        step,
    }
}

#[test]
fn the_hosts_sign_in_is_counted_before_it_runs_per_account_from_each_source() {
    let mut sim = sim_with_limits(0, 2);
    let from_here = || sign_in("alice", "192.0.2.1", AttemptStep::Reserve);
    // Two checks may go ahead (each counted as it starts); the third is held.
    assert_eq!(sim.run(from_here()).outcome(), &Outcome::AttemptsAllowed);
    assert_eq!(sim.run(from_here()).outcome(), &Outcome::AttemptsAllowed);
    let held = sim.run(from_here());
    assert_eq!(
        held.refusal(),
        Some(&Refusal::TooManyAttempts(Seconds(WINDOW)))
    );
    // Every host reads that reply one way: the core's verdict, with the wait it sends.
    assert_eq!(
        held.reply().attempt_verdict(),
        AttemptVerdict::Limited(Seconds(WINDOW))
    );
    assert_eq!(
        http(held).header("Retry-After"),
        Some(WINDOW.to_string().as_str())
    );
    sim.now = UnixTime(T0.0 + WINDOW - 1);
    let held = sim.run(from_here());
    assert_eq!(held.refusal(), Some(&Refusal::TooManyAttempts(Seconds(1))));
    assert_eq!(http(held).header("Retry-After"), Some("1"));
    // A store that fails is no one's limit.
    let mut request = edgegrant_tests::Request::new(&sim.config, from_here(), sim.now, entropy(3));
    let failed = request.unavailable().unwrap();
    assert_eq!(
        failed.reply().attempt_verdict(),
        AttemptVerdict::Unavailable(Seconds(1))
    );
    // No one elsewhere locks alice out: her own address is counted apart.
    let owner = sim.run(sign_in("alice", "203.0.113.5", AttemptStep::Reserve));
    assert_eq!(owner.outcome(), &Outcome::AttemptsAllowed);
    // Another account from the same place is not held (the source has no limit here).
    let bob = sim.run(sign_in("bob", "192.0.2.1", AttemptStep::Reserve));
    assert_eq!(bob.outcome(), &Outcome::AttemptsAllowed);
    sim.now = UnixTime(T0.0 + WINDOW);
    assert_eq!(sim.run(from_here()).outcome(), &Outcome::AttemptsAllowed);
    // A correct check takes its count back: the owner signs in as often as she likes.
    for _ in 0..5 {
        let from_home = || sign_in("alice", "203.0.113.5", AttemptStep::Reserve);
        assert_eq!(sim.run(from_home()).outcome(), &Outcome::AttemptsAllowed);
        let back = sim.run(sign_in("alice", "203.0.113.5", AttemptStep::Succeeded));
        assert_eq!(back.outcome(), &Outcome::AttemptsAllowed);
    }
    // Counts expire with their window: each write carries its purge time.
    let (mut request, step) = edgegrant::Request::start(
        sim.config.clone(),
        sign_in("carol", "198.51.100.9", AttemptStep::Reserve),
        sim.now,
        Entropy::new([7; ENTROPY_LEN]),
    );
    let Step::Read(keys) = step else {
        panic!("the counts are read first")
    };
    let mut step = request.advance(Store::default().read(keys)).unwrap();
    // One transaction per count, each in the count's own partition, one after the other.
    let mut partitions = Vec::new();
    while let Step::Write(transaction) = step {
        assert_eq!(transaction.puts.len(), 1);
        let put = &transaction.puts[0];
        assert_eq!(put.purge_after, Some(UnixTime(sim.now.0 + WINDOW)));
        assert_eq!(transaction.partition(), Some(put.key.partition()));
        partitions.push(put.key.partition());
        step = request.advance(Event::Committed).unwrap();
    }
    assert_eq!(partitions.len(), 2);
    assert_ne!(partitions[0], partitions[1]);
    assert!(matches!(step, Step::Respond(_)));
}

#[test]
fn checks_racing_each_other_never_pass_the_limit_together() {
    // Every interleaving of three checks of one name from one place, with a limit of two:
    // exactly two go ahead, however their reads and writes interleave.
    let sim = sim_with_limits(0, 2);
    let inputs: Vec<Input> = (0..3)
        .map(|_| sign_in("alice", "192.0.2.1", AttemptStep::Reserve))
        .collect();
    let mut schedules = 0;
    explore(
        &sim.config,
        &sim.store,
        sim.now,
        &inputs,
        0,
        &mut |schedule: &Schedule| {
            schedules += 1;
            let allowed = schedule
                .answers
                .iter()
                .filter(|answers| {
                    answers
                        .last()
                        .is_some_and(|a| a.outcome() == &Outcome::AttemptsAllowed)
                })
                .count();
            assert_eq!(allowed, 2, "{:?}", schedule.trace);
        },
    );
    assert!(schedules > 1);
}

#[test]
fn an_attempter_no_one_can_have_typed_or_too_many_are_refused_and_count_nothing() {
    // A name with a NUL once split into other attempters in the bindings; now attempters are
    // structured, and names with control characters (or empty, or over 256 bytes) are refused.
    let mut sim = sim_with_limits(1, 1);
    for name in [
        "alice\0source\x00203.0.113.9".to_owned(),
        "alice\nbob".to_owned(),
        String::new(),
        "a".repeat(257),
    ] {
        let answer = sim.run(Input::Attempts {
            attempters: vec![Attempter::Account(name.clone())],
            step: AttemptStep::Reserve,
        });
        assert_eq!(
            answer.refusal(),
            Some(&Refusal::MalformedAttempter),
            "{name:?}"
        );
        assert_eq!(answer.reply().attempt_verdict(), AttemptVerdict::Malformed);
        assert_eq!(http(answer).status, 400);
    }
    // One check counted against more attempters than a request may write counts.
    let sources = (0..=MAX_ATTEMPTERS).map(|i| Attempter::Source(format!("203.0.113.{i}")));
    let answer = sim.run(Input::Attempts {
        attempters: sources.collect(),
        step: AttemptStep::Reserve,
    });
    assert_eq!(answer.refusal(), Some(&Refusal::MalformedAttempter));
    assert!(!sim
        .store
        .iter()
        .any(|(key, _)| matches!(key, RecordKey::Attempts(_))));
    let typed = sim.run(Input::Attempts {
        attempters: vec![Attempter::Account("a".repeat(256))],
        step: AttemptStep::Reserve,
    });
    assert_eq!(typed.outcome(), &Outcome::AttemptsAllowed);
}
