// Memories that change: edit one in place, see its history, restore an earlier version or a replaced memory.
// Every change names the revision it was based on (If-Match): one that lost a race to another tab or an agent
// writes nothing, and the card then shows the newer text and says so instead of overwriting it.

import { $, h } from "./dom.js";
import { firstWords } from "./memory-card.js";
import { exactTime, relativeTime } from "./time.js";

const DOORS = { rest: "through the API", mcp: "by an agent", panel: "in this panel", import: "by an import" };
const LOST_RACE = "Not saved: this memory was changed somewhere else meanwhile. This is the newer version; edit it again if your change still applies.";

const tagList = (text) => [...new Set(text.split(",").map((tag) => tag.trim()).filter(Boolean))];
const contextInputs = (contexts) =>
  contexts.map((c) => ({ snippet: c.snippet, conversation_id: c.citation?.conversation_id ?? null, message_id: c.citation?.message_id ?? null, origin: c.origin }));

/**
 * `show(memory, {notice})` puts a memory's card (new or changed) in its place and focuses it; `failed(error)`
 * handles what is not the edit's own business (signed out, offline) and answers whether it did.
 */
export function createRevisions({ api, toasts, announce, show, failed }) {
  let saving = false; // one change at a time: a double submit saves once

  /** Send `body` as a change of `memory`'s revision; the changed memory, or null when it did not land. */
  async function change(memory, body, { onInvalid = null } = {}) {
    if (saving) return null;
    saving = true;
    try {
      return (await api.edit(memory.id, body, memory.revision)).memory;
    } catch (error) {
      if (error.code === "revision_conflict" && error.body?.memory) {
        show(error.body.memory, { notice: LOST_RACE });
        return null;
      }
      if (failed(error)) return null;
      if (error.status === 400 || error.status === 422) {
        if (onInvalid) onInvalid(error);
        else toasts.error(error.message);
        return null;
      }
      toasts.error(`Couldn’t save the change. ${error.message}`);
      return null;
    } finally {
      saving = false;
    }
  }

  /** Edit `memory` in place of its card (`item`): its words and its tags. */
  function edit(item, memory) {
    const id = memory.id;
    const error = h("p", { className: "field-error", id: `edit-error-${id}`, role: "alert", hidden: true });
    const text = h("textarea", { id: `edit-content-${id}`, rows: "4", maxlength: "8000", dir: "auto", "aria-describedby": error.id });
    text.value = memory.content;
    const tags = h("input", { id: `edit-tags-${id}`, type: "text", autocomplete: "off", "aria-describedby": `edit-tags-hint-${id}` });
    tags.value = memory.tags.join(", ");
    const save = h("button", { type: "submit", className: "button primary" }, "Save");
    const cancel = h("button", { type: "button", className: "button" }, "Cancel");
    const form = h(
      "form",
      { className: "editor", "aria-label": `Edit memory: ${firstWords(memory.content)}`, novalidate: true },
      h("label", { for: text.id, text: "Memory" }),
      text,
      h("label", { for: tags.id, text: "Tags" }),
      tags,
      h("p", { className: "hint", id: `edit-tags-hint-${id}`, text: "Separate tags with commas." }),
      error,
      h("div", { className: "dialog-actions" }, cancel, save),
    );
    const back = () => show(memory);
    cancel.addEventListener("click", back);
    form.addEventListener("keydown", (event) => event.key === "Escape" && back());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (save.getAttribute("aria-disabled") === "true") return;
      save.setAttribute("aria-disabled", "true");
      save.textContent = "Saving…";
      const changed = await change(
        memory,
        { content: text.value, tags: tagList(tags.value) },
        {
          onInvalid: (problem) => {
            const details = problem.body?.details ?? [];
            error.textContent = details.length ? details.map((d) => `${d.path === "content" ? "Memory" : d.path}: ${d.message}`).join(" ") : problem.message;
            error.hidden = false;
            text.setAttribute("aria-invalid", String(details.some((d) => d.path === "content")));
            text.focus();
          },
        },
      );
      save.removeAttribute("aria-disabled");
      save.textContent = "Save";
      if (!changed) return;
      show(changed);
      announce(changed.revision === memory.revision ? "Nothing changed." : "Saved.");
    });
    item.replaceChildren(form);
    text.focus();
  }

  const dialog = $("history");
  const list = $("history-list");
  const more = $("history-more");
  let opened = null; // { memory, cursor, canChange }

  function versionItem(version, current) {
    const when = new Date(version.updated_at);
    const door = DOORS[version.door] ?? "before history was kept";
    const label = current ? `Version ${version.revision} (now)` : `Version ${version.revision}`;
    const restore = current || !opened.canChange
      ? null
      : h("button", { type: "button", className: "button small" }, `Restore version ${version.revision}`);
    restore?.addEventListener("click", async (event) => {
      if (event.detail > 1) return;
      const memory = opened.memory;
      const body = { content: version.content, tags: version.tags, contexts: contextInputs(version.contexts) };
      dialog.close();
      const changed = await change(memory, body);
      if (!changed) return;
      show(changed);
      announce(`Restored version ${version.revision}; it is now version ${changed.revision}.`);
    });
    return h(
      "li",
      { className: "version" },
      h("h3", { text: label }),
      h("p", { className: "version-meta" }, h("time", { datetime: version.updated_at, title: exactTime(when) }, relativeTime(when)), ` · ${version.revision === 1 ? "saved" : "changed"} ${door}`),
      version.retired_by ? h("p", { className: "retired-note", text: "Replaced by a newer memory at this point." }) : null,
      h("p", { className: "memory-content", dir: "auto", text: version.content }),
      version.tags.length ? h("p", { className: "version-tags", dir: "auto", text: `Tags: ${version.tags.join(", ")}` }) : null,
      restore,
    );
  }

  async function loadVersions() {
    more.hidden = true;
    try {
      const page = await api.history(opened.memory.id, opened.cursor);
      opened.memory = page.memory;
      for (const version of page.revisions) list.append(versionItem(version, version.revision === page.memory.revision));
      opened.cursor = page.next_cursor;
      more.hidden = !page.next_cursor;
    } catch (error) {
      dialog.close();
      if (!failed(error)) toasts.error(`Couldn’t load the history. ${error.message}`);
    }
  }

  /** The history of `memory`, newest first, in a dialog; each earlier version can be restored. */
  async function history(memory, canChange) {
    opened = { memory, cursor: null, canChange };
    list.replaceChildren();
    $("history-title").textContent = `History of “${firstWords(memory.content)}”`;
    dialog.showModal();
    await loadVersions();
  }

  more.addEventListener("click", loadVersions);
  $("history-close").addEventListener("click", () => dialog.close());

  /** Bring a replaced memory back into search and the list. */
  async function restore(memory) {
    const changed = await change(memory, { retired: false });
    if (!changed) return;
    show(changed);
    announce(`Restored “${firstWords(changed.content)}” to your memories.`);
  }

  return { edit, history, restore };
}
