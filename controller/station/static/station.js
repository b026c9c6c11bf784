// The dealer's station's only script: no build step, nothing loaded from elsewhere.
// - the live stream (Server-Sent Events, /live): each "sections" event puts the sections that
//   changed in place; another page's turn (a log-in, a log-out, the idle log-out) loads it
// - every button sends its request to the station's JSON API; the station's answer (the core's
//   reason for a refusal) is shown in #answer; while a request is out, and until the screen
//   shows what it did, no other action can be tapped (a double tap never acts twice)
// - the PIN pad and the amount pad type into their field: no keyboard needed
// - performance marks time each tap: station:tap, station:answer (its detail: the last event
//   the answer journaled) and station:shown (its detail: the event the screen now shows)
"use strict";

const busy = { on: false, seq: null, timer: null };
const straddles = [];
const sittingOut = new Set();
let target = null;

function body() { return document.body; }

let liveText = "";

function setLiveState(text) {
  liveText = text;
  const el = document.getElementById("live-state");
  if (el) el.textContent = text;
}

function say(text, kind) {
  const answer = document.getElementById("answer");
  if (!answer) return;
  answer.textContent = text;
  answer.className = "answer" + (kind ? " " + kind : "");
}

// ------------------------------------------------------------------ live sections

function applyBusy(root) {
  for (const b of (root || document).querySelectorAll("button[data-post]")) {
    if (b.id === "logout") continue;
    if (busy.on) {
      if (!b.disabled) b.dataset.wasEnabled = "1";
      b.disabled = true;
    } else if (b.dataset.wasEnabled) {
      delete b.dataset.wasEnabled;
      b.disabled = false;
    }
  }
}

function release() {
  busy.on = false;
  busy.seq = null;
  if (busy.timer) clearTimeout(busy.timer);
  busy.timer = null;
  applyBusy(document);
}

function replaceSection(id, html) {
  const old = document.getElementById(id);
  if (!old) return;
  const holder = document.createElement("template");
  holder.innerHTML = html.trim();
  const fresh = holder.content.firstElementChild;
  if (!fresh) return;
  const focusedId = old.contains(document.activeElement) ? document.activeElement.id : null;
  old.replaceWith(fresh);
  if (id === "pad") restoreStraddles(fresh);
  if (id === "status") setLiveState(liveText);
  applyBusy(fresh);
  if (focusedId) {
    const again = document.getElementById(focusedId);
    if (again && !again.disabled) again.focus({ preventScroll: true });
  }
  if (id === "badge" && fresh.dataset.badge) {
    const dealer = document.getElementById("dealer");
    if (dealer) dealer.value = ""; // the badge names the dealer
    const pin = document.getElementById("pin");
    if (pin) setTarget(pin);
  }
}

function amountPanel() {
  const panel = document.getElementById("amount-panel");
  const pad = document.getElementById("pad");
  if (!panel || !pad) return;
  const raising = pad.dataset.min !== undefined;
  panel.hidden = !raising;
  if (!raising) {
    const amount = document.getElementById("amount");
    if (amount) amount.value = "";
  }
}

function connect() {
  const url = body().dataset.live;
  if (!url || !window.EventSource) return;
  const source = new EventSource(url);
  source.addEventListener("open", () => setLiveState("● live"));
  source.addEventListener("error", () => {
    setLiveState(source.readyState === EventSource.CLOSED ? "✕ no live updates: reload" : "○ reconnecting…");
  });
  source.addEventListener("sections", (event) => {
    const update = JSON.parse(event.data);
    if (update.page !== body().dataset.page) {
      source.close();
      window.location.replace("/");
      return;
    }
    for (const [id, html] of Object.entries(update.sections)) replaceSection(id, html);
    if (update.seq !== null && update.seq !== undefined) body().dataset.seq = String(update.seq);
    amountPanel();
    if (Object.keys(update.sections).length) performance.mark("station:shown", { detail: { seq: update.seq } });
    if (busy.on && busy.seq !== null && update.seq !== null && update.seq >= busy.seq) release();
  });
}

// ------------------------------------------------------------------ buttons

function bodyOf(button) {
  const sent = JSON.parse(button.dataset.body || "{}");
  if (button.dataset.amount !== undefined) {
    const field = document.getElementById("amount");
    const text = field ? field.value.trim() : "";
    if (!/^[0-9]+$/.test(text)) return { error: "Amount: enter the seat's total for the " + button.textContent.toLowerCase() + " on the pad" };
    sent.amount = Number(text);
  }
  if (button.id === "b-start" && straddles.length) sent.straddles = straddles.slice();
  if (button.id === "b-start" && sittingOut.size) {
    const seated = (document.getElementById("pad").dataset.seated || "").split(",").map(Number);
    sent.seats = seated.filter((seat) => seat && !sittingOut.has(seat));
  }
  return { sent };
}

