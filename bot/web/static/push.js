// handraise: "Turn on notifications" for this device (Web Push). Loaded only on a signed-in inbox page of a server
// that sends pushes; everything else on the page works without it.
"use strict";

(() => {
  const box = document.querySelector("[data-push]");
  if (!box) return;
  const on = box.querySelector("[data-push-on]");
  const off = box.querySelector("[data-push-off]");
  const state = box.querySelector("[data-push-state]");
  const csrf = box.dataset.csrf || "";

  const say = (words) => {
    if (state) state.textContent = words;
    box.hidden = false;
  };
  const offer = (subscribed) => {
    if (on) on.hidden = subscribed;
    if (off) off.hidden = !subscribed;
    box.hidden = false;
  };
  const busy = (working) => {
    for (const button of [on, off]) if (button) button.disabled = working;
  };

  const apple = /iPad|iPhone|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);
  const installed = window.matchMedia("(display-mode: standalone)").matches || navigator.standalone === true;
  if (apple && !installed) {
    // iOS delivers Web Push only to a site added to the Home Screen (16.4 and later).
    say("Add handraise to your Home Screen first (iOS 16.4+): Share, then Add to Home Screen, and open it from there.");
    return;
  }
  if (!("serviceWorker" in navigator && "PushManager" in window && "Notification" in window)) {
    say("This browser cannot show notifications from the inbox.");
    return;
  }

  // The server's own words for a refusal it explains (e.g. too many devices), else ours.
  const refused = async (response) => {
    const status = response.status;
    if (status === 401) return "You are signed out: reload the inbox, sign in, and try again.";
    if (status === 403) return "The server refused this page's request: reload the inbox and try again.";
    if (status === 404) return "This server does not send notifications.";
    const told = (await response.json().catch(() => ({}))).message;
    const why = typeof told === "string" && told.trim() !== "" ? `: ${told.trim().slice(0, 200)}` : "";
    if (status < 500) return `The server refused the subscription (HTTP ${status})${why}.`;
    return `The server could not save it (HTTP ${status})${why}; try again in a moment.`;
  };
  const send = (method, body) =>
    fetch("/push/subscriptions", {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
  const keyBytes = (text) => {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
    return Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
  };
  const sameKey = (subscription, key) => {
    const held = subscription.options && subscription.options.applicationServerKey;
    if (!held) return true;
    const bytes = new Uint8Array(held);
    return bytes.length === key.length && bytes.every((byte, index) => byte === key[index]);
  };
  const blocked = () => say("Notifications are blocked for this site: allow them in the browser's site settings, then try again.");

  const worker = navigator.serviceWorker.register("/sw.js", { scope: "/" });

  const turnOn = async () => {
    const permission = await Notification.requestPermission();
    if (permission === "denied") return blocked();
    if (permission !== "granted") return say("Notifications were not allowed; press the button to be asked again.");
    const answer = await fetch("/push/key", { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) return say(await refused(answer));
    const publicKey = (await answer.json().catch(() => ({}))).publicKey;
    if (typeof publicKey !== "string" || !/^[A-Za-z0-9_-]{80,100}={0,2}$/.test(publicKey)) {
      return say("The server sent no usable push key; ask whoever runs handraise.");
    }
    const key = keyBytes(publicKey);
    await worker;
    const registration = await navigator.serviceWorker.ready;
    let subscription = await registration.pushManager.getSubscription();
    if (subscription && !sameKey(subscription, key)) {
      await subscription.unsubscribe(); // made for an older server key: pushes signed with the new one would fail
      subscription = null;
    }
    subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    const saved = await send("POST", subscription.toJSON());
    if (!saved.ok) return say(await refused(saved));
    offer(true);
    say("Notifications are on on this device.");
  };

  const turnOff = async () => {
    const registration = await navigator.serviceWorker.ready;
    const subscription = await registration.pushManager.getSubscription();
    if (subscription) {
      const removed = await send("DELETE", { endpoint: subscription.endpoint });
      if (!removed.ok && removed.status !== 404) return say(await refused(removed));
      await subscription.unsubscribe();
    }
    offer(false);
    say("Notifications are off on this device.");
  };

  const pressed = (act) => async () => {
    busy(true);
    try {
      await act();
    } catch (error) {
      say(`The browser refused notifications: ${(error && error.message) || error}.`);
    } finally {
      busy(false);
    }
  };
  on?.addEventListener("click", pressed(turnOn));
  off?.addEventListener("click", pressed(turnOff));

  worker
    .then(() => navigator.serviceWorker.ready)
    .then((registration) => registration.pushManager.getSubscription())
    .then((subscription) => {
      const subscribed = subscription !== null && Notification.permission === "granted";
      offer(subscribed);
      if (subscribed) say("Notifications are on on this device.");
      else if (Notification.permission === "denied") blocked();
    })
    .catch((error) => {
      offer(false);
      say(`The browser would not start the inbox's service worker: ${(error && error.message) || error}.`);
    });
})();
