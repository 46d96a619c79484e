//! Apps, scopes and legacy behaviour (SPEC.md "Scopes", "App kinds", "Versioning" 2–3, "Limits"
//! 1–2, Required Scope per endpoint) and the configuration's validation.

use edgegrant::*;
use edgegrant_tests::*;

const CUTOFF: u64 = 1_633_046_400; // 2021-10-01T00:00:00Z

fn legacy_code_query() -> String {
    query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "code"),
        ("redirect_uri", LEGACY_REDIRECT),
    ])
}

fn exchange_legacy(sim: &mut Sim, code: &str) -> HttpResponse {
    sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", LEGACY_REDIRECT),
        ],
        Some((LEGACY_APP, LEGACY_SECRET)),
    )
}

fn legacy_tokens_at(now: u64) -> (Sim, serde_json::Value) {
    let mut sim = Sim::new(fixture_config());
    sim.now = UnixTime(now);
    let code = sim.code_for(&legacy_code_query(), &alice());
    let response = exchange_legacy(&mut sim, &code);
    assert_eq!(response.status, 200, "{}", response.body);
    let body = json(&response);
    (sim, body)
}

fn is_authorized(sim: &mut Sim, endpoint: &str, token: &str) -> bool {
    matches!(sim.api(endpoint, token), Answer::Serve(_))
}

/// Why an API call with `token` is refused (`None`: it is served).
fn api_refusal(sim: &mut Sim, endpoint: &str, token: &str) -> Option<Refusal> {
    sim.api(endpoint, token).refusal().cloned()
}

fn missing(scope: &str) -> Option<Refusal> {
    Some(Refusal::MissingScope(Scope::new(scope).unwrap()))
}

#[test]
fn before_the_cutoff_a_long_lived_default_gets_a_non_expiring_token() {
    let (mut sim, body) = legacy_tokens_at(CUTOFF - 1);
    assert!(body.get("expires_in").is_none(), "{body}");
    assert!(body.get("refresh_token").is_none());
    let token = body["access_token"].as_str().unwrap().to_owned();
    sim.advance(5 * 365 * 24 * 3600);
    assert!(is_authorized(&mut sim, GET_ACCOUNT, &token));
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!()
    };
    assert_eq!(principal.expires_at, None);
}

#[test]
fn from_the_cutoff_on_every_new_token_is_short_lived() {
    for now in [CUTOFF, CUTOFF + 1] {
        let (mut sim, body) = legacy_tokens_at(now);
        assert_eq!(body["expires_in"], 14400, "at {now}");
        let token = body["access_token"].as_str().unwrap().to_owned();
        sim.advance(14_399);
        assert!(is_authorized(&mut sim, GET_ACCOUNT, &token));
        sim.advance(1);
        assert!(!is_authorized(&mut sim, GET_ACCOUNT, &token));
        assert_eq!(
            api_refusal(&mut sim, GET_ACCOUNT, &token),
            Some(Refusal::AccessTokenExpired)
        );
    }
}

#[test]
fn a_code_issued_before_the_cutoff_but_exchanged_at_it_yields_a_short_lived_token() {
    let mut sim = Sim::new(fixture_config());
    sim.now = UnixTime(CUTOFF - 1);
    let code = sim.code_for(&legacy_code_query(), &alice());
    sim.advance(1);
    assert_eq!(json(&exchange_legacy(&mut sim, &code))["expires_in"], 14400);
}

#[test]
fn explicit_online_before_the_cutoff_is_short_lived() {
    let mut sim = Sim::new(fixture_config());
    sim.now = UnixTime(CUTOFF - 100);
    let q = query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "code"),
        ("redirect_uri", LEGACY_REDIRECT),
        ("token_access_type", "online"),
    ]);
    let code = sim.code_for(&q, &alice());
    assert_eq!(json(&exchange_legacy(&mut sim, &code))["expires_in"], 14400);
}

