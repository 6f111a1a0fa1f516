// One memory as a list item: content, tags, when and how it was saved, its contexts, and a delete button.
// Every piece of server data goes in as text (dom.h uses textContent), inside bidi-isolated elements.

import { h, icon, ICONS } from "./dom.js";
import { markMatches } from "./find.js";
import { exactTime, relativeTime } from "./time.js";

const LONG_MEMORY = 480; // characters; longer memories start folded

const SOURCES = { chat: "Saved from a chat", modal: "Saved from the save dialog" };
// In the panel there is no "this" conversation: say where the agent was when it saved the memory.
const ORIGINS = {
  active_conversation: "The chat it was saved in",
  searched_conversation: "An earlier chat the agent looked up",
};

/** The first few words, for the delete button's name: "Delete memory: Prefers dark roast coffee…". */
export function firstWords(text, words = 6, characters = 60) {
  const parts = text.trim().split(/\s+/);
  let short = parts.slice(0, words).join(" ");
  if (short.length > characters) short = short.slice(0, characters).trimEnd();
  return short.length < text.trim().length ? `${short}…` : short;
}

function contextsOf(memory) {
  if (!memory.contexts.length) return null;
  const items = memory.contexts.map((context) => {
    const facts = h("dl", { className: "context-facts" });
    const fact = (term, value, className = null) => {
      if (!value) return;
      facts.append(h("div", {}, h("dt", { text: term }), h("dd", { dir: "auto", className, text: value })));
    };
    fact("From", ORIGINS[context.origin] ?? null);
    fact("Conversation", context.citation?.conversation_id, "is-id");
    fact("Message", context.citation?.message_id, "is-id");
    return h(
      "li",
      { className: "context" },
      h("blockquote", { className: "snippet", dir: "auto", text: context.snippet }),
      facts.childElementCount ? facts : null,
    );
  });
  const count = memory.contexts.length;
  return h(
    "details",
    { className: "contexts" },
    h("summary", {}, h("span", { text: count === 1 ? "1 context" : `${count} contexts` })),
    h("ol", { className: "context-list" }, ...items),
  );
}

/**
 * One memory's card. `find` marks the words a search matched and presses the tag being filtered by;
 * `onTag` makes each tag a button that filters by it. A search result found by meaning alone
 * (`match: "meaning"`) says it is related rather than matching. `onEdit`, `onHistory` and `onRestore` (a replaced
 * memory) add their buttons; `notice` is a line shown above the content (an edit that lost a race says so there).
 */
