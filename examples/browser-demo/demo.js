// The browser demo: a public client driving the PKCE client machine (WebAssembly, from the
// edgegrant package) against the authorization server that serves this page — or, when the page
// is served from another origin, the one its <html data-server="…"> names (a single-page app on
// its own origin, calling the server cross-origin: CORS). Every request
// the machine asks for is shown as raw HTTP with its answer. State lives in sessionStorage so
// the flow survives the round trip through the authorization server. When the server offers DPoP
// (RFC 9449: its metadata lists dpop_signing_alg_values_supported), the tokens are bound to a
// key of this page: an ECDSA P-256 key WebCrypto will not export, kept in IndexedDB, which signs
// a proof for every request; each proof is shown decoded next to its request.
import { IDLE, createDpopKey, createPkceClient } from "./edgegrant/src/browser.js";

const SERVER = document.documentElement.dataset.server || location.origin;
const ACCOUNT_URL = `${SERVER}/2/users/get_current_account`;
const STORE = "edgegrant-demo";
const FOUR_HOURS = 4 * 60 * 60;

const saved = JSON.parse(sessionStorage.getItem(STORE) ?? "null") ?? { state: IDLE, access: "offline", dpop: true, cards: [], replay: null };
const save = () => sessionStorage.setItem(STORE, JSON.stringify(saved));
const $ = (id) => document.getElementById(id);
const now = () => Math.floor(Date.now() / 1000);

// ---- the DPoP key, kept in IndexedDB ----

/** Runs `act` on the demo's key store in a transaction of `mode`; resolves its request's result. */
function keyStore(mode, act) {
  return new Promise((resolve, reject) => {
    const opened = indexedDB.open("edgegrant-demo", 1);
    opened.onupgradeneeded = () => opened.result.createObjectStore("keys");
    opened.onerror = () => reject(opened.error);
    opened.onsuccess = () => {
      const db = opened.result;
      const tx = db.transaction("keys", mode);
      const request = act(tx.objectStore("keys"));
      tx.oncomplete = () => (db.close(), resolve(request.result));
      tx.onerror = () => (db.close(), reject(tx.error));
    };
  });
}

/** This page's DPoP key: made once, then read back from IndexedDB (still unexportable). */
async function dpopKey() {
  const kept = await keyStore("readonly", (store) => store.get("dpop"));
  if (kept) return kept;
  const key = await createDpopKey();
  await keyStore("readwrite", (store) => store.put(key, "dpop"));
  return key;
}

/** Whether the server binds tokens to keys: its metadata (RFC 8414) lists DPoP's algorithms. */
async function serverOffersDpop() {
  try {
    const metadata = await (await fetch(`${SERVER}/.well-known/oauth-authorization-server`)).json();
    return metadata.dpop_signing_alg_values_supported?.includes("ES256") === true;
  } catch {
    return false; // no metadata (the reference profile): bearer tokens only
  }
}
const offered = await serverOffersDpop();
const bound = () => offered && saved.dpop;

async function client() {
  return createPkceClient(
    {
      client_id: "demo-browser",
      authorize_url: `${SERVER}/oauth2/authorize`,
      token_url: `${SERVER}/oauth2/token`,
      revoke_url: `${SERVER}/2/auth/token/revoke`,
      // Back to this page, on its own origin.
      redirect_uri: `${location.origin}/demo/`,
      scopes: ["account_info.read"],
      access_type: saved.access,
    },
    { onExchange: (request, response) => addCard(exchangeCard(request, response)), dpop: bound() || saved.state.session?.bound ? await dpopKey() : undefined },
  );
}

// ---- raw HTTP, as text ----

function rawRequest({ method, url, headers, body }) {
  const target = new URL(url);
  const lines = [`${method} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`, ...headers.map(([n, v]) => `${n}: ${v}`)];
  return lines.join("\n") + "\n\n" + (body ?? "");
}

function rawResponse({ status, headers, body }) {
  const shown = headers.filter(([name]) => /^(content-type|cache-control|www-authenticate|location|dpop-nonce)$/i.test(name));
  let pretty = body;
  try {
    pretty = JSON.stringify(JSON.parse(body), null, 2);
  } catch {}
  return [`HTTP/1.1 ${status}`, ...shown.map(([n, v]) => `${n}: ${v}`)].join("\n") + "\n\n" + pretty;
}

/** A DPoP proof's header and claims, decoded (its signature is bytes, shown as sent). */
function decodedProof(headers) {
  const proof = headers.find(([name]) => name === "DPoP")?.[1];
  if (!proof) return undefined;
  const part = (text) => JSON.stringify(JSON.parse(atob(text.replace(/-/g, "+").replace(/_/g, "/"))), null, 2);
  const [header, claims] = proof.split(".");
  return `DPoP proof, decoded\n\n${part(header)}\n${part(claims)}`;
}

const PROOF_NOTE = " The DPoP header is a JWT signed by this page's key — which WebCrypto will not export, kept in IndexedDB — for this method and URL, now, once.";

