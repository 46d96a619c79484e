//! The race explorer (issue 7): every interleaving of two and three concurrent requests over one
//! store, and with a host crash at any point of any request followed by the client's retry.
//! After every schedule: the store is consistent and every record reachable (`check_store`), at
//! most one exchange of a code yields tokens, and no token validates once its revocation or
//! unlink has committed — neither in a request that read after the commit nor at the end.
//!
//! `cargo test -p edgegrant-tests --test race_explorer -- --nocapture` prints the schedule counts.

use edgegrant::*;
use edgegrant_tests::explorer::*;
use edgegrant_tests::*;

/// Runs one scenario without crashes and with one crash, prints the schedule counts.
fn scenario(
    name: &str,
    sim: &Sim,
    inputs: &[Input],
    crashes: &[usize],
    check: &mut dyn FnMut(&Schedule),
) -> usize {
    let mut total = 0;
    for &crash in crashes {
        let schedules = explore(&sim.config, &sim.store, sim.now, inputs, crash, check);
        report(&format!(
            "race explorer: {name}: {schedules} schedules with up to {crash} crash(es)"
        ));
        assert!(schedules >= 2, "{name}: nothing to explore");
        total += schedules;
    }
    total
}

/// Every token response a group of requests received.
fn tokens_of(schedule: &Schedule, actors: &[usize]) -> Vec<(String, Option<String>)> {
    actors
        .iter()
        .flat_map(|&actor| schedule.answers[actor].iter().filter_map(token_response))
        .collect()
}

/// A request that read its records after `ended` must not have been let through.
fn refused_after(schedule: &Schedule, actor: usize, ended: Option<usize>) {
    let authorized = schedule.answers[actor]
        .iter()
        .any(|answer| matches!(answer, Answer::Serve(_)));
    if let (Some(ended), Some(read)) = (ended, schedule.last_read_of(actor)) {
        assert!(
            !(authorized && read > ended),
            "a bearer check that read after the end committed was let through: {:?}",
            schedule.trace
        );
    }
}

/// Neither the access tokens nor the refresh tokens of `tokens` work on the final store.
fn all_dead(sim: &Sim, schedule: &Schedule, tokens: &[(String, Option<String>)]) {
    for (access, refresh) in tokens {
        assert!(
            !validates(&sim.config, &schedule.store, sim.now, access),
            "a token validates after its end committed: {:?}",
            schedule.trace
        );
        if let Some(refresh) = refresh {
            let mut after = Sim::new(Config::clone(&sim.config));
            after.store = schedule.store.clone();
            after.now = sim.now;
            let refused = after.run(refresh_input(refresh));
            let response = refused.response();
            assert_eq!(response.status, 400, "{}", response.body);
            assert_eq!(oauth_error(response), "invalid_grant");
            // Ended by a revocation (the revoke endpoint, a code reuse) or by an unlink.
            assert!(
                matches!(
                    refused.refusal(),
                    Some(Refusal::RefreshTokenRevoked | Refusal::RefreshTokenUnlinked)
                ),
                "{refused:?}: {:?}",
                schedule.trace
            );
        }
    }
}

fn grants(schedule: &Schedule) -> usize {
    schedule
        .store
        .iter()
        .filter(|(_, v)| matches!(v.record(), Ok(Record::Grant(_))))
        .count()
}

fn reuse_or_revocation(event: &AuditEvent) -> bool {
    matches!(
        event,
        AuditEvent::CodeReused { .. }
            | AuditEvent::GrantRevoked { .. }
            | AuditEvent::Unlinked { .. }
    )
}

