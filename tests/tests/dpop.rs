//! DPoP (RFC 9449, issue 49): tokens bound to a key the client holds. A client signs a proof
//! for each request with its key; the tokens it gets are good only with proofs of that key — at
//! the API, and for a public client's refresh token at the token endpoint — and a proof is taken
//! once, fresh, with the nonce the server hands out.

use edgegrant::*;
use edgegrant_tests::*;
use p256::ecdsa::SigningKey;
use serde_json::{json, Value};

const ISSUER: &str = "https://auth.example";
const TOKEN_URI: &str = "https://auth.example/oauth2/token";

/// The fixture in the standards profile reading proofs as `dpop` says.
fn sim_with(dpop: Value) -> Sim {
    let mut doc = fixture_document().to_json_value();
    doc["profile"] = json!({ "kind": "standards", "issuer": ISSUER, "dpop": dpop });
    let doc = ConfigDocument::from_json_value(&doc).expect("the document reads");
    Sim::new(Config::new(doc).expect("the configuration holds"))
}

/// What a proof says; each test changes one thing.
struct Claims<'a> {
    htm: &'a str,
    htu: String,
    iat: u64,
    jti: String,
    nonce: Option<String>,
    token: Option<&'a str>,
}

impl Claims<'_> {
    fn token_endpoint(sim: &Sim, nonce: Option<&str>) -> Claims<'static> {
        Claims {
            htm: "POST",
            htu: TOKEN_URI.into(),
            iat: sim.now.0,
            jti: format!("jti-{}", sim.now.0),
            nonce: nonce.map(str::to_owned),
            token: None,
        }
    }
}

/// A proof of `claims`, signed ES256 by `key` (its public half in the header).
fn proof(key: &SigningKey, claims: &Claims<'_>) -> String {
    let mut body =
        json!({ "htm": claims.htm, "htu": claims.htu, "iat": claims.iat, "jti": claims.jti });
    if let Some(nonce) = &claims.nonce {
        body["nonce"] = json!(nonce);
    }
    if let Some(token) = claims.token {
        body["ath"] = json!(s256(token));
    }
    let jwk = public_jwk(key, "dpop");
    signed_jwt(
        key,
        &json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": jwk }),
        &body,
    )
}

/// The RFC 7638 thumbprint of `key` (what `dpop_jkt` and `cnf.jkt` name).
fn thumbprint(key: &SigningKey) -> String {
    let jwk = public_jwk(key, "");
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    s256(&canonical)
}

fn with_proof(mut request: HttpRequest, proof: Option<&str>) -> HttpRequest {
    if let Some(proof) = proof {
        request.headers.push(("DPoP".into(), proof.into()));
    }
    request
}

/// A token request with `form` and a proof.
fn token(sim: &mut Sim, form: &[(&str, &str)], proof: Option<&str>) -> HttpResponse {
    sim.token_request(with_proof(form_request(form), proof))
}

/// An API call under the `DPoP` scheme (`Bearer` when `proof` is `None`).
fn call(sim: &mut Sim, access_token: &str, proof: Option<&str>) -> Answer {
    let mut request = bearer_request(GET_ACCOUNT, access_token);
    if proof.is_some() {
        request.headers = vec![("Authorization".into(), format!("DPoP {access_token}"))];
    }
    sim.http(with_proof(request, proof), None)
}

fn api_proof(sim: &Sim, key: &SigningKey, access_token: &str, jti: &str) -> String {
    proof(
        key,
        &Claims {
            htm: "POST",
            htu: format!("{ISSUER}{GET_ACCOUNT}"),
            iat: sim.now.0,
            jti: jti.into(),
            nonce: None,
            token: Some(access_token),
        },
    )
}

