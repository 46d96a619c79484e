// The browser demo: a public client driving the PKCE client machine (WebAssembly, from the
// edgegrant package) against the authorization server that serves this page — or, when the page
// is served from another origin, the one its <html data-server="…"> names (a single-page app on
// its own origin, calling the server cross-origin: CORS). Every request
// the machine asks for is shown as raw HTTP with its answer. State lives in sessionStorage so
// the flow survives the round trip through the authorization server.
import { IDLE, createPkceClient } from "./edgegrant/src/browser.js";

const SERVER = document.documentElement.dataset.server || location.origin;
const ACCOUNT_URL = `${SERVER}/2/users/get_current_account`;
const STORE = "edgegrant-demo";
const FOUR_HOURS = 4 * 60 * 60;

const saved = JSON.parse(sessionStorage.getItem(STORE) ?? "null") ?? { state: IDLE, access: "offline", cards: [], skew: 0, revoked: null };
const save = () => sessionStorage.setItem(STORE, JSON.stringify(saved));
const $ = (id) => document.getElementById(id);

/** This client's clock: real time plus the demo's "jump ahead" skew. */
const clientNow = () => Math.floor(Date.now() / 1000) + saved.skew;

function client() {
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
    { clock: clientNow, onExchange: (request, response) => addCard(exchangeCard(request, response)) },
  );
}

// ---- raw HTTP, as text ----

function rawRequest({ method, url, headers, body }) {
  const target = new URL(url);
  const lines = [`${method} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`, ...headers.map(([n, v]) => `${n}: ${v}`)];
  return lines.join("\n") + "\n\n" + (body ?? "");
}

function rawResponse({ status, headers, body }) {
  const shown = headers.filter(([name]) => /^(content-type|cache-control|www-authenticate|location)$/i.test(name));
  let pretty = body;
  try {
    pretty = JSON.stringify(JSON.parse(body), null, 2);
  } catch {}
  return [`HTTP/1.1 ${status}`, ...shown.map(([n, v]) => `${n}: ${v}`)].join("\n") + "\n\n" + pretty;
}

