// The management panel: sign in, list memories page by page, delete with undo, copy the prompt.
// States are the product: loading, empty, error, offline, signed out; each one is designed below.

import { createApi } from "./api.js";
import { memoryCard } from "./memory-card.js";
import { createToasts } from "./toasts.js";

const PAGE_SIZE = 20;
const UNDO_MS = 5000;
const RECONNECT_MS = 2000;
const FLAG_KEY = "memorybank.featureFlags.memory";
const WRITE_SCOPE = "mcp:write";

const $ = (id) => document.getElementById(id);
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";

const settings = {
  apiBase: meta("memorybank-api"),
  signIn: meta("memorybank-sign-in"),
  signInUrl: meta("memorybank-sign-in-url"),
  identityProvider: meta("memorybank-identity-provider"),
  prompt: $("memory-bank-prompt").content.textContent,
};
const api = createApi(settings);
const toasts = createToasts($("toasts"));

const state = {
  memories: [], // shown, newest first
  cursor: null,
  loaded: false, // the first page arrived
  loading: false,
  canDelete: true,
  offline: false,
  pending: new Map(), // id -> { memory, toast }: removed from view, DELETE not sent yet
  reconnectTimer: null,
};

// ---- views -------------------------------------------------------------------------------------------------

function showView(name) {
  $("view-sign-in").hidden = name !== "sign-in";
  $("view-bank").hidden = name !== "bank";
}

function showSignIn({ problem = null, title = null } = {}) {
  showView("sign-in");
  $("account").hidden = true;
  $("sign-in-title").textContent = title ?? (settings.signIn === "panel" ? "Sign in to your memory bank" : "You’re signed out");
  $("sign-in-problem").hidden = !problem;
  $("sign-in-problem").textContent = problem ?? "";
  $("sign-in-panel").hidden = settings.signIn !== "panel";
  $("sign-in-host").hidden = settings.signIn === "panel" || !settings.signInUrl;
  if (settings.signInUrl) $("host-sign-in").href = settings.signInUrl;
  document.title = "Sign in · Memory bank";
}

function showBank(who) {
  showView("bank");
  document.title = "Your memories · Memory bank";
  if (who) {
    $("who").textContent = who.user_id;
    $("who").title = `Signed in as ${who.user_id}`;
    $("account").hidden = false;
    state.canDelete = who.scopes.includes(WRITE_SCOPE);
  }
  $("read-only-note").hidden = state.canDelete;
  for (const button of document.querySelectorAll("[data-copy-prompt]")) button.hidden = !settings.prompt;
  applyFlag();
}

// ---- the per-device toggle (client-only featureFlags.memory) ---------------------------------------------------

function flagOn() {
  try {
    return localStorage.getItem(FLAG_KEY) !== "off";
  } catch {
    return true;
  }
}

function applyFlag() {
  const on = flagOn();
  $("memory-toggle").setAttribute("aria-checked", String(on));
  $("memory-features").hidden = !on;
  $("features-off").hidden = on;
  $("copy-prompt").hidden = !on || !settings.prompt;
  if (on && !state.loaded && !state.loading) loadFirstPage();
}

$("memory-toggle").addEventListener("click", () => {
  try {
    localStorage.setItem(FLAG_KEY, flagOn() ? "off" : "on");
  } catch {
    // Storage blocked: the switch still works for this page view.
  }
  applyFlag();
});

// ---- the list ----------------------------------------------------------------------------------------------

function setBusy(busy) {
  state.loading = busy;
  $("list-region").setAttribute("aria-busy", String(busy));
  $("skeletons").hidden = !(busy && !state.loaded);
  $("loading-text").hidden = !busy;
  $("load-more").disabled = busy || state.offline;
  $("load-more").setAttribute("aria-busy", String(busy && state.loaded));
  $("load-more").lastChild.textContent = busy && state.loaded ? "Loading…" : "Load more memories";
}

