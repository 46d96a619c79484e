//! Clients that arrive unannounced (issue 27): an app a client registered lives in the store,
//! in a partition of its own, read beside the request's first records; it expires when unused
//! for its lifetime (its tokens with it) and each use renews it, to the second. (The vectors of
//! `registration.json` pin the registration and the flows on every layer.)

use edgegrant::*;
use edgegrant_tests::*;
use serde_json::{json, Value};

/// Five hours: longer than an access token's four, as the configuration requires, and short
/// enough that a token issued before the app's renewal outlives the app.
const LIFETIME: u64 = 18_000;
/// How long a new app is kept before its first completed authorization: one hour.
const TRIAL: u64 = 3_600;
const CALLBACK: &str = "http://127.0.0.1:33418/callback";

/// The fixture in the standards profile, with `clients`.
fn document_with(clients: UnannouncedClients) -> ConfigDocument {
    let mut doc = fixture_document();
    doc.profile = Profile::Standards(Standards {
        clients: Some(clients),
        ..Standards::new(Issuer::new("https://auth.example").unwrap())
    });
    doc
}

/// Open registration; the scopes a client may be granted.
fn open(scopes: &str) -> UnannouncedClients {
    let mut clients = UnannouncedClients::new(ScopeSet::parse(scopes).unwrap());
    clients.registration = Some(RegistrationPolicy::default());
    clients
}

fn sim() -> Sim {
    let mut clients = open("account_info.read mcp:tools");
    clients.unused_lifetime = Seconds(LIFETIME);
    clients.trial_lifetime = Seconds(TRIAL);
    Sim::new(Config::new(document_with(clients)).unwrap())
}

/// Registers a client with the refresh_token grant, authenticating by `auth_method` (and
/// `extra` metadata); the registration's answer, checked to be 201.
fn register_with(sim: &mut Sim, auth_method: &str, extra: Value) -> Value {
    let mut metadata = json!({
        "client_name": "Unannounced",
        "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": auth_method,
    });
    if let (Value::Object(metadata), Value::Object(extra)) = (&mut metadata, extra) {
        metadata.extend(extra);
    }
    let mut request = HttpRequest::new("POST", "/oauth2/register", "");
    request
        .headers
        .push(("Content-Type".into(), "application/json".into()));
    request.body = metadata.to_string().into_bytes();
    let response = http(sim.http(request, None));
    assert_eq!(response.status, 201, "{}", response.body);
    json(&response)
}

/// Registers a public client with the refresh_token grant; its client_id.
fn register(sim: &mut Sim) -> String {
    let info = register_with(sim, "none", Value::Null);
    info["client_id"].as_str().unwrap().to_owned()
}

fn query(client: &str) -> String {
    format!(
        "client_id={client}&response_type=code&redirect_uri={}&scope=account_info.read\
         &code_challenge={CHALLENGE}&code_challenge_method=S256",
        encode_component(CALLBACK)
    )
}

fn tokens(sim: &mut Sim, client: &str) -> Value {
    let code = sim.code_for(&query(client), &alice());
    let response = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", client),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    json(&response)
}

fn stored(sim: &Sim, client: &str) -> (AppRecord, Option<UnixTime>) {
    let key = RecordKey::app(sim.config.server_key(), AppKey::new(client).unwrap());
    match sim.store.record(&key) {
        Some(Record::App(record)) => (record, sim.store.purge_after(&key)),
        other => panic!("no app record under {key}: {other:?}"),
    }
}

#[test]
fn a_stored_app_lives_in_its_own_partition_and_is_purged_when_unused() {
    let mut sim = sim();
    let client = register(&mut sim);
    let key = RecordKey::app(sim.config.server_key(), AppKey::new(&client).unwrap());
    assert_eq!(
        key.partition(),
        Partition::of_app(sim.config.server_key(), &AppKey::new(&client).unwrap())
    );
    // Kept for its trial hour until its first completed authorization: as if all but that
    // hour of its unused lifetime had passed.
    let (record, purge) = stored(&sim, &client);
    assert_eq!(record.used_at, UnixTime(sim.now.0 + TRIAL - LIFETIME));
    assert_eq!(purge, Some(sim.now.plus(Seconds(TRIAL))));
    // Its secret never stored: a public client has none; the registration token as a digest.
    assert_eq!(record.app.secret_digest, None);
    assert!(matches!(record.provenance, Provenance::Registered(_)));
}

#[test]
fn use_renews_a_stored_app_and_an_unused_one_expires_with_its_tokens() {
    let mut sim = sim();
    let registered_at = sim.now;
    let client = register(&mut sim);
    // Its first completed authorization: from then on it lives by use.
    tokens(&mut sim, &client);
    // Used before half its lifetime: nothing rewritten, and the access token (four hours)
    // outlives the app (five hours from its registration).
    sim.now = registered_at.plus(Seconds(LIFETIME / 2 - 1));
    let first = tokens(&mut sim, &client);
    assert_eq!(stored(&sim, &client).0.used_at, registered_at);
    let access = first["access_token"].as_str().unwrap().to_owned();
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let expires = registered_at.plus(Seconds(LIFETIME));
    sim.now = UnixTime(expires.0 - 1);
    assert!(matches!(
        sim.api("/2/users/get_current_account", &access),
        Answer::Serve(_)
    ));
    // Unused for its whole lifetime, the app is gone to the second, and its tokens with it.
    sim.now = expires;
    let answer = sim.api("/2/users/get_current_account", &access);
    assert_eq!(answer.refusal(), Some(&Refusal::AppRemoved));
    let late = sim.refresh(&refresh, &client, None);
    assert_eq!(late.status, 400);
    assert_eq!(oauth_error(&late), "invalid_client");
    let page = sim.authorize(&query(&client), Some(&alice()));
    assert_eq!(page.refusal(), Some(&Refusal::UnknownClient));
}

