// The management panel: sign in, list memories page by page, delete with undo, copy the prompt.
// States are the product: loading, empty, error, offline, signed out; each one is designed below.

import { createAccount } from "./account.js";
import { createApi } from "./api.js";
import { $ } from "./dom.js";
import { isFinding, readFind, writeFind } from "./find.js";
import { deletedPlaceholder, firstWords, memoryCard, refreshTimes } from "./memory-card.js";
import { createRevisions } from "./revisions.js";
import { createToasts } from "./toasts.js";
import { undoWindow } from "./undo-window.js";

const PAGE_SIZE = null; // the server's page size: the panel reads the configured one, never a copy of it
const TAG_WALK_PAGE = 100; // the list's largest page: a tag filter reads every page once
const SEARCH_LIMIT = 50; // the search route's largest answer
const UNDO_MS = 5000;
const RECONNECT_MS = 2000;
const TIME_REFRESH_MS = 30000;
const FLAG_KEY = "memorybank.featureFlags.memory";
const WRITE_SCOPE = "mcp:write";

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";

const settings = {
  apiBase: meta("memorybank-api"),
  signIn: meta("memorybank-sign-in"),
  signInUrl: meta("memorybank-sign-in-url"),
  identityProvider: meta("memorybank-identity-provider"),
  prompt: $("memory-bank-prompt").content.textContent,
};
const api = createApi(settings);
/** Whether `error` ended the session or the connection (the page then says so). */
function lostTouch(error) {
  if (error.kind === "signed-out") signedOut();
  else if (error.kind === "network") goOffline("server");
  else return false;
  return true;
}
const toasts = createToasts($("toasts"));
const account = createAccount({
  api,
  toasts,
  user: () => state.userId,
  bank: () => state.bank,
  onError: lostTouch,
  onAllDeleted: async () => {
    forgetList();
    state.find = { q: "", tag: "" };
    writeFind(state.find, { replace: true });
    await loadFirstPage();
    $("empty-title").focus();
  },
});

const state = {
  memories: [], // shown, newest first
  cursor: null,
  loaded: false, // the first page arrived
  loading: false,
  canDelete: true,
  offline: false,
  pending: new Map(), // id -> { memory, window, sending }: shown as deleted, DELETE not confirmed yet
  reconnectTimer: null,
  backOnlineToast: null,
  find: readFind(), // { q, tag }: what the address bar asks for
  searchFull: false, // the search answered its largest page: more may match than are shown
  generation: 0, // bumped by every load, so an answer to an older one is dropped
  userId: null,
  showRetired: false, // the list also shows memories a later save replaced
  bank: "user", // "user": the person's own memories; "org": the team's (only with org:read or org:admin)
  org: new Set(), // the session's organization scopes: org:read, org:write, org:admin
};

const revisions = createRevisions({
  api,
  toasts,
  announce,
  show: showMemory,
  failed: lostTouch,
});

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
    state.userId = who.user_id;
    state.org = new Set(who.scopes.filter((scope) => scope.startsWith("org:")));
  }
  $("bank-switch").hidden = !state.org.has("org:read") && !state.org.has("org:admin");
  $("read-only-note").hidden = state.canDelete;
  $("delete-all-open").hidden = !state.canDelete;
  $("find-input").value = state.find.q;
  if (who && state.canDelete) account.resume();
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
  const shown = visibleMemories().length;
  const empty = state.loaded && shown === 0 && !state.cursor;
  const finding = isFinding(state.find);
  $("empty-state").hidden = !empty || finding;
  $("find-empty").hidden = !empty || !finding;
  $("memory-list").hidden = state.memories.length === 0;
  $("more").hidden = !state.loaded || !state.cursor;
  $("end-note").hidden = !state.loaded || !!state.cursor || shown === 0 || finding;
  renderFind(shown);
}

/** With mcp:write, one's own memories; a team memory only if one wrote it (org:write) or is an org:admin. */
const mayChange = (m) =>
  state.canDelete && (m.scope !== "org" || state.org.has("org:admin") || (state.org.has("org:write") && m.author === state.userId));

