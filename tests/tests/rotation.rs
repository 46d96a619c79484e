//! Refresh-token rotation (issue 17, part 4; RFC 9700 §4.14.2, OAuth 2.1 §4.3.1): in the
//! standards profile a refresh without a client secret supersedes the token presented; a retry
//! of it inside the window gets the same answer; a superseded token at any other time revokes
//! the grant. The reference profile keeps SPEC.md's reusable refresh tokens.

use edgegrant::*;
use edgegrant_tests::explorer::*;
use edgegrant_tests::*;
use serde_json::{json, Value};

const WINDOW: u64 = 60;

fn rotating() -> Sim {
    Sim::new(standards_config(Rotation::default()))
}

/// Alice's tokens from the public app's offline flow: (access, refresh).
fn signed_in_on(sim: &mut Sim) -> (String, String) {
    let tokens = sim.pkce_offline_tokens(&alice());
    let text = |name: &str| tokens[name].as_str().unwrap().to_owned();
    (text("access_token"), text("refresh_token"))
}

fn refresh(sim: &mut Sim, token: &str) -> Answer {
    sim.refresh_answer(token, PKCE_APP, None)
}

/// A refresh asking for `scope`.
fn refresh_asking(sim: &mut Sim, token: &str, scope: &str) -> Answer {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", PKCE_APP),
        ("scope", scope),
    ];
    sim.token_form_answer(&form, None)
}

/// A successful refresh's body.
fn refreshed(sim: &mut Sim, token: &str) -> Value {
    let answer = refresh(sim, token);
    assert_eq!(answer.response().status, 200, "{}", answer.response().body);
    json(answer.response())
}

/// The refresh token of the confidential app's PKCE grant for alice (exchanged with the
/// verifier and the secret): refreshed without the secret, it rotates.
fn conf_pkce_refresh_token(sim: &mut Sim) -> String {
    let code = sim.code_for(&conf_pkce_offline_query(), &alice());
    let exchanged = json(&sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CONF_REDIRECT),
            ("code_verifier", VERIFIER),
        ],
        Some((CONF_APP, CONF_SECRET)),
    ));
    text(&exchanged, "refresh_token")
}

