// run_summary on a folder of rank files (data-parallel training, issue 28): the server must say
// where a bad value came from (the origin) and which ranks stopped early, for the whole group,
// from the rank_agreement table any one rank's file holds.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { env, schemaSql } from './fixture.mjs';

const RANK_AGREEMENT = `
CREATE TABLE IF NOT EXISTS rank_agreement(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, rank INTEGER NOT NULL, error INTEGER NOT NULL,
  bad_before TEXT, bad_parameter TEXT, loss_scale REAL, skipped INTEGER, PRIMARY KEY(run_id, step, rank));
`;

/**
 * Rank `rank` of four, steps 0..lastStep. At step 5 rank 1's backward aten::mm (model.cpp:21)
 * makes a NaN that reaches its head.weight gradient before the all-reduce; every rank's
 * rank_agreement says so.
 */
function makeRank(file, rank, { lastStep = 9, ended = true } = {}) {
  const nan = rank === 1 ? 4 : 0;
  let sql = schemaSql() + RANK_AGREEMENT + `
INSERT INTO meta VALUES ('schema_version', '1'), ('writer', 'mpnanny-runtime');
INSERT INTO runs(run_id, started_at, ended_at, pid, rank, local_rank, world_size, precision, torch_version)
  VALUES (1, '2026-12-05T10:00:00Z', ${ended ? "'2026-12-05T10:05:00Z'" : 'NULL'}, 7, ${rank}, ${rank}, 4, 'FP16', '2.6.0');
INSERT INTO locations VALUES (1, 1, 'Net::forward', '/src/model.cpp', 21);
INSERT INTO tensor_stats(run_id, step, seq, phase, op, name, location_id, nan_count, inf_count, fp16_overflow)
  VALUES (1, 5, 0, 'forward', 'aten::addmm', NULL, 1, 0, 0, 0),
         (1, 5, 1, 'backward', 'aten::mm', NULL, 1, ${nan}, 0, 0),
         (1, 5, 2, 'gradient', NULL, 'head.weight', 0, ${nan}, 0, 0),
         (1, 5, 3, 'reduced_gradient', NULL, 'head.weight', 0, 4, 0, 0);
`;
  for (let step = 0; step <= lastStep; ++step) sql += `INSERT INTO steps VALUES (1, ${step}, 1, 0, 10.0, 0);\n`;
  for (let r = 0; r < 4; ++r) {
    sql += `INSERT INTO rank_agreement VALUES (1, 5, ${r}, ${r === 1 ? 1 : 0}, ${r === 1 ? "'nan', 'head.weight'" : 'NULL, NULL'}, 1024, 1);\n`;
  }
  execFileSync(env.sqlite3, [file], { input: sql });
}

/** One initialize and one tools/call over stdio; the server answers both, then ends at end of input. */
function runSummary(root, db) {
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ranks-test', version: '0' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_summary', arguments: { db } } },
  ].map((m) => JSON.stringify(m)).join('\n') + '\n';
  const proc = spawnSync(env.server, ['--root', root], { input: lines, encoding: 'utf8', timeout: 120_000 });
  const replies = proc.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const reply = replies.find((r) => r.id === 2);
  assert.ok(reply?.result && !reply.result.isError, `run_summary failed: ${proc.stdout.slice(-1500)} ${proc.stderr}`);
  return reply.result.structuredContent;
}

describe('run_summary across ranks', () => {
  let top, root;
  before(() => {
    top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mpnanny-mcp-ranks-')));
    root = path.join(top, 'root');
    for (const dir of ['ddp', 'stopped']) fs.mkdirSync(path.join(root, dir), { recursive: true });
    for (let rank = 0; rank < 4; ++rank) makeRank(path.join(root, 'ddp', `metrics-rank${rank}.db`), rank);
    makeRank(path.join(root, 'stopped', 'metrics-rank0.db'), 0);
    makeRank(path.join(root, 'stopped', 'metrics-rank1.db'), 1, { lastStep: 6, ended: false });
    makeRank(path.join(root, 'stopped', 'metrics-rank2.db'), 2);
  });
  after(() => fs.rmSync(top, { recursive: true, force: true }));

  test('names the origin rank, step, parameter, op and the ranks that received it', () => {
    const r = runSummary(root, 'ddp');
    assert.equal(r.runs.length, 4);
    assert.ok(r.origin, JSON.stringify(r).slice(0, 800));
    assert.equal(r.origin.step, 5);
    assert.equal(r.origin.source, 'rank_agreement');
    assert.deepEqual(r.origin.ranks.map((o) => [o.rank, o.kind, o.parameter, o.op?.op, o.op?.line]),
                     [[1, 'nan', 'head.weight', 'aten::mm', 21]]);
    assert.deepEqual(r.origin.received, [0, 2, 3]);
    assert.match(r.origin.text, /^rank 1, step 5: NaN in the gradient of head\.weight before all-reduce \(op aten::mm at model\.cpp:21\); ranks 0, 2, 3 received it/);
    assert.deepEqual(r.stopped, []);
  });

  test('names the ranks that stopped early, and no origin the others did not have', () => {
    const r = runSummary(root, 'stopped');
    assert.deepEqual(r.stopped.map((s) => [s.rank, s.last_step, s.closed]), [[1, 6, false], [3, null, false]]);
    assert.match(r.stopped[0].text, /^rank 1 stopped at step 6 \(its run did not close; the others reached step 9\)$/);
    // rank_agreement still names rank 1 as the origin: the files agree, whichever one is read.
    assert.equal(r.origin.ranks[0].rank, 1);
  });

  test('a single-process run has no origin and no stopped ranks', () => {
    fs.mkdirSync(path.join(root, 'single'));
    const file = path.join(root, 'single', 'metrics.db');
    execFileSync(env.sqlite3, [file], { input: schemaSql() + `
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO runs(run_id, started_at, ended_at, precision) VALUES (1, '2026-12-05T10:00:00Z', NULL, 'FP16');
INSERT INTO tensor_stats(run_id, step, seq, phase, name, nan_count, inf_count, fp16_overflow)
  VALUES (1, 0, 0, 'gradient', 'w', 1, 0, 0);
` });
    const r = runSummary(root, 'single/metrics.db');
    assert.equal(r.origin, null);
    assert.deepEqual(r.stopped, []);
  });
});
