// The PKCE client side for JavaScript hosts (browser pages, CLIs, servers acting as clients).
// The machine in the core decides; this file supplies the clock, the entropy, `fetch` and, for
// DPoP, the signature of each proof with a key only WebCrypto holds, and carries requests out.
// The host keeps the state (e.g. in sessionStorage across the redirect).
import { clientEntropyLength, createPkceMachine } from "./core.js";

/** The state a new client starts in. */
export const IDLE = Object.freeze({ phase: "idle" });

const systemClock = () => Math.floor(Date.now() / 1000);

const SIGNING = { ES256: { name: "ECDSA", hash: "SHA-256" }, RS256: { name: "RSASSA-PKCS1-v1_5" } };

/**
 * A DPoP key (RFC 9449) for `createPkceClient`'s `dpop` option: an ECDSA P-256 key pair whose
 * private half cannot be exported (`extractable: false`), and its public half as a JWK. The key
 * pair may be kept in IndexedDB as it is (a `CryptoKey` survives structured cloning, still
 * unreadable): keep `publicJwk` beside it.
 */
export async function createDpopKey() {
  const { privateKey, publicKey } = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", publicKey);
  return { privateKey, publicKey, publicJwk: { kty, crv, x, y } };
}

const base64url = (bytes) => {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

/**
 * A PKCE client for `config`: `step(state, input)` is one pure transition with the host's clock
 * and fresh entropy; `run(state, input)` also carries out `send` steps with `fetch`, feeding each
 * answer back, until the machine wants something else (navigate, attach, authorized, …).
 * `onExchange(request, response)` sees every request (with its `DPoP` header) and its raw answer.
 * `dpop: { privateKey, publicJwk }` (see `createDpopKey`) binds the tokens to the key.
 */
export function createPkceClient(config, { clock = systemClock, random, fetch: send = (...args) => fetch(...args), onExchange, dpop } = {}) {
  if (dpop && !(dpop.privateKey && dpop.publicJwk)) throw new TypeError("edgegrant: dpop needs { privateKey, publicJwk } (see createDpopKey)");
  const bound = dpop ? { ...config, dpop_public_key: dpop.publicJwk } : config;
  const machine = createPkceMachine(bound);
  const draw = random ?? (() => crypto.getRandomValues(new Uint8Array(clientEntropyLength())));
  const step = (state, input) => machine.handle(state, input, clock(), draw());

  /** The `DPoP` header of a proof the machine handed out, signed with the private key. */
  async function proofHeader(proof) {
    if (!dpop) throw new Error("edgegrant: the machine asked for a DPoP proof and this client has no key");
    const signature = await crypto.subtle.sign(SIGNING[proof.alg], dpop.privateKey, new TextEncoder().encode(proof.signing_input));
    return `${proof.signing_input}.${base64url(signature)}`;
  }

  async function run(state, input) {
    let transition = step(state, input);
    for (let hop = 0; transition.step.step === "send"; hop++) {
      if (hop > 4) throw new Error("edgegrant: the client machine sent more than 4 requests in a row");
      const { proof, ...request } = transition.step.request;
      if (proof) request.headers = [...request.headers, ["DPoP", await proofHeader(proof)]];
      const answer = await send(request.url, { method: request.method, headers: request.headers, body: request.body || undefined });
      const response = { status: answer.status, headers: [...answer.headers], body: await answer.text() };
      onExchange?.(request, response);
      transition = step(transition.state, { kind: "response", response });
    }
    return transition;
  }

  /**
   * Calls an API endpoint with the session's token (bearer, or DPoP with a proof of this call):
   * refreshes first when due, meets a DPoP nonce the API asks for, and refreshes once more after
   * a 401 when the machine says so. Resolves `{ state, response }` or, when the user must
   * authorize again or the call cannot be made, `{ state, step }`.
   */
  async function call(state, url, init = {}) {
    // The request as fetch makes it (a relative URL resolved, the method normalized): what a
    // proof names. Each attempt sends a copy of it, so a streamed body survives a retry.
    const template = new Request(url, { ...init, method: init.method ?? "POST" });
    const target = { method: template.method, url: template.url };
    // `call` answers `attach`, or refreshes first (a `send`, then `authorized`: ask again).
    const prepare = async (transition) => (transition.step.step === "authorized" ? step(transition.state, { kind: "call", ...target }) : transition);
    let transition = await prepare(await run(state, { kind: "call", ...target }));
    // At most: the call, again with the API's nonce, again after a refresh, and its nonce.
    for (let attempt = 0; attempt < 4; attempt++) {
      if (transition.step.step !== "attach") return transition;
      const request = template.clone();
      request.headers.set("Authorization", transition.step.authorization);
      if (transition.step.proof) request.headers.set("DPoP", await proofHeader(transition.step.proof));
      const response = await send(request);
      if (response.status !== 401) return { state: transition.state, response };
      const challenge = { challenge: response.headers.get("WWW-Authenticate"), nonce: response.headers.get("DPoP-Nonce") };
      transition = await prepare(await run(transition.state, { kind: "unauthorized", ...challenge, ...target }));
    }
    return transition;
  }

  return { step, run, call, proofHeader, config: bound };
}