fn error_of(response: &HttpResponse) -> String {
    json(response)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The public app's code, from an authorization with `extra` parameters.
fn public_code(sim: &mut Sim, extra: &[(&str, &str)]) -> String {
    let mut pairs = vec![
        ("client_id", PKCE_APP),
        ("response_type", "code"),
        ("redirect_uri", PKCE_REDIRECT),
        ("scope", "account_info.read offline_access"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ];
    pairs.extend_from_slice(extra);
    sim.code_for(&query(&pairs), &alice())
}

/// A token request with a proof of `key`: first without a nonce, told `use_dpop_nonce` with
/// one, then with it — as a client starts.
fn with_nonce(sim: &mut Sim, key: &SigningKey, form: &[(&str, &str)]) -> HttpResponse {
    let first = token(
        sim,
        form,
        Some(&proof(key, &Claims::token_endpoint(sim, None))),
    );
    assert_eq!(first.status, 400, "{}", first.body);
    assert_eq!(error_of(&first), "use_dpop_nonce");
    let nonce = first.header("DPoP-Nonce").expect("a nonce").to_owned();
    let mut claims = Claims::token_endpoint(sim, Some(&nonce));
    claims.jti.push_str("-retry");
    let answer = token(sim, form, Some(&proof(key, &claims)));
    assert_eq!(
        answer.header("DPoP-Nonce"),
        Some(nonce.as_str()),
        "a nonce on every answer"
    );
    answer
}

#[test]
fn a_public_clients_tokens_are_bound_to_the_key_it_proves() {
    let mut sim = sim_with(json!({}));
    let key = signing_key(21);
    let thief = signing_key(22);
    let code = public_code(&mut sim, &[]);
    let answer = with_nonce(&mut sim, &key, &pkce_exchange(&code, VERIFIER));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let tokens = json(&answer);
    assert_eq!(tokens["token_type"], "DPoP");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    // At the API: with a proof of the key; never as a bearer token, nor with another key.
    let good = api_proof(&sim, &key, &access, "a1");
    assert!(matches!(
        call(&mut sim, &access, Some(&good)),
        Answer::Serve(_)
    ));
    let bearer = http(call(&mut sim, &access, None));
    assert_eq!(bearer.status, 401);
    let challenge = bearer.header("WWW-Authenticate").unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(
        challenge.contains("DPoP algs=\"ES256 RS256\""),
        "{challenge}"
    );
    let stolen = api_proof(&sim, &thief, &access, "a2");
    assert_eq!(http(call(&mut sim, &access, Some(&stolen))).status, 401);
    // A proof made for another token (ath) is refused.
    let other = api_proof(&sim, &key, "sl.other", "a3");
    let refused = http(call(&mut sim, &access, Some(&other)));
    assert_eq!(refused.status, 401);
    assert!(refused
        .header("WWW-Authenticate")
        .unwrap()
        .starts_with("DPoP realm=\"api\", error=\"invalid_dpop_proof\""));

    // The refresh token: only with a proof of the key, and a thief's tries end nothing.
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", PKCE_APP),
    ];
    let nonce = answer.header("DPoP-Nonce").unwrap().to_owned();
    let bare = token(&mut sim, &form, None);
    assert_eq!(
        (bare.status, error_of(&bare)),
        (400, "invalid_grant".into())
    );
    let mut claims = Claims::token_endpoint(&sim, Some(&nonce));
    claims.jti = "r-thief".into();
    let by_thief = token(&mut sim, &form, Some(&proof(&thief, &claims)));
    assert_eq!(error_of(&by_thief), "invalid_grant", "{}", by_thief.body);
    claims.jti = "r-owner".into();
    let refreshed = token(&mut sim, &form, Some(&proof(&key, &claims)));
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert_eq!(json(&refreshed)["token_type"], "DPoP");
}

#[test]
fn a_proof_is_taken_once_for_its_request_within_its_window() {
    let mut sim = sim_with(json!({ "nonces": "none" }));
    let key = signing_key(23);
    let ok = |sim: &mut Sim, claims: &Claims<'_>| {
        let code = public_code(sim, &[]);
        token(
            sim,
            &pkce_exchange(&code, VERIFIER),
            Some(&proof(&key, claims)),
        )
    };
    let refused = |response: HttpResponse| {
        assert_eq!(response.status, 400, "{}", response.body);
        error_of(&response)
    };
    let now = sim.now.0;
    // `iat` within ±300 s of now, both edges.
    for (iat, taken) in [
        (now - 300, true),
        (now - 301, false),
        (now + 300, true),
        (now + 301, false),
    ] {
        let mut claims = Claims::token_endpoint(&sim, None);
        claims.iat = iat;
        claims.jti = format!("iat-{iat}");
        let response = ok(&mut sim, &claims);
        match taken {
            true => assert_eq!(response.status, 200, "iat {iat}: {}", response.body),
            false => assert_eq!(refused(response), "invalid_dpop_proof", "iat {iat}"),
        }
    }
    // For this method and URI only.
    let mut claims = Claims::token_endpoint(&sim, None);
    claims.htm = "GET";
    assert_eq!(refused(ok(&mut sim, &claims)), "invalid_dpop_proof");
    let mut claims = Claims::token_endpoint(&sim, None);
    claims.htu = "https://auth.example/oauth2/other".into();
    assert_eq!(refused(ok(&mut sim, &claims)), "invalid_dpop_proof");
    // Its query and fragment, its case and default port aside.
    let mut claims = Claims::token_endpoint(&sim, None);
    claims.htu = "HTTPS://Auth.Example:443/oauth2/token?x=1#f".into();
    claims.jti = "normalized".into();
    assert_eq!(ok(&mut sim, &claims).status, 200);
    // Once: the same proof again is a replay.
    let mut claims = Claims::token_endpoint(&sim, None);
    claims.jti = "once".into();
    assert_eq!(ok(&mut sim, &claims).status, 200);
    assert_eq!(refused(ok(&mut sim, &claims)), "invalid_dpop_proof");
    // Signed by the key it carries.
    let mut claims = Claims::token_endpoint(&sim, None);
    claims.jti = "forged".into();
    let good = proof(&key, &claims);
    let other = proof(&signing_key(24), &claims);
    let forged = format!(
        "{}.{}",
        good.rsplit_once('.').unwrap().0,
        other.rsplit_once('.').unwrap().1
    );
    let code = public_code(&mut sim, &[]);
    let response = token(&mut sim, &pkce_exchange(&code, VERIFIER), Some(&forged));
    assert_eq!(refused(response), "invalid_dpop_proof");
    // Two DPoP headers (or two proofs joined by a comma) are no proof.
    let code = public_code(&mut sim, &[]);
    let mut request = with_proof(form_request(&pkce_exchange(&code, VERIFIER)), Some(&good));
    request.headers.push(("DPoP".into(), good.clone()));
    assert_eq!(refused(sim.token_request(request)), "invalid_dpop_proof");
}

