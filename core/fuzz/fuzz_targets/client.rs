//! The PKCE client machine's parsing of what comes back to it — the redirect URL, the token and
//! revoke responses — in every state: the input is a JSON `[state, input]` (seeds in
//! `seeds.mjs`). No panic; requests go only to the configured endpoints; a redirect is accepted
//! only with the state the machine sent.
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
    let config = ClientConfig {
        client_id: "pkce-app".into(),
        authorize_url: "https://auth.example/oauth2/authorize".into(),
        token_url: "https://auth.example/oauth2/token".into(),
        revoke_url: "https://auth.example/2/auth/token/revoke".into(),
        redirect_uri: Some("http://127.0.0.1:8765/cb".into()),
        scopes: vec![],
        access_type: edgegrant::client::ClientAccessType::Offline,
        refresh_margin: 300,
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
