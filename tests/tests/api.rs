//! Bearer API calls, revocation and unlinking (SPEC.md "Call the API", "Revoke token",
//! "Authentication" 3 and 6, the access-token and refresh-token rows of the states table,
//! Errors rows 1–2) and RFC 6750 §2.1, §3, §3.1.

use edgegrant::*;
use edgegrant_tests::*;

fn api_request(headers: &[(&str, &str)]) -> HttpRequest {
    HttpRequest {
        query: String::new(),
        method: "POST".into(),
        headers: headers
            .iter()
            .map(|(n, v)| ((*n).into(), (*v).into()))
            .collect(),
        body: Vec::new(),
    }
}

fn call(sim: &mut Sim, request: HttpRequest) -> Outcome {
    sim.run(Input::ApiCall {
        endpoint: GET_ACCOUNT.into(),
        request,
    })
}

fn access_of(body: &serde_json::Value) -> String {
    body["access_token"].as_str().unwrap().to_owned()
}

fn assert_refused(outcome: Outcome, status: u16, tag: &str, challenge_error: Option<&str>) {
    let response = http(outcome);
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
    let Outcome::Authorized(principal) = sim.api(GET_ACCOUNT, &token) else {
        panic!("expected the principal")
    };
    assert_eq!(principal.app.as_str(), PKCE_APP);
    assert_eq!(principal.account_id, alice().account_id);
    assert_eq!(principal.uid, alice().uid);
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
        let outcome = call(&mut sim, api_request(&[("Authorization", &form)]));
        assert!(
            matches!(outcome, Outcome::Authorized(_)),
            "{form:?}: {outcome:?}"
        );
    }
    // No credentials: 401 and a challenge without an error code (RFC 6750 §3.1).
    assert_refused(
        call(&mut sim, api_request(&[])),
        401,
        "invalid_access_token",
        None,
    );
    assert_refused(
        call(
            &mut sim,
            api_request(&[("Authorization", "Basic dXNlcjpwYXNz")]),
        ),
        401,
        "invalid_access_token",
        None,
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
    );
    // Well-formed but unknown: 401 invalid_token.
    assert_refused(
        call(&mut sim, bearer_request("sl.unknown-token")),
        401,
        "invalid_access_token",
        Some("invalid_token"),
    );
    let huge = format!("Bearer {}", "a".repeat(20_000));
    assert_refused(
        call(&mut sim, api_request(&[("Authorization", &huge)])),
        400,
        "invalid_access_token",
        Some("invalid_request"),
    );
}

#[test]
fn access_token_expiry_boundary_is_exact() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    sim.advance(14_399);
    assert!(matches!(
        sim.api(GET_ACCOUNT, &token),
        Outcome::Authorized(_)
    ));
    for _ in ["at expires_at", "one second later"] {
        sim.advance(1);
        let outcome = sim.api(GET_ACCOUNT, &token);
        assert_refused(outcome, 401, "expired_access_token", Some("invalid_token"));
    }
}

