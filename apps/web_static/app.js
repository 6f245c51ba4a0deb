// block_env web app: play against agents, ask the coach, replay recorded games. The server
// holds every game's state; this page only draws what it is sent and posts action ids.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DELAY = params.has("fast") ? 0 : 650; // ms each opponent's move stays on show
let game = null; // the latest view of the game in play
let picked = null; // the catalogue of the rules chosen in the form (GET /api/opponents)
let gameCatalogue = null; // the catalogue of the game in play (its agents' names)
let selected = null; // a hand tile that fits both ends, waiting for the end to be chosen
let lastTile = null; // "a|b" of the last tile placed, highlighted in the line
let options = null; // GET /api/options: the fallback agent and the move budget among them
let replayData = null; // {entries: [{label, replay}], frames: {...}}
let frameIndex = 0;

// -- drawing tiles ------------------------------------------------------------------------

// Pip spots on a 3x3 grid of a square half (x, y in 0..1).
const SPOT = { TL: [0.25, 0.25], TC: [0.5, 0.25], TR: [0.75, 0.25], ML: [0.25, 0.5], C: [0.5, 0.5], MR: [0.75, 0.5], BL: [0.25, 0.75], BC: [0.5, 0.75], BR: [0.75, 0.75] };
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

// One half (a square of side s at x, y) showing `value` pips (a number past nine).
function half(group, value, x, y, s) {
  if (value < PIPS.length) {
    for (const spot of PIPS[value]) {
      el("circle", { cx: x + SPOT[spot][0] * s, cy: y + SPOT[spot][1] * s, r: s * 0.09, fill: "#1b1b1b" }, group);
    }
  } else {
    const t = el("text", { x: x + s / 2, y: y + s * 0.68, "text-anchor": "middle", "font-size": s * 0.5, fill: "#1b1b1b" }, group);
    t.textContent = value;
  }
}

const tileKey = (t) => `${Math.min(t[0], t[1])}|${Math.max(t[0], t[1])}`;

// A tile at (x, y), halves of side s: across (first left, second right) or upright (first on top).
function drawTile(parent, first, second, x, y, s, upright) {
  const g = el("g", { class: "tile", "data-tile": `${first}|${second}` }, parent);
  const w = upright ? s : 2 * s, h = upright ? 2 * s : s;
  el("rect", { class: "face", x, y, width: w, height: h, rx: s * 0.16 }, g);
  if (upright) {
    el("line", { x1: x + s * 0.15, y1: y + s, x2: x + s * 0.85, y2: y + s, stroke: "#3b3b3b" }, g);
    half(g, first, x, y, s);
    half(g, second, x, y + s, s);
  } else {
    el("line", { x1: x + s, y1: y + s * 0.15, x2: x + s, y2: y + s * 0.85, stroke: "#3b3b3b" }, g);
    half(g, first, x, y, s);
    half(g, second, x + s, y, s);
  }
  return g;
}

// A tile on its own (hands, coach, revealed hands): upright by default.
function tileSvg(tile, upright = true, label = null) {
  const s = 24;
  const w = upright ? s + 2 : 2 * s + 2, h = upright ? 2 * s + 2 : s + 2;
  const svg = el("svg", { viewBox: `-1 -1 ${w} ${h}`, width: w, height: h, "aria-hidden": label ? "false" : "true" });
  if (label) {
    svg.setAttribute("role", "img");
    el("title", {}, svg).textContent = label;
  }
  drawTile(svg, tile[0], tile[1], 0, 0, s, upright);
  return svg;
}

// -- the line: it grows both ways from the opening tile and turns at the board's edge ---------