fn text(body: &Value, name: &str) -> String {
    body[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        .to_owned()
}

fn served(sim: &mut Sim, access: &str) -> bool {
    matches!(sim.api(GET_ACCOUNT, access), Answer::Serve(_))
}

fn grant_of(sim: &Sim, refresh: &str) -> GrantRecord {
    let key = RecordKey::of_refresh_token(&fixture_key(), refresh).unwrap();
    let Some(Record::RefreshToken(token)) = sim.store.record(&key) else {
        panic!("no refresh token record");
    };
    match sim
        .store
        .record(&RecordKey::Grant(key.partition(), token.grant))
    {
        Some(Record::Grant(grant)) => grant,
        other => panic!("no grant: {other:?}"),
    }
}

#[test]
fn a_public_clients_refresh_rotates_the_refresh_token() {
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let body = refreshed(&mut sim, &first);
    let second = text(&body, "refresh_token");
    assert_ne!(second, first, "a new refresh token");
    assert!(served(&mut sim, &text(&body, "access_token")));
    assert!(matches!(
        sim.audit.last(),
        Some(AuditEvent::RefreshTokenRotated { .. })
    ));
    // The grant names its new token; the superseded one is kept only while its reuse is to
    // be caught.
    let grant = grant_of(&sim, &second);
    assert_eq!(grant.refresh_token, Some(RefreshToken::digest_of(&second)));
    let superseded = RecordKey::of_refresh_token(&fixture_key(), &first).unwrap();
    assert_eq!(
        sim.store.purge_after(&superseded),
        Some(sim.now.plus(Seconds(2_592_000)))
    );
    assert_eq!(
        sim.store
            .purge_after(&RecordKey::of_refresh_token(&fixture_key(), &second).unwrap()),
        None,
        "the current token lives as long as its grant"
    );
    // And the new token rotates in turn.
    sim.advance(3600);
    let third = text(&refreshed(&mut sim, &second), "refresh_token");
    assert!(third != second && third != first);
    check_store(&fixture_key(), &sim.store);
}

/// The records of `store`, decoded, by key (versions aside).
fn contents(store: &Store) -> std::collections::BTreeMap<String, Record> {
    store
        .iter()
        .map(|(key, stored)| (key.to_string(), stored.record().unwrap()))
        .collect()
}

#[test]
fn a_retry_inside_the_window_gets_the_same_answer_and_is_on_record() {
    for late in [WINDOW - 1, WINDOW, WINDOW + 1] {
        let mut sim = rotating();
        let (_, first) = signed_in_on(&mut sim);
        let answer = refreshed(&mut sim, &first);
        let written = sim.store.clone();
        sim.advance(late);
        let retry = refresh(&mut sim, &first);
        if late < WINDOW {
            // The response was lost on the way: the client sends the same request again.
            let again = json(retry.response());
            assert_eq!(again["access_token"], answer["access_token"], "at +{late}");
            assert_eq!(again["refresh_token"], answer["refresh_token"]);
            assert_eq!(again["expires_in"], json!(14_400 - late), "the same expiry");
            // The grant is written back as it was (a version on: a retry racing the
            // successor's first use loses), and the retry is audited.
            assert_eq!(contents(&sim.store), contents(&written), "nothing changed");
            assert_ne!(sim.store, written, "the grant's version moved");
            assert!(matches!(
                sim.audit.last(),
                Some(AuditEvent::RefreshTokenRetried { .. })
            ));
            assert!(served(&mut sim, &text(&answer, "access_token")));
        } else {
            // From the window's end on, the superseded token is in other hands: the grant
            // ends, with the tokens the rotation gave.
            let response = retry.response();
            assert_eq!(
                (response.status, oauth_error(response).as_str()),
                (400, "invalid_grant"),
                "at +{late}"
            );
            assert_eq!(retry.refusal(), Some(&Refusal::RefreshTokenReused));
            assert!(matches!(
                sim.audit.last(),
                Some(AuditEvent::RefreshTokenReused { .. })
            ));
            assert!(!served(&mut sim, &text(&answer, "access_token")));
            let successor = refresh(&mut sim, &text(&answer, "refresh_token"));
            assert_eq!(successor.refusal(), Some(&Refusal::RefreshTokenRevoked));
        }
        check_store(&fixture_key(), &sim.store);
    }
}

#[test]
fn the_successors_first_use_closes_the_window_whatever_the_client_authentication() {
    // The confidential app's PKCE grant rotates when refreshed without the secret; its
    // successor is then used with the secret, which does not rotate (clients: public). That
    // use closes the window all the same: the superseded token, presented inside what was its
    // window, is a reuse and ends the grant.
    let mut sim = rotating();
    let first = conf_pkce_refresh_token(&mut sim);
    let rotated = json(&sim.refresh(&first, CONF_APP, None));
    let second = text(&rotated, "refresh_token");
    sim.advance(1);
    let kept = json(&sim.refresh(&second, CONF_APP, Some(CONF_SECRET)));
    assert!(kept.get("refresh_token").is_none(), "{kept}");
    sim.advance(1);
    let late = sim.refresh_answer(&first, CONF_APP, None);
    assert_eq!(late.refusal(), Some(&Refusal::RefreshTokenReused));
    assert_eq!(
        sim.refresh_answer(&second, CONF_APP, Some(CONF_SECRET))
            .refusal(),
        Some(&Refusal::RefreshTokenRevoked)
    );
}

#[test]
fn a_retry_the_store_cannot_show_yet_is_told_to_try_again_not_refused() {
    // On an eventually consistent token store (Workers KV) a retry on another host may read
    // before the rotation's access token arrives there: 503 and Retry-After, never
    // invalid_grant, which would end the client's session.
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let answer = refreshed(&mut sim, &first);
    let access =
        RecordKey::of_access_token(&fixture_key(), &text(&answer, "access_token")).unwrap();
    let held = sim.store.remove(&access).unwrap();
    let lagging = refresh(&mut sim, &first);
    assert_eq!(lagging.refusal(), Some(&Refusal::RetryNotYetVisible));
    let response = lagging.response();
    assert_eq!(
        (response.status, oauth_error(response).as_str()),
        (503, "temporarily_unavailable")
    );
    assert_eq!(response.header("Retry-After"), Some("1"));
    sim.store
        .put_raw(access, held.version, &held.record().unwrap());
    assert_eq!(json(refresh(&mut sim, &first).response()), answer);
}

#[test]
fn once_the_successor_is_used_the_superseded_token_revokes_the_grant_even_inside_the_window() {
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let second = text(&refreshed(&mut sim, &first), "refresh_token");
    // Using the successor proves its answer arrived: no retry of the first is honest now.
    let third = refreshed(&mut sim, &second);
    let reused = refresh(&mut sim, &first);
    assert_eq!(reused.refusal(), Some(&Refusal::RefreshTokenReused));
    assert!(!served(&mut sim, &text(&third, "access_token")));
    assert_eq!(
        refresh(&mut sim, &text(&third, "refresh_token")).refusal(),
        Some(&Refusal::RefreshTokenRevoked)
    );
}

#[test]
fn a_superseded_token_revokes_whatever_it_asks_and_a_differing_retry_is_refused_alone() {
    // Reuse is judged before the parameters: a malformed scope does not save the grant.
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let second = text(&refreshed(&mut sim, &first), "refresh_token");
    sim.advance(WINDOW);
    let reused = refresh_asking(&mut sim, &first, "not a valid scope!");
    assert_eq!(reused.refusal(), Some(&Refusal::RefreshTokenReused));
    assert_eq!(
        refresh(&mut sim, &second).refusal(),
        Some(&Refusal::RefreshTokenRevoked)
    );

    // Inside the window a retry must ask what the first asked: one asking for fewer scopes is
    // refused, and nothing is revoked.
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let answer = refreshed(&mut sim, &first);
    let differing = refresh_asking(&mut sim, &first, "account_info.read");
    assert_eq!(differing.refusal(), Some(&Refusal::RetryDiffers));
    assert_eq!(oauth_error(differing.response()), "invalid_grant");
    assert!(served(&mut sim, &text(&answer, "access_token")));
    assert_eq!(refresh(&mut sim, &first).response().status, 200);
}

#[test]
fn confidential_clients_keep_their_token_unless_every_refresh_rotates() {
    let offline_conf = |sim: &mut Sim| {
        let code = sim.code_for(&conf_query("offline", "c"), &alice());
        text(&json(&sim.exchange_confidential(&code)), "refresh_token")
    };
    let mut sim = rotating();
    let token = offline_conf(&mut sim);
    for _ in 0..2 {
        let body = json(&sim.refresh(&token, CONF_APP, Some(CONF_SECRET)));
        assert!(body.get("refresh_token").is_none(), "reusable: {body}");
    }
    assert!(matches!(
        sim.audit.last(),
        Some(AuditEvent::AccessTokenRefreshed { .. })
    ));

    let mut sim = Sim::new(standards_config(Rotation {
        clients: RotatedClients::All,
        ..Rotation::default()
    }));
    let token = offline_conf(&mut sim);
    let body = json(&sim.refresh(&token, CONF_APP, Some(CONF_SECRET)));
    let next = text(&body, "refresh_token");
    assert_ne!(next, token);
    sim.advance(WINDOW);
    let reused = sim.refresh_answer(&token, CONF_APP, Some(CONF_SECRET));
    assert_eq!(reused.refusal(), Some(&Refusal::RefreshTokenReused));
}

#[test]
fn a_confidential_app_refreshing_by_its_pkce_grant_without_the_secret_rotates() {
    // Without its secret the app is a public client for this refresh (its grant came from a
    // PKCE exchange): the token rotates. With the secret the new token is simply used again.
    let mut sim = rotating();
    let first = conf_pkce_refresh_token(&mut sim);
    let rotated = json(&sim.refresh(&first, CONF_APP, None));
    let second = text(&rotated, "refresh_token");
    assert_ne!(second, first);
    let kept = json(&sim.refresh(&second, CONF_APP, Some(CONF_SECRET)));
    assert!(kept.get("refresh_token").is_none(), "{kept}");
    sim.advance(WINDOW);
    assert_eq!(
        sim.refresh_answer(&first, CONF_APP, Some(CONF_SECRET))
            .refusal(),
        Some(&Refusal::RefreshTokenReused),
        "superseded whoever presents it"
    );
}

#[test]
fn the_reference_profile_never_rotates() {
    let mut sim = Sim::new(fixture_config());
    let (_, token) = signed_in_on(&mut sim);
    for _ in 0..3 {
        sim.advance(3600);
        let body = refreshed(&mut sim, &token);
        assert!(body.get("refresh_token").is_none(), "SPEC.md: reusable");
    }
}

#[test]
fn a_superseded_token_is_inactive_at_introspection_and_its_revocation_ends_the_grant() {
    // The confidential app's PKCE grant, refreshed without the secret: it rotates, and the app
    // (the token's own: no one else learns of a refresh token) introspects both tokens.
    let mut sim = rotating();
    let first = conf_pkce_refresh_token(&mut sim);
    let answer = json(&sim.refresh(&first, CONF_APP, None));
    let second = text(&answer, "refresh_token");
    assert_eq!(sim.introspect(&first), json!({"active": false}));
    assert_eq!(sim.introspect(&second)["active"], json!(true));

    // RFC 7009 with the superseded token: only the grant's holders have it; the grant ends.
    let revoked = sim.post_form(
        "/oauth2/revoke",
        &[("token", &first)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(revoked.status, 200);
    assert_eq!(sim.introspect(&second), json!({"active": false}));
    assert!(!served(&mut sim, &text(&answer, "access_token")));
}

#[test]
fn rotated_records_are_purged_with_their_grant_and_by_their_own_time() {
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let mut current = first.clone();
    for _ in 0..3 {
        sim.advance(3600);
        current = text(&refreshed(&mut sim, &current), "refresh_token");
    }
    // An unlink ends the grant: its current token gets a purge time with it.
    sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    assert_eq!(
        refresh(&mut sim, &current).refusal(),
        Some(&Refusal::RefreshTokenUnlinked)
    );
    // Once the superseded tokens' reuse detection is over, nothing of the grant is left.
    sim.advance(2_592_000);
    sim.store.purge(sim.now);
    let left: Vec<String> = sim
        .store
        .iter()
        .filter(|(_, v)| {
            matches!(
                v.record(),
                Ok(Record::RefreshToken(_) | Record::AccessToken(_) | Record::Grant(_))
            )
        })
        .map(|(k, _)| k.to_string())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // A superseded token now finds nothing: refused, and nothing to revoke.
    assert_eq!(
        refresh(&mut sim, &first).refusal(),
        Some(&Refusal::UnknownRefreshToken)
    );
}

#[test]
fn the_rotation_policy_is_checked_and_round_trips() {
    let with = |rotation: Value| {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] =
            json!({"kind": "standards", "issuer": "https://auth.example", "rotation": rotation});
        Config::from_json(&doc.to_string()).map(|config| config.rotation().copied())
    };
    assert_eq!(
        with(json!({})).unwrap(),
        Some(Rotation::default()),
        "public clients, 60 s, 30 days"
    );
    assert_eq!(
        with(json!({"clients": "all", "retry_window": 0, "reuse_detection": 86400})).unwrap(),
        Some(Rotation {
            clients: RotatedClients::All,
            retry_window: Seconds(0),
            reuse_detection: Seconds(86_400),
        })
    );
    for (rotation, why) in [
        (json!({"clients": "none"}), "expected public or all"),
        (json!({"retry_window": 301}), "at most 300 seconds"),
        (json!({"retry_window": -1}), "whole number"),
        (
            json!({"retry_window": 120, "reuse_detection": 60}),
            "at least the retry window",
        ),
        (json!({"reuse_detection": 0}), "at least one second"),
    ] {
        let error = with(rotation.clone()).unwrap_err().to_string();
        assert!(error.contains(why), "{rotation}: {error}");
    }
    // The window must be shorter than an access token's life: a retry repeats a live one.
    let mut doc = fixture_document().to_json_value();
    doc["policy"]["access_token_ttl"] = json!(60);
    doc["profile"] = json!({"kind": "standards", "issuer": "https://auth.example"});
    let error = Config::from_json(&doc.to_string()).unwrap_err().to_string();
    assert!(
        error.contains("shorter than policy.access_token_ttl"),
        "{error}"
    );
    // The document round-trips with its rotation.
    let config = standards_config(Rotation {
        clients: RotatedClients::All,
        retry_window: Seconds(5),
        reuse_detection: Seconds(600),
    });
    let text = serde_json::to_string(&config).unwrap();
    assert_eq!(
        Config::from_json(&text).unwrap().rotation(),
        config.rotation()
    );
}

#[test]
fn grants_of_formats_3_and_4_read_as_never_rotated() {
    let mut sim = rotating();
    let (_, refresh) = signed_in_on(&mut sim);
    // As an older format wrote it: no member place, no idle deadline (format 7).
    let grant = GrantRecord {
        member: None,
        idle_until: None,
        ..grant_of(&sim, &refresh)
    };
    let mut bytes = before_format_11(&Record::Grant(grant.clone()));
    let tail = bytes.split_off(bytes.len() - 2);
    assert_eq!(
        tail,
        [0, 0],
        "no member place, no idle deadline: a zero byte each"
    );
    bytes[0] = 6;
    assert_eq!(Record::decode(&bytes), Ok(Record::Grant(grant.clone())));
    assert_eq!(bytes.pop(), Some(0), "no rotation is one zero byte, last");
    bytes[0] = 4;
    assert_eq!(Record::decode(&bytes), Ok(Record::Grant(grant.clone())));
    // Format 3 lacked the resources too: two fields to read as empty.
    assert_eq!(
        bytes.pop(),
        Some(0),
        "no resources: an empty string, one zero byte"
    );
    bytes[0] = 3;
    assert_eq!(Record::decode(&bytes), Ok(Record::Grant(grant)));
}

// ---- races and crashes ----------------------------------------------------------------------

/// Every interleaving of two and three refreshes with one token, and of two with a crash at any
/// point followed by the client's retry: all succeed with one and the same answer (one
/// rotation), the grant stays live, and its current token is the one they were all given.
#[test]
fn racing_and_retried_refreshes_of_one_token_rotate_once_and_agree() {
    let (sim, _, refresh) = signed_in_with(standards_config(Rotation::default()));
    for racers in [2, 3] {
        let inputs = vec![refresh_input(&refresh); racers];
        let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
        for &crash in crashes {
            let schedules = explore(&sim.config, &sim.store, sim.now, &inputs, crash, &mut |s| {
                let delivered: Vec<(String, Option<String>)> = (0..racers)
                    .flat_map(|actor| s.answers[actor].iter().filter_map(token_response))
                    .collect();
                assert_eq!(delivered.len(), racers, "every one answered: {:?}", s.trace);
                assert!(
                    delivered.windows(2).all(|w| w[0] == w[1]),
                    "one answer: {delivered:?}"
                );
                let (access, next) = &delivered[0];
                let next = next.as_deref().expect("a rotated token");
                assert_ne!(next, refresh);
                let rotations = s
                    .trace
                    .iter()
                    .filter(|e| {
                        matches!(e, Moment::Commit { audit, .. }
                            if matches!(audit.first(), Some(AuditEvent::RefreshTokenRotated { .. })))
                    })
                    .count();
                assert_eq!(rotations, 1, "{:?}", s.trace);
                assert!(validates(&sim.config, &s.store, sim.now, access));
                let mut after = Sim::new(Config::clone(&sim.config));
                after.store = s.store.clone();
                after.now = sim.now;
                assert_eq!(
                    after.run(refresh_input(next)).response().status,
                    200,
                    "the answer's token is current"
                );
            });
            println!("rotation: {racers} refreshes, {crash} crash(es): {schedules} schedules");
            assert!(schedules >= 2);
        }
    }
}

/// A stale retry (after the window) racing the successor's own refresh: whichever order, the
/// grant ends up revoked, and no token handed out in the race stays live.
#[test]
fn a_late_retry_racing_the_successor_leaves_nothing_live() {
    let (mut sim, _, first) = signed_in_with(standards_config(Rotation::default()));
    let second = text(&refreshed(&mut sim, &first), "refresh_token");
    sim.advance(WINDOW);
    let inputs = [refresh_input(&first), refresh_input(&second)];
    for crash in [0, 1] {
        let schedules = explore(&sim.config, &sim.store, sim.now, &inputs, crash, &mut |s| {
            assert!(
                s.commit_of(|e| matches!(e, AuditEvent::RefreshTokenReused { .. }))
                    .is_some(),
                "{:?}",
                s.trace
            );
            for (access, refresh) in
                (0..2).flat_map(|a| s.answers[a].iter().filter_map(token_response))
            {
                assert!(!validates(&sim.config, &s.store, sim.now, &access));
                let mut after = Sim::new(Config::clone(&sim.config));
                after.store = s.store.clone();
                after.now = sim.now;
                let refused = after.run(refresh_input(&refresh.expect("rotated")));
                assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenRevoked));
            }
        });
        println!(
            "rotation: late retry racing the successor, {crash} crash(es): {schedules} schedules"
        );
        assert!(schedules >= 2);
    }
}

