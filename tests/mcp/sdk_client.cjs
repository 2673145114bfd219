// dshpty-mcp driven by the official TypeScript SDK client (@modelcontextprotocol/sdk, which
// tools/dev installs into the build tree from the npm registry): the handshake the SDK makes,
// tools/list, then open -> send `echo $((6*7))` -> a flood cut to head and tail -> a lone
// surrogate answered under its id -> read -> a check-in after a send that ended idle -> keys
// ending in Escape in vim, the screen settled -> a send cancelled through the SDK's
// AbortSignal (with progress) -> close, and the server gone after the client closes. Prints
// the calls and their results as a transcript. Exits 77 (skipped, with the reason) when the
// SDK is not installed; never reaches the network.
//
// usage: node sdk_client.cjs DSHPTY_MCP SDK_DIR
'use strict';

const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const [mcpBinary, sdkDir] = process.argv.slice(2);

function skip(reason) {
  console.log(`SKIP: ${reason}`);
  process.exit(77);
}

function check(condition, message) {
  if (!condition) {
    console.error(`FAIL: ${message}`);
    process.exit(1);
  }
}

function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

// Bounded polling of a condition (not waiting out a race): output before a job shows the
// shell got that far, not that the job runs, and a SIGINT that lands while bash is still
// starting the job (before its exec) is lost (docs/mcp.md, "Cancellation and progress").
async function waitForeground(shellPid, argv0) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const name = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
        // ppid is the shell, pgrp == tpgid: it holds the terminal.
        if (name === argv0 && Number(fields[1]) === shellPid && fields[2] === fields[5]) return;
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  check(false, `${argv0} never held the terminal`);
}

let sdk;
try {
  const requireFromSdk = createRequire(path.join(sdkDir, 'package.json'));
  sdk = {
    ...requireFromSdk('@modelcontextprotocol/sdk/client/index.js'),
    ...requireFromSdk('@modelcontextprotocol/sdk/client/stdio.js'),
    // package.json is not among the package's exports: read it from where the client came.
    version: JSON.parse(fs.readFileSync(path.join(path.dirname(requireFromSdk.resolve(
        '@modelcontextprotocol/sdk/client/index.js')), '..', '..', '..', 'package.json'), 'utf8')).version,
  };
} catch (e) {
  skip(`@modelcontextprotocol/sdk is not installed in ${sdkDir} (tools/dev test installs it from the npm ` +
       `registry; it could not then): ${e.code || e.message}`);
}

// A result's text items joined: a send's result is two, its output's and its status lines'.
function text(result) {
  check(Array.isArray(result.content) && [1, 2].includes(result.content.length) &&
        result.content.every((item) => item.type === 'text'), `content: ${JSON.stringify(result)}`);
  return result.content.map((item) => item.text).join('');
}