#[test]
fn legacy_implicit_before_the_cutoff_is_long_lived_too() {
    let mut sim = Sim::new(fixture_config());
    sim.now = UnixTime(CUTOFF - 1);
    let q = query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "token"),
        ("redirect_uri", LEGACY_REDIRECT),
    ]);
    let Outcome::Redirect(location) = sim.consent(&q, &alice(), Decision::Allow).outcome().clone()
    else {
        panic!()
    };
    assert_eq!(fragment_param(&location, "expires_in"), None);
    let token = fragment_param(&location, "access_token").unwrap();
    sim.advance(3 * 365 * 24 * 3600);
    assert!(is_authorized(&mut sim, GET_ACCOUNT, &token));
}

#[test]
fn legacy_tokens_carry_the_scopes_of_their_access_type() {
    let (_, body) = legacy_tokens_at(CUTOFF + 10);
    assert_eq!(body["scope"], USER_SCOPES.join(" "));

    let mut sim = Sim::new(fixture_config());
    let q = query(&[
        ("client_id", TEAM_APP),
        ("response_type", "code"),
        ("redirect_uri", TEAM_REDIRECT),
    ]);
    let code = sim.code_for(&q, &alice());
    let body = json(&sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", TEAM_REDIRECT),
        ],
        Some((TEAM_APP, TEAM_SECRET)),
    ));
    assert_eq!(
        body["scope"],
        "events.read groups.read members.read team_info.read"
    );
    let token = body["access_token"].as_str().unwrap();
    assert!(is_authorized(&mut sim, TEAM_INFO, token));
    assert_eq!(
        api_refusal(&mut sim, GET_ACCOUNT, token),
        missing("account_info.read")
    );
    assert_eq!(http(sim.api(GET_ACCOUNT, token)).status, 403);
}

#[test]
fn migration_pre_selects_scopes_from_the_legacy_access_type() {
    let config = fixture_config();
    let scopes_after = |key: &str| {
        config
            .app(key)
            .unwrap()
            .migrated_to_scopes()
            .unwrap()
            .scopes()
            .to_string()
    };
    let mut user_scopes = USER_SCOPES.to_vec();
    user_scopes.sort_unstable();
    assert_eq!(scopes_after(LEGACY_APP), user_scopes.join(" "));
    assert_eq!(
        scopes_after(TEAM_APP),
        "events.read groups.read members.read team_info.read"
    );
    let migrated = config
        .app(LEGACY_APP)
        .unwrap()
        .migrated_to_scopes()
        .unwrap();
    assert!(matches!(migrated.permissions, Permissions::Scoped { .. }));
    assert_eq!(
        migrated.redirect_uris,
        config.app(LEGACY_APP).unwrap().redirect_uris
    );
    assert_eq!(
        config.app(CONF_APP).unwrap().migrated_to_scopes(),
        Err(ConfigError::AlreadyScoped(AppKey::new(CONF_APP).unwrap()))
    );
}

