"use strict";
// The service's cookie authenticates this page; a POST also echoes the XSRF cookie in a header, which a page of
// another origin cannot read (lander/service/guard.py).
function xsrf() {
  const name = document.querySelector("meta[name=xsrf-cookie]").content + "=";
  const found = document.cookie.split("; ").find(c => c.startsWith(name));
  return found ? {"X-XSRF-Token": decodeURIComponent(found.slice(name.length))} : {};
}

function el(tag, text, cls) {  // text goes in as text, never as markup
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function num(value, digits = 4) {  // significant digits written out, as lander.numbers.significant: 140, not 1.4e+2
  if (value === null || value === undefined) return "";
  const rounded = Number(Number(value).toPrecision(digits));
  const tiny = rounded !== 0 && Math.abs(rounded) < 1e-4;
  return !Number.isFinite(rounded) || tiny || Math.abs(rounded) >= 1e9 ? rounded.toPrecision(digits) : String(rounded);
}
function link(href, text) { const a = el("a", text); a.href = href; a.target = "_blank"; a.rel = "noopener"; return a; }

async function api(method, url, body) {
  const post = method !== "GET";
  const response = await fetch(url, {method, credentials: "same-origin",
                                     headers: post ? {...xsrf(), "Content-Type": "application/json"} : {},
                                     body: post ? JSON.stringify(body || {}) : undefined});
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}
function say(text, ok) { const m = document.getElementById("message"); m.textContent = text; m.className = ok ? "ok" : "error"; }

async function action(method, url, body, done) {
  try { const data = await api(method, url, body); say(done(data), true); refresh(); }
  catch (error) { say(error.message, false); }
}

const selected = new Set();  // runs picked for a comparison; kept across refreshes

function runRow(run) {
  const row = el("tr"); row.dataset.id = run.id;
  const pick = el("input"); pick.type = "checkbox"; pick.className = "pick"; pick.checked = selected.has(run.id);
  pick.onchange = () => { if (pick.checked) selected.add(run.id); else selected.delete(run.id); showSelection(); };
  const cell = el("td"); cell.append(pick); row.append(cell);
  row.append(el("td", run.path));
  const status = el("td"); status.append(el("span", run.status, "status " + run.status));
  if (run.status === "unreadable") status.append(el("div", run.error, "muted"));  // which file, and why
  if (run.stopped_early) status.append(el("div", "stopped early: " + run.stopped_early, "muted stopped-early"));
  row.append(status);
  row.append(el("td", [run.algo, run.env, run.seed, run.gamma].filter(v => v !== null && v !== undefined).join(" / ")));
  const progress = el("td"), bar = el("div", undefined, "bar"), fill = el("div");
  const end = run.planned_timesteps || run.total_timesteps;  // the budget to whole rollouts, once training started
  const fraction = end ? Math.min(1, run.timesteps / end) : 0;
  fill.style.width = (100 * fraction).toFixed(1) + "%"; bar.append(fill);
  progress.append(bar, el("span", " " + (run.timesteps || 0).toLocaleString() + " / " + (end || 0).toLocaleString(), "muted"));
  if (run.planned_timesteps && run.planned_timesteps !== run.total_timesteps) {
    progress.title = "total_timesteps=" + run.total_timesteps + " becomes " + run.planned_timesteps + " steps: whole rollouts (budget_rounding)";
  }
  row.append(progress);
  row.append(el("td", run.latest_eval ? num(run.latest_eval.mean) + " at " + run.latest_eval.timesteps.toLocaleString() : ""));
  row.append(el("td", run.final_eval_mean !== null && run.final_eval_mean !== undefined ? num(run.final_eval_mean) + " ± " + num(run.final_eval_sem, 2) : ""));
  const files = el("td");
  for (const name of run.files) {
    if (["report.html", "video.mp4", "run.log"].includes(name)) { files.append(link(`/api/runs/${encodeURIComponent(run.id)}/files/${name}`, name), " "); }
  }
  row.append(files);
  const buttons = el("td");
  // seeds trained side by side (seeds_per_process) share one process: its signals reach all of them, so the
  // buttons say so and ask for the group (the service refuses a signal to one seed of a group otherwise)
  const seeds = (run.process_group || []).length, signal = seeds > 1 ? {group: true} : {};
  const group = seeds > 1 ? ` all ${seeds} seeds` : "";
  if (seeds > 1) status.append(el("div", `side by side with ${seeds - 1} other seed(s) in one process`, "muted"));
  if (run.status === "running") {
    const pause = el("button", "Pause" + group); pause.className = "pause";
    pause.onclick = () => action("POST", `/api/runs/${encodeURIComponent(run.id)}/pause`, signal, d => "pausing " + d.group.join(", "));
    buttons.append(pause);
  }
  if (run.status === "paused") {
    const go = el("button", "Continue" + group); go.className = "continue";
    go.onclick = () => action("POST", `/api/runs/${encodeURIComponent(run.id)}/continue`, signal, d => "continuing " + d.group.join(", "));
    buttons.append(go);
  }
  if (run.status === "running" || run.status === "paused") {
    const stop = el("button", "Stop" + group); stop.className = "stop";
    stop.onclick = () => action("POST", `/api/runs/${encodeURIComponent(run.id)}/stop`, signal, d => "stopping " + d.group.join(", "));
    buttons.append(stop);
  }
  if (["interrupted", "failed", "stopped"].includes(run.status) && !run.active) {
    const resume = el("button", "Resume"); resume.className = "resume";
    resume.onclick = () => action("POST", `/api/runs/${encodeURIComponent(run.id)}/resume`, null, d => "resuming " + d.path);
    buttons.append(resume);
  }
  // python -m lander.reproduce: trains the run again beside it and compares; its latest verdict shows here
  const last = (run.reproductions || []).slice(-1)[0];
  if (last) {
    const verdict = el("div", "reproduction: " + last.verdict, "verdict " + last.verdict);
    verdict.title = last.lines.join("\n") || last.path;  // the first divergence, on hover
    status.append(verdict);
  }
  const trained = run.status === "completed" || (run.status === "interrupted" && run.timesteps > 0);
  if (trained && !run.active && !(last && last.verdict === "running")) {
    const again = el("button", "Reproduce"); again.className = "reproduce";
    again.title = "train this run again from its saved config beside it and compare metrics, evaluation and weights";
    again.onclick = () => action("POST", `/api/runs/${encodeURIComponent(run.id)}/reproduce`, {}, d => "reproducing " + d.path);
    buttons.append(again);
  }
  row.append(buttons);
  return row;
}

function showSelection() {
  field("compare").disabled = selected.size < 2;
  field("compare").textContent = `Compare selected (${selected.size})`;
}

function comparisonRow(comparison) {
  const row = el("tr"); row.dataset.id = comparison.id;
  row.append(el("td", comparison.path), el("td", comparison.runs.join(", ")));
  const report = el("td");
  if (comparison.compared) report.append(link(`/api/comparisons/${encodeURIComponent(comparison.id)}/report`, "report.html"));
  else if (comparison.state === "failed") report.append(el("span", `failed: ${comparison.error}`, "error"));
  else report.append(el("span", "comparing", "muted"));
  report.append(leftOut(comparison.left_out, comparison.runs.length));
  row.append(report);
  return row;
}

function leftOut(records, runs) {  // the runs a comparison did not compare: said beside its report, why on hover
  if (!records || !records.length) return "";
  const note = el("span", ` ${records.length} of ${runs} runs not compared`, "warning left-out");
  note.title = records.map(r => `${r.run}: ${r.why} (${r.detail})`).join("\n");
  return note;
}

function sweepRow(sweep) {
  const row = el("tr"); row.dataset.id = sweep.id;
  row.append(el("td", sweep.path), el("td", sweep.jobs));
  const report = el("td");
  if (sweep.compared) report.append(link(`/api/sweeps/${encodeURIComponent(sweep.id)}/report`, "report.html"));
  else if (sweep.state === "ended") report.append(el("span", `ended without a comparison: ${sweep.error}`, "warning"));
  else report.append(el("span", sweep.state === "sweeping" ? "sweeping" : "not yet", "muted"));
  report.append(leftOut(sweep.left_out, sweep.jobs));
  row.append(report);
  return row;
}

// A row is drawn again only when what the service says of its item has changed, and left where it is otherwise: a
// settled run's buttons stay the same nodes while other runs of the table move, so a click on them is not lost to a
// redraw (a ticked box keeps its tick either way: `selected`). Rows are keyed by their item's id.
const drawn = {};  // table id -> Map(item id -> {seen: the item's JSON, node: its row})
function show(id, items, row) {
  const before = drawn[id] || new Map(), now = new Map();
  const nodes = items.map(item => {
    const seen = JSON.stringify(item), kept = before.get(item.id);
    const node = kept && kept.seen === seen ? kept.node : row(item);
    now.set(item.id, {seen, node});
    return node;
  });
  drawn[id] = now;
  const table = document.getElementById(id);
  nodes.forEach((node, i) => { if (table.children[i] !== node) table.insertBefore(node, table.children[i] || null); });
  while (table.children.length > nodes.length) table.lastElementChild.remove();
}

async function refresh() {
  try {
    const [runs, sweeps, comparisons] = await Promise.all(["/api/runs", "/api/sweeps", "/api/comparisons"].map(u => api("GET", u)));
    for (const id of [...selected]) if (!runs.some(r => r.id === id)) selected.delete(id);  // gone from disk
    show("runs", runs, runRow);
    show("sweeps", sweeps, sweepRow);
    show("comparisons", comparisons, comparisonRow);
    showSelection();
  } catch (error) { say("cannot reach the service: " + error.message, false); }
}

// The launch form: choices from /api/algos, /api/envs, /api/presets and /api/config, checked here before a
// request is sent (the service checks everything again: lander/service/overrides.py).
const catalog = {algos: [], envs: [], presets: [], keys: []};
function field(id) { return document.getElementById(id); }
function option(value, text) { const o = el("option", text); o.value = value; return o; }

function fillEnvs() {
  const algo = catalog.algos.find(a => a.name === field("algo").value);
  const before = field("env").value;
  const envs = catalog.envs.filter(e => !algo || algo.envs.includes(e.name));
  field("env").replaceChildren(...envs.map(e => option(e.name, `${e.name} (${e.id})` + (e.mine ? " (yours)" : ""))));
  field("env").value = envs.some(e => e.name === before) ? before : (envs.some(e => e.name === "lunar_lander") ? "lunar_lander" : (envs[0] || {}).name);
}

function fillPreset() {
  const preset = catalog.presets.find(p => p.override === field("preset").value);
  field("algo").disabled = field("env").disabled = Boolean(preset && (preset.algo || preset.env));
  field("trials").disabled = !(preset && preset.trials);
  field("trials").placeholder = preset && preset.trials ? String(preset.trials) : "";
  if (field("trials").disabled) field("trials").value = "";
  field("preset-info").textContent = preset ? preset.description + (Object.keys(preset.sweep).length ? "  Sweeps: " + Object.entries(preset.sweep).map(([k, v]) => `${k}=${v}`).join(" ") : "") : "";
}

async function loadCatalog() {
  const [algos, envs, presets, keys] = await Promise.all(["/api/algos", "/api/envs", "/api/presets", "/api/config"].map(u => api("GET", u)));
  Object.assign(catalog, {algos, envs, presets: presets.filter(p => !p.error), keys});
  field("algo").replaceChildren(...algos.map(a => option(a.name, a.name + (a.mine ? " (yours)" : ""))));
  field("algo").value = "ppo";
  field("preset").replaceChildren(option("", "none"), ...catalog.presets.map(p => option(p.override, p.override + (p.mine ? " (yours)" : ""))));
  fillEnvs(); fillPreset();
}

function known(key) {  // a key of the run config, a group, or inside an open group (algo.model.*, logger.*, ...)
  const bare = key.replace(/^[+~]+/, "");
  return catalog.keys.some(k => k.key === bare) || /^(algo|env|logger|callbacks|eval|video|early_stop|hydra)\./.test(bare);
}

// The overrides the form says, or an error message: nothing is sent while there is one.
function formOverrides(sweep) {
  const more = field("overrides").value.split(/\s+/).filter(Boolean);
  for (const item of more) {
    const key = item.split("=", 1)[0];
    if (!item.includes("=") || !key) return `"${item}" is not KEY=VALUE`;
    if (!known(key)) return `unknown key ${key}: the keys are listed at /api/config`;
    const group = catalog.keys.find(k => k.key === key && k.options);
    const listed = {experiment: catalog.presets.filter(p => p.group === key), algo: catalog.algos, env: catalog.envs}[key];  // the root's own too
    const choices = group && (listed ? listed.map(p => p.name) : group.options);
    const bad = choices ? item.slice(key.length + 1).split(",").filter(v => v && v !== "null" && !choices.includes(v)) : [];
    if (bad.length) return `${key}=${bad.join(",")}: not one of ${choices.join(", ")}`;
  }
  const given = new Set(more.map(item => item.split("=", 1)[0].replace(/^[+~]+/, "")));  // these win over the form's
  const out = [];
  const preset = field("preset").value;
  if (preset) out.push(preset);
  const choosing = !field("algo").disabled;
  if (choosing && !given.has("algo")) out.push("algo=" + field("algo").value);
  if (choosing && !given.has("env")) out.push("env=" + field("env").value);
  const seeds = field("seeds").value.trim();
  if (field("adastop").checked && !sweep) return "AdaStop decides the seeds of a sweep: use Launch sweep";
  if (!given.has("seed") && seeds && !field("adastop").checked) {  // with AdaStop the sweeper chooses the seeds
    if (!/^\d+(,\d+)*$/.test(seeds) || seeds.split(",").some(s => Number(s) >= 2 ** 32)) return "seeds: integers in [0, 2**32), separated by commas";
    if (seeds.includes(",") && !sweep) return "several seeds are a sweep: use Launch sweep";
    out.push("seed=" + seeds);
  }
  const gamma = field("gamma").value.trim();
  if (gamma && !given.has("gamma")) {
    const g = Number(gamma);
    if (!(g > 0 && g <= 1)) return "gamma: a number in (0, 1], or empty for the algorithm's tuned value";
    out.push("gamma=" + gamma);
  }
  const budget = field("budget").value.trim();
  if (budget && !given.has("total_timesteps")) {
    if (!/^[1-9]\d*$/.test(budget)) return "total_timesteps: a positive integer, or empty for the algorithm's tuned budget";
    out.push("total_timesteps=" + budget);
  }
  return out.concat(more);
}

// AdaStop's keys from the form ({n, K, alpha}), null when it is off, or an error message
function adastop() {
  if (!field("adastop").checked) return null;
  const n = Number(field("adastop-n").value), K = Number(field("adastop-k").value);
  const alpha = Number(field("adastop-alpha").value);
  if (!(Number.isInteger(n) && n >= 2)) return "AdaStop n: an integer of at least 2";
  if (!(Number.isInteger(K) && K >= 1)) return "AdaStop K: an integer of at least 1";
  if (!(alpha > 0 && alpha < 1)) return "AdaStop alpha: a number in (0, 1)";
  return {n, K, alpha};
}

function launch(sweep) {
  const overrides = formOverrides(sweep);
  if (typeof overrides === "string") { say(overrides, false); return; }
  const sequential = adastop();
  if (typeof sequential === "string") { say(sequential, false); return; }
  const trials = field("trials").value.trim();
  if (trials && !/^[1-9]\d*$/.test(trials)) { say("trials: a positive integer, or empty for the search's own", false); return; }
  if (trials && !sweep) { say("a search's trials run as a sweep: use Launch sweep", false); return; }
  if (sweep && sequential) action("POST", "/api/sweeps", {overrides, adastop: sequential}, d => "started AdaStop sweep " + d.path);
  else if (sweep && trials) action("POST", "/api/sweeps", {overrides, trials: Number(trials)}, d => "started search " + d.path);
  else if (sweep) action("POST", "/api/sweeps", {overrides}, d => "started sweep " + d.path);
  else action("POST", "/api/runs", {overrides}, d => "started run " + d.path);
}
field("algo").onchange = fillEnvs;
field("preset").onchange = fillPreset;
field("launch-run").onclick = () => launch(false);
field("launch-sweep").onclick = () => launch(true);
field("compare").onclick = () => {
  const baseline = field("baseline").value.trim();
  action("POST", "/api/comparisons", {runs: [...selected], ...(baseline ? {baseline} : {})}, d => "comparing in " + d.path);
};
loadCatalog().catch(error => say("cannot read the choices: " + error.message, false));
refresh();
setInterval(refresh, 2000);
