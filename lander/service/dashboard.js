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
function num(value, digits = 4) { return value === null || value === undefined ? "" : Number(value).toPrecision(digits); }
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

function runRow(run) {
  const row = el("tr"); row.dataset.id = run.id;
  row.append(el("td", run.path));
  const status = el("td"); status.append(el("span", run.status, "status " + run.status));
  if (run.status === "unreadable") status.append(el("div", run.error, "muted"));  // which file, and why
  row.append(status);
  row.append(el("td", [run.algo, run.env, run.seed, run.gamma].filter(v => v !== null && v !== undefined).join(" / ")));
  const progress = el("td"), bar = el("div", undefined, "bar"), fill = el("div");
  const fraction = run.total_timesteps ? Math.min(1, run.timesteps / run.total_timesteps) : 0;
  fill.style.width = (100 * fraction).toFixed(1) + "%"; bar.append(fill);
  progress.append(bar, el("span", " " + (run.timesteps || 0).toLocaleString() + " / " + (run.total_timesteps || 0).toLocaleString(), "muted"));
  row.append(progress);
  row.append(el("td", run.latest_eval ? num(run.latest_eval.mean) + " at " + run.latest_eval.timesteps.toLocaleString() : ""));
  row.append(el("td", run.final_eval_mean !== null && run.final_eval_mean !== undefined ? num(run.final_eval_mean) + " ± " + num(run.final_eval_sem, 2) : ""));
  const files = el("td");
  for (const name of run.files) {
    if (["report.html", "video.mp4", "run.log"].includes(name)) { files.append(link(`/api/runs/${run.id}/files/${name}`, name), " "); }
  }
  row.append(files);
  const buttons = el("td");
  if (run.status === "running") {
    const pause = el("button", "Pause"); pause.className = "pause";
    pause.onclick = () => action("POST", `/api/runs/${run.id}/pause`, null, d => "pausing " + d.pausing);
    buttons.append(pause);
  }
  if (run.status === "paused") {
    const go = el("button", "Continue"); go.className = "continue";
    go.onclick = () => action("POST", `/api/runs/${run.id}/continue`, null, d => "continuing " + d.continuing);
    buttons.append(go);
  }
  if (run.status === "running" || run.status === "paused") {
    const stop = el("button", "Stop"); stop.className = "stop";
    stop.onclick = () => action("POST", `/api/runs/${run.id}/stop`, null, d => "stopping " + d.stopping);
    buttons.append(stop);
  }
  if (["interrupted", "failed", "stopped"].includes(run.status) && !run.active) {
    const resume = el("button", "Resume"); resume.className = "resume";
    resume.onclick = () => action("POST", `/api/runs/${run.id}/resume`, null, d => "resuming " + d.path);
    buttons.append(resume);
  }
  row.append(buttons);
  return row;
}

function sweepRow(sweep) {
  const row = el("tr"); row.dataset.id = sweep.id;
  row.append(el("td", sweep.path), el("td", sweep.jobs));
  const report = el("td");
  if (sweep.compared) report.append(link(`/api/sweeps/${sweep.id}/report`, "report.html")); else report.append(el("span", "not yet", "muted"));
  row.append(report);
  return row;
}

async function refresh() {
  try {
    const [runs, sweeps] = await Promise.all([api("GET", "/api/runs"), api("GET", "/api/sweeps")]);
    document.getElementById("runs").replaceChildren(...runs.map(runRow));
    document.getElementById("sweeps").replaceChildren(...sweeps.map(sweepRow));
  } catch (error) { say("cannot reach the service: " + error.message, false); }
}

function overrides() { return document.getElementById("overrides").value.split(/\s+/).filter(Boolean); }
document.getElementById("launch-run").onclick = () => action("POST", "/api/runs", {overrides: overrides()}, d => "started run " + d.path);
document.getElementById("launch-sweep").onclick = () => action("POST", "/api/sweeps", {overrides: overrides()}, d => "started sweep " + d.path);
refresh();
setInterval(refresh, 2000);
