//! Bearer API calls, revocation and unlinking (SPEC.md "Call the API", "Revoke token",
//! "Authentication" 3 and 6, the access-token and refresh-token rows of the states table,
//! Errors rows 1–2) and RFC 6750 §2.1, §3, §3.1.

use edgegrant::*;
use edgegrant_tests::*;

fn api_request(headers: &[(&str, &str)]) -> HttpRequest {
    let mut request = HttpRequest::new("POST", GET_ACCOUNT, "");
    request.headers = headers
        .iter()
        .map(|(n, v)| ((*n).into(), (*v).into()))
        .collect();
    request
}

fn call(sim: &mut Sim, request: HttpRequest) -> Answer {
    sim.http(request, None)
}

/// A refresh by a public client (`client_id` alone), answered.
fn refresh_answer(sim: &mut Sim, refresh_token: &str, client_id: &str) -> Answer {
    sim.token_answer(form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", client_id),
    ]))
}

fn access_of(body: &serde_json::Value) -> String {
    body["access_token"].as_str().unwrap().to_owned()
}

/// A refused bearer request: its status, `.tag`, challenge, and the reason.
fn assert_refused(
    answer: Answer,
    status: u16,
    tag: &str,
    challenge_error: Option<&str>,
    refusal: Refusal,
) {
    assert_eq!(answer.refusal(), Some(&refusal), "{answer:?}");
    let response = http(answer);
    assert_eq!(response.status, status, "{}", response.body);
    assert_eq!(api_tag(&response), tag);
    assert_eq!(json(&response)["error_summary"], format!("{tag}/.."));
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    let challenge = response.header("WWW-Authenticate").expect("a challenge");
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    match challenge_error {
        Some(code) => assert!(
            challenge.contains(&format!("error=\"{code}\"")),
            "{challenge}"
        ),
        None => assert!(!challenge.contains("error="), "{challenge}"),
    }
}

#[test]
fn a_valid_bearer_token_yields_the_principal() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("expected the principal")
    };
    assert_eq!(principal.app.as_str(), PKCE_APP);
    assert_eq!(principal.subject, Subject::Account(alice().account_id));
    assert_eq!(principal.uid, Some(alice().uid));
    assert_eq!(
        principal.scopes.to_string(),
        "account_info.read files.metadata.read"
    );
    assert_eq!(principal.expires_at, Some(UnixTime(T0.0 + 14_400)));
}

#[test]
fn rfc6750_header_forms() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    for form in [
        format!("Bearer {token}"),
        format!("bearer {token}"),
        format!("BEARER   {token}"),
        format!(" Bearer {token} "),
    ] {
        let answer = call(&mut sim, api_request(&[("Authorization", &form)]));
        assert!(matches!(answer, Answer::Serve(_)), "{form:?}: {answer:?}");
    }
    // No credentials: 401 and a challenge without an error code (RFC 6750 §3.1).
    assert_refused(
        call(&mut sim, api_request(&[])),
        401,
        "invalid_access_token",
        None,
        Refusal::BearerMissing,
    );
    assert_refused(
        call(
            &mut sim,
            api_request(&[("Authorization", "Basic dXNlcjpwYXNz")]),
        ),
        401,
        "invalid_access_token",
        None,
        Refusal::BearerMissing,
    );
    // Malformed: 400 invalid_request.
    for bad in [
        "Bearer",
        "Bearer ",
        "Bearer a b",
        "Bearer tok\u{e9}n",
        "Bearer =abc",
    ] {
        assert_refused(
            call(&mut sim, api_request(&[("Authorization", bad)])),
            400,
            "invalid_access_token",
            Some("invalid_request"),
            Refusal::MalformedBearer,
        );
    }
    let twice = format!("Bearer {token}");
    assert_refused(
        call(
            &mut sim,
            api_request(&[("Authorization", &twice), ("authorization", &twice)]),
        ),
        400,
        "invalid_access_token",
        Some("invalid_request"),
        Refusal::MalformedBearer,
    );
    // Well-formed but unknown: 401 invalid_token.
    assert_refused(
        call(&mut sim, bearer_request(GET_ACCOUNT, "sl.unknown-token")),
        401,
        "invalid_access_token",
        Some("invalid_token"),
        Refusal::UnknownAccessToken,
    );
    let huge = format!("Bearer {}", "a".repeat(20_000));
    assert_refused(
        call(&mut sim, api_request(&[("Authorization", &huge)])),
        400,
        "invalid_access_token",
        Some("invalid_request"),
        Refusal::TooLarge,
    );
}

