// Toasts in one aria-live region. A toast with an action (Undo) pauses while it has focus or the pointer.

import { h, icon, ICONS } from "./dom.js";

export function createToasts(region) {
  // Errors stay longer: they are read, not glanced at.
  function show({ message, tone = "info", action = null, duration = tone === "error" ? 8000 : 4000, onExpire = null }) {
    const text = h("p", { className: "toast-text", text: message });
    const toast = h("div", { className: `toast toast-${tone}` }, icon(tone === "error" ? ICONS.alert : ICONS.check, "icon toast-icon"), text);
    let remaining = duration;
    let startedAt = 0;
    let timer = null;
    let running = false;
    let done = false;

    const finish = (expired) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      toast.classList.add("toast-leaving");
      setTimeout(() => toast.remove(), 180);
      if (expired && onExpire) onExpire();
    };
    const run = () => {
      if (running || done) return;
      running = true;
      startedAt = Date.now();
      timer = setTimeout(() => finish(true), remaining);
    };
    const pause = () => {
      if (!running) return;
      running = false;
      clearTimeout(timer);
      remaining = Math.max(0, remaining - (Date.now() - startedAt));
    };

    if (action) {
      const button = h("button", { type: "button", className: "button toast-action" }, icon(ICONS.undo), action.label);
      button.addEventListener("click", () => {
        finish(false);
        action.run();
      });
      toast.append(button);
      toast.addEventListener("focusin", pause);
      toast.addEventListener("focusout", run);
      toast.addEventListener("pointerenter", pause);
      toast.addEventListener("pointerleave", run);
    }
    region.append(toast);
    run();
    return {
      dismiss: () => finish(false),
      expireNow: () => finish(true),
      get done() {
        return done;
      },
    };
  }
  return { show, error: (message) => show({ message, tone: "error" }) };
}
