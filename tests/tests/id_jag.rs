//! Enterprise-managed authorization (issue 48): the JWT-bearer grant (RFC 7523 §2.1) with an
//! Identity Assertion JWT Authorization Grant (ID-JAG). An enterprise identity provider the
//! configuration trusts signs that one of its users may have a client act for them; the
//! client, authenticated, presents it once and gets that person's token, with no consent page,
//! no refresh token, and nothing a person's own tokens would not be ended by.

use edgegrant::*;
use edgegrant_tests::*;
use serde_json::{json, Value};

const ISSUER: &str = "https://auth.example";
const IDP: &str = "https://idp.example";
const ALICE_AT_IDP: &str = "alice@corp.example";

/// The standards profile trusting one provider (its key `signing_key(7)`), which knows alice.
fn sim() -> Sim {
    let keys = json!({ "keys": [ public_jwk(&signing_key(7), "idp-1") ] });
    sim_with(json!({ "identity_assertions": { "providers": [provider("jwks", keys)] } }))
}

/// The fixture in the standards profile, with the profile's settings `more`.
fn sim_with(more: Value) -> Sim {
    let mut doc = fixture_document().to_json_value();
    let mut profile = json!({ "kind": "standards", "issuer": ISSUER });
    for (name, value) in more.as_object().unwrap() {
        profile[name] = value.clone();
    }
    doc["profile"] = profile;
    let doc = ConfigDocument::from_json_value(&doc).expect("the document reads");
    Sim::new(Config::new(doc).expect("the configuration holds"))
}

/// The provider `IDP`, which knows alice, its keys given as `how` (`jwks` or `jwks_uri`).
fn provider(how: &str, keys: Value) -> Value {
    json!({
        "issuer": IDP,
        how: keys,
        "accounts": { ALICE_AT_IDP: {
            "account_id": alice().account_id.as_str(),
            "uid": alice().uid.as_str(),
        } },
    })
}

/// The claims a provider signs for alice and conf-app, issued now, living five minutes.
fn claims(sim: &Sim, jti: &str) -> Value {
    json!({
        "iss": IDP,
        "sub": ALICE_AT_IDP,
        "aud": ISSUER,
        "client_id": CONF_APP,
        "jti": jti,
        "iat": sim.now.0,
        "exp": sim.now.0 + 300,
        "scope": "account_info.read files.content.read",
    })
}

fn present(sim: &mut Sim, assertion: &str, extra: &[(&str, &str)]) -> HttpResponse {
    let mut form = vec![("grant_type", JWT_BEARER_GRANT), ("assertion", assertion)];
    form.extend_from_slice(extra);
    sim.token(&form, Some((CONF_APP, CONF_SECRET)))
}

fn error_of(response: &HttpResponse) -> String {
    assert_eq!(response.status, 400, "{}", response.body);
    json(response)["error"].as_str().unwrap().to_owned()
}

#[test]
fn an_identity_assertion_gives_the_person_a_token_once() {
    let mut sim = sim();
    let metadata = json(&http(sim.http(
        HttpRequest::new("GET", "/.well-known/oauth-authorization-server", ""),
        None,
    )));
    assert!(metadata["grant_types_supported"]
        .as_array()
        .unwrap()
        .contains(&json!(JWT_BEARER_GRANT)));
    assert_eq!(
        metadata["authorization_grant_profiles_supported"],
        json!(["urn:ietf:params:oauth:grant-profile:id-jag"])
    );

    let assertion = id_jag(&signing_key(7), &claims(&sim, "jag-1"));
    let response = present(&mut sim, &assertion, &[("scope", "account_info.read")]);
    assert_eq!(response.status, 200, "{}", response.body);
    let tokens = json(&response);
    assert_eq!(tokens["scope"], "account_info.read");
    assert_eq!(tokens["refresh_token"], Value::Null, "no refresh token");
    let token = tokens["access_token"].as_str().unwrap().to_owned();
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("the person's token does not authorize")
    };
    assert_eq!(principal.subject, Subject::Account(alice().account_id));
    assert_eq!(principal.app.as_str(), CONF_APP);

    // Once: the same assertion again, even a second later, is refused.
    sim.advance(1);
    let again = present(&mut sim, &assertion, &[]);
    assert_eq!(error_of(&again), "invalid_grant");
    assert!(json(&again)["error_description"]
        .as_str()
        .unwrap()
        .contains("used before"));
    // The person unlinks the app: the token ends with it, as their own tokens do.
    sim.unlink(CONF_APP, &alice(), Unlinker::User);
    assert!(!matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
}