#[test]
fn access_token_expiry_boundary_is_exact() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    sim.advance(14_399);
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
    for _ in ["at expires_at", "one second later"] {
        sim.advance(1);
        let answer = sim.api(GET_ACCOUNT, &token);
        assert_refused(
            answer,
            401,
            "expired_access_token",
            Some("invalid_token"),
            Refusal::AccessTokenExpired,
        );
    }
}

#[test]
fn the_required_scope_of_each_endpoint_is_enforced() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    assert!(matches!(sim.api(LIST_FOLDER, &token), Answer::Serve(_)));
    let answer = sim.api(UPLOAD, &token);
    assert_eq!(
        answer.refusal(),
        Some(&Refusal::MissingScope(
            Scope::new("files.content.write").unwrap()
        ))
    );
    let response = http(answer);
    assert_eq!(response.status, 403);
    assert_eq!(api_tag(&response), "missing_scope");
    assert_eq!(
        json(&response)["error"]["required_scope"],
        "files.content.write"
    );
    let challenge = response.header("WWW-Authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"files.content.write\""),
        "{challenge}"
    );
}

#[test]
fn an_undeclared_endpoint_is_not_found() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    let records = sim.store.len();
    for path in ["/2/not/declared", "/2/users/get_current_account/", "/", ""] {
        let answer = sim.http(bearer_request(path, &token), None);
        assert_eq!(answer.refusal(), Some(&Refusal::NotFound), "{path:?}");
        assert_eq!(answer.response().status, 404, "{path:?}");
        assert_eq!(
            answer.response().header("WWW-Authenticate"),
            None,
            "{path:?}: no challenge, the path has no endpoint"
        );
    }
    assert_eq!(sim.store.len(), records, "nothing written");
    // The neighbour: the declared endpoint with the same token.
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
}

#[test]
fn revoke_ends_the_token_its_refresh_token_and_every_token_minted_from_it() {
    let mut sim = Sim::new(fixture_config());
    let first = sim.pkce_offline_tokens(&alice());
    let original = access_of(&first);
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let minted_a = access_of(&json(&sim.refresh(&refresh, PKCE_APP, None)));
    let minted_b = access_of(&json(&sim.refresh(&refresh, PKCE_APP, None)));
    // Another grant of the same user and app stays untouched.
    let other = access_of(&sim.pkce_offline_tokens(&alice()));

    let revoked = sim.revoke_answer(&minted_a);
    assert_eq!(revoked.outcome(), &Outcome::Revoked);
    let response = http(revoked);
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "null");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    for token in [&original, &minted_a, &minted_b] {
        assert_refused(
            sim.api(GET_ACCOUNT, token),
            401,
            "invalid_access_token",
            Some("invalid_token"),
            Refusal::AccessTokenRevoked,
        );
    }
    let refused = refresh_answer(&mut sim, &refresh, PKCE_APP);
    assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenRevoked));
    let refused = http(refused);
    assert_eq!(refused.status, 400);
    assert_eq!(oauth_error(&refused), "invalid_grant");
    assert!(matches!(sim.api(GET_ACCOUNT, &other), Answer::Serve(_)));
    // Revoking again: the token is no longer valid.
    let again = sim.revoke_answer(&minted_a);
    assert_eq!(again.refusal(), Some(&Refusal::AccessTokenRevoked));
    assert_eq!(http(again).status, 401);
    assert!(sim
        .audit
        .iter()
        .any(|e| matches!(e, AuditEvent::GrantRevoked { .. })));
}

