// The explorer's page: lays out the JSON under /api/ (auditor/explorer/views.py), redraws on every server-sent
// change. Routes on the URL's fragment: #/ (runs), #/run/N, #/account/0x.... Text goes in with textContent only
// (event data is chain input: never parsed as HTML). Amounts arrive as decimal wei strings and are shown with
// formatUnits (exact BigInt arithmetic, 4 decimals, truncated), so a test can compare what is shown with a contract.
"use strict";

const page = document.getElementById("page");
const head = document.getElementById("head");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v; else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
  return node;
}

function formatUnits(wei) {
  const value = BigInt(wei), unit = 10n ** 18n, sign = value < 0n ? "-" : "", abs = value < 0n ? -value : value;
  const frac = ((abs % unit) * 10000n) / unit;
  return `${sign}${(abs / unit).toLocaleString("en-US")}.${frac.toString().padStart(4, "0")}`;
}

const short = (hex) => (hex ? `${hex.slice(0, 10)}…` : "–");
const when = (t) => new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19);
const accountLink = (address, label) => el("a", { href: `#/account/${address}`, "data-address": address }, label || short(address));
const eth = (wei, name) => el("td", { class: "num", "data-field": name, "data-wei": wei }, formatUnits(wei));

function table(id, columns, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))), el("tbody", {}, rows));
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || `${path}: HTTP ${response.status}`);
  return body;
}

function renderRuns(data) {
  const rows = data.runs.map((r) =>
    el("tr", { "data-run": r.run_id },
      el("td", {}, el("a", { href: `#/run/${r.run_id}` }, `run ${r.run_id}`)),
      el("td", {}, accountLink(r.creator)), el("td", { class: "num" }, r.created_block),
      el("td", { class: "num", "data-field": "rounds_settled" }, `${r.rounds_settled} / ${r.max_rounds}`),
      el("td", {}, r.finished ? "finished" : "running")));
  return [el("h2", {}, "runs"), rows.length ? table("runs", ["run", "creator", "created at block", "rounds settled", ""], rows)
    : el("p", { class: "note" }, "no run in this deployment yet")];
}

function drawLoss(container, losses) {
  if (!losses.length) return;
  const xs = losses.map((l) => l.round), ys = losses.map((l) => l.loss);
  const options = {
    width: 640, height: 260, title: "held-out loss of θ_r",
    scales: { x: { time: false } },
    axes: [{ label: "round r" }, { label: "loss" }],
    series: [{ label: "round" }, { label: "loss", stroke: "#1f77b4", width: 2, points: { size: 7 } }],
    hooks: { draw: [(u) => { container.dataset.drawn = String(u.data[0].length); }] },
  };
  new uPlot(options, [xs, ys], container);
}