/// A stored app's record as format 8 wrote it — its last use after the app and its
/// registration — reads as the same record, serves its tokens' bearer checks and refreshes, and
/// is written in the current format when a use renews it.
#[test]
fn a_stored_apps_record_of_format_8_is_read_as_it_was_written() {
    let mut sim = sim();
    let registered_at = sim.now;
    let client = register(&mut sim);
    // (Its first authorization renews it: its last use is now.)
    let first = tokens(&mut sim, &client);
    let key = RecordKey::app(sim.config.server_key(), AppKey::new(&client).unwrap());
    let current = sim.store.get(&key).unwrap().clone();
    // The format, the variant (a stored app's is the eighth, 7), the last use (a varint,
    // ending at its first byte under 0x80), then the app and its registration.
    let bytes = &current.bytes;
    assert_eq!(bytes[..2], [RECORD_FORMAT, 7]);
    let used_at = 2 + bytes[2..].iter().position(|b| b & 0x80 == 0).unwrap() + 1;
    let mut format_8 = vec![8, 7];
    format_8.extend_from_slice(&bytes[used_at..]);
    format_8.extend_from_slice(&bytes[2..used_at]);
    assert_ne!(&format_8[1..], &bytes[1..]);
    assert_eq!(Record::decode(&format_8), Record::decode(bytes));
    sim.store.put_bytes(key.clone(), current.version, format_8);

    // Past half its lifetime, so that the refresh renews it.
    sim.now = registered_at.plus(Seconds(LIFETIME / 2 + 1));
    let access = first["access_token"].as_str().unwrap();
    assert!(matches!(
        sim.api("/2/users/get_current_account", access),
        Answer::Serve(_)
    ));
    let refresh = first["refresh_token"].as_str().unwrap();
    let renewed = sim.refresh(refresh, &client, None);
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    let rewritten = sim.store.get(&key).unwrap();
    assert_eq!(rewritten.version, current.version + 1);
    assert_eq!(rewritten.bytes[0], RECORD_FORMAT);
    assert_eq!(stored(&sim, &client).0.used_at, sim.now);
}

#[test]
fn from_half_its_lifetime_on_a_use_renews_a_stored_app() {
    let mut sim = sim();
    let registered_at = sim.now;
    let client = register(&mut sim);
    let first = tokens(&mut sim, &client);
    sim.now = registered_at.plus(Seconds(LIFETIME / 2));
    let refresh = first["refresh_token"].as_str().unwrap();
    let refreshed = sim.refresh(refresh, &client, None);
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let renewed_at = sim.now;
    let (record, purge) = stored(&sim, &client);
    assert_eq!(record.used_at, renewed_at);
    assert_eq!(purge, Some(renewed_at.plus(Seconds(LIFETIME))));
    // A use before half the renewed lifetime writes nothing to the app.
    sim.now = renewed_at.plus(Seconds(LIFETIME / 2 - 1));
    let next = sim.refresh(
        json(&refreshed)["refresh_token"].as_str().unwrap(),
        &client,
        None,
    );
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(stored(&sim, &client).0.used_at, renewed_at);
    // Past the registration's own lifetime, the renewed app still signs users in, and renews.
    sim.now = registered_at.plus(Seconds(LIFETIME + 1));
    let later = sim.refresh(
        json(&next)["refresh_token"].as_str().unwrap(),
        &client,
        None,
    );
    assert_eq!(later.status, 200, "{}", later.body);
    assert_eq!(stored(&sim, &client).0.used_at, sim.now);
}

/// The consent page a person can judge: their name, each scope in plain words (configured,
/// else the defaults), where they will be sent, and — for an app that registered itself — that
/// its name is its own claim.
#[test]
fn the_consent_page_says_who_is_asked_what_by_whom_and_where_the_answer_goes() {
    let mut doc = document_with(open("account_info.read mcp:tools"));
    doc.scope_descriptions =
        [("mcp:tools".to_owned(), "Use the project's tools".to_owned())].into();
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let client = register(&mut sim);
    let mut person = alice();
    person.name = Some("Alice Liddell".into());
    let query = format!(
        "client_id={client}&response_type=code&redirect_uri={}&scope=account_info.read+mcp%3Atools\
         &code_challenge={CHALLENGE}&code_challenge_method=S256",
        encode_component(CALLBACK)
    );
    let page = http(sim.authorize(&query, Some(&person))).body;
    for shown in [
        "Unverified:",
        "You will be sent to <strong>127.0.0.1</strong>",
        // An unverified app's answer to a program on this machine: warned (MCP).
        "That is a program on this computer:",
        "Signed in as Alice Liddell.",
        "<li>See your account&#39;s name, email address and country</li>",
        "<li>Use the project&#39;s tools</li>",
        // The registered refresh_token grant: offline access, said in words.
        "<li>Keep this access while you are away, until you remove it</li>",
    ] {
        assert!(page.contains(shown), "{shown} not in {page}");
    }
    assert!(page.contains("data-unverified=\"true\""), "{page}");
    // A configured app is not marked, and a person the host names no one is their account id.
    let configured = http(sim.authorize(&pkce_offline_query("s"), Some(&alice()))).body;
    assert!(!configured.contains("Unverified"), "{configured}");
    assert!(
        !configured.contains("program on this computer"),
        "{configured}"
    );
    assert!(configured.contains("Signed in as dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc."));
}

