//! `POST /oauth2/token` (SPEC.md "Exchange authorization code", "Refresh access token",
//! "Authentication" 1, 4, 5; states table rows for the authorization code and refresh token;
//! Errors rows 3–4) and RFC 6749 §2.3.1, §5.1, §5.2, RFC 7636 §4.6, Appendix B.

use edgegrant::*;
use edgegrant_tests::*;

fn sim() -> Sim {
    Sim::new(fixture_config())
}

fn conf_code(sim: &mut Sim, access: &str) -> String {
    sim.code_for(&conf_query(access, "s"), &alice())
}

/// The refresh token of a fresh offline grant of the confidential app.
fn conf_refresh_token(sim: &mut Sim) -> String {
    let code = conf_code(sim, "offline");
    let body = json(&sim.exchange_confidential(&code));
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// The confidential fixture app's exchange (secret in the body), answered.
fn exchange_confidential(sim: &mut Sim, code: &str) -> Answer {
    sim.token_form_answer(&conf_exchange(code), None)
}

/// The public fixture app's PKCE exchange, answered.
fn exchange_pkce(sim: &mut Sim, code: &str, verifier: &str) -> Answer {
    sim.token_form_answer(&pkce_exchange(code, verifier), None)
}

/// An RFC 6749 §5.2 error response, refused for exactly this reason.
fn assert_oauth_error(answer: &Answer, status: u16, error: &str, refusal: Refusal) {
    let response = answer.response();
    assert_eq!(response.status, status, "{}", response.body);
    assert_eq!(oauth_error(response), error, "{}", response.body);
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    assert_eq!(response.header("Cache-Control"), Some("no-store"));
    assert_eq!(answer.refusal(), Some(&refusal), "{}", response.body);
}

/// 200 when the request must work, `invalid_grant` for this reason otherwise.
fn assert_granted_iff(answer: &Answer, works: bool, refusal: Refusal) {
    if works {
        let response = answer.response();
        assert_eq!(response.status, 200, "{}", response.body);
        assert_eq!(answer.outcome(), &Outcome::Tokens);
    } else {
        assert_oauth_error(answer, 400, "invalid_grant", refusal);
    }
}

#[test]
fn rfc7636_appendix_b_s256_vector() {
    let verifier = CodeVerifier::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").unwrap();
    let challenge = CodeChallenge::s256(&verifier);
    assert_eq!(
        challenge.value,
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    assert!(challenge.is_satisfied_by(&verifier));
    // And through the whole server: the Appendix B pair completes a PKCE exchange.
    let mut sim = sim();
    let tokens = sim.pkce_offline_tokens(&alice());
    assert!(tokens["access_token"].is_string());
}

#[test]
fn code_exchange_response_has_the_reference_shape() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "offline");
    let response = sim.exchange_confidential(&code);
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.header("Cache-Control"), Some("no-store"));
    assert_eq!(response.header("Pragma"), Some("no-cache"));
    let body = json(&response);
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "access_token",
            "account_id",
            "expires_in",
            "refresh_token",
            "scope",
            "token_type",
            "uid"
        ]
    );
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["expires_in"], 14400);
    assert_eq!(body["account_id"], alice().account_id.as_str());
    assert_eq!(body["uid"], alice().uid.as_str());
    assert_eq!(
        body["scope"],
        "account_info.read files.content.read files.content.write"
    );
}

#[test]
fn online_exchange_returns_no_refresh_token() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "online");
    let body = json(&sim.exchange_confidential(&code));
    assert!(body["access_token"].is_string());
    assert!(body.get("refresh_token").is_none());
}

#[test]
fn credentials_are_256_bit_url_safe_and_access_tokens_start_with_sl() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "offline");
    let url_safe = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    // `<route>.<secret>`: the sealed partition in 32 characters, then 43 base64url characters
    // = 256 bits of secret, each drawn from its own span of the entropy.
    let shape = |credential: &str| {
        let (route, secret) = credential.split_once('.').expect("a route");
        assert_eq!((route.len(), secret.len()), (32, 43), "{credential}");
        assert!(url_safe(route) && url_safe(secret), "{credential}");
        secret.to_owned()
    };
    let code_secret = shape(&code);
    let body = json(&sim.exchange_confidential(&code));
    let access = body["access_token"].as_str().unwrap();
    let rest = access.strip_prefix("sl.").expect("sl. prefix");
    let refresh = body["refresh_token"].as_str().unwrap();
    let (access_secret, refresh_secret) = (shape(rest), shape(refresh));
    assert_ne!(access_secret, refresh_secret);
    assert_ne!(code_secret, refresh_secret);
}