function renderRound(rnd) {
  const commitments = rnd.commitments.map((c) =>
    el("tr", { "data-solver": c.solver },
      el("td", {}, accountLink(c.solver, c.label)),
      el("td", { class: `status-${c.status}`, "data-field": "status" }, c.status),
      el("td", { class: "num" }, c.passes), el("td", { class: "num" }, c.fails), el("td", { class: "num" }, c.tokens),
      el("td", {}, el("code", {}, short(c.root)))));
  const attestations = rnd.attestations.map((a) =>
    el("tr", { "data-verifier": a.verifier },
      el("td", {}, accountLink(a.verifier, a.label)), el("td", {}, accountLink(a.solver, a.solver_label)),
      el("td", { class: "num" }, a.slot), el("td", { "data-field": "kind" }, a.kind),
      el("td", { "data-field": "state" }, a.state + (a.planted ? " (planted)" : ""))));
  const disputes = rnd.disputes.map((d) =>
    el("tr", { "data-dispute": d.dispute_id },
      el("td", {}, d.kind), el("td", {}, accountLink(d.challenger, d.challenger_label)),
      el("td", { "data-field": "status" }, d.status), el("td", { "data-field": "verdict" }, d.verdict || "–")));
  return el("section", { "data-round": rnd.round },
    el("h3", {}, `round ${rnd.round}: ${rnd.phase}`),
    el("p", {},
      `started ${when(rnd.start)}; commits until ${when(rnd.commit_end)}, attests until ${when(rnd.attest_end)}, `
      + `challenges until ${when(rnd.challenge_end)}. θ_r `, el("code", { "data-field": "theta" }, rnd.theta),
      rnd.next_theta ? [" → θ_(r+1) ", el("code", { "data-field": "next_theta" }, rnd.next_theta)] : "",
      rnd.loss === null ? "" : `; loss ${rnd.loss.toFixed(4)}`),
    commitments.length ? table(`commitments-${rnd.round}`, ["solver", "status", "passes", "fails", "tokens", "root"], commitments)
      : el("p", { class: "note" }, "no commitment"),
    attestations.length ? table(`attestations-${rnd.round}`, ["verifier", "of solver", "slot", "verdict", "state"], attestations) : "",
    disputes.length ? table(`disputes-${rnd.round}`, ["dispute", "challenger", "status", "verdict"], disputes) : "");
}

function renderRun(data) {
  const run = data.run;
  const chart = el("div", { id: "loss-chart", "data-points": data.losses.length });
  const accounts = data.accounts.map((a) =>
    el("tr", { "data-account": a.address },
      el("td", {}, accountLink(a.address, a.label)), el("td", {}, a.role),
      el("td", { class: "num", "data-field": "shares", "data-wei": a.shares }, formatUnits(a.shares)),
      el("td", { class: "num" }, `${(100 * a.share_fraction).toFixed(2)}%`),
      eth(a.earned_wei, "earned"), eth(a.slashed_wei, "slashed")));
  const slashes = data.slashes.map((s) =>
    el("tr", {}, el("td", {}, accountLink(s.account, s.label)), el("td", {}, s.role), eth(s.amount_wei, "amount"),
      el("td", { "data-field": "reason" }, s.reason), el("td", { class: "num" }, s.round)));
  const nodes = [
    el("h2", {}, `run ${run.run_id}: ${run.phase}`),
    el("p", { id: "run-summary" },
      `round ${Math.min(run.current_round, run.max_rounds)} of ${run.max_rounds}; reward pool ${formatUnits(run.reward_pool_wei)} ETH; `
      + `${formatUnits(run.total_shares)} shares; slashed ${formatUnits(run.slashed_wei)} ETH; share token `,
      accountLink(run.share_token)),
    chart,
    data.loss_note ? el("p", { class: "note", id: "loss-note" }, data.loss_note) : "",
    el("h3", {}, "shares and ETH per account"),
    table("accounts", ["account", "role", "shares", "of all", "ETH earned", "ETH slashed"], accounts),
    el("h3", {}, "slashes"),
    slashes.length ? table("slashes", ["account", "role", "ETH", "reason", "round"], slashes) : el("p", { class: "note" }, "none"),
    ...data.rounds.slice().reverse().map(renderRound),
  ];
  return { nodes, after: () => drawLoss(chart, data.losses) };
}

