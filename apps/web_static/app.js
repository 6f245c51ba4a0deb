// block_env web app: play against agents and replay recorded games. The server holds every
// game's state; this page only draws what it is sent and posts action ids.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const U = 24; // half a tile, in pixels
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DELAY = params.has("fast") ? 0 : 450; // ms between opponents' moves
let game = null; // the latest view of the game in play
let replayData = null; // {entries: [{label, replay}], frames: {...}}
let frameIndex = 0;

// -- drawing -------------------------------------------------------------------------------

const GRID = { TL: [6, 6], TC: [12, 6], TR: [18, 6], ML: [6, 12], C: [12, 12], MR: [18, 12], BL: [6, 18], BC: [12, 18], BR: [18, 18] };
const PIPS = [
  [], ["C"], ["TL", "BR"], ["TL", "C", "BR"], ["TL", "TR", "BL", "BR"], ["TL", "TR", "C", "BL", "BR"],
  ["TL", "TR", "ML", "MR", "BL", "BR"], ["TL", "TR", "ML", "C", "MR", "BL", "BR"],
  ["TL", "TC", "TR", "ML", "MR", "BL", "BC", "BR"], ["TL", "TC", "TR", "ML", "C", "MR", "BL", "BC", "BR"],
];

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function half(group, value, x, y) {
  if (value < PIPS.length) {
    for (const spot of PIPS[value]) el("circle", { cx: x + GRID[spot][0], cy: y + GRID[spot][1], r: 2.3, fill: "#111" }, group);
  } else {
    const t = el("text", { x: x + 12, y: y + 17, "text-anchor": "middle", "font-size": 13 }, group);
    t.textContent = value;
  }
}

// One tile at (x, y): across (a left, b right) or, for doubles in the line, crosswise.
function drawTile(parent, a, b, x, y, crosswise) {
  const g = el("g", { class: "tile", "data-tile": `${a}|${b}` }, parent);
  const w = crosswise ? U : 2 * U, h = crosswise ? 2 * U : U;
  el("rect", { x, y, width: w, height: h, rx: 4, fill: "#fffdf5", stroke: "#333" }, g);
  if (crosswise) {
    el("line", { x1: x + 3, y1: y + U, x2: x + U - 3, y2: y + U, stroke: "#333" }, g);
    half(g, a, x, y);
    half(g, b, x, y + U);
  } else {
    el("line", { x1: x + U, y1: y + 3, x2: x + U, y2: y + U - 3, stroke: "#333" }, g);
    half(g, a, x, y);
    half(g, b, x + U, y);
  }
  return g;
}

function tileSvg(tile) {
  const svg = el("svg", { width: 2 * U + 2, height: U + 2, viewBox: `-1 -1 ${2 * U + 2} ${U + 2}` });
  drawTile(svg, tile[0], tile[1], 0, 0, false);
  return svg;
}

// The line left to right, doubles crosswise, both open ends marked with their value.
function drawLine(svg, line, ends) {
  svg.replaceChildren();
  const marker = 34;
  let x = marker;
  for (const [a, b] of line) {
    const double = a === b;
    drawTile(svg, a, b, x, double ? 0 : U / 2, double);
    x += double ? U + 2 : 2 * U + 2;
  }
  if (ends) {
    for (const [side, value, at] of [["left", ends[0], 2], ["right", ends[1], x + 2]]) {
      const g = el("g", { class: "end", "data-end": side, "data-value": value }, svg);
      el("circle", { cx: at + 14, cy: U, r: 13, fill: "#e0a000" }, g);
      const t = el("text", { x: at + 14, y: U + 5, "text-anchor": "middle", "font-size": 14, "font-weight": "bold" }, g);
      t.textContent = value;
    }
  } else {
    const t = el("text", { x: 8, y: U + 5, fill: "#fff" }, svg);
    t.textContent = "empty line: the leader opens";
  }
  svg.setAttribute("width", x + marker + 4);
  svg.setAttribute("height", 2 * U + 2);
}