#[test]
fn secrets_are_stored_and_audited_only_as_digests() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "offline");
    let body = json(&sim.exchange_confidential(&code));
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let refreshed = json(&sim.refresh(&refresh, CONF_APP, Some(CONF_SECRET)));
    let access2 = refreshed["access_token"].as_str().unwrap().to_owned();
    sim.revoke(&access2);
    let stored: String = sim
        .store
        .iter()
        .map(|(k, v)| {
            format!(
                "{k} {} {:?}",
                String::from_utf8_lossy(&v.bytes),
                v.record().unwrap()
            )
        })
        .collect();
    let audit = serde_json::to_string(&sim.audit).unwrap();
    assert!(sim.audit.len() >= 4, "{audit}");
    for secret in [&code, &access, &refresh, &access2, &CONF_SECRET.to_owned()] {
        assert!(
            !stored.contains(secret.as_str()),
            "store holds a secret in plain text"
        );
        assert!(!audit.contains(secret.as_str()), "audit log holds a secret");
        assert!(!format!("{:?}", sim.store).contains(secret.as_str()));
    }
}

#[test]
fn basic_credentials_are_form_urldecoded() {
    let secret = "p@ss:w+rd%/é x";
    let mut doc = fixture_document();
    for app in &mut doc.apps {
        if app.key.as_str() == CONF_APP {
            app.secret_digest = Some(ClientSecret::presented(secret).digest());
        }
    }
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let form = |code: &str| {
        vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", CONF_REDIRECT.to_owned()),
        ]
    };
    let code = conf_code(&mut sim, "online");
    let pairs = form(&code);
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let ok = sim.token(&pairs, Some((CONF_APP, secret)));
    assert_eq!(ok.status, 200, "{}", ok.body);

    // The same secret put in the header without form-encoding ('+' means space) fails.
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD.encode(format!("{CONF_APP}:{secret}"));
    let code = conf_code(&mut sim, "online");
    let mut request = HttpRequest::new("POST", "/oauth2/token", "");
    request.headers = vec![
        (
            "content-type".into(),
            "application/x-www-form-urlencoded; charset=UTF-8".into(),
        ),
        ("authorization".into(), format!("Basic {raw}")),
    ];
    request.body = form_body(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", CONF_REDIRECT),
    ])
    .into_bytes();
    let refused = sim.token_answer(request);
    assert_oauth_error(
        &refused,
        401,
        "invalid_client",
        Refusal::ClientAuthenticationFailed,
    );
    assert!(refused
        .response()
        .header("WWW-Authenticate")
        .unwrap()
        .starts_with("Basic"));
}

