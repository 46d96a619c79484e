//! The client credentials grant (RFC 6749 §4.4; issue 48) beyond what its vectors pin
//! (`conformance/vectors/client-credentials.json`): a client's tokens for itself end when the
//! configuration stops allowing the client, and the configuration names only clients that can
//! authenticate.

use edgegrant::*;
use edgegrant_tests::*;

/// The fixture in the standards profile, with `apps` allowed the client credentials grant.
fn machines(apps: &[&str]) -> ConfigDocument {
    let mut doc = fixture_document();
    let mut standards = Standards::new(Issuer::new("https://auth.example").unwrap());
    standards.client_credentials = Some(ClientCredentials::new(
        apps.iter().map(|app| AppKey::new(*app).unwrap()).collect(),
    ));
    doc.profile = Profile::Standards(standards);
    doc
}

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
    let mut sim = Sim::new(Config::new(machines(&[CONF_APP])).unwrap());
    let token = machine_token(&mut sim);
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, &token) else {
        panic!("the client's own token does not authorize")
    };
    assert_eq!(principal.subject, Subject::Client);
    assert_eq!(principal.uid, None);
    assert_eq!(principal.app.as_str(), CONF_APP);

    // No longer allowed the grant: the live token still serves; a new one is refused.
    sim.reconfigure(Config::new(machines(&[])).unwrap());
    assert!(matches!(sim.api(GET_ACCOUNT, &token), Answer::Serve(_)));
    let refused = sim.token_form_answer(
        &[("grant_type", "client_credentials")],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(refused.refusal(), Some(&Refusal::GrantNotAllowed));

    // Removed from the configuration: its token ends with it.
    let mut doc = machines(&[]);
    doc.apps.retain(|app| app.key.as_str() != CONF_APP);
    sim.reconfigure(Config::new(doc).unwrap());
    assert_eq!(http(sim.api(GET_ACCOUNT, &token)).status, 401);
}

/// The configuration refuses to allow the grant to a client that cannot authenticate (no
/// secret) or that it does not know, naming the setting.
#[test]
fn only_configured_clients_with_a_secret_may_be_allowed_the_grant() {
    for app in [PKCE_APP, "nobody"] {
        let error = Config::new(machines(&[app])).unwrap_err().to_string();
        assert!(
            error.contains("profile.client_credentials.apps[0]"),
            "{app}: {error}"
        );
    }
    let mut doc = machines(&[CONF_APP]);
    if let Profile::Standards(standards) = &mut doc.profile {
        if let Some(grant) = &mut standards.client_credentials {
            grant.access_token_lifetime = Seconds(0);
        }
    }
    let error = Config::new(doc).unwrap_err().to_string();
    assert!(error.contains("access_token_lifetime"), "{error}");
    // Read from and written to JSON alike.
    let doc = machines(&[CONF_APP]);
    let text = serde_json::to_string(&doc).unwrap();
    assert!(
        text.contains(r#""client_credentials":{"apps":["conf-app"],"access_token_lifetime":3600}"#),
        "{text}"
    );
    assert_eq!(
        Config::from_json(&text).unwrap().client_credentials(),
        Config::new(doc).unwrap().client_credentials()
    );
}
