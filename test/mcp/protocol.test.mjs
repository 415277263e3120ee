// mpnanny-mcp spoken to line by line, without an SDK: the edge cases a client library
// would never send. Each must get the right JSON-RPC error, and the server must keep
// serving afterwards and never read outside its root or write anything.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { env, flags, makeFixture, modelText, serverArgs, snapshot } from './fixture.mjs';

/** A server process and its replies, one JSON object per stdout line. */
class Session {
  constructor(args, command = env.server, cwd = undefined) {
    this.proc = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd });
    this.lines = [];
    this.waiting = [];
    this.stderr = '';
    let buffer = '';
    this.proc.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const waiter = this.waiting.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
    this.proc.stderr.on('data', (chunk) => { this.stderr += chunk; });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
  }

  /** Writes a raw line (or an object as JSON) and returns the next reply, parsed. */
  async send(message) {
    const line = typeof message === 'string' ? message : JSON.stringify(message);
    this.proc.stdin.write(line + '\n');
    return this.next();
  }

  next() {
    const got = this.lines.length ? Promise.resolve(this.lines.shift())
                                   : new Promise((resolve) => this.waiting.push(resolve));
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`no reply; stderr: ${this.stderr.slice(-2000)}`)), 240_000).unref());
    return Promise.race([got, timeout]).then((line) => JSON.parse(line));
  }

  notify(message) {
    this.proc.stdin.write(JSON.stringify(message) + '\n');
  }

  async close() {
    this.proc.stdin.end();
    return this.exited;
  }
}

