//! The whole offline PKCE flow once, end to end (SPEC.md "What the service does" 1–6).
use edgegrant::*;
use edgegrant_tests::*;

#[test]
fn pkce_offline_flow_end_to_end() {
    let mut sim = Sim::new(fixture_config());
    let q = pkce_offline_query("st8");
    // A first authorization asks for consent.
    let page = sim.authorize(&q, Some(&alice()));
    let Outcome::Consent(prompt) = page.outcome() else {
        panic!("{page:?}")
    };
    assert_eq!(prompt.app.as_str(), PKCE_APP);
    assert_eq!(prompt.access_type, TokenAccessType::Offline);
    assert_eq!(page.response().status, 200);
    assert!(page.response().body.contains("data-page=\"consent\""));
    assert!(sim.store.is_empty(), "the consent page writes nothing");
    let code = sim.code_for(&q, &alice());
    let resp = sim.exchange_pkce(&code, VERIFIER);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = json(&resp);
    let access = body["access_token"].as_str().unwrap();
    assert!(access.starts_with("sl."));
    assert_eq!(body["expires_in"], 14400);
    assert_eq!(body["token_type"], "bearer");
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let Answer::Serve(Authorized { principal: p, .. }) = sim.api(GET_ACCOUNT, access) else {
        panic!()
    };
    assert_eq!(p.subject, Subject::Account(alice().account_id));
    assert_eq!(p.uid, Some(alice().uid));
    let r = sim.refresh(&refresh, PKCE_APP, None);
    assert_eq!(r.status, 200, "{}", r.body);
    let new_access = json(&r)["access_token"].as_str().unwrap().to_owned();
    assert!(json(&r).get("refresh_token").is_none());
    let revoked = sim.revoke_answer(&new_access);
    assert_eq!(revoked.response().status, 200);
    assert_eq!(revoked.outcome(), &Outcome::Revoked);
    let denied = sim.api(GET_ACCOUNT, access);
    assert_eq!(denied.response().status, 401);
    assert_eq!(denied.refusal(), Some(&Refusal::AccessTokenRevoked));
    // Authorizing again: the user already granted these scopes and offline access, so the
    // request completes at once with a fresh code, and no consent page.
    let again = sim.authorize(&q, Some(&alice()));
    let Outcome::Redirect(location) = again.outcome() else {
        panic!("re-authorization completes at once: {again:?}")
    };
    assert_eq!(again.response().status, 302);
    assert_eq!(again.response().header("Location"), Some(location.as_str()));
    let code = redirect_param(location, "code").expect("a code");
    assert_eq!(redirect_param(location, "state").as_deref(), Some("st8"));
    assert_eq!(sim.exchange_pkce(&code, VERIFIER).status, 200);
    println!("{:#?}", sim.audit);
}
