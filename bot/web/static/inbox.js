// handraise web inbox: live updates over server-sent events. The page works without this file; it only saves reloads.
"use strict";

(() => {
  const pending = document.querySelector("[data-pending]");
  const byKey = "handraise.by";

  const remember = (name) => {
    try {
      localStorage.setItem(byKey, name);
    } catch {
      // storage may be off; the server's cookie still fills the field on the next page load
    }
  };
  const remembered = () => {
    try {
      return localStorage.getItem(byKey) || "";
    } catch {
      return "";
    }
  };

  // Typing in an Other / Request changes field ticks its choice, so the form says what the person means.
  document.addEventListener("input", (event) => {
    const field = event.target;
    if (!(field instanceof HTMLElement)) return;
    const form = field.closest("form");
    if (form) form.dataset.dirty = "1";
    if (field instanceof HTMLTextAreaElement && field.dataset.otherFor && field.value.trim() !== "") {
      const choice = document.getElementById(field.dataset.otherFor);
      if (choice instanceof HTMLInputElement) choice.checked = true;
    }
  });

  document.addEventListener("submit", (event) => {
    const by = event.target instanceof HTMLFormElement && event.target.elements.namedItem("by");
    if (by instanceof HTMLInputElement && by.value.trim() !== "") remember(by.value.trim());
  });

  if (!pending || !("EventSource" in window)) return;

  const live = document.querySelector("[data-live]");
  const count = document.querySelector("[data-count]");
  const empty = document.querySelector("[data-empty]");
  const announcer = document.querySelector("[data-announcer]");
  const firstPage = (pending.dataset.page || "1") === "1";
  const lastPage = (pending.dataset.page || "1") === (pending.dataset.pages || "1");
  const size = Number.parseInt(pending.dataset.size || "0", 10) || Infinity;
  // Signed in, the person's questions come first (oldest first), then the rest (newest first); "Waiting for you"
  // (data-mine-only) shows only theirs, and counts only theirs, which the stream's one count for everyone cannot.
  const mineOnly = "mineOnly" in pending.dataset;
  const personFirst = "personFirst" in pending.dataset;
  const isMine = (card) => "mine" in card.dataset;
  const cards = () => Array.from(pending.children);

  const fragment = (html) => {
    const template = document.createElement("template");
    template.innerHTML = html; // server-rendered, every agent string already escaped
    return template.content.firstElementChild;
  };
  const cardOf = (id) => pending.querySelector(`[data-question="${CSS.escape(id)}"]`);
  const announce = (text) => {
    if (announcer) announcer.textContent = text;
  };
  const titleOf = (card) => card.querySelector("h2")?.textContent ?? "A question";

  // Events carry ids and the number waiting; a card's HTML is fetched when the page shows or updates it.
  const fetchCard = async (id) => {
    try {
      const response = await fetch(`/questions/${encodeURIComponent(id)}/card`, { cache: "no-store" });
      return response.ok ? fragment(await response.text()) : null;
    } catch {
      return null;
    }
  };

  const recountMine = async () => {
    try {
      const response = await fetch("/questions/waiting", { cache: "no-store" });
      const counted = response.ok ? await response.json() : null;
      return Number.isInteger(counted?.mine) ? counted.mine : null;
    } catch {
      return null;
    }
  };

  const refresh = async (waiting) => {
    if (mineOnly && waiting !== undefined) waiting = await recountMine();
    if (Number.isInteger(waiting)) {
      const many = waiting.toLocaleString("en-US");
      if (count) count.textContent = waiting === 0 ? "nothing pending" : waiting === 1 ? "1 question" : `${many} questions`;
      document.title = waiting ? `(${many}) handraise inbox` : "handraise inbox";
    }
    if (empty) empty.hidden = pending.children.length > 0;
  };

  // Where a new card goes on a signed-in page: the person's end where the rest begin, and a new card is either the
  // newest of theirs (their end) or the newest of the rest (its start). Null when that place is on another page.
  const placeFor = (card) => {
    const shown = cards();
    if (mineOnly) return isMine(card) && lastPage && shown.length < size ? { after: shown.at(-1) ?? null } : null;
    const firstOther = shown.find((shownCard) => !isMine(shownCard));
    if (firstOther) return firstOther === shown[0] && !firstPage ? null : { after: firstOther.previousElementSibling };
    return shown.length < size || lastPage ? { after: shown.at(-1) ?? null } : null;
  };

  const place = (card, at) => {
    if (at.after) at.after.after(card);
    else pending.prepend(card);
  };

  const handlers = {
    async asked(event) {
      await refresh(event.waiting);
      if (personFirst || mineOnly) {
        if (cardOf(event.id)) return;
        const card = await fetchCard(event.id);
        if (!card || cardOf(event.id) || (mineOnly && !isMine(card))) return;
        const at = placeFor(card);
        if (!at) {
          announce(isMine(card) ? "A new question for you is waiting on a later page" : "A new question is waiting");
          return;
        }
        place(card, at);
        await refresh();
        announce(`New question: ${titleOf(card)}`);
        return;
      }
      if (!firstPage) {
        announce("A new question is waiting on the first page");
        return; // new questions are the newest: they belong on the first page
      }
      if (cardOf(event.id)) return;
      const card = await fetchCard(event.id);
      if (!card || cardOf(event.id)) return;
      const by = card.querySelector('input[name="by"]');
      if (by instanceof HTMLInputElement && by.value === "") by.value = remembered();
      pending.prepend(card);
      await refresh();
      announce(`New question: ${titleOf(card)}`);
    },
    async resolved(event) {
      await refresh(event.waiting);
      const card = cardOf(event.id);
      if (!card) return;
      const fresh = await fetchCard(event.id);
      card.dataset.status = event.status;
      card.classList.add("resolved");
      const outcome = card.querySelector("[data-outcome]");
      const told = fresh?.querySelector("[data-outcome]");
      if (outcome && told) outcome.innerHTML = told.innerHTML;
      else if (outcome) outcome.textContent = event.status;
      const body = card.querySelector("fieldset.body");
      if (body instanceof HTMLFieldSetElement) body.disabled = true;
      announce(`${titleOf(card)}: ${event.status}`);
    },
    async partial(event) {
      const note = cardOf(event.id)?.querySelector("[data-partial]");
      if (!note) return;
      const told = (await fetchCard(event.id))?.querySelector("[data-partial]");
      if (told) note.innerHTML = told.innerHTML;
    },
    async waiting(event) {
      await refresh(event.waiting); // recounted after another replica's change
    },
    reload() {
      // Updates were missed. Reloading is safe unless someone is halfway through a form.
      if (!document.querySelector("form[data-dirty]")) {
        location.reload();
        return;
      }
      if (live) live.textContent = "Out of date: reload when done";
    },
  };

  // One event at a time, in order: a card fetched for "asked" is in place before its "resolved" is handled.
  let handled = Promise.resolve();

  const source = new EventSource("/events");
  source.addEventListener("open", () => {
    if (!live) return;
    live.hidden = false;
    live.textContent = "Live";
    live.classList.remove("off");
  });
  source.addEventListener("error", () => {
    if (!live) return;
    live.textContent = "Reconnecting…";
    live.classList.add("off");
  });
  source.addEventListener("message", (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    const handle = handlers[event.kind];
    if (handle) handled = handled.then(() => handle(event)).catch(() => undefined);
  });
})();
