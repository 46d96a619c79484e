//! The host contract itself (DESIGN.md): an event that does not answer the step, records not
//! asked for or left out, are misuse and change nothing; stored bytes that are not a record of
//! the key's type are a storage fault, answered 503; the same inputs give the same step. Racing
//! hosts are explored in `race_explorer.rs`, crashes in `crash.rs`.

use std::sync::Arc;

use edgegrant::*;
use edgegrant_tests::*;

/// A request of the core itself (not the harness's), started at [`T0`], with its first step.
fn start(config: &Arc<Config>, input: Input, seed: u64) -> (edgegrant::Request, Step) {
    edgegrant::Request::start(config.clone(), input, T0, entropy(seed))
}

/// The keys of a read.
fn read_keys(step: &Step) -> Vec<RecordKey> {
    match step {
        Step::Read(keys) => keys.clone(),
        other => panic!("expected a read, got {other:?}"),
    }
}

#[test]
fn events_that_do_not_answer_the_step_are_host_misuse_and_change_nothing() {
    let mut sim = Sim::new(fixture_config());
    sim.pkce_offline_tokens(&alice());
    // The access-token record: neither request below asks for it.
    let (key, value) = sim
        .store
        .iter()
        .find(|(k, _)| matches!(k, RecordKey::AccessToken(..)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();

    // A request that needs no record at all (no user: the sign-in page) is over at once.
    let input = Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("s")),
        user: None,
    };
    let (mut request, step) = start(&sim.config, input, 1);
    assert!(matches!(step, Step::Respond(_)));
    let result = request.advance(Event::Read(vec![(key.clone(), Some(value.clone()))]));
    assert_eq!(result, Err(Misuse::OutOfTurn("read")));
    for (event, name) in [
        (Event::Committed, "committed"),
        (Event::Conflicted, "conflicted"),
        (Event::Unavailable, "unavailable"),
    ] {
        assert_eq!(request.advance(event), Err(Misuse::OutOfTurn(name)));
    }

    // A request reading one key, handed another, or handed nothing, or the key twice.
    let input = Input::Http {
        request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("s")),
        user: Some(alice()),
    };
    let (mut request, step) = start(&sim.config, input, 1);
    let keys = read_keys(&step);
    assert!(!keys.contains(&key), "{keys:?}");
    let mut with_extra: Vec<_> = keys.iter().map(|k| (k.clone(), None)).collect();
    with_extra.push((key.clone(), Some(value)));
    let result = request.advance(Event::Read(with_extra));
    assert_eq!(result, Err(Misuse::UnrequestedRecord(key.to_string())));
    let result = request.advance(Event::Read(Vec::new()));
    assert_eq!(result, Err(Misuse::MissingRecord(keys[0].to_string())));
    let twice: Vec<_> = keys
        .iter()
        .chain(&keys)
        .map(|k| (k.clone(), None))
        .collect();
    let result = request.advance(Event::Read(twice));
    assert_eq!(result, Err(Misuse::UnrequestedRecord(keys[0].to_string())));
    // No transaction is pending: neither a commit nor a conflict answers a read.
    assert_eq!(
        request.advance(Event::Committed),
        Err(Misuse::OutOfTurn("committed"))
    );
    assert_eq!(
        request.advance(Event::Conflicted),
        Err(Misuse::OutOfTurn("conflicted"))
    );
    // Nothing was taken: the request still answers the read it asked for, as a fresh one does.
    let found: Vec<_> = keys.iter().map(|k| (k.clone(), None)).collect();
    let after = request.advance(Event::Read(found.clone())).unwrap();
    let (mut fresh, _) = start(
        &sim.config,
        Input::Http {
            request: HttpRequest::new("GET", "/oauth2/authorize", &pkce_offline_query("s")),
            user: Some(alice()),
        },
        1,
    );
    assert_eq!(after, fresh.advance(Event::Read(found)).unwrap());
}

