//! The standards profile (issue 17), beside SPEC.md's reference profile: authorization server
//! metadata computed from the configuration (RFC 8414) and the issuer on every authorization
//! response (RFC 9207). The reference profile serves neither, exactly as before.

use edgegrant::*;
use edgegrant_tests::*;
use serde_json::{json, Value};

const ISSUER: &str = "https://auth.example";
const WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";

fn standards(issuer: &str) -> Sim {
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new(issuer).unwrap(),
        resources: Vec::new(),
        rotation: Rotation::default(),
        resource_servers: Vec::new(),
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    Sim::new(Config::new(doc).unwrap())
}

fn get(sim: &mut Sim, method: &str, path: &str) -> HttpResponse {
    http(sim.http(HttpRequest::new(method, path, ""), None))
}

fn header<'a>(response: &'a HttpResponse, name: &str) -> Option<&'a str> {
    response.header(name)
}

#[test]
fn the_metadata_document_is_computed_from_the_configuration() {
    let mut sim = standards(ISSUER);
    let response = get(&mut sim, "GET", WELL_KNOWN);
    assert_eq!(response.status, 200);
    assert_eq!(header(&response, "Content-Type"), Some("application/json"));
    assert_eq!(header(&response, "Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(
        header(&response, "Cache-Control"),
        Some("public, max-age=3600")
    );
    let doc: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(
        doc,
        json!({
            "issuer": ISSUER,
            "authorization_endpoint": "https://auth.example/oauth2/authorize",
            "token_endpoint": "https://auth.example/oauth2/token",
            // Every scope some app may be granted (the legacy apps' through their access type),
            // and offline_access, which any app may ask for.
            "scopes_supported": [
                "account_info.read", "contacts.write", "events.read", "file_requests.read",
                "file_requests.write", "files.content.read", "files.content.write",
                "files.metadata.read", "files.metadata.write", "groups.read", "members.read",
                "offline_access", "sharing.read", "sharing.write", "team_info.read",
            ],
            // The fixture's legacy app may use the implicit grant.
            "response_types_supported": ["code", "token"],
            "response_modes_supported": ["query", "fragment"],
            "grant_types_supported": ["authorization_code", "refresh_token", "implicit"],
            // OAuth 2.1: S256 alone, whatever policy.require_s256 says.
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "revocation_endpoint": "https://auth.example/oauth2/revoke",
            "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "introspection_endpoint": "https://auth.example/oauth2/introspect",
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "authorization_response_iss_parameter_supported": true,
        })
    );
    assert!(sim.store.is_empty(), "nothing read, nothing written");
}

#[test]
fn the_metadata_follows_the_policy_and_the_apps() {
    let mut doc = fixture_document();
    doc.apps.retain(|app| !app.implicit_allowed);
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new(ISSUER).unwrap(),
        resources: Vec::new(),
        rotation: Rotation::default(),
        resource_servers: Vec::new(),
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let doc: Value = serde_json::from_str(&get(&mut sim, "GET", WELL_KNOWN).body).unwrap();
    assert_eq!(doc["response_types_supported"], json!(["code"]));
    assert_eq!(
        doc["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
}

/// Scope names: any RFC 6749 scope token in the standards profile, SPEC.md's dotted form in the
/// reference profile; `offline_access` is never configured; a refresh token on every code flow
/// is a standards-profile setting. (The vectors of `standard-clients.json` pin the requests.)
#[test]
fn configured_scope_names_follow_the_profile() {
    let read = |profile: Value, app_scopes: Value, endpoint_scope: &str, token_type: &str| {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] = profile;
        doc["apps"] = json!([{
            "key": "mcp-app", "name": "MCP", "redirect_uris": ["http://127.0.0.1:1/cb"],
            "permissions": {"kind": "scoped", "scopes": app_scopes},
            "default_token_type": token_type,
        }]);
        doc["api_endpoints"] = json!({ "/2/tools/call": endpoint_scope });
        Config::from_json(&doc.to_string())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let standards = json!({"kind": "standards", "issuer": ISSUER});
    let reference = json!({"kind": "reference"});
    let mcp = json!(["mcp:tools", "https://mcp.example/read"]);
    assert_eq!(
        read(standards.clone(), mcp.clone(), "mcp:tools", "offline"),
        Ok(())
    );
    let refused = |result: Result<(), String>, why: &str| {
        let error = result.unwrap_err();
        assert!(error.contains(why), "{error}");
    };
    refused(
        read(reference.clone(), mcp, "account_info.read", "short_lived"),
        "apps[0].permissions.scopes: must be <area>.<permission>",
    );
    refused(
        read(
            reference.clone(),
            json!(["a.b"]),
            "mcp:tools",
            "short_lived",
        ),
        "api_endpoints[\"/2/tools/call\"]: must be <area>.<permission>",
    );
    refused(
        read(reference, json!(["a.b"]), "a.b", "offline"),
        "apps[0].default_token_type: offline needs the standards profile",
    );
    refused(
        read(
            standards.clone(),
            json!(["a.b", "offline_access"]),
            "a.b",
            "short_lived",
        ),
        "apps[0].permissions.scopes: offline_access is not configured",
    );
    refused(
        read(
            standards.clone(),
            json!(["a.b"]),
            "offline_access",
            "short_lived",
        ),
        "offline_access is not configured",
    );
    refused(
        read(standards, json!(["a \"b\""]), "a.b", "short_lived"),
        "apps[0].permissions.scopes[0]: invalid scope",
    );
}

#[test]
fn the_metadata_path_carries_the_issuers_path_and_other_methods_are_refused() {
    // RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path.
    let mut sim = standards("https://auth.example/tenant/");
    assert_eq!(get(&mut sim, "GET", WELL_KNOWN).status, 404);
    let response = get(&mut sim, "GET", &format!("{WELL_KNOWN}/tenant"));
    assert_eq!(response.status, 200);
    let doc: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(doc["issuer"], "https://auth.example/tenant/");
    assert_eq!(doc["token_endpoint"], "https://auth.example/oauth2/token");

    let post = get(&mut sim, "POST", &format!("{WELL_KNOWN}/tenant"));
    assert_eq!(post.status, 405);
    assert_eq!(header(&post, "Allow"), Some("GET, OPTIONS"));
    // A browser-based client sending a header of its own asks first.
    let preflight = get(&mut sim, "OPTIONS", &format!("{WELL_KNOWN}/tenant"));
    assert_eq!(preflight.status, 204);
    assert_eq!(header(&preflight, "Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(
        header(&preflight, "Access-Control-Allow-Methods"),
        Some("GET")
    );
}

#[test]
fn the_reference_profile_serves_no_metadata_and_names_no_issuer() {
    let mut sim = Sim::new(fixture_config());
    let response = get(&mut sim, "GET", WELL_KNOWN);
    assert_eq!(response.status, 404);
    let code_location = match sim
        .consent(&pkce_offline_query("s"), &alice(), Decision::Allow)
        .outcome()
    {
        Outcome::Redirect(location) => location.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(redirect_param(&code_location, "iss"), None);
}

#[test]
fn every_authorization_response_names_the_issuer() {
    let mut sim = standards(ISSUER);
    // A code, in the query, after the state.
    let Outcome::Redirect(location) = sim
        .consent(&pkce_offline_query("s1"), &alice(), Decision::Allow)
        .outcome()
        .clone()
    else {
        panic!("no redirect")
    };
    assert!(
        location.ends_with("&state=s1&iss=https%3A%2F%2Fauth.example"),
        "{location}"
    );
    assert_eq!(redirect_param(&location, "iss").as_deref(), Some(ISSUER));
    // An error, in the query: the user said no.
    let denied = http(sim.http(
        consent_form(&pkce_offline_query("s2"), Decision::Deny),
        Some(&alice()),
    ));
    let location = denied.header("Location").unwrap().to_owned();
    assert_eq!(
        redirect_param(&location, "error").as_deref(),
        Some("access_denied")
    );
    assert_eq!(redirect_param(&location, "iss").as_deref(), Some(ISSUER));
    // An error decided from the request alone (an unknown scope), before any consent.
    let bad_scope = format!("{}&scope=no.such.scope", pkce_offline_query("s3"));
    let refused = http(sim.authorize(&bad_scope, Some(&alice())));
    let location = refused.header("Location").unwrap().to_owned();
    assert_eq!(
        redirect_param(&location, "error").as_deref(),
        Some("invalid_scope")
    );
    assert_eq!(redirect_param(&location, "iss").as_deref(), Some(ISSUER));
    // A legacy implicit token, in the fragment.
    sim.now = UnixTime(1_600_000_000);
    let implicit = query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "token"),
        ("redirect_uri", LEGACY_REDIRECT),
    ]);
    let Outcome::Redirect(location) = sim
        .consent(&implicit, &alice(), Decision::Allow)
        .outcome()
        .clone()
    else {
        panic!("no redirect")
    };
    assert!(fragment_param(&location, "access_token").is_some());
    assert_eq!(fragment_param(&location, "iss").as_deref(), Some(ISSUER));
}

#[test]
fn the_issuer_is_checked_when_the_configuration_is_read() {
    let with = |profile: Value| {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] = profile;
        ConfigDocument::from_json_value(&doc).map(|doc| doc.profile)
    };
    assert_eq!(with(json!({"kind": "reference"})), Ok(Profile::Reference));
    assert_eq!(
        with(json!({"kind": "standards", "issuer": "http://127.0.0.1:8787"})),
        Ok(Profile::Standards(Standards {
            issuer: Issuer::new("http://127.0.0.1:8787").unwrap(),
            resources: Vec::new(),
            rotation: Rotation::default(),
            resource_servers: Vec::new(),
            clients: None,
            client_credentials: None,
            token_exchange: None,
            identity_assertions: None,
            dpop: None,
        }))
    );
    for (profile, why) in [
        (json!({"kind": "standards"}), "profile.issuer: is missing"),
        (
            json!({"kind": "other"}),
            "profile.kind: expected reference or standards",
        ),
        (
            json!({"kind": "standards", "issuer": "http://auth.example"}),
            "must use https",
        ),
        (
            json!({"kind": "standards", "issuer": "https://auth.example/?a=1"}),
            "no query or fragment",
        ),
        (
            json!({"kind": "standards", "issuer": "https://auth.example/#x"}),
            "no query or fragment",
        ),
        (
            json!({"kind": "standards", "issuer": "https://me@auth.example"}),
            "user information",
        ),
        (
            json!({"kind": "standards", "issuer": "auth.example"}),
            "must be an https URL",
        ),
        (
            json!({"kind": "standards", "issuer": "https://auth.example/a b"}),
            "visible ASCII",
        ),
    ] {
        let error = with(profile.clone()).unwrap_err().to_string();
        assert!(error.contains(why), "{profile}: {error}");
    }
    // And the document round-trips with its profile.
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new(ISSUER).unwrap(),
        resources: Vec::new(),
        rotation: Rotation::default(),
        resource_servers: Vec::new(),
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    let again = ConfigDocument::from_json_value(&doc.to_json_value()).unwrap();
    assert_eq!(again.profile, doc.profile);
}

#[test]
fn a_consent_form_from_the_same_host_on_the_other_scheme_is_another_sites() {
    // A browser that sends Origin but not Sec-Fetch-Site: the host matches, the scheme decides.
    let posted_from = |origin: &str, scheme: Option<&str>| {
        let mut form = consent_form(&conf_query("online", "x"), Decision::Allow);
        form.headers.retain(|(name, _)| name != "Sec-Fetch-Site");
        form.headers.push(("Host".into(), "auth.example".into()));
        form.headers.push(("Origin".into(), origin.into()));
        form.scheme = scheme.map(str::to_owned);
        form
    };
    let cross_site = |sim: &mut Sim, form: HttpRequest| {
        sim.http(form, Some(&alice())).refusal() == Some(&Refusal::CrossSiteConsent)
    };
    // The issuer (https) names the scheme, whatever the host reports.
    let mut sim = standards(ISSUER);
    assert!(cross_site(
        &mut sim,
        posted_from("http://auth.example", None)
    ));
    assert!(cross_site(
        &mut sim,
        posted_from("http://auth.example", Some("http"))
    ));
    assert!(!cross_site(
        &mut sim,
        posted_from("https://auth.example", None)
    ));
    // Without an issuer, the scheme the host reports; unknown, the host alone decides.
    let mut sim = Sim::new(fixture_config());
    assert!(cross_site(
        &mut sim,
        posted_from("http://auth.example", Some("https"))
    ));
    assert!(cross_site(
        &mut sim,
        posted_from("https://auth.example", Some("http"))
    ));
    assert!(!cross_site(
        &mut sim,
        posted_from("https://auth.example", Some("https"))
    ));
    assert!(!cross_site(
        &mut sim,
        posted_from("http://auth.example", None)
    ));
}

// ---- RFC 7009 revocation and RFC 7662 introspection ------------------------------------------

#[test]
fn revoking_either_token_ends_the_grant_and_unknown_tokens_get_200() {
    let mut sim = standards(ISSUER);
    // A public client revokes by its client_id: the refresh token ends the whole grant.
    let tokens = sim.pkce_offline_tokens(&alice());
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let revoked = sim.post_form(
        "/oauth2/revoke",
        &[
            ("token", &refresh),
            ("token_type_hint", "refresh_token"),
            ("client_id", PKCE_APP),
        ],
        None,
    );
    assert_eq!((revoked.status, revoked.body.as_str()), (200, ""));
    assert_eq!(
        http(sim.api(GET_ACCOUNT, &access)).status,
        401,
        "the grant's access token ended too"
    );
    assert_eq!(
        oauth_error(&sim.refresh(&refresh, PKCE_APP, None)),
        "invalid_grant"
    );
    // Again, and with tokens that are unknown or not of the core's shape: the same 200, no write.
    for token in [
        refresh.as_str(),
        "sl.AAAAAAAAAAAAAAAA.nothing",
        "garbage",
        &access,
    ] {
        let before = sim.store.clone();
        let again = sim.post_form(
            "/oauth2/revoke",
            &[
                ("token", token),
                ("client_id", PKCE_APP),
                ("token_type_hint", "no_such_hint"),
            ],
            None,
        );
        assert_eq!(again.status, 200, "{token}");
        assert_eq!(sim.store, before, "{token}: nothing written");
    }
    // A confidential client revokes with its secret, by its access token: the refresh token ends too.
    let code = sim.code_for(&conf_query("offline", "s"), &alice());
    let tokens = json(&sim.exchange_confidential(&code));
    let (access, refresh) = (
        tokens["access_token"].as_str().unwrap().to_owned(),
        tokens["refresh_token"].as_str().unwrap().to_owned(),
    );
    let revoked = sim.post_form(
        "/oauth2/revoke",
        &[("token", &access)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(revoked.status, 200);
    assert_eq!(
        oauth_error(&sim.refresh(&refresh, CONF_APP, Some(CONF_SECRET))),
        "invalid_grant"
    );
}

#[test]
fn revocation_authenticates_the_client_and_refuses_another_apps_token() {
    let mut sim = standards(ISSUER);
    let tokens = sim.pkce_offline_tokens(&alice());
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    // Another (confidential) app, properly authenticated, cannot revoke it.
    let other = sim.post_form(
        "/oauth2/revoke",
        &[("token", &refresh)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(
        (other.status, oauth_error(&other).as_str()),
        (400, "invalid_grant")
    );
    // A confidential app must send its secret; a wrong one is invalid_client (401 with Basic).
    let no_secret = sim.post_form(
        "/oauth2/revoke",
        &[("token", &refresh), ("client_id", CONF_APP)],
        None,
    );
    assert_eq!(oauth_error(&no_secret), "invalid_client");
    let wrong = sim.post_form(
        "/oauth2/revoke",
        &[("token", &refresh)],
        Some((CONF_APP, "wrong")),
    );
    assert_eq!(
        (wrong.status, oauth_error(&wrong).as_str()),
        (401, "invalid_client")
    );
    let missing = sim.post_form("/oauth2/revoke", &[("client_id", PKCE_APP)], None);
    assert_eq!(oauth_error(&missing), "invalid_request");
    // Still alive after all that.
    assert_eq!(
        json(&sim.refresh(&refresh, PKCE_APP, None))["token_type"],
        "bearer"
    );
    // And in the reference profile there is no such endpoint.
    let mut reference = Sim::new(fixture_config());
    let tokens = reference.pkce_offline_tokens(&alice());
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let none = reference.post_form(
        "/oauth2/revoke",
        &[("token", &refresh), ("client_id", PKCE_APP)],
        None,
    );
    assert_eq!(none.status, 404);
}

#[test]
fn introspection_says_what_a_live_token_carries_and_nothing_else() {
    let mut sim = standards(ISSUER);
    let code = sim.code_for(&conf_query("offline", "i"), &alice());
    let tokens = json(&sim.exchange_confidential(&code));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let expires_at = sim.now.0 + 14_400;
    assert_eq!(
        sim.introspect(&access),
        json!({
            "active": true,
            "client_id": CONF_APP,
            "exp": expires_at,
            "iss": ISSUER,
            "scope": "account_info.read files.content.read files.content.write",
            "sub": alice().account_id.as_str(),
            "token_type": "bearer",
        })
    );
    assert_eq!(
        sim.introspect(&refresh),
        json!({
            "active": true,
            "client_id": CONF_APP,
            "iss": ISSUER,
            "scope": "account_info.read files.content.read files.content.write",
            "sub": alice().account_id.as_str(),
        })
    );
    // RFC 7662 §4: another confidential app learns nothing of them, not even that they live.
    for token in [&access, &refresh] {
        let asked = sim.post_form(
            "/oauth2/introspect",
            &[("token", token)],
            Some((TEAM_APP, TEAM_SECRET)),
        );
        assert_eq!(asked.body, r#"{"active":false}"#);
    }
    // Expired at its expiry (not a second before), and then inactive with nothing else said.
    sim.now = UnixTime(expires_at - 1);
    assert_eq!(sim.introspect(&access)["active"], true);
    sim.now = UnixTime(expires_at);
    assert_eq!(sim.introspect(&access), json!({"active": false}));
    assert_eq!(
        sim.introspect(&refresh)["active"],
        true,
        "the refresh token does not expire"
    );
    for token in [
        "garbage",
        "sl.AAAAAAAAAAAAAAAA.nothing",
        "AAAAAAAAAAAAAAAA.x",
    ] {
        assert_eq!(sim.introspect(token), json!({"active": false}), "{token:?}");
    }
    let empty = sim.post_form(
        "/oauth2/introspect",
        &[("token", "")],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(
        (empty.status, oauth_error(&empty).as_str()),
        (400, "invalid_request")
    );
    // Revoked: inactive.
    let revoked = sim.post_form(
        "/oauth2/revoke",
        &[("token", &refresh)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(revoked.status, 200);
    assert_eq!(sim.introspect(&refresh), json!({"active": false}));
}

#[test]
fn introspection_takes_a_confidential_client_with_its_secret() {
    let mut sim = standards(ISSUER);
    let tokens = sim.pkce_offline_tokens(&alice());
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let public = sim.post_form(
        "/oauth2/introspect",
        &[("token", &access), ("client_id", PKCE_APP)],
        None,
    );
    assert_eq!(oauth_error(&public), "invalid_client");
    let wrong = sim.post_form(
        "/oauth2/introspect",
        &[("token", &access)],
        Some((CONF_APP, "wrong")),
    );
    assert_eq!(
        (wrong.status, oauth_error(&wrong).as_str()),
        (401, "invalid_client")
    );
    let get = http(sim.http(HttpRequest::new("GET", "/oauth2/introspect", ""), None));
    assert_eq!(get.status, 405);
}

#[test]
fn resource_servers_are_confidential_apps_serving_known_resources() {
    let with = |servers: Value| {
        let mut doc = fixture_document().to_json_value();
        doc["profile"] = json!({
            "kind": "standards",
            "issuer": ISSUER,
            "resources": ["https://mcp.example/mcp"],
            "resource_servers": servers,
        });
        ConfigDocument::from_json_value(&doc).and_then(Config::new)
    };
    let good = json!([{"app": CONF_APP, "resources": ["HTTPS://mcp.example:443/mcp", ISSUER]}]);
    let config = with(good).unwrap();
    let conf = AppKey::new(CONF_APP).unwrap();
    assert!(config.serves(&conf, "https://mcp.example/mcp"), "canonical");
    assert!(config.serves(&conf, "https://auth.example"));
    assert!(!config.serves(&AppKey::new(TEAM_APP).unwrap(), "https://mcp.example/mcp"));
    // The JSON form round-trips.
    let again = Config::new(
        ConfigDocument::from_json_value(&ConfigDocument::from(config.clone()).to_json_value())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(again.profile(), config.profile());
    for (servers, why) in [
        (
            json!([{"app": "nobody", "resources": [ISSUER]}]),
            "a registered app with a secret",
        ),
        (
            json!([{"app": PKCE_APP, "resources": [ISSUER]}]),
            "a registered app with a secret",
        ),
        (
            json!([{"app": CONF_APP, "resources": ["https://elsewhere.example"]}]),
            "resource_servers[0].resources[0]: must be one of profile.resources",
        ),
        (
            json!([{"app": CONF_APP}]),
            "resource_servers[0].resources: is missing",
        ),
        (
            json!([{"resources": [ISSUER]}]),
            "resource_servers[0].app: is missing",
        ),
    ] {
        let error = with(servers.clone()).unwrap_err().to_string();
        assert!(error.contains(why), "{servers}: {error}");
    }
}

// ---- RFC 9728: the API this host serves ----------------------------------------------------

#[test]
fn the_api_publishes_its_metadata_and_its_challenges_point_there() {
    let mut sim = standards(ISSUER);
    let response = get(&mut sim, "GET", "/.well-known/oauth-protected-resource");
    assert_eq!(response.status, 200);
    assert_eq!(header(&response, "Access-Control-Allow-Origin"), Some("*"));
    let doc: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(
        doc,
        json!({
            "resource": ISSUER,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            // The Required Scopes of the declared endpoints, each once.
            "scopes_supported": ["account_info.read", "files.content.write", "files.metadata.read", "team_info.read"],
        })
    );
    // A call without a token, with a dead one, without the scope: each challenge names the
    // metadata of the endpoint called, whose resource is the endpoint's own URL (RFC 9728 §3.3).
    let metadata_of = |path: &str| {
        format!("resource_metadata=\"{ISSUER}/.well-known/oauth-protected-resource{path}\"")
    };
    let expected = metadata_of(GET_ACCOUNT);
    let bare = http(sim.http(HttpRequest::new("POST", GET_ACCOUNT, ""), None));
    assert_eq!(bare.status, 401);
    let challenge = bare.header("WWW-Authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer realm=\"api\", ") && challenge.ends_with(&expected),
        "{challenge}"
    );
    let dead = http(sim.api(GET_ACCOUNT, "sl.AAAAAAAAAAAAAAAA.nothing"));
    assert!(dead
        .header("WWW-Authenticate")
        .unwrap()
        .ends_with(&expected));
    let tokens = sim.pkce_offline_tokens(&alice());
    let narrow = http(sim.api("/2/files/upload", tokens["access_token"].as_str().unwrap()));
    assert_eq!(narrow.status, 403);
    assert!(narrow
        .header("WWW-Authenticate")
        .unwrap()
        .contains("insufficient_scope"));
    assert!(narrow
        .header("WWW-Authenticate")
        .unwrap()
        .ends_with(&metadata_of("/2/files/upload")));
    // The reference profile: neither the document nor the parameter.
    let mut reference = Sim::new(fixture_config());
    assert_eq!(
        get(
            &mut reference,
            "GET",
            "/.well-known/oauth-protected-resource"
        )
        .status,
        404
    );
    let bare = http(reference.http(HttpRequest::new("POST", GET_ACCOUNT, ""), None));
    assert_eq!(
        bare.header("WWW-Authenticate"),
        Some("Bearer realm=\"api\"")
    );
}

// ---- RFC 8707: tokens bound to the resources they are for ----------------------------------

const MCP: &str = "https://mcp.example/mcp";
const OTHER: &str = "https://other.example/api";

fn with_resources() -> Sim {
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new(ISSUER).unwrap(),
        resources: vec![Resource::new(MCP).unwrap(), Resource::new(OTHER).unwrap()],
        rotation: Rotation::default(),
        // The confidential app serves the MCP server and the API here: it introspects the
        // public app's access tokens issued for them.
        resource_servers: vec![ResourceServer {
            app: AppKey::new(CONF_APP).unwrap(),
            resources: vec![Resource::new(MCP).unwrap(), Resource::new(ISSUER).unwrap()],
        }],
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    Sim::new(Config::new(doc).unwrap())
}

/// A PKCE code for alice naming `resources` at authorization.
fn code_for(sim: &mut Sim, resources: &[&str]) -> String {
    let mut q = pkce_offline_query("r");
    for resource in resources {
        q.push_str(&format!("&resource={}", encode_component(resource)));
    }
    sim.code_for(&q, &alice())
}

fn exchange(sim: &mut Sim, code: &str, resources: &[&str]) -> HttpResponse {
    let mut form: Vec<(&str, &str)> = pkce_exchange(code, VERIFIER).to_vec();
    form.extend(resources.iter().map(|r| ("resource", *r)));
    sim.token(&form, None)
}

fn refresh_for(sim: &mut Sim, refresh: &str, resources: &[&str]) -> HttpResponse {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", PKCE_APP),
    ];
    form.extend(resources.iter().map(|r| ("resource", *r)));
    sim.token(&form, None)
}

fn served(sim: &mut Sim, token: &str) -> bool {
    matches!(sim.api(GET_ACCOUNT, token), Answer::Serve(_))
}

#[test]
fn a_token_serves_only_the_resources_it_was_issued_for() {
    let mut sim = with_resources();
    // Both this host's API and the MCP server, consented at once.
    let code = code_for(&mut sim, &[MCP, ISSUER]);
    let both = json(&exchange(&mut sim, &code, &[]));
    let both_token = both["access_token"].as_str().unwrap().to_owned();
    assert!(
        served(&mut sim, &both_token),
        "this host's API is among its resources"
    );
    assert_eq!(sim.introspect(&both_token)["aud"], json!([ISSUER, MCP]));
    // A refresh narrows to the MCP server alone: that token is refused here, as RFC 6750's
    // invalid_token, and introspection tells the MCP server it is its own.
    let refresh = both["refresh_token"].as_str().unwrap().to_owned();
    let narrowed = json(&refresh_for(&mut sim, &refresh, &[MCP]));
    let mcp_token = narrowed["access_token"].as_str().unwrap().to_owned();
    let refused = sim.api(GET_ACCOUNT, &mcp_token);
    assert_eq!(refused.refusal(), Some(&Refusal::TokenForAnotherResource));
    let refused = http(refused);
    assert_eq!(refused.status, 401);
    assert!(refused
        .header("WWW-Authenticate")
        .unwrap()
        .contains("error=\"invalid_token\""));
    assert_eq!(sim.introspect(&mcp_token)["aud"], json!([MCP]));
    // The PKCE app is a public client: its refresh token rotated (see the rotation tests).
    let refresh = narrowed["refresh_token"].as_str().unwrap().to_owned();
    // Never wider than what was consented, and never a resource the server does not know.
    for (resources, why) in [
        (&[OTHER][..], "known but not consented"),
        (&["https://evil.example"][..], "unknown"),
    ] {
        let wider = refresh_for(&mut sim, &refresh, resources);
        assert_eq!(
            (wider.status, oauth_error(&wider).as_str()),
            (400, "invalid_target"),
            "{why}"
        );
    }
    // A refresh naming nothing gets the whole consented set again.
    let again = json(&refresh_for(&mut sim, &refresh, &[]));
    assert!(served(&mut sim, again["access_token"].as_str().unwrap()));
}

#[test]
fn resources_are_checked_at_authorization_and_at_the_exchange() {
    let mut sim = with_resources();
    // An unknown resource is refused back at the client, with the issuer.
    let mut q = pkce_offline_query("u");
    q.push_str("&resource=https%3A%2F%2Fevil.example%2F");
    let refused = http(sim.authorize(&q, Some(&alice())));
    let location = refused.header("Location").unwrap().to_owned();
    assert_eq!(
        redirect_param(&location, "error").as_deref(),
        Some("invalid_target")
    );
    assert_eq!(redirect_param(&location, "iss").as_deref(), Some(ISSUER));
    // The exchange may name a subset of the code's resources, not another one.
    let code = code_for(&mut sim, &[MCP]);
    let other = exchange(&mut sim, &code, &[OTHER]);
    assert_eq!(oauth_error(&other), "invalid_target");
    let code = code_for(&mut sim, &[MCP]);
    let token = json(&exchange(&mut sim, &code, &[MCP]));
    assert!(
        !served(&mut sim, token["access_token"].as_str().unwrap()),
        "an MCP server's token is not this API's"
    );
    // No resource named at all: the token serves this host's API as before.
    let code = code_for(&mut sim, &[]);
    let token = json(&exchange(&mut sim, &code, &[]));
    let plain = token["access_token"].as_str().unwrap().to_owned();
    assert!(served(&mut sim, &plain));
    // It names no resource: it is for the API here, which the resource server serves too.
    let described = sim.introspect(&plain);
    assert_eq!(described["active"], true);
    assert!(described.get("aud").is_none());
}

#[test]
fn the_reference_profile_ignores_resource_and_old_records_read_with_none() {
    let mut sim = Sim::new(fixture_config());
    let mut q = pkce_offline_query("x");
    q.push_str("&resource=https%3A%2F%2Fevil.example%2F");
    let code = sim.code_for(&q, &alice());
    let tokens = json(&exchange(&mut sim, &code, &["https://evil.example/"]));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert!(
        served(&mut sim, &access),
        "SPEC.md's service does not read the parameter"
    );
    // Tokens of format 7 had no ledger generation nor uid, and those of format 3 no resources
    // either: they read with none.
    let key = RecordKey::of_access_token(&fixture_key(), &access).unwrap();
    let Some(Record::AccessToken(mut token)) = sim.store.record(&key) else {
        panic!("no token")
    };
    (token.generation, token.uid) = (None, None);
    let older = Record::AccessToken(token);
    let mut bytes = before_format_11(&older);
    let tail = bytes.split_off(bytes.len() - 2);
    assert_eq!(
        tail,
        [0, 0],
        "no generation, no uid: a zero byte each, last"
    );
    bytes[0] = 7;
    assert_eq!(Record::decode(&bytes), Ok(older.clone()));
    assert_eq!(
        bytes.pop(),
        Some(0),
        "an empty audience is one zero byte, before them"
    );
    bytes[0] = 3;
    assert_eq!(Record::decode(&bytes), Ok(older.clone()));
    // Such a token is checked against its grant and link: it still serves.
    let version = sim.store.get(&key).unwrap().version;
    sim.store.put_raw(key, version, &older);
    assert!(served(&mut sim, &access));
}

#[test]
fn resource_identifiers_compare_in_canonical_form() {
    // RFC 3986 §6.2.2-6.2.3: case of scheme and host, the default port and an empty path do
    // not make another resource — the MCP TypeScript SDK names an origin with its `/`.
    let mut sim = with_resources();
    for spelling in [
        "https://auth.example/",
        "HTTPS://Auth.Example:443",
        "https://auth.example",
    ] {
        let code = code_for(&mut sim, &[spelling]);
        let token = json(&exchange(&mut sim, &code, &[spelling]));
        let access = token["access_token"].as_str().unwrap().to_owned();
        assert!(served(&mut sim, &access), "{spelling}");
        assert_eq!(
            sim.introspect(&access)["aud"],
            json!([ISSUER]),
            "{spelling}"
        );
    }
    let code = code_for(&mut sim, &["https://MCP.example:443/mcp"]);
    let token = json(&exchange(&mut sim, &code, &[]));
    let access = token["access_token"].as_str().unwrap().to_owned();
    assert_eq!(sim.introspect(&access)["aud"], json!([MCP]));
    // Paths are compared as written: another path, or a query, is another resource.
    for other in [
        "https://mcp.example/mcp/",
        "https://mcp.example/MCP",
        "https://auth.example/?x=1",
        "https://auth.example:8443",
        "http://auth.example",
    ] {
        let mut q = pkce_offline_query("o");
        q.push_str(&format!("&resource={}", encode_component(other)));
        let refused = http(sim.authorize(&q, Some(&alice())));
        let location = refused.header("Location").unwrap().to_owned();
        assert_eq!(
            redirect_param(&location, "error").as_deref(),
            Some("invalid_target"),
            "{other}"
        );
    }
    // Configured resources are kept canonical too, and the metadata names the canonical form.
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        issuer: Issuer::new("https://Auth.Example:443/").unwrap(),
        resources: vec![Resource::new("https://MCP.example/mcp").unwrap()],
        rotation: Rotation::default(),
        resource_servers: Vec::new(),
        clients: None,
        client_credentials: None,
        token_exchange: None,
        identity_assertions: None,
        dpop: None,
    });
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let metadata = get(&mut sim, "GET", "/.well-known/oauth-protected-resource");
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], "https://auth.example");
    let code = code_for(&mut sim, &["https://auth.example/", MCP]);
    let token = json(&exchange(&mut sim, &code, &["https://auth.example"]));
    assert!(served(&mut sim, token["access_token"].as_str().unwrap()));
}

#[test]
fn the_standards_profile_needs_a_server_key_of_32_bytes() {
    let mut doc = fixture_document().to_json_value();
    doc["profile"] = json!({"kind": "standards", "issuer": ISSUER});
    doc.as_object_mut().unwrap().remove("server_key");
    let missing = ConfigDocument::from_json_value(&doc)
        .and_then(Config::new)
        .unwrap_err()
        .to_string();
    assert!(missing.contains("server_key: is missing"), "{missing}");
    doc["server_key"] = json!("dG9vLXNob3J0");
    let short = ConfigDocument::from_json_value(&doc)
        .unwrap_err()
        .to_string();
    assert!(short.contains("must be 32 bytes"), "{short}");
    // The key is written back with the document (a host reads it from its own secret store).
    let config = Config::new(fixture_document()).unwrap();
    let written = ConfigDocument::from(config).to_json_value();
    assert_eq!(written["server_key"], json!(FIXTURE_SERVER_KEY));
}

// ---- MCP authorization 2026-07-28 (conformance/sources/mcp-authorization-2026-07-28.md) ------

/// Refresh Tokens: a protected resource names no `offline_access`, neither in its metadata's
/// `scopes_supported` nor in a challenge's `scope`, whatever scopes a resource server on another
/// host hands over (the package's resource helper passes its configuration's as given). Every
/// other scope is named: on a 401, and on a 403 `insufficient_scope` (Scope Challenge Handling).
#[test]
fn a_protected_resource_never_names_offline_access() {
    let issuer = Issuer::new(ISSUER).unwrap();
    let document = protected_resource_metadata(
        MCP,
        &issuer,
        ["offline_access", "mcp:tools", "offline_access"],
        false,
    );
    let document: Value = serde_json::from_str(&document).unwrap();
    assert_eq!(document["scopes_supported"], json!(["mcp:tools"]));

    let metadata_url = protected_resource_metadata_url(MCP);
    let offline = Scope::new(OFFLINE_ACCESS).unwrap();
    let (status, challenge) = resource_server_challenge(
        &Refusal::BearerMissing,
        Some(&offline),
        &metadata_url,
        Challenges::Bearer,
    );
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer realm=\"api\", resource_metadata=\"{metadata_url}\"")
    );

    let tools = Scope::new("mcp:tools").unwrap();
    let (status, challenge) = resource_server_challenge(
        &Refusal::BearerMissing,
        Some(&tools),
        &metadata_url,
        Challenges::Bearer,
    );
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer realm=\"api\", scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\"")
    );
    let (status, challenge) = resource_server_challenge(
        &Refusal::MissingScope(tools.clone()),
        Some(&tools),
        &metadata_url,
        Challenges::Bearer,
    );
    assert_eq!(status, 403);
    assert_eq!(
        challenge,
        format!(
            "Bearer realm=\"api\", error=\"insufficient_scope\", scope=\"mcp:tools\", \
             resource_metadata=\"{metadata_url}\""
        )
    );
}