function renderListState() {
  const empty = state.loaded && state.memories.length === 0 && !state.cursor;
  $("empty-state").hidden = !empty;
  $("memory-list").hidden = state.memories.length === 0;
  $("more").hidden = !state.loaded || !state.cursor;
  $("end-note").hidden = !state.loaded || !!state.cursor || state.memories.length === 0;
}

function cardFor(memory) {
  return memoryCard(memory, { canDelete: state.canDelete, onDelete: requestDelete });
}

function articleOf(id) {
  return $("memory-list").querySelector(`article[data-memory-id="${CSS.escape(id)}"]`);
}

async function loadFirstPage() {
  state.memories = [];
  state.cursor = null;
  state.loaded = false;
  $("memory-list").replaceChildren();
  $("error-state").hidden = true;
  $("disabled-state").hidden = true;
  renderListState();
  setBusy(true);
  try {
    const page = await api.list(PAGE_SIZE, null);
    state.loaded = true;
    append(page);
  } catch (error) {
    failLoading(error);
  } finally {
    setBusy(false);
    renderListState();
  }
}

async function loadMore() {
  if (state.loading || !state.cursor) return;
  setBusy(true);
  try {
    const page = await api.list(PAGE_SIZE, state.cursor);
    const first = append(page);
    first?.focus();
  } catch (error) {
    if (error.kind === "signed-out") return signedOut();
    if (error.kind === "network") goOffline("server");
    toasts.show({ message: `Couldn’t load more memories. ${error.message}`, tone: "error" });
  } finally {
    setBusy(false);
    renderListState();
  }
}

/** Add a page to the view; the first new article, if any. */
function append(page) {
  state.cursor = page.next_cursor;
  let first = null;
  for (const memory of page.memories) {
    if (state.pending.has(memory.id) || state.memories.some((m) => m.id === memory.id)) continue;
    state.memories.push(memory);
    const item = cardFor(memory);
    $("memory-list").append(item);
    first ??= item.querySelector("article");
  }
  return first;
}

/** The error code of a 403 for an account whose memory an operator switched off. */
const MEMORY_DISABLED = "memory_disabled";

function failLoading(error) {
  if (error.kind === "signed-out") return signedOut();
  if (error.kind === "network") goOffline("server");
  if (error.code === MEMORY_DISABLED) {
    // Not an error to retry: an operator's switch. Said plainly, with nothing else on the page.
    $("disabled-state").hidden = false;
    return;
  }
  $("error-text").textContent = error.message;
  $("error-state").hidden = false;
}

$("load-more").addEventListener("click", loadMore);
/** Load again after a failure, and move focus to whatever now shows. */
async function reload() {
  await loadFirstPage();
  const shown = [["disabled-state", "disabled-title"], ["empty-state", "empty-title"]].find(([id]) => !$(id).hidden);
  ($("memory-list").querySelector("article") ?? $(shown ? shown[1] : "error-title")).focus();
}

$("retry").addEventListener("click", reload);
$("disabled-retry").addEventListener("click", reload);

// ---- delete with undo --------------------------------------------------------------------------------------

function newestFirst(a, b) {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : -1;
}

function requestDelete(id) {
  if (state.offline) return;
  const index = state.memories.findIndex((m) => m.id === id);
  if (index < 0) return;
  const [memory] = state.memories.splice(index, 1);
  articleOf(id)?.closest("li").remove();
  renderListState();
  const next = state.memories[index] ?? state.memories[index - 1];
  if (next) articleOf(next.id).focus();
  else if (!$("empty-state").hidden) $("empty-title").focus();
  else $("bank-title").focus();
  const toast = toasts.show({
    message: "Memory deleted.",
    action: { label: "Undo", run: () => undo(id) },
    duration: UNDO_MS,
    onExpire: () => commitDelete(id),
  });
  state.pending.set(id, { memory, toast });
}