// Lay out the line (left to right, `opening` its first tile's index) on a board `width` px
// wide: the right arm runs right, then turns down and runs back; the left arm runs left, then
// turns up. Doubles stand crosswise. Returns the tiles' boxes, the turns and where the ends are.
function layoutLine(line, opening, width) {
  const s = Math.max(14, Math.min(30, Math.floor(width / 13))); // a half tile's side
  // The margin keeps room for an end marker beside a row's last tile, and for the turns.
  const gap = 2, rowH = 2 * s + 12, pad = Math.round(s * 1.4);
  const placed = [], turns = [];
  const size = (t) => (t[0] === t[1] ? s : 2 * s);
  const cx = width / 2;
  const o = line[opening];
  const ow = size(o);
  placed.push({ tile: o, x: cx - ow / 2, row: 0, first: o[0], second: o[1] });
  function arm(tiles, step, dirStart, xStart, leftArm) {
    let row = 0, dir = dirStart, x = xStart;
    const fits = (w) => (dir > 0 ? x + w <= width - pad : x - w >= pad);
    const place = (w) => {
      if (!fits(w)) {
        const edge = dir > 0 ? width - pad : pad;
        turns.push({ x: edge, row, next: row + step, out: dir });
        row += step;
        dir = -dir;
        x = dir > 0 ? pad : width - pad;
      }
      const left = dir > 0 ? x : x - w;
      x = dir > 0 ? x + w + gap : x - w - gap;
      return { x: left, row, dir };
    };
    for (const t of tiles) {
      const at = place(size(t));
      // The half touching the line so far faces it: the first half on the right arm, the
      // second half on the left arm.
      const inner = leftArm ? t[1] : t[0], outer = leftArm ? t[0] : t[1];
      const facingRight = at.dir > 0;
      placed.push({ tile: t, x: at.x, row: at.row, first: facingRight ? inner : outer, second: facingRight ? outer : inner });
    }
    // The end's marker where the next tile goes, or in the margin beside the row's last tile.
    const r = 0.65 * s;
    if (fits(2 * r)) return { x: dir > 0 ? x + r : x - r, row };
    return { x: dir > 0 ? Math.min(x + r, width - r - 1) : Math.max(x - r, r + 1), row };
  }
  const right = arm(line.slice(opening + 1), 1, 1, cx + ow / 2 + gap, false);
  const left = arm(line.slice(0, opening).reverse(), -1, -1, cx - ow / 2 - gap, true);
  const rows = [...placed.map((p) => p.row), left.row, right.row];
  return { s, rowH, placed, turns, left, right, minRow: Math.min(...rows), maxRow: Math.max(...rows) };
}

