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
    doc.profile = Profile::Standards {
        issuer: Issuer::new(issuer).unwrap(),
    };
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
            // Every scope some app may be granted (the legacy apps' through their access type).
            "scopes_supported": scopes_of_every_app(&sim.config),
            // The fixture's legacy app may use the implicit grant.
            "response_types_supported": ["code", "token"],
            "response_modes_supported": ["query", "fragment"],
            "grant_types_supported": ["authorization_code", "refresh_token", "implicit"],
            "code_challenge_methods_supported": ["S256", "plain"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": true,
        })
    );
    assert!(sim.store.is_empty(), "nothing read, nothing written");
}

fn scopes_of_every_app(config: &Config) -> Vec<String> {
    let all = config
        .apps()
        .fold(ScopeSet::default(), |all, app| all.union(&app.scopes()));
    all.iter().map(str::to_owned).collect()
}

#[test]
fn the_metadata_follows_the_policy_and_the_apps() {
    let mut doc = fixture_document();
    doc.apps.retain(|app| !app.implicit_allowed);
    doc.policy.require_s256 = true;
    doc.profile = Profile::Standards {
        issuer: Issuer::new(ISSUER).unwrap(),
    };
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let doc: Value = serde_json::from_str(&get(&mut sim, "GET", WELL_KNOWN).body).unwrap();
    assert_eq!(doc["response_types_supported"], json!(["code"]));
    assert_eq!(
        doc["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
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
        Ok(Profile::Standards {
            issuer: Issuer::new("http://127.0.0.1:8787").unwrap()
        })
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
    doc.profile = Profile::Standards {
        issuer: Issuer::new(ISSUER).unwrap(),
    };
    let again = ConfigDocument::from_json_value(&doc.to_json_value()).unwrap();
    assert_eq!(again.profile, doc.profile);
}