#[test]
fn a_stored_record_the_core_cannot_read_is_a_storage_fault() {
    let mut sim = Sim::new(fixture_config());
    let token = sim.pkce_offline_tokens(&alice())["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let access_key = RecordKey::of_access_token(&fixture_key(), token.as_str()).unwrap();
    let input = Input::Http {
        request: bearer_request(GET_ACCOUNT, &token),
        user: None,
    };
    // A record of the wrong type under the token's key, and bytes that are no record at all;
    // then the token's own record damaged past its header, which the check reads in place:
    // cut short, and with a `:` in its app key (no app key holds one), so that only the check
    // of the field it uses can tell.
    let link = Record::Link(LinkRecord::default()).encode();
    let garbage = b"{\"type\":\"access_token\"".to_vec();
    let own = sim.store.get(&access_key).unwrap().bytes.clone();
    let cut = own[..own.len() - 1].to_vec();
    let app_at = own
        .windows(PKCE_APP.len())
        .position(|w| w == PKCE_APP.as_bytes())
        .unwrap();
    let mut bad_app = own.clone();
    bad_app[app_at] = b':';
    assert!(Record::decode(&bad_app).is_err());
    // (The token is read with its account's ledger, as the store holds it.)
    let ledger_key = RecordKey::Ledger(access_key.partition());
    let ledger = sim.store.get(&ledger_key).cloned();
    assert!(ledger.is_some());
    for bytes in [link, garbage, cut, bad_app] {
        let (mut request, step) = start(&sim.config, input.clone(), 1);
        assert_eq!(read_keys(&step), [access_key.clone(), ledger_key.clone()]);
        let stored = Stored { version: 1, bytes };
        let step = request
            .advance(Event::Read(vec![
                (access_key.clone(), Some(stored)),
                (ledger_key.clone(), ledger.clone()),
            ]))
            .unwrap();
        answers_a_storage_fault(&step, &access_key);
    }
}

/// `step` answers a storage fault of the record under `key`: 503, to be retried in a second,
/// the key named to the host (for its log) and not to the client.
fn answers_a_storage_fault(step: &Step, key: &RecordKey) {
    let Step::Respond(reply) = step else {
        panic!("a storage fault is answered, got {step:?}")
    };
    assert_eq!(
        reply.refusal(),
        Some(&Refusal::StorageFault(key.to_string()))
    );
    assert_eq!(reply.response.status, 503);
    assert_eq!(reply.response.header("Retry-After"), Some("1"));
    assert!(
        !reply.response.body.contains(&key.to_string()),
        "the key is for the host's log, not the client"
    );
}

/// A token request reads the presented credential and its account's ledger in its first batch,
/// before the grant and link it mints under: an end committing between the two reads is seen
/// by one of them (`machines::ledger`). A ledger the core cannot read is a storage fault.
#[test]
fn a_mint_reads_the_ledger_first_and_a_damaged_ledger_is_a_storage_fault() {
    let mut sim = Sim::new(fixture_config());
    let refresh = sim.pkce_offline_tokens(&alice())["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let refresh_key = RecordKey::of_refresh_token(&fixture_key(), &refresh).unwrap();
    let ledger_key = RecordKey::Ledger(refresh_key.partition());
    let input = Input::Http {
        request: form_request(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", PKCE_APP),
        ]),
        user: None,
    };
    let (mut request, step) = start(&sim.config, input, 1);
    assert_eq!(read_keys(&step), [refresh_key.clone(), ledger_key.clone()]);
    let token = sim.store.get(&refresh_key).cloned();
    let damaged = Stored {
        version: 1,
        bytes: Record::Link(LinkRecord::default()).encode(),
    };
    let step = request
        .advance(Event::Read(vec![
            (refresh_key, token),
            (ledger_key.clone(), Some(damaged)),
        ]))
        .unwrap();
    answers_a_storage_fault(&step, &ledger_key);
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
        let (mut request, step) = start(&config, consent(), seed);
        let found = read_keys(&step).into_iter().map(|k| (k, None)).collect();
        let Step::Write(transaction) = request.advance(Event::Read(found)).unwrap() else {
            panic!("the consent writes its code")
        };
        let Step::Respond(reply) = request.advance(Event::Committed).unwrap() else {
            panic!("a reply after the commit")
        };
        (transaction, reply)
    };
    let a = transaction(5);
    let b = transaction(5);
    assert_eq!(a, b);
    let c = transaction(6);
    assert_ne!(a.0, c.0, "other entropy, another code");
    assert_ne!(a.1, c.1, "other entropy, another redirect");
}