#[test]
fn client_authentication_failures_are_invalid_client() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "online");
    let base = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", CONF_REDIRECT),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    let failed = Refusal::ClientAuthenticationFailed;
    // Wrong secret in the body: 400 (a 401 would need a challenge, RFC 9110 §15.5.2).
    let r = sim.token_form_answer(
        &with(&[("client_id", CONF_APP), ("client_secret", "nope")]),
        None,
    );
    assert_oauth_error(&r, 400, "invalid_client", failed.clone());
    assert_eq!(r.response().header("WWW-Authenticate"), None);
    // Wrong secret over Basic: 401 with the Basic challenge.
    let r = sim.token_form_answer(&base, Some((CONF_APP, "nope")));
    assert_oauth_error(&r, 401, "invalid_client", failed.clone());
    assert!(r
        .response()
        .header("WWW-Authenticate")
        .unwrap()
        .starts_with("Basic"));
    // Unknown app.
    let r = sim.token_form_answer(
        &with(&[("client_id", "nobody"), ("client_secret", "x")]),
        None,
    );
    assert_oauth_error(&r, 400, "invalid_client", failed.clone());
    // No credentials at all.
    let r = sim.token_form_answer(&base, None);
    assert_oauth_error(
        &r,
        400,
        "invalid_client",
        Refusal::ClientAuthenticationMissing,
    );
    // A confidential app with client_id alone and no code_verifier.
    let r = sim.token_form_answer(&with(&[("client_id", CONF_APP)]), None);
    assert_oauth_error(&r, 400, "invalid_client", Refusal::ProofMissing);
    // A public app presenting a secret.
    let r = sim.token_form_answer(
        &with(&[("client_id", PKCE_APP), ("client_secret", "guess")]),
        None,
    );
    assert_oauth_error(&r, 400, "invalid_client", failed);
    // Malformed Basic.
    let mut request = form_request(&base);
    request
        .headers
        .push(("Authorization".into(), "Basic !!!not-base64".into()));
    let r = sim.token_answer(request.clone());
    assert_oauth_error(&r, 401, "invalid_client", Refusal::MalformedBasic);
    assert!(r.response().header("WWW-Authenticate").is_some());
    // Standard base64 with `+` and `/` decodes (a wrong secret, checked); the URL-safe
    // alphabet's `-` and `_` in their place do not.
    let standard = {
        use base64::Engine as _;
        let text = format!("{CONF_APP}:?>?>~~");
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    };
    assert!(
        standard.contains('+') && standard.contains('/'),
        "{standard}"
    );
    let url_safe = standard.replace('+', "-").replace('/', "_");
    for (value, refusal) in [
        (standard, Refusal::ClientAuthenticationFailed),
        (url_safe, Refusal::MalformedBasic),
    ] {
        let mut request = form_request(&base);
        request.headers.push(("Authorization".into(), value));
        let r = sim.token_answer(request);
        assert_oauth_error(&r, 401, "invalid_client", refusal);
    }
    // Basic and a body secret together: two methods.
    request.headers[1].1 = basic_header(CONF_APP, CONF_SECRET);
    request.body = form_body(&with(&[("client_secret", CONF_SECRET)])).into_bytes();
    assert_oauth_error(
        &sim.token_answer(request),
        400,
        "invalid_request",
        Refusal::MultipleClientAuthentications,
    );
    // The neighbour that must succeed: the right secret in the body.
    let ok = sim.token(
        &with(&[("client_id", CONF_APP), ("client_secret", CONF_SECRET)]),
        None,
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[test]
fn malformed_requests_get_rfc6749_errors() {
    let mut sim = sim();
    let creds = [("client_id", CONF_APP), ("client_secret", CONF_SECRET)];
    let form = |pairs: &[(&'static str, &'static str)]| {
        let mut v = creds.to_vec();
        v.extend_from_slice(pairs);
        v
    };
    let refused = |sim: &mut Sim, pairs: &[(&str, &str)], error: &str, refusal: Refusal| {
        assert_oauth_error(&sim.token_form_answer(pairs, None), 400, error, refusal);
    };
    refused(
        &mut sim,
        &form(&[]),
        "invalid_request",
        Refusal::GrantTypeMissing,
    );
    refused(
        &mut sim,
        &form(&[("grant_type", "")]),
        "invalid_request",
        Refusal::GrantTypeMissing,
    );
    refused(
        &mut sim,
        &form(&[("grant_type", "password")]),
        "unsupported_grant_type",
        Refusal::UnsupportedGrantType,
    );
    refused(
        &mut sim,
        &form(&[("grant_type", "authorization_code")]),
        "invalid_request",
        Refusal::CodeMissing,
    );
    refused(
        &mut sim,
        &form(&[
            ("grant_type", "authorization_code"),
            ("grant_type", "authorization_code"),
        ]),
        "invalid_request",
        Refusal::Repeated("grant_type"),
    );
    refused(
        &mut sim,
        &form(&[("grant_type", "refresh_token")]),
        "invalid_request",
        Refusal::RefreshTokenMissing,
    );
    // Repeated credentials.
    let mut repeated = form(&[("grant_type", "refresh_token"), ("refresh_token", "x")]);
    repeated.push(("client_id", CONF_APP));
    refused(
        &mut sim,
        &repeated,
        "invalid_request",
        Refusal::Repeated("client_id"),
    );

    let body = form_body(&form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", "x"),
    ]));
    let request = |method: &str, content_type: &str, body: Vec<u8>| {
        let mut request = HttpRequest::new(method, "/oauth2/token", "");
        request.headers = vec![("Content-Type".into(), content_type.into())];
        request.body = body;
        request
    };
    let r = sim.token_answer(request(
        "GET",
        "application/x-www-form-urlencoded",
        body.clone().into_bytes(),
    ));
    assert_eq!(r.refusal(), Some(&Refusal::MethodNotAllowed));
    let r = r.response();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("Allow"), Some("POST"));
    assert_eq!(oauth_error(r), "invalid_request");
    assert_oauth_error(
        &sim.token_answer(request(
            "POST",
            "application/json",
            body.clone().into_bytes(),
        )),
        400,
        "invalid_request",
        Refusal::NotAForm,
    );
    let huge = format!("{body}&pad={}", "a".repeat(20_000)).into_bytes();
    assert_oauth_error(
        &sim.token_answer(request("POST", "application/x-www-form-urlencoded", huge)),
        400,
        "invalid_request",
        Refusal::TooLarge,
    );
    let garbage = vec![0xff, 0xfe, b'&', b'=', b'%', b'z', 0x00];
    assert_oauth_error(
        &sim.token_answer(request(
            "POST",
            "application/x-www-form-urlencoded",
            garbage,
        )),
        400,
        "invalid_request",
        Refusal::GrantTypeMissing,
    );
    // The neighbour: a well-formed refresh with an unknown token is a grant error, not a request error.
    assert_oauth_error(
        &sim.token_answer(request(
            "POST",
            "application/x-www-form-urlencoded",
            body.into_bytes(),
        )),
        400,
        "invalid_grant",
        Refusal::UnknownRefreshToken,
    );
}

