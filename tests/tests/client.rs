//! The PKCE client machine against the server machines, in process, over simulated time: online
//! and offline access, refresh at the exact boundaries, 401 handling, revocation, redirect checks
//! (RFC 6749 §4.1, §6, §10.12; RFC 7636; SPEC.md "Begin authorization", "Refresh access token",
//! "Revoke token").

use edgegrant::client::*;
use edgegrant::*;
use edgegrant_tests::*;
use proptest::prelude::*;

const AUTHORIZE: &str = "https://auth.test/oauth2/authorize";
const TOKEN: &str = "https://api.auth.test/oauth2/token";
const REVOKE: &str = "https://api.auth.test/2/auth/token/revoke";
const ACCESS_TTL: u64 = 14_400;
/// The standards profile's issuer, where a DPoP client's requests go.
const ISSUER: &str = "https://auth.example";
const MARGIN: u64 = 300;

fn client_config(access_type: ClientAccessType, redirect: Option<&str>) -> ClientConfig {
    ClientConfig {
        client_id: PKCE_APP.into(),
        authorize_url: AUTHORIZE.into(),
        token_url: TOKEN.into(),
        revoke_url: REVOKE.into(),
        redirect_uri: redirect.map(str::to_owned),
        scopes: vec!["account_info.read".into()],
        access_type,
        refresh_margin: MARGIN,
        dpop_public_key: None,
    }
}

/// An API call with no target: enough for bearer tokens.
const CALL: ClientInput = ClientInput::Call {
    method: None,
    url: None,
};

/// The API's 401, without a challenge to read.
const UNAUTHORIZED: ClientInput = ClientInput::Unauthorized {
    challenge: None,
    nonce: None,
    method: None,
    url: None,
};

/// A client, a server deployment and a signed-in user, wired together; `client_now` is the
/// client's clock, which may disagree with the server's (`sim.now`).
struct World {
    sim: Sim,
    client: PkceClient,
    state: ClientState,
    client_now: UnixTime,
    seed: u8,
    /// How many consent pages the user was shown.
    consent_pages: usize,
    /// The host's DPoP key, which signs the proofs the client hands it.
    key: Option<p256::ecdsa::SigningKey>,
}

impl World {
    fn new(access_type: ClientAccessType) -> World {
        World::with(client_config(access_type, Some(PKCE_REDIRECT)))
    }

    fn with(config: ClientConfig) -> World {
        World {
            sim: Sim::new(fixture_config()),
            client: PkceClient::new(config).unwrap(),
            state: ClientState::Idle,
            client_now: T0,
            seed: 0,
            consent_pages: 0,
            key: None,
        }
    }

