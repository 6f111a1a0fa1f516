// A real OpenID provider (oidc-provider, certified) for the OAuth tests: nothing here signs or checks a token
// itself; the provider does all of it.
//
// Usage: node provider.mjs '<json config>'
//   {"port": 0, "host": "127.0.0.1", "keys": [<private JWK>, ...], "panelRedirectUris": ["http://…/callback"]}
// Listens on 127.0.0.1 (port 0: any free one) and prints one line `{"issuer": "http://HOST:PORT"}` when ready;
// `host` only names it (`localhost` makes the provider another site than a server on 127.0.0.1, as in life). Without keys it makes one RS256 key. The provider's login form accepts any login name (its dev
// interactions): the login becomes the subject, so two logins are two people.
//
// Clients:
//   rs-tests / rs-tests-secret        client_credentials, JWT access tokens for any resource indicator
//   short-lived / short-lived-secret  client_credentials, JWT access tokens that expire after 2 seconds
//   opaque-client / opaque-secret     client_credentials, opaque access tokens (checked by introspection)
//   memorybank-rs / memorybank-rs-secret  the resource server's own credentials, to call introspection
//   memorybank-panel / memorybank-panel-secret  the web panel's sign-in (authorization code + PKCE)
//   memorybank-panel-public                     the same as a public client (no secret: PKCE alone)
//   other-panel / other-panel-secret            another web client, for ID tokens issued to someone else
//   expiring-panel / expiring-panel-secret      a web client whose ID tokens expire after 1 second
// The web clients accept the redirect URIs in `panelRedirectUris`.
// Dynamic client registration (RFC 7591) is open, for MCP clients that register themselves.

import { generateKeyPairSync } from "node:crypto";
import http from "node:http";

import Provider from "oidc-provider";

const config = JSON.parse(process.argv[2] ?? "{}");
const RESOURCE_SCOPES = "mcp:read mcp:write";

function freshKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: `key-${Date.now()}`, alg: "RS256", use: "sig" };
}

function accessTokenFormat(client) {
  return client.clientId === "opaque-client" ? "opaque" : "jwt";
}

const server = http.createServer();
server.listen(config.port ?? 0, "127.0.0.1", () => {
  const issuer = `http://${config.host ?? "127.0.0.1"}:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      { client_id: "rs-tests", client_secret: "rs-tests-secret", grant_types: ["client_credentials"], response_types: [], redirect_uris: [] },
      { client_id: "short-lived", client_secret: "short-lived-secret", grant_types: ["client_credentials"], response_types: [], redirect_uris: [] },
      { client_id: "opaque-client", client_secret: "opaque-secret", grant_types: ["client_credentials"], response_types: [], redirect_uris: [] },
      { client_id: "memorybank-rs", client_secret: "memorybank-rs-secret", grant_types: [], response_types: [], redirect_uris: [] },
      ...[
        ["memorybank-panel", "memorybank-panel-secret"],
        ["memorybank-panel-public", null],
        ["other-panel", "other-panel-secret"],
        ["expiring-panel", "expiring-panel-secret"],
      ].map(([clientId, secret]) => ({
        client_id: clientId,
        ...(secret ? { client_secret: secret } : { token_endpoint_auth_method: "none" }),
        grant_types: ["authorization_code"],
        response_types: ["code"],
        redirect_uris: config.panelRedirectUris?.length ? config.panelRedirectUris : ["http://127.0.0.1/unused"],
      })),
    ],
    ttl: { IdToken: (_ctx, _token, client) => (client.clientId === "expiring-panel" ? 1 : 3600) },
    jwks: { keys: config.keys?.length ? config.keys : [freshKey()] },
    // The resource scopes are listed too, so clients may register with them (RFC 7591 `scope`).
    scopes: ["openid", "profile", "email", "offline_access", "mcp:read", "mcp:write"],
    claims: { openid: ["sub"], profile: ["name"], email: ["email"] },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, name: sub, email: `${sub}@example.test` }),
    }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: async (_ctx, client) => client.clientId === "memorybank-rs" },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => ({
          scope: RESOURCE_SCOPES,
          audience: resource,
          accessTokenTTL: client.clientId === "short-lived" ? 2 : 600,
          accessTokenFormat: accessTokenFormat(client),
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
    cookies: { keys: ["test-only-cookie-key"] },
    pkce: { required: () => true },
  });
  provider.on("server_error", (_ctx, error) => console.error(`provider server_error: ${error.stack}`));
  server.on("request", provider.callback());
  console.log(JSON.stringify({ issuer }));
});

for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
