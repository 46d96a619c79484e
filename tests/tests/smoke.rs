//! The whole offline PKCE flow once, end to end (SPEC.md "What the service does" 1–6).
use edgegrant::*;
use edgegrant_tests::*;

#[test]
fn pkce_offline_flow_end_to_end() {
    let mut sim = Sim::new(fixture_config());
    let q = pkce_offline_query("st8");
    let Outcome::Consent(prompt) = sim.authorize(&q, Some(&alice())) else {
        panic!()
    };
    assert!(!prompt.already_granted);
    let code = sim.code_for(&q, &alice());
    let resp = sim.exchange_pkce(&code, VERIFIER);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = json(&resp);
    let access = body["access_token"].as_str().unwrap();
    assert!(access.starts_with("sl."));
    assert_eq!(body["expires_in"], 14400);
    assert_eq!(body["token_type"], "bearer");
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let Outcome::Authorized(p) = sim.api(GET_ACCOUNT, access) else {
        panic!()
    };
    assert_eq!(p.account_id, alice().account_id);
    let r = sim.refresh(&refresh, PKCE_APP, None);
    assert_eq!(r.status, 200, "{}", r.body);
    let new_access = json(&r)["access_token"].as_str().unwrap().to_owned();
    assert!(json(&r).get("refresh_token").is_none());
    assert_eq!(sim.revoke(&new_access).status, 200);
    let denied = http(sim.api(GET_ACCOUNT, access));
    assert_eq!(denied.status, 401);
    let Outcome::Consent(prompt) = sim.authorize(&q, Some(&alice())) else {
        panic!()
    };
    assert!(prompt.already_granted);
    println!("{:#?}", sim.audit);
}