    /// A client binding its tokens to `key` (DPoP) against the standards profile at
    /// [`ISSUER`] with `profile.dpop` as `dpop` says.
    fn bound(key: p256::ecdsa::SigningKey, dpop: serde_json::Value) -> World {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] = serde_json::json!({ "kind": "standards", "issuer": ISSUER, "dpop": dpop });
        let doc = ConfigDocument::from_json_value(&doc).unwrap();
        let mut config = client_config(ClientAccessType::Offline, Some(PKCE_REDIRECT));
        config.authorize_url = format!("{ISSUER}/oauth2/authorize");
        config.token_url = format!("{ISSUER}/oauth2/token");
        config.revoke_url = format!("{ISSUER}/2/auth/token/revoke");
        config.dpop_public_key = Some(public_jwk(&key, "dpop"));
        World {
            sim: Sim::new(Config::new(doc).unwrap()),
            key: Some(key),
            ..World::with(config)
        }
    }

    /// The `DPoP` header of `proof`, signed with the host's key as WebCrypto would (`r ‖ s`).
    fn sign(&self, proof: &ProofToSign) -> String {
        use p256::ecdsa::signature::Signer as _;
        assert_eq!(proof.alg, "ES256");
        let key = self.key.as_ref().expect("a DPoP key");
        let signature: p256::ecdsa::Signature = key.sign(proof.signing_input.as_bytes());
        proof.header(&signature.to_bytes())
    }

    /// Moves both clocks.
    fn advance(&mut self, seconds: u64) {
        self.sim.advance(seconds);
        self.client_now = self.client_now.plus(Seconds(seconds));
    }

    /// Feeds one input to the client and keeps the new state.
    fn feed(&mut self, input: ClientInput) -> ClientStep {
        self.seed = self.seed.wrapping_add(1);
        let entropy = ClientEntropy::new([self.seed; CLIENT_ENTROPY_LEN]);
        let next = self
            .client
            .handle(&self.state, &input, self.client_now, &entropy);
        self.state = next.state;
        next.step
    }

    /// Carries a `Send` step to the server and returns what it answered.
    fn deliver(&mut self, request: &ClientRequest) -> HttpResponse {
        let path = match request.url.as_str() {
            TOKEN => "/oauth2/token",
            REVOKE => "/2/auth/token/revoke",
            other => other
                .strip_prefix(ISSUER)
                .unwrap_or_else(|| panic!("the client sent a request to {other}")),
        };
        let mut http_request = HttpRequest::new(&request.method, path, "");
        http_request.headers = request.headers.clone();
        if let Some(proof) = &request.proof {
            http_request.headers.push(("DPoP".into(), self.sign(proof)));
        }
        http_request.body = request.body.clone().into_bytes();
        http(self.sim.http(http_request, None))
    }

    /// Sends a `Send` step and feeds the answer back.
    fn round_trip(&mut self, step: ClientStep) -> ClientStep {
        let ClientStep::Send { request } = step else {
            panic!("expected a request to send, got {step:?}")
        };
        let response = self.deliver(&request);
        self.feed(ClientInput::Response { response })
    }

    /// Plays the browser: the authorization URL, the user's decision on the consent page if
    /// one is shown (a re-authorization of what the user granted completes without one), the
    /// page or the redirect back.
    fn browse(&mut self, url: &str, decision: Decision) -> Answer {
        let authorize = self.client.config().authorize_url.clone();
        let query = url
            .strip_prefix(authorize.as_str())
            .and_then(|rest| rest.strip_prefix('?'))
            .expect("the authorization endpoint");
        let answer = self.sim.authorize(query, Some(&alice()));
        match answer.outcome() {
            Outcome::Consent(prompt) => {
                assert_eq!(prompt.app.as_str(), PKCE_APP);
                self.consent_pages += 1;
                self.sim.consent(query, &alice(), decision)
            }
            Outcome::Redirect(_) | Outcome::DisplayCode { .. } => {
                assert_eq!(decision, Decision::Allow, "no page to deny on");
                answer
            }
            _ => panic!("{answer:?}"),
        }
    }

    /// Begin → consent → redirect → exchange: the client ends authorized.
    fn sign_in(&mut self) -> SessionView {
        let ClientStep::Navigate { url } = self.feed(ClientInput::Begin) else {
            panic!("Begin must navigate")
        };
        let location = location(&self.browse(&url, Decision::Allow));
        let mut step = self.feed(ClientInput::Redirected { url: location });
        // A DPoP client sends its exchange again when the server asks for its nonce.
        for _ in 0..2 {
            if matches!(step, ClientStep::Send { .. }) {
                step = self.round_trip(step);
            }
        }
        match step {
            ClientStep::Authorized { session } => session,
            other => panic!("expected tokens, got {other:?}"),
        }
    }

    /// Asks the client to prepare an API call; if it refreshes first, carries the refresh out.
    /// Returns the header to attach.
    fn prepare_call(&mut self) -> String {
        let mut step = self.feed(CALL);
        if matches!(step, ClientStep::Send { .. }) {
            step = self.round_trip(step);
            assert!(matches!(step, ClientStep::Authorized { .. }), "{step:?}");
            step = self.feed(CALL);
        }
        match step {
            ClientStep::Attach { authorization, .. } => authorization,
            other => panic!("expected a header to attach, got {other:?}"),
        }
    }

    /// Calls `get_current_account` with the header, on the server.
    fn call(&mut self, authorization: &str) -> Answer {
        let token = authorization.strip_prefix("Bearer ").unwrap();
        self.sim.api(GET_ACCOUNT, token)
    }

    /// The bound API call (`get_current_account`) an `Attach` step makes: its `Authorization`
    /// and the `DPoP` header of its proof, signed; and the claims of that proof.
    fn proven_call(&self, step: &ClientStep) -> (HttpRequest, serde_json::Value) {
        let ClientStep::Attach {
            authorization,
            proof: Some(proof),
        } = step
        else {
            panic!("expected a bound call, got {step:?}")
        };
        let mut call = HttpRequest::new("POST", GET_ACCOUNT, "");
        call.headers = vec![
            ("Authorization".into(), authorization.clone()),
            ("DPoP".into(), self.sign(proof)),
        ];
        (call, claims_of(proof))
    }

    /// Signs in and returns the session held.
    fn signed_in_session(mut self) -> Session {
        self.sign_in();
        self.session().clone()
    }

    fn session(&self) -> &Session {
        match &self.state {
            ClientState::Authorized { session } => session,
            other => panic!("not authorized: {other:?}"),
        }
    }
}

