//! `GET /oauth2/authorize` and the consent decision (SPEC.md "Begin authorization": every
//! parameter, the redirect or code display, re-authorization; "Authentication" 2 and 4; PKCE
//! details) and RFC 6749 §4.1.1–4.1.2.1, §4.2, RFC 7636 §4.3, RFC 9700 §2.1, §4.1.

use edgegrant::*;
use edgegrant_tests::*;

fn sim() -> Sim {
    Sim::new(fixture_config())
}

/// The value of the `data-<name>` attribute of a page.
fn page_data(body: &str, name: &str) -> Option<String> {
    let start = body.find(&format!(" data-{name}=\""))? + name.len() + 8;
    let end = body[start..].find('"')?;
    Some(body[start..start + end].to_owned())
}

/// The error page a refusal is shown on (never a redirect): 400, HTML, the error code in its
/// `data-error` attribute. Returns the code; the reason is `answer.refusal()`.
fn page_error(answer: &Answer) -> String {
    assert!(
        matches!(answer.outcome(), Outcome::Refused(_)),
        "expected an error page, got {answer:?}"
    );
    let response = answer.response();
    assert_eq!(response.status, 400, "{answer:?}");
    assert_eq!(response.header("Location"), None);
    assert_eq!(
        response.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(response.header("X-Frame-Options"), Some("DENY"));
    assert_eq!(
        page_data(&response.body, "page").as_deref(),
        Some("error"),
        "{}",
        response.body
    );
    page_data(&response.body, "error").expect("data-error")
}

/// [`page_error`], and the reason, which must be `refusal`.
fn assert_page(answer: &Answer, error: &str, refusal: Refusal) {
    assert_eq!(answer.refusal(), Some(&refusal), "{answer:?}");
    assert_eq!(page_error(answer), error, "{answer:?}");
}

/// The location of a successful redirect (a code or, legacy implicit, a token).
fn redirect(answer: &Answer) -> String {
    let Outcome::Redirect(location) = answer.outcome() else {
        panic!("expected a redirect, got {answer:?}")
    };
    assert_eq!(answer.response().status, 302);
    assert_eq!(
        answer.response().header("Location"),
        Some(location.as_str())
    );
    assert_eq!(answer.response().header("Cache-Control"), Some("no-store"));
    location.clone()
}

/// The location of a refusal sent back to the client by redirect, and the reason.
fn refused_location(answer: &Answer) -> (String, Refusal) {
    let Some(refusal) = answer.refusal() else {
        panic!("expected a refusal, got {answer:?}")
    };
    let response = answer.response();
    assert_eq!(response.status, 302, "{answer:?}");
    let location = response.header("Location").expect("a Location").to_owned();
    (location, refusal.clone())
}

/// The error a redirect carries back to the client, with the state it returned, and the reason.
fn redirected_error(answer: &Answer) -> (String, Option<String>, Refusal) {
    let (location, refusal) = refused_location(answer);
    assert!(location.starts_with(CONF_REDIRECT), "{location}");
    assert_eq!(redirect_param(&location, "code"), None, "{location}");
    (
        redirect_param(&location, "error").expect("error param"),
        redirect_param(&location, "state"),
        refusal,
    )
}

fn conf(pairs: &[(&str, &str)]) -> String {
    let mut all = vec![("client_id", CONF_APP), ("redirect_uri", CONF_REDIRECT)];
    all.extend_from_slice(pairs);
    query(&all)
}

#[test]
fn unknown_client_or_unregistered_redirect_uri_shows_a_page_never_a_redirect() {
    let mut sim = sim();
    let unregistered = Refusal::RedirectUriNotRegistered;
    let cases = [
        (
            query(&[("response_type", "code"), ("redirect_uri", CONF_REDIRECT)]),
            Refusal::ClientIdMissing,
        ),
        (
            query(&[
                ("client_id", "nobody"),
                ("response_type", "code"),
                ("redirect_uri", CONF_REDIRECT),
            ]),
            Refusal::UnknownClient,
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("client_id", CONF_APP),
                ("response_type", "code"),
            ]),
            Refusal::Repeated("client_id"),
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("response_type", "code"),
                ("redirect_uri", "https://evil.example/cb"),
            ]),
            unregistered.clone(),
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("response_type", "code"),
                ("redirect_uri", "https://conf.example/cb/"),
            ]),
            unregistered.clone(),
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("response_type", "code"),
                ("redirect_uri", "HTTPS://conf.example/cb"),
            ]),
            unregistered.clone(),
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("response_type", "code"),
                ("redirect_uri", "https://conf.example/cb?x=1"),
            ]),
            unregistered,
        ),
        (
            query(&[
                ("client_id", CONF_APP),
                ("response_type", "code"),
                ("redirect_uri", CONF_REDIRECT),
                ("redirect_uri", CONF_REDIRECT),
            ]),
            Refusal::Repeated("redirect_uri"),
        ),
    ];
    for (q, refusal) in &cases {
        for answer in [
            sim.authorize(q, Some(&alice())),
            sim.consent(q, &alice(), Decision::Allow),
            sim.consent(q, &alice(), Decision::Deny),
        ] {
            assert_page(&answer, "invalid_request", refusal.clone());
        }
    }
    assert!(
        sim.store.is_empty(),
        "nothing written for a refused request"
    );
    // The neighbour: the registered URI, byte for byte, is accepted.
    let ok = sim.authorize(&conf(&[("response_type", "code")]), Some(&alice()));
    assert!(matches!(ok.outcome(), Outcome::Consent(_)), "{ok:?}");
}