#[test]
fn migration_does_not_affect_existing_tokens() {
    let (mut sim, body) = legacy_tokens_at(CUTOFF + 10);
    let old = body["access_token"].as_str().unwrap().to_owned();
    // Migrate, then the developer narrows the scopes to account_info.read only.
    let migrated = sim
        .config
        .app(LEGACY_APP)
        .unwrap()
        .migrated_to_scopes()
        .unwrap();
    let config = sim.config.with_app(migrated.clone()).unwrap();
    sim.reconfigure(config);
    let narrowed = App {
        permissions: Permissions::Scoped {
            scopes: ScopeSet::parse("account_info.read").unwrap(),
        },
        ..migrated
    };
    let config = sim.config.with_app(narrowed).unwrap();
    sim.reconfigure(config);

    // The old token keeps exactly its scopes.
    assert!(is_authorized(&mut sim, UPLOAD, &old));
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &old) else {
        panic!()
    };
    assert_eq!(principal.scopes.to_string(), USER_SCOPES.join(" "));
    // New authorizations get only the new scopes; asking for a removed one is invalid_scope.
    let code = sim.code_for(&legacy_code_query(), &bob());
    let new = json(&exchange_legacy(&mut sim, &code));
    assert_eq!(new["scope"], "account_info.read");
    let refused = sim.api(UPLOAD, new["access_token"].as_str().unwrap());
    assert_eq!(refused.refusal(), missing("files.content.write").as_ref());
    assert_eq!(http(refused).status, 403);
    let q = query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "code"),
        ("redirect_uri", LEGACY_REDIRECT),
        ("scope", "files.content.write"),
    ]);
    let refused = sim.authorize(&q, Some(&alice()));
    assert_eq!(refused.refusal(), Some(&Refusal::ScopeNotEnabled));
    assert_eq!(refused.response().status, 302);
    let location = refused.response().header("Location").unwrap();
    assert!(location.starts_with(LEGACY_REDIRECT), "{location}");
    assert_eq!(
        redirect_param(location, "error").as_deref(),
        Some("invalid_scope")
    );
}

#[test]
fn a_missing_required_scope_is_insufficient_scope() {
    let mut sim = Sim::new(fixture_config());
    let q = query(&[
        ("client_id", CONF_APP),
        ("response_type", "code"),
        ("redirect_uri", CONF_REDIRECT),
        ("scope", "files.content.read"),
    ]);
    let code = sim.code_for(&q, &alice());
    let token = json(&sim.exchange_confidential(&code))["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = sim.api(GET_ACCOUNT, &token);
    assert_eq!(answer.refusal(), missing("account_info.read").as_ref());
    let response = http(answer);
    assert_eq!(response.status, 403);
    assert!(response
        .header("WWW-Authenticate")
        .unwrap()
        .contains("error=\"insufficient_scope\""));
    let body = json(&response);
    assert_eq!(body["error"][".tag"], "missing_scope");
    assert_eq!(body["error"]["required_scope"], "account_info.read");
    assert_eq!(body["error_summary"], "missing_scope/..");
}

#[test]
fn config_validation_refuses_unusable_configurations() {
    let refuses = |edit: &dyn Fn(&mut ConfigDocument), expected: &dyn Fn(&ConfigError) -> bool| {
        let mut doc = fixture_document();
        edit(&mut doc);
        let error = Config::new(doc).expect_err("must be refused");
        assert!(expected(&error), "{error}");
    };
    refuses(&|d| d.policy.code_ttl = Seconds(0), &|e| {
        matches!(e, ConfigError::CodeTtl(0))
    });
    refuses(&|d| d.policy.code_ttl = Seconds(601), &|e| {
        matches!(e, ConfigError::CodeTtl(601))
    });
    refuses(&|d| d.policy.access_token_ttl = Seconds(0), &|e| {
        *e == ConfigError::AccessTokenTtl
    });
    refuses(&|d| d.policy.max_input_bytes = 10, &|e| {
        *e == ConfigError::InputLimit
    });
    refuses(&|d| d.apps.push(d.apps[0].clone()), &|e| {
        matches!(e, ConfigError::DuplicateApp(_))
    });
    refuses(
        &|d| {
            d.apps[0].permissions = Permissions::Scoped {
                scopes: ScopeSet::default(),
            }
        },
        &|e| matches!(e, ConfigError::NoScopes(_)),
    );
    refuses(
        &|d| {
            d.api_endpoints.insert(
                "/users/get".into(),
                Scope::new("account_info.read").unwrap().into(),
            );
        },
        &|e| matches!(e, ConfigError::EndpointPath(_)),
    );
    // Redirect URIs (RFC 9700 §2.6, RFC 8252 §7.3): https, or http on the loopback interface
    // only unless the policy allows it; never user information before the host.
    let with_redirect = |uri: &str, allow_http: bool| {
        let mut doc = fixture_document();
        doc.apps[0].redirect_uris = vec![RedirectUri::new(uri).unwrap()];
        doc.policy.allow_http_redirect_uris = allow_http;
        Config::new(doc)
    };
    for refused in [
        "http://app.example/cb",
        "http://10.0.0.1:8080/cb",
        "https://user@app.example/cb",
        "http://evil.example@127.0.0.1/cb",
        "https:app.example/cb",
        "https://app.example:99999/cb",
    ] {
        assert!(
            matches!(
                with_redirect(refused, false),
                Err(ConfigError::RedirectUri { .. })
            ),
            "{refused}"
        );
    }
    for accepted in [
        "https://app.example/cb",
        "http://127.0.0.1:8788/cb",
        "http://[::1]/cb",
        "http://localhost:3000/cb",
        "com.example.app:/oauth",
    ] {
        assert!(with_redirect(accepted, false).is_ok(), "{accepted}");
    }
    assert!(with_redirect("http://app.example/cb", true).is_ok());
    assert!(with_redirect("https://user@app.example/cb", true).is_err());
    // Identifiers are validated when parsed.
    assert!(AppKey::new("has:colon").is_err());
    assert!(RedirectUri::new("https://x.example/cb#frag").is_err());
    assert!(RedirectUri::new("/relative").is_err());
    assert!(RedirectUri::new("com.example.app:/oauth").is_ok());
}

#[test]
fn a_configured_code_ttl_is_exact() {
    for (after, works) in [(59, true), (60, false), (61, false)] {
        let mut doc = fixture_document();
        doc.policy.code_ttl = Seconds(60);
        let mut sim = Sim::new(Config::new(doc).unwrap());
        let code = sim.code_for(&conf_query("online", "s"), &alice());
        sim.advance(after);
        let answer = sim.token_answer(form_request(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", CONF_APP),
            ("client_secret", CONF_SECRET),
            ("redirect_uri", CONF_REDIRECT),
        ]));
        assert_eq!(answer.response().status == 200, works, "at +{after}");
        let expected = (!works).then_some(Refusal::CodeExpired);
        assert_eq!(answer.refusal(), expected.as_ref(), "at +{after}");
    }
}

