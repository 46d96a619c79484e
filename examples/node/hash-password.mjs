// Prints the `password_scrypt` value for a user of the Node host's configuration, or with
// --secret the `secret_digest` for an app secret.
//   node examples/node/hash-password.mjs 'correct horse battery staple'
//   node examples/node/hash-password.mjs --secret 'my-app-secret'
import { randomBytes, scryptSync } from "node:crypto";
import { secretDigest } from "../../pkg/src/node.js";

const [flag, value] = process.argv.slice(2);
if (flag === "--secret" && value) {
  console.log(secretDigest(value));
} else if (flag && !value) {
  const salt = randomBytes(16);
  console.log(`scrypt$${salt.toString("hex")}$${scryptSync(flag, salt, 32).toString("hex")}`);
} else {
  console.error("usage: hash-password.mjs <password> | --secret <app secret>");
  process.exit(2);
}
