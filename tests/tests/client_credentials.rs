//! The client credentials grant (RFC 6749 §4.4; issue 48) beyond what its vectors pin
//! (`conformance/vectors/client-credentials.json`): a client's tokens for itself end when the
//! configuration stops allowing the client or its registration is deleted, the configuration
//! names only clients that can authenticate, and registered machines get the grant only where
//! the deployment lets them.

use edgegrant::*;
use edgegrant_tests::*;

fn machine_token(sim: &mut Sim) -> String {
    let answer = sim.token_form_answer(
        &[("grant_type", "client_credentials")],
        Some((CONF_APP, CONF_SECRET)),
    );
    let response = answer.response();
    assert_eq!(response.status, 200, "{}", response.body);
    json(response)["access_token"].as_str().unwrap().to_owned()
}

/// A client removed from the configuration takes its tokens for itself with it, as it does
/// the tokens people granted it; one only no longer allowed the grant keeps its live tokens
/// (the grant is how they are got, not what they are) but gets no new one.
#[test]
fn a_clients_own_tokens_end_with_the_client() {
    let mut sim = Sim::new(Config::new(client_credentials_document(&[CONF_APP])).unwrap());
    let token = machine_token(&mut sim);
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("the client's own token does not authorize")
    };
    assert_eq!(principal.subject, Subject::Client);
    assert_eq!(principal.uid, None);
    assert_eq!(principal.app.as_str(), CONF_APP);

    // No longer allowed the grant: the live token still serves; a new one is refused.
    sim.reconfigure(Config::new(client_credentials_document(&[])).unwrap());
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
    let refused = sim.token_form_answer(
        &[("grant_type", "client_credentials")],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(refused.refusal(), Some(&Refusal::GrantNotAllowed));

    // Removed from the configuration: its token ends with it.
    let mut doc = client_credentials_document(&[]);
    doc.apps.retain(|app| app.key.as_str() != CONF_APP);
    sim.reconfigure(Config::new(doc).unwrap());
    assert_eq!(http(sim.api(GET_ACCOUNT, &token)).status, 401);
}

