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
    let mut doc = fixture_document().to_json_value();
    doc["profile"] = json!({
        "kind": "standards",
        "issuer": ISSUER,
        "identity_assertions": { "providers": [{
            "issuer": IDP,
            "jwks": { "keys": [ public_jwk(&signing_key(7), "idp-1") ] },
            "accounts": { ALICE_AT_IDP: {
                "account_id": alice().account_id.as_str(),
                "uid": alice().uid.as_str(),
            } },
        }] },
    });
    let doc = ConfigDocument::from_json_value(&doc).expect("the document reads");
    Sim::new(Config::new(doc).expect("the configuration holds"))
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