/// Where the browser is sent: the `Location` of a 302 (with a code, or with an error).
fn location(answer: &Answer) -> String {
    let response = answer.response();
    assert_eq!(response.status, 302, "{answer:?}");
    let location = response.header("Location").expect("Location").to_owned();
    match answer.outcome() {
        Outcome::Redirect(to) => assert_eq!(to, &location),
        Outcome::Refused(_) => {}
        other => panic!("{other:?}"),
    }
    location
}

/// The public app's refresh with `refresh_token`, answered.
fn refused_refresh(sim: &mut Sim, refresh_token: &str) -> Answer {
    sim.token_answer(form_request(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", PKCE_APP),
    ]))
}

fn refresh_reason(step: &ClientStep) -> &str {
    match step {
        ClientStep::Reauthorize { reason } => reason,
        other => panic!("expected Reauthorize, got {other:?}"),
    }
}

#[test]
fn offline_access_refreshes_exactly_when_due_and_revokes_everything() {
    let mut world = World::new(ClientAccessType::Offline);
    let session = world.sign_in();
    assert!(session.refreshable);
    assert_eq!(session.expires_at, Some(T0.plus(Seconds(ACCESS_TTL))));
    assert_eq!(
        session.account_id.as_deref(),
        Some(alice().account_id.as_str())
    );
    let first = world.session().access_token.clone();

    // Due at expires_at − margin: one second before, the token is attached as is.
    world.advance(ACCESS_TTL - MARGIN - 1);
    let header = world.prepare_call();
    assert_eq!(header, format!("Bearer {}", first.expose()));
    assert!(matches!(world.call(&header), Answer::Serve(_)));

    // At the due instant the client refreshes before calling, and the new token works.
    world.advance(1);
    let refresh = world.feed(CALL);
    let ClientStep::Send { request } = &refresh else {
        panic!("{refresh:?}")
    };
    assert_eq!(request.url, TOKEN);
    assert!(matches!(
        world.round_trip(refresh),
        ClientStep::Authorized { .. }
    ));
    let header = world.prepare_call();
    assert_ne!(header, format!("Bearer {}", first.expose()));
    assert!(matches!(world.call(&header), Answer::Serve(_)));
    let refreshed = world.session().clone();
    assert_eq!(
        refreshed.expires_at,
        Some(world.client_now.plus(Seconds(ACCESS_TTL)))
    );
    assert!(
        refreshed.refresh_token.is_some(),
        "the refresh token is kept (reusable)"
    );

    // Revoking ends the refresh token too: the server refuses it afterwards.
    let revoke = world.feed(ClientInput::Revoke);
    assert_eq!(world.round_trip(revoke), ClientStep::SignedOut);
    assert_eq!(world.state, ClientState::Idle);
    let refresh = refreshed.refresh_token.unwrap();
    let refused = refused_refresh(&mut world.sim, refresh.expose());
    assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenRevoked));
    assert_eq!(oauth_error(refused.response()), "invalid_grant");
    let call = world.call(&header);
    assert_eq!(call.refusal(), Some(&Refusal::AccessTokenRevoked));
    assert_eq!(http(call).status, 401);
}

#[test]
fn online_access_ends_at_expiry_and_the_user_authorizes_again() {
    let mut world = World::new(ClientAccessType::Online);
    let session = world.sign_in();
    assert!(!session.refreshable);

    // Inside the margin an online token is still attached: it works until expires_at.
    world.advance(ACCESS_TTL - 1);
    let header = world.prepare_call();
    assert!(matches!(world.call(&header), Answer::Serve(_)));

    // At expires_at client and server agree: the token is over.
    world.advance(1);
    let step = world.feed(CALL);
    assert!(refresh_reason(&step).contains("online"));
    assert_eq!(world.state, ClientState::Idle);
    let call = world.call(&header);
    assert_eq!(call.refusal(), Some(&Refusal::AccessTokenExpired));
    assert_eq!(http(call).status, 401);

    // A new authorization (the user already consented) gives a working token again, and
    // completes without a consent page.
    assert_eq!(world.consent_pages, 1);
    world.sign_in();
    assert_eq!(world.consent_pages, 1, "re-authorization shows no page");
    let header = world.prepare_call();
    assert!(matches!(world.call(&header), Answer::Serve(_)));
}