#[test]
fn a_code_bound_by_dpop_jkt_is_redeemed_only_with_that_key() {
    let mut sim = sim_with(json!({ "nonces": "none" }));
    let key = signing_key(25);
    let jkt = thumbprint(&key);
    let code = public_code(&mut sim, &[("dpop_jkt", &jkt)]);
    let mut claims = Claims::token_endpoint(&sim, None);
    let other = token(
        &mut sim,
        &pkce_exchange(&code, VERIFIER),
        Some(&proof(&signing_key(26), &claims)),
    );
    assert_eq!(error_of(&other), "invalid_grant", "{}", other.body);
    let bare = token(&mut sim, &pkce_exchange(&code, VERIFIER), None);
    assert_eq!(error_of(&bare), "invalid_grant");
    claims.jti.push_str("-2");
    let own = token(
        &mut sim,
        &pkce_exchange(&code, VERIFIER),
        Some(&proof(&key, &claims)),
    );
    assert_eq!(own.status, 200, "{}", own.body);
    // A malformed dpop_jkt goes back to the client.
    let answer = sim.authorize(
        &query(&[
            ("client_id", PKCE_APP),
            ("response_type", "code"),
            ("redirect_uri", PKCE_REDIRECT),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
            ("dpop_jkt", "short"),
        ]),
        Some(&alice()),
    );
    let Outcome::Refused(refusal) = answer.outcome() else {
        panic!("{:?}", answer.outcome());
    };
    assert_eq!(refusal, &Refusal::DpopJktMalformed);
}

