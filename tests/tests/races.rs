//! Racing hosts and the host contract (SPEC.md: authorization code "usable once"; DESIGN.md: the
//! host contract). Every interleaving of the steps of two requests on one store is explored; a
//! step is one call to `handle` plus the read or the atomic commit it asks for.

use edgegrant::*;
use edgegrant_tests::*;

/// The end of one schedule: the store, each request's final progress, and which request's
/// transaction committed in which order.
struct Ending {
    store: Store,
    results: Vec<Progress>,
    commits: Vec<usize>,
    conflicts: usize,
}

fn explore(config: &Config, store: Store, requests: Vec<Request>) -> Vec<Ending> {
    let mut endings = Vec::new();
    let slots = requests.len();
    walk(
        config,
        store,
        requests,
        vec![None; slots],
        (Vec::new(), 0),
        &mut endings,
    );
    endings
}

fn walk(
    config: &Config,
    store: Store,
    requests: Vec<Request>,
    results: Vec<Option<Progress>>,
    (commits, conflicts): (Vec<usize>, usize),
    endings: &mut Vec<Ending>,
) {
    if results.iter().all(Option::is_some) {
        endings.push(Ending {
            store,
            results: results.into_iter().flatten().collect(),
            commits,
            conflicts,
        });
        return;
    }
    for i in 0..requests.len() {
        if results[i].is_some() {
            continue;
        }
        let (mut store, mut requests, mut results, mut commits, mut conflicts) = (
            store.clone(),
            requests.clone(),
            results.clone(),
            commits.clone(),
            conflicts,
        );
        let progress = requests[i].step(config, &mut store).expect("no misuse");
        assert!(requests[i].calls < 20, "a request must finish");
        match &progress {
            Progress::Done { committed, .. } => {
                if *committed {
                    commits.push(i);
                }
                results[i] = Some(progress);
            }
            Progress::Conflicted(_) => conflicts += 1,
            Progress::Loaded(_) => {}
        }
        walk(
            config,
            store,
            requests,
            results,
            (commits, conflicts),
            endings,
        );
    }
}

fn status(progress: &Progress) -> u16 {
    match progress {
        Progress::Done {
            outcome: Outcome::Http(r),
            ..
        } => r.status,
        other => panic!("expected an HTTP answer, got {other:?}"),
    }
}

fn exchange_input(code: &str) -> Input {
    Input::Token {
        request: form_request(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", PKCE_APP),
            ("code_verifier", VERIFIER),
            ("redirect_uri", PKCE_REDIRECT),
        ]),
    }
}

fn is_live(sim: &mut Sim, store: &Store, token: &str) -> bool {
    sim.store = store.clone();
    matches!(sim.api(GET_ACCOUNT, token), Outcome::Authorized(_))
}

#[test]
fn two_hosts_racing_on_one_code_yield_tokens_once() {
    let mut sim = Sim::new(fixture_config());
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let racers = vec![
        Request::new(exchange_input(&code), sim.now, entropy(101)),
        Request::new(exchange_input(&code), sim.now, entropy(202)),
    ];
    let endings = explore(&sim.config, sim.store.clone(), racers);
    assert!(endings.len() >= 20, "explored {} schedules", endings.len());
    let mut lost_a_commit_race = 0;
    for ending in &endings {
        let statuses: Vec<u16> = ending.results.iter().map(status).collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "{statuses:?}"
        );
        assert!(statuses.contains(&400));
        // One redemption: exactly one grant exists, and the code names it.
        let grants = ending
            .store
            .iter()
            .filter(|(_, v)| matches!(v.record, Record::Grant(_)))
            .count();
        assert_eq!(grants, 1);
        let issued: usize = ending
            .results
            .iter()
            .map(|p| match p {
                Progress::Done { audit, .. } => audit
                    .iter()
                    .filter(|e| matches!(e, AuditEvent::TokensIssued { .. }))
                    .count(),
                _ => 0,
            })
            .sum();
        assert_eq!(issued, 1);
        // The loser saw a used code: the winner's tokens are revoked (RFC 6749 §4.1.2).
        let winner = ending
            .results
            .iter()
            .position(|p| status(p) == 200)
            .unwrap();
        let Progress::Done {
            outcome: Outcome::Http(r),
            ..
        } = &ending.results[winner]
        else {
            unreachable!()
        };
        let token = json(r)["access_token"].as_str().unwrap().to_owned();
        assert!(!is_live(&mut sim, &ending.store, &token));
        lost_a_commit_race += ending.conflicts;
    }
    assert!(
        lost_a_commit_race > 0,
        "some schedule must race both commits"
    );
}

#[test]
fn refresh_racing_revoke_never_leaves_a_live_token() {
    let mut sim = Sim::new(fixture_config());
    let tokens = sim.pkce_offline_tokens(&alice());
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh_input = Input::Token {
        request: form_request(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", PKCE_APP),
        ]),
    };
    let revoke_input = Input::Revoke {
        request: bearer_request(&access),
    };
    let racers = vec![
        Request::new(refresh_input, sim.now, entropy(11)),
        Request::new(revoke_input, sim.now, entropy(12)),
    ];
    let endings = explore(&sim.config, sim.store.clone(), racers);
    // Refresh and revoke never conflict: the minted token points at the grant, so a revocation
    // committed before or after it ends it all the same.
    assert!(endings.len() > 10);
    for ending in &endings {
        assert_eq!(
            status(&ending.results[1]),
            200,
            "the revoke always succeeds"
        );
        if let Progress::Done {
            outcome: Outcome::Http(r),
            ..
        } = &ending.results[0]
        {
            if r.status == 200 {
                let minted = json(r)["access_token"].as_str().unwrap().to_owned();
                assert!(
                    !is_live(&mut sim, &ending.store, &minted),
                    "minted token outlived the revocation"
                );
            }
        }
        assert!(!is_live(&mut sim, &ending.store, &access));
    }
}

#[test]
fn consent_racing_unlink_never_revives_old_tokens() {
    let mut sim = Sim::new(fixture_config());
    let old = sim.pkce_offline_tokens(&alice());
    let old_access = old["access_token"].as_str().unwrap().to_owned();
    let consent = Input::Consent {
        query: pkce_offline_query("s"),
        user: alice(),
        decision: Decision::Allow,
    };
    let unlink = Input::Unlink {
        app: AppKey::new(PKCE_APP).unwrap(),
        account_id: alice().account_id,
        by: Unlinker::User,
    };
    let racers = vec![
        Request::new(consent, sim.now, entropy(21)),
        Request::new(unlink, sim.now, entropy(22)),
    ];
    let endings = explore(&sim.config, sim.store.clone(), racers);
    let mut saw_conflict = false;
    for ending in &endings {
        assert!(!is_live(&mut sim, &ending.store, &old_access));
        let Progress::Done {
            outcome: Outcome::Redirect(location),
            ..
        } = &ending.results[0]
        else {
            panic!("consent must redirect")
        };
        let code = redirect_param(location, "code").unwrap();
        sim.store = ending.store.clone();
        let exchanged = sim.exchange_pkce(&code, VERIFIER).status;
        // A code consented after the unlink works; one consented before it is void.
        let consent_last = ending.commits.last() == Some(&0);
        assert_eq!(
            exchanged == 200,
            consent_last,
            "commits {:?}",
            ending.commits
        );
        saw_conflict |= ending.conflicts > 0;
    }
    assert!(saw_conflict);
}

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