function cardFor(memory, notice = null) {
  const team = memory.scope === "org";
  const allowed = mayChange(memory);
  const canShare = !team && state.canDelete && (state.org.has("org:write") || state.org.has("org:admin"));
  const item = memoryCard(memory, {
    canDelete: allowed,
    author: team ? `Saved by ${memory.author === state.userId ? "you" : memory.author_former_member ? "a former member" : memory.author}` : null,
    locked: team && state.canDelete && !allowed ? "Only its author or an admin can delete or edit this." : null,
    onShare: canShare ? openShare : null,
    onDelete: requestDelete,
    onTag: filterByTag,
    find: state.find,
    onEdit: (m) => revisions.edit(itemOf(m.id), m),
    onHistory: (m) => revisions.history(m, allowed),
    onRestore: (m) => revisions.restore(m),
    notice,
  });
  item.dataset.itemId = memory.id;
  return item;
}

/** Show `memory` as it is now in its card's place (after an edit, a restore, or an edit that lost a race). */
function showMemory(memory, { notice = null } = {}) {
  const index = state.memories.findIndex((m) => m.id === memory.id);
  if (index >= 0) state.memories[index] = memory;
  const article = cardFor(memory, notice).querySelector("article");
  itemOf(memory.id)?.replaceChildren(article);
  (article.querySelector(".card-notice") ?? article).focus();
}

$("show-retired").addEventListener("click", () => {
  state.showRetired = !state.showRetired;
  $("show-retired").setAttribute("aria-pressed", String(state.showRetired));
  loadFirstPage();
});

function articleOf(id) {
  return $("memory-list").querySelector(`article[data-memory-id="${CSS.escape(id)}"]`);
}

/** No memory shown and none loaded: the next page is the first. */
function resetList() {
  state.memories = [];
  state.cursor = null;
  state.loaded = false;
  state.searchFull = false;
  $("memory-list").replaceChildren();
}

async function loadFirstPage() {
  resetList();
  $("error-state").hidden = true;
  $("disabled-state").hidden = true;
  const generation = ++state.generation;
  const current = () => generation === state.generation;
  renderListState();
  setBusy(true);
  try {
    if (state.find.q) {
      // The API's own owner-scoped search, most relevant first; a tag narrows its answer.
      const found = await api.search(state.find.q, SEARCH_LIMIT);
      if (!current()) return;
      state.loaded = true;
      // A full answer may leave matches out: the summary says so, and that a tag narrows only this answer.
      state.searchFull = found.results.length >= SEARCH_LIMIT;
      append({ memories: found.results.filter(tagged), next_cursor: null });
    } else if (state.find.tag) {
      await walkTagged(current);
    } else {
      const page = await api.list(PAGE_SIZE, null, state.showRetired);
      if (!current()) return;
      state.loaded = true;
      append(page);
    }
    account.refreshUsage();
  } catch (error) {
    if (current()) failLoading(error);
  } finally {
    if (current()) {
      setBusy(false);
      renderListState();
    }
  }
}

const tagged = (memory) => !state.find.tag || memory.tags.includes(state.find.tag);

/** Every memory with the tag, newest first: each page of the list read once, shown as it arrives. */
async function walkTagged(current) {
  let cursor = null;
  do {
    const page = await api.list(TAG_WALK_PAGE, cursor, state.showRetired);
    if (!current()) return;
    cursor = page.next_cursor;
    state.loaded = true;
    append({ memories: page.memories.filter(tagged), next_cursor: null });
    renderListState();
  } while (cursor);
}

// ---- find: search words and a tag, both in the URL ---------------------------------------------------------