#[test]
fn revoke_of_an_online_token_and_of_a_bad_token() {
    let mut sim = Sim::new(fixture_config());
    let code = sim.code_for(&conf_query("online", "s"), &alice());
    let token = access_of(&json(&sim.exchange_confidential(&code)));
    assert_eq!(sim.revoke(&token).status, 200);
    let after = sim.api(GET_ACCOUNT, &token);
    assert_eq!(after.refusal(), Some(&Refusal::AccessTokenRevoked));
    assert_eq!(http(after).status, 401);
    let mut no_token = api_request(&[]);
    no_token.path = REVOKE.into();
    let r = sim.http(no_token, None);
    assert_eq!(r.refusal(), Some(&Refusal::BearerMissing));
    assert_eq!(http(r).status, 401);
    let never = sim.revoke_answer("sl.never-issued");
    assert_eq!(never.refusal(), Some(&Refusal::UnknownAccessToken));
    assert_eq!(http(never).status, 401);
}

#[test]
fn unlink_by_the_user_ends_every_token_of_that_app_and_user_only() {
    let mut sim = Sim::new(fixture_config());
    let alice_pkce = sim.pkce_offline_tokens(&alice());
    let alice_pkce_2 = sim.pkce_offline_tokens(&alice());
    let bob_pkce = sim.pkce_offline_tokens(&bob());
    let code = sim.code_for(&conf_query("offline", "s"), &alice());
    let alice_conf = json(&sim.exchange_confidential(&code));
    // A code issued but not yet exchanged when the user unlinks.
    let pending = sim.code_for(&pkce_offline_query("s"), &alice());

    // Before the unlink, Alice had granted the app: authorizing again completes at once.
    assert!(matches!(
        sim.authorize(&pkce_offline_query("s"), Some(&alice()))
            .outcome(),
        Outcome::Redirect(_)
    ));
    let unlinked = sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    assert_eq!(unlinked.outcome(), &Outcome::Unlinked);
    assert_eq!(unlinked.response().status, 200);
    for tokens in [&alice_pkce, &alice_pkce_2] {
        let refused = sim.api(GET_ACCOUNT, &access_of(tokens));
        assert_eq!(refused.refusal(), Some(&Refusal::AccessTokenUnlinked));
        assert_eq!(http(refused).status, 401);
        let refresh = tokens["refresh_token"].as_str().unwrap();
        let refused = refresh_answer(&mut sim, refresh, PKCE_APP);
        assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenUnlinked));
        assert_eq!(oauth_error(&http(refused)), "invalid_grant");
    }
    let refused = sim.token_answer(form_request(&pkce_exchange(&pending, VERIFIER)));
    assert_eq!(refused.refusal(), Some(&Refusal::CodeUnlinked));
    assert_eq!(oauth_error(&http(refused)), "invalid_grant");
    // Bob's tokens, and Alice's tokens for another app, are untouched.
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&bob_pkce)),
        Answer::Serve(_)
    ));
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&alice_conf)),
        Answer::Serve(_)
    ));
    // Re-authorizing afterwards asks again and yields working tokens.
    let Outcome::Consent(prompt) = sim
        .authorize(&pkce_offline_query("s"), Some(&alice()))
        .outcome()
        .clone()
    else {
        panic!("an unlink forgets the consent")
    };
    assert_eq!(prompt.app.as_str(), PKCE_APP);
    let fresh = sim.pkce_offline_tokens(&alice());
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&fresh)),
        Answer::Serve(_)
    ));
    assert!(sim.audit.iter().any(|e| matches!(
        e,
        AuditEvent::Unlinked {
            by: Unlinker::User,
            ..
        }
    )));
}