/// The configuration refuses to allow the grant to a client that cannot authenticate (no
/// secret) or that it does not know, or to unannounced clients where there are none, naming
/// the setting.
#[test]
fn only_configured_clients_with_a_secret_may_be_allowed_the_grant() {
    for app in [PKCE_APP, "nobody"] {
        let error = Config::new(client_credentials_document(&[app]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("profile.client_credentials.apps[0]"),
            "{app}: {error}"
        );
    }
    let mut doc = client_credentials_document(&[CONF_APP]);
    if let Profile::Standards(standards) = &mut doc.profile {
        if let Some(grant) = &mut standards.client_credentials {
            grant.access_token_lifetime = Seconds(0);
        }
    }
    let error = Config::new(doc).unwrap_err().to_string();
    assert!(error.contains("access_token_lifetime"), "{error}");
    // Unannounced clients, where none may arrive: named as the mistake it is.
    let mut doc = client_credentials_document(&[CONF_APP]);
    if let Profile::Standards(standards) = &mut doc.profile {
        if let Some(grant) = &mut standards.client_credentials {
            grant.unannounced = true;
        }
    }
    let error = Config::new(doc).unwrap_err().to_string();
    assert!(
        error.contains("profile.client_credentials.unannounced"),
        "{error}"
    );
    // Read from and written to JSON alike.
    let doc = client_credentials_document(&[CONF_APP]);
    let text = serde_json::to_string(&doc).unwrap();
    assert!(
        text.contains(r#""client_credentials":{"apps":["conf-app"],"access_token_lifetime":3600,"unannounced":false}"#),
        "{text}"
    );
    assert_eq!(
        Config::from_json(&text).unwrap().client_credentials(),
        Config::new(doc).unwrap().client_credentials()
    );
}

/// The standards profile taking registrations (RFC 7591) for `account_info.read mcp:tools`,
/// the client credentials grant for no configured app, and for registered clients if
/// `unannounced`.
fn registered_machines(unannounced: bool) -> Sim {
    machines(
        unannounced,
        AttemptLimits::default().per_source,
        |clients| clients.registration = Some(RegistrationPolicy::default()),
    )
}

/// The standards profile taking clients that arrive unannounced for `account_info.read
/// mcp:tools` as `arrive` lets them, the client credentials grant for no configured app and for
/// them if `unannounced`, failed attempts `per_source`.
fn machines(
    unannounced: bool,
    per_source: u32,
    arrive: impl FnOnce(&mut UnannouncedClients),
) -> Sim {
    let mut doc = fixture_document();
    doc.policy.attempts.per_source = per_source;
    let mut standards = Standards::new(Issuer::new("https://auth.example").unwrap());
    let mut clients =
        UnannouncedClients::new(ScopeSet::parse("account_info.read mcp:tools").unwrap());
    arrive(&mut clients);
    standards.clients = Some(clients);
    let mut grant = ClientCredentials::new(Vec::new());
    grant.unannounced = unannounced;
    standards.client_credentials = Some(grant);
    doc.profile = Profile::Standards(standards);
    Sim::new(Config::new(doc).unwrap())
}

fn register(sim: &mut Sim, metadata: serde_json::Value) -> HttpResponse {
    http(sim.http(register_request(&metadata, "192.0.2.7"), None))
}

/// A machine's metadata: the client credentials grant alone, authenticating by `method`.
fn machine(method: &str) -> serde_json::Value {
    serde_json::json!({
        "client_name": "Nightly report",
        "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": method,
    })
}

/// Registered clients get tokens for themselves only where the grant takes unannounced
/// clients, only when they registered it and authenticate (a secret or their keys), within the
/// scopes they registered; deleting the registration (RFC 7592) ends their tokens.
#[test]
fn registered_machines_get_tokens_for_themselves_only_where_the_grant_takes_them() {
    // Off (the default): a machine cannot register; beside the code flow, the grant is left out.
    let mut sim = registered_machines(false);
    let refused = register(&mut sim, machine("client_secret_basic"));
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(oauth_error(&refused), "invalid_client_metadata");
    let person_app = register(
        &mut sim,
        serde_json::json!({
            "redirect_uris": ["https://app.example/cb"],
            "grant_types": ["authorization_code", "client_credentials"],
        }),
    );
    assert_eq!(person_app.status, 201, "{}", person_app.body);
    let person_app = json(&person_app);
    assert_eq!(
        person_app["grant_types"],
        serde_json::json!(["authorization_code"])
    );
    let (id, secret) = (
        person_app["client_id"].as_str().unwrap(),
        person_app["client_secret"].as_str().unwrap(),
    );
    let not_allowed =
        sim.token_form_answer(&[("grant_type", "client_credentials")], Some((id, secret)));
    assert_eq!(not_allowed.refusal(), Some(&Refusal::GrantNotAllowed));

    // On: a machine registers with no redirect URI and no response type; one that cannot
    // authenticate, or names redirect URIs, is refused.
    let mut sim = registered_machines(true);
    let public = register(&mut sim, machine("none"));
    assert_eq!(
        oauth_error(&public),
        "invalid_client_metadata",
        "{}",
        public.body
    );
    let mut redirecting = machine("client_secret_basic");
    redirecting["redirect_uris"] = serde_json::json!(["https://app.example/cb"]);
    assert_eq!(
        oauth_error(&register(&mut sim, redirecting)),
        "invalid_redirect_uri"
    );
    let registered = register(&mut sim, machine("client_secret_basic"));
    assert_eq!(registered.status, 201, "{}", registered.body);
    let registered = json(&registered);
    assert_eq!(
        registered["grant_types"],
        serde_json::json!(["client_credentials"])
    );
    assert_eq!(registered["response_types"], serde_json::json!([]));
    assert_eq!(registered["redirect_uris"], serde_json::json!([]));
    let (id, secret) = (
        registered["client_id"].as_str().unwrap(),
        registered["client_secret"].as_str().unwrap(),
    );
    // No sign-in for it: it has nowhere to be sent back to.
    let authorize = sim.http(
        HttpRequest::new(
            "GET",
            "/oauth2/authorize",
            &format!("client_id={id}&response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256"),
        ),
        None,
    );
    assert_eq!(http(authorize).status, 400);

    // Its token: every scope it registered, or fewer; never another.
    let wider = sim.token_form_answer(
        &[
            ("grant_type", "client_credentials"),
            ("scope", "files.content.read"),
        ],
        Some((id, secret)),
    );
    assert_eq!(oauth_error(wider.response()), "invalid_scope");
    let answer = sim.token_form_answer(&[("grant_type", "client_credentials")], Some((id, secret)));
    let response = answer.response();
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(json(response)["scope"], "account_info.read mcp:tools");
    assert!(json(response).get("refresh_token").is_none());
    let token = json(response)["access_token"].as_str().unwrap().to_owned();
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("the machine's token does not authorize")
    };
    assert_eq!(
        (principal.subject, principal.app.as_str()),
        (Subject::Client, id)
    );

    // By its keys: each assertion once.
    let key = signing_key(5);
    let mut keyed = machine("private_key_jwt");
    keyed["jwks"] = serde_json::json!({ "keys": [public_jwk(&key, "k1")] });
    let keyed = json(&register(&mut sim, keyed));
    let keyed_id = keyed["client_id"].as_str().unwrap();
    let proof = assertion(&key, keyed_id, "https://auth.example", sim.now.0 + 60, "m1");
    let by_key = |sim: &mut Sim| {
        sim.token(
            &[
                ("grant_type", "client_credentials"),
                ("client_id", keyed_id),
                ("client_assertion_type", JWT_BEARER),
                ("client_assertion", &proof),
            ],
            None,
        )
    };
    let first = by_key(&mut sim);
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(oauth_error(&by_key(&mut sim)), "invalid_client");

    // Deleted (RFC 7592 §2.3): its token ends with it.
    let mut delete = HttpRequest::new("DELETE", &format!("/oauth2/register/{id}"), "");
    let registration_token = registered["registration_access_token"].as_str().unwrap();
    delete.headers = vec![(
        "Authorization".into(),
        format!("Bearer {registration_token}"),
    )];
    assert_eq!(http(sim.http(delete, None)).status, 204);
    assert_eq!(http(sim.api(GET_ACCOUNT, &token)).status, 401);
}

const MACHINE_DOCUMENT: &str = "https://machine.example/oauth/client.json";

/// `registered_machines`, but taking metadata documents too (attempts per source: `per_source`).
fn document_machines(unannounced: bool, per_source: u32) -> Sim {
    machines(unannounced, per_source, |clients| {
        clients.documents = Some(DocumentPolicy::default())
    })
}

/// A machine's metadata document at `url`: the client credentials grant, its keys by value.
fn publish_machine(sim: &mut Sim, url: &str, key: &p256::ecdsa::SigningKey) {
    let body = serde_json::json!({
        "client_id": url,
        "client_name": "Nightly report",
        "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks": { "keys": [public_jwk(key, "k1")] },
        "scope": "account_info.read",
    });
    sim.store.web.insert(
        url.to_owned(),
        Ok(Fetched {
            status: 200,
            cache_control: Some("max-age=3600".into()),
            body: body.to_string().into_bytes(),
        }),
    );
}

/// The machine `url` asks for a token with an assertion `jti` signed by `key`, from `source`.
fn document_machine_token(
    sim: &mut Sim,
    url: &str,
    key: &p256::ecdsa::SigningKey,
    jti: &str,
    source: &str,
) -> HttpResponse {
    let proof = assertion(key, url, "https://auth.example", sim.now.0 + 60, jti);
    let mut request = form_request(&[
        ("grant_type", "client_credentials"),
        ("client_id", url),
        ("client_assertion_type", JWT_BEARER),
        ("client_assertion", &proof),
    ]);
    request.source = Some(source.into());
    http(sim.http(request, None))
}

fn fetch_failures(sim: &Sim) -> usize {
    sim.audit
        .iter()
        .filter(|event| matches!(event, AuditEvent::FetchFailed { .. }))
        .count()
}

/// A machine named by a metadata document first arrives at the token endpoint: its document is
/// fetched there (no person signs in for it), only where unannounced clients may use the grant
/// and only for an assertion whose claims hold, kept for its max-age, and each first contact
/// counts against the source as a failure does.
#[test]
fn a_machine_named_by_its_metadata_document_gets_tokens_at_first_contact() {
    let key = signing_key(6);
    let mut sim = document_machines(true, 3);
    publish_machine(&mut sim, MACHINE_DOCUMENT, &key);
    let first = document_machine_token(&mut sim, MACHINE_DOCUMENT, &key, "d1", "192.0.2.9");
    assert_eq!(first.status, 200, "{}", first.body);
    let token = json(&first)["access_token"].as_str().unwrap().to_owned();
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("the machine's token does not authorize")
    };
    assert_eq!(
        (principal.subject, principal.app.as_str()),
        (Subject::Client, MACHINE_DOCUMENT)
    );
    // Kept: the next token within its max-age fetches nothing (the web gone, none fails).
    sim.store.web.clear();
    sim.advance(60);
    let again = document_machine_token(&mut sim, MACHINE_DOCUMENT, &key, "d2", "192.0.2.9");
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(fetch_failures(&sim), 0);

    // Nothing is fetched for an assertion whose claims do not hold (here: expired), nor where
    // unannounced clients may not use the grant.
    let other = "https://other-machine.example/client.json";
    let stale = assertion(&key, other, "https://auth.example", sim.now.0, "d3");
    let mut request = form_request(&[
        ("grant_type", "client_credentials"),
        ("client_id", other),
        ("client_assertion_type", JWT_BEARER),
        ("client_assertion", &stale),
    ]);
    request.source = Some("192.0.2.9".into());
    let refused = http(sim.http(request, None));
    assert_eq!(oauth_error(&refused), "invalid_client");
    assert_eq!(fetch_failures(&sim), 0, "no fetch for a dead assertion");
    let mut closed = document_machines(false, 3);
    let refused = document_machine_token(&mut closed, other, &key, "d4", "192.0.2.9");
    assert_eq!(oauth_error(&refused), "invalid_client");
    assert_eq!(
        fetch_failures(&closed),
        0,
        "no fetch where machines may not arrive"
    );

    // First contacts count against their source: at its limit (3), a fourth document is not
    // fetched, the source told to wait; another source goes on.
    let mut sim = document_machines(true, 3);
    for n in 0..3 {
        let url = format!("https://m{n}.example/client.json");
        publish_machine(&mut sim, &url, &key);
        let ok = document_machine_token(&mut sim, &url, &key, &format!("c{n}"), "192.0.2.9");
        assert_eq!(ok.status, 200, "{}", ok.body);
    }
    let url = "https://m3.example/client.json";
    publish_machine(&mut sim, url, &key);
    let limited = document_machine_token(&mut sim, url, &key, "c3", "192.0.2.9");
    assert_eq!(limited.status, 429, "{}", limited.body);
    let elsewhere = document_machine_token(&mut sim, url, &key, "c4", "198.51.100.4");
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.body);
}
