//! Crash faults (issue 7): the host serving a request stops after any prefix of its steps —
//! after a read and before the commit, after the commit and before answering — and the client
//! sends the same request again, up to twice. The store stays consistent (`check_store`, run on
//! every schedule by the explorer), nothing half-written is ever seen, and a retried request
//! never yields a second set of tokens.

use edgegrant::*;
use edgegrant_tests::explorer::*;
use edgegrant_tests::*;

/// Every crash point of one request, with up to two crashes; prints the count.
fn crash_points(name: &str, sim: &Sim, input: Input, check: &mut dyn FnMut(&Schedule)) {
    let schedules = explore(&sim.config, &sim.store, sim.now, &[input], 2, check);
    report(&format!("crash faults: {name}: {schedules} schedules"));
    assert!(
        schedules >= 3,
        "{name}: a read, a commit and an answer to crash at"
    );
}

fn commits(schedule: &Schedule, matches: impl Fn(&AuditEvent) -> bool) -> usize {
    schedule
        .trace
        .iter()
        .map(|event| match event {
            Moment::Commit { audit, .. } => audit.iter().filter(|e| matches(e)).count(),
            _ => 0,
        })
        .sum()
}

#[test]
fn a_retried_exchange_never_yields_a_second_set_of_tokens() {
    let mut sim = Sim::new(fixture_config());
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    crash_points("code exchange", &sim, exchange_input(&code), &mut |s| {
        assert_eq!(s.answers[0].len(), 1, "the client gets one answer");
        assert!(
            commits(s, |e| matches!(e, AuditEvent::TokensIssued { .. })) <= 1,
            "{:?}",
            s.trace
        );
        let delivered: Vec<_> = s.answers[0].iter().filter_map(token_response).collect();
        let issued = commits(s, |e| matches!(e, AuditEvent::TokensIssued { .. })) == 1;
        if issued && delivered.is_empty() {
            // Tokens nobody received: the retry was a second presentation of the code, which
            // revoked them.
            assert_eq!(
                commits(s, |e| matches!(e, AuditEvent::CodeReused { .. })),
                1
            );
        }
        for (access, _) in &delivered {
            assert!(validates(&sim.config, &s.store, sim.now, access));
        }
    });
}

#[test]
fn a_retried_consent_issues_codes_only_for_what_was_asked() {
    let sim = Sim::new(fixture_config());
    let consent = Input::Http {
        request: consent_form(&pkce_offline_query("s"), Decision::Allow),
        user: Some(alice()),
    };
    crash_points("consent", &sim, consent, &mut |s| {
        assert_eq!(s.answers[0].len(), 1);
        assert!(matches!(s.answers[0][0].outcome(), Outcome::Redirect(_)));
        // Each attempt that committed issued one code; none issued tokens.
        assert!(commits(s, |e| matches!(e, AuditEvent::CodeIssued { .. })) >= 1);
        assert_eq!(
            commits(s, |e| matches!(e, AuditEvent::TokensIssued { .. })),
            0
        );
    });
}

#[test]
fn a_retried_refresh_answers_one_live_access_token() {
    let (sim, _, refresh) = signed_in();
    crash_points("refresh", &sim, refresh_input(&refresh), &mut |s| {
        let delivered: Vec<_> = s.answers[0].iter().filter_map(token_response).collect();
        assert_eq!(delivered.len(), 1, "{:?}", s.trace);
        assert!(validates(&sim.config, &s.store, sim.now, &delivered[0].0));
        assert!(
            delivered[0].1.is_none(),
            "refresh tokens are reused, never reissued"
        );
    });
}

#[test]
fn a_retried_revocation_leaves_the_grant_revoked() {
    let (sim, access, _) = signed_in();
    crash_points("revocation", &sim, revoke_input(&access), &mut |s| {
        let answer = &s.answers[0][0];
        // The retry of a revocation that committed finds the token already dead.
        match answer.response().status {
            200 => assert_eq!(answer.outcome(), &Outcome::Revoked),
            401 => assert_eq!(answer.refusal(), Some(&Refusal::AccessTokenRevoked)),
            other => panic!("status {other}: {answer:?}"),
        }
        assert_eq!(
            commits(s, |e| matches!(e, AuditEvent::GrantRevoked { .. })),
            1
        );
        assert!(!validates(&sim.config, &s.store, sim.now, &access));
    });
}

#[test]
fn a_retried_unlink_leaves_every_token_dead() {
    let (sim, access, refresh) = signed_in();
    crash_points("unlink", &sim, unlink_input(&alice()), &mut |s| {
        assert_eq!(s.answers[0][0].outcome(), &Outcome::Unlinked);
        assert!(commits(s, |e| matches!(e, AuditEvent::Unlinked { .. })) >= 1);
        assert!(!validates(&sim.config, &s.store, sim.now, &access));
        let mut after = Sim::new(Config::clone(&sim.config));
        after.store = s.store.clone();
        let refused = after.run(refresh_input(&refresh));
        assert_eq!(refused.response().status, 400);
        assert_eq!(oauth_error(refused.response()), "invalid_grant");
        assert_eq!(refused.refusal(), Some(&Refusal::RefreshTokenUnlinked));
    });
}
