// The person's own account: how many memories and how much of the quota, download them all, delete them all.
// "Delete all" runs in bounded batches (one server call each) with progress; the page remembers, for the signed-in
// person, that it was asked, so a page closed half-way carries on where it stopped the next time the panel opens.
// Only that resume, or "Carry on" after a pause in this page, skips the typed confirmation.

import { $, h } from "./dom.js";

const DELETE_ALL_KEY = "memorybank.deleteAll";
const CONFIRM_WORDS = "delete all";

const numbers = new Intl.NumberFormat();
const percent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 });

const plural = (n, one, many) => `${numbers.format(n)} ${n === 1 ? one : many}`;

function shareOf(usage) {
  const share = Math.max(usage.memories / usage.quota.max_memories || 0, usage.characters / usage.quota.max_characters || 0);
  if (share > 0 && share < 0.001) return "less than 0.1%";
  return percent.format(share);
}

export function createAccount({ api, toasts, user, bank, onError, onAllDeleted }) {
  let usage = null; // the person's own bank's, which "Delete all" counts

  /** The use of the bank shown (`bank()`): one's own, or the team's. */
  async function refreshUsage() {
    const asked = bank();
    let shown;
    try {
      shown = await api.usage();
    } catch {
      $("usage").hidden = true; // the count is a nicety: the list says what failed, if anything did
      return;
    }
    if (asked !== bank()) return; // switched meanwhile: that bank's own refresh follows
    if (asked === "user") usage = shown;
    const { memories, characters, quota } = shown;
    $("usage").replaceChildren(
      h("strong", { text: plural(memories, "memory", "memories") }),
      h("span", {
        className: "usage-quota",
        text: ` · ${shareOf(shown)} of ${asked === "org" ? "the team’s" : "your"} quota used (${numbers.format(memories)} of ${plural(quota.max_memories, "memory", "memories")}, ${numbers.format(characters)} of ${plural(quota.max_characters, "character", "characters")})`,
      }),
    );
    $("usage").hidden = false;
  }

  // ---- download ----

  $("export").addEventListener("click", async () => {
    const button = $("export");
    if (button.getAttribute("aria-busy") === "true") return;
    button.setAttribute("aria-busy", "true");
    button.lastElementChild.textContent = "Preparing download…";
    try {
      const file = await api.exportFile();
      const name = `memories-${new Date().toISOString().slice(0, 10)}.jsonl`;
      const url = URL.createObjectURL(file);
      const link = h("a", { href: url, download: name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      toasts.show({ message: `Your memories are downloading as ${name} (JSON Lines, the format of memorybank import).` });
    } catch (error) {
      onError(error);
      if (error.kind !== "signed-out") toasts.error(`Couldn’t download your memories. ${error.message}`);
    } finally {
      button.removeAttribute("aria-busy");
      button.lastElementChild.textContent = "Download my memories";
    }
  });

  // ---- delete all ----

  const dialog = $("delete-all");
  let running = false;
  let paused = null; // the deletion this page paused: "Carry on deleting" runs it without asking again

  /** This person's unfinished "delete all", noted by this browser. None when the panel cannot tell who is
   * signed in (mounted in a host): a note there could be anyone's. */
  function remembered() {
    const me = user();
    if (!me) return null;
    try {
      const asked = JSON.parse(localStorage.getItem(DELETE_ALL_KEY) ?? "null");
      return asked && asked.user === me ? asked : null;
    } catch {
      return null;
    }
  }

  function remember(asked) {
    if (asked && !asked.user) return; // nobody to resume it for: see remembered()
    try {
      if (asked) localStorage.setItem(DELETE_ALL_KEY, JSON.stringify(asked));
      else localStorage.removeItem(DELETE_ALL_KEY);
    } catch {
      // Storage blocked: the deletion still runs; it just cannot resume after a reload.
    }
  }

  function showStep(step) {
    $("delete-all-ask").hidden = step !== "ask";
    $("delete-all-progress").hidden = step === "ask";
    $("delete-all-cancel").hidden = step === "running";
    $("delete-all-confirm").hidden = step === "running";
  }

  async function open() {
    if (running) return;
    if (remembered()) return resume(); // this person's own delete-all, interrupted: carry on, as on sign-in
    paused = null;
    if (!user()) remember(null); // a note nobody can resume must not outlive a new question
    await refreshUsage();
    const count = usage?.memories ?? 0;
    $("delete-all-title").textContent = `Delete all ${plural(count, "memory", "memories")}?`;
    $("delete-all-text").textContent =
      `This permanently deletes every memory in your memory bank, on every device, with its contexts. Your agents will no longer remember them, and it can’t be undone. Download them first if you may want them back.`;
    $("delete-all-input").value = "";
    $("delete-all-input").removeAttribute("aria-invalid");
    $("delete-all-error").hidden = true;
    $("delete-all-confirm").textContent = `Delete all ${plural(count, "memory", "memories")}`;
    $("delete-all-cancel").textContent = "Cancel";
    showStep("ask");
    dialog.showModal();
    $("delete-all-input").focus();
  }

  async function run(asked) {
    running = true;
    showStep("running");
    $("delete-all-title").textContent = "Deleting all your memories…";
    $("delete-all-text").textContent = asked.user
      ? "Keep this page open. If it closes, the deletion carries on the next time you open the panel."
      : "Keep this page open until it ends. If it closes, what is deleted stays deleted; delete all again for the rest.";
    const bar = $("delete-all-bar");
    const status = $("delete-all-status");
    status.textContent = `Deleting ${plural(asked.total, "memory", "memories")}…`;
    try {
      for (;;) {
        const step = await api.deleteAllBatch();
        const done = Math.max(0, asked.total - step.remaining);
        bar.max = Math.max(asked.total, 1);
        bar.value = Math.min(done, bar.max);
        status.textContent = `Deleted ${numbers.format(Math.min(done, asked.total))} of ${numbers.format(asked.total)}…`;
        if (step.remaining === 0) break;
        // Memories saved elsewhere as fast as they are deleted: stop rather than spin.
        if (step.deleted === 0) throw new Error("Nothing more could be deleted; try again.");
      }
    } catch (error) {
      running = false;
      paused = asked;
      onError(error);
      if (error.kind === "signed-out") return dialog.close();
      $("delete-all-title").textContent = "Deleting paused";
      status.textContent = `${error.message} The memories deleted so far stay deleted; carry on to delete the rest.`;
      $("delete-all-confirm").textContent = "Carry on deleting";
      $("delete-all-cancel").textContent = "Close";
      $("delete-all-cancel").hidden = false;
      $("delete-all-confirm").hidden = false;
      $("delete-all-confirm").focus();
      return;
    }
    running = false;
    paused = null;
    remember(null);
    dialog.close();
    await onAllDeleted();
    await refreshUsage();
    toasts.show({ message: `All ${plural(asked.total, "memory", "memories")} are deleted, on every device.` });
  }

  $("delete-all-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (running) return;
    if (paused) return run(paused); // "Carry on deleting"
    const typed = $("delete-all-input").value.trim().toLowerCase();
    const count = usage?.memories ?? 0;
    if (typed !== CONFIRM_WORDS && typed !== String(count)) {
      $("delete-all-error").textContent = `Type “delete all” (or the number ${count}) to confirm.`;
      $("delete-all-error").hidden = false;
      $("delete-all-input").setAttribute("aria-invalid", "true");
      $("delete-all-input").focus();
      return;
    }
    const started = { user: user(), total: count };
    remember(started);
    run(started);
  });

  $("delete-all-cancel").addEventListener("click", () => {
    paused = null;
    remember(null); // "Close" after a pause gives up the rest; the person can start again
    dialog.close();
    $("delete-all-open").focus();
  });
  // Escape must not leave a deletion half-shown while it runs.
  dialog.addEventListener("cancel", (event) => {
    if (running) return event.preventDefault();
    paused = null;
    remember(null);
  });
  $("delete-all-open").addEventListener("click", open);

  /** Carry on a "delete all" this browser started for this person and did not finish. */
  function resume() {
    const asked = remembered();
    if (!asked || running) return;
    dialog.showModal();
    run(asked);
  }

  return { refreshUsage, resume };
}