#[test]
fn the_required_scope_of_each_endpoint_is_enforced() {
    let mut sim = Sim::new(fixture_config());
    let token = access_of(&sim.pkce_offline_tokens(&alice()));
    assert!(matches!(
        sim.api(LIST_FOLDER, &token),
        Outcome::Authorized(_)
    ));
    let response = http(sim.api(UPLOAD, &token));
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
fn an_undeclared_endpoint_is_host_misuse() {
    let config = fixture_config();
    let input = Input::ApiCall {
        endpoint: "/2/not/declared".into(),
        request: bearer_request("sl.x"),
    };
    let result = handle(&config, &input, T0, &entropy(1), &Records::new());
    assert_eq!(
        result,
        Err(Misuse::UnknownEndpoint("/2/not/declared".into()))
    );
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

    let response = sim.revoke(&minted_a);
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "null");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    for token in [&original, &minted_a, &minted_b] {
        assert_refused(
            sim.api(GET_ACCOUNT, token),
            401,
            "invalid_access_token",
            Some("invalid_token"),
        );
    }
    let refused = sim.refresh(&refresh, PKCE_APP, None);
    assert_eq!(refused.status, 400);
    assert_eq!(oauth_error(&refused), "invalid_grant");
    assert!(matches!(
        sim.api(GET_ACCOUNT, &other),
        Outcome::Authorized(_)
    ));
    // Revoking again: the token is no longer valid.
    assert_eq!(sim.revoke(&minted_a).status, 401);
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
    assert_eq!(http(sim.api(GET_ACCOUNT, &token)).status, 401);
    let r = http(sim.run(Input::Revoke {
        request: api_request(&[]),
    }));
    assert_eq!(r.status, 401);
    assert_eq!(sim.revoke("sl.never-issued").status, 401);
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

    assert_eq!(
        sim.unlink(PKCE_APP, &alice(), Unlinker::User),
        Outcome::Unlinked
    );
    for tokens in [&alice_pkce, &alice_pkce_2] {
        assert_eq!(http(sim.api(GET_ACCOUNT, &access_of(tokens))).status, 401);
        let refresh = tokens["refresh_token"].as_str().unwrap();
        assert_eq!(
            oauth_error(&sim.refresh(refresh, PKCE_APP, None)),
            "invalid_grant"
        );
    }
    assert_eq!(
        oauth_error(&sim.exchange_pkce(&pending, VERIFIER)),
        "invalid_grant"
    );
    // Bob's tokens, and Alice's tokens for another app, are untouched.
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&bob_pkce)),
        Outcome::Authorized(_)
    ));
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&alice_conf)),
        Outcome::Authorized(_)
    ));
    // Re-authorizing afterwards asks again and yields working tokens.
    let Outcome::Consent(prompt) = sim.authorize(&pkce_offline_query("s"), Some(&alice())) else {
        panic!()
    };
    assert!(!prompt.already_granted);
    let fresh = sim.pkce_offline_tokens(&alice());
    assert!(matches!(
        sim.api(GET_ACCOUNT, &access_of(&fresh)),
        Outcome::Authorized(_)
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
    assert!(matches!(sim.api(TEAM_INFO, &token), Outcome::Authorized(_)));
    assert_eq!(
        sim.unlink(TEAM_APP, &alice(), Unlinker::TeamAdmin),
        Outcome::Unlinked
    );
    assert_eq!(http(sim.api(TEAM_INFO, &token)).status, 401);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    assert_eq!(
        oauth_error(&sim.refresh(refresh, TEAM_APP, Some(TEAM_SECRET))),
        "invalid_grant"
    );
    assert!(sim.audit.iter().any(|e| matches!(
        e,
        AuditEvent::Unlinked {
            by: Unlinker::TeamAdmin,
            ..
        }
    )));
}

/// Keys a bearer check reads, for a token of a user who has `grants` grants with `refreshes`
/// refreshed tokens each, after an unlink.
fn keys_read_after_unlink(grants: usize, refreshes: usize) -> (usize, usize) {
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
    sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    let last = tokens.last().unwrap().clone();
    let input = Input::ApiCall {
        endpoint: GET_ACCOUNT.into(),
        request: bearer_request(&last),
    };
    let mut request = Request::new(input, sim.now, entropy(9));
    let mut keys = 0;
    loop {
        match request.step(&sim.config, &mut sim.store).unwrap() {
            Progress::Loaded(k) => keys += k.len(),
            Progress::Done { outcome, .. } => {
                assert_eq!(http(outcome).status, 401);
                break;
            }
            Progress::Conflicted(_) => unreachable!(),
        }
    }
    (keys, request.reads)
}

#[test]
fn unlink_and_revocation_checks_read_a_constant_number_of_records() {
    let small = keys_read_after_unlink(1, 0);
    let large = keys_read_after_unlink(8, 12);
    assert_eq!(small, (3, 2), "token, then grant + link in one batch");
    assert_eq!(large, small, "the same reads with 104 tokens as with one");
}