async function press(button) {
  const made = bodyOf(button);
  if (made.error) {
    say("✕ " + made.error, "refused");
    return;
  }
  performance.clearMarks(); // only this tap's marks are kept: a kiosk runs for days
  performance.mark("station:tap");
  busy.on = true;
  busy.seq = null;
  applyBusy(document);
  say("… sent", "");
  let response;
  let answer = {};
  try {
    response = await fetch(button.dataset.post, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify(made.sent),
      credentials: "same-origin",
    });
    answer = await response.json().catch(() => ({}));
  } catch (error) {
    release();
    say("✕ Not sent: the station does not answer (" + error + ")", "refused");
    return;
  }
  // the answer: what the tap caused is journaled (the daemon answers after its commit)
  const seqs = (answer.events || []).map((e) => e.seq).filter((s) => typeof s === "number");
  performance.mark("station:answer", { detail: { seq: seqs.length ? Math.max(...seqs) : null } });
  if (!response.ok) {
    release();
    say("✕ " + (answer.error || "refused (" + response.status + ")"), "refused");
    if (response.status === 401) window.location.replace("/");
    return;
  }
  if (button.dataset.then === "reload") {
    window.location.replace("/");
    return;
  }
  say("✓ " + button.textContent.trim(), "sent");
  if (button.dataset.amount !== undefined) {
    const field = document.getElementById("amount");
    if (field) field.value = "";
  }
  if (button.id === "b-start") {
    straddles.length = 0;
    sittingOut.clear();
  }
  // what the table did is on the screen once the view has reached the answer's last event
  // (a call of the floor changes nothing at the table: nothing to wait for)
  const shown = Number(body().dataset.seq || "0");
  if (button.dataset.post === "/api/floor" || !seqs.length || Math.max(...seqs) <= shown) release();
  else {
    busy.seq = Math.max(...seqs);
    busy.timer = setTimeout(release, 3000); // the daemon answered: never stay locked for long
  }
}

function restoreStraddles(root) {
  const wanted = new Set(straddles);
  for (const b of root.querySelectorAll("button[data-straddle]")) {
    b.setAttribute("aria-pressed", wanted.has(Number(b.dataset.straddle)) ? "true" : "false");
  }
  for (const b of root.querySelectorAll("button[data-sits-out]")) {
    b.setAttribute("aria-pressed", sittingOut.has(Number(b.dataset.sitsOut)) ? "true" : "false");
  }
}

function toggleSitsOut(button) {
  const seat = Number(button.dataset.sitsOut);
  if (sittingOut.has(seat)) sittingOut.delete(seat);
  else sittingOut.add(seat);
  restoreStraddles(document);
}

function toggleStraddle(button) {
  const seat = Number(button.dataset.straddle);
  const at = straddles.indexOf(seat);
  if (at >= 0) straddles.splice(at, 1);
  else {
    const most = Number(document.getElementById("pad").dataset.straddleMax || "1");
    if (straddles.length >= most) straddles.shift();
    straddles.push(seat);
  }
  restoreStraddles(document);
}

// ------------------------------------------------------------------ pads

function setTarget(field) {
  for (const f of document.querySelectorAll("[data-pad-target]")) f.classList.remove("target");
  target = field;
  if (field) field.classList.add("target");
}

function key(button) {
  const field = target || document.querySelector("[data-pad-default]");
  if (!field) return;
  const k = button.dataset.key;
  if (k === "clear") field.value = "";
  else if (k === "back") field.value = field.value.slice(0, -1);
  else if (field.value.length < 12) field.value += k;
}

async function logIn(form) {
  const dealer = form.querySelector("#dealer").value.trim();
  const pin = form.querySelector("#pin").value;
  const sent = dealer ? { dealer: dealer, pin: pin } : { pin: pin };
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  say("… checking", "");
  try {
    const response = await fetch("/api/login", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify(sent),
      credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      window.location.replace("/");
      return;
    }
    form.querySelector("#pin").value = "";
    say("✕ " + (answer.error || "refused (" + response.status + ")"), "refused");
  } catch (error) {
    say("✕ Not sent: the station does not answer (" + error + ")", "refused");
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  connect();
  amountPanel();
  setTarget(document.querySelector("[data-pad-default]"));
  document.addEventListener("focusin", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.hasAttribute("data-pad-target")) setTarget(event.target);
  });
  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element ? event.target.closest("button") : null;
    if (!button || button.disabled) return;
    if (button.dataset.key !== undefined) key(button);
    else if (button.dataset.size !== undefined) {
      const field = document.getElementById("amount");
      if (field) field.value = button.dataset.size;
    } else if (button.dataset.straddle !== undefined) toggleStraddle(button);
    else if (button.dataset.sitsOut !== undefined) toggleSitsOut(button);
    else if (button.dataset.post !== undefined) press(button);
  });
  const form = document.getElementById("login-form");
  if (form) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      logIn(form);
    });
  }
});