#[test]
fn the_store_and_an_old_token_together_yield_no_live_credential() {
    // A thief holds a copy of the store and a superseded refresh token (from a log, a backup,
    // a device). The grant keeps its last rotation's seed; without the server key the seed and
    // the token lead nowhere.
    let mut sim = rotating();
    let (_, first) = signed_in_on(&mut sim);
    let answer = refreshed(&mut sim, &first);
    let grant = grant_of(&sim, &text(&answer, "refresh_token"));
    let last = grant.rotation.expect("a rotation");
    let seed: Vec<u8> = serde_json::from_value(serde_json::to_value(last.seed).unwrap()).unwrap();
    assert_eq!(seed.len(), 32);
    // What anyone can compute from what was read: the derivation without a key (with the
    // labels the server uses), and under guessed keys.
    let route = first.split('.').next().unwrap();
    let unkeyed = |label: &[u8]| {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(label)
            .chain_update(&seed)
            .chain_update(first.as_bytes())
            .finalize();
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    };
    let forged_refresh = format!("{route}.{}", unkeyed(b"rotated rt\0"));
    let forged_access = format!("sl.{route}.{}", unkeyed(b"rotated at\0"));
    assert_ne!(forged_refresh, text(&answer, "refresh_token"));
    assert_ne!(forged_access, text(&answer, "access_token"));
    assert!(!served(&mut sim, &forged_access));
    assert_eq!(
        refresh(&mut sim, &forged_refresh).refusal(),
        Some(&Refusal::UnknownRefreshToken)
    );
    // And under another key the store's own tokens are no credentials at all: the key is what
    // they hang on (their routes are sealed under it).
    let mut doc = fixture_document();
    doc.profile = standards_config(Rotation::default()).profile().clone();
    doc.server_key =
        Some(ServerKey::from_base64("YW5vdGhlci1zZXJ2ZXIta2V5LW9mLTMyLWJ5dGVzISE").unwrap());
    let mut other = Sim::new(Config::new(doc).unwrap());
    other.store = sim.store.clone();
    other.now = sim.now;
    let retried = other.refresh_answer(&first, PKCE_APP, None);
    assert_eq!(retried.refusal(), Some(&Refusal::UnknownRefreshToken));
}