#[test]
fn a_401_refreshes_offline_once_and_sends_online_clients_back() {
    // The client's clock runs 60 s slow: it attaches a token the server already expired.
    let mut world = World::new(ClientAccessType::Offline);
    world.sign_in();
    world.sim.advance(ACCESS_TTL + 60);
    world.client_now = world.client_now.plus(Seconds(ACCESS_TTL - MARGIN - 1));
    let header = world.prepare_call();
    let call = world.call(&header);
    assert_eq!(call.refusal(), Some(&Refusal::AccessTokenExpired));
    assert_eq!(http(call).status, 401);
    let refresh = world.feed(UNAUTHORIZED);
    assert!(matches!(
        world.round_trip(refresh),
        ClientStep::Authorized { .. }
    ));
    let header = world.prepare_call();
    assert!(matches!(world.call(&header), Answer::Serve(_)));
    // Refused again right after a refresh forced by a 401: no refresh loop, authorize again.
    let step = world.feed(UNAUTHORIZED);
    assert!(refresh_reason(&step).contains("freshly refreshed"));

    // Unlinked by the user: the refresh is refused with invalid_grant → authorize again.
    let mut world = World::new(ClientAccessType::Offline);
    world.sign_in();
    world.sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    let header = world.prepare_call();
    let call = world.call(&header);
    assert_eq!(call.refusal(), Some(&Refusal::AccessTokenUnlinked));
    assert_eq!(http(call).status, 401);
    let refresh = world.feed(UNAUTHORIZED);
    let step = world.round_trip(refresh);
    assert!(refresh_reason(&step).contains("invalid_grant"));
    assert_eq!(world.state, ClientState::Idle);

    // Online: a 401 means authorize again.
    let mut world = World::new(ClientAccessType::Online);
    world.sign_in();
    world.sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    assert!(refresh_reason(&world.feed(UNAUTHORIZED)).contains("online"));
}

#[test]
fn revoking_with_an_expired_access_token_refreshes_first_so_nothing_outlives_sign_out() {
    let mut world = World::new(ClientAccessType::Offline);
    world.sign_in();
    let refresh = world.session().refresh_token.clone().unwrap();
    world.advance(ACCESS_TTL);
    let first = world.feed(ClientInput::Revoke);
    let ClientStep::Send { request } = &first else {
        panic!("{first:?}")
    };
    assert_eq!(request.url, TOKEN, "a refresh goes first");
    let revoke = world.round_trip(first);
    let ClientStep::Send { request } = &revoke else {
        panic!("{revoke:?}")
    };
    assert_eq!(request.url, REVOKE);
    assert_eq!(world.round_trip(revoke), ClientStep::SignedOut);
    let refused = refused_refresh(&mut world.sim, refresh.expose());
    assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenRevoked));
    assert_eq!(oauth_error(refused.response()), "invalid_grant");
}

#[test]
fn the_redirect_must_carry_the_state_sent_and_come_to_the_redirect_uri() {
    let mut world = World::new(ClientAccessType::Offline);
    let ClientStep::Navigate { url } = world.feed(ClientInput::Begin) else {
        panic!()
    };
    let in_progress = world.state.clone();
    let genuine = world.browse(&url, Decision::Allow);
    assert!(matches!(genuine.outcome(), Outcome::Redirect(_)));
    let genuine = location(&genuine);

    // A forged redirect (an attacker's code, CSRF) changes nothing.
    let forged = format!("{PKCE_REDIRECT}?code=attacker-code&state=guessed");
    let step = world.feed(ClientInput::Redirected { url: forged });
    assert_eq!(
        step,
        ClientStep::Failed {
            error: ClientError::StateMismatch
        }
    );
    assert_eq!(world.state, in_progress);
    let stateless = format!("{PKCE_REDIRECT}?code=attacker-code");
    assert_eq!(world.feed(ClientInput::Redirected { url: stateless }), step);
    let elsewhere = genuine.replacen(PKCE_REDIRECT, "http://127.0.0.1:8765/other", 1);
    let step = world.feed(ClientInput::Redirected { url: elsewhere });
    assert_eq!(
        step,
        ClientStep::Failed {
            error: ClientError::WrongRedirectTarget
        }
    );
    assert_eq!(world.state, in_progress);

    // The genuine one completes.
    let exchange = world.feed(ClientInput::Redirected {
        url: genuine.clone(),
    });
    assert!(matches!(
        world.round_trip(exchange),
        ClientStep::Authorized { .. }
    ));

    // Replayed later, it is not expected any more.
    let step = world.feed(ClientInput::Redirected { url: genuine });
    assert!(matches!(
        step,
        ClientStep::Failed {
            error: ClientError::Unexpected { .. }
        }
    ));
    assert!(matches!(world.state, ClientState::Authorized { .. }));
}

#[test]
fn a_denial_is_surfaced_as_access_denied() {
    let mut world = World::new(ClientAccessType::Offline);
    let ClientStep::Navigate { url } = world.feed(ClientInput::Begin) else {
        panic!()
    };
    let denied = world.browse(&url, Decision::Deny);
    assert_eq!(denied.refusal(), Some(&Refusal::AccessDenied));
    match world.feed(ClientInput::Redirected {
        url: location(&denied),
    }) {
        ClientStep::Failed {
            error: ClientError::AuthorizationRefused { error, .. },
        } => assert_eq!(error, "access_denied"),
        other => panic!("{other:?}"),
    }
    assert_eq!(world.state, ClientState::Idle);
}