#[test]
fn an_assertion_holds_only_for_this_server_this_client_and_now() {
    let mut sim = sim();
    let now = sim.now.0;
    let with = |sim: &Sim, jti: &str, changes: Value| {
        let mut claims = claims(sim, jti);
        for (name, value) in changes.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let key = signing_key(7);
    let refused = [
        (
            "another audience",
            with(&sim, "a", json!({ "aud": "https://other.example" })),
        ),
        (
            "two audiences",
            with(
                &sim,
                "b",
                json!({ "aud": [ISSUER, "https://other.example"] }),
            ),
        ),
        (
            "another client",
            with(&sim, "c", json!({ "client_id": TEAM_APP })),
        ),
        ("no client", with(&sim, "d", json!({ "client_id": null }))),
        ("expiring now", with(&sim, "e", json!({ "exp": now }))),
        (
            "living too long",
            with(&sim, "f", json!({ "exp": now + 601 })),
        ),
        (
            "issued in the future",
            with(&sim, "g", json!({ "iat": now + 61 })),
        ),
        ("no iat", with(&sim, "h", json!({ "iat": null }))),
        (
            "an untrusted issuer",
            with(&sim, "i", json!({ "iss": "https://evil.example" })),
        ),
    ];
    for (why, claims) in refused {
        let response = present(&mut sim, &id_jag(&key, &claims), &[]);
        assert_eq!(error_of(&response), "invalid_grant", "{why}");
    }
    // The boundaries that hold: one second left, ten minutes of life, a minute of skew.
    for (jti, changes) in [
        ("j", json!({ "exp": now + 1 })),
        ("k", json!({ "exp": now + 600 })),
        ("l", json!({ "iat": now + 60, "nbf": now + 60 })),
    ] {
        let assertion = id_jag(&key, &with(&sim, jti, changes));
        let response = present(&mut sim, &assertion, &[]);
        assert_eq!(response.status, 200, "{jti}: {}", response.body);
    }
    // Signed by another key, or typed as another kind of JWT: refused.
    let forged = id_jag(&signing_key(8), &claims(&sim, "m"));
    assert_eq!(error_of(&present(&mut sim, &forged, &[])), "invalid_grant");
    let untyped = signed_jwt(
        &key,
        &json!({ "alg": "ES256", "kid": "idp-1", "typ": "JWT" }),
        &claims(&sim, "n"),
    );
    assert_eq!(error_of(&present(&mut sim, &untyped, &[])), "invalid_grant");
    // A subject the provider knows but this server does not: refused, by name.
    let stranger = with(&sim, "o", json!({ "sub": "mallory@corp.example" }));
    let response = present(&mut sim, &id_jag(&key, &stranger), &[]);
    assert_eq!(error_of(&response), "invalid_grant");
    assert!(json(&response)["error_description"]
        .as_str()
        .unwrap()
        .contains("no account here"));
}

#[test]
fn the_scope_is_the_assertions_and_the_apps_at_most() {
    let mut sim = sim();
    let key = signing_key(7);
    // Asking beyond the assertion's scope: invalid_scope.
    let assertion = id_jag(&key, &claims(&sim, "p"));
    let response = present(
        &mut sim,
        &assertion,
        &[("scope", "account_info.read files.content.write")],
    );
    assert_eq!(error_of(&response), "invalid_scope");
    // An assertion granting a scope the app does not have: refused too.
    let mut wide = claims(&sim, "q");
    wide["scope"] = json!("account_info.read files.metadata.read");
    assert_eq!(
        error_of(&present(&mut sim, &id_jag(&key, &wide), &[])),
        "invalid_scope"
    );
    // None asked: the assertion's.
    let assertion = id_jag(&key, &claims(&sim, "r"));
    let response = present(&mut sim, &assertion, &[]);
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        json(&response)["scope"],
        "account_info.read files.content.read"
    );
}