fn registration_request(token: Option<&str>, source: &str) -> HttpRequest {
    let mut request = HttpRequest::new("POST", "/oauth2/register", "");
    request
        .headers
        .push(("Content-Type".into(), "application/json".into()));
    if let Some(token) = token {
        request
            .headers
            .push(("Authorization".into(), format!("Bearer {token}")));
    }
    request.source = Some(source.into());
    request.body = json!({ "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none" })
        .to_string()
        .into_bytes();
    request
}

/// RFC 7591 §3: where the policy names initial access tokens, registration takes one of them
/// (as a bearer token, compared as a digest); anything else is 401 `invalid_token`.
#[test]
fn registration_by_initial_access_token_takes_only_a_configured_one() {
    let mut clients = open("mcp:tools");
    clients.registration = Some(RegistrationPolicy {
        initial_access_tokens: vec![ClientSecret::presented("initial-token-0123456789").digest()],
        per_source: 0,
        all_sources: 0,
    });
    let mut sim = Sim::new(Config::new(document_with(clients)).unwrap());
    for token in [None, Some("initial-token-012345678"), Some("")] {
        let refused = http(sim.http(registration_request(token, "192.0.2.1"), None));
        assert_eq!(refused.status, 401, "{token:?}");
        let challenge = refused.header("WWW-Authenticate").unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    let registered = http(sim.http(
        registration_request(Some("initial-token-0123456789"), "192.0.2.1"),
        None,
    ));
    assert_eq!(registered.status, 201, "{}", registered.body);
}

/// Registrations are counted per source within the attempts window: at the limit, 429 with
/// the wait; another source is not held back, and the window's end frees the first.
#[test]
fn registrations_are_limited_per_source() {
    let mut clients = open("mcp:tools");
    clients.registration = Some(RegistrationPolicy {
        initial_access_tokens: Vec::new(),
        per_source: 2,
        all_sources: 0,
    });
    let mut sim = Sim::new(Config::new(document_with(clients)).unwrap());
    let start = sim.now;
    for _ in 0..2 {
        let ok = http(sim.http(registration_request(None, "192.0.2.1"), None));
        assert_eq!(ok.status, 201, "{}", ok.body);
    }
    let limited = http(sim.http(registration_request(None, "192.0.2.1"), None));
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert_eq!(limited.header("Retry-After"), Some("900"));
    let other = http(sim.http(registration_request(None, "192.0.2.2"), None));
    assert_eq!(other.status, 201, "{}", other.body);
    // The window (900 s by default) runs from the first registration: at its end, the first
    // source may register again.
    sim.now = UnixTime(start.0 + 899);
    let still = http(sim.http(registration_request(None, "192.0.2.1"), None));
    assert_eq!(still.status, 429);
    sim.now = start.plus(Seconds(900));
    let again = http(sim.http(registration_request(None, "192.0.2.1"), None));
    assert_eq!(again.status, 201, "{}", again.body);
}

// ---- Client ID Metadata Documents ------------------------------------------------------------

const DOCUMENT: &str = "https://app.example/oauth/client.json";

/// Documents on (any host, the default bounds: kept 300 s to a day), no registration.
fn documents_sim() -> Sim {
    let mut clients =
        UnannouncedClients::new(ScopeSet::parse("account_info.read mcp:tools").unwrap());
    clients.unused_lifetime = Seconds(LIFETIME * 10);
    clients.documents = Some(DocumentPolicy::default());
    Sim::new(Config::new(document_with(clients)).unwrap())
}

/// The web serves the document at `DOCUMENT`, with these redirect URIs, kept `max_age`.
fn publish(sim: &mut Sim, redirect_uris: &[&str], max_age: u64) {
    let body = json!({
        "client_id": DOCUMENT,
        "client_name": "Documented",
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    });
    sim.store.web.insert(
        DOCUMENT.to_owned(),
        Ok(Fetched {
            status: 200,
            cache_control: Some(format!("public, max-age={max_age}")),
            body: body.to_string().into_bytes(),
        }),
    );
}

#[test]
fn a_document_client_is_fetched_once_kept_for_its_max_age_and_fetched_again_after() {
    let mut sim = documents_sim();
    publish(&mut sim, &[CALLBACK], 3600);
    let fetched_at = sim.now;
    let first = tokens(&mut sim, DOCUMENT);
    assert!(
        first["refresh_token"].is_string(),
        "the refresh_token grant it lists: {first}"
    );
    let (record, purge) = stored(&sim, DOCUMENT);
    let Provenance::Document(document) = &record.provenance else {
        panic!("kept as a document: {record:?}");
    };
    assert_eq!(document.fresh_until, fetched_at.plus(Seconds(3600)));
    assert_eq!(purge, Some(fetched_at.plus(Seconds(LIFETIME * 10))));
    // The web goes away: the copy serves until its max-age is over, to the second.
    sim.store.web.clear();
    sim.now = fetched_at.plus(Seconds(3599));
    let code = sim.code_for(&query(DOCUMENT), &alice());
    assert!(!code.is_empty());
    sim.now = fetched_at.plus(Seconds(3600));
    let page = http(sim.authorize(&query(DOCUMENT), Some(&alice())));
    assert_eq!(page.status, 400);
    assert!(page.body.contains("could not be fetched"), "{}", page.body);
    // A bearer check goes on with the copy; a refresh needs the current document.
    let access = first["access_token"].as_str().unwrap();
    assert!(matches!(sim.api(GET_ACCOUNT, access), Answer::Serve(_)));
    let refresh = first["refresh_token"].as_str().unwrap();
    let refused = sim.refresh(refresh, DOCUMENT, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(oauth_error(&refused), "invalid_client");
    // Back, and changed — fetched once the failure's backoff (300 s) has passed: its new
    // redirect URI is the only one.
    let back = fetched_at.plus(Seconds(3600 + 300));
    sim.now = back;
    publish(&mut sim, &["http://127.0.0.1:40000/cb"], 60);
    let moved = http(sim.authorize(&query(DOCUMENT), Some(&alice())));
    assert_eq!(
        moved.status, 400,
        "the old redirect URI is gone: {}",
        moved.body
    );
    // Kept at least min_cache (300 s) whatever max-age says: no fetch within it.
    sim.store.web.clear();
    sim.now = back.plus(Seconds(299));
    let kept = http(sim.authorize(&query(DOCUMENT), Some(&alice())));
    assert!(kept.body.contains("redirect_uri"), "{}", kept.body);
    let refreshed = sim.refresh(refresh, DOCUMENT, None);
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    sim.now = back.plus(Seconds(300));
    let gone = sim.refresh(refresh, DOCUMENT, None);
    assert_eq!(oauth_error(&gone), "invalid_client", "{}", gone.body);
}

#[test]
fn a_document_clients_key_is_escaped_in_storage_keys_and_read_back_whole() {
    let key = ServerKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
    let app = AppKey::new("https://app.example:8443/c%3Aid/client.json").unwrap();
    let account = AccountId::new("dbid:alice").unwrap();
    for record in [
        RecordKey::app(&key, app.clone()),
        RecordKey::link(&key, app.clone(), account.clone()),
        RecordKey::member(&key, app.clone(), account, 3),
    ] {
        let text = record.to_string();
        assert!(
            text.contains("https%3A//app.example%3A8443/c%253Aid/client.json"),
            "{text}"
        );
        assert_eq!(text.parse::<RecordKey>(), Ok(record.clone()));
        // Only the escaped form is the key: the raw URL is none.
        // The raw URL in its place names no record of this app.
        let raw = text.replace("https%3A//app.example%3A8443", "https://app.example:8443");
        assert_ne!(raw.parse::<RecordKey>().ok(), Some(record), "{raw}");
    }
    // A member's place is written one way: no sign, no leading zero (0 itself is one).
    let alice = AccountId::new("dbid:alice").unwrap();
    let zero = RecordKey::member(&key, app.clone(), alice.clone(), 0);
    assert_eq!(zero.to_string().parse::<RecordKey>(), Ok(zero));
    let third = RecordKey::member(&key, app, alice, 3).to_string();
    for other in [":03:", ":+3:", ":3 :", ":-3:"] {
        let text = third.replacen(":3:", other, 1);
        assert!(text.parse::<RecordKey>().is_err(), "{text}");
    }
}

// ---- private_key_jwt (RFC 7523) -----------------------------------------------------------------

#[test]
fn a_client_proves_itself_by_its_keys_once_per_assertion() {
    let mut sim = sim();
    let key = signing_key(7);
    let info = register_with(
        &mut sim,
        "private_key_jwt",
        json!({ "jwks": { "keys": [public_jwk(&key, "k1")] } }),
    );
    let client = info["client_id"].as_str().unwrap().to_owned();
    assert_eq!(info["token_endpoint_auth_method"], "private_key_jwt");
    assert!(info.get("client_secret").is_none(), "no secret: {info}");
    assert_eq!(info["jwks"]["keys"][0]["kid"], "k1");

    let issuer = "https://auth.example";
    let code = sim.code_for(&query(&client), &alice());
    let signed = |sim: &Sim, aud: &str, ahead: u64, jti: &str| {
        assertion(&key, &client, aud, sim.now.0 + ahead, jti)
    };
    let exchange = |sim: &mut Sim, assertion: &str| {
        sim.token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", CALLBACK),
                ("code_verifier", VERIFIER),
                ("client_assertion_type", JWT_BEARER),
                ("client_assertion", assertion),
            ],
            None,
        )
    };
    // Expired at its exp, to the second; for another audience; by another key: refused.
    for (refused, why) in [
        (signed(&sim, issuer, 0, "j0"), "expired"),
        (
            signed(&sim, "https://other.example", 60, "j0"),
            "another audience",
        ),
        (
            assertion(&signing_key(8), &client, issuer, sim.now.0 + 60, "j0"),
            "another key",
        ),
        (signed(&sim, issuer, 3601, "j0"), "lives too long"),
    ] {
        let answer = exchange(&mut sim, &refused);
        assert_eq!(
            oauth_error(&answer),
            "invalid_client",
            "{why}: {}",
            answer.body
        );
    }
    // A second before exp, for the issuer: tokens, with a refresh token it did not ask for.
    let first = signed(&sim, issuer, 1, "j1");
    let tokens = exchange(&mut sim, &first);
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let refresh = json(&tokens)["refresh_token"].as_str().unwrap().to_owned();
    let refresh_with = |sim: &mut Sim, assertion: Option<&str>| {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
            ("client_id", client.as_str()),
        ];
        if let Some(assertion) = assertion {
            form.extend([
                ("client_assertion_type", JWT_BEARER),
                ("client_assertion", assertion),
            ]);
        }
        sim.token(&form, None)
    };
    // The same assertion again: used. No assertion at all: a keyed client must prove itself.
    assert_eq!(
        oauth_error(&refresh_with(&mut sim, Some(&first))),
        "invalid_client"
    );
    assert_eq!(oauth_error(&refresh_with(&mut sim, None)), "invalid_client");
    // A fresh one, for the token endpoint's URL, an hour ahead (the most): served, and the
    // refresh token is not rotated (the client authenticated).
    let token_endpoint = format!("{issuer}/oauth2/token");
    let fresh = signed(&sim, &token_endpoint, 3600, "j2");
    let refreshed = refresh_with(&mut sim, Some(&fresh));
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert!(
        json(&refreshed).get("refresh_token").is_none(),
        "{}",
        refreshed.body
    );
}