function renderFind(shown) {
  const { q, tag } = state.find;
  $("find-status").hidden = !isFinding(state.find) || !state.loaded || shown === 0;
  const one = shown === 1;
  // Hybrid search also finds memories by meaning, sharing no word with the search: they are related, not
  // matches, and the count line says how many of what it shows are which.
  const related = q ? visibleMemories().filter((m) => m.match === "meaning").length : 0;
  const matching = shown - related;
  const matches = `match${one ? "es" : ""} “${q}”`;
  const tagged = `${one ? "is" : "are"} tagged “${tag}”`;
  const best = `the ${SEARCH_LIMIT} most relevant memories that match “${q}”`;
  // Any one of the words matches, so rarer words, not more of them, narrow a search.
  const further = `More may match further down. Try rarer words${tag ? `, or no words to see every memory tagged “${tag}”` : ""}.`;
  const found = !q || related === 0 ? matches : matching === 0 ? `${one ? "is" : "are"} related to “${q}”` : null;
  let summary = found
    ? `${shown} ${one ? "memory" : "memories"} ${[q && found, tag && tagged].filter(Boolean).join(" and ")}${q ? ", most relevant first" : ""}.`
    : `${shown} memories: ${matching} ${matching === 1 ? "matches" : "match"} “${q}”, ${related} ${related === 1 ? "is" : "are"} related${tag ? `, all tagged “${tag}”` : ""}, most relevant first.`;
  if (state.searchFull) {
    summary = tag ? `${shown} of ${best} ${tagged}. ${further}` : `The ${shown} most relevant ${one ? "memory" : "memories"} that ${matches}. ${further}`;
  }
  $("find-summary").textContent = isFinding(state.find) ? summary : "";
  $("find-empty-title").textContent = !q
    ? `No memories are tagged “${tag}”`
    : state.searchFull
      ? `None of ${best} is tagged “${tag}”`
      : `No memories match “${q}”${tag ? ` and are tagged “${tag}”` : ""}`;
  $("find-empty-text").textContent = state.searchFull
    ? further
    : "Try other words, or fewer of them. Search looks for whole words in your memories, their tags and contexts.";
}

/** Look for `find` (pushing it to the address bar), then move focus to what it found. */
async function showFind(find, { push = true } = {}) {
  state.find = find;
  $("find-input").value = find.q;
  if (push) writeFind(find);
  await loadFirstPage();
  if (!isFinding(find)) return;
  ($("find-empty").hidden ? $("find-summary") : $("find-empty-title")).focus();
}

function filterByTag(tag) {
  showFind({ q: state.find.q, tag: tag === state.find.tag ? "" : tag });
}

function showEverything() {
  showFind({ q: "", tag: "" }).then(() => $("find-input").focus());
}

$("find-form").addEventListener("submit", (event) => {
  event.preventDefault();
  showFind({ q: $("find-input").value.trim(), tag: state.find.tag });
});
$("find-clear").addEventListener("click", showEverything);
$("find-empty-clear").addEventListener("click", showEverything);
window.addEventListener("popstate", () => {
  // Opening a sign-in link in this tab changes only the fragment, which fires popstate too: that is
  // start()'s to handle (with the old session's cookie maybe gone), not a find to re-run.
  if (location.hash.startsWith("#link=")) return;
  if (!$("view-bank").hidden && flagOn()) showFind(readFind(), { push: false });
});

