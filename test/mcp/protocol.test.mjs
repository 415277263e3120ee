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
    assertError(await session.send([request('ping')]), -32600, null, /batch/);
    assertError(await session.send({ jsonrpc: '1.0', id: 1, method: 'ping' }), -32600, null, /jsonrpc/);
    assertError(await session.send({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), -32600, null, /id/);
    assertError(await session.send({ jsonrpc: '2.0', id: 3, method: 'ping', params: [1] }), -32602);
    assertError(await session.send('[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'),
                -32700, 'too_deep');
  });

  test('../../etc/passwd is outside the root', async () => {
    const reply = await session.send(callTool('scan_file', { path: '../../etc/passwd', flags }));
    assertError(reply, -32602, 'outside_root', /outside the allowed roots/);
    assert.doesNotMatch(JSON.stringify(reply), /root:x:0/);
    assertError(await session.send(callTool('scan_file', { path: '/etc/passwd' })), -32602, 'outside_root');
    // A path that does not exist outside the root says "outside", not "no such file".
    assertError(await session.send(callTool('scan_file', { path: '../nope/x.cpp' })), -32602, 'outside_root');
    assertError(await session.send(callTool('query_alerts', { db: '../outside/metrics.db' })), -32602, 'outside_root');
    assertError(await session.send(callTool('scan_project', { build_dir: '..' })), -32602, 'outside_root');
  });

  test('a symlink out of the root is refused, to a file or through a folder', async () => {
    for (const p of ['link.cpp', 'linkdir/secret.cpp']) {
      const reply = await session.send(callTool('scan_file', { path: p, flags }));
      assertError(reply, -32602, 'outside_root', /resolves to .*outside the allowed roots/);
      assert.doesNotMatch(JSON.stringify(reply), /SECRET-MARKER/);
    }
    assertError(await session.send(callTool('suggest_fix', { path: 'link.cpp', flags })), -32602, 'outside_root');
    assertError(await session.send(callTool('query_alerts', { db: 'runs-link.db' })), -32602, 'outside_root');
    assertError(await session.send(callTool('site_verdicts', { db: 'linkdir' })), -32602, 'outside_root');
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
    assertError(await session.send(callTool('scan_file', { path: 'huge.cpp', flags })), -32602, 'too_large',
                /over the 2097152-byte limit/);
    assertError(await session.send(callTool('scan_file', { source: ' '.repeat(2 * 1024 * 1024 + 1), flags })),
                -32602, 'too_large');
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
    assertError(await session.send(callTool('query_alerts', { db: 'model.cpp' })), -32602, 'unreadable');
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