#[test]
fn code_must_be_known_unexpired_and_issued_to_this_app() {
    let mut sim = sim();
    assert_oauth_error(
        &exchange_confidential(&mut sim, "no-such-code"),
        400,
        "invalid_grant",
        Refusal::UnknownCode,
    );
    // A code of the public app presented by the confidential app.
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let r = sim.token_form_answer(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("code_verifier", VERIFIER),
            ("redirect_uri", PKCE_REDIRECT),
        ],
        None,
    );
    assert_oauth_error(&r, 400, "invalid_grant", Refusal::CodeOfAnotherApp);
    // ...and that failed attempt did not consume it.
    assert_eq!(sim.exchange_pkce(&code, VERIFIER).status, 200);
}

#[test]
fn code_expiry_boundary_is_exact() {
    for (after, works) in [(599, true), (600, false), (601, false)] {
        let mut sim = sim();
        let code = conf_code(&mut sim, "online");
        sim.advance(after);
        assert_granted_iff(
            &exchange_confidential(&mut sim, &code),
            works,
            Refusal::CodeExpired,
        );
    }
}

#[test]
fn redirect_uri_must_repeat_exactly() {
    let mut sim = sim();
    for (sent, works) in [
        (None, false),
        (Some("https://conf.example/cb/"), false),
        (Some("https://conf.example/other?tenant=1"), false),
        (Some(CONF_REDIRECT), true),
    ] {
        let code = conf_code(&mut sim, "online");
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
        ];
        form.extend(sent.map(|s| ("redirect_uri", s)));
        assert_granted_iff(
            &sim.token_form_answer(&form, None),
            works,
            Refusal::RedirectUriMismatch,
        );
    }
}