#[test]
fn exchanges_of_one_code_redeem_it_at_most_once() {
    let mut sim = Sim::new(fixture_config());
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let exchange = exchange_input(&code);
    for racers in [2, 3] {
        let inputs = vec![exchange.clone(); racers];
        let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
        let mut reused_somewhere = false;
        scenario(
            &format!("{racers} exchanges of one code"),
            &sim,
            &inputs,
            crashes,
            &mut |s| {
                let actors: Vec<usize> = (0..racers).collect();
                let delivered = tokens_of(s, &actors);
                assert!(
                    delivered.len() <= 1,
                    "{} redemptions: {:?}",
                    delivered.len(),
                    s.trace
                );
                assert!(grants(s) <= 1, "one redemption makes one grant");
                // Any second presentation of the code revokes what the first produced.
                if let Some(reused) = s.commit_of(|e| matches!(e, AuditEvent::CodeReused { .. })) {
                    reused_somewhere = true;
                    all_dead(&sim, s, &delivered);
                    assert!(reused > 0);
                }
            },
        );
        assert!(reused_somewhere);
    }
}

#[test]
fn a_replayed_code_ends_the_tokens_of_its_exchange_for_every_racing_request() {
    // Alice holds tokens of her own; Bob's code is exchanged once, then replayed.
    let (mut sim, alice_access, _) = signed_in();
    let code = sim.code_for(&pkce_offline_query("r"), &bob());
    let first = sim.run(exchange_input(&code)).response().clone();
    assert_eq!(first.status, 200);
    let body = json(&first);
    let bob_access = body["access_token"].as_str().expect("access").to_owned();
    let bob_refresh = body["refresh_token"].as_str().expect("refresh").to_owned();
    for inputs in [
        vec![exchange_input(&code), api_input(&bob_access)],
        vec![
            exchange_input(&code),
            api_input(&bob_access),
            refresh_input(&bob_refresh),
        ],
    ] {
        let racers = inputs.len();
        let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
        scenario(
            &format!("code replay racing {} other request(s)", racers - 1),
            &sim,
            &inputs,
            crashes,
            &mut |s| {
                assert!(
                    tokens_of(s, &[0]).is_empty(),
                    "a replay never yields tokens"
                );
                let ended = s.commit_of(|e| matches!(e, AuditEvent::CodeReused { .. }));
                assert!(ended.is_some(), "the replay revokes: {:?}", s.trace);
                refused_after(s, 1, ended);
                let mut dead = vec![(bob_access.clone(), Some(bob_refresh.clone()))];
                dead.extend(tokens_of(s, &(2..racers).collect::<Vec<_>>()));
                all_dead(&sim, s, &dead);
                // Another user's grant is untouched.
                assert!(validates(&sim.config, &s.store, sim.now, &alice_access));
            },
        );
    }
}

#[test]
fn refresh_racing_revoke_or_unlink_leaves_no_live_token() {
    let (sim, access, refresh) = signed_in();
    refresh_racing_an_end(&sim, &access, &refresh, &[2, 3], "");
}

/// As above, with the account's ledger gone (purged, or lost): the end and the mint then race
/// to create it, and no token may be vouched for by a ledger its end did not move. (Two racers:
/// a third, the bearer check, writes nothing.)
#[test]
fn refresh_racing_revoke_or_unlink_without_a_ledger_leaves_no_live_token() {
    let (mut sim, access, refresh) = signed_in();
    let ledger = sim
        .store
        .iter()
        .map(|(key, _)| key.clone())
        .find(|key| matches!(key, RecordKey::Ledger(_)));
    assert!(ledger.is_some(), "the sign-in made a ledger");
    if let Some(ledger) = ledger {
        sim.store.remove(&ledger);
    }
    refresh_racing_an_end(&sim, &access, &refresh, &[2], " (no ledger)");
}