#[test]
fn only_an_authenticated_client_presents_an_assertion() {
    let mut sim = sim();
    let assertion = id_jag(&signing_key(7), &claims(&sim, "s"));
    // No assertion at all.
    let response = sim.token(
        &[("grant_type", JWT_BEARER_GRANT)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(error_of(&response), "invalid_request");
    // A public client cannot authenticate: refused, and the assertion stays unused.
    let mut public = claims(&sim, "s");
    public["client_id"] = json!(PKCE_APP);
    let response = sim.token(
        &[
            ("grant_type", JWT_BEARER_GRANT),
            ("assertion", &id_jag(&signing_key(7), &public)),
            ("client_id", PKCE_APP),
        ],
        None,
    );
    assert_eq!(
        json(&response)["error"],
        "invalid_client",
        "{}",
        response.body
    );
    // conf-app with a wrong secret: invalid_client, the assertion unused.
    let response = sim.token(
        &[("grant_type", JWT_BEARER_GRANT), ("assertion", &assertion)],
        Some((CONF_APP, "wrong-secret-0123456789")),
    );
    assert_eq!(response.status, 401, "{}", response.body);
    let response = present(&mut sim, &assertion, &[]);
    assert_eq!(response.status, 200, "{}", response.body);
}

const IDP_KEYS: &str = "https://idp.example/.well-known/jwks.json";

/// A provider that publishes its keys at `IDP_KEYS` instead of the configuration holding them.
fn sim_with_keys_at_url() -> Sim {
    let providers = [provider("jwks_uri", json!(IDP_KEYS))];
    sim_with(json!({ "identity_assertions": { "providers": providers } }))
}

/// The provider publishes `keys` (JWKs), cacheable for `max_age` seconds.
fn publish_keys(sim: &mut Sim, keys: &[Value], max_age: u64) {
    sim.store.web.insert(
        IDP_KEYS.to_owned(),
        Ok(Fetched {
            status: 200,
            cache_control: Some(format!("max-age={max_age}")),
            body: json!({ "keys": keys }).to_string().into_bytes(),
        }),
    );
}

/// An assertion signed by `signing_key(seed)` under `kid`.
fn signed_by(sim: &Sim, seed: u8, kid: &str, jti: &str) -> String {
    signed_jwt(
        &signing_key(seed),
        &json!({ "alg": "ES256", "kid": kid, "typ": "oauth-id-jag+jwt" }),
        &claims(sim, jti),
    )
}

#[test]
fn a_providers_keys_are_fetched_from_its_jwks_uri_kept_and_fetched_again_when_they_must() {
    let mut sim = sim_with_keys_at_url();
    let first_key = public_jwk(&signing_key(7), "idp-1");
    publish_keys(&mut sim, std::slice::from_ref(&first_key), 3600);
    let fetched_at = sim.now;
    let ok = |response: HttpResponse| assert_eq!(response.status, 200, "{}", response.body);
    let assertion = signed_by(&sim, 7, "idp-1", "k-1");
    ok(present(&mut sim, &assertion, &[]));
    // Kept in a record of its own, purged when it is no longer fresh.
    let kept = sim
        .store
        .iter()
        .find_map(|(key, stored)| match stored.record() {
            Ok(Record::ProviderKeys(keys)) => Some((key.clone(), keys)),
            _ => None,
        })
        .expect("the provider's keys are kept");
    assert_eq!(kept.1.url, IDP_KEYS);
    assert_eq!(kept.1.fresh_until, fetched_at.plus(Seconds(3600)));
    assert!(
        kept.0.to_string().ends_with("/provider-keys:"),
        "{}",
        kept.0
    );

    // The provider's host goes away: the kept keys serve, with no fetch, until their max-age.
    sim.store.web.clear();
    sim.now = fetched_at.plus(Seconds(3599));
    let assertion = signed_by(&sim, 7, "idp-1", "k-2");
    ok(present(&mut sim, &assertion, &[]));

    // A rotation: a new key the kept set lacks is fetched for — but not within 30 s of the last
    // fetch (a made-up kid does not make every request fetch).
    sim.now = fetched_at;
    sim.store.web.clear();
    let rotated = [first_key.clone(), public_jwk(&signing_key(8), "idp-2")];
    publish_keys(&mut sim, &rotated, 3600);
    sim.now = fetched_at.plus(Seconds(29));
    let assertion = signed_by(&sim, 8, "idp-2", "k-3");
    let refused = present(&mut sim, &assertion, &[]);
    assert_eq!(error_of(&refused), "invalid_grant");
    sim.now = fetched_at.plus(Seconds(30));
    let assertion = signed_by(&sim, 8, "idp-2", "k-4");
    ok(present(&mut sim, &assertion, &[]));
    let refetched_at = sim.now;

    // Past the max-age, a provider that does not answer: refused, saying whose keys, with no
    // remote detail; within the backoff (300 s) not fetched again even once it is back.
    sim.store.web.clear();
    sim.now = refetched_at.plus(Seconds(3600));
    let assertion = signed_by(&sim, 7, "idp-1", "k-5");
    sim.audit.clear();
    let response = present(&mut sim, &assertion, &[]);
    let audit = &sim.audit;
    assert_eq!(error_of(&response), "invalid_grant");
    assert_eq!(
        json(&response)["error_description"],
        format!("the identity provider's key set {IDP_KEYS} could not be fetched")
    );
    assert!(
        audit.iter().any(|event| matches!(event,
            AuditEvent::FetchFailed { url, app, .. } if url == IDP_KEYS && app.as_str() == CONF_APP)),
        "{audit:?}"
    );
    publish_keys(&mut sim, &rotated, 3600);
    sim.now = refetched_at.plus(Seconds(3600 + 299));
    let assertion = signed_by(&sim, 7, "idp-1", "k-6");
    assert_eq!(
        error_of(&present(&mut sim, &assertion, &[])),
        "invalid_grant"
    );
    sim.now = refetched_at.plus(Seconds(3600 + 300));
    let assertion = signed_by(&sim, 7, "idp-1", "k-7");
    ok(present(&mut sim, &assertion, &[]));
}

#[test]
fn a_provider_names_its_keys_once_by_an_https_url() {
    let with = |provider: Value| {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] = json!({ "kind": "standards", "issuer": ISSUER,
            "identity_assertions": { "providers": [provider] } });
        ConfigDocument::from_json_value(&doc)
            .map_err(|e| e.to_string())
            .and_then(|doc| Config::new(doc).map_err(|e| e.to_string()))
    };
    let accounts = json!({});
    let jwks = json!({ "keys": [public_jwk(&signing_key(7), "idp-1")] });
    let both =
        with(json!({ "issuer": IDP, "jwks": jwks, "jwks_uri": IDP_KEYS, "accounts": accounts }));
    assert!(both.unwrap_err().contains("jwks or jwks_uri"));
    let neither = with(json!({ "issuer": IDP, "accounts": accounts }));
    assert!(neither.unwrap_err().contains("jwks or jwks_uri"));
    let plain =
        with(json!({ "issuer": IDP, "jwks_uri": "http://idp.example/jwks", "accounts": accounts }));
    assert!(plain.unwrap_err().contains("jwks_uri"));
    assert!(with(json!({ "issuer": IDP, "jwks_uri": IDP_KEYS, "accounts": accounts })).is_ok());
}

/// A client that proves itself by the keys at its own `jwks_uri` presents an assertion of a
/// provider whose keys are at its `jwks_uri`, neither fetched yet: the one request fetches both.
#[test]
fn one_request_fetches_both_the_clients_keys_and_the_providers() {
    let mut sim = sim_with(json!({
        "clients": { "scopes": ["account_info.read"], "registration": {}, "documents": {} },
        "identity_assertions": { "providers": [provider("jwks_uri", json!(IDP_KEYS))] },
    }));
    const CLIENT_KEYS: &str = "https://agent.example/jwks.json";
    let client_key = signing_key(9);
    let registered = http(sim.http(
        register_request(
            &json!({
                "client_name": "Agent",
                "redirect_uris": ["https://agent.example/cb"],
                "token_endpoint_auth_method": "private_key_jwt",
                "jwks_uri": CLIENT_KEYS,
                "scope": "account_info.read",
            }),
            "192.0.2.7",
        ),
        None,
    ));
    assert_eq!(registered.status, 201, "{}", registered.body);
    let client_id = json(&registered)["client_id"].as_str().unwrap().to_owned();
    sim.store.web.insert(
        CLIENT_KEYS.to_owned(),
        Ok(Fetched {
            status: 200,
            cache_control: Some("max-age=3600".into()),
            body: json!({ "keys": [public_jwk(&client_key, "k1")] })
                .to_string()
                .into_bytes(),
        }),
    );
    publish_keys(&mut sim, &[public_jwk(&signing_key(7), "idp-1")], 3600);
    let mut claims = claims(&sim, "both-1");
    claims["client_id"] = json!(client_id);
    claims["scope"] = json!("account_info.read");
    let proof = assertion(
        &client_key,
        &client_id,
        ISSUER,
        sim.now.0 + 60,
        "client-proof-1",
    );
    let response = sim.token(
        &[
            ("grant_type", JWT_BEARER_GRANT),
            ("assertion", &id_jag(&signing_key(7), &claims)),
            ("client_id", &client_id),
            ("client_assertion_type", JWT_BEARER),
            ("client_assertion", &proof),
        ],
        None,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(json(&response)["scope"], "account_info.read");
}