function renderAccount(data) {
  const c = data.contracts;
  const stake = Object.entries(c.stake).map(([role, s]) =>
    el("tr", { "data-role": role }, el("td", {}, role), eth(s.bonded_wei, "bonded"), eth(s.reserved_wei, "reserved"),
      eth(s.free_wei, "free"), eth(s.unbonding_wei, "unbonding"),
      el("td", {}, s.unbonding_wei !== "0" ? (s.withdrawable ? "withdrawable now" : `from ${when(s.release_time)}`) : "–")));
  const credits = Object.entries(c.credits_wei).map(([contract, w]) =>
    el("tr", { "data-contract": contract }, el("td", {}, contract), eth(w, "credit")));
  const runs = c.runs.map((r) =>
    el("tr", { "data-run": r.run },
      el("td", {}, el("a", { href: `#/run/${r.run}` }, `run ${r.run}`)),
      el("td", {}, r.solver_member ? "member" : (r.solver_joined ? "left" : "–")), el("td", {}, r.verifier),
      el("td", { class: "num", "data-field": "shares", "data-wei": r.shares }, formatUnits(r.shares)),
      eth(r.withdrawable_revenue_wei, "revenue")));
  const work = data.runs.map((r) => el("section", { "data-run": r.run_id },
    el("h3", {}, `run ${r.run_id} (${r.label})`),
    r.commitments.length ? table(`work-${r.run_id}`, ["round", "status", "root"], r.commitments.map((x) =>
      el("tr", {}, el("td", { class: "num" }, x.round), el("td", { class: `status-${x.status}` }, x.status), el("td", {}, el("code", {}, short(x.root))))))
      : "",
    r.attestations.length ? table(`checks-${r.run_id}`, ["round", "solver", "slot", "verdict", "state"], r.attestations.map((x) =>
      el("tr", {}, el("td", { class: "num" }, x.round), el("td", {}, accountLink(x.solver)), el("td", { class: "num" }, x.slot),
        el("td", {}, x.kind), el("td", {}, x.state)))) : "",
    r.slashes.length ? table(`slashed-${r.run_id}`, ["round", "role", "ETH", "reason"], r.slashes.map((x) =>
      el("tr", {}, el("td", { class: "num" }, x.round), el("td", {}, x.role), eth(x.amount_wei, "amount"), el("td", {}, x.reason)))) : ""));
  return [
    el("h2", {}, `account ${data.address}`),
    el("p", {}, "wallet ", el("span", { id: "wallet", "data-wei": c.wallet_wei }, formatUnits(c.wallet_wei)), " ETH; juror: ", c.juror),
    el("h3", {}, "stake"), table("stake", ["role", "bonded", "reserved", "free", "unbonding", "release"], stake),
    el("h3", {}, "credits pending"), credits.length ? table("credits", ["contract", "ETH"], credits) : el("p", { class: "note", id: "credits" }, "none"),
    el("h3", {}, "runs"), runs.length ? table("account-runs", ["run", "solver", "verifier", "shares", "revenue withdrawable"], runs) : el("p", { class: "note" }, "none"),
    ...work,
  ];
}

let rendering = Promise.resolve();

async function render() {
  const route = (location.hash || "#/").slice(1).split("/").filter(Boolean);
  let nodes, after = null;
  try {
    if (route[0] === "run") ({ nodes, after } = renderRun(await getJson(`/api/runs/${encodeURIComponent(route[1])}`)));
    else if (route[0] === "account") nodes = renderAccount(await getJson(`/api/accounts/${encodeURIComponent(route[1])}`));
    else nodes = renderRuns(await getJson("/api/runs"));
  } catch (err) {
    nodes = [el("p", { class: "error", id: "error" }, String(err.message || err))];
  }
  page.replaceChildren(...nodes);
  if (after) after();
  page.dataset.rendered = String(Number(page.dataset.rendered || 0) + 1);
}

function refresh() { rendering = rendering.then(render); return rendering; }

function showHead(status) {
  head.dataset.block = status.block;
  head.textContent = status.error ? `chain unreachable: ${status.error}` : `block ${status.block} · ${when(status.time)}`;
  head.className = status.error ? "error" : "";
}

document.getElementById("find").addEventListener("submit", (e) => {
  e.preventDefault();
  location.hash = `#/account/${document.getElementById("find-address").value.trim()}`;
});
window.addEventListener("hashchange", refresh);
refresh().then(() => {
  const stream = new EventSource("/api/stream");
  stream.addEventListener("change", (e) => { showHead(JSON.parse(e.data)); refresh(); });
  stream.onerror = () => { head.textContent = "reconnecting…"; };
});