async function main() {
  const client = new sdk.Client({ name: 'dshpty-sdk-e2e', version: '0.0.0' });
  const transport = new sdk.StdioClientTransport({ command: mcpBinary, args: [], env: process.env, stderr: 'inherit' });
  // A bounded wait for every request: a broken server fails the test instead of hanging it.
  const options = { timeout: 30000 };
  // The SDK reports a response to a request it no longer waits for (one we cancelled) here.
  const protocolErrors = [];
  client.onerror = (e) => protocolErrors.push(String(e && e.message ? e.message : e));
  await client.connect(transport, options);
  const server = client.getServerVersion();
  console.log(`SDK ${sdk.version} connected to ${server.name} ${server.version}`);
  check(server.name === 'dshpty-mcp', `server: ${JSON.stringify(server)}`);

  const { tools } = await client.listTools(undefined, options);
  console.log(`tools/list: ${tools.map((t) => t.name).join(', ')}`);
  for (const name of ['terminal_open', 'terminal_send', 'terminal_read', 'terminal_signal', 'terminal_close',
                      'terminal_list']) {
    check(tools.some((t) => t.name === name), `missing tool ${name}`);
  }

  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args }, undefined, options);
    console.log(`> ${name} ${JSON.stringify(args)}`);
    console.log(text(result).replace(/^/gm, '  ').trimEnd());
    check(result.isError === false, `${name} failed: ${text(result)}`);
    return text(result);
  };

  const opened = await call('terminal_open', { name: 'main' });
  check(opened.startsWith('started terminal session pty-1 (main) [type: shell]'), opened);
  const pid = Number(/pid=(\d+)/.exec(await call('terminal_list', {}))[1]);
  const sent = await call('terminal_send', { session: 'main', text: 'echo $((6*7))' });
  check(sent.includes('\n42\n') && sent.includes('[wait: stdin_read]') && sent.includes('[exit: 0]'), sent);
  const page = await call('terminal_read', { session: 'main', count: 10 });
  check(page.includes('42') && /\[lines: \d+-\d+ of \d+\]/.test(page), page);
  // A flood over the cap (256 KiB by default): its head and its tail, the marker between.
  const flood = await client.callTool({ name: 'terminal_send', arguments: { session: 'main', text: 'seq 1 100000',
                                                                            timeout_ms: 60000 } }, undefined, options);
  const floodText = text(flood);
  // Through the SDK too, a send's result is two items: the output (the cap bounds it), then
  // the status lines.
  check(flood.content.length === 2 && flood.content[1].text.startsWith('[wait: stdin_read]\n[exit: 0]\n') &&
        !flood.content[0].text.includes('[wait:'), `two items: ${JSON.stringify(flood.content.map((c) => c.text.slice(-80)))}`);
  console.log(`> terminal_send {"session":"main","text":"seq 1 100000"}: ${floodText.length} characters`);
  const marker = /^\[output truncated: (\d+) lines, (\d+) bytes left out\]$/m.exec(floodText);
  check(flood.isError === false && marker, `no marker line: ${floodText.slice(0, 200)}`);
  const floodHead = floodText.slice(0, marker.index).split('\n');
  check(floodHead[1] === '1' && floodHead[2] === '2', `the head: ${floodHead.slice(0, 3)}`);
  check(/\n99999\n100000\n/.test(floodText.slice(marker.index)), 'the tail');
  check(floodText.includes('[exit: 0]'), floodText.slice(-200));
  // A lone surrogate in an argument: answered under the call's own id, as an error result.
  const lone = await client.callTool({ name: 'terminal_send', arguments: { session: 'main', text: 'x\ud800' } },
                                     undefined, options);
  console.log(`> terminal_send {"session":"main","text":"x\\ud800"}: ${text(lone).trimEnd()}`);
  check(lone.isError === true && text(lone).startsWith('error: INVALID_ARGUMENT: '), text(lone));
  // A check-in (no text, no keys) after a send that ended idle: the late output and the
  // status of what finished meanwhile are its.
  const early = await call('terminal_send', { session: 'main', text: 'sleep 1; echo LATE; (exit 5)', idle_ms: 300 });
  check(early.includes('[wait: inferred_idle]') && !early.includes('\nLATE\n'), early);
  const look = await call('terminal_send', { session: 'main', idle_ms: 20000 });
  check(/(^|\n)LATE\n/.test(look) && look.includes('[wait: stdin_read]') && look.includes('[exit: 5]'), look);
  // Keys ending in Escape: the screen returned is vim's after it left insert mode (it waits
  // out its escape delay reading the terminal first; the call waits too).
  await call('terminal_open', { name: 'vim', terminal: 'xterm' });
  const vim = await call('terminal_send', { session: 'vim', text: "vim -u NONE -N --cmd 'set ttimeout ttimeoutlen=50'" });
  check(vim.includes('~'), vim);
  for (let n = 1; n <= 5; n += 1) {
    const edited = await call('terminal_send', { session: 'vim', keys: ['i', 'x', 'Escape'] });
    check(edited.includes('x'.repeat(n)) && !edited.includes('-- INSERT --'), `round ${n}: ${edited}`);
  }
  await call('terminal_send', { session: 'vim', text: ':q!' });
  await call('terminal_close', { session: 'vim' });
  // Progress and cancellation as the SDK does them: onprogress sends a progressToken, and an
  // aborted signal sends notifications/cancelled (the server interrupts the send, answers
  // nothing, and the SDK rejects the call).
  const controller = new AbortController();
  let progressed = '';
  let foregroundSleep = null;
  const started = new Promise((resolve) => {
    foregroundSleep = resolve;
  });
  const live = client.callTool({ name: 'terminal_send', arguments: { session: 'main', text: 'echo sdk-start; sleep 60' } },
                               undefined, {
                                 ...options,
                                 signal: controller.signal,
                                 onprogress: (progress) => {
                                   progressed += progress.message || '';
                                   if (progressed.includes('sdk-start\n')) foregroundSleep();
                                 },
                               });
  await started;
  await waitForeground(pid, 'sleep');
  console.log(`> terminal_send {"session":"main","text":"echo sdk-start; sleep 60"} (progress: ${JSON.stringify(progressed)})`);
  controller.abort('the test cancels it');
  const outcome = await live.then(() => 'answered', (e) => `rejected: ${e.message || e}`);
  console.log(`  cancelled by the client: ${outcome}`);
  check(outcome.startsWith('rejected'), 'the cancelled call was answered');
  const status = await call('terminal_send', { session: 'main', text: 'echo status-$?' });
  check(status.includes('status-130'), `the sleep was not interrupted by SIGINT: ${status}`);
  // That send waited for the cancelled one to wind down, so a response to it would be in.
  check(protocolErrors.length === 0, `protocol errors: ${protocolErrors.join('; ')}`);

  const closed = await call('terminal_close', { session: 'main' });
  check(closed === 'closed terminal session pty-1\n', closed);
  check(!pidAlive(pid), `the session's shell ${pid} outlived terminal_close`);

  const serverPid = transport.pid;
  await client.close();
  check(serverPid === null || !pidAlive(serverPid), `the server ${serverPid} outlived the client`);
  console.log('ok');
}

main().catch((e) => {
  console.error(`FAIL: ${e.stack || e}`);
  process.exit(1);
});
