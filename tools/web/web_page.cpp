#include "web_page.hpp"

namespace dshpty::web {

namespace {

constexpr std::string_view kHtml = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dshpty: sessions</title>
<link rel="stylesheet" href="/xterm.css?token=@TOKEN@">
<link rel="stylesheet" href="/app.css?token=@TOKEN@">
<script src="/xterm.js?token=@TOKEN@"></script>
<script src="/app.js?token=@TOKEN@"></script>
</head>
<body>
<h1>dshpty sessions <span id="host"></span></h1>
<p class="note">Read-only: what the sessions show, live. Nothing typed here reaches them.</p>
<table id="sessions"><thead><tr><th>owner</th><th>session</th><th>status</th><th>activity</th><th>size</th><th>observers</th></tr></thead><tbody></tbody></table>
<div id="terminals"></div>
<h2>Recordings</h2>
<p class="note">A session's recording, replayed here from its file (closed sessions' too, while this host runs).
Speed <select id="speed"><option value="1">1x</option><option value="2">2x</option><option value="8">8x</option><option value="0">at once</option></select></p>
<table id="recordings"><thead><tr><th>owner</th><th>session</th><th>state</th><th></th></tr></thead><tbody></tbody></table>
<div id="replays"></div>
</body>
</html>
)HTML";

constexpr std::string_view kScript = R"JS('use strict';
// One read-only terminal per session; frames (the session's screen as its emulator holds it)
// replace one another. Nothing is ever sent on a socket: an observer only reads.
const token = new URLSearchParams(location.search).get('token') || '';
const terminals = {};  // sessionId -> {term, ws, box, frames}
window.dshptyTerminals = terminals;

function text(el, s) { el.textContent = s; return el; }

function draw(entry, f) {
  const term = entry.term;
  if (term.rows !== f.rows || term.cols !== f.cols) term.resize(f.cols, f.rows);
  let out = '\x1b[?25l\x1b[H\x1b[2J';
  f.lines.forEach((line, i) => { out += '\x1b[' + (i + 1) + ';1H' + line; });
  out += '\x1b[' + (f.cursor.row + 1) + ';' + (f.cursor.col + 1) + 'H' + (f.cursor.visible ? '\x1b[?25h' : '');
  term.write(out, () => { entry.frames += 1; entry.last = f; entry.drawnAt = performance.now(); });
  let status = f.owner + ' / ' + (f.name || '') + ' (' + f.sessionId + ') | ';
  status += f.activity === 'busy' ? 'busy' + (f.command ? ': ' + f.command : '') : (f.activity === 'prompt' ? 'at the prompt' : f.activity);
  status += ' | ' + f.rows + 'x' + f.cols;
  text(entry.status, status);
}

function open(id) {
  const box = document.createElement('section');
  box.className = 'session';
  const status = document.createElement('div');
  status.className = 'status';
  const holder = document.createElement('div');
  box.append(status, holder);
  document.getElementById('terminals').append(box);
  const term = new Terminal({disableStdin: true, cursorBlink: false, scrollback: 0, rows: 24, cols: 80});
  term.open(holder);
  const entry = {term, box, status, frames: 0, ended: null};
  terminals[id] = entry;
  const ws = new WebSocket('ws://' + location.host + '/ws?token=' + encodeURIComponent(token) +
                           '&session=' + encodeURIComponent(id), 'dshpty-watch');
  entry.ws = ws;
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.ended !== undefined) { entry.ended = m.ended; text(status, status.textContent + ' | ' + m.ended); return; }
    if (m.error !== undefined) { entry.ended = m.error.message; text(status, m.error.message); return; }
    draw(entry, m);
  };
}

// ---- replays: a session's asciicast file, streamed and played as it arrives --------------
// The file is read a piece at a time and each piece played before the next is read, so the
// page holds little more than the terminal itself however long the recording. `o` events
// are written at their times (divided by the speed; a pause longer than 2 s is cut to 2 s),
// `r` events resize; `i` and `m` events (input, markers) are not the terminal's output.
const replays = {};  // sessionId -> {term, status, done, error, events}
window.dshptyReplays = replays;
const kMaxPauseMs = 2000;