#[test]
fn without_a_redirect_uri_the_user_types_in_the_displayed_code() {
    let mut world = World::with(client_config(ClientAccessType::Offline, None));
    let ClientStep::Navigate { url } = world.feed(ClientInput::Begin) else {
        panic!()
    };
    assert!(!url.contains("redirect_uri"));
    let Outcome::DisplayCode { code, .. } = world.browse(&url, Decision::Allow).outcome().clone()
    else {
        panic!("the server displays the code")
    };
    let exchange = world.feed(ClientInput::CodeEntered {
        code: format!("  {}\n", code.expose()),
    });
    let ClientStep::Send { request } = &exchange else {
        panic!()
    };
    assert!(!request.body.contains("redirect_uri"));
    assert!(matches!(
        world.round_trip(exchange),
        ClientStep::Authorized { .. }
    ));
}

#[test]
fn the_verifier_is_fresh_unreserved_and_its_challenge_is_s256() {
    let client = PkceClient::new(client_config(
        ClientAccessType::Offline,
        Some(PKCE_REDIRECT),
    ))
    .unwrap();
    let mut urls = Vec::new();
    for seed in [1u8, 2] {
        let entropy = ClientEntropy::new([seed; CLIENT_ENTROPY_LEN]);
        let next = client.handle(&ClientState::Idle, &ClientInput::Begin, T0, &entropy);
        let ClientState::Authorizing { state, verifier } = &next.state else {
            panic!()
        };
        let verifier = verifier.expose();
        assert_eq!(verifier.len(), 43);
        assert!(verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)));
        let ClientStep::Navigate { url } = &next.step else {
            panic!()
        };
        assert_eq!(redirect_param(url, "code_challenge"), Some(s256(verifier)));
        assert_eq!(
            redirect_param(url, "code_challenge_method").as_deref(),
            Some("S256")
        );
        assert_eq!(
            redirect_param(url, "state").as_deref(),
            Some(state.as_str())
        );
        assert_eq!(
            redirect_param(url, "token_access_type").as_deref(),
            Some("offline")
        );
        assert_eq!(
            redirect_param(url, "scope").as_deref(),
            Some("account_info.read")
        );
        assert!(
            !format!("{:?}", next.state).contains(verifier),
            "Debug never shows the verifier"
        );
        urls.push(url.clone());
    }
    assert_ne!(urls[0], urls[1]);
}

#[test]
fn a_configuration_that_cannot_work_is_refused() {
    let good = client_config(ClientAccessType::Offline, Some(PKCE_REDIRECT));
    for bad in [
        ClientConfig {
            client_id: String::new(),
            ..good.clone()
        },
        ClientConfig {
            token_url: "/oauth2/token".into(),
            ..good.clone()
        },
        ClientConfig {
            authorize_url: "https://a.test/x#frag".into(),
            ..good.clone()
        },
        ClientConfig {
            redirect_uri: Some("https://app.test/cb#x".into()),
            ..good.clone()
        },
        ClientConfig {
            scopes: vec!["a b".into()],
            ..good.clone()
        },
    ] {
        assert!(PkceClient::new(bad).is_err());
    }
    // A DPoP key must be a public key the machine makes proofs for: never the private half,
    // which has no business in a configuration a page may keep.
    let mut private = public_jwk(&signing_key(30), "k");
    private["d"] = serde_json::json!("AAAA");
    for (jwk, why) in [
        (private, "private"),
        (
            serde_json::json!({ "kty": "oct", "k": "c2VjcmV0" }),
            "private",
        ),
        (
            serde_json::json!({ "kty": "OKP", "crv": "Ed25519", "x": "AAAA" }),
            "EC P-256 or an RSA",
        ),
        (serde_json::json!("ES256"), "JWK object"),
    ] {
        let refused = PkceClient::new(ClientConfig {
            dpop_public_key: Some(jwk),
            ..good.clone()
        });
        assert!(refused.unwrap_err().to_string().contains(why), "{why}");
    }
}