#[test]
fn a_confidential_clients_access_tokens_are_bound_and_its_refresh_token_is_not() {
    let mut sim = sim_with(json!({ "nonces": "none" }));
    let key = signing_key(27);
    let code = sim.code_for(&conf_query("offline", "s"), &alice());
    let claims = Claims::token_endpoint(&sim, None);
    let answer = token(&mut sim, &conf_exchange(&code), Some(&proof(&key, &claims)));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let tokens = json(&answer);
    let access = tokens["access_token"].as_str().unwrap();
    let introspected = sim.introspect(access);
    assert_eq!(introspected["token_type"], "DPoP");
    assert_eq!(introspected["cnf"]["jkt"], thumbprint(&key));
    // Its client's authentication constrains the refresh token: a bearer token comes of it
    // without a proof (RFC 9449 §5).
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let refreshed = sim.refresh(refresh, CONF_APP, Some(CONF_SECRET));
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let bearer = json(&refreshed);
    assert_eq!(bearer["token_type"], "bearer");
    let introspected = sim.introspect(bearer["access_token"].as_str().unwrap());
    assert_eq!(introspected.get("cnf"), None);
}

#[test]
fn an_app_required_to_prove_a_key_is_refused_without_a_proof() {
    let mut sim = sim_with(json!({ "required": { "apps": [CONF_APP] } }));
    let code = sim.code_for(&conf_query("online", "s"), &alice());
    let answer = sim.exchange_confidential(&code);
    assert_eq!(answer.status, 400);
    assert_eq!(error_of(&answer), "invalid_dpop_proof");
    let metadata = json(&http(sim.http(
        HttpRequest::new("GET", "/.well-known/oauth-authorization-server", ""),
        None,
    )));
    assert_eq!(
        metadata["dpop_signing_alg_values_supported"],
        json!(["ES256", "RS256"])
    );
}

#[test]
fn nonces_everywhere_bound_a_proof_at_the_api_to_the_nonce_period() {
    let mut sim = sim_with(json!({ "nonces": "everywhere" }));
    let key = signing_key(28);
    let code = public_code(&mut sim, &[]);
    let answer = with_nonce(&mut sim, &key, &pkce_exchange(&code, VERIFIER));
    let access = json(&answer)["access_token"].as_str().unwrap().to_owned();
    let nonce = answer.header("DPoP-Nonce").unwrap().to_owned();
    let bare = api_proof(&sim, &key, &access, "n1");
    let without = http(call(&mut sim, &access, Some(&bare)));
    assert_eq!(without.status, 401);
    assert!(without
        .header("WWW-Authenticate")
        .unwrap()
        .contains("error=\"use_dpop_nonce\""));
    assert_eq!(without.header("DPoP-Nonce"), Some(nonce.as_str()));
    let with = |sim: &mut Sim, jti: &str| {
        let claims = Claims {
            htm: "POST",
            htu: format!("{ISSUER}{GET_ACCOUNT}"),
            iat: sim.now.0,
            jti: jti.into(),
            nonce: Some(nonce.clone()),
            token: Some(&access),
        };
        let proof = proof(&key, &claims);
        call(sim, &access, Some(&proof))
    };
    assert!(matches!(with(&mut sim, "n2"), Answer::Serve(_)));
    // A nonce is taken for its period and the next: 300 to 600 s.
    sim.advance(600);
    let stale = http(with(&mut sim, "n3"));
    assert!(stale
        .header("WWW-Authenticate")
        .unwrap()
        .contains("use_dpop_nonce"));
}

#[test]
fn a_bound_call_has_the_host_verify_one_signature() {
    let mut sim = sim_with(json!({ "nonces": "none" }));
    let key = signing_key(29);
    let code = public_code(&mut sim, &[]);
    let claims = Claims::token_endpoint(&sim, None);
    let tokens = json(&token(
        &mut sim,
        &pkce_exchange(&code, VERIFIER),
        Some(&proof(&key, &claims)),
    ));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let mut request = bearer_request(GET_ACCOUNT, &access);
    request.headers = vec![
        ("Authorization".into(), format!("DPoP {access}")),
        ("DPoP".into(), api_proof(&sim, &key, &access, "v1")),
    ];
    let input = Input::Http {
        request,
        user: None,
    };
    let (mut core, mut step) =
        edgegrant::Request::start(sim.config.clone(), input, sim.now, entropy(9));
    let mut verifications = 0;
    loop {
        let event = match &step {
            Step::Read(keys) => sim.store.read(keys.clone()),
            Step::Verify(verify) => {
                verifications += 1;
                Event::Verified(verify_signature(verify))
            }
            Step::Serve(_) => break,
            other => panic!("{other:?}"),
        };
        step = core.advance(event).unwrap();
    }
    assert_eq!(verifications, 1);
}