// Draw the line into `svg`; `choose(end)` makes the end markers clickable.
function drawLine(svg, line, opening, ends, options = {}) {
  svg.replaceChildren();
  const width = Math.max(280, Math.floor(svg.parentElement.clientWidth - 16));
  const title = el("title", {}, svg);
  if (!line.length) {
    svg.setAttribute("viewBox", `0 0 ${width} 60`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", 60);
    const t = el("text", { class: "empty", x: width / 2, y: 35, "text-anchor": "middle" }, svg);
    t.textContent = "The line is empty: the leader opens";
    title.textContent = "The line is empty";
    return;
  }
  const at = opening === null || opening === undefined ? Math.floor(line.length / 2) : opening;
  const L = layoutLine(line, at, width);
  const top = -L.minRow * L.rowH + L.rowH / 2;
  const y = (row) => top + row * L.rowH;
  for (const turn of L.turns) {
    const y1 = y(turn.row), y2 = y(turn.next), bulge = turn.out * L.s * 0.7;
    el("path", { class: "turn", d: `M ${turn.x} ${y1} C ${turn.x + bulge} ${y1}, ${turn.x + bulge} ${y2}, ${turn.x} ${y2}` }, svg);
  }
  for (const p of L.placed) {
    const double = p.tile[0] === p.tile[1];
    const g = drawTile(svg, p.first, p.second, p.x, double ? y(p.row) - L.s : y(p.row) - L.s / 2, L.s, double);
    if (options.last && tileKey(p.tile) === options.last) g.classList.add("last");
  }
  if (ends) {
    for (const [side, value, spot] of [["left", ends[0], L.left], ["right", ends[1], L.right]]) {
      const g = el("g", { class: "end", "data-end": side, "data-value": value }, svg);
      el("title", {}, g).textContent = `${side} end: ${value}`;
      el("circle", { cx: spot.x, cy: y(spot.row), r: L.s * 0.62 }, g);
      const t = el("text", { x: spot.x, y: y(spot.row) + L.s * 0.24, "text-anchor": "middle", "font-size": L.s * 0.7 }, g);
      t.textContent = value;
      if (options.choose && options.choose[side] !== undefined) {
        g.classList.add("choosable");
        g.addEventListener("click", () => options.choose[side]());
      }
    }
  }
  const height = (L.maxRow - L.minRow + 1) * L.rowH;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  title.textContent = `The line: ${line.length} tiles` + (ends ? `, open ends ${ends[0]} (left) and ${ends[1]} (right)` : "");
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
const seatName = (s) => `player_${s}`; // the replay viewer's names (as the records write them)

// -- names -----------------------------------------------------------------------------

function agentName(spec, catalogue) {
  const entry = catalogue && catalogue.opponents.find((o) => o.spec === spec);
  return entry ? entry.name : spec;
}

// What the table calls each seat: "You", "Partner: Network", "Greedy" (with its seat number
// when two seats play the same agent).
function seatLabels(view) {
  const names = view.agents.map((spec, s) => (s === view.seat ? "You" : agentName(spec, gameCatalogue)));
  return names.map((name, s) => {
    if (s === view.seat) return name;
    const partner = view.partnership && view.side_of[s] === view.side_of[view.seat];
    const twin = names.filter((n) => n === name).length > 1;
    return (partner ? "Partner: " : "") + name + (twin ? ` (seat ${s + 1})` : "");
  });
}

// -- the setup form ----------------------------------------------------------------------

async function loadCatalogue() {
  picked = await api("GET", `/api/opponents?rules=${encodeURIComponent($("preset").value)}`);
  const n = picked.num_players;
  const seat = Math.min(Number($("seat").value || 0), n - 1);
  $("seat").replaceChildren(...Array.from({ length: n }, (_, s) => new Option(`seat ${s + 1}`, s)));
  $("seat").value = seat;
  const f = picked.fields;
  const scoring = f.blocked_scoring === "subtract_own" ? "the others' pips minus your own" : "the others' pips";
  $("rules-summary").textContent =
    `${n} players${picked.partnership ? " in two partnerships" : ""}, double-${f.max_pip}, ${picked.hand_size} tiles each; ` +
    `a blocked round scores ${scoring}${f.club_doubling ? "; a domino with a double or on either end scores double" : ""}; a match goes to ${picked.target}.`;
  $("episode").options[1].textContent = `a match to ${picked.target}`;
  $("figures").textContent = `Strength: ${picked.figures}.`;
  buildPicks();
}

function buildPicks() {
  const n = picked.num_players, me = Number($("seat").value);
  const previous = [...document.querySelectorAll("#picks select")].map((s) => s.value);
  const picks = [];
  let k = 0;
  for (let s = 0; s < n; s++) {
    if (s === me) continue;
    const partner = picked.partnership && s % 2 === me % 2;
    const id = `opp-${s}`;
    const box = document.createElement("div");
    box.className = "pick";
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = `${partner ? "Partner" : "Opponent"}, seat ${s + 1}`;
    const select = document.createElement("select");
    select.id = id;
    select.dataset.seat = s;
    for (const o of picked.opponents) select.appendChild(new Option(`${o.name} (${o.level})`, o.spec));
    const keep = previous[k];
    select.value = keep && picked.opponents.some((o) => o.spec === keep) ? keep : picked.default;
    const strength = document.createElement("p");
    strength.className = "strength";
    strength.id = `${id}-strength`;
    select.setAttribute("aria-describedby", strength.id);
    const describe = () => {
      const o = picked.opponents.find((x) => x.spec === select.value);
      strength.replaceChildren(`${o.strength}. ${o.description[0].toUpperCase()}${o.description.slice(1)}.`);
      for (const m of o.measured) {
        const small = document.createElement("small");
        small.textContent = `${m.figure} points a round against ${m.against_name}, ${m.deals.toLocaleString("en")} deals (${m.where})`;
        strength.appendChild(small);
      }
    };
    select.addEventListener("change", describe);
    describe();
    box.append(label, select, strength);
    picks.push(box);
    k++;
  }
  $("picks").replaceChildren(...picks);
}

function chosenOpponents() {
  // A spec's own options are comma-separated too (search:worlds=64,playout=random): a piece
  // that is an option (key=value, no agent name before it) belongs to the spec before it.
  const raw = [];
  for (const piece of $("opponents").value.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (raw.length && /^\w+\s*=/.test(piece)) raw[raw.length - 1] += `,${piece}`;
    else raw.push(piece);
  }
  if (raw.length) return raw;
  return [...document.querySelectorAll("#picks select")].map((s) => s.value); // seat order
}

// -- play ----------------------------------------------------------------------------------

async function newGame(event) {
  if (event) event.preventDefault();
  showError(null);
  const body = {
    preset: $("preset").value,
    episode: $("episode").value,
    opponents: chosenOpponents(),
    seat: Number($("seat").value || 0),
  };
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  try {
    document.body.dataset.busy = "yes";
    const view = await api("POST", "/api/games", body);
    gameCatalogue = picked;
    setGameInUrl(view.id);
    $("events").replaceChildren();
    $("setup").hidden = true;
    $("table").hidden = false;
    game = null;
    await show(view);
  } catch (error) {
    showError(error);
    document.body.dataset.busy = "no";
  }
}

// The address names the game in play (?game=ID), so that reloading the page, after a server
// restart too, shows the same game.
function setGameInUrl(id) {
  const url = new URL(location.href);
  if (id) url.searchParams.set("game", id);
  else url.searchParams.delete("game");
  history.replaceState(null, "", url);
}

async function openGame(id) {
  document.body.dataset.busy = "yes";
  const view = await api("GET", `/api/games/${encodeURIComponent(id)}`);
  gameCatalogue = await api("GET", `/api/opponents?rules=${encodeURIComponent(view.preset)}`);
  $("events").replaceChildren();
  $("setup").hidden = true;
  $("table").hidden = false;
  game = null;
  lastTile = null;
  await show(view);
}

function backToSetup() {
  setGameInUrl(null);
  $("table").hidden = true;
  $("setup").hidden = false;
  $("new-game").focus();
}

async function play(action) {
  showError(null);
  setHandEnabled(false);
  selected = null;
  try {
    await show(await api("POST", `/api/games/${game.id}/move`, { action }));
  } catch (error) {
    showError(error);
    render(game);
  }
}

async function nextRound() {
  showError(null);
  $("events").replaceChildren();
  lastTile = null;
  try {
    document.body.dataset.busy = "yes";
    await show(await api("POST", `/api/games/${game.id}/next`));
  } catch (error) {
    showError(error);
    document.body.dataset.busy = "no";
  }
}

// After an opponent failed: let it try its move again, or seat the fallback agent in its place.
async function resume(fallback) {
  showError(null);
  const stalled = game.stalled;
  setHandEnabled(false);
  try {
    const view = await api("POST", `/api/games/${game.id}/resume`, { fallback });
    if (fallback) {
      const names = seatLabels(game);
      logEvent(`${names[stalled.seat]} (seat ${stalled.seat + 1}) replaced by ${agentName(options.fallback, gameCatalogue)}`);
    }
    await show(view);
  } catch (error) {
    showError(error);
    render(game);
  }
}

// What went wrong, in plain words, from the server's message (shown beneath as it came).
function stalledReason(error) {
  let m;
  if ((m = error.match(/took more than ([\d.]+) s/))) return `it took more than ${m[1]} seconds, its time limit, and was stopped.`;
  if (/which is not legal here$/.test(error)) return "it chose a move that is not legal here.";
  if (/^the server stopped/.test(error)) return "the server stopped while it was thinking.";
  if (/ failed: /.test(error)) return "its program raised an error.";
  return "it failed.";
}

function renderStalled(view, names) {
  const s = view.stalled;
  $("stalled").hidden = !s;
  if (!s) return;
  const fallback = agentName(options.fallback, gameCatalogue);
  $("stalled-title").textContent = `${names[s.seat]} (seat ${s.seat + 1}) could not move`;
  $("stalled-why").textContent = `${names[s.seat]} at seat ${s.seat + 1} did not make its move: ${stalledReason(s.error)} The moves made so far stand. Let it try again, or replace it with ${fallback} for the rest of the game.`;
  $("stalled-detail").textContent = `The server said: ${s.error}`;
  $("fallback").textContent = `Replace with ${fallback}`;
}

function setHandEnabled(on) {
  document.body.dataset.busy = on ? "no" : "yes";
  for (const b of document.querySelectorAll("#hand button, #pass, #ends-choice button, #hint, #retry, #fallback")) b.disabled = !on;
}

function logEvent(text) {
  const item = document.createElement("li");
  item.className = "event";
  item.textContent = text;
  $("events").appendChild(item);
}

function moveText(event, names) {
  if (event.text === "pass") return `${names[event.seat]} passed: nothing fits`;
  return `${names[event.seat]} played ${event.text.replace(/^\[(\d+)\|(\d+)\] on (\w+)/, "[$1|$2] on the $3 end")}`;
}

// Show the moves that came back one by one (each opponent's for a moment), then the position.
async function show(view) {
  const names = seatLabels(view);
  document.body.dataset.busy = "yes";
  clearCoach();
  const counts = view.hand_counts.slice();
  for (const e of view.events) if (!e.round_over && e.text !== "pass") counts[e.seat] += 1;
  for (const event of view.events) {
    if (event.round_over) {
      logEvent(`Round over: ${explainResult(event.round_over, names, view).title}`);
      continue;
    }
    logEvent(moveText(event, names));
    if (event.text !== "pass") {
      counts[event.seat] -= 1;
      lastTile = tileKey(event.text.match(/\d+/g).map(Number));
    }
    if (event.seat !== view.seat) {
      drawLine($("line"), event.line, event.opening, event.ends, { last: lastTile });
      renderSeats(view, names, counts, event.seat, event.text === "pass" ? "passes" : null);
      setStatus(moveText(event, names), false);
      await sleep(DELAY);
    }
  }
  game = view;
  render(view);
}

function setStatus(text, mine) {
  $("status").textContent = text;
  $("status").classList.toggle("mine", mine);
}

function renderSeats(view, names, counts, acting, bubble) {
  $("seats").replaceChildren(
    ...view.agents.map((spec, s) => {
      const div = document.createElement("div");
      div.className = "seat" + (acting === s ? " to-play" : "");
      div.dataset.seat = s;
      const who = document.createElement("div");
      who.className = "who";
      who.textContent = names[s];
      const what = document.createElement("div");
      what.className = "what";
      const entry = gameCatalogue && gameCatalogue.opponents.find((o) => o.spec === spec);
      what.textContent = s === view.seat ? `seat ${s + 1}` : `seat ${s + 1}` + (entry ? ` · ${entry.level}` : "");
      const backs = document.createElement("div");
      backs.className = "backs";
      backs.setAttribute("aria-hidden", "true");
      for (let i = 0; i < counts[s]; i++) backs.appendChild(Object.assign(document.createElement("span"), { className: "back" }));
      const count = document.createElement("div");
      count.className = "count";
      count.dataset.count = counts[s];
      count.textContent = `${counts[s]} tile${counts[s] === 1 ? "" : "s"}` + (view.partnership ? "" : ` · ${view.scores[view.side_of[s]]} points`);
      div.append(who, what, backs, count);
      if (view.voids[s].length) {
        const passed = document.createElement("div");
        passed.className = "passed";
        passed.textContent = `passed on ${view.voids[s].join(", ")}`;
        div.appendChild(passed);
      }
      if (acting === s && bubble) {
        const b = document.createElement("span");
        b.className = "bubble";
        b.textContent = bubble;
        div.appendChild(b);
      }
      return div;
    })
  );
}

function render(view) {
  const names = seatLabels(view);
  const mine = !view.result && !view.stalled && view.to_play === view.seat;
  let choose = null;
  if (selected) {
    choose = {};
    for (const m of selected.moves) choose[m.end] = () => play(m.action);
  }
  drawLine($("line"), view.line, view.opening, view.ends, { last: lastTile, choose });
  renderScoreboard(view, names);
  if (view.result) setStatus(explainResult(view.result, names, view).title, false);
  else if (view.stalled) setStatus(`${names[view.stalled.seat]} could not move: the game waits for you`, false);
  else if (mine) setStatus(view.can_pass ? "Your move: nothing fits, you must pass" : "Your move", true);
  else setStatus(`${names[view.to_play]} to play`, false);
  renderSeats(view, names, view.hand_counts, view.result ? null : view.to_play, null);
  renderHand(view, mine);
  renderResult(view, names);
  renderStalled(view, names);
  $("hint").hidden = !mine;
  setHandEnabled(true);
  for (const b of document.querySelectorAll("#hand button")) b.disabled = b.dataset.legal !== "yes" || !mine;
}

function renderScoreboard(view, names) {
  const sides = [...new Set(view.side_of)];
  const sideName = (side) => {
    if (view.partnership) return side === view.side_of[view.seat] ? "Your side" : "Their side";
    return names[view.side_of.indexOf(side)];
  };
  const score = sides.map((side) => `${sideName(side)} ${view.scores[side]}`).join(" · ");
  const kind = view.target ? `Match to ${view.target} · round ${view.round}` : "One round";
  $("scoreboard").textContent = `${kind} · ${score}`;
}

function renderHand(view, mine) {
  const hand = $("hand");
  const buttons = view.hand.map(({ tile, moves }) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "hand-tile" + (moves.length && mine ? " legal" : "");
    b.dataset.tile = `${tile[0]}|${tile[1]}`;
    b.dataset.legal = moves.length ? "yes" : "no";
    const fits = moves.length === 2 ? "fits both ends" : moves.length === 1 ? `fits the ${moves[0].end} end` : "does not fit";
    b.setAttribute("aria-label", `[${tile[0]}|${tile[1]}], ${fits}`);
    if (!moves.length || !mine) b.setAttribute("aria-disabled", "true");
    if (moves.length === 1) b.dataset.action = moves[0].action;
    if (moves.length === 2) b.dataset.actions = moves.map((m) => m.action).join(",");
    if (selected && selected.key === b.dataset.tile) b.classList.add("selected");
    b.appendChild(tileSvg(tile));
    b.addEventListener("click", () => {
      if (!moves.length || !mine || document.body.dataset.busy !== "no") return;
      if (moves.length === 1) play(moves[0].action);
      else chooseEnd(tile, moves);
    });
    b.addEventListener("keydown", (event) => {
      const all = [...hand.querySelectorAll("button:not(:disabled)")];
      const i = all.indexOf(b);
      if (event.key === "ArrowRight" && i < all.length - 1) all[i + 1].focus();
      else if (event.key === "ArrowLeft" && i > 0) all[i - 1].focus();
      else return;
      event.preventDefault();
    });
    return b;
  });
  const hadFocus = hand.contains(document.activeElement) || document.activeElement === $("pass");
  hand.replaceChildren(...buttons);
  $("pass").hidden = !(mine && view.can_pass);
  if (mine && (hadFocus || document.activeElement === document.body)) {
    // The tile that had focus is gone with the old hand: keyboard play goes on from a tile
    // that fits, or from Pass when none does.
    const next = hand.querySelector("button.legal") ?? ($("pass").hidden ? null : $("pass"));
    next?.focus({ preventScroll: true });
  }
  $("pass").dataset.action = view.pass_action;
  if (view.ends) $("pass").textContent = `Pass: nothing fits ${view.ends[0]} or ${view.ends[1]}`;
  const choice = selected && mine;
  $("ends-choice").hidden = !choice;
  if (choice) {
    const [a, b] = selected.tile;
    $("ends-label").textContent = `Place [${a}|${b}] on:`;
    for (const m of selected.moves) {
      const button = $(m.end === "left" ? "end-left" : "end-right");
      button.dataset.action = m.action;
      button.textContent = m.end === "left" ? `◀ the left end (${view.ends[0]})` : `the right end (${view.ends[1]}) ▶`;
    }
  }
}

function chooseEnd(tile, moves) {
  selected = { tile, moves, key: `${tile[0]}|${tile[1]}` };
  render(game);
  $("end-left").focus();
}

// -- the end of a round ---------------------------------------------------------------------

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

// The result in words: who won, and how the award was counted (docs/rules.md, scoring).
function explainResult(r, names, view) {
  const winnerName = r.winner === null ? null : names[r.winner];
  const sideLabel = (side) => (view.partnership ? (side === view.side_of[view.seat] ? "your side" : "their side") : names[view.side_of.indexOf(side)]);
  const others = r.side_pips.filter((_, side) => side !== r.winning_side);
  const fields = gameCatalogue ? gameCatalogue.fields : null;
  if (r.end === "domino") {
    const who = r.winner === view.seat ? "You went out" : `${winnerName} went out`;
    const doubled = r.doubled ? ", doubled (out with a double or on either end)" : "";
    return {
      title: `${who} (domino): ${r.award} points to ${sideLabel(r.winning_side)}`,
      how: `Domino: the pips left in the other side${others.length > 1 ? "s'" : "'s"} hands, ${others.join(" + ")} = ${sum(others)}${doubled}.`,
    };
  }
  if (r.winning_side === null) {
    return { title: "Blocked, and the lowest pip count is tied: nobody scores", how: "Blocked: nobody could move, and the lowest pip count is shared." };
  }
  const own = r.side_pips[r.winning_side];
  const subtract = fields ? fields.blocked_scoring === "subtract_own" : sum(others) - own === r.award;
  const sums = subtract ? `${sum(others)} − ${own} (its own) = ${r.award}` : `${others.join(" + ")} = ${r.award}`;
  return {
    title: `Blocked: ${r.award} points to ${sideLabel(r.winning_side)}`,
    how: `Blocked: nobody could move, so the fewest pips wins (${sideLabel(r.winning_side)}: ${own}); it scores the others' pips${subtract ? " minus its own" : ""}: ${sums}.`,
  };
}

function renderResult(view, names) {
  const r = view.result;
  $("result").hidden = !r;
  $("hand-box").hidden = !!r;
  if (!r) return;
  const text = explainResult(r, names, view);
  $("result-title").textContent = text.title;
  $("result-why").textContent = text.how;
  $("result-hands").replaceChildren(
    ...r.hands.map((tiles, s) => {
      const row = document.createElement("div");
      row.className = "revealed";
      row.dataset.seat = s;
      row.dataset.pips = r.hand_pips[s];
      const label = document.createElement("span");
      label.className = "name";
      label.textContent = `${names[s]}: ${r.hand_pips[s]} pips`;
      row.append(label, ...tiles.map((t) => tileSvg(t, true, `[${t[0]}|${t[1]}]`)));
      return row;
    })
  );
  const sides = [...new Set(view.side_of)];
  const sideName = (side) => (view.partnership ? (side === view.side_of[view.seat] ? "your side" : "their side") : names[view.side_of.indexOf(side)]);
  let scores = (view.target ? "Match score: " : "Score: ") + sides.map((side) => `${sideName(side)} ${view.scores[side]}`).join(", ");
  if (view.target) scores += ` (first to ${view.target})`;
  if (view.over && view.episode === "match") {
    scores += view.match_winner === null ? ". The match is a draw." : `. ${sideName(view.match_winner)} ${view.match_winner === view.side_of[view.seat] ? "win" : "wins"} the match.`;
  }
  $("result-scores").textContent = scores;
  $("next-round").hidden = !view.paused;
  $("again").classList.toggle("primary", !view.paused);
}

// -- the coach --------------------------------------------------------------------------------

function clearCoach() {
  $("coach").hidden = true;
  $("coach-body").replaceChildren();
  for (const b of document.querySelectorAll("#hand .badge")) b.remove();
}

const signed = (x) => (x > 0 ? `+${x.toFixed(1)}` : x.toFixed(1).replace("-", "−"));
const percent = (x) => `${Math.round(100 * x)}%`;

function coachNote(advice) {
  const network = advice.network ? ` The network column: the weight the shipped agent's network (${advice.network}, without any endgame search) puts on each move; the network alone plays the heaviest (an agent with an endgame search hands its last tiles' moves to it).` : "";
  const others = game.side_of && new Set(game.side_of).size > 2
    ? "+the round's points when your side wins it, −those points shared among the other sides when another wins"
    : "yours minus the other side's";
  return `Search tried every move on the same ${advice.worlds} guesses of the hidden hands and played each round out: points are your side's net points for the round (${others}), ± one standard error.${network}`;
}

async function hint() {
  showError(null);
  try {
    $("hint").disabled = true;
    const advice = await api("GET", `/api/games/${game.id}/hint`);
    const position = advice.positions[0];
    $("coach-title").textContent = "Coach: your moves";
    $("coach-note").textContent = coachNote(advice);
    $("coach-body").replaceChildren(adviceTable(position, advice));
    $("coach").hidden = false;
    for (const move of position.moves) {
      if (!move.tile) continue;
      const button = document.querySelector(`#hand button[data-tile="${move.tile[0]}|${move.tile[1]}"]`);
      if (!button || button.querySelector(".badge")) continue;
      const best = Math.max(...position.moves.filter((m) => m.tile && tileKey(m.tile) === tileKey(move.tile)).map((m) => m.points));
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = signed(best);
      button.appendChild(badge);
      button.setAttribute("aria-label", `${button.getAttribute("aria-label")}, coach ${badge.textContent}`);
    }
  } catch (error) {
    showError(error);
  } finally {
    $("hint").disabled = false;
  }
}

function moveLabel(move) {
  if (!move.tile) return "pass";
  return move.end ? `on the ${move.end} end` : "to open";
}

function adviceTable(position, advice) {
  const table = document.createElement("table");
  table.className = "advice";
  const head = table.createTHead().insertRow();
  for (const h of ["move", "", "points", "wins", ...(advice.network ? ["network"] : [])]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    head.appendChild(th);
  }
  const body = table.createTBody();
  const rows = [...position.moves].sort((a, b) => b.points - a.points);
  for (const move of rows) {
    const tr = body.insertRow();
    if (move.action === position.best) tr.className = "best";
    const tileCell = tr.insertCell();
    if (move.tile) {
      const svg = tileSvg(move.tile, false, `[${move.tile[0]}|${move.tile[1]}]`);
      svg.classList.add("mini");
      tileCell.appendChild(svg);
    }
    const what = tr.insertCell();
    what.textContent = moveLabel(move);
    if (move.action === position.best) what.appendChild(Object.assign(document.createElement("span"), { className: "pick-tag", textContent: "search" }));
    if (move.action === position.network_best) what.appendChild(Object.assign(document.createElement("span"), { className: "pick-tag", textContent: "network" }));
    const points = tr.insertCell();
    points.className = "num";
    points.textContent = `${signed(move.points)} ± ${move.error.toFixed(1)}`;
    const wins = tr.insertCell();
    wins.className = "num";
    wins.textContent = percent(move.win);
    if (advice.network) {
      const net = tr.insertCell();
      net.className = "num";
      net.textContent = percent(move.network);
    }
  }
  return table;
}

async function review() {
  showError(null);
  try {
    $("review").disabled = true;
    const advice = await api("GET", `/api/games/${game.id}/review`);
    $("coach-title").textContent = "Coach: your round";
    $("coach-note").textContent = advice.positions.length ? coachNote(advice) : "You had no choice to make this round: every move was forced.";
    const items = advice.positions.map((p, i) => {
      const item = document.createElement("div");
      item.className = "review-item";
      const played = p.moves.find((m) => m.action === p.played);
      const best = p.moves.find((m) => m.action === p.best);
      const head = document.createElement("p");
      const ends = p.ends ? `ends ${p.ends[0]} and ${p.ends[1]}` : "the opening";
      head.textContent = `Choice ${i + 1} (${ends}): you played ${played.tile ? `[${played.tile.join("|")}] ${moveLabel(played)}` : "pass"}. `;
      const verdict = document.createElement("span");
      // A difference within two standard errors of the deals' noise is no mistake.
      if (p.played === p.best || p.cost <= 2 * p.cost_error) {
        verdict.className = "verdict good";
        verdict.textContent = p.played === p.best ? "Search's pick too." : "As good as search's pick, within the guesses' noise.";
      } else {
        verdict.className = "verdict costly";
        verdict.textContent = `Search preferred [${best.tile.join("|")}] ${moveLabel(best)}: about ${p.cost.toFixed(1)} points better (± ${p.cost_error.toFixed(1)}).`;
      }
      head.appendChild(verdict);
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = "every move";
      details.append(summary, adviceTable(p, advice));
      item.append(head, details);
      return item;
    });
    $("coach-body").replaceChildren(...items);
    $("coach").hidden = false;
    $("coach").scrollIntoView({ block: "nearest" });
  } catch (error) {
    showError(error);
  } finally {
    $("review").disabled = false;
  }
}

// -- replay --------------------------------------------------------------------------------

function replayEntries(text) {
  const trimmed = text.trim();
  const entries = [];
  if (trimmed.startsWith("{")) {
    let single = null;
    try {
      single = JSON.parse(trimmed); // one replay, on one line or pretty-printed
    } catch {
      // not one JSON value: a file of one JSON record a line (the arena's records.jsonl)
    }
    if (single && single.rounds && single.agents) return [{ label: "game", replay: single }];
  }
  const lines = trimmed.split("\n");
  for (const [number, line] of lines.entries()) {
    if (!line.trim()) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      if (number === lines.length - 1 && entries.length) break; // a run stopped mid-line, as --resume reads it
      throw new Error(`line ${number + 1} is not JSON: open one replay, or an arena's records.jsonl`);
    }
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
  const last = frame.move && frame.move.text !== "pass" ? tileKey(frame.move.text.match(/\d+/g).map(Number)) : null;
  drawLine($("replay-line"), frame.line, frame.opening, frame.ends, { last });
  $("replay-hands").replaceChildren(
    ...frame.hands.map((tiles, s) => {
      const row = document.createElement("div");
      row.className = "revealed";
      const label = document.createElement("span");
      label.className = "name";
      label.textContent = `${seatName(s)} (${agents[s]})${frame.current === s ? " to play" : ""}:`;
      row.append(label, ...tiles.map((t) => tileSvg(t, true, `[${t[0]}|${t[1]}]`)));
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
    $(`tab-${tab}`).setAttribute("aria-pressed", String(tab === name));
  }
}

// -- wiring --------------------------------------------------------------------------------

async function init() {
  options = await api("GET", "/api/options");
  $("preset").replaceChildren(...Object.keys(options.presets).map((name) => new Option(name.replaceAll("_", " "), name)));
  $("preset").addEventListener("change", () => loadCatalogue().catch(showError));
  $("seat").addEventListener("change", buildPicks);
  await loadCatalogue();
  $("setup").addEventListener("submit", newGame);
  $("pass").addEventListener("click", () => play(Number($("pass").dataset.action)));
  for (const id of ["end-left", "end-right"]) $(id).addEventListener("click", () => play(Number($(id).dataset.action)));
  $("hint").addEventListener("click", hint);
  $("review").addEventListener("click", review);
  $("next-round").addEventListener("click", nextRound);
  $("retry").addEventListener("click", () => resume(false));
  $("fallback").addEventListener("click", () => resume(true));
  $("again").addEventListener("click", backToSetup);
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
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && selected) {
      selected = null;
      render(game);
    }
  });
  let resized = null;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => {
      if (game && !$("table").hidden) drawLine($("line"), game.line, game.opening, game.ends, { last: lastTile });
      if (replayData && replayData.frames && !$("viewer").hidden) drawFrame();
    }, 100);
  });
  if (params.has("game")) {
    try {
      await openGame(params.get("game"));
    } catch (error) {
      setGameInUrl(null);
      showError(error);
      document.body.dataset.busy = "no";
    }
  }
  document.body.dataset.ready = "yes";
}

init().catch(showError);