// ---- Hardening, third round (issue 47) ----------------------------------------------------------

/// The registration's answer for `metadata` (its status and body), from `source`.
fn try_register(sim: &mut Sim, metadata: Value, source: &str) -> HttpResponse {
    http(sim.http(register_request(&metadata, source), None))
}

/// Registers a public client redirecting to `redirect_uri`; its client_id.
fn register_at(sim: &mut Sim, redirect_uri: &str) -> String {
    let registered = try_register(
        sim,
        json!({ "redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none" }),
        "192.0.2.1",
    );
    assert_eq!(registered.status, 201, "{}", registered.body);
    json(&registered)["client_id"].as_str().unwrap().to_owned()
}

fn query_to(client: &str, redirect_uri: &str, extra: &str) -> String {
    format!(
        "client_id={client}&response_type=code&redirect_uri={}&scope=account_info.read\
         &code_challenge={CHALLENGE}&code_challenge_method=S256{extra}",
        encode_component(redirect_uri)
    )
}

/// Item 1: an error of a client anyone can register is shown on this server's page, never
/// sent to the URI it registered, until the user has signed in and answered the consent page;
/// a configured app's errors still go back to it (RFC 6749 §4.1.2.1).
#[test]
fn a_self_registered_client_cannot_use_the_server_as_a_redirector() {
    let mut sim = sim();
    let evil = "https://evil.example/landing";
    let client = register_at(&mut sim, evil);
    let bogus = format!(
        "client_id={client}&response_type=bogus&redirect_uri={}&state=s",
        encode_component(evil)
    );
    for user in [None, Some(alice())] {
        let answer = sim.authorize(&bogus, user.as_ref());
        assert_eq!(
            answer.refusal(),
            Some(&Refusal::UnsupportedResponseType),
            "{user:?}"
        );
        let page = http(answer);
        assert_eq!(page.status, 400, "{user:?}: {}", page.body);
        assert_eq!(page.header("Location"), None, "{user:?}");
    }
    // A bad scope, signed in, before the consent page: on the page too.
    let scope = query_to(&client, evil, "").replace("account_info.read", "files.content.write");
    let page = http(sim.authorize(&scope, Some(&alice())));
    assert_eq!((page.status, page.header("Location")), (400, None));
    // The user saw the consent page and said no: the answer goes back to the client.
    let denied = http(sim.consent(&query_to(&client, evil, ""), &alice(), Decision::Deny));
    let location = denied.header("Location").unwrap_or_default();
    assert!(
        location.starts_with(evil) && location.contains("error=access_denied"),
        "{location}"
    );
    // A configured app's error still goes back to its registered redirect URI.
    let configured = pkce_offline_query("s").replace("response_type=code", "response_type=bogus");
    let answer = http(sim.authorize(&configured, None));
    let location = answer.header("Location").unwrap_or_default();
    assert!(
        location.contains("error=unsupported_response_type"),
        "{location}"
    );
}

