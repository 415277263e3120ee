// The official MCP TypeScript SDK client drives mpnanny-mcp over stdio: initialize,
// list, call every tool, read a resource, get both prompts. The client validates each
// structured result against the tool's outputSchema, so a schema that lies fails here.
//
// Run: node --test sdk.test.mjs, with MPNANNY_MCP, MPNANNY_SOURCE_DIR, MPNANNY_TORCH_MOCK
// and MCP_CLIENT_DIR (where `npm ci` installed test/mcp/package-lock.json).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { env, flags, logSoftmaxLine, makeFixture, modelText, serverArgs, snapshot } from './fixture.mjs';

const clientDir = process.env.MCP_CLIENT_DIR || '';
let sdk = null;
let unavailable = '';
try {
  const require = createRequire(path.join(clientDir, 'package.json'));
  sdk = {
    ...require('@modelcontextprotocol/sdk/client/index.js'),
    ...require('@modelcontextprotocol/sdk/client/stdio.js'),
    ...require('@modelcontextprotocol/sdk/types.js'),
  };
} catch (error) {
  unavailable = `MCP SDK not installed in '${clientDir}' (npm registry unreachable?): ${error.message}`;
}

const slow = { timeout: 300_000 };

describe('mpnanny-mcp with the MCP TypeScript SDK client', { skip: unavailable || false }, () => {
  let fixture, client, before_;

  before(async () => {
    fixture = makeFixture();
    before_ = snapshot(fixture.top);
    client = new sdk.Client({ name: 'mpnanny-test', version: '1.0.0' });
    const transport = new sdk.StdioClientTransport({
      command: env.server,
      args: serverArgs(fixture),
      cwd: fixture.root,
      stderr: 'inherit',
    });
    await client.connect(transport);
  });

  after(async () => {
    await client?.close();
    // Nothing the server did may have created or changed a file.
    if (fixture) {
      assert.deepEqual(snapshot(fixture.top), before_);
      fixture.cleanup();
    }
  });

  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args }, undefined, slow);
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.ok(result.structuredContent, `${name}: no structuredContent`);
    // The text block is the same JSON, for clients that only show text.
    assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
    return result.structuredContent;
  };

  test('initialize negotiates 2025-06-18 and advertises tools, resources, prompts', () => {
    assert.equal(client.getServerVersion().name, 'mpnanny');
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools && caps.resources && caps.prompts);
    assert.match(client.getInstructions(), /never writes files/);
  });

  test('tools/list: eight tools, each with input and output schemas', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'explain_check', 'list_checks', 'query_alerts', 'run_summary', 'scan_file', 'scan_project',
      'site_verdicts', 'suggest_fix']);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema.type, 'object', t.name);
      assert.equal(t.annotations.readOnlyHint, true, t.name);
    }
  });

  test('scan_file on a path finds the log of a softmax, with its fix-it', async () => {
    const r = await call('scan_file', { path: 'model.cpp', flags });
    assert.deepEqual(r.parse_errors, []);
    assert.equal(r.file, path.join(fixture.root, 'model.cpp'));
    const f = r.findings.find((x) => x.check === 'mpnanny-log-softmax');
    assert.ok(f, JSON.stringify(r.findings));
    assert.equal(f.line, logSoftmaxLine);
    assert.equal(f.function, 'head');
    assert.equal(f.severity, 'warning');
    assert.match(f.site_id, /^[0-9a-f]{16}$/);
    assert.equal(f.fixits.length > 0, true);
    // log_softmax is the stable form: no log-softmax finding there (other checks may speak).
    assert.equal(r.findings.filter((x) => x.function === 'safe_head' && x.check === f.check).length, 0);
  });

  test('scan_file on inline source gives the same finding and writes nothing', async () => {
    const r = await call('scan_file', { source: modelText, filename: 'inline_model.cpp', flags,
                                        checks: '-*,mpnanny-log-softmax' });
    assert.equal(r.inline, true);
    assert.equal(r.file, path.join(fixture.root, 'inline_model.cpp'));
    assert.equal(fs.existsSync(r.file), false);
    assert.deepEqual(r.findings.map((x) => [x.check, x.line]), [['mpnanny-log-softmax', logSoftmaxLine]]);
  });

  test('scan_file with a forced precision and max_findings', async () => {
    const r = await call('scan_file', { path: 'model.cpp', flags, precision: 'fp16', max_findings: 1 });
    assert.equal(r.findings.length, 1);
    assert.equal(r.truncated, r.total_findings > 1);
  });

  test('scan_project scans the project source and skips third-party code', async () => {
    const r = await call('scan_project', { build_dir: 'build' });
    assert.deepEqual(r.files_scanned, [path.join(fixture.root, 'model.cpp')]);
    assert.deepEqual(r.parse_errors, []);
    assert.ok(r.findings_by_check['mpnanny-log-softmax'] >= 1);
    assert.ok(r.findings.some((x) => x.check === 'mpnanny-log-softmax' && x.line === logSoftmaxLine));
  });

  test('explain_check returns the knowledge page', async () => {
    const r = await call('explain_check', { check: 'log-softmax' });
    assert.equal(r.name, 'mpnanny-log-softmax');
    assert.equal(r.uri, 'mpnanny://knowledge/mpnanny-log-softmax');
    assert.match(r.markdown, /^# mpnanny-log-softmax/m);
    assert.ok(r.summary.length > 10);
  });

  test('list_checks lists every check with its summary', async () => {
    const r = await call('list_checks', {});
    const names = r.checks.map((c) => c.name);
    for (const name of ['mpnanny-log-softmax', 'mpnanny-risky-op', 'mpnanny-fp16-constant-range']) {
      assert.ok(names.includes(name), name);
    }
    const log = r.checks.find((c) => c.name === 'mpnanny-log-softmax');
    assert.equal(log.has_page, true);
    assert.ok(log.summary.length > 10);
  });

  test('suggest_fix returns the rewrite as a diff that applies, and changes nothing', async () => {
    const r = await call('suggest_fix', { path: 'model.cpp', flags, line: logSoftmaxLine });
    assert.equal(r.applied, false);
    assert.equal(r.fixes.length, 1);
    assert.match(r.diff, /^--- a\/model\.cpp\n\+\+\+ b\/model\.cpp\n@@ -\d+,\d+ \+\d+,\d+ @@/);
    assert.ok(r.diff.includes('-  auto p = torch::log(torch::softmax(h, 1));\n'), r.diff);
    assert.ok(r.diff.includes('+  auto p = torch::log_softmax(h, 1);\n'), r.diff);
    assert.equal(fs.readFileSync(path.join(fixture.root, 'model.cpp'), 'utf8'), modelText);
    // The diff is a real one: git applies it cleanly (checked only, not applied).
    fs.writeFileSync(path.join(fixture.top, 'fix.diff'), r.diff);
    try {
      execFileSync('git', ['apply', '--check', '-p1', path.join(fixture.top, 'fix.diff')], { cwd: fixture.root });
    } finally {
      fs.rmSync(path.join(fixture.top, 'fix.diff'));
    }
  });

  test('suggest_fix on inline source, selecting by site_id', async () => {
    const scan = await call('scan_file', { source: modelText, filename: 'm.cpp', flags });
    const site = scan.findings.find((x) => x.check === 'mpnanny-log-softmax').site_id;
    const r = await call('suggest_fix', { source: modelText, filename: 'm.cpp', flags, site_id: site });
    assert.equal(r.fixes.length, 1);
    assert.equal(r.fixes[0].site_id, site);
    assert.ok(r.diff.startsWith('--- a/m.cpp\n+++ b/m.cpp\n'), r.diff);
  });

  test('query_alerts filters a run by severity', async () => {
    const all = await call('query_alerts', { db: 'runs/metrics.db' });
    assert.equal(all.total, 3);
    assert.equal(all.databases[0].run_id, 1);
    const errors = await call('query_alerts', { db: 'runs', severity: 'ERROR' });
    assert.equal(errors.total, 1);
    assert.equal(errors.alerts[0].type, 'OVERFLOW');
    assert.equal(errors.alerts[0].step, 12);
    const overflows = await call('query_alerts', { db: 'runs', type: 'overflow' });
    assert.deepEqual(overflows.alerts.map((a) => a.type), ['OVERFLOW']);
    const limited = await call('query_alerts', { db: 'runs/metrics.db', limit: 2 });
    assert.equal(limited.alerts.length, 2);
    assert.equal(limited.truncated, true);
  });

  test('query_alerts returns what fits in a response and says the rest was left out', async () => {
    // 6003 alerts of about 430 bytes: under the limit of 10000 rows, over the 4 MiB a response may hold.
    const r = await call('query_alerts', { db: 'many', limit: 10000 });
    assert.equal(r.total, 6003);
    assert.equal(r.truncated, true);
    assert.ok(r.alerts.length > 1000 && r.alerts.length < 6003, String(r.alerts.length));
  });

  test('run_summary reports the run', async () => {
    const r = await call('run_summary', { db: 'runs/metrics.db' });
    assert.equal(r.runs.length, 1);
    assert.equal(r.runs[0].precision, 'FP16');
    assert.equal(r.runs[0].steps.seen, 20);
  });

  test('site_verdicts: verdicts when verified, "no verification data" otherwise', async () => {
    const none = await call('site_verdicts', { db: 'runs/metrics.db' });
    assert.equal(none.verification_data, false);
    assert.match(none.message, /no verification data/);
    assert.deepEqual(none.verdicts, []);
    const some = await call('site_verdicts', { db: 'verified/metrics.db' });
    assert.equal(some.verification_data, true);
    assert.equal(some.verdicts.length, 2);
    assert.equal(some.verdicts[0].verdict, 'CONFIRMED');
    assert.equal(some.counts.CONFIRMED, 1);
  });

  test('resources: the knowledge pages, read by URI', async () => {
    const { resources } = await client.listResources();
    const uri = 'mpnanny://knowledge/mpnanny-log-softmax';
    assert.ok(resources.some((r) => r.uri === uri && r.mimeType === 'text/markdown'));
    const { contents } = await client.readResource({ uri });
    const page = fs.readFileSync(path.join(env.sourceDir, 'knowledge/mpnanny-log-softmax.md'), 'utf8');
    assert.equal(contents[0].text, page);
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, 'mpnanny://knowledge/{name}');
  });

  test('prompts: both walk through scan, explain, fix and verify', async () => {
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), ['diagnose-training-run', 'review-model-for-mixed-precision']);
    const review = await client.getPrompt({ name: 'review-model-for-mixed-precision',
                                            arguments: { path: 'model.cpp', precision: 'fp16' } });
    const text = review.messages[0].content.text;
    for (const step of ['scan_file', 'explain_check', 'suggest_fix', 'site_verdicts', '{"path":"model.cpp","precision":"fp16"}']) {
      assert.ok(text.includes(step), step);
    }
    // A quote in an argument stays a quote in the JSON the prompt tells the model to send.
    const quoted = await client.getPrompt({ name: 'review-model-for-mixed-precision', arguments: { path: 'a"b.cpp' } });
    assert.ok(quoted.messages[0].content.text.includes('{"path":"a\\"b.cpp"}'), quoted.messages[0].content.text);
    const diagnose = await client.getPrompt({ name: 'diagnose-training-run', arguments: { db: 'runs/metrics.db' } });
    for (const step of ['run_summary', 'query_alerts', 'site_verdicts', 'suggest_fix']) {
      assert.ok(diagnose.messages[0].content.text.includes(step), step);
    }
  });

  test('a tool that fails says so in its result, a bad request is a JSON-RPC error, and the server goes on', async () => {
    const outside = await client.callTool({ name: 'scan_file', arguments: { path: '../../etc/passwd', flags } });
    assert.equal(outside.isError, true);
    assert.match(outside.content[0].text, /outside the allowed roots/);
    const unknown = await client.callTool({ name: 'explain_check', arguments: { check: 'no-such-check' } });
    assert.equal(unknown.isError, true);
    assert.match(unknown.content[0].text, /no knowledge page/);
    await assert.rejects(client.callTool({ name: 'query_alerts', arguments: { db: 'runs', limit: -1 } }),
                         (e) => e.code === -32602 && /between 1 and 10000/.test(e.message));
    await assert.rejects(client.getPrompt({ name: 'diagnose-training-run', arguments: {} }),
                         (e) => e.code === -32602 && /'db' is required/.test(e.message));
    const r = await call('list_checks', {});
    assert.ok(r.checks.length > 0);
  });
});

if (unavailable) {
  // The SKIP_REGULAR_EXPRESSION of the CTest entry matches this line.
  console.log(`SKIPPED: ${unavailable}`);
}