/// What a proof the client handed to the host claims.
fn claims_of(proof: &ProofToSign) -> serde_json::Value {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
    let payload = proof.signing_input.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

fn sent(step: &ClientStep) -> &ClientRequest {
    match step {
        ClientStep::Send { request } => request,
        other => panic!("expected a request, got {other:?}"),
    }
}

fn call_to(url: &str) -> ClientInput {
    ClientInput::Call {
        method: Some("POST".into()),
        url: Some(url.into()),
    }
}

#[test]
fn a_dpop_client_binds_its_tokens_to_its_key_and_meets_each_nonce_once() {
    let key = signing_key(31);
    let mut world = World::bound(key.clone(), serde_json::json!({}));
    // The authorization request names the key (RFC 9449 §10): the code is bound to it.
    let ClientStep::Navigate { url } = world.feed(ClientInput::Begin) else {
        panic!("Begin must navigate")
    };
    let jwk = public_jwk(&key, "");
    let thumbprint = s256(&format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    ));
    assert!(url.ends_with(&format!("&dpop_jkt={thumbprint}")), "{url}");
    let location = location(&world.browse(&url, Decision::Allow));

    // The exchange carries a proof for the token endpoint; the server asks for its nonce, and
    // the machine sends the exchange again with a new proof carrying it.
    let exchange = world.feed(ClientInput::Redirected { url: location });
    let first = claims_of(sent(&exchange).proof.as_ref().expect("a proof"));
    assert_eq!(first["htm"], "POST");
    assert_eq!(first["htu"], format!("{ISSUER}/oauth2/token"));
    assert_eq!(first["iat"], world.client_now.0);
    assert!(first.get("nonce").is_none() && first.get("ath").is_none());
    let asked = world.deliver(sent(&exchange));
    assert_eq!(
        (asked.status, &json(&asked)["error"]),
        (400, &serde_json::json!("use_dpop_nonce"))
    );
    let nonce = asked.header("DPoP-Nonce").unwrap().to_owned();
    let again = world.feed(ClientInput::Response { response: asked });
    let retry = claims_of(sent(&again).proof.as_ref().unwrap());
    assert_eq!(retry["nonce"], nonce.as_str());
    assert_ne!(retry["jti"], first["jti"], "a new proof, not a replay");
    let ClientStep::Authorized { session } = world.round_trip(again) else {
        panic!("the exchange with the nonce is taken")
    };
    assert!(session.bound, "token_type DPoP");

    // The API: `DPoP` with a proof of the call, carrying the token's hash.
    let api = format!("{ISSUER}{GET_ACCOUNT}");
    let attach = world.feed(call_to(&api));
    let (call, claims) = world.proven_call(&attach);
    let token = world.session().access_token.expose().to_owned();
    assert_eq!(
        call.header_values("authorization").next(),
        Some(format!("DPoP {token}").as_str())
    );
    assert_eq!(claims["ath"], s256(&token));
    assert!(matches!(world.sim.http(call, None), Answer::Serve(_)));
    // A bound call that does not say what it is cannot be proven; nothing changes.
    let before = world.state.clone();
    let step = world.feed(CALL);
    assert_eq!(
        step,
        ClientStep::Failed {
            error: ClientError::CallTargetMissing
        }
    );
    assert_eq!(world.state, before);

    // When due, the refresh goes with a proof and the nonce kept; that nonce has aged out (a
    // nonce lives 300–600 s), so the server asks once more, and the refresh is taken.
    world.advance(ACCESS_TTL - MARGIN);
    let refresh = world.feed(call_to(&api));
    assert_eq!(
        claims_of(sent(&refresh).proof.as_ref().unwrap())["nonce"],
        nonce.as_str()
    );
    let asked = world.deliver(sent(&refresh));
    assert_eq!(json(&asked)["error"], "use_dpop_nonce");
    let again = world.feed(ClientInput::Response { response: asked });
    assert!(matches!(world.round_trip(again), ClientStep::Authorized { session } if session.bound));

    // The revocation: the bound token, with a proof of it.
    let token = world.session().access_token.expose().to_owned();
    let revoke = world.feed(ClientInput::Revoke);
    let request = sent(&revoke);
    assert!(request
        .headers
        .contains(&("Authorization".into(), format!("DPoP {token}"))));
    assert!(claims_of(request.proof.as_ref().unwrap())
        .get("ath")
        .is_some());
    assert_eq!(world.round_trip(revoke), ClientStep::SignedOut);
}