#[test]
fn a_registered_redirect_uri_keeps_its_own_query() {
    let mut sim = sim();
    let other = "https://conf.example/other?tenant=1";
    let q = query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", other),
        ("state", "s"),
    ]);
    let location = redirect(&sim.consent(&q, &alice(), Decision::Allow));
    assert!(
        location.starts_with("https://conf.example/other?tenant=1&code="),
        "{location}"
    );
    assert_eq!(redirect_param(&location, "tenant").as_deref(), Some("1"));
    assert_eq!(redirect_param(&location, "state").as_deref(), Some("s"));
}

/// Extra parameters, the error they are answered with, and why.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static str,
    Refusal,
);

#[test]
fn other_request_errors_redirect_with_error_and_state() {
    let mut sim = sim();
    let cases: [Case; 8] = [
        (&[], "invalid_request", Refusal::ResponseTypeMissing),
        (
            &[("response_type", "id_token")],
            "unsupported_response_type",
            Refusal::UnsupportedResponseType,
        ),
        (
            &[("response_type", "code"), ("response_type", "code")],
            "invalid_request",
            Refusal::Repeated("response_type"),
        ),
        (
            &[("response_type", "code"), ("token_access_type", "forever")],
            "invalid_request",
            Refusal::InvalidTokenAccessType,
        ),
        (
            &[("response_type", "code"), ("scope", "files")],
            "invalid_scope",
            Refusal::MalformedScope,
        ),
        (
            &[("response_type", "code"), ("scope", "files.metadata.read")],
            "invalid_scope",
            Refusal::ScopeNotEnabled,
        ),
        (
            &[
                ("response_type", "code"),
                ("scope", "a.b"),
                ("scope", "a.b"),
            ],
            "invalid_request",
            Refusal::Repeated("scope"),
        ),
        (
            &[("response_type", "code"), ("code_challenge_method", "S256")],
            "invalid_request",
            Refusal::ChallengeMethodWithoutChallenge,
        ),
    ];
    for (pairs, error, refusal) in cases {
        let mut pairs = pairs.to_vec();
        pairs.push(("state", "keep me"));
        let q = conf(&pairs);
        let (got, state, reason) = redirected_error(&sim.authorize(&q, Some(&alice())));
        assert_eq!(
            (got.as_str(), state.as_deref(), &reason),
            (error, Some("keep me"), &refusal),
            "{q}"
        );
        // The consent form validates the request again: the same answer.
        let (got, _, reason) = redirected_error(&sim.consent(&q, &alice(), Decision::Allow));
        assert_eq!((got.as_str(), &reason), (error, &refusal), "{q}");
        // Without a redirect_uri there is nowhere to send it: the page shows the error.
        let no_redirect: Vec<_> = [("client_id", CONF_APP)]
            .into_iter()
            .chain(pairs.iter().copied())
            .collect();
        assert_page(
            &sim.authorize(&query(&no_redirect), Some(&alice())),
            error,
            refusal,
        );
    }
    assert!(
        sim.store.is_empty(),
        "nothing written for a refused request"
    );
}