/// Item 1: a client that registers itself (or is named by a document) may redirect only to
/// https, http on a loopback address, or a private-use scheme in reverse-domain form.
#[test]
fn a_self_registered_client_names_only_https_loopback_or_reverse_domain_redirects() {
    let mut doc = document_with(open("account_info.read"));
    // Even where configured apps may redirect to http on any host.
    doc.policy.allow_http_redirect_uris = true;
    let mut sim = Sim::new(Config::new(doc).unwrap());
    for refused in [
        "ms-msdt:/id?PCWDiagnostic",
        "search-ms:query=x",
        // (Without a fragment: one is refused by the rule of every redirect URI already.)
        "intent://scan/",
        "vscode://file/x",
        "custom:/callback",
        "http://app.example/cb",
        "http:app.example/cb",
    ] {
        let answer = try_register(
            &mut sim,
            json!({ "redirect_uris": [refused], "token_endpoint_auth_method": "none" }),
            "192.0.2.1",
        );
        assert_eq!(answer.status, 400, "{refused}: {}", answer.body);
        assert_eq!(oauth_error(&answer), "invalid_redirect_uri", "{refused}");
    }
    for taken in [
        "https://app.example/cb",
        "http://127.0.0.1:4000/cb",
        "http://[::1]/cb",
        "com.example.app:/oauth2redirect",
    ] {
        register_at(&mut sim, taken);
    }
}

