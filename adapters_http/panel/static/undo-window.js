// How long a deleted memory can be taken back: its DELETE waits for this window to close.

/**
 * Calls `onExpire` after `ms`, paused while `placeholder` has focus or the pointer moves on it. A pointer that
 * merely stays where the trash button was (it never moved onto the placeholder) does not hold the window open.
 * `cancel()` closes it without calling `onExpire`.
 */
export function undoWindow(placeholder, { ms, onExpire }) {
  let remaining = ms;
  let startedAt = Date.now();
  let timer = setTimeout(expire, remaining);
  let pointer = false;

  function expire() {
    timer = null;
    onExpire();
  }
  function pause() {
    if (timer === null) return;
    clearTimeout(timer);
    timer = null;
    remaining = Math.max(0, remaining - (Date.now() - startedAt));
  }
  function resume() {
    if (timer !== null || remaining <= 0 || pointer || placeholder.matches(":focus-within")) return;
    startedAt = Date.now();
    timer = setTimeout(expire, remaining);
  }

  placeholder.addEventListener("focusin", pause);
  placeholder.addEventListener("pointermove", () => {
    pointer = true;
    pause();
  });
  placeholder.addEventListener("focusout", () => setTimeout(resume));
  placeholder.addEventListener("pointerleave", () => {
    pointer = false;
    resume();
  });
  return {
    cancel() {
      clearTimeout(timer);
      timer = null;
      remaining = 0;
    },
  };
}