#[test]
fn state_comes_back_unchanged() {
    let mut sim = sim();
    for state in [
        "plain",
        "with space & amp=eq",
        "ünïcødé ✓",
        "%41+%2B",
        &"x".repeat(500),
    ] {
        let q = conf(&[("response_type", "code"), ("state", state)]);
        let location = redirect(&sim.consent(&q, &alice(), Decision::Allow));
        assert_eq!(redirect_param(&location, "state").as_deref(), Some(state));
    }
    // No state sent: none returned.
    let location = redirect(&sim.consent(
        &conf(&[("response_type", "code")]),
        &alice(),
        Decision::Allow,
    ));
    assert_eq!(redirect_param(&location, "state"), None);
}

#[test]
fn scope_omitted_means_the_apps_scopes_and_a_subset_means_exactly_it() {
    let mut sim = sim();
    let all = "account_info.read files.content.read files.content.write";
    let Outcome::Consent(prompt) = sim
        .authorize(&conf(&[("response_type", "code")]), Some(&alice()))
        .outcome()
        .clone()
    else {
        panic!()
    };
    assert_eq!(prompt.scopes.to_string(), all);
    assert_eq!(prompt.app_name, "The conf-app");
    let code = sim.code_for(&conf(&[("response_type", "code")]), &alice());
    assert_eq!(json(&sim.exchange_confidential(&code))["scope"], all);

    let q = conf(&[
        ("response_type", "code"),
        ("scope", "files.content.read  account_info.read"),
    ]);
    // Bob has consented to nothing yet: the page asks for exactly the subset.
    let Outcome::Consent(prompt) = sim.authorize(&q, Some(&bob())).outcome().clone() else {
        panic!()
    };
    assert_eq!(
        prompt.scopes.to_string(),
        "account_info.read files.content.read"
    );
    let code = sim.code_for(&q, &alice());
    let body = json(&sim.exchange_confidential(&code));
    assert_eq!(body["scope"], "account_info.read files.content.read");
    let token = body["access_token"].as_str().unwrap();
    let refused = sim.api(UPLOAD, token);
    assert_eq!(
        refused.refusal(),
        Some(&Refusal::MissingScope(
            Scope::new("files.content.write").unwrap()
        ))
    );
    assert_eq!(
        http(refused).status,
        403,
        "files.content.write was not granted"
    );
    assert!(matches!(sim.api(GET_ACCOUNT, token), Answer::Serve(_)));
}

#[test]
fn token_access_type_decides_the_refresh_token() {
    for (access, refresh, expected) in [
        (Some("offline"), true, TokenAccessType::Offline),
        (Some("online"), false, TokenAccessType::Online),
        (None, false, TokenAccessType::Online), // a scoped app's default: short-lived
    ] {
        // A first consent each time: a granted request would complete without a page.
        let mut sim = sim();
        let mut pairs = vec![("response_type", "code")];
        pairs.extend(access.map(|a| ("token_access_type", a)));
        let q = conf(&pairs);
        let Outcome::Consent(prompt) = sim.authorize(&q, Some(&alice())).outcome().clone() else {
            panic!()
        };
        assert_eq!(prompt.access_type, expected);
        let page = sim.authorize(&q, Some(&alice()));
        let body = &page.response().body;
        assert_eq!(page_data(body, "page").as_deref(), Some("consent"));
        let access_type = format!("{expected:?}").to_lowercase();
        assert_eq!(page_data(body, "access-type"), Some(access_type));
        let code = sim.code_for(&q, &alice());
        let body = json(&sim.exchange_confidential(&code));
        assert_eq!(body.get("refresh_token").is_some(), refresh, "{access:?}");
        assert_eq!(body["expires_in"], 14400);
    }
}