/** The card for a request the machine sent, explained by what it was for. */
function exchangeCard(request, response) {
  const grant = request.url.endsWith("/oauth2/token") ? new URLSearchParams(request.body).get("grant_type") : "revoke";
  const titles = {
    authorization_code: ["Code exchange", "The code and the PKCE verifier go to the token endpoint. Only this page knows the verifier, so a stolen code is useless to anyone else."],
    refresh_token: ["Refresh", "The access token is due, so the machine trades the refresh token for a new one — no user involved. The refresh token itself stays the same."],
    revoke: ["Revoke", "The access token authenticates its own revocation; the server ends the whole grant: this token, the refresh token and every token minted from it."],
  };
  let [title, text] = titles[grant];
  const proof = decodedProof(request.headers);
  let kind = response.status < 300 ? "ok" : "bad";
  if (response.status === 400 && JSON.parse(response.body || "{}").error === "use_dpop_nonce") {
    [title, text, kind] = [`${title}: the server's nonce`, "The server takes proofs only with a nonce it handed out (DPoP-Nonce): the machine signs a new proof carrying it and sends the request again.", "note"];
  } else if (proof) {
    text += PROOF_NOTE;
  }
  return { title, text, kind, request: rawRequest(request), response: rawResponse(response), proof };
}

// ---- rendering ----

function addCard(card) {
  saved.cards.push(card);
  save();
  render();
}

function render() {
  const list = $("timeline");
  list.replaceChildren(
    ...saved.cards.map((card) => {
      const item = document.createElement("li");
      item.className = `card ${card.kind ?? ""}`;
      const title = document.createElement("h2");
      title.textContent = card.title;
      const text = document.createElement("p");
      text.textContent = card.text;
      item.append(title, text);
      if (card.request || card.response) {
        const http = document.createElement("div");
        http.className = "http";
        for (const raw of [card.request, card.response, card.proof].filter(Boolean)) {
          const pre = document.createElement("pre");
          pre.textContent = raw;
          http.append(pre);
        }
        item.append(http);
      }
      return item;
    }),
  );
  const phase = saved.state.phase;
  const authorized = phase === "authorized";
  $("call").disabled = !authorized;
  $("jump").disabled = !authorized;
  $("revoke").disabled = !authorized;
  $("replay").disabled = !(saved.replay && phase === "idle");
  for (const radio of document.querySelectorAll("input[name=access]")) {
    radio.checked = radio.value === saved.access;
    radio.disabled = phase !== "idle";
  }
  const dpop = $("dpop");
  dpop.checked = bound();
  dpop.disabled = !offered || phase !== "idle";
  $("dpop-note").textContent = offered ? "" : " (this server does not offer it: its metadata lists no DPoP algorithms)";
  const status = $("status");
  status.className = "status";
  if (authorized) {
    const { expires_at, refresh_token, account_id, bound: keyBound } = saved.state.session;
    const left = expires_at === null ? "never expires" : `expires in ${Math.max(0, expires_at - now())} s`;
    status.textContent = `Signed in as ${account_id} · access token ${left} · ${refresh_token ? "refresh token held (offline)" : "no refresh token (online)"} · ${keyBound ? "bound to this page's key (DPoP)" : "bearer"}`;
    status.classList.add("ok");
  } else {
    status.textContent = phase === "authorizing" ? "Waiting for the authorization server…" : "Not signed in.";
  }
  if (saved.cards.at(-1)?.kind === "bad") status.classList.add("bad");
}

// ---- the flow ----

async function begin() {
  saved.access = document.querySelector("input[name=access]:checked").value;
  saved.dpop = $("dpop").checked;
  saved.replay = null;
  const { state, step } = (await client()).step(IDLE, { kind: "begin" });
  saved.state = state;
  const params = [...new URL(step.url).searchParams].map(([n, v]) => `  ${n} = ${v}`).join("\n");
  const binding = bound() ? " dpop_jkt names this page's DPoP key (its thumbprint): the code will be redeemed only with a proof of that key." : "";
  addCard({
    title: "Authorization URL",
    text: `The machine drew a fresh code verifier and state from crypto.getRandomValues and sends you to the authorization server with the verifier's S256 challenge (${saved.access} access).${binding} Sign in and choose Allow or Deny.`,
    request: `GET ${step.url}\n\n${params}`,
  });
  location.assign(step.url);
}

async function cameBack() {
  const url = location.href;
  history.replaceState(null, "", location.pathname); // the code must not linger in the address bar
  addCard({ title: "Redirect back", text: "The server sent the browser back to the registered redirect URI. The machine checks that state matches what it sent before it trusts anything here.", request: `GET ${url}` });
  const { state, step } = await (await client()).run(saved.state, { kind: "redirected", url });
  saved.state = state;
  finish(step);
}