/// More refreshes of one token at once than a request has attempts ([`Policy::max_attempts`]),
/// in lockstep — each round every request reads, then each tries its write in turn, so all but
/// one lose — the worst order a store can give them (issue 47, item 14: 3 hosts each racing a
/// few refreshes of one token on PostgreSQL got `503` for 0.4 % of them). One rotates; the
/// others find themselves its retries, and each writes the grant back, on record. A retry that
/// loses that write to another retry of the same rotation (the grant rewritten as it read it)
/// answers from the state that won — the rotation still open there — and writes no more, its
/// event on the reply: no request loses more than twice, every one gets the rotation's answer,
/// none a `503`, and every retry is on record.
#[test]
fn more_racing_refreshes_than_attempts_all_get_the_rotations_answer() {
    let (sim, _, refresh) = signed_in_with(standards_config(Rotation::default()));
    let racers = sim.config.policy().max_attempts as usize + 3;
    let mut store = sim.store.clone();
    let mut requests: Vec<edgegrant_tests::Request> = (0..racers)
        .map(|i| {
            let seed = 500 + i as u64;
            edgegrant_tests::Request::new(
                &sim.config,
                refresh_input(&refresh),
                sim.now,
                entropy(seed),
            )
        })
        .collect();
    let mut answers: Vec<Option<Answer>> = vec![None; racers];
    let mut audit = Vec::new();
    let mut rounds = 0;
    while answers.iter().any(Option::is_none) {
        rounds += 1;
        assert!(rounds <= 2 * racers, "the race ends");
        // Every request still running reads all it asks for…
        for (request, _) in requests
            .iter_mut()
            .zip(&answers)
            .filter(|(_, a)| a.is_none())
        {
            while matches!(request.next(), Step::Read(_)) {
                request.step(&mut store).unwrap();
            }
        }
        // …then each writes (or answers), in turn, on what they all read.
        for (request, answer) in requests.iter_mut().zip(&mut answers) {
            if answer.is_some() {
                continue;
            }
            match request.step(&mut store).unwrap() {
                Progress::Done {
                    answer: done,
                    audit: events,
                    ..
                } => {
                    audit.extend(events);
                    *answer = Some(done);
                }
                Progress::Conflicted(_) => {}
                other => panic!("a refresh writes or answers here, not {other:?}"),
            }
        }
    }
    let answers: Vec<Answer> = answers.into_iter().map(Option::unwrap).collect();
    for answer in &answers {
        assert_eq!(
            answer.response().status,
            200,
            "{:?}: {}",
            answer.refusal(),
            answer.response().body
        );
    }
    let delivered: Vec<(String, Option<String>)> =
        answers.iter().filter_map(token_response).collect();
    assert!(
        delivered.windows(2).all(|w| w[0] == w[1]),
        "one answer: {delivered:?}"
    );
    let most = requests.iter().map(|r| r.conflicts).max();
    assert_eq!(most, Some(2), "a rotation lost, then a retry's write");
    let (rotated, retried) = audit.iter().fold((0, 0), |(rot, ret), event| match event {
        AuditEvent::RefreshTokenRotated { .. } => (rot + 1, ret),
        AuditEvent::RefreshTokenRetried { .. } => (rot, ret + 1),
        _ => (rot, ret),
    });
    assert_eq!(rotated, 1, "{audit:?}");
    // Every retry on record: by its write-back, or (answered from another's) on its reply.
    assert_eq!(retried, racers - 1, "{audit:?}");
    // The answer is live, and its token current: it rotates in turn.
    check_store(&fixture_key(), &store);
    let (access, next) = &delivered[0];
    assert!(validates(&sim.config, &store, sim.now, access));
    let mut after = Sim::new(Config::clone(&sim.config));
    after.store = store;
    after.now = sim.now;
    let next = next.as_deref().expect("a rotated token");
    assert_eq!(after.run(refresh_input(next)).response().status, 200);
}

