//! The host contract itself (DESIGN.md): records not asked for are misuse, and the same inputs
//! give the same step. Racing hosts are explored in `race_explorer.rs`, crashes in `crash.rs`.

use edgegrant::*;
use edgegrant_tests::*;

#[test]
fn records_not_asked_for_are_host_misuse() {
    let config = fixture_config();
    let mut sim = Sim::new(config.clone());
    let token = sim.pkce_offline_tokens(&alice())["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (key, value) = sim
        .store
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let mut records = Records::new();
    records.insert(key, Some(value));
    let input = Input::Authorize {
        query: pkce_offline_query("s"),
        user: None,
    };
    let result = handle(&config, &input, sim.now, &entropy(1), &records);
    assert!(
        matches!(result, Err(Misuse::UnrequestedRecord(_))),
        "{result:?}"
    );

    // A record of the wrong type under a token's key.
    let access_key = RecordKey::AccessToken(AccessToken::presented(token.as_str()).digest());
    let mut records = Records::new();
    records.insert(
        access_key,
        Some(Versioned {
            version: 1,
            record: Record::Link(LinkRecord::default()),
        }),
    );
    let input = Input::ApiCall {
        endpoint: GET_ACCOUNT.into(),
        request: bearer_request(&token),
    };
    let result = handle(&config, &input, sim.now, &entropy(1), &records);
    assert!(
        matches!(result, Err(Misuse::WrongRecordType(_))),
        "{result:?}"
    );
}

#[test]
fn the_same_inputs_give_the_same_step() {
    let config = fixture_config();
    let input = Input::Consent {
        query: pkce_offline_query("s"),
        user: alice(),
        decision: Decision::Allow,
    };
    let mut records = Records::new();
    let first = handle(&config, &input, T0, &entropy(5), &records).unwrap();
    let Step::NeedRecords { keys } = &first else {
        panic!()
    };
    for key in keys {
        records.insert(key.clone(), None);
    }
    let a = handle(&config, &input, T0, &entropy(5), &records).unwrap();
    let b = handle(&config, &input, T0, &entropy(5), &records).unwrap();
    assert_eq!(a, b);
    let c = handle(&config, &input, T0, &entropy(6), &records).unwrap();
    assert_ne!(a, c, "other entropy, another code");
}