/// A refresh racing a revocation and an unlink of its grant (and, with three racers, a bearer
/// check of its access token).
fn refresh_racing_an_end(
    sim: &Sim,
    access: &str,
    refresh: &str,
    racer_counts: &[usize],
    variant: &str,
) {
    for (name, end) in [
        ("revoke", revoke_input(access)),
        ("unlink", unlink_input(&alice())),
    ] {
        let inputs = [refresh_input(refresh), end, api_input(access)];
        for &racers in racer_counts {
            let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
            let and_a_check = if racers == 3 {
                " and a bearer check"
            } else {
                ""
            };
            scenario(
                &format!("refresh racing {name}{and_a_check}{variant}"),
                sim,
                &inputs[..racers],
                crashes,
                &mut |s| {
                    let ended = s.commit_of(reuse_or_revocation);
                    assert!(ended.is_some(), "the {name} commits: {:?}", s.trace);
                    if racers == 3 {
                        refused_after(s, 2, ended);
                    }
                    let mut dead = vec![(access.to_owned(), Some(refresh.to_owned()))];
                    dead.extend(tokens_of(s, &[0]));
                    all_dead(sim, s, &dead);
                },
            );
        }
    }
}

#[test]
fn exchange_racing_unlink_yields_no_live_token() {
    let mut sim = Sim::new(fixture_config());
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let inputs = vec![exchange_input(&code), unlink_input(&alice())];
    let mut redeemed_before_unlink = false;
    scenario("exchange racing unlink", &sim, &inputs, &[0, 1], &mut |s| {
        let delivered = tokens_of(s, &[0]);
        redeemed_before_unlink |= !delivered.is_empty();
        assert!(delivered.len() <= 1);
        all_dead(&sim, s, &delivered);
    });
    assert!(
        redeemed_before_unlink,
        "some schedule exchanges before the unlink"
    );
}

#[test]
fn racing_refreshes_all_succeed_with_distinct_live_tokens() {
    let (sim, _, refresh) = signed_in();
    for racers in [2, 3] {
        let inputs = vec![refresh_input(&refresh); racers];
        let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
        scenario(
            &format!("{racers} refreshes"),
            &sim,
            &inputs,
            crashes,
            &mut |s| {
                let actors: Vec<usize> = (0..racers).collect();
                let delivered = tokens_of(s, &actors);
                // Reusable refresh tokens: every request (or its retry) gets an access token.
                assert_eq!(delivered.len(), racers, "{:?}", s.trace);
                let mut distinct: Vec<&String> = delivered.iter().map(|(a, _)| a).collect();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), racers);
                for (token, _) in &delivered {
                    assert!(validates(&sim.config, &s.store, sim.now, token));
                }
            },
        );
    }
}

#[test]
fn consent_racing_unlink_never_revives_old_tokens() {
    let (sim, old_access, old_refresh) = signed_in();
    let consent = Input::Http {
        request: consent_form(&pkce_offline_query("s"), Decision::Allow),
        user: Some(alice()),
    };
    let inputs = vec![consent, unlink_input(&alice())];
    let mut saw_conflict = false;
    scenario("consent racing unlink", &sim, &inputs, &[0, 1], &mut |s| {
        all_dead(&sim, s, &[(old_access.clone(), Some(old_refresh.clone()))]);
        saw_conflict |= s.trace.iter().any(|e| matches!(e, Moment::Conflict { .. }));
        // The code the user received works exactly when its consent committed after the unlink.
        let Some(Outcome::Redirect(location)) = s.answers[0].last().map(Answer::outcome) else {
            panic!("consent redirects: {:?}", s.answers[0])
        };
        let code = redirect_param(location, "code").expect("a code");
        // The unlink's first commit ends the epoch (its sweep commits after it are cleanup).
        let consented_last = s
            .trace
            .iter()
            .rev()
            .find_map(|e| match e {
                Moment::Commit { actor: 0, .. } => Some(true),
                Moment::Commit { audit, .. }
                    if audit
                        .iter()
                        .any(|a| matches!(a, AuditEvent::Unlinked { .. })) =>
                {
                    Some(false)
                }
                _ => None,
            })
            .expect("commits");
        let mut after = Sim::new(Config::clone(&sim.config));
        after.store = s.store.clone();
        let exchanged = after.exchange_pkce(&code, VERIFIER).status;
        // With a crash, an earlier attempt's code may be the last commit; only the delivered
        // code's fate is pinned when the delivered consent committed last.
        if !s.trace.iter().any(|e| matches!(e, Moment::Crash { .. })) {
            assert_eq!(exchanged == 200, consented_last, "{:?}", s.trace);
        } else if exchanged == 200 {
            let unlinked = s.commit_of(|e| matches!(e, AuditEvent::Unlinked { .. }));
            assert!(unlinked.is_some());
        }
    });
    assert!(saw_conflict, "some schedule races both commits");
}

