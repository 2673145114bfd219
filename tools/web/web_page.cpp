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

async function refresh() {
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
