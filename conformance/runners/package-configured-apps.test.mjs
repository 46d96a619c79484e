// Runner 2 again, on the server module for configured apps only (edgegrant/node/configured-apps):
// every vector whose configuration lets no client arrive unannounced, trusts no identity
// provider and reads no DPoP proof must hold there as it holds on the whole module; the others are skipped, and the
// module's refusal of their configuration is pinned by pkg/test/configured-apps.test.mjs.
import * as edgegrant from "../../pkg/src/node-configured-apps.js";
import { runCorpus } from "./package-layer.mjs";

runCorpus("package, configured apps", edgegrant, ({ config }) =>
  config.profile?.clients
    ? "its configuration lets clients arrive unannounced (profile.clients): not in this module"
    : config.profile?.identity_assertions
      ? "its configuration trusts identity providers' assertions (profile.identity_assertions): not in this module"
      : config.profile?.dpop
        ? "its configuration reads DPoP proofs (profile.dpop): not in this module"
        : undefined,
);