#[test]
fn unlink_by_a_team_admin_ends_a_team_apps_tokens() {
    let mut sim = Sim::new(fixture_config());
    let q = query(&[
        ("client_id", TEAM_APP),
        ("response_type", "code"),
        ("redirect_uri", TEAM_REDIRECT),
        ("token_access_type", "offline"),
    ]);
    let code = sim.code_for(&q, &alice());
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", TEAM_REDIRECT),
    ];
    let tokens = json(&sim.token(&form, Some((TEAM_APP, TEAM_SECRET))));
    let token = access_of(&tokens);
    assert!(matches!(sim.api(TEAM_INFO, &token), Answer::Serve(_)));
    assert_eq!(
        sim.unlink(TEAM_APP, &alice(), Unlinker::TeamAdmin)
            .outcome(),
        &Outcome::Unlinked
    );
    let refused = sim.api(TEAM_INFO, &token);
    assert_eq!(refused.refusal(), Some(&Refusal::AccessTokenUnlinked));
    assert_eq!(http(refused).status, 401);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let refused = sim.token_answer(form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", TEAM_APP),
        ("client_secret", TEAM_SECRET),
    ]));
    assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenUnlinked));
    assert_eq!(oauth_error(&http(refused)), "invalid_grant");
    assert!(sim.audit.iter().any(|e| matches!(
        e,
        AuditEvent::Unlinked {
            by: Unlinker::TeamAdmin,
            ..
        }
    )));
}

/// A user with `grants` grants of `refreshes` refreshed tokens each: the simulation and the
/// access tokens, the last minted last.
fn holding(grants: usize, refreshes: usize) -> (Sim, Vec<String>) {
    let mut sim = Sim::new(fixture_config());
    let mut tokens = Vec::new();
    for _ in 0..grants {
        let t = sim.pkce_offline_tokens(&alice());
        let refresh = t["refresh_token"].as_str().unwrap().to_owned();
        tokens.push(access_of(&t));
        for _ in 0..refreshes {
            tokens.push(access_of(&json(&sim.refresh(&refresh, PKCE_APP, None))));
        }
    }
    (sim, tokens)
}

/// The keys and the batches a bearer check of `token` reads, and its answer.
fn keys_read(sim: &mut Sim, token: &str) -> ((usize, usize), Answer) {
    let input = Input::Http {
        request: bearer_request(GET_ACCOUNT, token),
        user: None,
    };
    let mut request = edgegrant_tests::Request::new(&sim.config, input, sim.now, entropy(9));
    let mut keys = 0;
    loop {
        match request.step(&mut sim.store).unwrap() {
            Progress::Loaded(k) => keys += k.len(),
            Progress::Done { answer, .. } => return ((keys, request.reads), answer),
            Progress::Conflicted(_) | Progress::Committed { .. } | Progress::Fetched(_) => {
                unreachable!()
            }
        }
    }
}

/// Keys a bearer check reads, for a token of a user who has `grants` grants with `refreshes`
/// refreshed tokens each, after an unlink.
fn keys_read_after_unlink(grants: usize, refreshes: usize) -> (usize, usize) {
    let (mut sim, tokens) = holding(grants, refreshes);
    sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    let (read, answer) = keys_read(&mut sim, tokens.last().unwrap());
    assert_eq!(answer.refusal(), Some(&Refusal::AccessTokenUnlinked));
    assert_eq!(http(answer).status, 401);
    read
}

#[test]
fn unlink_and_revocation_checks_read_a_constant_number_of_records() {
    let small = keys_read_after_unlink(1, 0);
    let large = keys_read_after_unlink(8, 12);
    assert_eq!(
        small,
        (4, 2),
        "token + ledger, then grant + link in one batch"
    );
    assert_eq!(large, small, "the same reads with 104 tokens as with one");
}