/** Reports the machine's last step. */
function finish(step) {
  if (step.step === "authorized") {
    const { expires_at, refreshable, scopes, bound: keyBound } = step.session;
    const binding = keyBound ? " The tokens are bound to this page's key (token_type DPoP): without a proof of the key they are worth nothing." : "";
    addCard({ title: "Authorized", kind: "ok", text: `Scopes: ${scopes.join(" ")}. The access token works until ${new Date(expires_at * 1000).toLocaleTimeString()}; ${refreshable ? "the refresh token renews it." : "after that, you authorize again."}${binding}` });
  } else if (step.step === "failed") {
    const { kind, error, description } = step.error;
    addCard({ title: "Refused", kind: "bad", text: `${error ?? kind}${description ? `: ${description}` : ""}` });
  } else if (step.step === "reauthorize") {
    addCard({ title: "Authorize again", kind: "bad", text: `${step.reason}. Online access has no refresh token: only you can start a new authorization.` });
  } else if (step.step === "signed_out") {
    addCard({ title: "Signed out", kind: "ok", text: "The server confirmed the revocation and the machine forgot the tokens." });
  } else {
    save();
    render();
  }
}

/** Calls the API with `headers`, showing the call and its answer; resolves the answer. */
async function callApi(headers, { replayed = false } = {}) {
  const answer = await fetch(ACCOUNT_URL, { method: "POST", headers });
  const response = { status: answer.status, headers: [...answer.headers], body: await answer.text() };
  const proof = decodedProof(headers);
  const scheme = proof ? "A DPoP call to the API: the token and a proof of this page's key for this call (its hash of the token, ath);" : "A bearer call to the API;";
  addCard({
    title: answer.ok ? "API call" : "API call refused",
    kind: answer.ok ? "ok" : "bad",
    text: answer.ok
      ? `${scheme} the server checked the token, its grant and the endpoint's Required Scope (account_info.read).`
      : replayed
        ? "The last call, replayed exactly as it went (token and proof alike) after the revocation: the server refuses the token, with a 401 and a WWW-Authenticate challenge."
        : "The server refuses the call: it answers 401 with a WWW-Authenticate challenge.",
    request: rawRequest({ method: "POST", url: ACCOUNT_URL, headers, body: "" }),
    response: rawResponse(response),
    proof,
  });
  return response;
}

async function call() {
  const pkce = await client();
  const target = { method: "POST", url: ACCOUNT_URL };
  // Ask the machine first: it attaches the token, or refreshes it first when due, or says the
  // user must authorize again (online access past expiry).
  let { state, step } = await pkce.run(saved.state, { kind: "call", ...target });
  if (step.step === "authorized") ({ state, step } = pkce.step(state, { kind: "call", ...target }));
  saved.state = state;
  // The call, and once more if the API asks for its DPoP nonce.
  for (let attempt = 0; attempt < 2 && step.step === "attach"; attempt++) {
    const headers = [["Authorization", step.authorization]];
    if (step.proof) headers.push(["DPoP", await pkce.proofHeader(step.proof)]);
    const response = await callApi(headers);
    saved.replay = headers; // kept only to show, after a revocation, the 401 that a replay gets
    if (response.status !== 401) {
      save();
      return render();
    }
    const header = (name) => response.headers.find(([n]) => n.toLowerCase() === name)?.[1] ?? null;
    const refused = { kind: "unauthorized", challenge: header("www-authenticate"), nonce: header("dpop-nonce"), ...target };
    ({ state, step } = await pkce.run(saved.state, refused));
    saved.state = state;
  }
  if (step.step !== "attach") finish(step);
}

function jump() {
  // As if four hours had passed: the session's tokens age by four hours. (The clock itself
  // stays: a DPoP proof carries the real time, which the server checks within minutes.)
  const { session } = saved.state;
  if (session.expires_at !== null) session.expires_at -= FOUR_HOURS;
  addCard({
    title: "Four hours later",
    text:
      saved.access === "offline"
        ? "The demo aged this client's tokens by 4 hours. Its access token is now due, so the next call refreshes first."
        : "The demo aged this client's tokens by 4 hours. Its online access token has expired: the next call says to authorize again.",
  });
}

async function revoke() {
  const { state, step } = await (await client()).run(saved.state, { kind: "revoke" });
  saved.state = state;
  finish(step);
}

async function replay() {
  await callApi(saved.replay, { replayed: true });
}

function reset() {
  sessionStorage.removeItem(STORE);
  location.assign(location.pathname);
}

const guard = (action) => async () => {
  try {
    await action();
  } catch (error) {
    addCard({ title: "Error", kind: "bad", text: String(error?.message ?? error) });
  }
};

$("begin").addEventListener("click", guard(begin));
$("call").addEventListener("click", guard(call));
$("jump").addEventListener("click", guard(jump));
$("revoke").addEventListener("click", guard(revoke));
$("replay").addEventListener("click", guard(replay));
$("reset").addEventListener("click", reset);
$("dpop").addEventListener("change", () => {
  saved.dpop = $("dpop").checked;
  save();
});

const returned = new URLSearchParams(location.search);
if (saved.state.phase === "authorizing" && (returned.has("code") || returned.has("error"))) await guard(cameBack)();
render();
document.body.dataset.ready = "true"; // for the browser test: the module ran