fn pkce_query(challenge: &str, method: Option<&str>) -> String {
    let mut pairs = vec![
        ("client_id", PKCE_APP),
        ("response_type", "code"),
        ("redirect_uri", PKCE_REDIRECT),
        ("state", "p"),
        ("code_challenge", challenge),
    ];
    pairs.extend(method.map(|m| ("code_challenge_method", m)));
    query(&pairs)
}

#[test]
fn pkce_plain_is_the_default_and_s256_works() {
    let mut sim = sim();
    let verifier = "plain-verifier-0123456789-0123456789-abcdefgh~._";
    for method in [None, Some(""), Some("plain")] {
        let code = sim.code_for(&pkce_query(verifier, method), &alice());
        assert_eq!(sim.exchange_pkce(&code, verifier).status, 200, "{method:?}");
        // With plain, the S256 transform of the verifier is not the challenge.
        let code = sim.code_for(&pkce_query(&s256(verifier), method), &alice());
        let refused = sim.token_answer(form_request(&pkce_exchange(&code, verifier)));
        assert_eq!(refused.refusal(), Some(&Refusal::VerifierMismatch));
        assert_eq!(oauth_error(refused.response()), "invalid_grant");
    }
    let code = sim.code_for(&pkce_query(CHALLENGE, Some("S256")), &alice());
    assert_eq!(sim.exchange_pkce(&code, VERIFIER).status, 200);
}

#[test]
fn malformed_pkce_requests_are_refused() {
    let mut sim = sim();
    let pkce_error = |sim: &mut Sim, q: &str| {
        let (location, refusal) = refused_location(&sim.authorize(q, Some(&alice())));
        assert!(location.starts_with(PKCE_REDIRECT), "{location}");
        (redirect_param(&location, "error").unwrap(), refusal)
    };
    let invalid = |refusal| ("invalid_request".to_owned(), refusal);
    let at_43 = "a".repeat(43);
    let at_128 = "a".repeat(128);
    for bad in [
        "a".repeat(42),
        "a".repeat(129),
        format!("{}!", "a".repeat(43)),
        format!("{} ", "a".repeat(43)),
    ] {
        assert_eq!(
            pkce_error(&mut sim, &pkce_query(&bad, Some("plain"))),
            invalid(Refusal::MalformedChallenge),
            "{bad:?}"
        );
    }
    assert_eq!(
        pkce_error(&mut sim, &pkce_query(CHALLENGE, Some("S512"))),
        invalid(Refusal::UnsupportedChallengeMethod)
    );
    assert_eq!(
        pkce_error(&mut sim, &pkce_query(CHALLENGE, Some("s256"))),
        invalid(Refusal::UnsupportedChallengeMethod)
    );
    // A public app without any challenge: it would have no way to authenticate.
    let no_pkce = query(&[
        ("client_id", PKCE_APP),
        ("response_type", "code"),
        ("redirect_uri", PKCE_REDIRECT),
    ]);
    assert_eq!(
        pkce_error(&mut sim, &no_pkce),
        invalid(Refusal::PkceRequired)
    );
    assert!(
        sim.store.is_empty(),
        "nothing written for a refused request"
    );
    // The neighbours: 43 and 128 characters are accepted.
    for ok in [at_43, at_128] {
        assert!(matches!(
            sim.authorize(&pkce_query(&ok, None), Some(&alice()))
                .outcome(),
            Outcome::Consent(_)
        ));
    }
}

#[test]
fn a_policy_can_require_s256() {
    let mut doc = fixture_document();
    doc.policy.require_s256 = true;
    let mut sim = Sim::new(Config::new(doc).unwrap());
    for method in [None, Some("plain")] {
        let (location, refusal) =
            refused_location(&sim.authorize(&pkce_query(CHALLENGE, method), Some(&alice())));
        assert_eq!(
            redirect_param(&location, "error").as_deref(),
            Some("invalid_request")
        );
        assert_eq!(refusal, Refusal::S256Required, "{method:?}");
    }
    let code = sim.code_for(&pkce_query(CHALLENGE, Some("S256")), &alice());
    assert_eq!(sim.exchange_pkce(&code, VERIFIER).status, 200);
}