#[test]
fn pkce_verifier_must_match_and_must_not_be_sent_without_a_challenge() {
    let mut sim = sim();
    // Wrong verifier (well-formed) → invalid_grant; the right one still works after.
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let wrong = "A".repeat(43);
    assert_oauth_error(
        &exchange_pkce(&mut sim, &code, &wrong),
        400,
        "invalid_grant",
        Refusal::VerifierMismatch,
    );
    // Malformed verifier (too short) → invalid_request.
    assert_oauth_error(
        &exchange_pkce(&mut sim, &code, "short"),
        400,
        "invalid_request",
        Refusal::MalformedVerifier,
    );
    assert_eq!(sim.exchange_pkce(&code, VERIFIER).status, 200);

    // A verifier for a code issued without a challenge is a downgrade: refused.
    let code = conf_code(&mut sim, "online");
    let r = sim.token_form_answer(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("redirect_uri", CONF_REDIRECT),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_oauth_error(&r, 400, "invalid_grant", Refusal::VerifierWithoutChallenge);

    // A confidential app's PKCE code: with the secret but no verifier → invalid_grant.
    let q = query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", CONF_REDIRECT),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ]);
    let code = sim.code_for(&q, &alice());
    assert_oauth_error(
        &exchange_confidential(&mut sim, &code),
        400,
        "invalid_grant",
        Refusal::VerifierMissing,
    );
    // A public client naming itself over Basic with an empty password still needs PKCE.
    let pkce_code = sim.code_for(&pkce_offline_query("s"), &alice());
    let over_basic = |code: &str, verifier: Option<&str>| {
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", PKCE_REDIRECT.to_owned()),
        ];
        form.extend(verifier.map(|v| ("code_verifier", v.to_owned())));
        form
    };
    let pairs = over_basic(&pkce_code, None);
    let pairs: Vec<_> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_oauth_error(
        &sim.token_form_answer(&pairs, Some((PKCE_APP, ""))),
        401,
        "invalid_client",
        Refusal::ProofMissing,
    );
    let pairs = over_basic(&pkce_code, Some(VERIFIER));
    let pairs: Vec<_> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(sim.token(&pairs, Some((PKCE_APP, ""))).status, 200);
    // ...and with client_id + verifier alone (no secret) it works: PKCE replaces the secret.
    let r = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("code_verifier", VERIFIER),
            ("redirect_uri", CONF_REDIRECT),
        ],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn a_second_exchange_fails_and_revokes_what_the_first_issued() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let first = json(&sim.exchange_pkce(&code, VERIFIER));
    let access = first["access_token"].as_str().unwrap().to_owned();
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let minted = json(&sim.refresh(&refresh, PKCE_APP, None));
    let minted = minted["access_token"].as_str().unwrap().to_owned();
    assert!(matches!(sim.api(GET_ACCOUNT, &access), Answer::Serve(_)));

    let second = exchange_pkce(&mut sim, &code, VERIFIER);
    assert_oauth_error(&second, 400, "invalid_grant", Refusal::CodeReused);
    assert!(sim
        .audit
        .iter()
        .any(|e| matches!(e, AuditEvent::CodeReused { .. })));
    for token in [&access, &minted] {
        let r = sim.api(GET_ACCOUNT, token);
        assert_eq!(r.refusal(), Some(&Refusal::AccessTokenRevoked));
        let r = http(r);
        assert_eq!(r.status, 401);
        assert_eq!(api_tag(&r), "invalid_access_token");
    }
    assert_oauth_error(
        &sim.refresh_answer(&refresh, PKCE_APP, None),
        400,
        "invalid_grant",
        Refusal::RefreshTokenRevoked,
    );
    // A third presentation refuses again; there is nothing left to revoke.
    let third = exchange_pkce(&mut sim, &code, VERIFIER);
    assert_oauth_error(&third, 400, "invalid_grant", Refusal::CodeReused);
    let reused = |e: &AuditEvent| matches!(e, AuditEvent::CodeReused { .. });
    assert_eq!(sim.audit.iter().filter(|e| reused(e)).count(), 1);
}

#[test]
fn a_reuse_attempt_without_the_verifier_revokes_nothing() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let first = json(&sim.exchange_pkce(&code, VERIFIER));
    let access = first["access_token"].as_str().unwrap().to_owned();
    // Someone who saw the code but not the verifier, or another app, cannot end the user's grant.
    assert_oauth_error(
        &exchange_pkce(&mut sim, &code, &"B".repeat(43)),
        400,
        "invalid_grant",
        Refusal::VerifierMismatch,
    );
    let r = sim.token_form_answer(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("redirect_uri", PKCE_REDIRECT),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_oauth_error(&r, 400, "invalid_grant", Refusal::CodeOfAnotherApp);
    assert!(matches!(sim.api(GET_ACCOUNT, &access), Answer::Serve(_)));
    assert!(!sim
        .audit
        .iter()
        .any(|e| matches!(e, AuditEvent::CodeReused { .. })));
}

