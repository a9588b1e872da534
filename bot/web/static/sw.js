// handraise service worker: shows a pushed question as a notification, and answers it from the notification's
// buttons. Plain script, no build step. The handlers are also on `self` (handraiseOnPush, handraiseOnClick) so
// that tests can call them: a real push needs a real push service.
"use strict";

const GENERIC = { title: "A question is waiting", body: "Open handraise to answer it." };
const ICON = "/static/icon-192.png";

const text = (value, fallback) => (typeof value === "string" && value.trim() !== "" ? value : fallback);

// A payload is a question only when it says which: anything else shows the generic notification, never nothing
// (browsers count a push that shows nothing against the site).
const questionIn = (payload) =>
  payload !== null && typeof payload === "object" && !Array.isArray(payload) && typeof payload.id === "string"
    ? payload
    : null;

const actionsOf = (question) =>
  (Array.isArray(question.actions) ? question.actions : [])
    .filter((one) => one && typeof one.action === "string" && typeof one.title === "string")
    .slice(0, 2);

// Only pages of this inbox are opened, and answers go to this inbox only: the bearer token never leaves its server.
const here = (address, fallback) => {
  try {
    const url = new URL(address, self.location.origin);
    return url.origin === self.location.origin ? url.href : fallback;
  } catch {
    return fallback;
  }
};

self.handraiseOnPush = (payload) => {
  const question = questionIn(payload);
  if (!question) {
    return self.registration.showNotification(GENERIC.title, {
      body: GENERIC.body,
      tag: "handraise",
      data: { url: "/" },
      icon: ICON,
      requireInteraction: true,
    });
  }
  return self.registration.showNotification(text(question.title, GENERIC.title), {
    body: text(question.body, ""),
    tag: question.id,
    data: question,
    actions: actionsOf(question),
    icon: ICON,
    requireInteraction: true,
  });
};

const openPage = async (address) => {
  const url = here(address, new URL("/", self.location.origin).href);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const open = windows.find((client) => client.url === url) || windows[0];
  try {
    if (open) {
      await open.focus(); // the inbox is live: the question is on it
      return "focused";
    }
  } catch {
    // not allowed to focus it (no click to act on): open a window instead
  }
  await self.clients.openWindow(url);
  return "opened";
};

const answer = async (question, action) => {
  const target = here(question.answer_url, null);
  if (!target || typeof question.answer_token !== "string") return false;
  try {
    const response = await fetch(target, {
      method: "POST",
      headers: { Authorization: `Bearer ${question.answer_token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ action }),
      credentials: "omit",
      cache: "no-store",
    });
    return response.ok;
  } catch {
    return false;
  }
};

// What the click did: "answered", or how the question's page was shown ("focused", "opened").
self.handraiseOnClick = async (payload, action) => {
  const question = questionIn(payload) || { url: "/" };
  const chosen = typeof action === "string" && action !== "" && actionsOf(question).some((one) => one.action === action);
  if (chosen && (await answer(question, action))) return "answered";
  return openPage(text(question.url, "/"));
};

self.addEventListener("push", (event) => {
  let payload = null;
  try {
    payload = event.data ? event.data.json() : null;
  } catch {
    payload = null;
  }
  event.waitUntil(self.handraiseOnPush(payload));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.handraiseOnClick(event.notification.data, event.action).catch(() => undefined));
});

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
