//! The host contract itself (DESIGN.md): records not asked for, and stored bytes that are not a
//! record of the key's type, are misuse; the same inputs give the same step. Racing hosts are
//! explored in `race_explorer.rs`, crashes in `crash.rs`.

use std::sync::Arc;

use edgegrant::*;
use edgegrant_tests::*;

/// A request of the core itself (not the harness's), started at [`T0`].
fn start(config: &Arc<Config>, input: Input, seed: u64) -> edgegrant::Request {
    edgegrant::Request::new(config.clone(), input, T0, entropy(seed))
}

/// The keys of the pending read.
fn read_keys(request: &mut edgegrant::Request) -> Vec<RecordKey> {
    match request.poll() {
        Step::Read(keys) => keys.to_vec(),
        other => panic!("expected a read, got {other:?}"),
    }
}

#[test]
fn records_not_asked_for_are_host_misuse() {
    let mut sim = Sim::new(fixture_config());
    let token = sim.pkce_offline_tokens(&alice())["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The access-token record: neither request below asks for it.
    let (key, value) = sim
        .store
        .iter()
        .find(|(k, _)| matches!(k, RecordKey::AccessToken(..)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();

    // A request that needs no record at all (no user: the sign-in page).
    let input = Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("s")),
        user: None,
    };
    let mut request = start(&sim.config, input, 1);
    assert!(matches!(request.poll(), Step::Respond(_)));
    let result = request.supply(&key, Some(&value));
    assert!(
        matches!(result, Err(Misuse::UnrequestedRecord(_))),
        "{result:?}"
    );

    // A request reading one key, handed another.
    let input = Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("s")),
        user: Some(alice()),
    };
    let mut request = start(&sim.config, input, 1);
    let keys = read_keys(&mut request);
    assert!(!keys.contains(&key), "{keys:?}");
    let result = request.supply(&key, Some(&value));
    assert_eq!(result, Err(Misuse::UnrequestedRecord(key.to_string())));
    // Nothing was taken: the request still waits for the keys it named.
    assert_eq!(read_keys(&mut request), keys);

    // No transaction is pending: neither committed nor conflicted may be called.
    assert_eq!(request.committed(), Err(Misuse::NoTransaction));
    assert_eq!(request.conflicted(), Err(Misuse::NoTransaction));

    // A record of the wrong type under a token's key.
    let access_key = RecordKey::of_access_token(&fixture_key(), token.as_str()).unwrap();
    let input = Input::Http {
        request: bearer_request(GET_ACCOUNT, &token),
        user: None,
    };
    let mut request = start(&sim.config, input.clone(), 1);
    assert_eq!(read_keys(&mut request), std::slice::from_ref(&access_key));
    let link = Stored {
        version: 1,
        bytes: Record::Link(LinkRecord::default()).encode(),
    };
    let result = request.supply(&access_key, Some(&link));
    assert_eq!(result, Err(Misuse::BadRecord(access_key.to_string())));

    // Bytes that are no record at all.
    let mut request = start(&sim.config, input, 1);
    read_keys(&mut request);
    let garbage = Stored {
        version: 1,
        bytes: b"{\"type\":\"access_token\"".to_vec(),
    };
    let result = request.supply(&access_key, Some(&garbage));
    assert_eq!(result, Err(Misuse::BadRecord(access_key.to_string())));
}

#[test]
fn the_same_inputs_give_the_same_step() {
    let config = Arc::new(fixture_config());
    let consent = || Input::Http {
        request: consent_form(&pkce_offline_query("s"), Decision::Allow),
        user: Some(alice()),
    };
    // Runs the consent on an empty store up to its write.
    let transaction = |seed: u64| {
        let mut request = start(&config, consent(), seed);
        for key in read_keys(&mut request) {
            request.supply(&key, None).unwrap();
        }
        let Step::Write(transaction) = request.poll() else {
            panic!("the consent writes its code")
        };
        let transaction = transaction.clone();
        request.committed().unwrap();
        let Step::Respond(reply) = request.poll() else {
            panic!("a reply after the commit")
        };
        (transaction, reply.clone())
    };
    let a = transaction(5);
    let b = transaction(5);
    assert_eq!(a, b);
    let c = transaction(6);
    assert_ne!(a.0, c.0, "other entropy, another code");
    assert_ne!(a.1, c.1, "other entropy, another redirect");
}