#[test]
fn refresh_returns_a_new_short_lived_token_and_no_refresh_token() {
    let mut sim = sim();
    let code = conf_code(&mut sim, "offline");
    let first = json(&sim.exchange_confidential(&code));
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let response = sim.refresh(&refresh, CONF_APP, Some(CONF_SECRET));
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.header("Cache-Control"), Some("no-store"));
    let body = json(&response);
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["access_token", "expires_in", "token_type"]);
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["expires_in"], 14400);
    assert_ne!(body["access_token"], first["access_token"]);

    // The refreshed token expires exactly 14 400 s later.
    let token = body["access_token"].as_str().unwrap().to_owned();
    sim.advance(14_399);
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
    sim.advance(1);
    let expired = sim.api(GET_ACCOUNT, &token);
    assert_eq!(expired.refusal(), Some(&Refusal::AccessTokenExpired));
    assert_eq!(api_tag(&http(expired)), "expired_access_token");
}

#[test]
fn refresh_tokens_are_reusable_and_never_expire_by_time() {
    let mut sim = sim();
    let tokens = sim.pkce_offline_tokens(&alice());
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let r = sim.refresh(&refresh, PKCE_APP, None);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(seen.insert(json(&r)["access_token"].as_str().unwrap().to_owned()));
    }
    sim.advance(10 * 365 * 24 * 3600);
    let later = sim.refresh(&refresh, PKCE_APP, None);
    assert_eq!(later.status, 200, "{}", later.body);
    let token = json(&later)["access_token"].as_str().unwrap().to_owned();
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
}

#[test]
fn refresh_is_bound_to_the_app_and_its_authentication() {
    let mut sim = sim();
    let refresh = conf_refresh_token(&mut sim);
    // Another app's valid key and secret.
    assert_oauth_error(
        &sim.refresh_answer(&refresh, TEAM_APP, Some(TEAM_SECRET)),
        400,
        "invalid_grant",
        Refusal::RefreshTokenOfAnotherApp,
    );
    // The right app with a wrong secret.
    assert_oauth_error(
        &sim.refresh_answer(&refresh, CONF_APP, Some("wrong")),
        400,
        "invalid_client",
        Refusal::ClientAuthenticationFailed,
    );
    // A token issued without PKCE cannot refresh with client_id alone.
    assert_oauth_error(
        &sim.refresh_answer(&refresh, CONF_APP, None),
        400,
        "invalid_client",
        Refusal::SecretRequired,
    );
    // Over Basic it works.
    let r = sim.token(
        &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A PKCE-issued refresh token presented by another (public-style) client_id.
    let pkce_refresh = sim.pkce_offline_tokens(&alice())["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_oauth_error(
        &sim.refresh_answer(&pkce_refresh, CONF_APP, None),
        400,
        "invalid_grant",
        Refusal::RefreshTokenOfAnotherApp,
    );
    assert_eq!(sim.refresh(&pkce_refresh, PKCE_APP, None).status, 200);
}

#[test]
fn refresh_may_narrow_but_not_widen_scopes() {
    let mut sim = sim();
    let refresh = conf_refresh_token(&mut sim);
    let narrow = |scope: &'static str| {
        vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("scope", scope),
        ]
    };
    let r = sim.token(&narrow("files.content.read"), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let token = json(&r)["access_token"].as_str().unwrap().to_owned();
    let refused = sim.api(GET_ACCOUNT, &token);
    assert_eq!(
        refused.refusal(),
        Some(&Refusal::MissingScope(
            Scope::new("account_info.read").unwrap()
        ))
    );
    assert_eq!(http(refused).status, 403);
    assert_oauth_error(
        &sim.token_form_answer(&narrow("files.metadata.read"), None),
        400,
        "invalid_scope",
        Refusal::ScopeWidened,
    );
}

/// What the official Dropbox SDKs send: every parameter in the URL query, an empty body, and a
/// `Content-Type` that does not matter (the JavaScript SDK's refresh says `application/json`).
fn query_request(pairs: &[(&str, &str)], content_type: &str) -> HttpRequest {
    let mut request = HttpRequest::new("POST", "/oauth2/token", &form_body(pairs));
    request.headers = vec![("Content-Type".into(), content_type.into())];
    request
}

