//! The PKCE client machine's parsing of what comes back to it — the redirect URL, the token and
//! revoke responses — in every state: the input is a JSON `[state, input]` (seeds in
//! `seeds.mjs`). No panic; requests go only to the configured endpoints; a redirect is accepted
//! only with the state the machine sent. An input of odd length drives a client with a DPoP key
//! (RFC 9449's example key), whose requests and bound calls always carry a proof.
#![no_main]
use edgegrant::client::{
    ClientConfig, ClientEntropy, ClientInput, ClientState, ClientStep, PkceClient,
};
use edgegrant::UnixTime;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((state, input)) = serde_json::from_slice::<(ClientState, ClientInput)>(data) else {
        return;
    };
    let dpop = data.len() % 2 == 1;
    let config = ClientConfig {
        client_id: "pkce-app".into(),
        authorize_url: "https://auth.example/oauth2/authorize".into(),
        token_url: "https://auth.example/oauth2/token".into(),
        revoke_url: "https://auth.example/2/auth/token/revoke".into(),
        redirect_uri: Some("http://127.0.0.1:8765/cb".into()),
        scopes: vec![],
        access_type: edgegrant::client::ClientAccessType::Offline,
        refresh_margin: 300,
        dpop_public_key: dpop.then(|| {
            serde_json::json!({ "kty": "EC", "crv": "P-256",
                "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
                "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA" })
        }),
    };
    let Ok(client) = PkceClient::new(config) else {
        return;
    };
    let transition = client.handle(
        &state,
        &input,
        UnixTime(1_700_000_000),
        &ClientEntropy::new([7; edgegrant::client::CLIENT_ENTROPY_LEN]),
    );
    if let ClientStep::Send { request } = &transition.step {
        assert!(
            request.url == "https://auth.example/oauth2/token"
                || request.url == "https://auth.example/2/auth/token/revoke",
            "request to {}",
            request.url
        );
        // A token request from a client with a key always proves it (a revocation, only for a
        // bound session).
        if dpop && request.url.ends_with("/oauth2/token") {
            assert!(request.proof.is_some(), "a token request without a proof");
        }
        if !dpop {
            assert!(request.proof.is_none(), "a proof without a key");
        }
    }
    if let ClientStep::Attach {
        authorization,
        proof,
    } = &transition.step
    {
        assert_eq!(
            authorization.starts_with("DPoP "),
            proof.is_some(),
            "a DPoP call without a proof, or a proof on a bearer call"
        );
        assert!(dpop || proof.is_none(), "a proof without a key");
    }
    if let (ClientState::Authorizing { state: sent, .. }, ClientInput::Redirected { url }) =
        (&state, &input)
    {
        if matches!(transition.step, ClientStep::Send { .. }) {
            assert!(
                url.contains(&format!("state={sent}")),
                "accepted a redirect without state {sent}: {url}"
            );
        }
    }
});