export function memoryCard(
  memory,
  { canDelete, onDelete, onTag = null, find = { q: "", tag: "" }, onEdit = null, onHistory = null, onRestore = null, notice = null, author = null, locked = null, onShare = null },
) {
  const saved = new Date(memory.created_at);
  const contentId = `content-${memory.id}`;
  // Focusable so keyboard users get the exact time too: CSS shows data-exact on hover and focus; screen
  // readers read the hidden span.
  const time = h(
    "time",
    { datetime: memory.created_at, tabindex: "0", "data-exact": exactTime(saved) },
    relativeTime(saved),
    h("span", { className: "visually-hidden", text: `, ${exactTime(saved)}` }),
  );
  const tagItem = (tag) => {
    if (!onTag) return h("li", { className: "tag", dir: "auto", text: tag });
    const button = h(
      "button",
      { type: "button", className: "tag tag-button", dir: "auto", "aria-label": `Show memories tagged ${tag}`, "aria-pressed": String(tag === find.tag) },
      tag,
    );
    button.addEventListener("click", () => onTag(tag));
    return h("li", {}, button);
  };
  const tags = memory.tags.length ? h("ul", { className: "tags", "aria-label": "Tags" }, ...memory.tags.map(tagItem)) : null;
  const remove = canDelete
    ? h(
        "button",
        { type: "button", className: "icon-button danger", "aria-label": `Delete memory: ${firstWords(memory.content)}`, title: "Delete memory" },
        icon(ICONS.trash),
      )
    : null;
  remove?.addEventListener("click", (event) => {
    // The second click of a double click lands on whatever moved under the pointer: never a second delete.
    if (event.detail > 1) return;
    onDelete(memory.id);
  });
  const words = firstWords(memory.content);
  const action = (label, name, handler) => {
    if (!handler) return null;
    const button = h("button", { type: "button", className: "button quiet small", "aria-label": `${label}: ${words}` }, name);
    button.addEventListener("click", (event) => event.detail < 2 && handler(memory));
    return button;
  };
  const retired = Boolean(memory.retired_by);
  const actions = h(
    "div",
    { className: "memory-actions" },
    retired ? null : action("Edit memory", "Edit", canDelete && onEdit),
    action("History of memory", "History", onHistory),
    retired ? action("Restore memory", "Restore", canDelete && onRestore) : null,
    retired ? null : action("Share with my team", "Share with my team", onShare),
  );
  const content = h("p", { className: "memory-content", id: contentId, dir: "auto" }, ...markMatches(memory.content, memory.match === "meaning" ? "" : find.q));
  let showAll = null;
  if (memory.content.length > LONG_MEMORY) {
    content.classList.add("is-clamped");
    showAll = h("button", { type: "button", className: "show-all", "aria-expanded": "false", "aria-controls": contentId }, "Show all");
    showAll.addEventListener("click", () => {
      const open = content.classList.toggle("is-clamped") === false;
      showAll.setAttribute("aria-expanded", String(open));
      showAll.textContent = open ? "Show less" : "Show all";
    });
  }
  const article = h(
    "article",
    { className: "memory", tabindex: "-1", "aria-labelledby": contentId, "data-memory-id": memory.id },
    h(
      "div",
      { className: "memory-body" },
      notice ? h("p", { className: "notice notice-problem card-notice", role: "alert", tabindex: "-1", text: notice }) : null,
      retired ? h("p", { className: "retired-note", text: "Replaced by a newer memory: left out of search and your list." }) : null,
      content,
      showAll,
      tags,
      // The "·" and the words after it never break apart, so no line ends with a dangling dot.
      h(
        "p",
        { className: "memory-meta" },
        time,
        metaPart("", SOURCES[memory.source] ?? memory.source),
        // A team memory says who saved it.
        author ? metaPart(" meta-author", author) : null,
        // Found by meaning alone (hybrid search): none of its words is the search's, so nothing is marked; say why it is here.
        memory.match === "meaning" ? metaPart(" meta-related", "Related: shares no word with your search") : null,
      ),
      contextsOf(memory),
      actions.childElementCount ? actions : null,
      locked ? h("p", { className: "memory-locked", text: locked }) : null,
    ),
    remove,
  );
  if (retired) article.classList.add("is-retired");
  return h("li", { className: "memory-item" }, article);
}

/** One part of a card's meta line, after a separator dot. */
const metaPart = (kind, text) => h("span", { className: `meta-source${kind}` }, h("span", { className: "meta-sep", "aria-hidden": "true", text: "·" }), text);

/**
 * What stands in a deleted memory's place while it can be undone: which memory, Undo, and its shortcut.
 * It keeps the card's height, so nothing moves under the pointer (a double click cannot reach the next card).
 */
export function deletedPlaceholder(memory, { height, shortcut, onUndo }) {
  const words = firstWords(memory.content);
  const undo = h(
    "button",
    { type: "button", className: "button undo-button", "aria-label": `Undo delete: ${words}`, "aria-keyshortcuts": "Control+Z Meta+Z" },
    icon(ICONS.undo),
    "Undo",
  );
  undo.addEventListener("click", (event) => {
    if (event.detail > 1) return;
    onUndo(memory.id);
  });
  const row = h(
    "div",
    { className: "deleted", "data-deleted-id": memory.id },
    h("p", { className: "deleted-text" }, "Deleted “", h("span", { className: "deleted-name", dir: "auto", text: words }), "”"),
    h("span", { className: "deleted-actions" }, undo, h("kbd", { className: "shortcut", "aria-hidden": "true", text: shortcut })),
  );
  row.style.minHeight = `${Math.round(height)}px`;
  return row;
}

/** Bring every relative time under `root` up to date (they are written once, when the card is made). */
export function refreshTimes(root, now = new Date()) {
  for (const time of root.querySelectorAll("time[datetime]")) {
    time.firstChild.textContent = relativeTime(new Date(time.getAttribute("datetime")), now);
  }
}