#[test]
fn deny_redirects_access_denied() {
    let mut sim = sim();
    let q = conf(&[("response_type", "code"), ("state", "d")]);
    let (error, state, refusal) = redirected_error(&sim.consent(&q, &alice(), Decision::Deny));
    assert_eq!(
        (error.as_str(), state.as_deref(), refusal),
        ("access_denied", Some("d"), Refusal::AccessDenied)
    );
    let no_redirect = query(&[("client_id", CONF_APP), ("response_type", "code")]);
    assert_page(
        &sim.consent(&no_redirect, &alice(), Decision::Deny),
        "access_denied",
        Refusal::AccessDenied,
    );
    assert!(sim.store.is_empty(), "a denial writes nothing");
}

#[test]
fn allow_without_redirect_uri_displays_the_code_which_must_be_exchanged_without_one() {
    let mut sim = sim();
    let q = query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("state", "ignored"),
    ]);
    let shown = sim.consent(&q, &alice(), Decision::Allow);
    let Outcome::DisplayCode { app, code } = shown.outcome() else {
        panic!("expected the code display")
    };
    assert_eq!(app.as_str(), CONF_APP);
    let code = code.expose().to_owned();
    // The page shows it, and never redirects.
    let page = shown.response();
    assert_eq!(page.status, 200);
    assert_eq!(page.header("Location"), None);
    assert_eq!(page_data(&page.body, "page").as_deref(), Some("code"));
    assert_eq!(page_data(&page.body, "code"), Some(code.clone()));
    let with_redirect = sim.token_answer(form_request(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", CONF_APP),
        ("client_secret", CONF_SECRET),
        ("redirect_uri", CONF_REDIRECT),
    ]));
    assert_eq!(with_redirect.refusal(), Some(&Refusal::RedirectUriMismatch));
    assert_eq!(oauth_error(with_redirect.response()), "invalid_grant");
    let without = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
        ],
        None,
    );
    assert_eq!(without.status, 200, "{}", without.body);
}

#[test]
fn the_code_is_bound_to_the_consenting_user() {
    let mut sim = sim();
    let code = sim.code_for(&conf_query("online", "s"), &bob());
    let body = json(&sim.exchange_confidential(&code));
    assert_eq!(body["account_id"], bob().account_id.as_str());
    assert_eq!(body["uid"], bob().uid.as_str());
    let Answer::Serve(Authorized { principal, .. }) =
        sim.api(GET_ACCOUNT, body["access_token"].as_str().unwrap())
    else {
        panic!()
    };
    assert_eq!(principal.subject, Subject::Account(bob().account_id));
}

/// Whether `GET /oauth2/authorize` completed at once (re-authorization: a redirect with a code
/// that works, committed) rather than showing the consent page (which writes nothing).
fn reauthorized(sim: &mut Sim, q: &str, user: &User) -> bool {
    let before = sim.store.clone();
    let answer = sim.authorize(q, Some(user));
    match answer.outcome() {
        Outcome::Consent(prompt) => {
            assert_eq!(prompt.app.as_str(), CONF_APP);
            assert_eq!(answer.response().status, 200);
            assert_eq!(sim.store, before, "the consent page writes nothing");
            false
        }
        Outcome::Redirect(location) => {
            let location = location.clone();
            assert!(location.starts_with(CONF_REDIRECT), "{location}");
            assert_eq!(redirect_param(&location, "state").as_deref(), Some("r"));
            let code = redirect_param(&location, "code").expect("a code");
            assert!(matches!(
                sim.audit.last(),
                Some(AuditEvent::CodeIssued { account_id, .. }) if *account_id == user.account_id
            ));
            let tokens = sim.exchange_confidential(&code);
            assert_eq!(tokens.status, 200, "{}", tokens.body);
            true
        }
        _ => panic!("{answer:?}"),
    }
}