/// Item 4: an unverified client is re-authorized without the page only to the https redirect
/// URI the user consented to; another of its URIs, a loopback one (any port) or a private-use
/// scheme asks again every time.
#[test]
fn an_unverified_client_is_asked_about_again_unless_it_returns_where_consented() {
    let mut sim = sim();
    let web = "https://app.example/cb";
    let other = "https://app.example/other";
    let app = "com.example.app:/cb";
    let registered = try_register(
        &mut sim,
        json!({ "redirect_uris": [web, other, CALLBACK, app], "token_endpoint_auth_method": "none" }),
        "192.0.2.1",
    );
    let client = json(&registered)["client_id"].as_str().unwrap().to_owned();
    let asks = |sim: &mut Sim, redirect: &str| {
        let answer = sim.authorize(&query_to(&client, redirect, ""), Some(&alice()));
        matches!(answer.outcome(), Outcome::Consent(_))
    };
    for redirect in [web, CALLBACK, app] {
        sim.code_for(&query_to(&client, redirect, ""), &alice());
        assert!(asks(&mut sim, CALLBACK), "loopback, after {redirect}");
        assert!(
            asks(&mut sim, &CALLBACK.replace("33418", "40000")),
            "loopback on another port"
        );
        assert!(asks(&mut sim, app), "private-use scheme, after {redirect}");
    }
    sim.code_for(&query_to(&client, web, ""), &alice());
    assert!(!asks(&mut sim, web), "where the user consented: at once");
    assert!(asks(&mut sim, other), "another URI of the client's");
    // A configured app is re-authorized at once, wherever among its URIs.
    sim.code_for(&pkce_offline_query("s"), &alice());
    let again = sim.authorize(&pkce_offline_query("t"), Some(&alice()));
    assert!(matches!(again.outcome(), Outcome::Redirect(_)));
}

/// Item 5: the consent page names a private-use scheme as the destination and warns, and an
/// unverified client without a redirect URI gets no page of a code to copy.
#[test]
fn the_consent_page_names_a_private_use_scheme_and_no_code_is_shown_to_an_unverified_client() {
    let mut sim = sim();
    let client = register_at(&mut sim, "com.example.app:/cb");
    let page = http(sim.authorize(
        &query_to(&client, "com.example.app:/cb", ""),
        Some(&alice()),
    ))
    .body;
    assert!(
        page.contains("You will be sent to <strong>com.example.app</strong>"),
        "{page}"
    );
    assert!(
        page.contains("That is a program on this computer:"),
        "{page}"
    );
    let without = format!(
        "client_id={client}&response_type=code&scope=account_info.read\
         &code_challenge={CHALLENGE}&code_challenge_method=S256"
    );
    for answer in [
        sim.authorize(&without, Some(&alice())),
        sim.consent(&without, &alice(), Decision::Allow),
    ] {
        assert_eq!(answer.refusal(), Some(&Refusal::RedirectUriRequired));
    }
}