function restore(memory) {
  const at = state.memories.findIndex((m) => newestFirst(memory, m) < 0);
  const index = at < 0 ? state.memories.length : at;
  state.memories.splice(index, 0, memory);
  const item = cardFor(memory);
  const before = state.memories[index + 1] ? articleOf(state.memories[index + 1].id)?.closest("li") : null;
  $("memory-list").insertBefore(item, before ?? null);
  renderListState();
  return item.querySelector("article");
}

function undo(id) {
  const pending = state.pending.get(id);
  if (!pending) return;
  state.pending.delete(id);
  restore(pending.memory).focus();
  toasts.show({ message: "Memory restored." });
}

async function commitDelete(id) {
  const pending = state.pending.get(id);
  if (!pending) return;
  try {
    await api.remove(id);
    state.pending.delete(id);
  } catch (error) {
    state.pending.delete(id);
    if (error.status === 404) return; // already gone: what the person wanted
    restore(pending.memory);
    if (error.kind === "network") goOffline("server");
    if (error.kind === "signed-out") return signedOut();
    toasts.show({ message: `Couldn’t delete the memory, so it is back in your list. ${error.message}`, tone: "error" });
  }
}

// Leaving the page closes every undo window: send those DELETEs now, surviving the unload.
window.addEventListener("pagehide", () => {
  for (const id of state.pending.keys()) api.remove(id, { keepalive: true }).catch(() => {});
  state.pending.clear();
});

document.addEventListener("keydown", (event) => {
  // Ctrl/Cmd+Z undoes the latest delete while its window is open (outside text fields).
  if (event.key.toLowerCase() !== "z" || !(event.ctrlKey || event.metaKey) || event.shiftKey) return;
  if (event.target instanceof HTMLInputElement) return;
  const ids = [...state.pending.keys()];
  if (!ids.length) return;
  event.preventDefault();
  const id = ids[ids.length - 1];
  state.pending.get(id).toast.dismiss();
  undo(id);
});

// ---- offline and unreachable -------------------------------------------------------------------------------

function goOffline(reason) {
  const browserOffline = reason === "browser" || !navigator.onLine;
  $("connection-text").textContent = browserOffline
    ? "You’re offline. Deleting and loading are paused until the connection returns."
    : "Can’t reach the memory bank server. Retrying automatically…";
  $("connection-banner").hidden = false;
  document.body.classList.add("is-offline");
  state.offline = true;
  setActionsEnabled(false);
  if (!state.reconnectTimer) state.reconnectTimer = setInterval(tryReconnect, RECONNECT_MS);
}

async function tryReconnect() {
  if (!navigator.onLine) return;
  try {
    await api.list(1, null);
  } catch (error) {
    if (error.kind === "network") return goOffline("server");
    // The server answers (even with an error): the connection is back.
  }
  backOnline();
}

function backOnline() {
  clearInterval(state.reconnectTimer);
  state.reconnectTimer = null;
  if (!state.offline) return;
  state.offline = false;
  $("connection-banner").hidden = true;
  document.body.classList.remove("is-offline");
  setActionsEnabled(true);
  toasts.show({ message: "Back online." });
  if (!$("view-bank").hidden && flagOn() && (!state.loaded || !$("error-state").hidden)) loadFirstPage();
}

function setActionsEnabled(enabled) {
  for (const button of document.querySelectorAll("#memory-list button.danger, #load-more, #sign-out, #retry")) {
    button.disabled = !enabled;
  }
}

window.addEventListener("offline", () => goOffline("browser"));
window.addEventListener("online", tryReconnect);

// New cards must respect the offline state too.
new MutationObserver(() => {
  if (state.offline) setActionsEnabled(false);
}).observe($("memory-list"), { childList: true });

// ---- copy prompt -------------------------------------------------------------------------------------------

async function copyPrompt() {
  try {
    await navigator.clipboard.writeText(settings.prompt);
    toasts.show({ message: "Prompt copied. Paste it into your agent’s instructions." });
  } catch {
    toasts.show({ message: "Couldn’t copy: this browser blocked the clipboard.", tone: "error" });
  }
}