/// The ledger: a token minted since the account's last end is checked by one batch of two
/// records (the token, the ledger); once anything of the account ends (here: another grant
/// revoked), the tokens minted before it are checked against their grant and link again, and
/// those minted after it by one batch again.
#[test]
fn a_token_nothing_ended_since_is_checked_in_one_read() {
    let (mut sim, tokens) = holding(3, 2);
    for token in &tokens {
        let (read, answer) = keys_read(&mut sim, token);
        assert!(matches!(answer, Answer::Serve(_)), "{answer:?}");
        assert_eq!(read, (2, 1), "token + ledger");
    }
    // The second grant's first token revoked: its grant ends, the ledger moves on.
    assert_eq!(sim.revoke(&tokens[3]).status, 200);
    let (read, answer) = keys_read(&mut sim, &tokens[3]);
    assert_eq!(answer.refusal(), Some(&Refusal::AccessTokenRevoked));
    assert_eq!(read, (4, 2));
    let (read, answer) = keys_read(&mut sim, &tokens[0]);
    assert!(matches!(answer, Answer::Serve(_)), "{answer:?}");
    assert_eq!(read, (4, 2), "minted before the end: grant and link read");
    let fresh = sim.pkce_offline_tokens(&alice());
    let (read, answer) = keys_read(&mut sim, &access_of(&fresh));
    assert!(matches!(answer, Answer::Serve(_)), "{answer:?}");
    assert_eq!(read, (2, 1), "minted after the end");
}

#[test]
fn an_app_removed_from_the_configuration_is_switched_off() {
    let mut sim = Sim::new(fixture_config());
    let tokens = sim.pkce_offline_tokens(&alice());
    let access = access_of(&tokens);
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    assert!(matches!(sim.api(GET_ACCOUNT, &access), Answer::Serve(_)));

    // The operator deletes the app; the records stay in the store.
    let mut doc = fixture_document();
    doc.apps.retain(|app| app.key.as_str() != PKCE_APP);
    sim.config = std::sync::Arc::new(Config::new(doc).unwrap());

    let call = sim.api(GET_ACCOUNT, &access);
    assert_refused(
        call,
        401,
        "invalid_access_token",
        Some("invalid_token"),
        Refusal::AppRemoved,
    );
    assert_refused(
        sim.revoke_answer(&access),
        401,
        "invalid_access_token",
        Some("invalid_token"),
        Refusal::AppRemoved,
    );
    let refreshed = refresh_answer(&mut sim, &refresh, PKCE_APP);
    assert_eq!(
        refreshed.refusal(),
        Some(&Refusal::ClientAuthenticationFailed)
    );
    assert_eq!(http(refreshed).status, 400);
    let consent = sim.authorize(&pkce_offline_query("s"), Some(&alice()));
    assert_eq!(consent.refusal(), Some(&Refusal::UnknownClient));
    assert_eq!(http(consent).status, 400);
}

#[test]
fn revoke_takes_post_only_and_every_answer_is_uncacheable_and_unsniffable() {
    let mut sim = Sim::new(fixture_config());
    let access = access_of(&sim.pkce_offline_tokens(&alice()));
    for method in ["GET", "PUT", "DELETE", "PATCH"] {
        let mut request = HttpRequest::new(method, "/2/auth/token/revoke", "");
        request
            .headers
            .push(("Authorization".into(), format!("Bearer {access}")));
        let answer = sim.http(request, None);
        assert_eq!(answer.refusal(), Some(&Refusal::MethodNotAllowed));
        let response = http(answer);
        assert_eq!(response.status, 405, "{method}");
        assert_eq!(response.header("Allow"), Some("POST"));
        assert_eq!(response.header("Cache-Control"), Some("no-store"));
    }
    // The token is still live: a wrong method changed nothing.
    let Answer::Serve(Authorized { headers, .. }) = sim.api(GET_ACCOUNT, &access) else {
        panic!("expected the call to be served")
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("Cache-Control"), Some("no-store"));
    assert_eq!(header("X-Content-Type-Options"), Some("nosniff"));
    for response in [
        sim.revoke(&access),
        http(sim.api(GET_ACCOUNT, &access)),
        http(sim.authorize(&pkce_offline_query("s"), Some(&alice()))),
        http(sim.authorize("client_id=nobody", Some(&alice()))),
    ] {
        assert_eq!(
            response.header("X-Content-Type-Options"),
            Some("nosniff"),
            "{response:?}"
        );
        assert_eq!(response.header("Cache-Control"), Some("no-store"));
    }
}