/// Issue 15: automatic re-authorization is one decision under the link's conditional write. A
/// signed-in user who already granted the app opens the authorization URL while the app is being
/// unlinked: either the code is issued before the unlink commits (and the unlink ends it), or the
/// user is asked again — never a code issued after the unlink without a new consent.
#[test]
fn reauthorization_racing_unlink_never_issues_an_unapproved_code() {
    let (sim, _, _) = signed_in();
    let reauthorize = Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("again")),
        user: Some(alice()),
    };
    let inputs = vec![reauthorize, unlink_input(&alice())];
    let (mut redirected, mut asked) = (0, 0);
    scenario(
        "re-authorization racing unlink",
        &sim,
        &inputs,
        &[0, 1],
        &mut |s| {
            let unlinked = s
                .commit_of(|e| matches!(e, AuditEvent::Unlinked { .. }))
                .expect("the unlink commits");
            match s.answers[0].last().map(Answer::outcome) {
                Some(Outcome::Redirect(location)) => {
                    redirected += 1;
                    let issued = s
                        .commit_of(|e| matches!(e, AuditEvent::CodeIssued { .. }))
                        .expect("a redirected code was committed");
                    let crashed = s.trace.iter().any(|e| matches!(e, Moment::Crash { .. }));
                    assert!(
                        issued < unlinked || crashed,
                        "a code issued after the unlink without consent: {:?}",
                        s.trace
                    );
                    // Whatever the order, the code is dead once the unlink committed.
                    let code = redirect_param(location, "code").expect("a code");
                    let mut after = Sim::new(Config::clone(&sim.config));
                    after.store = s.store.clone();
                    let exchanged = after.exchange_pkce(&code, VERIFIER);
                    assert_eq!(exchanged.status, 400, "{:?}", s.trace);
                }
                Some(Outcome::Consent(_)) => asked += 1,
                other => {
                    panic!("re-authorization ends in a redirect or the consent page: {other:?}")
                }
            }
        },
    );
    assert!(redirected > 0 && asked > 0, "both orders were explored");
}

/// The client credentials grant (issue 48): two of a client's token requests for itself racing,
/// with a host crash anywhere and the client's retry, and with a third racer revoking the
/// client's earlier token (RFC 7009's bearer form): each request ends with a token of its own,
/// live at the end; the revoked one is dead, and ended nothing else.
#[test]
fn racing_client_credentials_each_get_a_live_token_and_a_revocation_ends_only_its_own() {
    let mut sim = Sim::new(Config::new(client_credentials_document(&[CONF_APP])).unwrap());
    let mut request = form_request(&[("grant_type", "client_credentials")]);
    request
        .headers
        .push(("Authorization".into(), basic_header(CONF_APP, CONF_SECRET)));
    let (earlier, _) =
        token_response(&sim.http(request.clone(), None)).expect("a token for the client itself");
    let inputs = [
        http_input(request.clone()),
        http_input(request),
        revoke_input(&earlier),
    ];
    for racers in [2, 3] {
        let crashes: &[usize] = if racers == 2 { &[0, 1] } else { &[0] };
        let and_a_revocation = if racers == 3 { " and a revocation" } else { "" };
        scenario(
            &format!("2 client credentials requests{and_a_revocation}"),
            &sim,
            &inputs[..racers],
            crashes,
            &mut |s| {
                let mut delivered = Vec::new();
                for actor in 0..2 {
                    let tokens = tokens_of(s, &[actor]);
                    assert_eq!(tokens.len(), 1, "request {actor}: {:?}", s.trace);
                    assert!(tokens[0].1.is_none(), "no refresh token for a machine");
                    delivered.extend(tokens);
                }
                assert_ne!(delivered[0].0, delivered[1].0);
                for (token, _) in &delivered {
                    assert!(
                        validates(&sim.config, &s.store, sim.now, token),
                        "{:?}",
                        s.trace
                    );
                }
                if racers == 3 {
                    assert!(!validates(&sim.config, &s.store, sim.now, &earlier));
                }
            },
        );
    }
}