for (const button of document.querySelectorAll("[data-copy-prompt]")) button.addEventListener("click", copyPrompt);

// ---- sign-in and sign-out ----------------------------------------------------------------------------------

function signedOut(problem = null) {
  // A session that worked in this page view has ended; a first visit is simply not signed in yet.
  const ended = state.loaded ? "Your session has ended. Sign in again to see your memories." : null;
  state.loaded = false;
  showSignIn({ problem: problem ?? ended });
}

async function signInWith(secret) {
  const who = await api.signIn(secret);
  state.canDelete = who.scopes.includes(WRITE_SCOPE);
  showBank(who);
  $("bank-title").focus();
}

// "Sign in with <provider>": a plain form post; the server sends the browser on to the provider.
function showProviderButton() {
  const offered = settings.signIn === "panel" && Boolean(settings.identityProvider);
  $("provider-form").hidden = !offered;
  $("provider-divider").hidden = !offered;
  if (!offered) return;
  const button = $("provider-submit");
  button.textContent = `Sign in with ${settings.identityProvider}`;
  button.removeAttribute("aria-disabled");
  $("provider-form").removeAttribute("aria-busy");
  $("provider-status").textContent = "";
}

$("provider-form").addEventListener("submit", (event) => {
  const form = $("provider-form");
  // One sign-in at a time: a second click would start a second one and void the first.
  if (form.getAttribute("aria-busy") === "true") {
    event.preventDefault();
    return;
  }
  form.setAttribute("aria-busy", "true");
  $("provider-submit").setAttribute("aria-disabled", "true");
  $("provider-status").textContent = `Opening ${settings.identityProvider}…`;
});

// Back from the provider with the browser's back button: the page may come from the cache, still busy.
window.addEventListener("pageshow", showProviderButton);
showProviderButton();

$("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("token-input");
  const error = $("token-error");
  const token = input.value.trim();
  error.hidden = true;
  input.removeAttribute("aria-invalid");
  if (!token) {
    error.textContent = "Paste an API token (it starts with mbk_).";
    error.hidden = false;
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return;
  }
  $("token-submit").disabled = true;
  try {
    await signInWith({ token });
    input.value = "";
  } catch (failure) {
    error.textContent =
      failure.kind === "signed-out" ? "That API token is not valid: it is unknown or has been revoked." : failure.message;
    error.hidden = false;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  } finally {
    $("token-submit").disabled = false;
  }
});

$("sign-out").addEventListener("click", async () => {
  // Pending deletes were confirmed by letting them stand: send them before the session ends.
  await Promise.all([...state.pending.keys()].map((id) => commitDelete(id)));
  try {
    await api.signOut();
  } catch {
    // Even if the server is unreachable, forget this view; the cookie expires by itself.
  }
  state.memories = [];
  state.loaded = false;
  $("memory-list").replaceChildren();
  showSignIn({ title: "You’re signed out", problem: null });
  $("sign-in-title").focus();
});

async function start() {
  const link = new URLSearchParams(location.hash.slice(1)).get("link");
  if (link) {
    // Take the one-time code out of the address bar and history before anything else.
    history.replaceState(null, "", location.pathname + location.search);
    try {
      await signInWith({ link });
      return;
    } catch (error) {
      if (error.kind === "network") goOffline("server");
      showSignIn({
        title: "This sign-in link can’t be used",
        problem:
          error.kind === "signed-out"
            ? "It has already been used or it has expired: each link works once, for a limited time. Ask for a new one with memorybank panel-link, or sign in with an API token below."
            : error.message,
      });
      return;
    }
  }
  if (settings.signIn !== "panel") {
    showBank(null);
    return;
  }
  try {
    showBank(await api.who());
  } catch (error) {
    if (error.kind === "network") {
      goOffline("server");
      showSignIn({ problem: error.message });
    } else showSignIn();
  }
}

if (!navigator.onLine) goOffline("browser");
// A sign-in link opened in a tab that already shows the panel changes only the fragment.
window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#link=")) start();
});
start();
