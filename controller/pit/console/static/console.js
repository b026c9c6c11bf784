// The pit console's only script: no build step, nothing loaded from elsewhere.
// - the page's live stream (Server-Sent Events): each "replace" puts a section's new HTML in place,
//   each "health" says whether the pit itself is live (connected to its broker, its store
//   answering) and puts the banner naming what it lost in place
// - the live indicator: "● live" only while the stream is open and the pit is live
// - ages ("3 min 12 s") of holds, ticking every second
// - the rulings' forms sent in the background, the table's answer shown in #answer
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

function replaceSection(target, html) {
  const old = document.getElementById(target);
  const holder = document.createElement("template");
  holder.innerHTML = html.trim();
  const fresh = holder.content.firstElementChild;
  if (!fresh) return;
  if (old) {
    // keep the keyboard focus where it was when the element is replaced
    const focused = document.activeElement && old.contains(document.activeElement)
      ? document.activeElement.id : null;
    old.replaceWith(fresh);
    if (focused) { const again = document.getElementById(focused); if (again) again.focus(); }
  } else if (target.startsWith("tile-")) {
    const grid = document.getElementById("floor-grid");
    const empty = document.getElementById("floor-empty");
    if (empty) empty.remove();
    if (grid) grid.appendChild(fresh);
  }
  tickAges(fresh);
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
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    if (answer) answer.textContent = "… sent, waiting for the table";
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
      else if (body.status === "ok") text = "✓ Table " + body.table_id + " accepted " + body.command + " of " + body.hold + " by " + body.person + ".";
      else text = "✕ Table " + body.table_id + " refused " + body.command + ": " + body.error;
      if (answer) answer.textContent = text;
    } catch (error) {
      if (answer) answer.textContent = "✕ Not sent: " + error;
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  connect();
  tickAges(document);
  setInterval(() => tickAges(document), 1000);
  sendRulings();
});
