// The npm package's layer of the conformance runners: every vector through createAuthServer's
// Fetch driver with in-memory storage, the step's time and entropy injected as the clock and the
// random source, the core's default pages. Signed-in users are a cookie the runner's
// currentUser hook reads (the package leaves sessions to its host). `edgegrant` is an entry
// point's exports (edgegrant/node, or edgegrant/node/configured-apps), whose module it runs.
import { after, test } from "node:test";
import { memoryStorage } from "../../pkg/src/adapters/memory.js";
import { consentForm, loadCorpus, observeHttp, requestParts, runVector, unsupportedReason, userNamed, webAnswers } from "./lib.mjs";

const ORIGIN = "https://auth.conformance.test";

/** The layer over the entry point `edgegrant`. */
function packageLayer({ createAuthServer, entropyLength, migrateApp }) {
  return {
    entropyLength: entropyLength(),
    async open({ config, users }) {
      const storage = memoryStorage();
      const clock = { now: 0, entropy: undefined, audit: [], web: new Map(), fetched: [] };
      const serve = (doc) =>
        createAuthServer({
          config: doc,
          storage,
          clock: () => clock.now,
          random: () => clock.entropy,
          onAudit: (event) => clock.audit.push(event),
          // The step's web, held to the size limit as the package's fetch holds it.
          fetchDocument: async ({ url, maxBytes }) => {
            clock.fetched.push(url);
            const answer = clock.web.get(url) ?? { failed: "unreachable" };
            return answer.body?.length > maxBytes ? { failed: "too_large" } : answer;
          },
          hooks: {
            currentUser: async (request) => {
              const name = /(?:^|;\s*)user=([a-z]+)/.exec(request.headers.get("cookie") ?? "")?.[1];
              const user = name && users.find((u) => u.name === name);
              return user ? { account_id: user.account_id, uid: user.uid } : null;
            },
            api: {
              "/2/users/get_current_account": async (principal) =>
                Response.json(principal.subject === "client" ? { client_id: principal.app } : { account_id: principal.account_id }),
            },
          },
        });
      let current = config;
      let server = serve(current);

      const send = async (request) => {
        const response = await server.fetch(request);
        return observeHttp(response.status, [...response.headers], await response.text());
      };

      return {
        async step(at, entropy, input, web) {
          clock.now = at;
          clock.entropy = entropy;
          clock.audit = [];
          clock.web = webAnswers(web);
          clock.fetched = [];
          let observation;
          if (input.kind === "http") {
            const { method, path, query, headers, body } = requestParts(input);
            const request = new Request(`${ORIGIN}${path}${query ? `?${query}` : ""}`, { method, body });
            for (const [name, value] of headers) request.headers.append(name, value);
            if (input.user) request.headers.append("cookie", `user=${userNamed(users, input.user).name}`);
            observation = await send(request);
          } else if (input.kind === "consent" || input.kind === "deny") {
            observation = await send(
              new Request(`${ORIGIN}/oauth2/authorize`, {
                method: "POST",
                headers: { "Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin", Cookie: `user=${userNamed(users, input.user).name}` },
                body: consentForm(input),
              }),
            );
          } else if (input.kind === "unlink") {
            const result = await server.unlink(input.app, userNamed(users, input.user).account_id, input.by);
            observation = { outcome: result.outcome, audit: [] };
          } else {
            current = migrateApp(current, input.app);
            server = serve(current);
            observation = { outcome: "migrated", audit: [] };
          }
          observation.audit = clock.audit;
          observation.fetched = clock.fetched;
          return observation;
        },
      };
    },
  };
}

/**
 * Registers every vector of the corpus as a test against the entry point `edgegrant`, named
 * `name` in the summary line; `skip(vector)` gives a reason to skip one beside the vector's own.
 */
export function runCorpus(name, edgegrant, skip = () => undefined) {
  const layer = packageLayer(edgegrant);
  const started = performance.now();
  const corpus = loadCorpus();
  const reasonOf = (entry) => unsupportedReason(entry.vector, "package") ?? skip(entry);
  const skipped = corpus.filter(reasonOf).length;
  for (const entry of corpus) {
    const reason = reasonOf(entry);
    test(`${entry.vector.id}: ${entry.vector.title}`, reason ? { skip: reason } : {}, () => runVector(entry, layer));
  }
  after(() => console.log(`conformance (${name}): ${corpus.length} vectors, ${skipped} skipped, in ${Math.round(performance.now() - started)} ms`));
}