/// A retry writes the grant back with the purge time it had (under an idle lifetime, one
/// access-token lifetime past its idle deadline), not without one.
#[test]
fn a_retry_keeps_the_grants_purge_time() {
    let mut doc = fixture_document();
    doc.policy.refresh_idle_lifetime = Some(Seconds(86_400));
    doc.profile = standards_config(Rotation::default()).profile().clone();
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let (_, first) = signed_in_on(&mut sim);
    // Half the idle lifetime on, the refresh moves the deadline (and the purge time) on.
    sim.advance(50_000);
    let answer = refreshed(&mut sim, &first);
    let second = text(&answer, "refresh_token");
    let grant_key = {
        let key = RecordKey::of_refresh_token(&fixture_key(), &second).unwrap();
        let Some(Record::RefreshToken(token)) = sim.store.record(&key) else {
            panic!("no refresh token record");
        };
        RecordKey::Grant(key.partition(), token.grant)
    };
    let purge = sim.store.purge_after(&grant_key);
    assert_eq!(purge, Some(sim.now.plus(Seconds(86_400 + 14_400))));
    sim.advance(1);
    let again = json(refresh(&mut sim, &first).response());
    assert_eq!(again["refresh_token"], answer["refresh_token"]);
    assert!(matches!(
        sim.audit.last(),
        Some(AuditEvent::RefreshTokenRetried { .. })
    ));
    assert_eq!(sim.store.purge_after(&grant_key), purge);
}