#[test]
fn re_authorization_completes_at_once_when_the_scopes_were_already_granted() {
    let mut sim = sim();
    let narrow = conf(&[
        ("response_type", "code"),
        ("scope", "account_info.read"),
        ("state", "r"),
    ]);
    let wide = conf(&[("response_type", "code"), ("state", "r")]);
    let offline = conf(&[
        ("response_type", "code"),
        ("scope", "account_info.read"),
        ("token_access_type", "offline"),
        ("state", "r"),
    ]);
    assert!(!reauthorized(&mut sim, &narrow, &alice()));
    sim.code_for(&narrow, &alice());
    assert!(reauthorized(&mut sim, &narrow, &alice()));
    assert!(
        !reauthorized(&mut sim, &wide, &alice()),
        "a superset needs consent"
    );
    assert!(
        !reauthorized(&mut sim, &offline, &alice()),
        "offline access after online consent needs consent"
    );
    assert!(!reauthorized(&mut sim, &narrow, &bob()), "another user");
    sim.code_for(&wide, &alice());
    assert!(reauthorized(&mut sim, &narrow, &alice()));
    assert!(reauthorized(&mut sim, &wide, &alice()));
    sim.code_for(&offline, &alice());
    assert!(reauthorized(&mut sim, &offline, &alice()));
    sim.unlink(CONF_APP, &alice(), Unlinker::User);
    assert!(
        !reauthorized(&mut sim, &narrow, &alice()),
        "an unlink forgets the consent"
    );
    // Without a signed-in user the core cannot know: the sign-in page, which returns to the
    // same request, and no write.
    sim.code_for(&narrow, &alice());
    let before = sim.store.clone();
    let answer = sim.authorize(&narrow, None);
    assert_eq!(
        answer.outcome(),
        &Outcome::SignIn {
            return_to: format!("/oauth2/authorize?{narrow}")
        }
    );
    assert_eq!(answer.response().status, 200);
    assert_eq!(
        page_data(&answer.response().body, "page").as_deref(),
        Some("sign_in")
    );
    assert_eq!(sim.store, before);
}

fn legacy(pairs: &[(&str, &str)]) -> String {
    let mut all = vec![
        ("client_id", LEGACY_APP),
        ("redirect_uri", LEGACY_REDIRECT),
        ("state", "i"),
    ];
    all.extend_from_slice(pairs);
    query(&all)
}

#[test]
fn the_legacy_implicit_flow_puts_the_token_in_the_fragment() {
    let mut sim = sim();
    let location = redirect(&sim.consent(
        &legacy(&[("response_type", "token"), ("token_access_type", "online")]),
        &alice(),
        Decision::Allow,
    ));
    assert!(
        location.starts_with(&format!("{LEGACY_REDIRECT}#access_token=sl.")),
        "{location}"
    );
    assert_eq!(
        redirect_param(&location, "access_token"),
        None,
        "never in the query"
    );
    assert_eq!(
        fragment_param(&location, "token_type").as_deref(),
        Some("bearer")
    );
    assert_eq!(
        fragment_param(&location, "expires_in").as_deref(),
        Some("14400")
    );
    assert_eq!(fragment_param(&location, "state").as_deref(), Some("i"));
    assert_eq!(
        fragment_param(&location, "account_id").as_deref(),
        Some(alice().account_id.as_str())
    );
    assert_eq!(fragment_param(&location, "refresh_token"), None);
    let token = fragment_param(&location, "access_token").unwrap();
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
    assert_eq!(sim.revoke(&token).status, 200);
    let refused = sim.api(GET_ACCOUNT, &token);
    assert_eq!(refused.refusal(), Some(&Refusal::AccessTokenRevoked));
    assert_eq!(http(refused).status, 401);
}