/// An identity assertion (ID-JAG, issue 48) presented by two racing requests of its client,
/// with a host crash anywhere and the client's retry: one assertion yields at most one token
/// in every schedule, and exactly one where no host crashed (a crash between the assertion's
/// use and its grant costs the client the assertion, never a second token: it asks its
/// provider again).
#[test]
fn racing_one_identity_assertion_yields_at_most_one_token() {
    let mut doc = fixture_document().to_json_value();
    doc["profile"] = serde_json::json!({
        "kind": "standards",
        "issuer": "https://auth.example",
        "identity_assertions": { "providers": [{
            "issuer": "https://idp.example",
            "jwks": { "keys": [ public_jwk(&signing_key(7), "idp-1") ] },
            "accounts": { "alice@corp.example": {
                "account_id": alice().account_id.as_str(),
                "uid": alice().uid.as_str(),
            } },
        }] },
    });
    let config = Config::new(ConfigDocument::from_json_value(&doc).unwrap()).unwrap();
    let sim = Sim::new(config);
    let assertion = id_jag(
        &signing_key(7),
        &serde_json::json!({
            "iss": "https://idp.example", "sub": "alice@corp.example",
            "aud": "https://auth.example", "client_id": CONF_APP, "jti": "raced",
            "iat": sim.now.0, "exp": sim.now.0 + 300, "scope": "account_info.read",
        }),
    );
    let mut request = form_request(&[("grant_type", JWT_BEARER_GRANT), ("assertion", &assertion)]);
    request
        .headers
        .push(("Authorization".into(), basic_header(CONF_APP, CONF_SECRET)));
    let inputs = [http_input(request.clone()), http_input(request)];
    for crash in [0, 1] {
        scenario(
            "one identity assertion presented twice",
            &sim,
            &inputs,
            &[crash],
            &mut |s| {
                let tokens = tokens_of(s, &[0, 1]);
                assert!(
                    tokens.len() <= 1,
                    "one assertion, two tokens: {:?}",
                    s.trace
                );
                if crash == 0 {
                    assert_eq!(tokens.len(), 1, "no crash, no token: {:?}", s.trace);
                }
                for (token, refresh) in &tokens {
                    assert!(refresh.is_none(), "no refresh token");
                    assert!(
                        validates(&sim.config, &s.store, sim.now, token),
                        "{:?}",
                        s.trace
                    );
                }
            },
        );
    }
}

/// The standards profile with DPoP (no nonces: the explorer's hosts answer at one instant), and
/// a public client's grant bound to `signing_key(31)` at its code exchange: the simulation and
/// its refresh token, and a maker of proofs for the token endpoint by a key.
fn bound_grant() -> (
    Sim,
    String,
    impl Fn(&p256::ecdsa::SigningKey, &str) -> String,
) {
    let mut doc = fixture_document().to_json_value();
    doc["profile"] = serde_json::json!({
        "kind": "standards",
        "issuer": "https://auth.example",
        "dpop": { "nonces": "none" },
    });
    let config = Config::new(ConfigDocument::from_json_value(&doc).unwrap()).unwrap();
    let mut sim = Sim::new(config);
    let now = sim.now.0;
    let proof = move |key: &p256::ecdsa::SigningKey, jti: &str| {
        let header = serde_json::json!({ "typ": "dpop+jwt", "alg": "ES256",
            "jwk": public_jwk(key, "dpop") });
        let claims = serde_json::json!({ "htm": "POST", "jti": jti, "iat": now,
            "htu": "https://auth.example/oauth2/token" });
        signed_jwt(key, &header, &claims)
    };
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let mut exchange = form_request(&pkce_exchange(&code, VERIFIER));
    exchange
        .headers
        .push(("DPoP".into(), proof(&signing_key(31), "exchange")));
    let tokens = json(&sim.token_request(exchange));
    assert_eq!(tokens["token_type"], "DPoP", "{tokens}");
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    (sim, refresh, proof)
}