function speed() { return Number(document.getElementById('speed').value); }
function written(term, data) { return new Promise((resolve) => term.write(data, resolve)); }
function pause(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

async function replay(id) {
  const old = replays[id];
  if (old) { old.stopped = true; old.term.dispose(); old.box.remove(); }
  const box = document.createElement('section');
  box.className = 'session replay';
  const status = document.createElement('div');
  status.className = 'status';
  const holder = document.createElement('div');
  box.append(status, holder);
  document.getElementById('replays').append(box);
  const term = new Terminal({disableStdin: true, cursorBlink: false, scrollback: 1000, rows: 24, cols: 80});
  term.open(holder);
  const entry = {term, box, status, done: false, error: null, events: 0, stopped: false};
  replays[id] = entry;
  text(status, 'replay of ' + id + ' | loading');
  const r = await fetch('/api/recording?token=' + encodeURIComponent(token) + '&session=' + encodeURIComponent(id));
  if (!r.ok) { entry.error = r.status; entry.done = true; text(status, 'replay of ' + id + ' | ' + r.status + ' ' + (await r.text())); return; }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let rest = '', last = 0, header = null;
  const play = async (line) => {
    if (!line) return;
    let v;
    try { v = JSON.parse(line); } catch (e) { return; }  // a line cut short: skipped
    if (!header) {
      header = v;
      if (v.width && v.height) term.resize(v.width, v.height);
      text(status, 'replay of ' + (v.title || id) + ' | playing');
      return;
    }
    if (!Array.isArray(v) || v.length < 3) return;
    const [t, code, data] = v;
    const s = speed();
    if (s > 0 && t > last) await pause(Math.min(kMaxPauseMs, (t - last) * 1000) / s);
    last = Math.max(last, t);
    if (code === 'o') await written(term, data);
    else if (code === 'r') {
      const m = /^(\d+)x(\d+)$/.exec(data);
      if (m) term.resize(Number(m[1]), Number(m[2]));
    }
    entry.events += 1;
  };
  for (;;) {
    let value, done;
    try {
      ({value, done} = await reader.read());
    } catch (e) {  // the host dropped a replay that stalled too long, or went away
      entry.error = 'the connection ended'; entry.done = true;
      text(status, 'replay of ' + id + ' | the connection ended after ' + entry.events + ' events');
      return;
    }
    if (entry.stopped) { reader.cancel(); return; }
    rest += decoder.decode(value || new Uint8Array(), {stream: !done});
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      await play(line);
      if (entry.stopped) { reader.cancel(); return; }
    }
    if (done) break;
  }
  await play(rest);
  entry.done = true;
  text(status, 'replay of ' + ((header && header.title) || id) + ' | done (' + entry.events + ' events)');
}
window.dshptyReplay = replay;

async function refreshRecordings() {
  const r = await fetch('/api/recordings?token=' + encodeURIComponent(token));
  if (!r.ok) return;
  const data = await r.json();
  const body = document.querySelector('#recordings tbody');
  body.replaceChildren();
  for (const s of data.recordings) {
    const row = document.createElement('tr');
    for (const v of [s.owner, (s.name || '') + ' (' + s.sessionId + ')', s.live ? 'open' : 'closed'])
      row.append(text(document.createElement('td'), v));
    const button = text(document.createElement('button'), 'replay');
    button.dataset.session = s.sessionId;
    button.addEventListener('click', () => replay(s.sessionId));
    const cell = document.createElement('td');
    cell.append(button);
    row.append(cell);
    body.append(row);
  }
}

async function refresh() {
  refreshRecordings();
  const r = await fetch('/api/sessions?token=' + encodeURIComponent(token));
  if (!r.ok) return;
  const data = await r.json();
  text(document.getElementById('host'), '(host ' + data.host + ')');
  const body = document.querySelector('#sessions tbody');
  body.replaceChildren();
  for (const s of data.sessions) {
    const row = document.createElement('tr');
    const activity = s.activity === 'busy' ? 'busy' + (s.command ? ': ' + s.command : '') : s.activity;
    for (const v of [s.owner, (s.name || '') + ' (' + s.sessionId + ')', s.status, activity, s.rows + 'x' + s.cols, String(s.observers)])
      row.append(text(document.createElement('td'), v));
    body.append(row);
    if (!terminals[s.sessionId]) open(s.sessionId);
  }
}

window.addEventListener('DOMContentLoaded', () => { refresh(); setInterval(refresh, 2000); });
)JS";

constexpr std::string_view kStyle = R"CSS(body { font-family: sans-serif; margin: 1em; background: #fafafa; }
h1 { font-size: 1.3em; }
.note { color: #555; }
table { border-collapse: collapse; margin-bottom: 1em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; font-family: monospace; }
.session { margin-bottom: 1.5em; display: inline-block; }
.status { background: #333; color: #eee; font-family: monospace; padding: 0.2em 0.5em; }
h2 { font-size: 1.1em; }
)CSS";

}  // namespace

std::string page_html(std::string_view token) {
  std::string out(kHtml);
  const std::string_view mark = "@TOKEN@";
  for (auto at = out.find(mark); at != std::string::npos; at = out.find(mark, at + token.size()))
    out.replace(at, mark.size(), token);
  return out;
}

std::string_view page_script() { return kScript; }
std::string_view page_style() { return kStyle; }

}  // namespace dshpty::web