#[test]
fn the_implicit_flow_refuses_offline_forbidden_apps_and_missing_redirects() {
    let mut sim = sim();
    let (location, refusal) = refused_location(&sim.authorize(
        &legacy(&[("response_type", "token"), ("token_access_type", "offline")]),
        Some(&alice()),
    ));
    assert_eq!(refusal, Refusal::OfflineRequiresCode);
    assert_eq!(
        fragment_param(&location, "error").as_deref(),
        Some("invalid_request")
    );
    assert_eq!(fragment_param(&location, "state").as_deref(), Some("i"));
    // An app that does not allow implicit.
    let (location, refusal) =
        refused_location(&sim.authorize(&conf(&[("response_type", "token")]), Some(&alice())));
    assert_eq!(refusal, Refusal::ImplicitNotAllowed);
    assert!(
        location.starts_with(&format!("{CONF_REDIRECT}#")),
        "{location}"
    );
    assert_eq!(
        fragment_param(&location, "error").as_deref(),
        Some("unauthorized_client")
    );
    // Nowhere to put the token.
    let q = query(&[("client_id", LEGACY_APP), ("response_type", "token")]);
    assert_page(
        &sim.authorize(&q, Some(&alice())),
        "invalid_request",
        Refusal::ImplicitWithoutRedirectUri,
    );
    // A challenge makes no sense with a token response.
    let q = legacy(&[("response_type", "token"), ("code_challenge", CHALLENGE)]);
    let (location, refusal) = refused_location(&sim.authorize(&q, Some(&alice())));
    assert_eq!(refusal, Refusal::ImplicitWithChallenge);
    assert_eq!(
        fragment_param(&location, "error").as_deref(),
        Some("invalid_request")
    );
}

#[test]
fn an_oversized_query_shows_a_page() {
    let mut sim = sim();
    let q = conf(&[("response_type", "code"), ("state", &"s".repeat(17_000))]);
    assert_page(
        &sim.authorize(&q, Some(&alice())),
        "invalid_request",
        Refusal::TooLarge,
    );
    assert_page(
        &sim.consent(&q, &alice(), Decision::Allow),
        "invalid_request",
        Refusal::TooLarge,
    );
    assert!(sim.store.is_empty());
}

#[test]
fn redirect_uris_of_schemes_that_run_script_are_refused_at_registration() {
    let document = |uri: &str| {
        serde_json::json!({ "apps": [{ "key": "app", "name": "App", "redirect_uris": [uri],
            "permissions": { "kind": "scoped", "scopes": ["account_info.read"] } }],
            "server_key": FIXTURE_SERVER_KEY })
    };
    for refused in [
        "javascript:alert(document.domain)",
        "JavaScript://%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
    ] {
        assert!(
            serde_json::from_value::<Config>(document(refused)).is_err(),
            "{refused} was accepted"
        );
    }
    // Web, loopback and native-app schemes stay registrable.
    for accepted in [
        "https://app.example/cb",
        "http://127.0.0.1:8765/cb",
        "com.example.app:/oauth2redirect",
    ] {
        assert!(
            serde_json::from_value::<Config>(document(accepted)).is_ok(),
            "{accepted} was refused"
        );
    }
}

/// SECURITY.md Finding 6: once `client_id` and `redirect_uri` check out, an error in the rest of
/// the request goes back to the client at once, before anyone signs in (RFC 6749 §4.1.2.1 allows
/// it; RFC 9700 §4.11.2 would authenticate the user first). A valid request asks for sign-in.
#[test]
fn errors_after_the_redirect_uri_checks_out_go_to_the_client_before_sign_in() {
    let mut sim = sim();
    let bad_scope = query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", CONF_REDIRECT),
        ("scope", "no.such.scope"),
        ("state", "s"),
    ]);
    let answer = sim.authorize(&bad_scope, None);
    let Outcome::Refused(Refusal::ScopeNotEnabled) = answer.outcome() else {
        panic!("expected a refusal, got {answer:?}")
    };
    let location = http(answer).header("Location").unwrap().to_owned();
    assert!(location.starts_with(CONF_REDIRECT), "{location}");
    assert_eq!(
        redirect_param(&location, "error").as_deref(),
        Some("invalid_scope")
    );
    assert!(matches!(
        sim.authorize(&conf_query("online", "s"), None).outcome(),
        Outcome::SignIn { .. }
    ));
}
