//! Token exchange (RFC 8693; issue 48): a resource server narrows a user's access token before
//! passing it on — fewer scopes, one of the grant's resources, never more, never longer — with
//! itself as the actor when it shows its own client credentials token; the exchanged token
//! ends with the user's grant.

use edgegrant::*;
use edgegrant_tests::*;
use serde_json::{json, Value};

const ISSUER: &str = "https://auth.example";
const MCP: &str = "https://mcp.example/mcp";
const FILES: &str = "https://files.example/api";
const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The standards profile with two resources; team-app serves the first and may get tokens
/// for itself; token exchange on.
fn sim() -> Sim {
    let mut doc = fixture_document();
    let mut standards = Standards::new(Issuer::new(ISSUER).unwrap());
    standards.resources = vec![Resource::new(MCP).unwrap(), Resource::new(FILES).unwrap()];
    standards.resource_servers = vec![ResourceServer {
        app: AppKey::new(TEAM_APP).unwrap(),
        resources: vec![Resource::new(MCP).unwrap()],
    }];
    standards.client_credentials =
        Some(ClientCredentials::new(vec![AppKey::new(TEAM_APP).unwrap()]));
    standards.token_exchange = Some(TokenExchange::default());
    doc.profile = Profile::Standards(standards);
    Sim::new(Config::new(doc).unwrap())
}

/// alice's access token for conf-app, for both resources.
fn users_token(sim: &mut Sim) -> String {
    let query = format!(
        "{}&resource={}&resource={}",
        conf_query("online", "x"),
        encode_component(MCP),
        encode_component(FILES)
    );
    let code = sim.code_for(&query, &alice());
    let tokens = json(&sim.exchange_confidential(&code));
    tokens["access_token"].as_str().unwrap().to_owned()
}

fn exchange(sim: &mut Sim, extra: &[(&str, &str)], client: (&str, &str)) -> HttpResponse {
    let mut form = vec![
        ("grant_type", EXCHANGE),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
    ];
    form.extend_from_slice(extra);
    sim.token(&form, Some(client))
}

fn introspect_as(sim: &mut Sim, token: &str, client: (&str, &str)) -> Value {
    json(&sim.post_form("/oauth2/introspect", &[("token", token)], Some(client)))
}

#[test]
fn a_resource_server_narrows_a_users_token_and_the_grant_ends_it() {
    let mut sim = sim();
    let metadata = json(&http(sim.http(
        HttpRequest::new("GET", "/.well-known/oauth-authorization-server", ""),
        None,
    )));
    assert!(metadata["grant_types_supported"]
        .as_array()
        .unwrap()
        .contains(&json!(EXCHANGE)));
    let users = users_token(&mut sim);
    let team = (TEAM_APP, TEAM_SECRET);

    // Narrowed to one scope and the resource team-app serves: issued to team-app, alice's.
    let narrowed = exchange(
        &mut sim,
        &[
            ("subject_token", &users),
            ("scope", "account_info.read"),
            ("resource", MCP),
        ],
        team,
    );
    assert_eq!(narrowed.status, 200, "{}", narrowed.body);
    let body = json(&narrowed);
    assert_eq!(body["issued_token_type"], ACCESS_TOKEN_TYPE);
    assert_eq!(body["scope"], "account_info.read");
    assert!(body.get("refresh_token").is_none());
    let token = body["access_token"].as_str().unwrap().to_owned();
    let seen = introspect_as(&mut sim, &token, team);
    assert_eq!(seen["active"], true, "{seen}");
    assert_eq!(seen["client_id"], TEAM_APP);
    assert_eq!(seen["sub"], alice().account_id.as_str());
    assert_eq!(seen["aud"], json!([MCP]));
    assert!(seen.get("act").is_none());

    // With its own token for itself as the actor: act names it.
    let own = json(&sim.token(&[("grant_type", "client_credentials")], Some(team)));
    let own = own["access_token"].as_str().unwrap().to_owned();
    let acting = exchange(
        &mut sim,
        &[
            ("subject_token", &users),
            ("resource", MCP),
            ("actor_token", &own),
            ("actor_token_type", ACCESS_TOKEN_TYPE),
        ],
        team,
    );
    assert_eq!(acting.status, 200, "{}", acting.body);
    let acting = json(&acting)["access_token"].as_str().unwrap().to_owned();
    assert_eq!(
        introspect_as(&mut sim, &acting, team)["act"],
        json!({ "sub": TEAM_APP })
    );

    // Never wider, never elsewhere, never another's token, never another's actor.
    for (extra, error) in [
        (vec![("scope", "files.metadata.read")], "invalid_scope"),
        (
            vec![("resource", "https://elsewhere.example/")],
            "invalid_target",
        ),
        (
            vec![(
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:refresh_token",
            )],
            "invalid_request",
        ),
        (
            vec![
                ("actor_token", users.as_str()),
                ("actor_token_type", ACCESS_TOKEN_TYPE),
            ],
            "invalid_request",
        ),
    ] {
        let mut form = vec![("subject_token", users.as_str())];
        form.extend(extra);
        let refused = exchange(&mut sim, &form, team);
        assert_eq!(oauth_error(&refused), error, "{form:?}: {}", refused.body);
    }
    // A client that neither holds the token nor serves its resources learns nothing.
    let stranger = exchange(
        &mut sim,
        &[("subject_token", &users)],
        (LEGACY_APP, LEGACY_SECRET),
    );
    assert_eq!(
        oauth_error(&stranger),
        "invalid_request",
        "{}",
        stranger.body
    );

    // team-app revokes the token it was issued (RFC 7009): that token ends, alice's grant stands.
    let ended = sim.post_form("/oauth2/revoke", &[("token", &token)], Some(team));
    assert_eq!(ended.status, 200);
    assert_eq!(
        introspect_as(&mut sim, &token, team),
        json!({ "active": false })
    );
    assert_eq!(introspect_as(&mut sim, &acting, team)["active"], true);
    assert_eq!(
        introspect_as(&mut sim, &users, (CONF_APP, CONF_SECRET))["active"],
        true
    );

    // alice's grant revoked by its app: every token exchanged from it ends too.
    let revoked = sim.post_form(
        "/oauth2/revoke",
        &[("token", &users)],
        Some((CONF_APP, CONF_SECRET)),
    );
    assert_eq!(revoked.status, 200);
    for token in [&token, &acting] {
        assert_eq!(
            introspect_as(&mut sim, token, team),
            json!({ "active": false })
        );
    }
}
