// An MCP client (the official TypeScript SDK) that signs a person in with OAuth before using the rail.
//
// Usage: node ts_oauth_client.mjs '<json config>'
//   {"url": "http://127.0.0.1:PORT/mcp/agent", "login": "alice", "content": "..." (optional), "query": "..."}
// Connects without a token, lets the SDK read the 401, discover the authorization server from the
// protected-resource metadata, register itself (RFC 7591) and start authorization code + PKCE; then logs
// in by posting the provider's own login and consent forms (as a person's browser would), hands the code
// back to the SDK, reconnects with the token, saves `content` (if given) and searches for `query`.
// Prints one JSON object describing what happened; exits 1 (message on stderr) on any failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2] ?? "{}");
const REDIRECT_URL = "http://127.0.0.1:1/oauth/callback"; // never served: the login driver stops at it

class MemoryOAuthProvider {
  constructor() {
    this.saved = {};
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return REDIRECT_URL;
  }
  get clientMetadata() {
    return {
      client_name: "memorybank interop client",
      redirect_uris: [REDIRECT_URL],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    this.saved.state = crypto.randomUUID();
    return this.saved.state;
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

// The person's browser: follows redirects, keeps cookies, fills in the provider's forms.
async function signIn(authorizationUrl, login) {
  const cookies = new Map();
  const cookieHeader = () => [...cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  const keep = (response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1));
    }
  };
  const forms = [];
  let url = new URL(authorizationUrl);
  let request = { method: "GET" };
  for (let step = 0; step < 20; step += 1) {
    const response = await fetch(url, { ...request, redirect: "manual", headers: { ...request.headers, cookie: cookieHeader() } });
    keep(response);
    if (response.status >= 300 && response.status < 400) {
      url = new URL(response.headers.get("location"), url);
      request = { method: "GET" };
      if (url.href.startsWith(REDIRECT_URL)) {
        const code = url.searchParams.get("code");
        if (!code) throw new Error(`the provider answered ${url.search}`);
        return { code, forms, state: url.searchParams.get("state"), iss: url.searchParams.get("iss") };
      }
      continue;
    }
    const html = await response.text();
    if (response.status !== 200) throw new Error(`the provider answered ${response.status}: ${html.slice(0, 300)}`);
    const action = html.match(/<form[^>]*action="([^"]+)"/)?.[1];
    const prompt = html.match(/name="prompt" value="([a-z]+)"/)?.[1];
    if (!action || !prompt) throw new Error(`no login or consent form on ${url}`);
    forms.push(prompt);
    const fields = prompt === "login" ? { prompt, login, password: "any password" } : { prompt };
    url = new URL(action.replaceAll("&amp;", "&"), url);
    request = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    };
  }
  throw new Error("the sign-in did not end at the redirect URL");
}

function json(result) {
  const text = result.content.find((block) => block.type === "text");
  if (!text) throw new Error(`no text block in ${JSON.stringify(result)}`);
  return JSON.parse(text.text);
}

async function main() {
  const provider = new MemoryOAuthProvider();
  const serverUrl = new URL(config.url);

  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  let refusedFirst = false;
  try {
    await new Client({ name: "memorybank-interop-oauth", version: "1.0.0" }).connect(first);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    refusedFirst = true;
  }
  if (!provider.authorizationUrl) throw new Error("the SDK never asked the person to sign in");
  const authorization = new URL(provider.authorizationUrl);
  const signedIn = await signIn(authorization, config.login);
  if (signedIn.state !== provider.saved.state) throw new Error("the provider returned another state");
  await first.finishAuth(signedIn.code);

  const client = new Client({ name: "memorybank-interop-oauth", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  try {
    let saved;
    if (config.content) {
      const result = await client.callTool({ name: "execute_capability", arguments: { name: "postMemory", body: { content: config.content } } });
      if (result.isError) throw new Error(`save failed: ${JSON.stringify(json(result))}`);
      saved = json(result).memory.id;
    }
    const search = await client.callTool({ name: "execute_capability", arguments: { name: "getMemorySearch", query: { q: config.query } } });
    if (search.isError) throw new Error(`search failed: ${JSON.stringify(json(search))}`);
    const [, payload] = provider.saved.tokens.access_token.split(".");
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    console.log(
      JSON.stringify({
        refusedFirst,
        authorizationEndpoint: `${authorization.origin}${authorization.pathname}`,
        authorizationParams: {
          codeChallengeMethod: authorization.searchParams.get("code_challenge_method"),
          hasCodeChallenge: Boolean(authorization.searchParams.get("code_challenge")),
          hasState: Boolean(authorization.searchParams.get("state")),
          resource: authorization.searchParams.get("resource"),
          scope: authorization.searchParams.get("scope"),
        },
        registeredClientId: provider.saved.client?.client_id,
        forms: signedIn.forms,
        token: { iss: claims.iss, sub: claims.sub, aud: claims.aud, scope: claims.scope },
        savedId: saved,
        recalled: json(search).results.map((r) => ({ id: r.id, content: r.content })),
      }),
    );
  } finally {
    await client.close();
  }
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
