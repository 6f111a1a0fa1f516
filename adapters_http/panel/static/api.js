// The panel's only way to the server: the public REST routes and the sign-in routes, same-origin,
// with the session cookie and the panel header the server's CSRF check wants.

export const PANEL_HEADER = "X-Memorybank-Panel";

/** A failed call, with words a person can read. kind: "network" | "signed-out" | "http". */
export class ApiError extends Error {
  constructor(kind, status, message, code = null, body = null) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.code = code;
    this.body = body; // the error's JSON (a 412 carries the memory as it is now)
  }
}

const PLAIN_WORDS = {
  403: "This session is not allowed to do that.",
  404: "That memory no longer exists.",
  413: "The request was too large.",
  429: "Too many requests; wait a moment and try again.",
  500: "Something went wrong on the server.",
  502: "The memory bank server is not answering properly.",
  503: "The memory bank’s storage is unavailable right now.",
  504: "The memory bank server took too long to answer.",
};

/** Words for error codes that say more than their status. */
const CODE_WORDS = {
  memory_disabled: "Memory is switched off for your account.",
  quota_exceeded: "Your memory bank is full; delete old memories to make room.",
  not_memory_author: "Only its author or an admin can change this team memory.",
  revision_conflict: "This memory was changed somewhere else since you opened it.",
  secret_detected: "It holds what looks like a password or key; save where the secret is kept instead.",
};

function errorFor(status, body) {
  if (status === 401) return new ApiError("signed-out", status, "Your session has ended. Sign in again.", body?.error);
  if (CODE_WORDS[body?.error]) return new ApiError("http", status, CODE_WORDS[body.error], body.error, body);
  const words = PLAIN_WORDS[status] ?? `The server answered with an unexpected error (HTTP ${status}).`;
  return new ApiError("http", status, words, body?.error ?? null, body);
}

const jsonOf = (response) => response.json().catch(() => null);
const unreachable = () => new ApiError("network", 0, "The memory bank server can’t be reached.");

export function createApi({ apiBase }) {
  async function call(method, url, { body, keepalive = false, revision = null } = {}) {
    const headers = { [PANEL_HEADER]: "1", Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (revision !== null) headers["If-Match"] = `"${revision}"`; // the version this change is based on
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "same-origin",
        cache: "no-store",
        keepalive,
      });
    } catch {
      throw unreachable();
    }
    const payload = response.status === 204 ? null : await jsonOf(response);
    if (!response.ok) throw errorFor(response.status, payload);
    return payload;
  }

  /** The export as a Blob: fetched with the panel's header (a plain link could not carry it), streamed in. */
  async function download(url) {
    let response;
    try {
      response = await fetch(url, { headers: { [PANEL_HEADER]: "1" }, credentials: "same-origin", cache: "no-store" });
    } catch {
      throw unreachable();
    }
    if (!response.ok) throw errorFor(response.status, await jsonOf(response));
    try {
      return await response.blob();
    } catch {
      throw new ApiError("network", 0, "The download was cut off; try again.");
    }
  }

  const memories = `${apiBase}/v1/memory`;
  // The bank list, search, edit, history and delete address: "user" (one's own) or "org" (the team's).
  let bank = "user";
  const inBank = (query = new URLSearchParams()) => {
    if (bank === "org") query.set("bankScope", "org");
    return query;
  };
  const one = (id, tail = "") => `${memories}/${encodeURIComponent(id)}${tail}?${inBank()}`;
  return {
    setBank: (name) => (bank = name),
    search: (q, limit) => call("GET", `${memories}/search?${inBank(new URLSearchParams({ q, limit: String(limit) }))}`),
    // A copy in the team's bank: its words and tags, not where it came from.
    share: (memory) => call("POST", memories, { body: { content: memory.content, tags: memory.tags, bankScope: "org" } }),
    usage: () => call("GET", `${memories}/usage?${inBank()}`),
    exportFile: () => download(`${memories}/export`),
    deleteAllBatch: () => call("POST", `${memories}/delete-all`, { body: { confirm: "delete all" } }),
    // Without a limit the server's own page size applies (the bank's setting, as /openapi.json says).
    list: (limit, cursor, withRetired = false) => {
      const query = new URLSearchParams(limit ? { limit: String(limit) } : {});
      if (cursor) query.set("cursor", cursor);
      if (withRetired) query.set("include", "retired");
      return call("GET", `${memories}?${inBank(query)}`);
    },
    edit: (id, body, revision) => call("PATCH", one(id), { body, revision }),
    history: (id, cursor) => {
      const query = inBank(new URLSearchParams({ limit: "20" }));
      if (cursor) query.set("cursor", cursor);
      return call("GET", `${memories}/${encodeURIComponent(id)}/revisions?${query}`);
    },
    remove: (id, { keepalive = false } = {}) => call("DELETE", one(id), { keepalive }),
    who: () => call("GET", "panel/session"),
    signIn: (secret) => call("POST", "panel/session", { body: secret }),
    signOut: () => call("DELETE", "panel/session"),
  };
}
