// The pit console's only script: no build step, nothing loaded from elsewhere.
// - the page's live stream (Server-Sent Events): each "replace" puts a section's new HTML in place,
//   each "health" says whether the pit itself is live (connected to its broker, its store
//   answering) and puts the banner naming what it lost in place
// - the live indicator: "● live" only while the stream is open and the pit is live
// - ages ("3 min 12 s") of holds, ticking every second
// - the rulings' forms sent in the background, the table's answer shown in #answer
// - a dealer's call of the floor that comes in live chimes once (a short tone made by the Web
//   Audio API: no sound file), once the person has touched the page (browsers let a page make
//   a sound only after a gesture)
"use strict";

function setLiveState(text) {
  const el = document.getElementById("live-state");
  if (el) el.textContent = text;
}

// What the indicator reflects: the stream's state ("connecting", "open", "reconnecting", or the
// words of a stream that ended) and the pit's own health, as the page came and as each "health"
// event says it since.
const live = { stream: "connecting", pitLive: true, pitLost: "" };

function showLiveState() {
  if (live.stream === "open") setLiveState(live.pitLive ? "● live" : live.pitLost);
  else if (live.stream === "connecting") setLiveState(live.pitLive ? "○ connecting" : live.pitLost);
  else if (live.stream === "reconnecting") setLiveState("○ reconnecting…");
  else setLiveState(live.stream);
}

// What the keyboard focus was on inside a section about to be replaced, to find it again in the
// new copy: its id, or else its tag and text within its nearest ancestor that has an id.
function focusMark(old) {
  const el = document.activeElement;
  if (!el || el === document.body || !old.contains(el)) return null;
  if (el.id) return { id: el.id };
  const holder = el.parentElement ? el.parentElement.closest("[id]") : null;
  return { holder: holder ? holder.id : null, tag: el.tagName, text: el.textContent };
}

// Put the focus back on the same element in the new section; when it is gone (a hold ruled on
// leaves the queue) on the section itself, so that it never falls to the page's <body>.
function refocus(mark, fresh) {
  let el = mark.id ? document.getElementById(mark.id) : null;
  if (!el && mark.holder) {
    const holder = document.getElementById(mark.holder);
    if (holder) el = Array.from(holder.querySelectorAll(mark.tag)).find((c) => c.textContent === mark.text) || null;
  }
  if (!el || el.disabled) {
    el = fresh;
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
  }
  el.focus({ preventScroll: true });
}

// Rulings on their way: the forms of their hold stay disabled in a new copy of the queue.
const pending = new Set();

function holdKey(item) {
  return [item.dataset.table, item.dataset.epoch, item.dataset.hold].join("\u0000");
}

function disablePending(root) {
  for (const item of root.querySelectorAll("li.hold[data-hold]")) {
    if (pending.has(holdKey(item))) item.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  }
}

function replaceSection(target, html) {
  const old = document.getElementById(target);
  const holder = document.createElement("template");
  holder.innerHTML = html.trim();
  const fresh = holder.content.firstElementChild;
  if (!fresh) return;
  if (old) {
    const mark = focusMark(old);
    // what the person opened stays open
    for (const opened of old.querySelectorAll("details[open][id]")) {
      const again = fresh.querySelector("#" + CSS.escape(opened.id));
      if (again) again.open = true;
    }
    old.replaceWith(fresh);
    disablePending(fresh);
    if (mark) refocus(mark, fresh);
  } else if (target.startsWith("tile-")) {
    const grid = document.getElementById("floor-grid");
    const empty = document.getElementById("floor-empty");
    if (empty) empty.remove();
    if (grid) grid.appendChild(fresh);
  }
  tickAges(fresh);
  noteCalls(fresh, true);
}

// The floor calls on the page: those there when it loaded, and those that came since, chime
// once each. The audio context is made at the first gesture (a browser refuses it before).
const calls = { seen: new Set(), audio: null, chimes: 0 };

function unlockAudio() {
  if (calls.audio || !window.AudioContext) return;
  calls.audio = new AudioContext();
}

function chime() {
  const audio = calls.audio;
  if (!audio) return;
  if (audio.state === "suspended") audio.resume();
  const now = audio.currentTime;
  for (const [offset, pitch] of [[0, 880], [0.18, 660]]) {
    const tone = audio.createOscillator();
    const level = audio.createGain();
    tone.frequency.value = pitch;
    level.gain.setValueAtTime(0.0001, now + offset);
    level.gain.exponentialRampToValueAtTime(0.3, now + offset + 0.02);
    level.gain.exponentialRampToValueAtTime(0.0001, now + offset + 0.16);
    tone.connect(level).connect(audio.destination);
    tone.start(now + offset);
    tone.stop(now + offset + 0.17);
  }
  calls.chimes += 1;
  document.body.dataset.chimes = String(calls.chimes);
}