#[test]
fn parameters_in_the_query_are_read_when_the_body_is_empty_and_the_policy_allows() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("q"), &alice());
    let exchange = pkce_exchange(&code, VERIFIER);
    let tokens = json(&sim.token_request(query_request(
        &exchange,
        "application/x-www-form-urlencoded",
    )));
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let refreshed = sim.token_request(query_request(
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", PKCE_APP),
        ],
        "application/json",
    ));
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    // The confidential app's secret in the query, as the SDK sends it.
    let code = conf_code(&mut sim, "online");
    let r = sim.token_request(query_request(
        &[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("redirect_uri", CONF_REDIRECT),
        ],
        "application/x-www-form-urlencoded",
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    // The rules do not loosen: a used code is still invalid_grant.
    let r = sim.token_answer(query_request(&exchange, ""));
    assert_oauth_error(&r, 400, "invalid_grant", Refusal::CodeReused);
}

#[test]
fn parameters_split_between_query_and_body_or_refused_by_policy_are_invalid_request() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("q"), &alice());
    let mut split = form_request(&[("grant_type", "authorization_code"), ("code", &code)]);
    split.query = form_body(&[("client_id", PKCE_APP), ("code_verifier", VERIFIER)]);
    assert_oauth_error(
        &sim.token_answer(split),
        400,
        "invalid_request",
        Refusal::ParametersSplit,
    );

    let mut document = fixture_document();
    document.policy.token_parameters_in_query = false;
    let mut strict = Sim::new(Config::new(document).unwrap());
    let code = strict.code_for(&pkce_offline_query("q"), &alice());
    let exchange = query_request(
        &pkce_exchange(&code, VERIFIER),
        "application/x-www-form-urlencoded",
    );
    assert_oauth_error(
        &strict.token_answer(exchange),
        400,
        "invalid_request",
        Refusal::ParametersInQuery,
    );
    // Nothing was spent: the same code still works through the body.
    assert_eq!(strict.exchange_pkce(&code, VERIFIER).status, 200);
}

/// SPEC.md: the app secret is "not used in the PKCE variant", and PKCE "replaces client_secret"
/// — so a confidential app that authorized with PKCE refreshes with its app key alone, as the
/// reference service and its SDKs do; without PKCE at authorization, its secret is required.
/// (A deliberate reading, recorded in SECURITY.md: RFC 6749 §6 would demand the secret.)
#[test]
fn a_confidential_apps_pkce_grant_refreshes_without_its_secret_and_no_other_does() {
    let mut sim = sim();
    let pkce = conf_pkce_offline_query();
    let code = sim.code_for(&pkce, &alice());
    let tokens = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("redirect_uri", CONF_REDIRECT),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let refresh = json(&tokens)["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(sim.refresh(&refresh, CONF_APP, None).status, 200);

    let code = sim.code_for(&conf_query("offline", "s"), &alice());
    let tokens = sim.exchange_confidential(&code);
    let refresh = json(&tokens)["refresh_token"].as_str().unwrap().to_owned();
    assert_oauth_error(
        &sim.refresh_answer(&refresh, CONF_APP, None),
        400,
        "invalid_client",
        Refusal::SecretRequired,
    );
    assert_eq!(
        sim.refresh(&refresh, CONF_APP, Some(CONF_SECRET)).status,
        200
    );
}

/// SECURITY.md Finding 10: code-reuse detection lasts as long as the code's record. Once a host
/// purges it (at the earliest at the code's expiry), a replay is an unknown code: refused, but
/// it revokes nothing.
#[test]
fn a_replay_after_the_code_record_is_purged_is_refused_and_revokes_nothing() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let first = json(&sim.exchange_pkce(&code, VERIFIER));
    let access = first["access_token"].as_str().unwrap().to_owned();
    // The host purges the redeemed code at its purge time.
    let key = RecordKey::of_code(&fixture_key(), &code).expect("a minted code");
    assert!(sim.store.remove(&key).is_some());
    sim.now = UnixTime(T0.0 + 601);
    let replay = exchange_pkce(&mut sim, &code, VERIFIER);
    assert_oauth_error(&replay, 400, "invalid_grant", Refusal::UnknownCode);
    assert!(
        matches!(sim.api(GET_ACCOUNT, &access), Answer::Serve(_)),
        "the first exchange's tokens stay live"
    );
}