async function loadMore() {
  if (state.loading || !state.cursor) return;
  setBusy(true);
  try {
    const page = await api.list(PAGE_SIZE, state.cursor, state.showRetired);
    const first = append(page);
    first?.focus();
  } catch (error) {
    if (error.kind === "signed-out") return signedOut();
    if (error.kind === "network") goOffline("server");
    toasts.error(`Couldn’t load more memories. ${error.message}`);
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

// ---- the team's bank: the switch, and sharing a personal memory -------------------------------------------

/** Show the person's own bank ("user") or the team's ("org"): the list, search and changes follow. */
function showBankNamed(bank) {
  state.bank = bank;
  api.setBank(bank);
  const team = bank === "org";
  for (const b of $("bank-switch").children) b.setAttribute("aria-pressed", String(b.dataset.bank === bank));
  const title = team ? "Team memories" : "Your memories";
  $("bank-title").textContent = title;
  $("memory-list").setAttribute("aria-label", title);
  document.title = `${title} · Memory bank`;
  $("bank-lede").textContent = $("bank-lede").dataset[bank];
  $("find-label").textContent = $("find-input").placeholder = `Search ${team ? "team" : "your"} memories`;
  $("account-actions").hidden = team; // download and delete all are the person's own bank's
}

for (const button of $("bank-switch").children) {
  button.addEventListener("click", async () => {
    if (button.dataset.bank === state.bank || state.offline) return;
    // Deletes in their undo window are this bank's: send them first.
    await Promise.all([...state.pending.keys()].map((id) => commitDelete(id)));
    forgetList();
    showBankNamed(button.dataset.bank);
    await loadFirstPage();
    announce(`Showing ${$("bank-title").textContent.toLowerCase()}.`);
  });
}

let sharing = null; // the memory the share dialog asks about
let shareBusy = false; // its save is under way: a second submit saves nothing

function openShare(memory) {
  sharing = memory;
  $("share-memory").textContent = memory.content;
  $("share").showModal();
}

$("share-cancel").addEventListener("click", () => $("share").close());
$("share-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!sharing || shareBusy) return;
  shareBusy = true;
  $("share-confirm").setAttribute("aria-disabled", "true");
  try {
    await api.share(sharing);
    toasts.show({ message: `Shared with your team: “${firstWords(sharing.content)}”.` });
  } catch (error) {
    if (error.kind === "signed-out") signedOut();
    else toasts.error(`Couldn’t share the memory. ${error.message}`);
  } finally {
    $("share").close();
    shareBusy = false;
    $("share-confirm").removeAttribute("aria-disabled");
  }
});

// ---- delete with undo --------------------------------------------------------------------------------------
// A deleted memory leaves the list at once, but its place holds a placeholder that names it with Undo and
// the Ctrl+Z shortcut, one Shift+Tab from the memory focus moves to. The DELETE is sent when the undo
// window closes (it waits while the placeholder has focus or the pointer), or when the page is left.

const SHORTCUT = /Mac|iPhone|iPad/.test(navigator.platform) ? "⌘Z" : "Ctrl+Z";

function visibleMemories() {
  return state.memories.filter((m) => !state.pending.has(m.id));
}

function itemOf(id) {
  return $("memory-list").querySelector(`li[data-item-id="${CSS.escape(id)}"]`);
}

/** Where focus goes when `id` leaves: the next memory still shown, else the previous, else a heading. */
function focusAfter(id) {
  const index = state.memories.findIndex((m) => m.id === id);
  const later = state.memories.slice(index + 1).find((m) => !state.pending.has(m.id));
  const earlier = state.memories.slice(0, Math.max(index, 0)).reverse().find((m) => !state.pending.has(m.id));
  const next = later ?? earlier;
  if (next) articleOf(next.id).focus();
  else if (!$("empty-state").hidden) $("empty-title").focus();
  else $("bank-title").focus();
}

function requestDelete(id) {
  if (state.offline || state.pending.has(id)) return;
  const memory = state.memories.find((m) => m.id === id);
  const item = itemOf(id);
  if (!memory || !item) return;
  const placeholder = deletedPlaceholder(memory, { height: item.getBoundingClientRect().height, shortcut: SHORTCUT, onUndo: undo });
  state.pending.set(id, { memory, window: undoWindow(placeholder, { ms: UNDO_MS, onExpire: () => commitDelete(id) }) });
  item.replaceChildren(placeholder);
  renderListState();
  focusAfter(id);
  announce(`Deleted “${firstWords(memory.content)}”. To undo, press ${SHORTCUT} or the Undo button in its place.`);
}

/** Put a memory's card back in its place (undo, or a DELETE that failed). */
function putBack(id) {
  const pending = state.pending.get(id);
  if (!pending) return null;
  pending.window.cancel();
  state.pending.delete(id);
  const article = cardFor(pending.memory).querySelector("article");
  itemOf(id)?.replaceChildren(article);
  renderListState();
  return article;
}

function undo(id) {
  const article = putBack(id);
  if (!article) return;
  article.focus();
  announce(`Restored “${firstWords(article.querySelector(".memory-content").textContent)}”.`);
}

/** Take a memory out of the list for good (its DELETE succeeded). */
function drop(id) {
  const item = itemOf(id);
  const hadFocus = item?.contains(document.activeElement);
  if (hadFocus) focusAfter(id);
  state.memories = state.memories.filter((m) => m.id !== id);
  item?.remove();
  renderListState();
  if (hadFocus && !visibleMemories().length && !$("empty-state").hidden) $("empty-title").focus();
}

async function commitDelete(id) {
  const pending = state.pending.get(id);
  if (!pending || pending.sending) return;
  pending.sending = true;
  pending.window.cancel();
  try {
    await api.remove(id);
    state.pending.delete(id);
    drop(id);
    account.refreshUsage();
  } catch (error) {
    if (error.status === 404) {
      state.pending.delete(id);
      return drop(id); // already gone: what the person wanted
    }
    putBack(id);
    if (error.kind === "network") goOffline("server");
    if (error.kind === "signed-out") return signedOut();
    toasts.error(`Couldn’t delete the memory, so it is back in your list. ${error.message}`);
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
  const open = [...state.pending].filter(([, pending]) => !pending.sending);
  if (!open.length) return;
  event.preventDefault();
  undo(open[open.length - 1][0]);
});

/** Say something to screen readers once (the status region re-announces even the same words). */
function announce(message) {
  const region = $("announcer");
  region.textContent = "";
  requestAnimationFrame(() => (region.textContent = message));
}

// ---- offline and unreachable -------------------------------------------------------------------------------

function goOffline(reason) {
  state.backOnlineToast?.dismiss(); // "Back online." must never sit beside the banner that says otherwise
  state.backOnlineToast = null;
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
  state.backOnlineToast = toasts.show({ message: "Back online." });
  if (!$("view-bank").hidden && flagOn() && (!state.loaded || !$("error-state").hidden)) loadFirstPage();
}

function setActionsEnabled(enabled) {
  for (const button of document.querySelectorAll("#memory-list button.danger, #load-more, #sign-out")) {
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
    toasts.error("Couldn’t copy: this browser blocked the clipboard.");
  }
}

for (const button of document.querySelectorAll("[data-copy-prompt]")) button.addEventListener("click", copyPrompt);

// ---- sign-in and sign-out ----------------------------------------------------------------------------------

function signedOut(problem = null) {
  // A session that worked in this page view has ended; a first visit is simply not signed in yet.
  const ended = state.loaded ? "Your session has ended. Sign in again to see your memories." : null;
  state.loaded = false;
  showSignIn({ problem: problem ?? ended });
  // The sign-in page starts at its top, under the sticky header, with focus on its heading.
  window.scrollTo(0, 0);
  $("sign-in-title").focus({ preventScroll: true });
}

async function signInWith(secret) {
  const who = await api.signIn(secret);
  // A link opened in a tab that already shows the panel: the list was someone's (maybe someone else's).
  forgetList();
  state.canDelete = who.scopes.includes(WRITE_SCOPE);
  showBank(who);
  $("bank-title").focus();
}

function forgetList() {
  showBankNamed("user");
  for (const pending of state.pending.values()) pending.window.cancel();
  state.pending.clear();
  resetList();
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
  forgetList();
  showSignIn({ title: "You’re signed out", problem: null });
  $("sign-in-title").focus();
});

async function start() {
  const link = new URLSearchParams(location.hash.slice(1)).get("link");
  if (link) {
    // Take the one-time code out of the address bar and history before anything else.
    history.replaceState(null, "", location.pathname + location.search);
    // Deletes still in their undo window belong to the session in use now: send them before it changes.
    await Promise.all([...state.pending.keys()].map((id) => commitDelete(id)));
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

// Relative times ("2 minutes ago") stay true while the page stays open.
setInterval(() => refreshTimes($("memory-list")), TIME_REFRESH_MS);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") refreshTimes($("memory-list"));
});
start();