#[test]
fn a_configured_access_token_ttl_is_exact() {
    let mut doc = fixture_document();
    doc.policy.access_token_ttl = Seconds(300);
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let body = sim.pkce_offline_tokens(&alice());
    assert_eq!(body["expires_in"], 300);
    let token = body["access_token"].as_str().unwrap().to_owned();
    sim.advance(299);
    assert!(is_authorized(&mut sim, GET_ACCOUNT, &token));
    sim.advance(1);
    assert!(!is_authorized(&mut sim, GET_ACCOUNT, &token));
    assert_eq!(
        api_refusal(&mut sim, GET_ACCOUNT, &token),
        Some(Refusal::AccessTokenExpired)
    );
}

#[test]
fn config_round_trips_through_json() {
    let text = serde_json::to_string(&fixture_document()).unwrap();
    let config: Config = serde_json::from_str(&text).unwrap();
    assert_eq!(config.apps().count(), 4);
    assert_eq!(
        config.required_scope(GET_ACCOUNT).unwrap().as_str(),
        "account_info.read"
    );
    assert_eq!(config.policy(), &Policy::default());
    // And a broken document is refused, not accepted half-way.
    let broken = text.replace("\"code_ttl\":600", "\"code_ttl\":6000");
    assert!(serde_json::from_str::<Config>(&broken).is_err());
    let bad_scope = text.replace("account_info.read", "Account Info");
    assert!(serde_json::from_str::<Config>(&bad_scope).is_err());
}