function noteCalls(root, live) {
  let fresh = false;
  for (const el of root.querySelectorAll("[data-floor-call]")) {
    const key = el.dataset.floorCall;
    if (!calls.seen.has(key)) {
      calls.seen.add(key);
      fresh = true;
    }
  }
  if (fresh && live) chime();
}

function connect() {
  live.pitLive = document.body.dataset.pitLive !== "no";
  live.pitLost = document.body.dataset.pitLost || "";
  const url = document.body.dataset.live;
  if (!url || !window.EventSource) return;
  const source = new EventSource(url);
  source.addEventListener("open", () => { live.stream = "open"; showLiveState(); });
  source.addEventListener("error", () => {
    // a stream refused (the pit serves all it may) is not tried again by the browser
    if (source.readyState === EventSource.CLOSED) live.stream = "✕ no live updates now: reload later";
    else live.stream = "reconnecting";
    showLiveState();
  });
  source.addEventListener("health", (event) => {
    const health = JSON.parse(event.data);
    live.pitLive = health.live;
    live.pitLost = health.indicator;
    replaceSection("pit-health", health.banner);
    showLiveState();
  });
  source.addEventListener("replace", (event) => {
    const update = JSON.parse(event.data);
    replaceSection(update.target, update.html);
  });
  // the page is gone, or its live updates moved to a newer page of the same person
  source.addEventListener("gone", (event) => {
    live.stream = "✕ " + JSON.parse(event.data);
    showLiveState();
    source.close();
  });
}

function age(since) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000));
  if (seconds < 60) return seconds + " s";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return minutes + " min " + (seconds % 60) + " s";
  return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
}

function tickAges(root) {
  for (const el of (root || document).querySelectorAll("time[data-age]")) {
    const since = el.getAttribute("datetime");
    if (since && !Number.isNaN(Date.parse(since))) el.textContent = age(since) + " ago";
  }
}

function sendRulings() {
  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("js-rule")) return;
    event.preventDefault();
    const answer = document.getElementById("answer");
    const item = form.closest("li.hold");
    const key = item ? holdKey(item) : null;
    const pressed = event.submitter && event.submitter.id ? event.submitter.id : null;
    // Every button of the hold is disabled while its ruling is out. A disabled button loses the
    // focus to <body>: the answer (a status line) takes it first, and says what happens.
    if (answer) {
      answer.setAttribute("tabindex", "-1");
      answer.textContent = "… sent, waiting for the table";
      answer.focus();
    }
    if (key) pending.add(key);
    (item || form).querySelectorAll("button").forEach((b) => { b.disabled = true; });
    let accepted = false;
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { "Accept": "application/json", "X-CSRF-Token": document.body.dataset.csrf || "" },
        credentials: "same-origin",
      });
      const body = await response.json().catch(() => ({}));
      let text;
      if (!response.ok) text = "✕ Refused by the pit: " + (body.detail || response.status);
      else if (body.status === "ok") {
        accepted = true;
        text = "✓ Table " + body.table_id + " accepted " + body.command + " of " + body.hold + " by " + body.person + ".";
      }
      else text = "✕ Table " + body.table_id + " refused " + body.command + ": " + body.error;
      if (answer) answer.textContent = text;
    } catch (error) {
      if (answer) answer.textContent = "✕ Not sent: " + error;
    } finally {
      if (key) pending.delete(key);
      // the hold's buttons as they are now (a live update may have put new ones in place)
      const now = key ? Array.from(document.querySelectorAll("li.hold[data-hold]")).find((i) => holdKey(i) === key) : form;
      if (now) now.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      // Accepted: the focus stays on the answer (the hold leaves the queue). Refused or not
      // sent: back on the button pressed, to try again or rule otherwise.
      const again = pressed ? document.getElementById(pressed) : null;
      if (!accepted && again && document.activeElement === answer) again.focus();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  noteCalls(document, false);
  for (const gesture of ["pointerdown", "keydown", "touchstart"]) {
    document.addEventListener(gesture, unlockAudio, { passive: true });
  }
  connect();
  tickAges(document);
  setInterval(() => tickAges(document), 1000);
  sendRulings();
});