let id = 100;
const request = (method, params = {}) => ({ jsonrpc: '2.0', id: ++id, method, params });
const callTool = (name, args) => request('tools/call', { name, arguments: args });
const initialize = (version = '2025-06-18') =>
  request('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '0' } });

/** A tool that ran and failed: a result with isError (MCP 2025-06-18, tools, "Error Handling"). */
function assertToolFailure(reply, reason, pattern) {
  assert.ok(reply.result, `expected a result, got ${JSON.stringify(reply).slice(0, 500)}`);
  assert.equal(reply.result.isError, true, JSON.stringify(reply.result));
  assert.equal(reply.result._meta?.['mpnanny/reason'], reason, JSON.stringify(reply.result));
  if (pattern) assert.match(reply.result.content[0].text, pattern);
  assert.equal(reply.result.structuredContent, undefined);
}

function assertError(reply, code, reason, pattern) {
  assert.ok(reply.error, `expected an error, got ${JSON.stringify(reply).slice(0, 500)}`);
  assert.equal(reply.error.code, code, JSON.stringify(reply.error));
  if (reason) assert.equal(reply.error.data?.reason, reason, JSON.stringify(reply.error));
  if (pattern) assert.match(reply.error.message, pattern);
  assert.equal(reply.jsonrpc, '2.0');
}

describe('mpnanny-mcp protocol edge cases (raw stdio)', () => {
  let fixture, session, before_;

  before(() => {
    fixture = makeFixture();
    // Links out of the root: to a file, and to a folder.
    fs.symlinkSync(path.join(fixture.outside, 'secret.cpp'), path.join(fixture.root, 'link.cpp'));
    fs.symlinkSync(fixture.outside, path.join(fixture.root, 'linkdir'));
    fs.symlinkSync(path.join(fixture.outside, 'metrics.db'), path.join(fixture.root, 'runs-link.db'));
    // 3 MiB: over the 2 MiB read limit.
    fs.writeFileSync(path.join(fixture.root, 'huge.cpp'), '// padding\n'.repeat(3 * 1024 * 1024 / 11 + 1));
    // Folders under the root whose metrics.db leads out of it: to a file, a missing file, a database.
    for (const target of ['secret.cpp', 'missing.db', 'metrics.db']) {
      fs.mkdirSync(path.join(fixture.root, `dblink-${target}`));
      fs.symlinkSync(path.join(fixture.outside, target), path.join(fixture.root, `dblink-${target}`, 'metrics.db'));
    }
    before_ = snapshot(fixture.top);
    session = new Session(serverArgs(fixture));
  });

  after(async () => {
    const code = await session.close();
    assert.equal(code, 0, 'the server ends cleanly at end of input');
    assert.deepEqual(snapshot(fixture.top), before_, 'the server wrote nothing');
    fixture.cleanup();
  });

  test('a request before initialize is an error; ping is allowed', async () => {
    assertError(await session.send(request('tools/list')), -32600, 'not_initialized', /not initialized/);
    const pong = await session.send(request('ping'));
    assert.deepEqual(pong.result, {});
  });

  test('malformed JSON gets -32700 with a null id', async () => {
    const reply = await session.send('{"jsonrpc": "2.0", "id": 7, "method": ');
    assertError(reply, -32700, null, /parse error/);
    assert.equal(reply.id, null);
  });

  test('initialize answers with the client version when supported', async () => {
    const reply = await session.send(initialize('2025-06-18'));
    assert.equal(reply.result.protocolVersion, '2025-06-18');
    assert.equal(reply.result.serverInfo.name, 'mpnanny');
    session.notify({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assertError(await session.send(initialize()), -32600, 'already_initialized');
  });

  test('an unknown method gets -32601', async () => {
    const reply = await session.send(request('tools/destroy'));
    assertError(reply, -32601, 'unknown_method', /tools\/destroy/);
    assert.equal(reply.id, id);
  });

  test('invalid messages: a batch, a wrong jsonrpc, an object id, non-object params', async () => {
    assertError(await session.send([request('ping')]), -32600, null, /batches are part of MCP 2025-03-26 only/);
    assertError(await session.send({ jsonrpc: '2.0', id: 4 }), -32600, null, /needs a method/);
    assertError(await session.send({ jsonrpc: '1.0', id: 1, method: 'ping' }), -32600, null, /jsonrpc/);
    assertError(await session.send({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), -32600, null, /id/);
    assertError(await session.send({ jsonrpc: '2.0', id: 3, method: 'ping', params: [1] }), -32602);
    assertError(await session.send('[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'),
                -32700, 'too_deep');
  });

  test('../../etc/passwd is outside the root', async () => {
    const reply = await session.send(callTool('scan_file', { path: '../../etc/passwd', flags }));
    assertToolFailure(reply, 'outside_root', /outside the allowed roots/);
    assert.doesNotMatch(JSON.stringify(reply), /root:x:0/);
    assertToolFailure(await session.send(callTool('scan_file', { path: '/etc/passwd' })), 'outside_root');
    // A path that does not exist outside the root says "outside", not "no such file".
    assertToolFailure(await session.send(callTool('scan_file', { path: '../nope/x.cpp' })), 'outside_root');
    assertToolFailure(await session.send(callTool('query_alerts', { db: '../outside/metrics.db' })), 'outside_root');
    assertToolFailure(await session.send(callTool('scan_project', { build_dir: '..' })), 'outside_root');
  });

  test('a symlink out of the root is refused, to a file or through a folder', async () => {
    for (const p of ['link.cpp', 'linkdir/secret.cpp']) {
      const reply = await session.send(callTool('scan_file', { path: p, flags }));
      assertToolFailure(reply, 'outside_root', /resolves to .*outside the allowed roots/);
      assert.doesNotMatch(JSON.stringify(reply), /SECRET-MARKER/);
    }
    assertToolFailure(await session.send(callTool('suggest_fix', { path: 'link.cpp', flags })), 'outside_root');
    assertToolFailure(await session.send(callTool('query_alerts', { db: 'runs-link.db' })), 'outside_root');
    assertToolFailure(await session.send(callTool('site_verdicts', { db: 'linkdir' })), 'outside_root');
    // A folder under the root whose metrics.db leads out of it is refused before anything opens
    // the file: the message is the same whether the target is a file, a missing file or a database.
    for (const target of ['secret.cpp', 'missing.db', 'metrics.db']) {
      const reply = await session.send(callTool('run_summary', { db: `dblink-${target}` }));
      assertToolFailure(reply, 'outside_root', /does not resolve to a file under the allowed roots/);
      assert.doesNotMatch(JSON.stringify(reply), /SQLite|SECRET-MARKER|no metrics/);
    }
  });

  test('inline source cannot #include a file outside the root', async () => {
    const source = `#include "${path.join(fixture.outside, 'secret.cpp')}"\n#include "/etc/passwd"\nint x;\n`;
    const reply = await session.send(callTool('scan_file', { source, flags }));
    assert.ok(reply.result, JSON.stringify(reply));
    const r = reply.result.structuredContent;
    assert.equal(r.parse_errors.length, 1);
    assert.match(r.parse_errors[0], /file not found/);
    assert.doesNotMatch(JSON.stringify(reply), /SECRET-MARKER|root:x:0/);
  });

  test('flags that load code or write files are refused', async () => {
    for (const bad of [['-fplugin=/tmp/evil.so'], ['-Xclang', '-load'], ['-mllvm', '-x'], ['-MF', 'deps.d'],
                       ['-ftime-trace'], ['@args.rsp'], ['model.cpp']]) {
      const reply = await session.send(callTool('scan_file', { path: 'model.cpp', flags: [...flags, ...bad] }));
      assertError(reply, -32602, 'flag_not_allowed', /is not allowed/);
    }
  });

  test('a file over the read limit is refused, as is inline source over it', async () => {
    assertToolFailure(await session.send(callTool('scan_file', { path: 'huge.cpp', flags })), 'too_large',
                /over the 2097152-byte limit/);
    assertToolFailure(await session.send(callTool('scan_file', { source: ' '.repeat(2 * 1024 * 1024 + 1), flags })),
                      'too_large');
  });

  test('a message over the line limit is answered and skipped', async () => {
    const reply = await session.send('{"x": "' + 'a'.repeat(9 * 1024 * 1024) + '"}');
    assertError(reply, -32600, 'too_large', /over the 8388608-byte limit/);
    assert.equal(reply.id, null);
  });

  test('bad arguments: unknown tool, unknown argument, both path and source, bad types', async () => {
    assertError(await session.send(callTool('rm_rf', {})), -32602, 'unknown_tool');
    assertError(await session.send(callTool('list_checks', { verbose: true })), -32602, 'unknown_argument');
    assertError(await session.send(callTool('scan_file', { path: 'model.cpp', source: 'int x;' })), -32602,
                'missing_argument');
    assertError(await session.send(callTool('scan_file', { path: 7 })), -32602);
    assertError(await session.send(callTool('scan_file', { path: 'model.cpp', precision: 'fp12' })), -32602, null,
                /unknown precision/);
    assertError(await session.send(callTool('scan_file', { source: 'int x;', filename: '../x.cpp' })), -32602,
                'invalid_path');
    assertError(await session.send(callTool('explain_check', { check: '../../etc/passwd' })), -32602);
    assertToolFailure(await session.send(callTool('query_alerts', { db: 'model.cpp' })), 'unreadable');
    assertError(await session.send(callTool('site_verdicts', { db: 'verified', verdict: 'CONFIRM' })), -32602, null,
                /no verdict 'CONFIRM' \(verdicts: CONFIRMED, AT_RISK, NOT_OBSERVED, NOT_REACHED\)/);
    assertError(await session.send(callTool('query_alerts', { db: 'runs', limit: 0 })), -32602, null,
                /'limit' must be an integer between 1 and 10000/);
    assertError(await session.send(callTool('query_alerts', { db: 'runs', first_step: 18446744073709551615 })),
                -32602, null, /'first_step' must be an integer between 0 and 9223372036854775807/);
    assertError(await session.send(callTool('query_alerts', { db: 'runs', type: 'OVERFLOWS' })), -32602, null,
                /no alert type 'OVERFLOWS' \(types: NAN, INF,/);
    assertError(await session.send(request('resources/read', { uri: 'mpnanny://knowledge/../../etc/passwd' })),
                -32002, 'not_found');
    assertError(await session.send(request('prompts/get', { name: 'nope' })), -32602, 'unknown_prompt');
  });

  test('notifications get no reply, and the server is still serving', async () => {
    session.notify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    session.notify({ jsonrpc: '2.0', method: 'no/such/notification' });
    const reply = await session.send(request('tools/list'));
    assert.equal(reply.id, id, 'the next line answers this request, not a notification');
    assert.equal(reply.result.tools.length, 8);
    const scan = await session.send(callTool('scan_file', { source: modelText, flags }));
    assert.ok(scan.result.structuredContent.findings.some((f) => f.check === 'mpnanny-log-softmax'));
  });
});

describe('version negotiation', () => {
  for (const [asked, answered] of [['2025-03-26', '2025-03-26'], ['2099-01-01', '2025-06-18']]) {
    test(`${asked} -> ${answered}`, async () => {
      const fixture = makeFixture();
      const s = new Session(serverArgs(fixture));
      try {
        const reply = await s.send(initialize(asked));
        assert.equal(reply.result.protocolVersion, answered);
      } finally {
        await s.close();
        fixture.cleanup();
      }
    });
  }
});

describe('batches, where 2025-03-26 was negotiated', () => {
  test('each request is answered in one array; notifications, initialize and nested batches as JSON-RPC says', async () => {
    const fixture = makeFixture();
    const s = new Session(serverArgs(fixture));
    try {
      await s.send(initialize('2025-03-26'));
      const replies = await s.send([request('ping'), { jsonrpc: '2.0', method: 'notifications/initialized' },
                                    request('tools/nope'), initialize(), [request('ping')]]);
      assert.ok(Array.isArray(replies), JSON.stringify(replies));
      assert.deepEqual(replies.map((r) => r.error?.code ?? 'ok'), ['ok', -32601, -32600, -32600]);
      assert.match(replies[2].error.message, /initialize cannot be part of a batch/);
      assertError(await s.send([]), -32600, null, /empty batch/);
      // A batch of notifications only gets no reply: the next line answered is the ping's.
      s.notify([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
      const pong = await s.send(request('ping'));
      assert.deepEqual(pong.result, {});
    } finally {
      await s.close();
      fixture.cleanup();
    }
  });
});

describe('start-up', () => {
  test('started in a folder outside its roots, it scans without complaining about that folder', async () => {
    const fixture = makeFixture();
    const s = new Session(serverArgs(fixture), env.server, fixture.outside);
    try {
      await s.send(initialize());
      const reply = await s.send(callTool('scan_file', { source: modelText, flags }));
      assert.ok(reply.result?.structuredContent?.findings?.length > 0, JSON.stringify(reply).slice(0, 500));
    } finally {
      assert.equal(await s.close(), 0);
      fixture.cleanup();
    }
    assert.doesNotMatch(s.stderr, /Error reading configuration/);
  });

  test('a root that does not exist is a usage error', async () => {
    const s = new Session(['--root', '/nonexistent/mpnanny']);
    assert.equal(await s.exited, 2);
    assert.match(s.stderr, /is not a folder/);
  });
});

describe('mpnanny mcp (the CLI subcommand)', { skip: process.env.MPNANNY_CLI ? false : 'mpnanny CLI not built' }, () => {
  test('runs the same server', async () => {
    const fixture = makeFixture();
    const cli = new Session(['mcp', ...serverArgs(fixture)], process.env.MPNANNY_CLI);
    try {
      const reply = await cli.send(initialize());
      assert.equal(reply.result.serverInfo.name, 'mpnanny');
      const list = await cli.send(request('tools/list'));
      assert.equal(list.result.tools.length, 8);
    } finally {
      assert.equal(await cli.close(), 0);
      fixture.cleanup();
    }
  });
});