#[test]
fn config_json_is_read_back_as_written_and_errors_name_the_field() {
    let mut document = fixture_document();
    document.policy.code_ttl = Seconds(300);
    document.policy.max_attempts = 2;
    document.pages.code = Some("<p {{page_data}}>{{code}}</p>".into());
    let value = document.to_json_value();
    let read = ConfigDocument::from_json_value(&value).unwrap();
    assert_eq!(read.apps, document.apps);
    assert_eq!(read.policy, document.policy);
    assert_eq!(read.api_endpoints, document.api_endpoints);
    assert_eq!(read.pages, document.pages);
    assert_eq!(
        ConfigDocument::from_json(&value.to_string()).unwrap().apps,
        document.apps
    );

    let refused = |text: &str| Config::from_json(text).unwrap_err().to_string();
    assert_eq!(
        refused("{\"apps\": ["),
        "not JSON: it ends early at line 1, column 10"
    );
    assert_eq!(
        refused("{\n  \"apps\": ]"),
        "not JSON: a syntax error at line 2, column 11"
    );
    assert_eq!(refused("[]"), "the configuration: expected an object");
    assert_eq!(refused("{}"), "apps: is missing");
    assert_eq!(
        refused(r#"{"apps": [{"key": "bad key!", "name": "x"}]}"#),
        "apps[0].key: invalid app key: only A-Z a-z 0-9 - . _ are allowed, or an https URL \
         naming a client metadata document"
    );
    assert_eq!(
        refused(r#"{"apps": [{"key": "a", "name": "x"}]}"#),
        "apps[0].permissions: is missing"
    );
    assert_eq!(
        refused(
            r#"{"apps": [{"key": "a", "name": "x", "redirect_uris": ["https://a.example/", 7],
                "permissions": {"kind": "scoped", "scopes": ["a.b"]}}]}"#
        ),
        "apps[0].redirect_uris[1]: expected a string"
    );
    assert_eq!(
        refused(r#"{"apps": [{"key": "a", "name": "x", "permissions": {"kind": "legacy", "access": "all"}}]}"#),
        "apps[0].permissions.access: expected app_folder, full_dropbox, team_information or team_auditing"
    );
    assert_eq!(
        refused(
            r#"{"apps": [{"key": "a", "name": "x", "secret_digest": "short", "permissions": {"kind": "scoped", "scopes": ["a.b"]}}]}"#
        ),
        "apps[0].secret_digest: expected 32 bytes in URL-safe base64"
    );
    assert_eq!(
        refused(r#"{"apps": [], "policy": {"code_ttl": 1.5}}"#),
        "policy.code_ttl: expected a whole number, 0 or more"
    );
    assert_eq!(
        refused(r#"{"apps": [], "policy": {"max_attempts": 4294967296}}"#),
        "policy.max_attempts: is too large"
    );
    assert_eq!(
        refused(r#"{"apps": [], "policy": {"code_ttl": 0}}"#),
        "code_ttl must be 1..=600 seconds, got 0"
    );
    assert_eq!(
        refused(r#"{"apps": [], "api_endpoints": {"/2/x": "Nope"}}"#),
        "api_endpoints[\"/2/x\"]: must be <area>.<permission> in a-z 0-9 _ (the reference \
         profile's form; the standards profile takes any RFC 6749 scope)"
    );
    assert_eq!(
        refused(r#"{"apps": [], "pages": {"error": false}}"#),
        "pages.error: expected a string"
    );
    // `null` is "none" where a field is optional, an error where it is not.
    let keyed = format!(
        r#"{{"apps": [], "pages": {{"code": null}}, "server_key": "{FIXTURE_SERVER_KEY}"}}"#
    );
    assert!(Config::from_json(&keyed).is_ok());
    // Every deployment has its own key: partitions and credentials are derived under it.
    assert_eq!(
        refused(r#"{"apps": [], "pages": {"code": null}}"#),
        "server_key: is missing: partitions and credentials are derived under it (32 random bytes, base64url; keep it out of the store and the logs)"
    );
    assert_eq!(
        refused(r#"{"apps": [], "policy": null}"#),
        "policy: expected an object"
    );
    // A setting the document does not know is refused by its path, with what its object
    // takes: a misspelling is never left silently at its default.
    assert_eq!(
        refused(r#"{"apps": [], "api_endpoint": {}}"#),
        "api_endpoint: is not a setting here (expected apps, policy, api_endpoints, pages, \
         profile, server_key, scope_descriptions)"
    );
    assert_eq!(
        refused(r#"{"apps": [], "pages": {"signin": "<p>"}}"#),
        "pages.signin: is not a setting here (expected consent, code, error, sign_in)"
    );
    assert_eq!(
        refused(
            r#"{"apps": [{"key": "a", "name": "x", "redirect_uri": ["https://a.example/"],
                "permissions": {"kind": "scoped", "scopes": ["a.b"]}}]}"#
        ),
        "apps[0].redirect_uri: is not a setting here (expected key, name, secret_digest, \
         redirect_uris, permissions, default_token_type, implicit_allowed)"
    );
    assert_eq!(
        refused(
            r#"{"apps": [{"key": "a", "name": "x", "permissions": {"kind": "scoped", "scopes": ["a.b"], "access": "app_folder"}}]}"#
        ),
        "apps[0].permissions.access: is not a setting here (expected kind, scopes)"
    );
    assert_eq!(
        refused(r#"{"apps": [], "policy": {"attempts": {"per_ip": 3}}}"#),
        "policy.attempts.per_ip: is not a setting here (expected window, per_source, per_account)"
    );
    assert_eq!(
        refused(r#"{"apps": [], "profile": {"kind": "reference", "issuer": "https://a.example"}}"#),
        "profile.issuer: is not a setting here (expected kind)"
    );
    assert_eq!(
        refused(
            r#"{"apps": [], "profile": {"kind": "standards", "issuer": "https://a.example", "rotation": {"window": 5}}}"#
        ),
        "profile.rotation.window: is not a setting here (expected clients, retry_window, \
         reuse_detection)"
    );
}

#[test]
fn audit_events_and_documents_are_written_in_declaration_order() {
    let app = AppKey::new("app").unwrap();
    let account_id = AccountId::new("dbid:1").unwrap();
    let issued = AuditEvent::CodeIssued {
        app: app.clone(),
        account_id: account_id.clone(),
        scopes: ScopeSet::parse("files.content.read account_info.read").unwrap(),
        access_type: TokenAccessType::Offline,
        pkce: None,
        expires_at: UnixTime(600),
    };
    assert_eq!(
        serde_json::to_string(&issued).unwrap(),
        r#"{"event":"code_issued","app":"app","account_id":"dbid:1","scopes":["account_info.read","files.content.read"],"access_type":"offline","pkce":null,"expires_at":600}"#
    );
    let unlinked = AuditEvent::Unlinked {
        app,
        account_id,
        by: Unlinker::TeamAdmin,
    };
    assert_eq!(
        serde_json::to_string(&unlinked).unwrap(),
        r#"{"event":"unlinked","app":"app","account_id":"dbid:1","by":"team_admin"}"#
    );
    assert_eq!(unlinked.to_json_value()["by"], "team_admin");

    let text = serde_json::to_string(&fixture_document()).unwrap();
    assert!(text.starts_with(r#"{"apps":[{"key":"#), "{text}");
    assert!(
        text.contains(r#""policy":{"code_ttl":600,"access_token_ttl":14400,"#),
        "{text}"
    );
    assert!(
        text.ends_with(
            r#""pages":{"consent":null,"code":null,"error":null,"sign_in":null},"profile":{"kind":"reference"},"server_key":"dGVzdHMtZml4dHVyZS1zZXJ2ZXIta2V5LTMyYnl0ZXM"}"#
        ),
        "{text}"
    );
}