/// A refresh of `refresh` by the public client with `proof`.
fn proven_refresh(refresh: &str, proof: String) -> Input {
    let mut request = form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", PKCE_APP),
    ]);
    request.headers.push(("DPoP".into(), proof));
    http_input(request)
}

/// A public client's bound refresh token (issue 49) refreshed twice at once by its client, each
/// with a proof of its key — the rotation and its retry: both get the rotation's answer, bound to
/// the key (the retry got 503 while a request that lost its later write created its proof's
/// record again). And the same token raced by the client and a thief who copied it, with a key of
/// its own: the thief gets nothing and ends nothing, whatever the order.
#[test]
fn a_bound_refresh_racing_its_retry_or_a_thief() {
    let (sim, refresh, proof) = bound_grant();
    let owner = signing_key(31);
    let first = proven_refresh(&refresh, proof(&owner, "first"));
    let retry = [
        first.clone(),
        proven_refresh(&refresh, proof(&owner, "retry")),
    ];
    scenario(
        "a bound refresh and its retry",
        &sim,
        &retry,
        &[0, 1],
        &mut |s| {
            let delivered = tokens_of(s, &[0, 1]);
            if s.trace
                .iter()
                .all(|moment| !matches!(moment, Moment::Crash { .. }))
            {
                assert_eq!(delivered.len(), 2, "{:?}", s.trace);
                assert_eq!(
                    delivered[0], delivered[1],
                    "the retry gets the rotation's answer"
                );
            }
            assert!(s.commit_of(reuse_or_revocation).is_none(), "{:?}", s.trace);
            for (token, _) in &delivered {
                // Bound: no bearer check lets it through.
                assert!(!validates(&sim.config, &s.store, sim.now, token));
            }
        },
    );
    let thief = [
        first,
        proven_refresh(&refresh, proof(&signing_key(32), "thief")),
    ];
    scenario(
        "a bound refresh and a thief",
        &sim,
        &thief,
        &[0],
        &mut |s| {
            assert!(
                tokens_of(s, &[1]).is_empty(),
                "the thief got tokens: {:?}",
                s.trace
            );
            assert!(s.commit_of(reuse_or_revocation).is_none(), "{:?}", s.trace);
        },
    );
}

/// One DPoP proof (issue 49) presented by two racing refreshes of a public client's bound grant,
/// with a host crash anywhere and the client's retry: the proof is taken at most once in every
/// schedule, and exactly once where no host crashed; every token issued is bound to the key.
#[test]
fn racing_one_dpop_proof_is_taken_at_most_once() {
    let (sim, refresh, proof) = bound_grant();
    let raced = proof(&signing_key(31), "raced");
    let inputs = [
        proven_refresh(&refresh, raced.clone()),
        proven_refresh(&refresh, raced),
    ];
    for crash in [0, 1] {
        scenario(
            "one DPoP proof presented twice",
            &sim,
            &inputs,
            &[crash],
            &mut |s| {
                let tokens = tokens_of(s, &[0, 1]);
                assert!(tokens.len() <= 1, "one proof, two answers: {:?}", s.trace);
                if crash == 0 {
                    assert_eq!(tokens.len(), 1, "no crash, no token: {:?}", s.trace);
                }
                for (token, _) in &tokens {
                    // Bound: no bearer check lets it through.
                    assert!(!validates(&sim.config, &s.store, sim.now, token));
                }
            },
        );
    }
}
