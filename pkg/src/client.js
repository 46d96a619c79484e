// The PKCE client side for JavaScript hosts (browser pages, CLIs, servers acting as clients).
// The machine in the core decides; this file supplies the clock, the entropy and `fetch`, and
// carries requests out. The host keeps the state (e.g. in sessionStorage across the redirect).
import { clientEntropyLength, createPkceMachine } from "./core.js";

/** The state a new client starts in. */
export const IDLE = Object.freeze({ phase: "idle" });

const systemClock = () => Math.floor(Date.now() / 1000);

/**
 * A PKCE client for `config`: `step(state, input)` is one pure transition with the host's clock
 * and fresh entropy; `run(state, input)` also carries out `send` steps with `fetch`, feeding each
 * answer back, until the machine wants something else (navigate, attach, authorized, …).
 * `onExchange(request, response)` sees every request and its raw answer.
 */
export function createPkceClient(config, { clock = systemClock, random, fetch: send = (...args) => fetch(...args), onExchange } = {}) {
  const machine = createPkceMachine(config);
  const draw = random ?? (() => crypto.getRandomValues(new Uint8Array(clientEntropyLength())));
  const step = (state, input) => machine.handle(state, input, clock(), draw());

  async function run(state, input) {
    let transition = step(state, input);
    for (let hop = 0; transition.step.step === "send"; hop++) {
      if (hop > 4) throw new Error("edgegrant: the client machine sent more than 4 requests in a row");
      const { request } = transition.step;
      const answer = await send(request.url, { method: request.method, headers: request.headers, body: request.body || undefined });
      const response = { status: answer.status, headers: [...answer.headers], body: await answer.text() };
      onExchange?.(request, response);
      transition = step(transition.state, { kind: "response", response });
    }
    return transition;
  }

  /**
   * Calls an API endpoint with the session's bearer token: refreshes first when due, and once
   * more after a 401 when the machine says so. Resolves `{ state, response }` or, when the user
   * must authorize again or the call cannot be made, `{ state, step }`.
   */
  async function call(state, url, init = {}) {
    // `call` answers `attach`, or refreshes first (a `send`, then `authorized`: ask again).
    const prepare = async (transition) => (transition.step.step === "authorized" ? step(transition.state, { kind: "call" }) : transition);
    let transition = await prepare(await run(state, { kind: "call" }));
    for (let attempt = 0; attempt < 2; attempt++) {
      if (transition.step.step !== "attach") return transition;
      const request = new Request(url, { method: "POST", ...init });
      request.headers.set("Authorization", transition.step.authorization);
      const response = await send(request);
      if (response.status !== 401) return { state: transition.state, response };
      transition = await prepare(await run(transition.state, { kind: "unauthorized" }));
    }
    return transition;
  }

  return { step, run, call, config };
}