// -- talking to the server -----------------------------------------------------------------

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function showError(error) {
  $("error").textContent = error ? String(error.message || error) : "";
  $("error").hidden = !error;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const seatName = (s) => `player_${s}`;

// -- play ----------------------------------------------------------------------------------

async function newGame(event) {
  event.preventDefault();
  showError(null);
  const body = {
    preset: $("preset").value,
    episode: $("episode").value,
    opponents: $("opponents").value.split(",").map((s) => s.trim()).filter(Boolean),
    seat: Number($("seat").value || 0),
  };
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  try {
    const view = await api("POST", "/api/games", body);
    $("events").replaceChildren();
    $("table").hidden = false;
    await show(view);
  } catch (error) {
    showError(error);
  }
}

async function play(action) {
  showError(null);
  setHandEnabled(false);
  try {
    await show(await api("POST", `/api/games/${game.id}/move`, { action }));
  } catch (error) {
    showError(error);
    setHandEnabled(true);
  }
}

async function nextRound() {
  $("events").replaceChildren();
  await show(await api("POST", `/api/games/${game.id}/next`));
}

function setHandEnabled(on) {
  document.body.dataset.busy = on ? "no" : "yes";
  for (const b of document.querySelectorAll("#hand button, #pass")) b.disabled = !on;
}

// Show the moves that came back one by one, then the position after them.
async function show(view) {
  game = view;
  document.body.dataset.busy = "yes";
  for (const event of view.events) {
    const item = document.createElement("li");
    if (event.round_over) {
      item.textContent = `Round over: ${event.round_over.why}`;
    } else {
      item.textContent = `${seatName(event.seat)} (${event.agent}): ${event.text}`;
      if (event.seat !== view.seat) {
        drawLine($("line"), event.line, event.ends);
        await sleep(DELAY);
      }
    }
    item.className = "event";
    $("events").appendChild(item);
  }
  render(view);
  document.body.dataset.busy = "no";
}

function render(view) {
  drawLine($("line"), view.line, view.ends);
  const sides = view.partnership ? ` (partners: seats ${view.seat % 2} and ${(view.seat % 2) + 2})` : "";
  const turn = view.result ? "round over" : view.to_play === view.seat ? "your move" : `${seatName(view.to_play)} to play`;
  $("status").textContent = `Round ${view.round} | you are ${seatName(view.seat)}${sides} | ${turn}`;
  $("seats").replaceChildren(
    ...view.agents.map((name, s) => {
      const div = document.createElement("div");
      div.className = "seat" + (view.to_play === s ? " to-play" : "");
      div.dataset.seat = s;
      const voids = view.voids[s].length ? `; passed on ${view.voids[s].join(", ")}` : "";
      const score = view.scores[view.side_of[s]];
      div.textContent = `${seatName(s)} (${name}): ${view.hand_counts[s]} tiles${voids}; score ${score}`;
      return div;
    })
  );
  const hand = $("hand");
  hand.replaceChildren();
  for (const { tile, moves } of view.hand) {
    const box = document.createElement("div");
    box.className = "hand-tile" + (moves.length ? " legal" : "");
    const svg = tileSvg(tile);
    box.appendChild(svg);
    if (moves.length === 1) {
      svg.dataset.action = moves[0].action;
      svg.addEventListener("click", () => document.body.dataset.busy === "no" && play(moves[0].action));
    } else if (moves.length === 2) {
      for (const move of moves) {
        const b = document.createElement("button");
        b.textContent = move.end === "left" ? "◀ left end" : "right end ▶";
        b.dataset.action = move.action;
        b.addEventListener("click", () => play(move.action));
        box.appendChild(b);
      }
    }
    hand.appendChild(box);
  }
  $("pass").hidden = !view.can_pass;
  $("pass").dataset.action = view.pass_action;
  renderResult(view);
  setHandEnabled(true);
}

function renderResult(view) {
  const r = view.result;
  $("result").hidden = !r;
  if (!r) return;
  const who = r.winner === null ? "nobody" : seatName(r.winner);
  $("result-title").textContent = `Round over (${r.end}): ${who} scores ${r.award}`;
  $("result-why").textContent = r.why;
  $("result-hands").replaceChildren(
    ...r.hands.map((tiles, s) => {
      const row = document.createElement("div");
      row.className = "revealed";
      row.dataset.seat = s;
      row.dataset.pips = r.hand_pips[s];
      const label = document.createElement("span");
      label.textContent = `${seatName(s)} (${view.agents[s]}): ${r.hand_pips[s]} pips`;
      row.append(label, ...tiles.map(tileSvg));
      return row;
    })
  );
  let scores = `Scores: ${view.scores.join(" - ")}`;
  if (view.target) scores += ` (target ${view.target})`;
  if (view.over && view.episode === "match") {
    scores += view.match_winner === null ? ". The match is a draw." : `. Side ${view.match_winner} wins the match.`;
  }
  $("result-scores").textContent = scores;
  $("next-round").hidden = !view.paused;
}

// -- replay --------------------------------------------------------------------------------

function replayEntries(text) {
  const trimmed = text.trim();
  const entries = [];
  if (trimmed.startsWith("{") && !trimmed.includes("\n")) {
    const single = JSON.parse(trimmed);
    if (single.rounds && single.agents) return [{ label: "game", replay: single }];
  }
  for (const line of trimmed.split("\n")) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line);
    if (entry.rules && entry.agents && entry.rounds) entries.push({ label: "game", replay: entry });
    for (const record of entry.records || []) {
      if (record.replay) {
        entries.push({ label: `deal ${record.deal}, table ${record.table}, seats ${record.replay.agents.join(" / ")}`, replay: record.replay });
      }
    }
  }
  if (!entries.length) throw new Error("no replays in this file: run the arena with --record");
  return entries;
}