/// Item 6: names and other displayed texts hold no bidirectional overrides or other
/// invisible format characters (Unicode Cf), nor line separators.
#[test]
fn a_client_name_with_invisible_format_characters_is_refused() {
    let mut sim = sim();
    for name in [
        "Good\u{202E}lasrever",
        "Zero\u{200B}width",
        "Soft\u{00AD}hyphen",
        "Tag\u{E0041}",
        "Line\u{2028}break",
        "Isolate\u{2067}x",
    ] {
        let answer = try_register(
            &mut sim,
            json!({ "client_name": name, "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none" }),
            "192.0.2.1",
        );
        assert_eq!(answer.status, 400, "{name:?}: {}", answer.body);
        assert_eq!(oauth_error(&answer), "invalid_client_metadata");
        let policy = try_register(
            &mut sim,
            json!({ "policy_uri": format!("https://app.example/{name}"), "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none" }),
            "192.0.2.1",
        );
        assert_eq!(policy.status, 400, "{name:?} in a URL");
    }
    let fine = try_register(
        &mut sim,
        json!({ "client_name": "Café – ünïcode ✓", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none" }),
        "192.0.2.1",
    );
    assert_eq!(fine.status, 201, "{}", fine.body);
}

/// Item 8: a client registered with a secret authenticates with it on every token request,
/// PKCE or not; an update cannot make a keyed client public.
#[test]
fn a_registered_client_with_a_secret_or_keys_always_authenticates() {
    let mut sim = sim();
    let info = register_with(&mut sim, "client_secret_post", Value::Null);
    let client = info["client_id"].as_str().unwrap().to_owned();
    let secret = info["client_secret"].as_str().unwrap().to_owned();
    let code = sim.code_for(&query(&client), &alice());
    let without_secret = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_eq!(oauth_error(&without_secret), "invalid_client");
    let with_secret = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("client_secret", &secret),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    assert_eq!(with_secret.status, 200, "{}", with_secret.body);

    let key = signing_key(3);
    let keyed = register_with(
        &mut sim,
        "private_key_jwt",
        json!({ "jwks": { "keys": [public_jwk(&key, "k1")] } }),
    );
    let keyed_client = keyed["client_id"].as_str().unwrap();
    let token = keyed["registration_access_token"].as_str().unwrap();
    let mut update = HttpRequest::new("PUT", &format!("/oauth2/register/{keyed_client}"), "");
    update.headers = vec![
        ("Content-Type".into(), "application/json".into()),
        ("Authorization".into(), format!("Bearer {token}")),
    ];
    update.body = json!({
        "client_id": keyed_client,
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
    })
    .to_string()
    .into_bytes();
    let weakened = http(sim.http(update, None));
    assert_eq!(weakened.status, 400, "{}", weakened.body);
    assert_eq!(oauth_error(&weakened), "invalid_client_metadata");
}

/// Item 3: registrations are limited for all sources together, and an IPv6 source counts with
/// its /64; a registration nobody uses is gone after its trial lifetime.
#[test]
fn registrations_are_limited_in_all_and_per_ipv6_prefix_and_unused_ones_go_soon() {
    let mut clients = open("account_info.read mcp:tools");
    clients.unused_lifetime = Seconds(LIFETIME);
    clients.trial_lifetime = Seconds(TRIAL);
    clients.registration = Some(RegistrationPolicy {
        initial_access_tokens: Vec::new(),
        per_source: 2,
        all_sources: 5,
    });
    let mut sim = Sim::new(Config::new(document_with(clients)).unwrap());
    let metadata = json!({ "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none" });
    for source in ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9"] {
        let ok = try_register(&mut sim, metadata.clone(), source);
        assert_eq!(ok.status, 201, "{source}: {}", ok.body);
    }
    let same_prefix = try_register(&mut sim, metadata.clone(), "2001:db8:1:2:abcd::1");
    assert_eq!(same_prefix.status, 429, "one /64, one source");
    for source in ["2001:db8:1:3::1", "192.0.2.7", "192.0.2.8"] {
        let ok = try_register(&mut sim, metadata.clone(), source);
        assert_eq!(ok.status, 201, "{source}: {}", ok.body);
    }
    let sixth = try_register(&mut sim, metadata.clone(), "198.51.100.1");
    assert_eq!(sixth.status, 429, "five in all per window: {}", sixth.body);
    // A new window: registering again. Unused, a registration is gone after its trial hour,
    // to the second.
    sim.now = sim.now.plus(Seconds(900));
    let fresh = register_at(&mut sim, CALLBACK);
    let registered_at = sim.now;
    sim.now = registered_at.plus(Seconds(TRIAL - 1));
    let page = sim.authorize(&query(&fresh), Some(&alice()));
    assert!(
        matches!(page.outcome(), Outcome::Consent(_)),
        "{:?}",
        page.outcome()
    );
    sim.now = registered_at.plus(Seconds(TRIAL));
    let gone = sim.authorize(&query(&fresh), Some(&alice()));
    assert_eq!(gone.refusal(), Some(&Refusal::UnknownClient));
}

/// Items 2, 3, 7: a document that fails is remembered for its backoff (no fetch meanwhile),
/// counted against the source, described by its URL and a fixed reason (never the remote
/// status or the document's words), the detail in the audit event; a document fetched for a
/// consent never given is kept only for the trial lifetime.
#[test]
fn a_failing_document_is_fetched_once_per_backoff_and_described_without_its_answer() {
    let mut sim = documents_sim();
    sim.store.web.insert(
        DOCUMENT.to_owned(),
        Ok(Fetched {
            status: 500,
            cache_control: None,
            body: b"upstream says: call +1 555 0100 to verify".to_vec(),
        }),
    );
    let failed_at = sim.now;
    let page = http(sim.authorize(&query(DOCUMENT), Some(&alice())));
    assert_eq!(page.status, 400);
    assert!(
        page.body.contains(&format!(
            "metadata document {DOCUMENT} could not be fetched"
        )),
        "{}",
        page.body
    );
    for hidden in ["500", "upstream", "555"] {
        assert!(!page.body.contains(hidden), "{hidden} in {}", page.body);
    }
    let events: Vec<&AuditEvent> = sim
        .audit
        .iter()
        .filter(|e| matches!(e, AuditEvent::FetchFailed { .. }))
        .collect();
    assert_eq!(events.len(), 1);
    assert!(
        matches!(events[0], AuditEvent::FetchFailed { url, detail, .. } if url == DOCUMENT && detail == "status 500"),
        "{events:?}"
    );
    // Fixed now, but within the backoff: not fetched, refused as before, nothing new audited.
    publish(&mut sim, &[CALLBACK], 3600);
    sim.now = failed_at.plus(Seconds(299));
    let barred = sim.authorize(&query(DOCUMENT), Some(&alice()));
    assert!(
        matches!(barred.refusal(), Some(Refusal::ClientDocument(unusable))
            if unusable.url == DOCUMENT && unusable.fault == DocumentFault::RecentlyFailed),
        "{:?}",
        barred.refusal()
    );
    assert_eq!(
        sim.audit
            .iter()
            .filter(|e| matches!(e, AuditEvent::FetchFailed { .. }))
            .count(),
        1
    );
    // The backoff over: fetched, and kept for the trial lifetime (21 600 s by default) only,
    // since no one has consented yet.
    sim.now = failed_at.plus(Seconds(300));
    let consent = sim.authorize(&query(DOCUMENT), Some(&alice()));
    assert!(matches!(consent.outcome(), Outcome::Consent(_)));
    let (_, purge) = stored(&sim, DOCUMENT);
    assert_eq!(purge, Some(sim.now.plus(Seconds(21_600))));
    // Consent keeps it for its unused lifetime.
    sim.code_for(&query(DOCUMENT), &alice());
    let (_, purge) = stored(&sim, DOCUMENT);
    assert_eq!(purge, Some(sim.now.plus(Seconds(LIFETIME * 10))));
}

/// Item 2: failed fetches count against the requesting source's attempt limit: at the limit,
/// the source's requests make no fetch at all.
#[test]
fn failed_fetches_count_against_the_source() {
    let mut doc = fixture_document();
    doc.policy.attempts.per_source = 2;
    let mut clients =
        UnannouncedClients::new(ScopeSet::parse("account_info.read mcp:tools").unwrap());
    clients.unused_lifetime = Seconds(LIFETIME * 10);
    clients.documents = Some(DocumentPolicy::default());
    doc.profile = Profile::Standards(Standards {
        clients: Some(clients),
        ..Standards::new(Issuer::new("https://auth.example").unwrap())
    });
    let mut sim = Sim::new(Config::new(doc).unwrap());
    let authorize_from = |sim: &mut Sim, url: &str| {
        let mut request = HttpRequest::new("GET", "/oauth2/authorize", &query(url));
        request.source = Some("203.0.113.9".into());
        sim.http(request, Some(&alice()))
    };
    for n in 0..2 {
        let url = format!("https://app{n}.example/client.json");
        let answer = authorize_from(&mut sim, &url);
        assert!(
            matches!(answer.refusal(), Some(Refusal::ClientDocument(unusable))
                if unusable.fault == DocumentFault::Unreachable),
            "{:?}",
            answer.refusal()
        );
    }
    let limited = authorize_from(&mut sim, "https://app9.example/client.json");
    assert!(
        matches!(limited.refusal(), Some(Refusal::TooManyAttempts(_))),
        "{:?}",
        limited.refusal()
    );
    assert_eq!(
        sim.audit
            .iter()
            .filter(|e| matches!(e, AuditEvent::FetchFailed { .. }))
            .count(),
        2,
        "the third made no fetch"
    );
}

/// Item 11: where unannounced clients get no refresh tokens, offline access is left out of
/// their grants; configured apps are untouched.
#[test]
fn refresh_tokens_for_unannounced_clients_can_be_switched_off() {
    let mut clients = open("account_info.read mcp:tools");
    clients.unused_lifetime = Seconds(LIFETIME);
    clients.trial_lifetime = Seconds(TRIAL);
    clients.refresh_tokens = UnannouncedRefresh::Off;
    let mut sim = Sim::new(Config::new(document_with(clients)).unwrap());
    let client = register(&mut sim);
    let granted = tokens(&mut sim, &client);
    assert!(granted.get("refresh_token").is_none(), "{granted}");
    let offline = query(&client).replace(
        "scope=account_info.read",
        "scope=account_info.read+offline_access",
    );
    let code = sim.code_for(&offline, &alice());
    let response = sim.token(
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
        None,
    );
    let body = json(&response);
    assert!(body.get("refresh_token").is_none(), "{body}");
    assert_eq!(body["scope"], "account_info.read");
    // A configured app still gets its refresh token.
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let configured = json(&sim.exchange_pkce(&code, VERIFIER));
    assert!(configured["refresh_token"].is_string(), "{configured}");
}

/// MCP 2026-07-28: a metadata document must name its client; one without `client_name` is
/// refused on the error page and nothing of it is kept.
#[test]
fn a_document_without_client_name_is_refused() {
    let mut sim = documents_sim();
    let body = json!({
        "client_id": DOCUMENT,
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
    });
    sim.store.web.insert(
        DOCUMENT.to_owned(),
        Ok(Fetched {
            status: 200,
            cache_control: None,
            body: body.to_string().into_bytes(),
        }),
    );
    let refused = sim.authorize(&query(DOCUMENT), Some(&alice()));
    assert!(
        matches!(refused.refusal(), Some(Refusal::ClientDocument(unusable))
            if matches!(&unusable.fault, DocumentFault::Invalid(why) if why.contains("client_name"))),
        "{:?}",
        refused.refusal()
    );
    assert_eq!(http(refused).status, 400);
    let key = RecordKey::app(sim.config.server_key(), AppKey::new(DOCUMENT).unwrap());
    assert!(sim.store.get(&key).is_none(), "nothing kept");
}