/** The card for a request the machine sent, explained by what it was for. */
function exchangeCard(request, response) {
  const grant = request.url.endsWith("/oauth2/token") ? new URLSearchParams(request.body).get("grant_type") : "revoke";
  const titles = {
    authorization_code: ["Code exchange", "The code and the PKCE verifier go to the token endpoint. Only this page knows the verifier, so a stolen code is useless to anyone else."],
    refresh_token: ["Refresh", "The access token is due, so the machine trades the refresh token for a new one — no user involved. The refresh token itself stays the same."],
    revoke: ["Revoke", "The access token authenticates its own revocation; the server ends the whole grant: this token, the refresh token and every token minted from it."],
  };
  const [title, text] = titles[grant];
  return { title, text, kind: response.status < 300 ? "ok" : "bad", request: rawRequest(request), response: rawResponse(response) };
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
        for (const raw of [card.request, card.response].filter(Boolean)) {
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
  $("replay").disabled = !saved.revoked;
  for (const radio of document.querySelectorAll("input[name=access]")) {
    radio.checked = radio.value === saved.access;
    radio.disabled = phase !== "idle";
  }
  const status = $("status");
  status.className = "status";
  if (authorized) {
    const { expires_at, refresh_token, account_id } = saved.state.session;
    const left = expires_at === null ? "never expires" : `expires in ${Math.max(0, expires_at - clientNow())} s (client clock)`;
    status.textContent = `Signed in as ${account_id} · access token ${left} · ${refresh_token ? "refresh token held (offline)" : "no refresh token (online)"}`;
    status.classList.add("ok");
  } else {
    status.textContent = phase === "authorizing" ? "Waiting for the authorization server…" : "Not signed in.";
  }
  if (saved.cards.at(-1)?.kind === "bad") status.classList.add("bad");
}

// ---- the flow ----

function begin() {
  saved.access = document.querySelector("input[name=access]:checked").value;
  saved.skew = 0;
  saved.revoked = null;
  const { state, step } = client().step(IDLE, { kind: "begin" });
  saved.state = state;
  const params = [...new URL(step.url).searchParams].map(([n, v]) => `  ${n} = ${v}`).join("\n");
  addCard({
    title: "Authorization URL",
    text: `The machine drew a fresh code verifier and state from crypto.getRandomValues and sends you to the authorization server with the verifier's S256 challenge (${saved.access} access). Sign in and choose Allow or Deny.`,
    request: `GET ${step.url}\n\n${params}`,
  });
  location.assign(step.url);
}

async function cameBack() {
  const url = location.href;
  history.replaceState(null, "", location.pathname); // the code must not linger in the address bar
  addCard({ title: "Redirect back", text: "The server sent the browser back to the registered redirect URI. The machine checks that state matches what it sent before it trusts anything here.", request: `GET ${url}` });
  const { state, step } = await client().run(saved.state, { kind: "redirected", url });
  saved.state = state;
  finish(step);
}

/** Reports the machine's last step. */
function finish(step) {
  if (step.step === "authorized") {
    const { expires_at, refreshable, scopes } = step.session;
    addCard({ title: "Authorized", kind: "ok", text: `Scopes: ${scopes.join(" ")}. The access token works until ${new Date(expires_at * 1000).toLocaleTimeString()} by this client's clock; ${refreshable ? "the refresh token renews it." : "after that, you authorize again."}` });
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

async function callApi(token) {
  const headers = [["Authorization", `Bearer ${token}`]];
  const answer = await fetch(ACCOUNT_URL, { method: "POST", headers });
  const response = { status: answer.status, headers: [...answer.headers], body: await answer.text() };
  addCard({
    title: answer.ok ? "API call" : "API call refused",
    kind: answer.ok ? "ok" : "bad",
    text: answer.ok
      ? "A bearer call to the API; the server checked the token, its grant and the endpoint's Required Scope (account_info.read)."
      : "The server refuses the token (RFC 6750): it answers 401 with a WWW-Authenticate challenge.",
    request: rawRequest({ method: "POST", url: ACCOUNT_URL, headers, body: "" }),
    response: rawResponse(response),
  });
  return answer.status;
}

async function call() {
  const pkce = client();
  // Ask the machine first: it attaches the token, or refreshes it first when due, or says the
  // user must authorize again (online access past expiry).
  let { state, step } = await pkce.run(saved.state, { kind: "call" });
  if (step.step === "authorized") ({ state, step } = pkce.step(state, { kind: "call" }));
  saved.state = state;
  if (step.step !== "attach") return finish(step);
  const status = await callApi(step.authorization.slice("Bearer ".length));
  if (status === 401) {
    ({ state, step } = await pkce.run(saved.state, { kind: "unauthorized" }));
    saved.state = state;
    finish(step);
  }
}

function jump() {
  saved.skew += FOUR_HOURS;
  addCard({
    title: "Four hours later",
    text:
      saved.access === "offline"
        ? "This client's clock moved 4 hours ahead. Its access token is now due, so the next call refreshes first."
        : "This client's clock moved 4 hours ahead. Its online access token has expired: the next call says to authorize again.",
  });
}

async function revoke() {
  const token = saved.state.session.access_token;
  const { state, step } = await client().run(saved.state, { kind: "revoke" });
  saved.state = state;
  if (step.step === "signed_out") saved.revoked = token; // kept only to show the 401 that follows
  finish(step);
}

async function replay() {
  await callApi(saved.revoked);
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

const returned = new URLSearchParams(location.search);
if (saved.state.phase === "authorizing" && (returned.has("code") || returned.has("error"))) await guard(cameBack)();
render();
document.body.dataset.ready = "true"; // for the browser test: the module ran