async function openReplay(entries) {
  replayData = { entries };
  $("replay-pick").replaceChildren(...entries.map((e, i) => new Option(e.label, i)));
  switchTab("replay");
  await loadEntry(0);
}

async function loadEntry(index) {
  showError(null);
  const data = await api("POST", "/api/replay", { replay: replayData.entries[index].replay });
  replayData.frames = data;
  $("replay-round").replaceChildren(...data.rounds.map((_, i) => new Option(`round ${i + 1}`, i)));
  $("viewer").hidden = false;
  frameIndex = 0;
  drawFrame();
}

function currentFrames() {
  return replayData.frames.rounds[Number($("replay-round").value || 0)];
}

function drawFrame() {
  const frames = currentFrames();
  frameIndex = Math.max(0, Math.min(frameIndex, frames.length - 1));
  const frame = frames[frameIndex];
  const agents = replayData.frames.agents;
  $("frame-label").textContent = `move ${frameIndex} of ${frames.length - 1}`;
  $("replay-move").textContent = frame.move
    ? `${seatName(frame.move.seat)} (${agents[frame.move.seat]}): ${frame.move.text}`
    : "the deal";
  drawLine($("replay-line"), frame.line, frame.ends);
  $("replay-hands").replaceChildren(
    ...frame.hands.map((tiles, s) => {
      const row = document.createElement("div");
      row.className = "revealed";
      const label = document.createElement("span");
      label.textContent = `${seatName(s)} (${agents[s]})${frame.current === s ? " to play" : ""}:`;
      row.append(label, ...tiles.map(tileSvg));
      return row;
    })
  );
  const r = frame.result;
  $("replay-result").textContent = r ? `Round over (${r.end}): ${r.why}; award ${r.award}` : "";
}

function switchTab(name) {
  for (const tab of ["play", "replay"]) {
    $(tab).hidden = tab !== name;
    $(`tab-${tab}`).classList.toggle("active", tab === name);
  }
}

// -- wiring --------------------------------------------------------------------------------

async function init() {
  const options = await api("GET", "/api/options");
  $("preset").replaceChildren(...Object.keys(options.presets).map((name) => new Option(name, name)));
  $("opponents").title = `agent specs, comma-separated: ${options.agents.join(", ")}, policy:PATH, ...`;
  $("setup").addEventListener("submit", newGame);
  $("pass").addEventListener("click", () => play(Number($("pass").dataset.action)));
  $("next-round").addEventListener("click", nextRound);
  $("replay-game").addEventListener("click", async () => openReplay([{ label: "this game", replay: await api("GET", `/api/games/${game.id}/replay`) }]));
  $("tab-play").addEventListener("click", () => switchTab("play"));
  $("tab-replay").addEventListener("click", () => switchTab("replay"));
  $("replay-file").addEventListener("change", async (event) => {
    try {
      await openReplay(replayEntries(await event.target.files[0].text()));
    } catch (error) {
      showError(error);
      switchTab("replay");
    }
  });
  $("replay-pick").addEventListener("change", () => loadEntry(Number($("replay-pick").value)));
  $("replay-round").addEventListener("change", () => { frameIndex = 0; drawFrame(); });
  $("first").addEventListener("click", () => { frameIndex = 0; drawFrame(); });
  $("prev").addEventListener("click", () => { frameIndex -= 1; drawFrame(); });
  $("next").addEventListener("click", () => { frameIndex += 1; drawFrame(); });
  $("last").addEventListener("click", () => { frameIndex = currentFrames().length - 1; drawFrame(); });
  document.body.dataset.ready = "yes";
}

init().catch(showError);