#[test]
fn a_nonce_is_met_once_and_the_apis_nonce_is_kept_apart() {
    // Nonces everywhere: the API asks for its own, and the machine makes the call again once.
    let mut world = World::bound(
        signing_key(32),
        serde_json::json!({ "nonces": "everywhere" }),
    );
    world.sign_in();
    let api = format!("{ISSUER}{GET_ACCOUNT}");
    let attach = world.feed(call_to(&api));
    let (call, _) = world.proven_call(&attach);
    let refused = http(world.sim.http(call, None));
    assert_eq!(refused.status, 401);
    let challenge = refused.header("WWW-Authenticate").unwrap().to_owned();
    assert!(challenge.contains("use_dpop_nonce"), "{challenge}");
    let nonce = refused.header("DPoP-Nonce").unwrap().to_owned();
    let unauthorized = ClientInput::Unauthorized {
        challenge: Some(challenge),
        nonce: Some(nonce.clone()),
        method: Some("POST".into()),
        url: Some(api.clone()),
    };
    let again = world.feed(unauthorized.clone());
    let (call, claims) = world.proven_call(&again);
    assert_eq!(claims["nonce"], nonce.as_str());
    assert_eq!(world.session().api_nonce.as_deref(), Some(nonce.as_str()));
    assert!(matches!(world.sim.http(call, None), Answer::Serve(_)));
    // The same nonce refused again is no reason to retry: the 401 is a refusal (a refresh).
    let step = world.feed(unauthorized);
    assert_eq!(sent(&step).url, format!("{ISSUER}/oauth2/token"));
    assert!(matches!(
        world.round_trip(step),
        ClientStep::Authorized { .. }
    ));
    // The revocation, once the nonce kept has aged out (300–600 s): the server asks for its
    // current one, and the revocation is sent again with it — never taken as done before.
    world.advance(700);
    let revoke = world.feed(ClientInput::Revoke);
    let asked = world.deliver(sent(&revoke));
    assert_eq!(asked.status, 401);
    assert!(
        asked.header("DPoP-Nonce").is_some(),
        "the revocation hands out its nonce"
    );
    let again = world.feed(ClientInput::Response { response: asked });
    assert_eq!(world.round_trip(again), ClientStep::SignedOut);
    // A 401 that refuses the proof, not the token, leaves the token alive: not signed out.
    let session = Session {
        bound: true,
        ..World::bound(signing_key(35), serde_json::json!({})).signed_in_session()
    };
    world.state = ClientState::Revoking {
        session: session.clone(),
    };
    let refused = world.feed(ClientInput::Response {
        response: HttpResponse::new(
            401,
            &[(
                "WWW-Authenticate",
                "DPoP realm=\"api\", error=\"invalid_dpop_proof\", algs=\"ES256\"",
            )],
            String::new(),
        ),
    });
    assert_eq!(
        refused,
        ClientStep::Failed {
            error: ClientError::RevocationFailed { status: 401 }
        }
    );
    assert_eq!(
        world.state,
        ClientState::Authorized {
            session: session.clone()
        }
    );
    // Tokens bound to a key this client was not given are of no use to it.
    let mut keyless = World::new(ClientAccessType::Offline);
    keyless.state = ClientState::Authorized { session };
    assert!(refresh_reason(&keyless.feed(CALL)).contains("DPoP key"));
    assert_eq!(keyless.state, ClientState::Idle);

    // At the token endpoint likewise: a server that refuses the nonce it just gave is not asked
    // a third time; the client reports the refusal.
    let mut world = World::bound(signing_key(33), serde_json::json!({}));
    let ClientStep::Navigate { url } = world.feed(ClientInput::Begin) else {
        panic!()
    };
    let location = location(&world.browse(&url, Decision::Allow));
    world.feed(ClientInput::Redirected { url: location });
    let asks = || ClientInput::Response {
        response: HttpResponse::new(
            400,
            &[("DPoP-Nonce", "n-1")],
            r#"{"error":"use_dpop_nonce"}"#.into(),
        ),
    };
    assert!(matches!(world.feed(asks()), ClientStep::Send { .. }));
    let step = world.feed(asks());
    assert!(
        matches!(&step, ClientStep::Failed { error: ClientError::TokenRefused { error, .. } } if error == "use_dpop_nonce"),
        "{step:?}"
    );
    assert_eq!(world.state, ClientState::Idle);
}

#[test]
fn a_dpop_client_takes_bearer_tokens_from_a_server_that_binds_none() {
    // The reference profile reads no proofs (RFC 9449 §5): the tokens are bearer tokens, and
    // calls carry no proof.
    let mut config = client_config(ClientAccessType::Offline, Some(PKCE_REDIRECT));
    config.dpop_public_key = Some(public_jwk(&signing_key(34), "k"));
    let mut world = World::with(config);
    world.key = Some(signing_key(34));
    let session = world.sign_in();
    assert!(!session.bound);
    let header = world.prepare_call();
    assert!(header.starts_with("Bearer "));
    assert!(matches!(world.call(&header), Answer::Serve(_)));
    // A client without a key takes no DPoP token.
    let mut world = World::new(ClientAccessType::Offline);
    world.feed(ClientInput::Begin);
    world.state = ClientState::Exchanging {
        sent_at: T0,
        code: None,
        verifier: None,
        nonce: None,
    };
    let step = world.feed(ClientInput::Response {
        response: HttpResponse::new(
            200,
            &[],
            r#"{"access_token":"a","token_type":"DPoP","expires_in":60}"#.into(),
        ),
    });
    assert!(matches!(
        step,
        ClientStep::Failed {
            error: ClientError::MalformedResponse { .. }
        }
    ));
}

#[test]
fn token_responses_that_break_rfc_6749_are_refused() {
    let mut world = World::new(ClientAccessType::Offline);
    for (status, body) in [
        (200, r#"{"token_type":"bearer"}"#),
        (200, r#"{"access_token":"t","token_type":"mac"}"#),
        (
            200,
            r#"{"access_token":"t","token_type":"bearer","expires_in":-5}"#,
        ),
        (200, "not json"),
        (502, "<html>bad gateway</html>"),
    ] {
        world.state = ClientState::Exchanging {
            sent_at: T0,
            code: None,
            verifier: None,
            nonce: None,
        };
        let response = HttpResponse {
            status,
            headers: vec![],
            body: body.into(),
        };
        let step = world.feed(ClientInput::Response { response });
        assert!(
            matches!(
                step,
                ClientStep::Failed {
                    error: ClientError::MalformedResponse { .. }
                }
            ),
            "{body}: {step:?}"
        );
        assert_eq!(world.state, ClientState::Idle);
    }
}

fn arbitrary_input() -> impl Strategy<Value = ClientInput> {
    prop_oneof![
        Just(ClientInput::Begin),
        Just(CALL),
        Just(UNAUTHORIZED),
        Just(ClientInput::Revoke),
        ".{0,40}".prop_map(|code| ClientInput::CodeEntered { code }),
        (
            prop::option::of("[a-z0-9]{1,8}"),
            prop::option::of("[a-z_]{1,8}")
        )
            .prop_map(|(state, error)| {
                let mut url = format!("{PKCE_REDIRECT}?code=c");
                if let Some(s) = state {
                    url.push_str(&format!("&state={s}"));
                }
                if let Some(e) = error {
                    url.push_str(&format!("&error={e}"));
                }
                ClientInput::Redirected { url }
            }),
        (
            prop::sample::select(vec![200u16, 400, 401, 500, 503]),
            ".{0,60}",
            any::<u16>()
        )
            .prop_map(|(status, junk, n)| {
                let body = match n % 3 {
                    0 => format!(
                        r#"{{"access_token":"a{n}","token_type":"bearer","expires_in":{n}}}"#
                    ),
                    1 => r#"{"error":"invalid_grant"}"#.to_owned(),
                    _ => junk,
                };
                ClientInput::Response {
                    response: HttpResponse {
                        status,
                        headers: vec![],
                        body,
                    },
                }
            }),
    ]
}

proptest! {
    /// Whatever arrives, in whatever order: no panic; a refused input (forged redirect,
    /// unexpected input) leaves the state exactly as it was; only an authorized client attaches
    /// a token, and only a request out is ever answered.
    #[test]
    fn no_input_sequence_breaks_the_client(
        inputs in prop::collection::vec((arbitrary_input(), 0u64..20_000), 1..30),
    ) {
        let client = PkceClient::new(client_config(ClientAccessType::Offline, Some(PKCE_REDIRECT))).unwrap();
        let mut state = ClientState::Idle;
        let mut now = T0;
        for (i, (input, dt)) in inputs.iter().enumerate() {
            now = now.plus(Seconds(*dt));
            let entropy = ClientEntropy::new([i as u8; CLIENT_ENTROPY_LEN]);
            let next = client.handle(&state, input, now, &entropy);
            match &next.step {
                ClientStep::Failed { error: ClientError::StateMismatch | ClientError::Unexpected { .. } | ClientError::WrongRedirectTarget } => {
                    prop_assert_eq!(&next.state, &state);
                }
                ClientStep::Attach { .. } => {
                    let authorized = matches!(state, ClientState::Authorized { .. });
                    prop_assert!(authorized, "attached a token while {:?}", state);
                }
                ClientStep::Send { .. } => {
                    let awaiting = matches!(next.state, ClientState::Exchanging { .. } | ClientState::Refreshing { .. } | ClientState::Revoking { .. });
                    prop_assert!(awaiting, "sent a request but awaits nothing: {:?}", next.state);
                }
                _ => {}
            }
            if matches!(input, ClientInput::Response { .. }) && !matches!(state, ClientState::Exchanging { .. } | ClientState::Refreshing { .. } | ClientState::Revoking { .. }) {
                let refused = matches!(next.step, ClientStep::Failed { error: ClientError::Unexpected { .. } });
                prop_assert!(refused, "answered a response nobody asked for: {:?}", next.step);
            }
            state = next.state;
        }
    }
}
